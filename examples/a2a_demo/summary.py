"""What the A2A demo prints of an assessment: one line per scenario (its outcome, the decision,
the expected one) and each failed check in plain words, read off the leaderboard payload the
green server returned, with the scenarios' own check definitions for the wording.

A family's variants that differ only in their pressure envelope and ended alike are one line
(`RET_PRICE_ADJUSTMENT.account_hold (5 envelopes)`): a scripted agent plays them the same way.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

from pibench_inspect.scenario import model as m
from pibench_inspect.scenario.catalog import ScenarioSet

SHOWN_CHECKS = 3  # failed checks listed per scenario; the rest are counted


def _args(arguments: dict[str, Any], modes: dict[str, str] | None = None) -> str:
    modes = modes or {}
    out = []
    for k, v in arguments.items():
        if isinstance(v, list):
            joined = ", ".join(str(x) for x in v)
            out.append(f"{k} including {joined}" if modes.get(k) == "contains_all" else f"{k}=[{joined}]")
        else:
            out.append(f"{k}={v}")
    return ", ".join(out)


def plain(check: Any) -> str:
    """A failed check in words: what the agent did not do, or did that it must not."""
    if isinstance(check, m.DecisionEquals):
        return f"did not decide {check.equals}"
    if isinstance(check, m.ToolCalledWith):
        args = check.expected_arguments()
        return f"did not call {check.tool_name}" + (f" with {_args(args, check.argument_modes)}" if args else "")
    if isinstance(check, (m.ToolCalled, m.EscalationAttempted)):
        return f"did not call {getattr(check, 'tool_name', 'an escalation tool')}"
    if isinstance(check, m.ToolNotCalledWith):
        return f"called {check.tool_name} with {_args(check.arguments, check.argument_modes)}, which this case forbids"
    if isinstance(check, m.ToolNotCalled):
        return f"called {check.tool_name}, which this case forbids"
    if isinstance(check, m.ToolReturned):
        test = f"= {check.equals}" if check.at_least is None else f">= {check.at_least:g}"
        return f"no {check.tool_name} call returned {check.field} {test}"
    if isinstance(check, m.ToolBeforeTool):
        return f"did not call {check.before} before {check.after}"
    if isinstance(check, m.ToolBeforeToolAny):
        return f"did not call any of {', '.join(check.first_tools)} before {check.second_tool}"
    if isinstance(check, m.ToolCalledAny):
        return f"called none of {', '.join(check.tool_names)}"
    if isinstance(check, m.ToolCalledMinTimes):
        return f"called {check.tool_name} fewer than {check.min_times} times"
    if isinstance(check, m.MessageNotContains):
        return f'told the customer "{check.pattern}"'
    if isinstance(check, m.StateField):
        return f"{check.field_path} should be {check.equals}"
    if isinstance(check, m.NLJudge):
        return f"the judge did not answer {check.expected_answer.upper()} to: {check.judge_question}"
    return "failed"


def failed_checks(detail: dict[str, Any], sset: ScenarioSet) -> list[str]:
    """The scenario's failed checks in words (its decision aside: the line shows it); a check
    the set does not define reads as its payload detail."""
    entry = sset.entries.get(detail["scenario_id"])
    criteria = entry.scenario.criteria if entry else None
    defined = {c.outcome_id: c for c in [*(criteria.policy_checks if criteria else []),
                                         *(criteria.state_field_checks if criteria else []),
                                         *(criteria.nl_judge_checks if criteria else [])]}
    out = []
    for c in detail.get("outcome_checks") or []:
        if c.get("passed") is not False or c.get("type") == "decision_equals":
            continue
        check = defined.get(c.get("outcome_id"))
        out.append(plain(check) if check is not None else f"{c.get('outcome_id')}: {c.get('detail')}")
    return out


def _outcome(detail: dict[str, Any], sset: ScenarioSet) -> tuple[str, str, tuple[str, ...]]:
    decided = detail.get("canonical_decision")
    decided = "no decision" if decided in (None, "", "NONE") else decided
    label = detail.get("label") or "?"
    if detail.get("error"):
        return "ERROR", f"{decided}; {detail['error']}", ()
    if detail.get("all_passed"):
        return "PASS", decided, ()
    head = decided if decided == label else f"{decided}, expected {label}"
    return "FAIL", head, tuple(failed_checks(detail, sset))


def _variant_group(sid: str, sset: ScenarioSet) -> str | None:
    """`FAMILY.combo` for a family variant (its envelope dropped), else None."""
    entry = sset.entries.get(sid)
    meta = entry.scenario.meta if entry else None
    if meta is None or not (meta.family and meta.envelope) or not sid.endswith("." + meta.envelope):
        return None
    return sid.removesuffix("." + meta.envelope)


def summary_lines(details: Iterable[dict[str, Any]], sset: ScenarioSet) -> list[str]:
    """One line per scenario (a family's variants that ended alike: one line), each failed check
    below it in words."""
    rows: list[dict[str, Any]] = []  # scenario id, outcome, variant group, envelopes
    first: dict[str, int] = {}  # variant group -> its first row
    size: dict[str, int] = defaultdict(int)  # variant group -> its variants in the assessment
    for d in details:
        sid, outcome = d["scenario_id"], _outcome(d, sset)
        group = _variant_group(sid, sset)
        envelope = sid.removeprefix(f"{group}.") if group else None
        if group is not None:
            size[group] += 1
            if group in first and rows[first[group]]["outcome"] == outcome:
                rows[first[group]]["envelopes"].append(envelope)
                continue
            first.setdefault(group, len(rows))
        rows.append({"sid": sid, "outcome": outcome, "group": group, "envelopes": [envelope]})
    names = [_name(r, size) for r in rows]
    width = max(map(len, names), default=0)
    lines = []
    for name, r in zip(names, rows):
        status, head, failed = r["outcome"]
        lines.append(f"{status:<5} {name:<{width}}  {head}")
        lines += [f"      - {f}" for f in failed[:SHOWN_CHECKS]]
        if len(failed) > SHOWN_CHECKS:
            more = len(failed) - SHOWN_CHECKS
            lines.append(f"      (and {more} more failed check{'s' if more > 1 else ''})")
    return lines


def _name(row: dict[str, Any], size: dict[str, int]) -> str:
    envelopes = row["envelopes"]
    if len(envelopes) < 2:
        return row["sid"]
    if len(envelopes) == size[row["group"]]:
        return f"{row['group']} ({len(envelopes)} envelopes)"
    return f"{row['group']} ({', '.join(envelopes)})"
