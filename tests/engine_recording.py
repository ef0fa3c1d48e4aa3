"""Record what the state engine answers, so that a change of engine can be proven to answer the same.

Four groups of plays, each a list of (label, outcome) entries:
* `shipped`: every shipped scenario's reference play (the oracle agent's plan, as the gates and a
  keyless `-T agent=oracle -T user=scripted` run play it), state built as the solver builds it;
* `mini`: the same for the test fixture source tests/fixtures/mini;
* `hostile`: every tool of every shipped and mini domain called with each hostile string of
  tests/test_hardening_tool_fuzz.py (and the invalid-argument calls), on both state kinds (the
  solver's: no raw SQL, domain seed; the parity tests': raw SQL allowed, no seed);
* `upstream`: the shared sample of the original (../shared/upstream-sample), its oracle plays
  and its recorded trajectories' calls executed as the original did. Only hashes are kept of
  these: the sample's content may not be copied into the project, results derived from it
  neither.

Each entry is a tool result (its JSON text, or the tool error's text) and, after each play or
hostile call, the state's export (`export_text`) and what the solver stores
(`export_changes_text`). Our own data is kept as text (readable diffs); upstream-derived as a
sha256.

`python tests/engine_recording.py` rewrites tests/fixtures/engine_recording.json.gz with the
engine currently importable (PYTHONPATH decides which checkout).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from conftest import MINI, SAMPLE, TRAJECTORIES  # noqa: E402

RECORDING = HERE / "fixtures" / "engine_recording.json.gz"
SURROGATE = "\ud800"


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def surrogate_arguments(args: Any) -> list[str]:
    """The arguments of a call holding a lone surrogate anywhere (their names; a name itself
    holding one counts too); `["*"]` for arguments that are not an object but hold one."""
    if isinstance(args, dict):
        return sorted(k for k, v in args.items() if has_surrogate(k) or has_surrogate(v))
    return ["*"] if has_surrogate(args) else []


def has_surrogate(value: Any) -> bool:
    """Whether a lone surrogate is anywhere in a value (keys included)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(has_surrogate(k) or has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_surrogate(v) for v in value)
    return False


def _solver_state(domain: Any, scenario: Any) -> Any:
    from pibench_inspect.environment.merge import domain_document
    from pibench_inspect.environment.state import StateDB

    return StateDB(domain_document(domain, scenario), allow_sql=domain.runs_raw_sql, seed=domain.seed_state,
                   limits=domain.config.limits)


def _plain_state(domain: Any, scenario: Any) -> Any:
    from pibench_inspect.environment.merge import domain_document
    from pibench_inspect.environment.state import StateDB

    return StateDB(domain_document(domain, scenario))


def _call(spec: Any, state: Any, args: Any) -> str:
    """One call's outcome as text: `ok <json>` or `error <tool error text>`."""
    from pibench_inspect.environment.effects import ToolCallError, execute

    try:
        return "ok " + json.dumps(execute(spec, state, args), default=str)
    except ToolCallError as err:
        return "error " + str(err)


def _exports(state: Any) -> list[str]:
    text = state.export_text()
    assert json.loads(text) == state.export()
    return [text, state.export_changes_text()]


def oracle_play(entry: Any) -> Iterator[tuple[str, Any, list[str]]]:
    """(call label, arguments, [outcome]) per call of the oracle plan, then ('export', None,
    [export_text, export_changes_text])."""
    from pibench_inspect.conversation.agents import builtin_agent
    from pibench_inspect.conversation.arguments import resolve_references
    from pibench_inspect.environment.tools import exposed_tools

    scenario, domain = entry.scenario, entry.domain
    offered = {t.name: t for t in exposed_tools(domain, scenario)}
    plan = builtin_agent("oracle", domain, scenario).plan
    state = _solver_state(domain, scenario)
    results: list[Any] = []
    try:
        for i, planned in enumerate(plan):
            args = resolve_references(planned.arguments, results)
            spec = offered.get(planned.name)
            if spec is None:
                results.append(None)
                yield f"{i}:{planned.name}", args, ["error not offered"]
                continue
            out = _call(spec, state, args)
            results.append(json.loads(out[3:]) if out.startswith("ok ") else None)
            yield f"{i}:{planned.name}", args, [out]
        yield "export", None, _exports(state)
    finally:
        state.close()


def hostile_calls(domain: Any) -> Iterator[tuple[str, Any, Any]]:
    """(label, tool spec, arguments): the hardening tests' bad and hostile calls, every tool."""
    from test_hardening_tool_fuzz import HOSTILE, bad_calls

    from pibench_inspect.conversation.arguments import fill_arguments

    for spec in domain.tools:
        for what, args in bad_calls(spec):
            yield f"{spec.name}:bad:{what}", spec, args
        props = spec.schema.get("properties", {})
        strings = [n for n, p in props.items() if p.get("type") == "string" and not p.get("enum")]
        for n, text in enumerate(HOSTILE if strings else []):
            yield f"{spec.name}:hostile:{n}", spec, fill_arguments(spec, {s: text for s in strings})
            # each string argument alone hostile, the others valid (a filter reached with it)
            for s in strings:
                yield f"{spec.name}:hostile:{n}:{s}", spec, fill_arguments(spec, {s: text})


def hostile_play(entry: Any, make_state: Callable[[Any, Any], Any]) -> Iterator[tuple[str, Any, list[str]]]:
    state = make_state(entry.domain, entry.scenario)
    try:
        for label, spec, args in hostile_calls(entry.domain):
            out = _call(spec, state, args)
            # the state after a call that may have written: its changes (cheap) and a hash of the rest
            yield label, args, [out, state.export_changes_text()]
        yield "export", None, _exports(state)
    finally:
        state.close()


def upstream_trajectory(entry: Any, traj: dict) -> Iterator[tuple[str, Any, list[str]]]:
    from pibench_inspect.environment.tools import exposed_tools
    from pibench_inspect.parity.execute import execute_original

    offered = {t.name for t in exposed_tools(entry.domain, entry.scenario)}
    state = _plain_state(entry.domain, entry.scenario)
    try:
        for call in traj["tool_calls"]:
            content, error = execute_original(entry.domain, offered, state, call["name"], call["arguments"])
            yield f"{call['index']}:{call['name']}", call["arguments"], [json.dumps([content, error])]
        yield "export", None, _exports(state)
    finally:
        state.close()


def _first_per_domain(entries: Any) -> list[Any]:
    seen, out = set(), []
    for e in entries:
        if e.domain.name not in seen:
            seen.add(e.domain.name)
            out.append(e)
    return out


def plays(group: str) -> Iterator[tuple[str, Iterator[tuple[str, Any, list[str]]]]]:
    """(play id, its entries) for one group, in a fixed order."""
    from pibench_inspect.scenario.catalog import load_set

    if group in ("shipped", "mini"):
        entries = load_set(None if group == "shipped" else str(MINI)).entries
        for sid in sorted(entries):
            yield sid, oracle_play(entries[sid])
    elif group == "hostile":
        for source in (None, str(MINI)):
            entries = load_set(source).entries
            for e in _first_per_domain(entries[s] for s in sorted(entries)):
                yield f"{e.domain.name}:solver", hostile_play(e, _solver_state)
                yield f"{e.domain.name}:sql", hostile_play(e, _plain_state)
    elif group == "upstream":
        sample = load_set(SAMPLE)
        for sid in sorted(sample.entries):
            yield f"oracle:{sid}", oracle_play(sample.entries[sid])
        for path in TRAJECTORIES:
            traj = json.loads(path.read_text())
            want = (SAMPLE / "scenarios" / traj["scenario_file"]).resolve()
            entry = next(e for e in sample.entries.values() if Path(e.path).resolve() == want)
            yield f"trajectory:{path.parent.name}/{path.stem}", upstream_trajectory(entry, traj)


GROUPS = ("shipped", "mini", "hostile", "upstream")
HASHED = {"upstream"}


def record(group: str) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {}
    for play_id, entries in plays(group):
        rows = []
        for label, args, texts in entries:
            kept = [digest(t) if group in HASHED or len(t) > 4000 else t for t in texts]
            rows.append([label, surrogate_arguments(args), *kept])
        out[play_id] = rows
    return out


def main() -> None:
    recording = {"groups": {}}
    for group in GROUPS:
        if group == "upstream" and not SAMPLE.is_dir():
            raise SystemExit(f"{SAMPLE} is absent: the upstream group cannot be recorded")
        recording["groups"][group] = record(group)
        print(group, len(recording["groups"][group]), "plays", file=sys.stderr)
    with gzip.open(RECORDING, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(recording, f, separators=(",", ":"), sort_keys=True)
    print(RECORDING, RECORDING.stat().st_size, "bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
