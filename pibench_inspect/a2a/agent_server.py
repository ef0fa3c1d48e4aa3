"""Serve any five-operation protocol agent as an A2A purple agent.

    pibench serve-agent examples.local_demo.demo_agent:CautiousAgent --port 8766

The card declares the bootstrap extension (unless --no-bootstrap). Bootstrapped: the agent is
created once per context, and each turn feeds it only the messages it has not seen. Stateless:
each request creates the agent afresh and replays the whole history, so a deterministic agent
answers exactly as it would locally. Replies are a data part `{"tool_calls": [OpenAI style],
"content"?}` or `{"content": text}`; an agent whose is_stop() says so gets a stop token appended.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import OrderedDict
from typing import Any, Callable

from a2a.server.agent_execution import RequestContext
from a2a.types import AgentSkill

from ..local.adapter import load_agent
from ..local.replay import ReplayError, Session, answer, openai_calls, protocol_tools, protocol_turns, reply_text, with_stop
from .serving import JsonExecutor, RequestProblem, agent_card, build_app

MAX_SESSIONS = 1000  # bootstrapped contexts kept (oldest evicted; the original never evicted)


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
    def __init__(self, factory: Callable[[], Any]):
        self.factory = factory
        self.sessions: OrderedDict[str, Session] = OrderedDict()

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
            session = self._new_session(data)
            context_id = ctx.context_id or ""
            self.sessions[context_id] = session
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
            return {"bootstrapped": True, "context_id": context_id}
        history = data.get("messages")
        if not isinstance(history, list):
            raise RequestProblem("'messages' must be the conversation as a list of OpenAI-format messages")
        turns = protocol_turns(history)
        if not turns:
            raise RequestProblem("'messages' holds no user message or tool result to answer")
        context_id = data.get("context_id")
        if context_id is not None:
            session = self.sessions.get(str(context_id))
            if session is None:
                raise RequestProblem(f"unknown context_id {context_id!r}: bootstrap first")
        else:
            session = self._new_session(data)  # stateless: replay everything
        try:
            # protocol agents are synchronous (and may call a model): keep the event loop free
            reply, stop = await asyncio.to_thread(answer, session, turns, data.get("seed"))
        except ReplayError as err:
            raise RequestProblem(str(err)) from None
        return wire_reply(reply, stop)


def build_agent_app(factory: Callable[[], Any], url: str, bootstrap: bool = True, name: str = "protocol agent"):
    skill = AgentSkill(id="policy_compliant_agent", name="Policy-compliant service agent",
                       description="Answers customers and calls the benchmark's tools under its policy.",
                       tags=["pi-bench", "agent"])
    card = agent_card(f"pibench {name}", "A five-operation protocol agent served over A2A.", url, skill,
                      bootstrap=bootstrap)
    host = ProtocolAgentHost(factory)
    app = build_app(card, JsonExecutor(host.handle), {"status": "ok", "agent": name, "bootstrap": bootstrap})
    app.state.host = host  # tests and operators can see the live sessions
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="pibench serve-agent", description=__doc__.split("\n\n")[0])
    parser.add_argument("agent", help="module:ClassOrFactory implementing pibench_inspect.local.AgentProtocol")
    parser.add_argument("--agent-args", default="{}", help="JSON object of keyword arguments for the factory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--card-url", help="public URL for the card (default http://HOST:PORT/)")
    parser.add_argument("--no-bootstrap", action="store_true", help="do not declare the bootstrap extension")
    args = parser.parse_args(argv)
    try:
        kwargs = json.loads(args.agent_args)
        if not isinstance(kwargs, dict):
            raise ValueError("--agent-args must be a JSON object")
        load_agent(args.agent, kwargs)  # fail now, not on the first request
    except ValueError as err:  # json.JSONDecodeError is a ValueError
        parser.error(str(err).removeprefix(f"-T agent={args.agent}: "))
    import uvicorn

    app = build_agent_app(lambda: load_agent(args.agent, kwargs), args.card_url or f"http://{args.host}:{args.port}/",
                          bootstrap=not args.no_bootstrap, name=args.agent)
    print(f"serving {args.agent} over A2A at http://{args.host}:{args.port}/ (bootstrap: {not args.no_bootstrap})", flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
