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
"""

from __future__ import annotations

import importlib
import inspect
from functools import partial
from typing import Any, Callable, TypeVar

import anyio
from anyio.lowlevel import RunVar
from inspect_ai._util.error import PrerequisiteError
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolDef
from inspect_ai.util import LimitExceededError

from .errors import AgentProtocolError, AgentUnavailable
from .protocol import AgentProtocol

from ..conversation.termination import ModelStopped
from ..conversation.tool_calls import read_call
from ..conversation.users import STOP_TOKENS
CALL_KEYS = {"id", "name", "arguments", "requestor"}

__all__ = ["AgentProtocolError", "AgentUnavailable", "ProtocolAgent", "check_agent", "load_agent", "to_inspect"]

# anyio's shared pool runs 40 threads at once; agents get their own, sized so that every sample
# in flight can wait on its agent at the same time (idle threads cost nothing)
AGENT_THREADS = 512
_threads: RunVar[anyio.CapacityLimiter] = RunVar("pibench_agent_threads")
T = TypeVar("T")
STOP_GRACE = 5.0  # seconds an agent's stop() may take once its sample is over
# failures that are not the agent's to answer for: raised through, never turned into agent_error;
# ModelStopped (the agent's model overflowed or was filtered) has a termination of its own
PASS_THROUGH = (AgentProtocolError, AgentUnavailable, LimitExceededError, ModelStopped)


def _limiter() -> anyio.CapacityLimiter:
    try:
        return _threads.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(AGENT_THREADS)
        _threads.set(limiter)
        return limiter


async def off_loop(fn: Callable[..., T], *args: Any) -> T:
    """Run a blocking protocol operation in a worker thread. A cancelled sample (`--time-limit`,
    an interrupt) does not wait for it: the thread is abandoned and its result dropped, so a hung
    agent cannot hold the run."""
    return await anyio.to_thread.run_sync(partial(fn, *args), abandon_on_cancel=True, limiter=_limiter())


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
            return await agenerate(incoming, self.state)
        return await off_loop(self.agent.generate, incoming, self.state)

    async def next(self, messages: list[ChatMessage], tools: list[ToolDef]) -> ChatMessageAssistant:
        try:
            if self.state is None:
                if self.seed is not None:
                    await off_loop(self.agent.set_seed, self.seed)
                self.state = await off_loop(self.agent.init_state, self.context, [tool_schema(t) for t in tools], None)
            incoming = self._incoming(messages)
            reply, self.state = await self._generate(incoming)
        except PASS_THROUGH:
            raise
        except Exception as err:
            raise AgentProtocolError(f"the agent raised {type(err).__name__}: {err}") from None
        message = to_inspect(reply, tools)
        self.seen += 1  # the reply itself is appended by the solver
        self.last = reply
        try:
            stop = bool(await off_loop(self.agent.is_stop, reply)) or text_of(reply.get("content")).strip() in STOP_TOKENS
        except Exception as err:
            raise AgentProtocolError(f"is_stop raised {type(err).__name__}: {err}") from None
        if stop:
            message.metadata = {"pibench_stop": True}
        return message

    async def aclose(self) -> None:
        # stop() runs even when the sample was cancelled (time limit), for a few seconds at most
        with anyio.move_on_after(STOP_GRACE, shield=True):
            try:
                await off_loop(self.agent.stop, self.last, self.state)
            except Exception:  # the original swallowed errors from stop() as well
                pass

