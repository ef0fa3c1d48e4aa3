"""`pi run SCENARIO_FILE` and `pi run-domain DOMAIN`: the original CLI's flags, run on Inspect.

Flag mapping: --agent-llm -> --model (or --agent for a built-in / module:Class agent);
--user-llm -> the `user` model role; --solo / --no-solo -> `-T user=solo` / a simulated user
(scripted unless --user-llm is given, as in the original); --trials -> epochs;
--concurrency -> max_samples; --seed -> Inspect's seed; --max-steps -> `-T max_steps`.

Both run the registered tasks (`pibench_inspect/pibench`, `pibench_inspect/pibench_<domain>`)
by name, so their logs are named, carry the task arguments, and `inspect eval-retry` and
`inspect score` work on them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def at_least(low: int) -> Any:
    """An argparse type: an integer >= low (a bad value is argparse's one-line usage error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{value} is below {low}")
        return value

    parse.__name__ = f"integer >= {low}"
    return parse


def add_run_commands(sub: Any) -> None:
    for name, what in (("run", "one scenario file"), ("run-domain", "every scenario of a domain")):
        p = sub.add_parser(name, help=f"run {what} (the original pi CLI's flags)")
        if name == "run":
            p.add_argument("scenario_file", help="a scenario JSON file")
        else:
            p.add_argument("domain", help="finra, retail, helpdesk (or an original alias)")
            p.add_argument("--source", help="a folder holding scenarios/ and domains/ (default: the shipped set)")
        p.add_argument("--agent-llm", default=None, help="model under test (Inspect model string, e.g. openai/gpt-4o-mini or litellm/...)")
        p.add_argument("--agent", default=None, help="a built-in agent (oracle, nothing, ...) or module:ClassOrFactory")
        p.add_argument("--user-llm", default=None, help="model for the simulated user")
        solo = p.add_mutually_exclusive_group()
        solo.add_argument("--solo", dest="solo", action="store_true", default=(name == "run"),
                          help="no simulated user: the request arrives as a ticket" + (" (default)" if name == "run" else ""))
        solo.add_argument("--no-solo", dest="solo", action="store_false",
                          help="simulated user (scripted unless --user-llm)" + (" (default)" if name != "run" else ""))
        p.add_argument("--trials", type=at_least(1), default=1, help="runs per scenario (Inspect epochs)")
        p.add_argument("--concurrency", type=at_least(1), default=None, help="samples in flight (Inspect max_samples)")
        p.add_argument("--seed", type=int, default=None, help="generation seed")
        p.add_argument("--max-steps", type=at_least(2), default=40, help="conversation step limit (at least 2)")
        p.add_argument("--log-dir", default="logs", help="where Inspect writes the log (default ./logs)")
        p.set_defaults(func=cmd_run)


def scenario_source(path: Path) -> tuple[Path | None, str]:
    """(source root or None for the shipped set, scenario id) of a scenario file."""
    from ..paths import data_root
    from ..scenario.loader import load_scenario

    scenario = load_scenario(path)
    for parent in path.resolve().parents:
        if (parent / "scenarios").is_dir() and (parent / "domains").is_dir():
            return (None if parent == data_root().resolve() else parent), scenario.scenario_id
    raise FileNotFoundError(f"{path}: no folder above it holds scenarios/ and domains/")


TASK_DOMAINS = ("finra", "retail", "helpdesk")


def cmd_run(args: argparse.Namespace) -> int:
    from inspect_ai import eval as inspect_eval

    from ..runtime import run_check

    run_check.enforce()  # a run that loses samples says so and exits 1, 130 if interrupted (and always exits)

    task_args: dict[str, Any] = {"max_steps": args.max_steps}
    if args.solo:
        task_args["user"] = "solo"
    elif not args.user_llm:
        task_args["user"] = "scripted"
    if args.agent:
        task_args["agent"] = args.agent
    sample_id = None
    if getattr(args, "scenario_file", None):
        source, sid = scenario_source(Path(args.scenario_file))
        if source:
            task_args["source"] = str(source)
        task, sample_id = "pibench_inspect/pibench", sid
    else:
        from ..domain.loader import domain_aliases
        from ..paths import domains_dir, user_path

        src = user_path(args.source) if args.source else None
        if src is not None and not (src / "scenarios").is_dir():
            raise SystemExit(f"error: --source {args.source}: no scenarios/ folder there; "
                             "pass a folder holding scenarios/ and domains/")
        name = domain_aliases(domains_dir(src)).get(args.domain, args.domain)
        if src:
            task_args["source"] = str(src)
        if name in TASK_DOMAINS:
            task = f"pibench_inspect/pibench_{name}"
        else:
            # a domain of another scenario folder: the all-domains task, narrowed to its scenarios
            from ..scenario.catalog import load_set

            sset = load_set(src)
            ids = [e.scenario.scenario_id for e in sset.by_domain(name)]
            if not ids:
                from .refusal import closest

                present = sorted({e.domain.name for e in sset.entries.values()})
                near = closest(args.domain, present)
                raise SystemExit(f"error: {args.domain}: no scenarios of that domain under {src or 'the shipped set'}"
                                 + (f" (did you mean {', '.join(near)}?)" if near else "")
                                 + f"; domains: {', '.join(present)}")
            task, sample_id = "pibench_inspect/pibench", ids
    model = args.agent_llm or ("none" if args.agent else None)
    if model is None:
        raise SystemExit("error: pass --agent-llm MODEL (or --agent NAME for a built-in or your own agent)")
    if not args.agent and model.split("/")[0] == "none":
        raise SystemExit(f"error: --agent-llm {model}: no model to evaluate; pass --agent-llm PROVIDER/MODEL, "
                         "or --agent NAME for a built-in agent (e.g. --agent oracle) or your own")
    try:
        logs = inspect_eval(
            task,
            task_args=task_args,
            model=model,
            model_roles={"user": args.user_llm} if args.user_llm else None,
            sample_id=sample_id,
            epochs=args.trials,
            max_samples=args.concurrency,
            seed=args.seed,
            log_dir=args.log_dir,
        )
    except KeyboardInterrupt:  # Ctrl-C at a terminal: the log is written (run_check said what it holds)
        return run_check.INTERRUPTED
    if not logs:
        print("pi-bench: the run lost samples: Inspect returned no log", file=sys.stderr)
        return 1
    if run_check.exit_status() or logs[0].status == "cancelled":
        return run_check.exit_status() or run_check.INTERRUPTED
    return 1 if logs[0].status != "success" else 0
