"""One row per sample-epoch (the leaderboard payload's input) and one row per check.

Rows are built from what the scorer stored (score value and metadata) so a report needs no
scenario files; those are read only for what the log does not carry: the scenario's raw
`meta.domain` (the original keys domains by it) and its policy clauses (for the missed-checks
table). A sample that ended on an error has no score: it becomes a row with status "error".
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from inspect_ai.log import EvalSample

from .. import __version__
from ..checks.evaluate import DIMENSIONS, dimension_of
from ..conversation.seeds import derive_seed
from ..scoring.explain import check_list
from ..scoring.record import SCORER, parity_semantic_score, partial_credit, score_record, semantic_score
from ..scoring.scorer import FLAGS, flag_of
from ..scenario.errors import ScenarioError
from ..scenario.reading import parse_json
from .bounded import Unreadable, read_scenario_file, source_root
from .causes import sample_error_cause
from .logs import LoadedLog, ReportInputError
from .usage import sample_usage


@lru_cache(maxsize=4096)
def scenario_json(path: str | None, root: Path | None = None) -> dict[str, Any]:
    """The raw scenario file a log names, read only inside the scenario source `root` the log
    was run from (bounded.py), or {} when it has moved or may not be read (the report then says
    so: "scenario file not found")."""
    if not isinstance(path, str) or not path or root is None:
        return {}
    try:
        raw = parse_json(read_scenario_file(path, root).decode("utf-8"), path)
    except (Unreadable, ScenarioError, UnicodeDecodeError):
        return {}
    return raw if isinstance(raw, dict) else {}


def scenario_root(loaded: LoadedLog) -> Path:
    """The scenario source `loaded` was run from (its scenario files are read there only)."""
    recorded = ((loaded.log.eval.metadata or {}).get("scenario_set") or {})
    return source_root(loaded.args.get("source"), recorded.get("source") if isinstance(recorded, dict) else None)


CLAUSE_ID = re.compile(r"\b[A-Z][A-Z0-9]*-\d+(?:\.\d+)*[a-z]?\b")


def check_clauses(raw: dict[str, Any]) -> dict[str, list[str]]:
    """outcome id -> the policy clauses its check tests: the clause ids its notes and expected
    arguments name (RETAIL-2.4, FINRA-5.3), in order; when a check names none and the scenario
    declares exactly one clause, that one."""
    declared = [str(c["clause_id"]) for c in (raw.get("policy_context") or {}).get("policy_clauses") or []
                if isinstance(c, dict) and c.get("clause_id")]
    prefixes = {c.split("-")[0] for c in declared}
    out: dict[str, list[str]] = {}
    for check in criteria_checks(raw):
        text = json.dumps([check.get("notes"), check.get("arguments"), check.get("question")], default=str)
        # a clause id of this policy (its prefix, e.g. RETAIL-), not an order or request id
        named = list(dict.fromkeys(m.group(0) for m in CLAUSE_ID.finditer(text)
                                   if m.group(0).split("-")[0] in prefixes))
        out[str(check["outcome_id"])] = named or (declared if len(declared) == 1 else [])
    return out


def criteria_checks(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The scenario file's checks (policy, state field, NL judge) that name an outcome id."""
    criteria = raw.get("evaluation_criteria") or {}
    return [check for kind in ("policy_checks", "state_field_checks", "nl_judge_checks")
            for check in criteria.get(kind) or [] if isinstance(check, dict) and check.get("outcome_id")]


def check_notes(raw: dict[str, Any]) -> dict[str, Any]:
    """outcome id -> the author's notes on its check (a compact score record leaves them to the
    scenario)."""
    return {str(c["outcome_id"]): c.get("notes") for c in criteria_checks(raw)}


def clauses(raw: dict[str, Any]) -> list[str]:
    out = []
    for c in (raw.get("policy_context") or {}).get("policy_clauses") or []:
        if isinstance(c, dict) and c.get("clause_id"):
            out.append(" ".join(str(x) for x in (c["clause_id"], c.get("section")) if x))
    return out


def dimensions(checks: list[dict[str, Any]]) -> dict[str, Any]:
    """The original's 7 dimensions with full check records (reference 4.6); the score metadata
    keeps only outcome ids, and the leaderboard's outcome_checks are derived from these."""
    out = {}
    for key, (name, _types) in DIMENSIONS.items():
        mine = [
            {"outcome_id": c["outcome_id"], "type": c["type"], "passed": c["passed"], "detail": c.get("detail", "")}
            for c in checks
            if c.get("passed") is not None and dimension_of(c["type"]) == key
        ]
        out[key] = {"name": name, "passed": all(c["passed"] for c in mine), "checks": mine,
                    "failed_checks": [c for c in mine if not c["passed"]]}
    return out


def seed_item(args: dict[str, Any], smeta: dict[str, Any], sid: str) -> str:
    """What the run's seed derives from: the scenario file's stem on the A2A path (as the
    original's assessment and its leaderboard), else the scenario id (reference 3.6)."""
    remote = "a2a" in (args.get("agent"), args.get("user"))
    return Path(smeta["scenario_file"]).stem if remote and smeta.get("scenario_file") else sid


def seed_base(args: dict[str, Any]) -> int:
    """The base seed a run derived its per-scenario seeds from (-T user_seed, else 42)."""
    seed = args.get("user_seed")
    return 42 if seed is None else int(seed)


def sample_row(loaded: LoadedLog, sample: EvalSample, trial: int) -> dict[str, Any]:
    smeta = dict(sample.metadata or {})
    score = (sample.scores or {}).get(SCORER)
    md = score_record(sample, SCORER)
    sid = str(md.get("scenario_id") or sample.id)
    raw = scenario_json(smeta.get("scenario_file"), scenario_root(loaded))
    domain_name = md.get("domain") or smeta.get("domain")
    errored = sample.error is not None or score is None
    value = score.value if score is not None and isinstance(score.value, dict) else {}
    checks = check_list(md.get("checks"), check_notes(raw))
    tested = check_clauses(raw)
    checks = [{**c, "clauses": tested.get(str(c.get("outcome_id")), [])} if isinstance(c, dict) else c for c in checks]
    row: dict[str, Any] = {
        # the leaderboard payload's fields (reference 4.10)
        "scenario_id": sid,
        "trial": trial,
        "label": md.get("label") or smeta.get("label") or "",
        "status": "error" if errored else "completed",
        "all_passed": bool(value.get("all_passed")) and not errored,
        "reward": 1.0 if value.get("all_passed") and not errored else 0.0,
        "partial_credit": partial_credit(value, md) if not errored else 0.0,  # exact (the value's is rounded)
        "semantic_score": semantic_score(md),  # None: not scored (no NL check was judged)
        "parity_semantic_score": parity_semantic_score(md),  # the original's, for its payload
        "leaderboard_primary": md.get("column") or smeta.get("column"),
        "domain": (raw.get("meta") or {}).get("domain") or domain_name,
        "domain_name": domain_name,
        # the original's flag names, as the leaderboard reads them
        "event_flags": {f: flag_of(value, f) for f in FLAGS} if not errored else {},
        "canonical_decision": md.get("canonical_decision"),
        "decision_channel": md.get("decision_channel"),
        "decision_valid": md.get("decision_valid"),
        "decision_error": md.get("decision_error"),
        "dimensions": dimensions(checks),
        "tool_calls": list(md.get("tool_calls") or []),
        # the seed the run used: remote (A2A) parties are seeded from the scenario file's stem
        "seed": derive_seed(seed_base(loaded.args), seed_item(loaded.args, smeta, sid), trial),
        "duration": sample.total_time,
        "benchmark_version": __version__,
    }
    if errored:
        row["error"] = sample_error_cause(sample) if sample.error else "sample has no pibench score"
        row["error_from"] = "run"
    elif md.get("agent_error") or md.get("user_error"):
        # scored (as the original did), but the leaderboard row says why the conversation stopped
        row["error"] = md.get("agent_error") or md.get("user_error")
        row["error_from"] = "agent" if md.get("agent_error") else "user"
    # ours, for the report and the notebook (the payload copies only the fields above)
    row.update(
        agent=loaded.agent_id,
        log=str(loaded.path),
        epoch=sample.epoch,
        # a family's variants are not independent (intervals resample families); logs written
        # before families existed have none, and each scenario is then its own family
        family=smeta.get("family") or sid,
        combo=smeta.get("combo"),
        envelope=smeta.get("envelope"),
        ablation=smeta.get("ablation") or loaded.args.get("ablation"),
        answer=score.answer if score is not None else None,
        termination=md.get("termination"),
        scoring=md.get("scoring"),
        nl_tier=md.get("nl_tier"),
        judge_model=md.get("judge_model"),
        user_model=(sample.store or {}).get("pibench:user_model") or md.get("user_model"),
        user_config=(sample.store or {}).get("pibench:user_config"),
        # the pressure tactics the scripted user played (conversation/pressure.py)
        tactics=list((sample.store or {}).get("pibench:tactics") or []),
        checks=checks,
        clauses=clauses(raw),
        scenario_file_found=bool(raw),
        usage=sample_usage(sample),
    )
    return row


def log_rows(logs: list[LoadedLog]) -> list[dict[str, Any]]:
    """Rows of every sample-epoch, sorted by (agent, scenario, trial) as the original sorts its
    results. Several logs of one agent are further trials: their epochs continue the count."""
    rows = []
    offset: dict[tuple[str, str], int] = {}
    for loaded in logs:
        seen: dict[tuple[str, str], int] = {}
        for sample in loaded.log.samples or []:
            key = (loaded.agent_id, str(sample.id))
            trial = offset.get(key, 0) + sample.epoch - 1
            seen[key] = max(seen.get(key, 0), sample.epoch)
            try:
                rows.append(sample_row(loaded, sample, trial))
            except Exception as err:  # a record no scorer wrote: named, never a traceback
                raise ReportInputError(f"{loaded.path}: sample {sample.id} (epoch {sample.epoch}): its score "
                                       f"record cannot be read ({type(err).__name__}: {str(err)[:120]})") from None
        for key, n in seen.items():
            offset[key] = offset.get(key, 0) + n
    return sorted(rows, key=lambda r: (r["agent"], r["scenario_id"], r["trial"]))


def check_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per check of every completed run, with its evidence pointer."""
    out = []
    for r in rows:
        for c in r["checks"]:
            out.append({
                "agent": r["agent"], "scenario_id": r["scenario_id"], "epoch": r["epoch"], "trial": r["trial"],
                "label": r["label"], "column": r["leaderboard_primary"], "domain": r["domain_name"],
                "outcome_id": c.get("outcome_id"), "type": c.get("type"), "tier": c.get("tier"),
                "status": c.get("status"), "passed": c.get("passed"), "detail": c.get("detail"),
                "evidence": c.get("evidence") or {}, "notes": c.get("notes"),
                "clauses": c.get("clauses") or [],  # the clauses this check tests
            })
    return out
