"""Check an assessment request before a task exists.

a2a-sdk's DefaultRequestHandler creates the task and starts the executor for any well-formed
message; a request we cannot run would then show up as a failed task, later, after the caller
has started polling. Checking here instead turns every such problem into a JSON-RPC error
(-32602 invalid params) on the response itself, with the message naming the field. For
message/stream the sdk sends that error as the stream's one event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskStore
from a2a.types import InvalidParamsError, Message, MessageSendParams, Task
from a2a.utils.errors import ServerError

from .executor import GreenExecutor
from .plan import make_plan
from .request import InvalidRequest, read_request


class AssessmentRequestHandler(DefaultRequestHandler):
    def __init__(self, executor: GreenExecutor, task_store: TaskStore):
        super().__init__(executor, task_store)
        self.green = executor

    async def _check(self, params: MessageSendParams) -> str:
        message = params.message
        if message.task_id:
            raise ServerError(error=InvalidParamsError(message=(
                "message.taskId: an assessment is one message that starts a new task; "
                "send it without taskId (follow a running assessment with tasks/get or message/stream)")))
        try:
            request = read_request(message)
            # reads the scenario folder: off the event loop
            plan = await asyncio.to_thread(make_plan, request, self.green.settings)
        except InvalidRequest as err:
            raise ServerError(error=InvalidParamsError(message=str(err))) from None
        self.green.plans[message.message_id] = (message, plan)
        return message.message_id

    async def on_message_send(
        self, params: MessageSendParams, context: ServerCallContext | None = None
    ) -> Message | Task:
        key = await self._check(params)
        try:
            return await super().on_message_send(params, context)
        finally:
            self.green.plans.pop(key, None)  # if the executor never took it

    async def on_message_send_stream(
        self, params: MessageSendParams, context: ServerCallContext | None = None
    ) -> AsyncGenerator[Event]:
        key = await self._check(params)
        try:
            async for event in super().on_message_send_stream(params, context):
                yield event
        finally:
            self.green.plans.pop(key, None)
