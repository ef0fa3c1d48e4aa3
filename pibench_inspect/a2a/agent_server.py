"""Serve any five-operation protocol agent as an A2A purple agent.

    pibench serve-agent examples.local_demo.demo_agent:CautiousAgent --port 8766

The card declares the bootstrap extension (unless --no-bootstrap). Bootstrapped: the agent is
created once per context, and each turn feeds it only the messages it has not seen; the context
id is the server's own, unguessable, and the session expires by age (ProtocolAgentHost). Stateless:
each request creates the agent afresh and replays the whole history, so a deterministic agent
answers exactly as it would locally. Replies are a data part `{"tool_calls": [OpenAI style],
"content"?}` or `{"content": text}`; an agent whose is_stop() says so gets a stop token appended.
The `seed` is read by meaning: 42.0 (what an a2a-sdk 1.x client sends for 42) seeds the agent
with 42; a fraction or a boolean is refused naming the field (numbers.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from collections import OrderedDict
from typing import Any, Callable

from a2a.server.agent_execution import RequestContext
from a2a.types import AgentSkill

from ..local.adapter import load_agent
from ..cli.refusal import OneLineParser
from ..local.replay import ReplayError, Session, answer, openai_calls, protocol_tools, protocol_turns, reply_text, with_stop
from .numbers import NotWholeNumber, optional_whole_number
from .serving import JsonExecutor, RequestProblem, agent_card, build_app

MAX_SESSIONS = 1000  # live bootstrapped contexts; a bootstrap beyond this is refused, none evicted
SESSION_TTL = 3600.0  # seconds a context lives after its last use


def wire_reply(message: Any, stop: bool) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise RequestProblem(f"the agent returned {type(message).__name__}, not a message dict")
    out: dict[str, Any] = {}
    if message.get("tool_calls"):
        out["tool_calls"] = openai_calls(message)
    content = with_stop(reply_text(message), stop)
    if content or not out:
        out["content"] = content
    return out


class ProtocolAgentHost:
    """Sessions belong to whoever bootstrapped them: the context id is ours, random and
    unguessable (never the caller's contextId), so no caller can take over or replace another's
    session. They expire by age (`ttl` seconds after their last use), never by pressure: when
    `max_sessions` are live, a new bootstrap is refused rather than a live session evicted."""

    def __init__(self, factory: Callable[[], Any], max_sessions: int = MAX_SESSIONS, ttl: float = SESSION_TTL,
                 clock: Callable[[], float] = time.monotonic):
        self.factory = factory
        self.max_sessions, self.ttl, self.clock = max_sessions, ttl, clock
        self.sessions: OrderedDict[str, Session] = OrderedDict()  # least recently used first
        self.used: dict[str, float] = {}

    def _expire(self) -> None:
        cutoff = self.clock() - self.ttl
        while self.sessions:
            oldest = next(iter(self.sessions))
            if self.used[oldest] > cutoff:
                break
            del self.sessions[oldest], self.used[oldest]

    def _open(self, session: Session) -> str:
        self._expire()
        if len(self.sessions) >= self.max_sessions:
            raise RequestProblem(f"this server holds {self.max_sessions} live sessions, the most it keeps; "
                                 "bootstrap again later or use stateless mode")
        context_id = secrets.token_urlsafe(24)
        self.sessions[context_id] = session
        self.used[context_id] = self.clock()
        return context_id

    def _session(self, context_id: Any) -> Session:
        self._expire()
        key = str(context_id)
        session = self.sessions.get(key)
        if session is None:
            # the same answer for an id never issued and one expired: ids are not to be probed
            raise RequestProblem("unknown or expired context_id: bootstrap first")
        self.sessions.move_to_end(key)
        self.used[key] = self.clock()
        return session

    def _new_session(self, data: dict[str, Any]) -> Session:
        context = data.get("benchmark_context")
        if not isinstance(context, list):
            raise RequestProblem("'benchmark_context' must be a list of context nodes")
        try:
            tools = protocol_tools(data.get("tools", []))
        except ValueError as err:
            raise RequestProblem(str(err)) from None
        return Session(self.factory(), context, tools)

    async def handle(self, data: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        if data.get("bootstrap") is True:
            return {"bootstrapped": True, "context_id": self._open(self._new_session(data))}
        history = data.get("messages")
        if not isinstance(history, list):
            raise RequestProblem("'messages' must be the conversation as a list of OpenAI-format messages")
        turns = protocol_turns(history)
        if not turns:
            raise RequestProblem("'messages' holds no user message or tool result to answer")
        try:
            seed = optional_whole_number(data.get("seed"), "'seed'")
        except NotWholeNumber as err:
            raise RequestProblem(str(err)) from None
        context_id = data.get("context_id")
        if context_id is not None:
            session = self._session(context_id)
        else:
            session = self._new_session(data)  # stateless: replay everything
        try:
            # protocol agents are synchronous (and may call a model): keep the event loop free
            reply, stop = await asyncio.to_thread(answer, session, turns, seed)
        except ReplayError as err:
            raise RequestProblem(str(err)) from None
        return wire_reply(reply, stop)


def build_agent_app(factory: Callable[[], Any], url: str, bootstrap: bool = True, name: str = "protocol agent",
                    max_sessions: int = MAX_SESSIONS, session_ttl: float = SESSION_TTL):
    skill = AgentSkill(id="policy_compliant_agent", name="Policy-compliant service agent",
                       description="Answers customers and calls the benchmark's tools under its policy.",
                       tags=["pi-bench", "agent"])
    card = agent_card(f"pibench {name}", "A five-operation protocol agent served over A2A.", url, skill,
                      bootstrap=bootstrap)
    host = ProtocolAgentHost(factory, max_sessions, session_ttl)
    app = build_app(card, JsonExecutor(host.handle), {"status": "ok", "agent": name, "bootstrap": bootstrap})
    app.state.host = host  # tests and operators can see the live sessions
    return app


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(prog="pibench serve-agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("agent", help="module:ClassOrFactory implementing pibench_inspect.local.AgentProtocol")
    parser.add_argument("--agent-args", default="{}", help="JSON object of keyword arguments for the factory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--card-url", help="public URL for the card (default http://HOST:PORT/)")
    parser.add_argument("--no-bootstrap", action="store_true", help="do not declare the bootstrap extension")
    parser.add_argument("--max-sessions", type=int, default=MAX_SESSIONS,
                        help=f"live bootstrapped sessions kept; more bootstraps are refused (default {MAX_SESSIONS})")
    parser.add_argument("--session-ttl", type=float, default=SESSION_TTL,
                        help=f"seconds a session lives after its last use (default {SESSION_TTL:g})")
    args = parser.parse_args(argv)
    if args.max_sessions < 1 or args.session_ttl <= 0:
        parser.error("--max-sessions must be at least 1 and --session-ttl positive")
    try:
        kwargs = json.loads(args.agent_args)
        if not isinstance(kwargs, dict):
            raise ValueError("--agent-args must be a JSON object")
        load_agent(args.agent, kwargs)  # fail now, not on the first request
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        parser.error(str(err).removeprefix(f"-T agent={args.agent}: "))
    import uvicorn

    app = build_agent_app(lambda: load_agent(args.agent, kwargs), args.card_url or f"http://{args.host}:{args.port}/",
                          bootstrap=not args.no_bootstrap, name=args.agent, max_sessions=args.max_sessions,
                          session_ttl=args.session_ttl)
    print(f"serving {args.agent} over A2A at http://{args.host}:{args.port}/ (bootstrap: {not args.no_bootstrap})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
