"""Tokens and cost per role (agent, user simulator, judge) from a sample's model events.

Inspect records every model call as a ModelEvent carrying the model, the role it was obtained
under (`user`, `grader`) and the call's usage (with `total_cost` when Inspect knows a price).
An unbound role falls back to the model under test with no role name, so the span a call ran
in decides as well: the simulated user runs in a `user` span, the judge inside the scorer. The
LiteLLM reference agent calls its model through Inspect too, so its calls are the agent's.

Inspect records a model event per attempt; an attempt that failed (and was retried) used no
tokens and is not a call: it is counted under `failed_attempts`. A cost is a sum only of calls
with a known price; with none it stays None ("unknown"), never $0. `seconds` is the time the
role's model calls took, failed attempts included (a judge that hangs shows here).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.log import EvalSample

ROLES = ("agent", "user", "judge")
ROLE_NAMES = {"user": "user", "grader": "judge"}
FIELDS = ("calls", "input_tokens", "output_tokens", "total_tokens")


def empty() -> dict[str, Any]:
    # cost stays None until a call with a known price is seen; cost_complete says whether
    # every call had one (a partial sum must not pass for the full cost)
    return {**{f: 0 for f in FIELDS}, "failed_attempts": 0, "seconds": 0.0, "cost": None, "cost_complete": True,
            "models": []}


def call_seconds(event: Any) -> float:
    """How long one model event (an attempt) took, from its start to its completion."""
    start, end = getattr(event, "timestamp", None), getattr(event, "completed", None)
    if start is not None and end is not None:
        return max(0.0, (end - start).total_seconds())
    return float(getattr(event, "working_time", None) or 0.0)


def _role_of(event: Any, spans: dict[str, Any]) -> str:
    if getattr(event, "role", None) in ROLE_NAMES:
        return ROLE_NAMES[event.role]
    sid = getattr(event, "span_id", None)
    while sid and sid in spans:
        span = spans[sid]
        if span.type == "user" or span.name == "user":
            return "user"
        if span.type in ("scorer", "scorers"):
            return "judge"
        sid = span.parent_id
    return "agent"


def add(acc: dict[str, Any], model: str, usage: Any, calls: int = 1) -> None:
    acc["calls"] += calls
    if model and model not in acc["models"]:
        acc["models"].append(model)
    if usage is None:
        return
    acc["input_tokens"] += int(usage.input_tokens or 0)
    acc["output_tokens"] += int(usage.output_tokens or 0)
    acc["total_tokens"] += int(usage.total_tokens or 0)
    if usage.total_cost is None:
        acc["cost_complete"] = False
    else:
        acc["cost"] = (acc["cost"] or 0.0) + float(usage.total_cost)


def sample_usage(sample: EvalSample) -> dict[str, dict[str, Any]]:
    out = {r: empty() for r in ROLES}
    events = list(sample.events or [])
    spans = {e.id: e for e in events if getattr(e, "event", None) == "span_begin"}
    models = [e for e in events if getattr(e, "event", None) == "model"]
    for e in models:
        role = out[_role_of(e, spans)]
        role["seconds"] += call_seconds(e)
        if e.error is not None:  # a failed attempt: retried (counted once, when it succeeds) or the sample's error
            role["failed_attempts"] += 1
            continue
        add(role, str(e.model), e.output.usage if e.output else None)
    if not models and sample.model_usage:
        _from_totals(out, sample)
    return out


def _from_totals(out: dict[str, dict[str, Any]], sample: EvalSample) -> None:
    """Model events were not logged: role_usage holds the bound roles; the rest of
    model_usage (which counts every call) was the agent's."""
    roles = sample.role_usage or {}
    for role, usage in roles.items():
        add(out[ROLE_NAMES.get(role, "agent")], "", usage, calls=0)
    agent = out["agent"]
    agent["models"] = [m for m in sample.model_usage]
    for f in FIELDS[1:]:
        total = sum(int(getattr(u, f) or 0) for u in sample.model_usage.values())
        agent[f] = max(0, total - sum(int(getattr(u, f) or 0) for u in roles.values()))
    costs = [u.total_cost for u in [*sample.model_usage.values(), *roles.values()]]
    if all(c is not None for c in costs):
        agent["cost"] = max(0.0, sum(u.total_cost for u in sample.model_usage.values())
                            - sum(u.total_cost for u in roles.values()))
    else:
        agent["cost_complete"] = False


def total_usage(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    out = {r: empty() for r in ROLES}
    for row in rows:
        for role, u in (row.get("usage") or {}).items():
            acc = out.setdefault(role, empty())
            for f in (*FIELDS, "failed_attempts", "seconds"):
                acc[f] += u.get(f, 0)
            for m in u["models"]:
                if m not in acc["models"]:
                    acc["models"].append(m)
            if u["cost"] is not None:
                acc["cost"] = (acc["cost"] or 0.0) + u["cost"]
            acc["cost_complete"] = acc["cost_complete"] and u["cost_complete"]
    return out


def combined(usage: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """All roles of one sample together (the report's per-sample cost): unknown stays unknown."""
    out = empty()
    for u in usage.values():
        for f in (*FIELDS, "failed_attempts", "seconds"):
            out[f] += u.get(f, 0)
        out["models"] += [m for m in u["models"] if m not in out["models"]]
        if u["cost"] is not None:
            out["cost"] = (out["cost"] or 0.0) + u["cost"]
        out["cost_complete"] = out["cost_complete"] and u["cost_complete"]
    return out
