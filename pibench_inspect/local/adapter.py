"""Run an object implementing AgentProtocol as the agent under test.

Our engine executes its tool calls; Inspect records everything as usual. A broken message or an
exception from the agent ends the conversation with termination `agent_error` (the run is scored
on what happened, as in the original) and the reason is kept in the sample's store; a tool call
whose arguments cannot be read is a malformed call, returned to the agent as a tool error
(conversation/tool_calls.py). An
`AgentUnavailable` (the agent's model cannot be reached) and Inspect's own limits pass through
untouched: they are not agent behaviour (see local/errors.py).

The protocol's operations are synchronous and may block (a network call, a local model), so
they run in worker threads: samples wait for their own agent only, never for each other's. An
agent that also offers `async def agenerate(message, state)` is awaited on the loop instead.

Whatever the agent's code does is its own outcome (issue 25): any BaseException it raises
(SystemExit, KeyboardInterrupt and GeneratorExit included), an exception whose message cannot be
rendered, a reply the log cannot record (unrecordable: too deep, an integer too large to write,
a value that holds itself), or an operation that does not return within its deadline (Inspect's
`--timeout`, else OPERATION_SECONDS) ends the sample as `agent_error` with the reason. A
blocked operation's thread is abandoned: the workers are daemon threads (pibench_inspect.runtime.workers),
so the process still exits when the run ends.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, TypeVar

import anyio
from ..runtime.inspect_internals import PrerequisiteError
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolDef
from inspect_ai.util import LimitExceededError

from .errors import AgentProtocolError, AgentUnavailable
from .protocol import AgentProtocol

from ..conversation.json_safe import describe_error, unrecordable
from ..conversation.termination import ModelStopped
from ..conversation.tool_calls import read_call
from ..conversation.users import STOP_TOKENS
from ..runtime.workers import AGENT_POOL, PoolExhausted
CALL_KEYS = {"id", "name", "arguments", "requestor"}

__all__ = ["AgentProtocolError", "AgentUnavailable", "ProtocolAgent", "check_agent", "load_agent", "to_inspect"]

T = TypeVar("T")
STOP_GRACE = 5.0  # seconds an agent's stop() may take once its sample is over
# seconds one protocol operation may take when Inspect's --timeout is not given
OPERATION_SECONDS = 600.0
# failures that are not the agent's to answer for: raised through, never turned into agent_error;
# ModelStopped (the agent's model overflowed or was filtered) has a termination of its own
PASS_THROUGH = (AgentUnavailable, LimitExceededError, ModelStopped)


def operation_seconds() -> float:
    """The deadline of one protocol operation: Inspect's `--timeout` (a model request's), else
    OPERATION_SECONDS."""
    from ..runtime.inspect_internals import active_generate_config

    timeout = active_generate_config().timeout
    return float(timeout) if timeout else OPERATION_SECONDS


def agent_fault(operation: str, err: BaseException) -> BaseException:
    """What an exception from the agent's own code becomes: an infrastructure failure or an
    Inspect limit passes through; anything else, BaseExceptions included, is agent_error."""
    if isinstance(err, PASS_THROUGH):
        return err
    if isinstance(err, AgentProtocolError):  # the agent's own protocol error: its words
        return AgentProtocolError(describe_error(err).removeprefix(f"{type(err).__name__}: "))
    return AgentProtocolError(f"{operation} raised {describe_error(err)}")


async def off_loop(fn: Callable[..., T], *args: Any, operation: str | None = None,
                   timeout: float | None = None) -> T:
    """Run a blocking protocol operation in a daemon worker thread, within `timeout` seconds
    (default: operation_seconds()). Past it, or when the sample is cancelled (`--time-limit`, an
    interrupt), the thread is abandoned and its result dropped: a hung agent cannot hold the
    run, nor the process once the run is over. The operation's own exceptions become agent_error
    (agent_fault)."""
    name = operation or f"{getattr(fn, '__name__', 'the operation')}()"
    seconds = operation_seconds() if timeout is None else timeout
    try:
        outcome = await AGENT_POOL.run(fn, *args, timeout=seconds)
    except TimeoutError:
        raise AgentProtocolError(f"{name} did not return within {seconds:g} s; the agent was abandoned") from None
    except PoolExhausted as err:
        raise AgentProtocolError(f"{name} could not start: {err} (earlier operations never returned)") from None
    if outcome.error is not None:
        raise agent_fault(name, outcome.error) from None
    return outcome.value


def _cancelled(err: BaseException) -> bool:
    """Whether `err` is the cancellation of this task (a time limit, an interrupt), not a
    CancelledError the agent's own code raised."""
    import asyncio

    if not isinstance(err, anyio.get_cancelled_exc_class()):
        return False
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _factory(ref: str) -> Any:
    module, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"-T agent={ref}: cannot load {attr!r} from {module!r}: {err}") from None


def check_agent(ref: str, kwargs: dict[str, Any] | None = None) -> None:
    """Before the run: the agent can be loaded, and its optional `preflight(**agent_args)` (a
    static or class method: missing credentials, a bad model name) finds nothing wrong.
    The agent itself is not created here (it may load a model)."""
    factory = _factory(ref)
    if not isinstance(inspect.getattr_static(factory, "preflight", None), (staticmethod, classmethod)):
        return
    try:
        factory.preflight(**(kwargs or {}))
    except PrerequisiteError:
        raise  # already the one line the user needs (Inspect prints it without a traceback)
    except (TypeError, ValueError) as err:
        raise ValueError(f"-T agent={ref}: {err}") from None


def load_agent(ref: str, kwargs: dict[str, Any] | None = None) -> AgentProtocol:
    """`package.module:ClassOrFactory` -> an agent object (called with `-T agent_args`)."""
    factory = _factory(ref)
    try:
        agent = factory(**(kwargs or {}))
    except TypeError as err:
        raise ValueError(f"-T agent={ref}: cannot create it with agent_args {kwargs or {}}: {err}") from None
    missing = [m for m in ("init_state", "generate", "is_stop", "set_seed", "stop") if not callable(getattr(agent, m, None))]
    if missing:
        raise ValueError(f"-T agent={ref}: the object lacks {', '.join(missing)} (see pibench_inspect.local.AgentProtocol)")
    return agent  # type: ignore[return-value]


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(b.get("text", "") for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))
    return content if isinstance(content, str) else ""


def to_inspect(message: Any, tools: list[ToolDef] | None = None) -> ChatMessageAssistant:
    """Validate a protocol assistant message (reference 3.1) and convert it.

    A broken message (not a dict, tool calls that are not a list of objects with a name) is a
    protocol break. A call's arguments follow the one rule of conversation/tool_calls.py: an
    object, or JSON text read as Inspect reads a model's; arguments that cannot be read make a
    malformed call, returned to the agent as a tool error. A message with neither text nor a
    call ends the conversation as `agent_empty` (the solver's rule for every agent)."""
    if not isinstance(message, dict):
        raise AgentProtocolError(f"generate returned {type(message).__name__}, expected a message dict")
    problem = unrecordable(message, "the reply")
    if problem:
        raise AgentProtocolError(f"the agent's reply cannot be recorded: {problem}")
    calls = message.get("tool_calls")
    text = text_of(message.get("content"))
    if calls is not None and (not isinstance(calls, list) or not calls):
        raise AgentProtocolError("tool_calls must be a non-empty list when present")
    out_calls = []
    for i, c in enumerate(calls or []):
        if not isinstance(c, dict):
            raise AgentProtocolError(f"tool_calls[{i}] must be an object")
        extra = set(c) - CALL_KEYS
        if extra:
            raise AgentProtocolError(f"tool_calls[{i}] has unknown keys {sorted(extra)} (expected id, name, arguments)")
        if not isinstance(c.get("id"), str) or not c["id"].strip() or not isinstance(c.get("name"), str) or not c["name"].strip():
            raise AgentProtocolError(f"tool_calls[{i}] needs a non-blank string id and name")
        out_calls.append(read_call(c["id"], c["name"], c.get("arguments"), tools))
    return ChatMessageAssistant(content=text, tool_calls=out_calls or None)


def tool_result(m: ChatMessageTool) -> dict[str, Any]:
    return {"role": "tool", "id": m.tool_call_id, "content": m.error.message if m.error else m.text,
            "requestor": "assistant", "error": m.error is not None, "name": m.function}


def tool_schema(t: ToolDef) -> dict[str, Any]:
    return {"name": t.name, "description": t.description,
            "parameters": t.parameters.model_dump(exclude_none=True)}


class ProtocolAgent:
    """Adapts an AgentProtocol object to the solver's agent interface."""

    name = "protocol"

    def __init__(self, agent: AgentProtocol, context: list[dict], seed: int | None):
        self.agent = agent
        self.context = context
        self.seed = seed
        self.state: dict | None = None
        self.seen = 0  # messages of the conversation already delivered
        self.last: dict | None = None

    def _incoming(self, messages: list[ChatMessage]) -> dict:
        new = [m for m in messages[self.seen :] if m.role in ("user", "tool")]
        self.seen = len(messages)
        tools = [tool_result(m) for m in new if isinstance(m, ChatMessageTool)]
        if tools:
            return tools[0] if len(tools) == 1 else {"role": "multi_tool", "tool_messages": tools}
        users = [m for m in new if isinstance(m, ChatMessageUser)]
        return {"role": "user", "content": users[-1].text if users else ""}

    async def _generate(self, incoming: dict) -> Any:
        agenerate = getattr(self.agent, "agenerate", None)
        if inspect.iscoroutinefunction(agenerate):
            # awaited on the loop, under Inspect's own limits and timeouts (its model calls)
            try:
                return await agenerate(incoming, self.state)
            except BaseException as err:  # noqa: BLE001 (SystemExit & co. from the agent are its own)
                if _cancelled(err):
                    raise
                raise agent_fault("the agent", err) from None
        return await off_loop(self.agent.generate, incoming, self.state, operation="the agent")

    def _is_stop(self, reply: Any) -> bool:
        return bool(self.agent.is_stop(reply))  # in the worker: a __bool__ that raises is the agent's

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        if self.state is None:
            if self.seed is not None:
                await off_loop(self.agent.set_seed, self.seed, operation="set_seed")
            self.state = await off_loop(self.agent.init_state, self.context, [tool_schema(t) for t in tools], None,
                                        operation="init_state")
        incoming = self._incoming(messages)
        result = await self._generate(incoming)
        try:
            reply, self.state = result
        except Exception as err:  # noqa: BLE001 (not a pair: the agent's mistake)
            raise AgentProtocolError(f"generate must return (message, state); got {describe_error(err)}") from None
        try:
            message = to_inspect(reply, tools)
        except AgentProtocolError:
            raise
        except Exception as err:  # noqa: BLE001 (a reply built to break our reading of it)
            raise AgentProtocolError(f"the agent's reply cannot be read: {describe_error(err)}") from None
        self.seen += 1  # the reply itself is appended by the solver
        self.last = reply
        stop = await off_loop(self._is_stop, reply, operation="is_stop") or \
            text_of(reply.get("content")).strip() in STOP_TOKENS
        if stop:
            message.metadata = {"pibench_stop": True}
        return message

    async def aclose(self) -> None:
        # stop() runs even when the sample was cancelled (time limit), for a few seconds at most;
        # whatever it does (raises, blocks, exits) changes nothing: the sample is over
        with anyio.move_on_after(STOP_GRACE, shield=True):
            try:
                await off_loop(self.agent.stop, self.last, self.state, operation="stop", timeout=STOP_GRACE)
            except Exception:  # the original swallowed errors from stop() as well
                pass
