"""`pi-bench-green`: pi-bench as an A2A green agent (AgentBeats' benchmark side).

    pi-bench-green --port 9009 --scenarios-dir /path/to/pi-bench --concurrency 2

Routes: A2A JSON-RPC (message/send, message/stream, tasks/get, tasks/cancel) at POST / and at
POST /a2a/message/send (the original's path); the agent card at /.well-known/agent-card.json
and /.well-known/agent.json; GET /health; GET /scenarios (the scenario set assessments use).

It listens on 127.0.0.1 unless told otherwise (--host 0.0.0.0 in a container): the server
starts evaluation runs that spend model credit on whoever asks, so exposing it is a decision.
What a caller can make it do is bounded by the operator: participant hosts (--allow-host,
loopback by default), model providers (--model-providers), scenario folders (--scenario-root),
the size of a run (request.py, plan.py) and, optionally, who may ask (--auth-token, auth.py).
Every assessment's Inspect log stays under --log-dir (one folder per task): it is the evidence
behind the result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from a2a.server.apps import A2AStarletteApplication
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCard, AgentSkill
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..lenient import LenientMessages
from ...cli.refusal import OneLineParser
from ..serving import agent_card
from .executor import GreenExecutor
from .handler import AssessmentRequestHandler
from .auth import BearerAuth
from .plan import DEFAULT_PROVIDERS, LOOPBACK, ServerSettings, source_folder
from .request import InvalidRequest

LEGACY_RPC = "/a2a/message/send"
TOKEN_ENV = "PI_BENCH_GREEN_TOKEN"
logger = logging.getLogger(__name__)

EXAMPLES = [
    json.dumps({"participants": {"agent": "http://purple.example:9019"},
                "config": {"scenario_scope": "all", "user_model": "gpt-4.1-mini"}}),
    json.dumps({"participants": {"agent": {"url": "http://purple.example:9019", "id": "my-agent"}},
                "config": {"scenario_scope": "domain", "scenario_domain": "finra", "user_model": "gpt-4.1-mini",
                           "judge_model": "gpt-4.1"}}),
    json.dumps({"participants": {"agent": "http://purple.example:9019"},
                "config": {"scenarios": ["FIN_002_LOCKUP_SALE_BEFORE_EXPIRY"], "observer_mode": "hard_gate",
                           "num_trials": 3, "user_url": "http://user-sim.example:8768"}}),
    json.dumps({"purple_agent_url": "http://purple.example:9019", "config": {"user": "scripted", "judge": "off"}}),
]


def green_card(url: str) -> AgentCard:
    skill = AgentSkill(
        id="policy_compliance_assessment",
        name="Policy Compliance Assessment",
        description=(
            "Runs the pi-bench scenarios (FINRA/AML compliance, retail refunds, IT helpdesk access "
            "control) against the agent named in the request: a simulated user talks to it, it acts "
            "through the domain's tools, and every run is checked against the written policy. "
            "Returns the pi-bench leaderboard payload as the artifact 'PI-Bench Assessment Results'."
        ),
        tags=["policy", "compliance", "assessment", "benchmark", "finra", "aml", "retail", "helpdesk"],
        examples=EXAMPLES,
        input_modes=["application/json"],
        output_modes=["application/json"],
    )
    return agent_card(
        "PI-Bench",
        "Policy-compliance benchmark for service agents (pi-bench on Inspect AI). Send an assessment "
        "request naming the purple agent; follow progress with message/stream or tasks/get.",
        url, skill, bootstrap=False, streaming=True,
    )


def scenario_listing(source: Path | None) -> dict[str, Any]:
    from ...scenario.catalog import load_set

    found = load_set(source)
    root = (source or _shipped_root()) / "scenarios"
    scenarios = []
    domains: dict[str, int] = {}
    for e in found.entries.values():
        try:
            file = str(e.path.resolve().relative_to(root.resolve()))
        except ValueError:
            file = str(e.path)
        scenarios.append({"scenario_id": e.scenario.scenario_id, "domain": e.domain.name,
                          "label": e.scenario.expected, "file": file})
        domains[e.domain.name] = domains.get(e.domain.name, 0) + 1
    out: dict[str, Any] = {"count": len(scenarios), "domains": dict(sorted(domains.items())), "scenarios": scenarios}
    if found.errors:  # files that are skipped: say so rather than list fewer without a word
        out["invalid"] = [str(err) for err in found.errors]
    return out


def _shipped_root() -> Path:
    from ...paths import data_root

    return data_root()


def build_green_app(settings: ServerSettings, card_url: str, auth_token: str | None = None) -> Starlette:
    executor = GreenExecutor(settings)
    a2a = A2AStarletteApplication(
        agent_card=green_card(card_url), http_handler=AssessmentRequestHandler(executor, InMemoryTaskStore())
    )

    async def health(request: Any) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def scenarios(request: Any) -> JSONResponse:
        try:
            return JSONResponse(await asyncio.to_thread(scenario_listing, settings.scenarios_dir))
        except (OSError, ValueError):
            logger.exception("cannot list the scenarios")  # the reason names server paths: log only
            return JSONResponse({"error": "cannot read the scenarios (see the server's log)"}, status_code=500)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette):
        yield
        await executor.shutdown()  # no evaluation outlives the server

    legacy = [r for r in a2a.routes(rpc_url=LEGACY_RPC) if getattr(r, "path", None) == LEGACY_RPC]
    app = Starlette(
        routes=[Route("/health", health, methods=["GET"]), Route("/scenarios", scenarios, methods=["GET"]),
                *a2a.routes(), *legacy],
        lifespan=lifespan,
    )
    app.add_middleware(LenientMessages)  # the original's clients omit messageId and kind
    if auth_token:
        app.add_middleware(BearerAuth, token=auth_token)  # outermost: refused before the body is read
    app.state.executor = executor  # tests and operators can see the running assessments
    return app


def main(argv: list[str] | None = None) -> None:
    parser = OneLineParser(prog="pi-bench-green", description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="interface to listen on (default 127.0.0.1; use 0.0.0.0 to accept remote callers)")
    parser.add_argument("--port", type=int, default=9009)
    parser.add_argument("--card-url", help="public URL in the agent card (default http://HOST:PORT/)")
    parser.add_argument("--concurrency", type=int, default=1,
                        help="sample runs in flight across all assessments (default 1); more requests queue")
    parser.add_argument("--heartbeat", type=float, default=30.0,
                        help="seconds between progress updates at the latest (default 30)")
    parser.add_argument("--scenarios-dir",
                        help="scenario source (a folder with scenarios/ and domains/) for /scenarios and for "
                             "assessments that name none (default: the shipped set)")
    parser.add_argument("--log-dir", default="logs/green", help="where assessment logs are kept (default ./logs/green)")
    parser.add_argument("--user-model", help="simulated-user model for requests that name none (e.g. gpt-4.1-mini)")
    parser.add_argument("--judge-model", help="NL-judge model for requests that name none")
    parser.add_argument("--allow-host", action="append", default=None, metavar="HOST",
                        help="a host participants (agent, user_url) may be on; repeat for more; '*' allows any "
                             f"(default: loopback only, {', '.join(LOOPBACK)})")
    parser.add_argument("--model-providers", default=",".join(DEFAULT_PROVIDERS),
                        help="comma-separated Inspect providers a request may name for user_model/judge_model "
                             "(default: hosted APIs; 'protocol' runs Python and must be listed explicitly); "
                             "litellm/<provider> allows one of LiteLLM's own providers beyond its hosted ones "
                             "(e.g. litellm/ollama: a local endpoint)")
    parser.add_argument("--scenario-root", action="append", default=[], metavar="DIR",
                        help="a folder under which a request's config.scenarios_dir may lie; repeat for more "
                             "(default: only --scenarios-dir itself)")
    parser.add_argument("--auth-token",
                        help=f"require 'Authorization: Bearer TOKEN' on every request but the card and /health "
                             f"(or set {TOKEN_ENV})")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    if args.concurrency < 1:
        parser.error("--concurrency must be at least 1")
    if args.heartbeat <= 0:
        parser.error("--heartbeat must be positive")
    source = None
    if args.scenarios_dir:
        try:
            source = source_folder(args.scenarios_dir, "--scenarios-dir")
        except InvalidRequest as err:
            parser.error(str(err))
    roots = []
    for raw in args.scenario_root:
        root = Path(raw).expanduser().resolve()
        if not root.is_dir():
            parser.error(f"--scenario-root {raw}: not a folder")
        roots.append(root)
    providers = tuple(p.strip() for p in args.model_providers.split(",") if p.strip())
    if not providers:
        parser.error("--model-providers: name at least one provider")
    settings = ServerSettings(
        concurrency=args.concurrency, heartbeat=args.heartbeat, scenarios_dir=source,
        log_dir=Path(args.log_dir).expanduser().resolve(), user_model=args.user_model, judge_model=args.judge_model,
        allowed_hosts=tuple(args.allow_host or LOOPBACK), model_providers=providers, scenario_roots=tuple(roots),
    )
    for name in (args.user_model, args.judge_model):
        if name and "/" in name and name.split("/", 1)[0] not in {p.split("/", 1)[0] for p in providers}:
            parser.error(f"model {name}: its provider is not in --model-providers")
    try:
        listing = scenario_listing(source)
    except (OSError, ValueError) as err:
        parser.error(f"--scenarios-dir: {err}")
    if not listing["count"]:
        parser.error(f"--scenarios-dir: no valid scenario under {source or 'the shipped set'}")
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    import uvicorn

    token = args.auth_token or os.environ.get(TOKEN_ENV) or None
    app = build_green_app(settings, args.card_url or f"http://{args.host}:{args.port}/", auth_token=token)
    # a blocking message/send may wait for hours: do not wait for it on shutdown, end the runs
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=10)


if __name__ == "__main__":
    main()
