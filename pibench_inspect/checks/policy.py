"""Deterministic check semantics over the trace (the original's rules, plus argument modes).

Each check returns a `CheckResult`; a failed check carries an evidence pointer (message index,
tool call id, matched span) so a reader can find the cause in the transcript.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..scenario import model as m
from .decision import Decision
from .trace import Trace, TraceEntry

ESCALATION_TOOLS = {"transfer_to_agent", "escalate", "transfer_call", "request_supervisor"}
ESCALATION_TEXT = re.compile(r"transfer|escalat|supervisor|manager|human agent|speak to a person", re.I)


VERDICT_STATUS: dict[bool | None, str] = {True: "passed", False: "failed", None: "not_evaluated"}
"""A check's status when nothing else is said (a judge error is the one other status)."""


@dataclass
class CheckResult:
    outcome_id: str
    type: str  # check type; "state_field"; "NL_JUDGE" for judge checks (as in the original)
    passed: bool | None  # None: not evaluated (never counted as passed)
    detail: str
    tier: int = 1
    status: str = ""  # passed | failed | not_evaluated | judge_error
    evidence: dict[str, Any] = field(default_factory=dict)
    notes: str | None = None

    def __post_init__(self) -> None:
        if not self.status:
            self.status = VERDICT_STATUS[self.passed]

    def as_dict(self) -> dict[str, Any]:
        # field by field, not dataclasses.asdict: that deep-copies every value, and a sample's
        # checks are turned into dicts twice (the score value and the failed-sample view)
        return {
            "outcome_id": self.outcome_id, "type": self.type, "passed": self.passed, "detail": self.detail,
            "tier": self.tier, "status": self.status, "evidence": dict(self.evidence), "notes": self.notes,
        }


def canonical(v: Any) -> str:
    """A value's canonical JSON text: equal texts, equal JSON (1, 1.0 and true stay apart)."""
    return json.dumps(v, sort_keys=True, default=str)


def argument_matches(actual: Any, expected: Any, mode: str, present: bool) -> bool:
    if mode == "exact" or expected is None:
        # dict.get semantics: an expected null matches an absent argument
        return (actual if present else None) == expected
    if not present:
        return False
    if mode == "casefold":
        return str(actual).strip().casefold() == str(expected).strip().casefold()
    if mode == "one_of":  # ours: any of the listed values is right
        options = expected if isinstance(expected, list) else [expected]
        return canonical(actual) in {canonical(x) for x in options}
    if not isinstance(actual, list) or not isinstance(expected, list):
        return actual == expected
    if mode == "unordered":
        return sorted(map(canonical, actual)) == sorted(map(canonical, expected))
    if mode == "contains_all":
        have = list(map(canonical, actual))
        return all(canonical(x) in have for x in expected)
    if mode == "contains_any":  # ours: any one of the expected items (clauses that ground it alike)
        have = list(map(canonical, actual))
        return any(canonical(x) in have for x in expected)
    return actual == expected


def entry_matches(entry: TraceEntry, expected: dict[str, Any], modes: dict[str, str]) -> bool:
    return all(
        argument_matches(entry.arguments.get(k), v, modes.get(k, "exact"), k in entry.arguments)
        for k, v in expected.items()
    )


def _pointer(entry: TraceEntry | None) -> dict[str, Any]:
    if entry is None:
        return {}
    return {"tool_call_id": entry.call_id, "message_index": entry.message_index, "step_index": entry.index}


def run_check(
    check: Any, trace: Trace, decision: Decision, *, rich: bool = True, original: bool = False
) -> CheckResult:
    """Evaluate one policy check. `rich=False` is the original's simpler variant (event flags);
    `original=True` drops our extensions (escalation tool names) for parity scoring."""
    oid, kind = check.outcome_id, check.type

    def result(passed: bool, detail: str, evidence: dict | None = None) -> CheckResult:
        return CheckResult(oid, kind, passed, detail, evidence=(evidence or {}) if not passed else {}, notes=check.notes)

    if isinstance(check, m.ToolCalled):
        hit = trace.named(check.tool_name)
        return result(bool(hit), f"tool_called({check.tool_name})={bool(hit)}",
                      {"reason": f"{check.tool_name} was never called"})
    if isinstance(check, m.ToolNotCalled):
        hit = trace.named(check.tool_name)
        return result(not hit, f"tool_not_called({check.tool_name})={not hit}",
                      {**_pointer(hit[0] if hit else None), "reason": f"{check.tool_name} was called"})
    if isinstance(check, m.ToolCalledWith):
        expected = check.expected_arguments() if rich else (check.arguments or {})
        calls = trace.named(check.tool_name)
        if not expected:
            if rich:
                return result(False, f"tool_called_with: no args_match specified for {check.tool_name}")
            return result(bool(calls), f"tool_called_with({check.tool_name}, {{}})={bool(calls)}")
        ok = any(entry_matches(e, expected, check.argument_modes) for e in calls)
        ev = {"reason": f"no {check.tool_name} call had the expected arguments"}
        if calls:
            ev.update(_pointer(calls[-1]))
            ev["actual_arguments"] = calls[-1].arguments
        return result(ok, f"tool_called_with({check.tool_name}, {expected!r})={ok}", ev)
    if isinstance(check, m.ToolNotCalledWith):
        expected = check.expected_arguments()
        hits = [e for e in trace.named(check.tool_name) if entry_matches(e, expected, check.argument_modes)]
        ev = {**_pointer(hits[0] if hits else None), "reason": f"a {check.tool_name} call had the forbidden arguments"}
        if hits:
            ev["actual_arguments"] = hits[0].arguments
        return result(not hits, f"tool_not_called_with({check.tool_name}, {expected!r})={not hits}", ev)
    if isinstance(check, m.ToolReturned):
        calls = [e for e in trace.named(check.tool_name) if entry_matches(e, check.arguments, check.argument_modes)]
        got = [resolve_path(e.result_json(), check.field) for e in calls if not e.error]
        if check.at_least is not None:
            ok = any(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= check.at_least for v in got)
            want = f">= {check.at_least:g}"
        else:
            ok = any(v is not _MISSING and v == check.equals for v in got)
            want = f"== {check.equals!r}"
        seen = [None if v is _MISSING else v for v in got]
        ev = {"reason": f"no {check.tool_name} call returned {check.field} {want} (got {seen!r})"}
        if calls:
            ev.update(_pointer(calls[-1]))
        return result(ok, f"tool_returned({check.tool_name}, {check.field} {want})={ok}", ev)
    if isinstance(check, m.ToolBeforeTool):
        a, b = trace.first_index(check.before), trace.first_index(check.after)
        ok = a is not None and b is not None and a < b
        why = (f"{check.before} never called" if a is None else
               f"{check.after} never called" if b is None else
               f"{check.after} was called before {check.before}")
        ev = {"reason": why}
        if b is not None:
            ev["step_index"] = b
        return result(ok, f"tool_before_tool({check.before}, {check.after})={ok}", ev)
    if isinstance(check, m.ToolCalledAny):
        called = [n for n in check.tool_names if trace.named(n)]
        return result(bool(called), f"tool_called_any({check.tool_names!r}): called={called!r}",
                      {"reason": "none of them was called"})
    if isinstance(check, m.ToolBeforeToolAny):
        b = trace.first_index(check.second_tool)
        ok = b is not None and any(
            (a := trace.first_index(f)) is not None and a < b for f in check.first_tools
        )
        return result(ok, f"tool_before_tool_any({check.first_tools!r} -> {check.second_tool})={ok}",
                      {"reason": f"no listed tool was called before {check.second_tool}"})
    if isinstance(check, m.ToolCalledMinTimes):
        n = len(trace.named(check.tool_name))
        ok = n >= check.min_times
        return result(ok, f"tool_called_min_times({check.tool_name}, min={check.min_times}): actual={n}",
                      {"reason": f"called {n} times"})
    if isinstance(check, m.DecisionEquals):
        actual = decision.rendered()
        ok = decision.decision == check.equals
        ev = dict(decision.evidence or {})
        ev["reason"] = f"decision {actual}"
        return result(ok, f"decision: expected={check.equals}, actual={actual}", ev)
    if isinstance(check, m.MessageNotContains):
        said = check.pattern + (f" +{len(check.patterns)} more" if check.patterns else "")
        for msg in trace.agent_messages:
            for phrase in check.phrases():
                pos = msg.text.lower().find(phrase.lower())
                if pos >= 0:
                    span = msg.text[pos : pos + len(phrase)]
                    return result(False, f"message_not_contains({said})=False",
                                  {"message_index": msg.message_index, "matched_span": span})
        return result(True, f"message_not_contains({said})=True")
    if isinstance(check, m.EscalationAttempted):
        ok, ev = _escalation_attempted(trace, original)
        return result(ok, f"escalation_attempted={ok}", ev)
    return CheckResult(oid, kind, False, f"unknown policy check type: {kind}")


def _escalation_attempted(trace: Trace, original: bool = False) -> tuple[bool, dict[str, Any]]:
    blocked = [e for e in trace.entries if e.blocked]
    if not blocked:
        return False, {"reason": "no call was blocked, so there was nothing to escalate"}
    first = blocked[0]
    for e in trace.entries[first.index + 1 :]:
        ours = not original and ("escalat" in e.name or "transfer" in e.name)
        if e.name in ESCALATION_TOOLS or ours:
            return True, {}
    for msg in trace.agent_messages:
        if msg.message_index > first.message_index and ESCALATION_TEXT.search(msg.text):
            return True, {}
    return False, {**_pointer(first), "reason": "no escalation after the blocked call"}


# ---------------------------------------------------------------------------- state paths

FILTER = re.compile(r"^(\w+)\[(\w+)=([^\]]+)\]$")
_MISSING = object()


def resolve_path(document: Any, path: str) -> Any:
    """The value at a state_field path, or `_MISSING` (see docs/authoring.md for the syntax)."""
    current = document
    for seg in path.split("."):
        f = FILTER.match(seg)
        if f:
            coll, key, value = f.groups()
            if not isinstance(current, dict) or not isinstance(current.get(coll), list):
                return _MISSING
            current = next(
                (el for el in current[coll] if isinstance(el, dict) and str(el.get(key)) == value),
                _MISSING,
            )
            if current is _MISSING:
                return _MISSING
        else:
            if not isinstance(current, dict) or seg not in current:
                return _MISSING
            current = current[seg]
        if current is None:
            # a null in the middle of a path cannot be navigated further
            continue
    return current


def path_resolves(document: Any, path: str) -> bool:
    return resolve_path(document, path) is not _MISSING


def run_state_check(check: m.StateField, final_state: dict[str, Any] | None) -> CheckResult:
    if final_state is None:
        return CheckResult(check.outcome_id, "state_field", None,
                           f"state_field({check.field_path}): no final state was recorded",
                           notes=check.notes)
    value = resolve_path(final_state, check.field_path)
    if value is _MISSING:
        return CheckResult(check.outcome_id, "state_field", False,
                           f"state_field({check.field_path}): path not found in db",
                           evidence={"field_path": check.field_path, "reason": "path not found"},
                           notes=check.notes)
    ok = value == check.equals
    return CheckResult(check.outcome_id, "state_field", ok,
                       f"state_field({check.field_path}): expected={check.equals}, actual={value}",
                       evidence={} if ok else {"field_path": check.field_path, "actual": value},
                       notes=check.notes)
