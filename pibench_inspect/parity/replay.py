"""Replay recorded original trajectories through our engine and score them like the original.

A trajectory file (format: the shared sample's README) holds the conversation, every tool call
and what the original's evaluator said of it. Replay executes the recorded calls on a fresh
state with our re-implementation of the original tools, rebuilds the conversation with our
results, and evaluates it in parity mode with a judge stub that gives the recorded answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall, ToolCallError

from .._sync import run_sync
from ..checks.evaluate import DIMENSIONS, Evaluation, dimension_of, evaluate
from ..checks.policy import CheckResult
from ..checks.trace import Trace, build_trace
from ..conversation.termination import Termination
from ..environment.merge import domain_document
from ..environment.state import StateDB
from ..environment.tools import exposed_tools
from ..scenario.catalog import Entry, ScenarioSet, load_set
from ..scenario.model import NLJudge
from .execute import execute_original

TIERS = {"POLICY": "policy", "STATE_FIELD": "state_field", "NL_JUDGE": "nl_judge"}


def stub_judge(answer: str):
    """The sample's judge stand-in: every question gets the same answer (reference 4.4)."""

    async def judge(check: NLJudge, trace: Trace) -> CheckResult:
        texts = [m.text for m in trace.agent_messages if m.text]
        if check.scope == "final_assistant_message":
            texts = texts[-1:]
        if not texts:
            return CheckResult(check.outcome_id, "NL_JUDGE", False,
                               "nl_assertion_llm_judge: no assistant messages found", tier=2)
        ok = answer.upper() == check.expected_answer.upper()
        q = check.judge_question
        shown = q[:80] + ("..." if len(q) > 80 else "")
        return CheckResult(check.outcome_id, "NL_JUDGE", ok,
                           f"llm_judge: question='{shown}' expected={check.expected_answer}, got={answer.upper()}, reason=stub",
                           tier=2)

    return judge


def messages_with_results(traj: dict[str, Any], results: dict[str, tuple[str, bool]]) -> list[ChatMessage]:
    """The recorded conversation, with each tool result replaced by ours."""
    out: list[ChatMessage] = []
    for m in traj["messages"]:
        role = m["role"]
        if role == "assistant":
            calls = [ToolCall(id=c["id"], function=c["name"], arguments=c["arguments"]) for c in m.get("tool_calls") or []]
            out.append(ChatMessageAssistant(content=m.get("content") or "", tool_calls=calls or None))
        elif role == "tool":
            content, error = results.get(m["tool_call_id"], (m.get("content") or "", bool(m.get("error"))))
            out.append(ChatMessageTool(content=content, tool_call_id=m["tool_call_id"], function=m.get("name"),
                                       error=ToolCallError("unknown", json.loads(content) if error else "") if error else None))
        elif role == "user":
            out.append(ChatMessageUser(content=m.get("content") or ""))
    return out


def expected_shape(ev: Evaluation, entry: Entry) -> dict[str, Any]:
    """Our evaluation in the shape of a trajectory file's `expected` block."""
    crit = entry.scenario.criteria
    tier_of: dict[int, str] = {}
    checks = []
    i = 0
    for name in crit.reward_basis:
        n = {"POLICY": len(crit.policy_checks), "STATE_FIELD": len(crit.state_field_checks),
             "NL_JUDGE": len(crit.nl_judge_checks)}.get(name, 1)
        for _ in range(n):
            tier_of[i] = TIERS.get(name, "policy")
            i += 1
    for j, r in enumerate(ev.results):
        checks.append({"outcome_id": r.outcome_id, "passed": r.passed, "tier": tier_of.get(j, "policy"), "type": r.type})
    skipped = []
    if "STATE_FIELD" not in crit.reward_basis:
        skipped += [c.outcome_id for c in crit.state_field_checks]
    if "NL_JUDGE" not in crit.reward_basis:
        skipped += [c.outcome_id for c in crit.nl_judge_checks]
    if "POLICY" not in crit.reward_basis:
        skipped += [c.outcome_id for c in crit.policy_checks]
    return {
        "all_passed": ev.all_passed,
        "canonical_decision": ev.decision.decision,
        "checks": checks,
        "decision_channel": ev.decision.channel,
        "decision_error": ev.decision.error,
        "dimensions": dimensions_payload(ev),
        "event_flags": dict(ev.flags),
        "partial_credit": ev.partial_credit,
        "reward": 1.0 if ev.all_passed else 0.0,
        "semantic_score": ev.semantic_score,
        "skipped_checks": skipped,
    }


def dimensions_payload(ev: Evaluation) -> dict[str, Any]:
    """The original's 7 dimensions with full result records (reference 4.6)."""
    out = {}
    for key, (name, _types) in DIMENSIONS.items():
        mine = [r for r in ev.results if r.passed is not None and dimension_of(r.type) == key]
        records = [{"detail": r.detail, "outcome_id": r.outcome_id, "passed": r.passed, "type": r.type} for r in mine]
        out[key] = {"checks": records, "failed_checks": [x for x in records if not x["passed"]],
                    "name": name, "passed": all(r.passed for r in mine)}
    return out


@dataclass
class Replayed:
    file: str
    scenario_id: str
    evaluation: dict[str, Any]
    final_state: dict[str, Any]
    row: dict[str, Any]  # the metrics row (leaderboard payload input)

    def line(self) -> str:
        return json.dumps({"file": self.file, "scenario_id": self.scenario_id,
                           "evaluation": self.evaluation, "final_state": self.final_state})

    @property
    def passed(self) -> bool:
        return bool(self.evaluation.get("all_passed"))

    def summary(self) -> str:
        """One readable line: the verdict, the decision, the checks, the failed ones by id."""
        checks = [c for c in self.evaluation.get("checks") or [] if isinstance(c, dict)]
        judged = [c for c in checks if c.get("passed") is not None]
        failed = [str(c.get("outcome_id")) for c in judged if c.get("passed") is False]
        return (f"{self.file}: {self.scenario_id}: {'all checks passed' if self.passed else 'failed'}, decision "
                f"{self.evaluation.get('canonical_decision') or 'none'}, {len(judged) - len(failed)}/{len(judged)} checks"
                + (f" (failed: {', '.join(failed)})" if failed else ""))


def find_entry(sset: ScenarioSet, scenarios_root: Path, traj: dict[str, Any]) -> Entry:
    want = (scenarios_root / traj["scenario_file"]).resolve()
    for e in sset.entries.values():
        if Path(e.path).resolve() == want:
            return e
    if traj.get("scenario_id") in sset.entries:
        return sset.entries[traj["scenario_id"]]
    raise LookupError(f"scenario {traj.get('scenario_file')} not found under {scenarios_root}")


def replay_one(path: Path, sset: ScenarioSet, *, execute: bool = True) -> Replayed:
    """Replay one trajectory. `execute=False` scores the recorded tool results and final state
    instead of re-executing the calls (isolates the evaluator from the tool handlers)."""
    traj = json.loads(path.read_text(encoding="utf-8"))
    entry = find_entry(sset, Path(sset.source or ".") / "scenarios", traj)
    s, d = entry.scenario, entry.domain
    offered = {t.name for t in exposed_tools(d, s)}
    if execute:
        state = StateDB(domain_document(d, s))
        try:
            results = {c["id"]: execute_original(d, offered, state, c["name"], c["arguments"]) for c in traj["tool_calls"]}
            final = state.export()
        finally:
            state.close()
        final.pop("_policy_text", None)
    else:
        results = {c["id"]: (c["result"], c["error"]) for c in traj["tool_calls"]}
        final = traj["final_db"]
    trace = build_trace(messages_with_results(traj, results))
    ev = run_sync(evaluate(s, trace, final, traj.get("termination_reason", Termination.USER_STOP),
                              decision_tool=d.config.decision_tool, judge=stub_judge(traj.get("judge_stub", "YES")),
                              parity=True))
    expected = expected_shape(ev, entry)
    row = {
        "scenario_id": s.scenario_id, "label": s.expected, "status": "completed",
        "all_passed": ev.all_passed, "reward": expected["reward"], "semantic_score": ev.semantic_score,
        "partial_credit": ev.partial_credit, "leaderboard_primary": s.primary,
        "domain": s.meta.domain, "domain_name": d.name, "event_flags": dict(ev.flags),
        "canonical_decision": ev.decision.decision, "decision_channel": ev.decision.channel,
        "decision_valid": ev.decision.valid, "decision_error": ev.decision.error,
        "dimensions": expected["dimensions"], "tool_calls": [c["name"] for c in traj["tool_calls"]],
        "outcome_checks": [{"outcome_id": r.outcome_id, "type": r.type, "passed": r.passed,
                            "detail": r.detail, "dimension": ""} for r in ev.results],
    }
    return Replayed(path.name, s.scenario_id, expected, final, row)


def trajectory_files(paths: list[str | Path]) -> list[Path]:
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    return out


def nearest_source(path: Path) -> Path:
    for parent in [path, *path.parents]:
        if (parent / "scenarios").is_dir() and (parent / "domains").is_dir():
            return parent
    raise FileNotFoundError(f"no folder holding scenarios/ and domains/ above {path}; pass --source")


@dataclass
class ReplayError:
    file: str
    error: str

    def line(self) -> str:
        return json.dumps({"file": self.file, "error": self.error})

    passed = False

    def summary(self) -> str:
        return f"{self.file}: not replayed: {self.error}"


def replay(paths: list[str | Path], source: str | Path | None = None) -> Iterator[Replayed | ReplayError]:
    """Replay every trajectory (files or folders, searched recursively) in one process.

    A file that cannot be replayed yields a ReplayError naming it; the others go on.
    """
    files = trajectory_files(paths)
    sets: dict[Path, ScenarioSet] = {}
    for f in files:
        try:
            root = Path(source).resolve() if source else nearest_source(f.resolve().parent)
            if root not in sets:
                sets[root] = load_set(root)
            yield replay_one(f, sets[root])
        except json.JSONDecodeError as err:
            yield ReplayError(str(f), f"invalid JSON at line {err.lineno} column {err.colno}: {err.msg}")
        except (KeyError, TypeError) as err:
            yield ReplayError(str(f), f"not a trajectory file: missing or malformed field {err}")
        except (LookupError, FileNotFoundError, ValueError) as err:
            yield ReplayError(str(f), str(err))


