"""`pibench` (also installed as `pi`): list, validate and describe scenario sets."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from .. import _bootstrap  # noqa: F401


def unknown_domain(domain: str, present: list[str]) -> str:
    from .refusal import closest

    near = closest(domain, present, 1)
    return (f"--domain {domain}: no such domain" + (f" (did you mean {near[0]}?)" if near else "")
            + f"; domains: {', '.join(present)}")


def cmd_list(args: argparse.Namespace) -> int:
    from ..scenario.catalog import load_set

    sset = load_set(args.source)
    present = sorted({e.domain.name for e in sset.entries.values()})
    if args.domain and args.domain not in present:
        raise LookupError(unknown_domain(args.domain, present))
    chosen = [e for e in sset.entries.values() if not args.domain or e.domain.name == args.domain]
    rows = [(e.scenario.scenario_id, e.domain.name, e.scenario.expected, e.scenario.primary) for e in chosen]
    if args.json:
        # family: the family a generated scenario belongs to (a hand-written one is its own)
        print(json.dumps([{**dict(zip(("scenario_id", "domain", "label", "column"), r)), "family": e.scenario.family,
                           "combo": e.scenario.meta.combo, "envelope": e.scenario.meta.envelope}
                          for r, e in zip(rows, chosen)], indent=2))
    else:
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(("scenario", "domain", "label", "column"))]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        print(fmt.format("scenario", "domain", "label", "column"))
        for r in rows:
            print(fmt.format(*r))
        counts = Counter(r[1] for r in rows)
        print(f"\n{set_summary(chosen)}: " + ", ".join(f"{d} {n}" for d, n in sorted(counts.items())))
    if sset.errors:
        print(f"{len(sset.errors)} file(s) failed to load; run `pibench validate` for details", file=sys.stderr)
    return 0


def set_summary(entries: list) -> str:
    """`488 scenarios: 410 from 21 families, 78 written by hand (99 families in the statistics)`:
    the README's count of families, and the statistics' (a hand-written scenario is its own)."""
    generated = [e for e in entries if e.scenario.meta.family]
    families = len({e.scenario.meta.family for e in generated})
    units = len({e.scenario.family for e in entries})
    parts = []
    if generated:
        parts.append(f"{len(generated)} from {families} famil{'y' if families == 1 else 'ies'}")
    if len(generated) < len(entries):
        parts.append(f"{len(entries) - len(generated)} written by hand")
    return (f"{len(entries)} scenarios: {', '.join(parts) or 'none'} ({units} famil{'y' if units == 1 else 'ies'} "
            "in the statistics, a hand-written scenario its own)")


def cmd_validate(args: argparse.Namespace) -> int:
    from ..scenario.catalog import load_set
    from ..authoring.validate import chosen, validate_set

    from ..authoring.validate import data_defects

    from ..authoring.gates import MutationTally

    sset = load_set(args.source)
    tally = MutationTally()
    if args.jobs is None:
        from ..authoring.gate_pool import default_jobs

        args.jobs = default_jobs()
    if args.only and not chosen(sset, args.only):
        print(f"error: --only {args.only}: no scenario id matches (see `pibench list`)", file=sys.stderr)
        return 2
    problems = validate_set(sset, progress=progress_printer("validate"), tally=tally, only=args.only, jobs=args.jobs)
    for p in problems:
        print(p)
    for line in tally.lines():
        print(f"mutation gate: {line}")
    original = MutationTally()
    defects = data_defects(sset, original)
    if defects:
        print(f"\n{len(defects)} data defect(s) in original pi-bench scenarios (they still load and run):")
        for d in defects:
            print(f"warning: {d}")
    for line in original.lines():
        print(f"data quality (original scenarios, not a gate): {line}")
    n = len(sset.entries)
    if problems:
        print(f"\n{len(problems)} problem(s); {n} scenario(s) loaded", file=sys.stderr)
        return 1
    domains = sorted({e.domain.name for e in sset.entries.values()})
    what = f"{len(chosen(sset, args.only))} of {n} scenario(s) (--only {args.only})" if args.only else f"{n} scenario(s)"
    print(f"ok: {what} in {len(domains)} domain(s) ({', '.join(domains)}), no problems")
    return 0


def duration(seconds: float) -> str:
    """12s, 3m05s, 1h02m."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def progress_printer(what: str, every: int = 10, quiet_for: float = 10.0, clock=None):
    """Progress of a long command on stderr: every `every` items, or `quiet_for` seconds at the
    latest, and at the end; with the time taken so far and an estimate of the time left (the
    mean time per item so far, times the items left)."""
    import time

    clock = clock or time.monotonic
    start = clock()
    last = [start]

    def show(i: int, n: int, item: str) -> None:
        now = clock()
        if not (i == 1 or i % every == 0 or i == n or now - last[0] >= quiet_for):
            return
        last[0] = now
        took = now - start
        when = (f"done in {duration(took)}" if i == n else
                f"{duration(took)} so far, about {duration(took / i * (n - i))} left")
        print(f"{what}: {i}/{n} ({item}); {when}", file=sys.stderr, flush=True)

    return show


def scenario_json_schema() -> dict:
    from ..scenario.model import Scenario

    schema = Scenario.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pibench_scenario_v1"
    return schema


def family_json_schema() -> dict:
    from ..families.model import Family

    schema = Family.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "pibench_family_v1"
    return schema


def cmd_schema(args: argparse.Namespace) -> int:
    schema = family_json_schema() if args.family else scenario_json_schema()
    return emit(json.dumps(schema, indent=2, sort_keys=True) + "\n", args.out)


def emit(text: str, out: str | None) -> int:
    """Write a generated document to `out`, or to stdout."""
    if out:
        if not Path(out).parent.is_dir():
            raise FileNotFoundError(f"--out {out}: no folder {Path(out).parent}; create it first")
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {out}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from ..families.generate import build, differences, write
    from ..scenario.errors import ScenarioError

    if args.out and len(args.families) > 1:
        print("error: --out takes one family file at a time", file=sys.stderr)
        return 2
    failed = 0
    for path in args.families:
        try:
            output = build(path, args.out, args.source)
        except ScenarioError as err:
            print(f"error: {err}", file=sys.stderr)
            failed += 1
            continue
        if args.check:
            diffs = differences(output)
            for d in diffs:
                print(d)
            failed += bool(diffs)
            print(f"{output.family.family}: {len(output.files)} scenario(s) "
                  + ("differ from the committed files" if diffs else "match the committed files"), file=sys.stderr)
        else:
            written = write(output)
            print(f"{output.family.family}: wrote {len(written)} scenario(s) to {output.folder}")
    return 1 if failed else 0


def cmd_floor(args: argparse.Namespace) -> int:
    from ..authoring.floor import floor_table
    from ..scenario.catalog import load_set

    sset = load_set(args.source)
    present = sorted({e.domain.name for e in sset.entries.values()})
    if args.domain and args.domain not in present:
        raise LookupError(unknown_domain(args.domain, present))
    domains = [args.domain] if args.domain else present
    return emit(floor_table(sset, domains, progress=progress_printer("floor")), args.out)


def cmd_replay(args: argparse.Namespace) -> int:
    from ..parity.replay import replay

    from ..parity.replay import ReplayError

    failed = passed = total = 0
    for item in replay(args.paths, args.source):
        # --json: the whole evaluation and final state per trajectory, one JSON line each (large);
        # else one readable line each
        print(item.line() if args.json else item.summary(), flush=True)
        total += 1
        failed += isinstance(item, ReplayError)
        passed += item.passed
    summary = (f"replayed {total - failed} of {total} trajectory file(s): {passed} passed every check, "
               f"{total - failed - passed} failed some" + (f"; {failed} could not be replayed" if failed else ""))
    print(summary, file=sys.stderr if args.json else sys.stdout)
    return 1 if failed else 0


def cmd_report(args: argparse.Namespace) -> int:
    from ..reports.logs import ReportInputError
    from ..reports.report import write_report

    try:
        done = write_report(args.logs, args.out, resamples=args.resamples, allow_partial=args.allow_partial,
                            agentbeats_id=args.agentbeats_id)
    except ReportInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"report for {', '.join(done['agents'])}:")
    for f in done["files"]:
        print(f"  {f}")
    for note in done.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..reports.compare import compare_logs, render
    from ..reports.logs import ReportInputError

    try:
        result = compare_logs(args.a, args.b, resamples=args.resamples)
    except ReportInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(render(result))
    if args.json:
        from dataclasses import asdict

        Path(args.json).write_text(json.dumps(asdict(result), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0 if result.rows else 1


def cmd_rescore(args: argparse.Namespace) -> int:
    from ..reports.logs import ReportInputError
    from ..reports.rescore import rescore

    try:
        new = rescore(args.log, args.out, source=args.source, judge=args.judge, scoring=args.scoring,
                      allow_partial=args.allow_partial)
    except ReportInputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    metrics = new.results.scores[0].metrics if new.results and new.results.scores else {}
    summary = ", ".join(f"{k} {metrics[k].value:.3f}" for k in ("compliance_rate", "overall_score") if k in metrics)
    print(f"wrote {args.out} ({len(new.samples or [])} samples re-scored; {summary})")
    return 0


def _serve(module: str, argv: list[str]) -> int:
    import importlib

    importlib.import_module(module).main(argv)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .refusal import OneLineParser
    from .run import at_least

    p = OneLineParser(prog="pibench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    source_help = "root of a scenario source holding scenarios/ and domains/ (default: the shipped set)"
    lp = sub.add_parser("list", help="list scenarios with domain, label and column")
    lp.add_argument("--source", help=source_help)
    lp.add_argument("--domain", help="only this domain")
    lp.add_argument("--json", action="store_true", help="machine-readable output")
    lp.set_defaults(func=cmd_list)
    vp = sub.add_parser("validate", help="load every scenario and domain; report all problems (exit 1 if any)")
    vp.add_argument("--source", help=source_help)
    vp.add_argument("--only", metavar="GLOBS", help="only scenarios whose id matches these comma-separated globs "
                    "(e.g. 'RET_PRICE_ADJUSTMENT.*'); load errors are always reported")
    vp.add_argument("--jobs", type=at_least(1), default=None, metavar="N",
                    help="worker processes playing the gates (default: one per core; 1 plays them here)")
    vp.set_defaults(func=cmd_validate)
    gp = sub.add_parser("generate", help="write the scenarios of scenario families (families/<domain>/*.json)")
    gp.add_argument("families", nargs="+", metavar="FAMILY_FILE", help="family files (format pibench_family_v1)")
    gp.add_argument("--out", help="folder to write into (default: scenarios/<domain>/<family>/ beside the family's domains/)")
    gp.add_argument("--source", help="the folder holding domains/ (default: the nearest one above the family file)")
    gp.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 if the committed files differ from what the family generates")
    gp.set_defaults(func=cmd_generate)
    fp = sub.add_parser("floor", help="baseline floor per column (what trivial agents score)")
    fp.add_argument("--source", help=source_help)
    fp.add_argument("--domain", help="only this domain")
    fp.add_argument("--out", help="write markdown to this file instead of stdout")
    fp.set_defaults(func=cmd_floor)
    rp = sub.add_parser(
        "replay",
        help="replay recorded original trajectories through our engine; a line each and a summary",
    )
    rp.add_argument("paths", nargs="+", help="trajectory files or folders (searched recursively)")
    rp.add_argument("--source", help="pi-bench checkout the trajectories' scenarios live in "
                    "(default: the nearest folder above each file holding scenarios/ and domains/)")
    rp.add_argument("--json", action="store_true",
                    help="print each trajectory's whole evaluation and final state as a JSON line "
                    "(the summary goes to stderr)")
    rp.set_defaults(func=cmd_replay)
    rep = sub.add_parser(
        "report",
        help="results.json (results_<agent>.json for several agents: leaderboard payload + provenance), "
        "report.md, columns.png, confusion.png (compare.png) from Inspect logs",
    )
    rep.add_argument("logs", nargs="+", metavar="LOG_OR_DIR",
                     help="log files or folders; several logs of one agent are pooled as trials, "
                     "different agents are compared side by side")
    rep.add_argument("--out", required=True, help="folder to write the report into")
    rep.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    rep.add_argument("--allow-partial", action="store_true",
                     help="also report logs of runs that did not finish (status not success)")
    rep.add_argument("--agentbeats-id", help="participant id in the leaderboard payload (default: the agent's name)")
    rep.set_defaults(func=cmd_report)
    cp = sub.add_parser("compare", help="paired comparison of two runs on the same scenarios, per column "
                        "and group, with family-clustered bootstrap intervals")
    cp.add_argument("a", metavar="LOG_A", help="run A: a log file, or a folder of one agent's logs")
    cp.add_argument("b", metavar="LOG_B", help="run B: a log file, or a folder of one agent's logs")
    cp.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples (default 2000)")
    cp.add_argument("--json", help="also write the comparison to this JSON file")
    cp.set_defaults(func=cmd_compare)
    rs = sub.add_parser("rescore", help="re-score a log with the current checks, without re-running the agent")
    rs.add_argument("log", help="the log to re-score")
    rs.add_argument("--out", required=True, help="where to write the re-scored log (.eval or .json)")
    rs.add_argument("--source", help="scenario source to rebuild the scenarios from (default: the log's own)")
    rs.add_argument("--judge", choices=("auto", "on", "off"), help="NL judge mode (default: the log's own)")
    rs.add_argument("--allow-partial", action="store_true",
                    help="also re-score a log that is incomplete or lost samples (its usable samples)")
    rs.add_argument("--scoring", choices=("auto", "parity", "strict"),
                    help="parity: the original's roll-up; strict: ours; auto: the domain's default (default: the log's own)")
    rs.set_defaults(func=cmd_rescore)
    from .run import add_run_commands
    from .play import add_play_command

    add_run_commands(sub)
    add_play_command(sub)
    # A2A servers: their own argument parsers take the rest of the command line
    for name, what in (("serve-agent", "serve a protocol agent as an A2A purple agent"),
                       ("serve-user", "serve the simulated user over A2A"),
                       ("green", "the A2A green server (same as pi-bench-green)")):
        sub.add_parser(name, help=what + " (see --help of the command)", add_help=False)
    sp = sub.add_parser("schema", help="print the JSON Schema of the scenario format (or, with --family, the family format)")
    sp.add_argument("--family", action="store_true", help="the family format (pibench_family_v1) instead")
    sp.add_argument("--out", help="write to this file instead of stdout")
    sp.set_defaults(func=cmd_schema)
    return p


SERVERS = {"serve-agent": "pibench_inspect.a2a.agent_server", "serve-user": "pibench_inspect.a2a.user_server",
           "green": "pibench_inspect.a2a.green.server"}


def main(argv: list[str] | None = None) -> int:
    """Every refusal is one line on stderr: `error: ...` naming the argument, the value and the
    fix; exit 2 for a command line or input that cannot be used, 1 for a run that was refused
    (a task refusal or a missing key: Inspect's PrerequisiteError) or failed."""
    from ..runtime.inspect_internals import PrerequisiteError

    from ..scenario.errors import ScenarioError

    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SERVERS:  # their own parsers (and --help) take over
        return _serve(SERVERS[argv[0]], argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # output piped into head & co.
        return 0
    except PrerequisiteError as err:  # a run refused before it started (pi run, pi run-domain)
        print(f"error: {one_line(err.args[0] if err.args else err.message)}", file=sys.stderr)
        return 1
    except ScenarioError as err:  # a scenario file named on the command line
        print(f"error: {one_line(err)}", file=sys.stderr)
        return 2
    except (FileNotFoundError, LookupError) as err:
        print(f"error: {one_line(err)}", file=sys.stderr)
        return 2


def one_line(what: object) -> str:
    return "; ".join(x.strip() for x in str(what).splitlines() if x.strip())


if __name__ == "__main__":
    sys.exit(main())
