"""A failed sample at a glance: what each failed check expected next to the closest thing the
agent did, and what the agent changed in the state (a diff against the initial state).

Everything here goes into the score's record (scoring/record.py), which only people reading the
log see.
"""

from __future__ import annotations

from typing import Any

from ..checks.evaluate import TIER2_TYPES, Evaluation
from ..checks.policy import VERDICT_STATUS, CheckResult, canonical
from ..checks.trace import Trace
from ..scenario import model as m

MAX_DIFF = 200  # changed paths listed; a run that rewrites a whole table is summarised


def closest_call(trace: Trace, tool: str, expected: dict[str, Any]) -> dict[str, Any] | None:
    """The actual call of `tool` agreeing with the most expected arguments (else any call)."""
    calls = trace.named(tool) or list(trace.entries)
    if not calls:
        return None

    def agree(e: Any) -> int:
        return sum(canonical(e.arguments.get(k)) == canonical(v) for k, v in expected.items())

    best = max(calls, key=lambda e: (e.name == tool, agree(e)))
    return {"tool": best.name, "arguments": best.arguments, "step_index": best.index,
            "message_index": best.message_index, "error": best.error}


def expected_call(check: Any) -> tuple[str, dict[str, Any]] | None:
    if isinstance(check, m.ToolCalledWith):
        return check.tool_name, check.expected_arguments()
    if isinstance(check, (m.ToolCalled, m.ToolCalledMinTimes)):
        return check.tool_name, {}
    if isinstance(check, m.ToolBeforeTool):
        return check.before, {}
    return None


def expected_vs_actual(ev: Evaluation, trace: Trace, scenario: m.Scenario) -> dict[str, Any]:
    """Per failed call check: the expected call and the closest actual call, arguments side by side."""
    by_id = {c.outcome_id: c for c in scenario.criteria.policy_checks}
    out: dict[str, Any] = {}
    for r in ev.failed:
        want = expected_call(by_id.get(r.outcome_id))
        if want is None:
            continue
        tool, args = want
        actual = closest_call(trace, tool, args)
        keys = list(dict.fromkeys([*args, *((actual or {}).get("arguments") or {})]))
        expected: dict[str, Any] = {"tool": tool, "arguments": args}
        check = by_id.get(r.outcome_id)
        if isinstance(check, m.ToolBeforeTool):  # an ordering check: what the call had to come before
            expected["before"] = check.after
        out[r.outcome_id] = {
            "expected": expected,
            "closest_actual": actual,
            "arguments": [
                {"name": k, "expected": args.get(k, "(any)"),
                 "actual": (actual or {}).get("arguments", {}).get(k, "(absent)") if actual else "(no call)",
                 "matches": k in args and actual is not None and canonical((actual.get("arguments") or {}).get(k)) == canonical(args[k])}
                for k in keys
            ],
        }
    return out


def state_diff(before: Any, after: Any, path: str = "") -> list[dict[str, Any]]:
    """Changed, added and removed values between two JSON documents (lists of records are
    compared by position)."""
    # most of a document is untouched: one C-level comparison (and, when it says equal, one
    # canonical dump to tell 1 from true and 1 from 1.0) settles a whole subtree, instead of a
    # Python walk that dumped every leaf (about 20 ms a sample on the shipped domains)
    if before is after:  # an unchanged part of the final state is the initial state's own
        return []
    if type(before) is type(after) and before == after and canonical(before) == canonical(after):
        return []
    if isinstance(before, dict) and isinstance(after, dict):
        out = []
        for k in list(dict.fromkeys([*before, *after])):
            p = f"{path}.{k}" if path else str(k)
            if k not in after:
                out.append({"path": p, "change": "removed", "before": before[k]})
            elif k not in before:
                out.append({"path": p, "change": "added", "after": after[k]})
            else:
                out += state_diff(before[k], after[k], p)
        return out
    if isinstance(before, list) and isinstance(after, list):
        out = []
        for i in range(max(len(before), len(after))):
            p = f"{path}[{i}]"
            if i >= len(after):
                out.append({"path": p, "change": "removed", "before": before[i]})
            elif i >= len(before):
                out.append({"path": p, "change": "added", "after": after[i]})
            else:
                out += state_diff(before[i], after[i], p)
        return out
    if canonical(before) != canonical(after):
        return [{"path": path, "change": "changed", "before": before, "after": after}]
    return []


# The checks' layout in a score's record: from `format` 2 on (scoring/record.py), each check is
# compact (below) and what the score value or the checks already give is left out
# (`all_passed`, `partial_credit`, `event_flags`, `dimensions`); logs without `format` hold every
# check in full and those fields too. Read a record's checks with `check_list`, whichever layout.


def default_tier(check_type: str) -> int:
    return 2 if check_type in TIER2_TYPES else 1


def compact_check(r: CheckResult, key: str) -> dict[str, Any]:
    """A check's record as the score keeps it: its type, verdict and detail, and only what these
    do not give (the outcome id when the key is not it, a status other than the verdict's, a tier
    other than its type's, evidence when there is some). The scenario's notes are not repeated."""
    out: dict[str, Any] = {"type": r.type, "passed": r.passed, "detail": r.detail}
    if key != r.outcome_id:
        out["outcome_id"] = r.outcome_id
    if r.status != VERDICT_STATUS[r.passed]:
        out["status"] = r.status
    if r.tier != default_tier(r.type):
        out["tier"] = r.tier
    if r.evidence:
        out["evidence"] = dict(r.evidence)
    return out


def keyed_checks(ev: Evaluation) -> dict[str, dict[str, Any]]:
    """Every check keyed by its outcome id (a repeated id gets #2, #3, ...), compact."""
    out: dict[str, dict[str, Any]] = {}
    for r in ev.results:
        key, n = r.outcome_id, 1
        while key in out:
            n += 1
            key = f"{r.outcome_id}#{n}"
        out[key] = compact_check(r, key)
    return out


def full_check(record: dict[str, Any], key: str | None = None, notes: dict[str, Any] | None = None) -> dict[str, Any]:
    """A check record with every field (outcome_id, type, passed, detail, tier, status, evidence,
    notes), from a compact one (format 2) or a full one (older logs: the same fields again)."""
    oid = record.get("outcome_id", key)
    passed = record.get("passed")
    ctype = str(record.get("type", ""))
    return {
        "outcome_id": oid, "type": record.get("type"), "passed": passed, "detail": record.get("detail", ""),
        "tier": record.get("tier", default_tier(ctype)),
        "status": record.get("status", VERDICT_STATUS.get(passed, "")),
        "evidence": record.get("evidence") or {},
        "notes": record.get("notes", (notes or {}).get(str(oid))),
    }


def scenario_notes(scenario: m.Scenario) -> dict[str, Any]:
    """outcome id -> the author's notes on its check, as a check's record had them in full."""
    crit = scenario.criteria
    return {c.outcome_id: c.notes for c in [*crit.policy_checks, *crit.state_field_checks, *crit.nl_judge_checks]}


def check_list(checks: Any, notes: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every check of a score's record (scoring/record.py) with all its fields, whichever layout
    the log has: keyed and compact (format 2 on), keyed in full, or a list in full (older logs).
    `notes`: outcome id -> the scenario's notes, for records that leave them out."""
    if isinstance(checks, dict):
        return [full_check(c, k, notes) for k, c in checks.items() if isinstance(c, dict)]
    return [full_check(c, None, notes) if isinstance(c, dict) else c for c in checks or []]


def failed_sample_view(ev: Evaluation, trace: Trace, final_state: Any, scenario: m.Scenario,
                       initial: dict[str, Any]) -> dict[str, Any]:
    """`initial`: the sample's initial state (`domain_document(domain, scenario)`).

    The state changes are listed for a sample that did not pass (what to look at first); a
    passed sample's are in its store (`pibench:state_changes`, a diff against the initial
    state; `analysis.final_state` gives the whole state), not kept a second time in the score,
    which Inspect holds in memory until the end of the run."""
    out: dict[str, Any] = {"checks": keyed_checks(ev)}
    calls = expected_vs_actual(ev, trace, scenario)
    if calls:
        out["expected_vs_actual"] = calls
    if isinstance(final_state, dict) and not ev.all_passed:
        try:
            diff = state_diff(initial, final_state)
        except Exception as err:  # an explanation must never cost the score
            diff = [{"path": "", "change": f"diff unavailable: {err}"}]
        out["state_changes"] = diff[:MAX_DIFF]
        if len(diff) > MAX_DIFF:
            out["state_changes_truncated"] = len(diff)
    return out
