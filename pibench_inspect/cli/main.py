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
    from ..authoring.case_counts import broken, case_key, summary_lines

    if args.json:
        # family: the family a generated scenario belongs to (a hand-written one is its own);
        # broken: the constraints its case breaks; case: one key per distinct case
        print(json.dumps([{**dict(zip(("scenario_id", "domain", "label", "column"), r)), "family": e.scenario.family,
                           "combo": e.scenario.meta.combo, "envelope": e.scenario.meta.envelope,
                           "broken": broken(e.scenario), "case": case_key(e.scenario)}
                          for r, e in zip(rows, chosen)], indent=2))
    else:
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(("scenario", "domain", "label", "column"))]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        print(fmt.format("scenario", "domain", "label", "column"))
        for r in rows:
            print(fmt.format(*r))
        counts = Counter(r[1] for r in rows)
        print(f"\n{set_summary(chosen)}: " + ", ".join(f"{d} {n}" for d, n in sorted(counts.items())))
        for line in summary_lines(chosen):
            print(line)
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

    from ..authoring.gates import BenignTally, MutationTally

    sset = load_set(args.source)
    tally, benign = MutationTally(), BenignTally()
    if args.jobs is None:
        from ..authoring.gate_pool import default_jobs

        args.jobs = default_jobs()
    if args.only and not chosen(sset, args.only):
        print(f"error: --only {args.only}: no scenario id matches (see `pibench list`)", file=sys.stderr)
        return 2
    found: list[str] = []
    found_counts: dict[str, tuple[int, int]] = {}
    problems = validate_set(sset, progress=progress_printer("validate"), tally=tally, only=args.only, jobs=args.jobs,
                            gate_seconds=args.gate_seconds, benign=benign, found_lines=found,
                            found_counts=found_counts)
    for p in problems:
        print(p)
    for line in tally.lines():
        print(f"mutation gate: {line}")
    for line in benign.lines():
        print(f"benign gate: {line}")
    for line in found:
        print(f"found gate: {line}")
    from ..authoring.pressure_gate import pressure_summary

    for line in pressure_summary(list(sset.entries.values())):
        print(f"pressure: {line}")
    for line in domain_lines(sset, found_counts, tally, benign):
        print(line)
    original, original_benign = MutationTally(), BenignTally()
    defects = data_defects(sset, original, original_benign)
    if defects:
        print(f"\n{len(defects)} data defect(s) in original pi-bench scenarios (they still load and run):")
        for d in defects:
            print(f"warning: {d}")
    for line in original.lines() + original_benign.lines():
        print(f"data quality (original scenarios, not a gate): {line}")
    n = len(sset.entries)
    if problems:
        print(f"\n{len(problems)} problem(s); {n} scenario(s) loaded", file=sys.stderr)
        return 1
    domains = sorted({e.domain.name for e in sset.entries.values()})
    what = f"{len(chosen(sset, args.only))} of {n} scenario(s) (--only {args.only})" if args.only else f"{n} scenario(s)"
    print(f"ok: {what} in {len(domains)} domain(s) ({', '.join(domains)}), no problems")
    return 0


def domain_lines(sset, found_counts=None, tally=None, benign=None) -> list[str]:
    """One summary line per domain of our own layout, its figures joined by '; ': those of the
    domain's entries (case_counts.DOMAIN_FIGURES: the multi-constraint share), then what the gates
    counted, when they ran: the found share of generated cases (whole set), the benign variants
    passed and the disclosure mutants killed (the scenarios validate played: all, or --only's)."""
    from ..authoring.case_counts import DOMAIN_FIGURES, share

    by: dict[str, list] = {}
    for e in sset.entries.values():
        if not e.domain.original_layout:
            by.setdefault(e.domain.name, []).append(e)
    out = []
    for d, mine in sorted(by.items()):
        parts = [figure(mine) for figure in DOMAIN_FIGURES]
        if found_counts and d in found_counts:
            parts.append(f"found {share(*found_counts[d])} of generated cases")
        if benign is not None and d in benign.by_domain:
            passed, played = benign.by_domain[d][:2]
            parts.append(f"benign variants passed {passed}/{played}")
        if tally is not None and d in tally.by_domain:
            killed, seen = tally.by_domain[d][3:5]
            parts.append(f"disclosure mutants killed {killed}/{seen}")
        out.append(f"{d}: " + "; ".join(parts))
    return out


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
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        print(f"error: --out {args.out}: not a folder; name the folder to write the scenarios into", file=sys.stderr)
        return 2
    failed = 0
    for path in args.families:
        try:
            output = build(path, args.out, args.source)
            if args.check:
                diffs = differences(output)
            else:
                written = write(output)
        except ScenarioError as err:  # each line names the family file or a generated file
            for line in str(err).splitlines():
                print(f"error: {line}", file=sys.stderr)
            failed += 1
            continue
        except OSError as err:  # a write the system refused (permissions, a full disk)
            print(f"error: {path}: writing to {args.out or 'the scenarios folder'} failed: {err}", file=sys.stderr)
            failed += 1
            continue
        if args.check:
            for d in diffs:
                print(d)
            failed += bool(diffs)
            print(f"{output.family.family}: {len(output.files)} scenario(s) "
                  + ("differ from the committed files" if diffs else "match the committed files"), file=sys.stderr)
        else:
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


# bootstrap resamples: 0 gave NaN intervals, a negative count a traceback, 10**8 ran for ever
RESAMPLES_RANGE = (10, 20_000)


def resamples_count(text: str) -> int:
    """An argparse type: a whole number of bootstrap resamples in RESAMPLES_RANGE."""
    low, high = RESAMPLES_RANGE
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number (from {low} to {high})") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{value} is outside {low} to {high} (default 2000)")
    return value


def output_folder(out: str) -> Path:
    """`--out` of `pibench report`: a folder (made if missing), never an existing file."""
    path = Path(out).expanduser()
    for p in (path, *path.parents):
        if p.exists():
            if not p.is_dir():
                raise ReportOutputError(f"--out {out}: {p} is not a folder; name a folder to write the report into")
            break
    return path


def output_file(flag: str, out: str) -> Path:
    """A file an option names to write (compare's --json): not a folder, in a folder that exists."""
    path = Path(out).expanduser()
    if path.is_dir():
        raise ReportOutputError(f"{flag} {out}: is a folder; name the file to write (e.g. {path / 'comparison.json'})")
    if not path.parent.is_dir():
        raise ReportOutputError(f"{flag} {out}: no folder {path.parent}; create it first")
    return path


class ReportOutputError(ValueError):
    """An output path that cannot be written, found before any work."""


def report_command(run):
    """`pibench report`/`compare`/`rescore`: bad input or output is one line and exit 2."""

    def command(args: argparse.Namespace) -> int:
        from ..reports.logs import ReportInputError

        try:
            return run(args)
        except (ReportInputError, ReportOutputError) as err:
            print(f"error: {one_line(err)}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # output piped into head & co.: main() ends quietly
            raise
        except OSError as err:  # writing the output: a full disk, no permission
            where = f" {err.filename}" if err.filename else ""
            print(f"error: cannot write{where}: {err.strerror or err}", file=sys.stderr)
            return 2

    return command


@report_command
def cmd_report(args: argparse.Namespace) -> int:
    from ..reports.report import write_report

    out = output_folder(args.out)
    done = write_report(args.logs, out, resamples=args.resamples, allow_partial=args.allow_partial,
                        agentbeats_id=args.agentbeats_id)
    print(f"report for {', '.join(done['agents'])}:")
    for f in done["files"]:
        print(f"  {f}")
    for note in done.get("notes", []):
        print(f"note: {note}", file=sys.stderr)
    return 0


@report_command
def cmd_compare(args: argparse.Namespace) -> int:
    from ..reports.compare import compare_logs, render

    target = output_file("--json", args.json) if args.json else None
    result = compare_logs(args.a, args.b, resamples=args.resamples, allow_partial=args.allow_partial)
    sys.stdout.write(render(result))
    if target is not None:
        from dataclasses import asdict

        target.write_text(json.dumps(asdict(result), indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0 if result.rows else 1


@report_command
def cmd_rescore(args: argparse.Namespace) -> int:
    from ..reports.rescore import check_out, rescore

    check_out(args.out)  # before the re-scoring runs
    done = rescore(args.log, args.out, source=args.source, judge=args.judge, scoring=args.scoring,
                   allow_partial=args.allow_partial)
    new = done.log
    from ..scoring.metric_names import PAYLOAD_NAMES

    metrics = new.results.scores[0].metrics if new.results and new.results.scores else {}
    # by the payload's names (the metrics' own are short for the viewer: scoring/metric_names.py)
    summary = ", ".join(f"{PAYLOAD_NAMES[k][0]} {metrics[k].value:.3f}" for k in ("pass", "overall") if k in metrics)
    print(f"wrote {args.out} ({done.scored} samples re-scored; {summary})")
    if done.not_scored:
        listed = "; ".join(done.not_scored[:10]) + (f"; and {len(done.not_scored) - 10} more" if len(done.not_scored) > 10 else "")
        print(f"note: {len(done.not_scored)} sample(s) not re-scored, kept in the log as they were: {listed}",
              file=sys.stderr)
    return 0


def _serve(module: str, argv: list[str]) -> int:
    import importlib

    importlib.import_module(module).main(argv)
    return 0


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a number of seconds above 0")
    return value


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
    vp.add_argument("--gate-seconds", type=positive_seconds, default=None, metavar="S",
                    help="what one scenario's gate plays may take together; past it the scenario is a "
                    "problem (default: 60)")
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
        "report.md, report.html (the same, one page, charts inlined), columns.png, confusion.png "
        "(compare.png) from Inspect logs",
    )
    rep.add_argument("logs", nargs="+", metavar="LOG_OR_DIR",
                     help="log files or folders; several logs of one agent are pooled as trials, "
                     "different agents are compared side by side")
    rep.add_argument("--out", required=True, help="folder to write the report into")
    rep.add_argument("--resamples", type=resamples_count, default=2000,
                     help="bootstrap resamples, 10 to 20000 (default 2000)")
    rep.add_argument("--allow-partial", action="store_true",
                     help="also report logs of runs that did not finish (status not success); an interrupted "
                     "`pibench play` session needs no flag: it is named and left out")
    rep.add_argument("--agentbeats-id", help="participant id in the leaderboard payload (default: the agent's name)")
    rep.set_defaults(func=cmd_report)
    cp = sub.add_parser("compare", help="paired comparison of two runs on the same scenarios, per column "
                        "and group, with family-clustered bootstrap intervals")
    cp.add_argument("a", metavar="LOG_A", help="run A: a log file, or a folder of one agent's logs")
    cp.add_argument("b", metavar="LOG_B", help="run B: a log file, or a folder of one agent's logs")
    cp.add_argument("--resamples", type=resamples_count, default=2000,
                    help="bootstrap resamples, 10 to 20000 (default 2000)")
    cp.add_argument("--json", help="also write the comparison to this JSON file")
    cp.add_argument("--allow-partial", action="store_true",
                    help="also compare logs of runs that did not finish or lost samples (what they hold; "
                    "the output says what was left out)")
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
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's code for it, no traceback
        print("pibench: interrupted", file=sys.stderr)
        return 130
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
