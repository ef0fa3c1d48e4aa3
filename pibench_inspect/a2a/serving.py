"""What our A2A servers share: a JSON-in/JSON-out executor on a2a-sdk 0.3, the card, the app.

A request is one message whose first object data part is the input; the reply is a completed
task whose status message carries one data part (readable by our client and by the original's,
which looked in `result.status.message.parts`). A request we cannot serve becomes a failed task
whose text says why; our client turns that into an A2AError naming it.
"""

from __future__ import annotations

import logging
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Awaitable, Callable

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentExtension, AgentSkill, DataPart, Part, TextPart
from a2a.utils import new_task
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

logger = logging.getLogger(__name__)


class RequestProblem(Exception):
    """The request cannot be served; the text goes back to the caller."""


Handler = Callable[[dict[str, Any], RequestContext], Awaitable[dict[str, Any]]]


def package_version() -> str:
    try:
        return version("pibench-inspect")
    except PackageNotFoundError:
        return "0.0.0"


def request_data(context: RequestContext) -> dict[str, Any]:
    message = context.message
    for part in message.parts if message else []:
        if isinstance(part.root, DataPart) and isinstance(part.root.data, dict):
            return part.root.data
    raise RequestProblem("the message needs a data part whose data is a JSON object")


class JsonExecutor(AgentExecutor):
    def __init__(self, handler: Handler):
        self.handler = handler

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task(context.message)  # type: ignore[arg-type]
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        try:
            out = await self.handler(request_data(context), context)
        except RequestProblem as err:
            await updater.failed(updater.new_agent_message([Part(root=TextPart(text=str(err)))]))
            return
        except Exception as err:  # a bug or a failing backend: say so, keep serving
            logger.exception("request failed")
            await updater.failed(updater.new_agent_message(
                [Part(root=TextPart(text=f"internal error: {type(err).__name__}: {err}"))]))
            return
        await updater.complete(updater.new_agent_message([Part(root=DataPart(data=out))]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise RequestProblem("cancel is not supported")


def agent_card(name: str, description: str, url: str, skill: AgentSkill, bootstrap: bool = False,
               streaming: bool = False) -> AgentCard:
    extensions = None
    if bootstrap:
        from .wire import BOOTSTRAP_URN

        extensions = [AgentExtension(
            uri=BOOTSTRAP_URN, required=False,
            description="Send the benchmark context and tools once; reuse the returned context_id.")]
    return AgentCard(
        name=name, description=description, url=url, version=package_version(),
        default_input_modes=["application/json"], default_output_modes=["application/json"],
        capabilities=AgentCapabilities(streaming=streaming, extensions=extensions),
        skills=[skill],
    )


def build_app(card: AgentCard, executor: AgentExecutor, health: dict[str, Any],
              handler_class: type[DefaultRequestHandler] = DefaultRequestHandler) -> Starlette:
    """The a2a-sdk JSON-RPC app (POST /, cards at both well-known paths) plus GET /health."""
    a2a = A2AStarletteApplication(agent_card=card, http_handler=handler_class(executor, InMemoryTaskStore()))

    async def health_route(request):  # noqa: ANN001
        return JSONResponse(health)

    return Starlette(routes=[Route("/health", health_route, methods=["GET"]), *a2a.routes()])
