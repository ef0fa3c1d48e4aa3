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
from a2a.server.context import ServerCallContext
from a2a.types import (AgentCapabilities, AgentCard, AgentExtension, AgentSkill, DataPart, Part, Task,
                       TaskNotCancelableError, TextPart)
from a2a.utils import new_task
from a2a.utils.errors import ServerError
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from .lenient import LenientMessages

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
    """The request's first data part. (a2a-sdk itself rejects a data part that is not an object.)"""
    parts = context.message.parts if context.message else []
    for part in parts:
        if isinstance(part.root, DataPart):
            if not isinstance(part.root.data, dict):
                raise RequestProblem(f"the data part must hold an object, got {type(part.root.data).__name__}")
            return part.root.data
    kinds = ", ".join(p.root.kind for p in parts) or "none"
    raise RequestProblem(f"the message has no data part (parts: {kinds}); send one data part with an object")


class RecentTaskStore(InMemoryTaskStore):
    """Keeps only the latest tasks: our servers never read an old one, and each holds a whole
    request, so an unbounded store would grow for as long as a run lasts."""

    def __init__(self, limit: int = 1024):
        super().__init__()
        self.limit = limit

    async def save(self, task: Task, context: ServerCallContext | None = None) -> None:
        await super().save(task, context)
        async with self.lock:
            while len(self.tasks) > self.limit:
                del self.tasks[next(iter(self.tasks))]  # the oldest first


class JsonExecutor(AgentExecutor):
    def __init__(self, handler: Handler, failure: str = "internal error"):
        self.handler = handler
        self.failure = failure  # how an unexpected exception is introduced to the caller

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task = context.current_task or new_task(context.message)  # type: ignore[arg-type]
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        try:
            out = await self.handler(request_data(context), context)
        except RequestProblem as err:
            await updater.failed(updater.new_agent_message([Part(root=TextPart(text=str(err)))]))
            return
        except Exception as err:  # a bug or a failing backend (a model): say so, keep serving
            logger.exception("request failed")
            await updater.failed(updater.new_agent_message(
                [Part(root=TextPart(text=f"{self.failure}: {type(err).__name__}: {err}"))]))
            return
        await updater.complete(updater.new_agent_message([Part(root=DataPart(data=out))]))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        # a turn is short and not interruptible; say so in A2A's own terms (not -32603)
        raise ServerError(error=TaskNotCancelableError(
            message=f"task {context.task_id} cannot be canceled: a turn runs to its end"))


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
    a2a = A2AStarletteApplication(agent_card=card, http_handler=handler_class(executor, RecentTaskStore()))

    async def health_route(request):  # noqa: ANN001
        return JSONResponse(health)

    app = Starlette(routes=[Route("/health", health_route, methods=["GET"]), *a2a.routes()])
    app.add_middleware(LenientMessages)  # the original's clients omit messageId and kind
    return app
