"""`pibench play`: a person plays one scenario at the terminal, as the agent or as the user.

The session is an ordinary Inspect eval of the registered `pibench_inspect/pibench` task with
`-T agent=human` (or `-T user=human`) and `--sample-id SCENARIO`: the same solver, engine, user
simulator, limits and scorer as `inspect eval`, and an ordinary log (`inspect view`, `pibench
report`). The person is a seat of the conversation (conversation/seats.py, human.py); their
lines are read in a thread of their own, so Inspect's event loop never waits on the keyboard.

Checks and scores are shown only when the conversation has ended. Ctrl-C, or the end of input
(Ctrl-D), stops the session: Inspect writes the log as cancelled (the sample marked as
interrupted) and the command exits with 130.
"""

from __future__ import annotations

import argparse
import difflib
import logging
import os
import random
import signal
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .run import at_least  # the same argparse integer type as pi run's flags
from .terminal import Terminal, inert

INTERRUPTED = 130
TASK = "pibench_inspect/pibench"


def known_ids(scenario_set: Any) -> list[str]:
    return sorted(scenario_set.entries)


def choose_scenario(terminal: Terminal, scenario_set: Any, wanted: str | None, pick: bool,
                    domain: str | None) -> str | None:
    """The scenario to play: the id given, one picked at random, or (unknown or none given) one
    the person types, with Tab completion; None when they stop (Ctrl-C, Ctrl-D). Only what
    `inspect eval` runs is played: a scenario it skips as invalid is refused with the reason."""
    from ..authoring.validate import static_problems

    invalid = static_problems(list(scenario_set.entries.values()))
    ids = [i for i in known_ids(scenario_set)
           if i not in invalid and (not domain or scenario_set.entries[i].domain.name == domain)]
    if not ids:
        present = sorted({e.domain.name for e in scenario_set.entries.values()})
        if domain and domain in present:
            raise LookupError(f"--domain {domain}: every scenario of it is invalid (run `pibench validate`)")
        raise LookupError(f"--domain {domain}: no such domain; domains: {', '.join(present)}")
    if pick:
        return random.SystemRandom().choice(ids)

    def complete(buffer: str) -> list[str]:
        return [i for i in ids if i.startswith(buffer)]

    while wanted not in ids:
        if wanted in invalid:
            terminal.show(f"! scenario {wanted} is invalid and `inspect eval` skips it: {'; '.join(invalid[wanted])}")
        elif wanted:
            near = difflib.get_close_matches(wanted, ids, 3, 0.5)
            terminal.show(f"! no scenario {wanted!r}" + (f" (closest: {', '.join(near)})" if near else "")
                          + "; `pibench list` shows every id")
        try:
            wanted = terminal.read_line("scenario id (Tab completes; Ctrl-D quits)> ", complete).strip()
        except (EOFError, KeyboardInterrupt):
            terminal.show("")
            return None
    return wanted


def log_dir_problem(args: argparse.Namespace) -> str | None:
    """Why the log folder cannot be used (checked before anything is loaded or played), or None.
    It is created when missing."""
    given = args.log_dir or os.environ.get("INSPECT_LOG_DIR")
    name = f"--log-dir {args.log_dir}" if args.log_dir else (f"INSPECT_LOG_DIR={given}" if given else "./logs")
    path = Path(given or "./logs").expanduser()
    if path.exists() and not path.is_dir():
        return f"{name}: not a folder (it is a file); name a folder for the session's log"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return f"{name}: cannot create the folder ({err.strerror or type(err).__name__})"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{name}: the folder is not writable"
    args.log_dir = str(path)
    return None


def task_args(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"max_steps": args.max_steps, "max_user_turns": args.max_user_turns, "judge": args.judge}
    if args.source:
        out["source"] = str(Path(args.source).expanduser().resolve())
    if args.as_ == "agent":
        out.update(agent="human", user=args.user)
    else:
        out.update(agent="model", user="human")
    return out


def model_roles(args: argparse.Namespace) -> dict[str, str]:
    roles = {}
    for item in args.model_role or []:
        role, sep, model = item.partition("=")
        if not sep or not role or not model:
            raise ValueError(f"--model-role {item!r}: write ROLE=PROVIDER/MODEL, e.g. user=openai/gpt-4o-mini")
        roles[role.strip()] = model.strip()
    return roles


def problem_with(args: argparse.Namespace, roles: dict[str, str]) -> str | None:
    if args.as_ == "user" and args.model in (None, "none", "none/none"):
        return "--as user plays against the model under test: pass --model PROVIDER/MODEL (e.g. openai/gpt-4o-mini)"
    if args.as_ == "agent" and args.user == "llm" and args.model in (None, "none", "none/none") and "user" not in roles:
        return ("--user llm needs a model for the simulated user: --model-role user=PROVIDER/MODEL "
                "(or --model), or play against the scripted user (--user scripted, the default)")
    if args.as_ == "user" and args.user_given:
        return "--user chooses the simulated user when you play the agent; with --as user, you are the user"
    return None


def new_logs(log_dir: Path, before: set[Path]) -> list[Path]:
    found = [p for p in log_dir.glob("*") if p.suffix in (".eval", ".json") and p not in before]
    return sorted(found, key=lambda p: p.stat().st_mtime)


def trailing_user_messages(messages: list[Any]) -> list[Any]:
    last = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    return [m for m in messages[last + 1:] if m.role == "user" and m.text.strip()]


def check_lines(md: dict[str, Any]) -> list[str]:
    from ..scoring.explain import check_list

    out = []
    for c in check_list(md.get("checks")):
        mark = {True: "PASS", False: "FAIL"}.get(c.get("passed"), "n/a ")
        out.append(f"  {mark} {c.get('outcome_id')} ({c.get('type')}): {c.get('detail', '')}")
    return out


def result_text(sample: Any, scenario_id: str, label: str) -> str:
    from ..scoring.record import score_record

    score = (sample.scores or {}).get("pibench_scorer")
    bar = "=" * 72
    if score is None:
        return f"{bar}\nThe session ended without a score: {sample.error.message if sample.error else 'no score'}"
    md = score_record(sample)
    value = score.value if isinstance(score.value, dict) else {}
    lines = [bar, f"Result of {scenario_id}", bar,
             f"decision: {score.answer} (via {md.get('decision_channel') or 'none'}); expected {label}",
             f"all checks passed: {'yes' if value.get('all_passed') else 'no'}; partial credit "
             f"{float(value.get('partial_credit', 0.0)):.2f}; the conversation ended: {md.get('termination')}",
             "checks:", *check_lines(md)]
    flags = [k for k, v in value.items() if k not in ("all_passed", "partial_credit") and v]
    if flags:
        lines.append("event flags: " + ", ".join(flags))
    return "\n".join(lines)


def cmd_play(args: argparse.Namespace) -> int:
    from ..scenario.catalog import load_set

    # SIGINT stops a session: Ctrl-C, and the end of input, which raises it (Terminal.ask). A
    # background job of a non-interactive shell inherits SIGINT ignored, and Python then installs
    # no handler (nor does asyncio): such a session would idle forever after its last line
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    terminal = Terminal()
    try:
        roles = model_roles(args)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    problem = problem_with(args, roles) or log_dir_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        scenario_set = load_set(args.source)
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return INTERRUPTED
    terminal.save()
    try:
        scenario_id = choose_scenario(terminal, scenario_set, args.scenario_id, args.random, args.domain)
        if scenario_id is None:
            terminal.show("no session played")
            return INTERRUPTED
        return play_session(terminal, args, roles, scenario_set, scenario_id)
    finally:
        terminal.restore()


def no_control_server() -> dict[str, Any]:
    """eval() arguments that leave out Inspect's control server (`inspect ctl`): a person's
    session has no use for it, and on Ctrl-C its uvicorn task printed a traceback of its own."""
    import inspect

    from inspect_ai import eval as inspect_eval

    return {"ctl_server": False} if "ctl_server" in inspect.signature(inspect_eval).parameters else {}


@contextmanager
def inert_log_records() -> Iterator[None]:
    """Inspect's log display prints log records on the person's terminal; a record may quote a
    scenario or a model (a skipped scenario's reason, a sample's error): its text is made inert."""
    factory = logging.getLogRecordFactory()

    def make(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = factory(*args, **kwargs)
        try:
            record.msg, record.args = inert(record.getMessage()), None
        except Exception:  # noqa: BLE001  (a record that cannot be formatted fails as it would have)
            pass
        return record

    logging.setLogRecordFactory(make)
    try:
        yield
    finally:
        logging.setLogRecordFactory(factory)


def play_session(terminal: Terminal, args: argparse.Namespace, roles: dict[str, str], scenario_set: Any,
                 scenario_id: str) -> int:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log

    from ..conversation.human import HumanSeat
    from ..conversation.seats import seated

    entry = scenario_set.entries[scenario_id]
    log_dir = Path(args.log_dir)  # checked and created (log_dir_problem)
    before = set(log_dir.glob("*"))
    shown = scenario_id if not args.random else "a scenario picked at random (its id is shown at the end)"
    terminal.show(f"pibench play: {shown}; you are the {args.as_}. Starting...")
    interrupted = False
    logs: list[Any] = []
    try:
        with seated(HumanSeat(terminal)), inert_log_records():
            logs = inspect_eval(
                TASK, task_args=task_args(args), sample_id=scenario_id, model=args.model or "none",
                model_roles=roles or None, log_dir=str(log_dir), display="log", score_display=False,
                **no_control_server(),
            )
    except KeyboardInterrupt:
        interrupted = True
    except Exception as err:  # the task refused to start (a bad argument, a missing key): one line
        print(f"error: {inert(str(err).strip().splitlines()[0]) if str(err).strip() else type(err).__name__}",
              file=sys.stderr)
        return 2
    written = [Path(x.location) for x in logs if getattr(x, "location", None)] or new_logs(log_dir, before)
    log = read_eval_log(str(written[-1])) if written else None
    if interrupted or log is None or log.status == "cancelled":
        why = "input ended" if terminal.ended_by == "eof" else "interrupted"
        where = f"\n  log: {written[-1]}" if written else ""
        which = f" (the scenario was {scenario_id})" if args.random else ""
        terminal.show(f"\nsession {why}: the log is marked cancelled (interrupted) and not scored{which}{where}")
        return INTERRUPTED
    sample = (log.samples or [None])[0]
    if log.status != "success" or sample is None:
        reason = log.error.message if log.error else (sample.error.message if sample and sample.error else log.status)
        print(f"error: the session failed: {inert(reason.strip().splitlines()[0])}\n  log: {written[-1]}", file=sys.stderr)
        return 1
    if args.as_ == "agent":  # what the user said last, after the person's final move
        for m in trailing_user_messages(sample.messages):
            terminal.show(f"user: {m.text}")
    terminal.show(result_text(sample, scenario_id, entry.scenario.expected))
    terminal.show(f"log: {written[-1]}  (read it with `inspect view`)")
    return 0


def add_play_command(sub: Any) -> None:
    p = sub.add_parser(
        "play", help="play a scenario yourself at the terminal, as the agent or as the user (an ordinary Inspect log)",
        description="Play one scenario yourself at the terminal, as the agent or as the user: the same engine, "
        "user simulator, limits and scorer as inspect eval, and an ordinary Inspect log (agent `human`). "
        "Scores and checks are shown when the conversation ends; Ctrl-C or Ctrl-D stops the session "
        "(the log is marked cancelled; exit 130).")
    p.add_argument("scenario_id", nargs="?", metavar="SCENARIO_ID",
                   help="the scenario to play (`pibench list`); asked for, with Tab completion, when absent or unknown")
    p.add_argument("--as", dest="as_", choices=("agent", "user"), default="agent",
                   help="play the agent (default: the scripted or LLM user talks to you) or the user "
                   "(the --model under test is the agent)")
    p.add_argument("--source", help="root of a scenario source holding scenarios/ and domains/ (default: the shipped set)")
    p.add_argument("--user", choices=("scripted", "llm"), default=None,
                   help="the simulated user when you play the agent (default scripted; llm needs "
                   "--model-role user=... or --model)")
    p.add_argument("--model", help="the model under test when you play the user (e.g. openai/gpt-4o-mini); "
                   "otherwise the default model of the LLM user and of the NL judge")
    p.add_argument("--model-role", action="append", metavar="ROLE=MODEL",
                   help="a model role, as for inspect eval: user=... (the LLM user), grader=... (the NL judge)")
    p.add_argument("--judge", choices=("auto", "on", "off"), default="auto", help="NL judge mode (as -T judge)")
    p.add_argument("--max-steps", type=at_least(2), default=40, help="conversation step limit (as -T max_steps; default 40)")
    p.add_argument("--max-user-turns", type=at_least(1), default=8,
                   help="messages the user may send, the opening included (as -T max_user_turns; default 8)")
    p.add_argument("--random", action="store_true",
                   help="play a scenario picked at random (with --domain, from that domain); its id is shown at the end")
    p.add_argument("--domain", help="with --random or when asked for an id: only this domain's scenarios")
    p.add_argument("--log-dir", help="where to write the log (default: $INSPECT_LOG_DIR or ./logs)")
    p.set_defaults(func=run_play)


def run_play(args: argparse.Namespace) -> int:
    args.user_given = args.user is not None
    args.user = args.user or "scripted"
    return cmd_play(args)
