"""Where a score's full record lives, and how to read it back from any log.

Why not all in the score: Inspect keeps every finished sample's Score (for the metrics at the end
of the run) and a summary of it in memory until the run ends. The full record (each check with
its detail, the decision channel, the tool calls, the state changes of a failed sample, the
scenario's author notes) is ~8 KB of Python objects a sample, so a run of 3,120 samples kept
~25 MB it never used again.

So, from `format` 3 on, the scorer writes the full record once, as an info event in its own
scoring span (the viewer shows it in the transcript, beside the score; `inspect score` appends
the new one), and the Score's metadata keeps only what the metrics read (`termination`,
`semantic_score` and `malformed_calls` when set) and the record's `ref`. Logs of format 2 and
older keep the record in the score metadata: `score_record` reads every layout.
"""

from __future__ import annotations

import secrets
from typing import Any

from inspect_ai.log import EvalSample

SCORER = "pibench_scorer"  # the scorer's name in a log (its unqualified registry name)
RECORD_SOURCE = SCORER  # the record's info event's `source`
SCORE_FORMAT = 3
"""The score's layout (`format` in its metadata): 3 keeps the record in an info event (above);
2 kept it in the metadata, each check compact; logs without `format` hold every check in full."""

# what the metrics read from every score Inspect keeps in memory, besides `termination`; each
# only when set (an unset one reads as None or 0 either way)
KEPT_WHEN_SET = ("semantic_score", "malformed_calls", "credit")


def new_ref() -> str:
    return secrets.token_hex(6)


def slim_metadata(record: dict[str, Any], ref: str) -> dict[str, Any]:
    """The score metadata kept beside the value: the record's ref, its termination and the set
    values of KEPT_WHEN_SET (a semantic score of 0.0 is set: every NL verdict failed)."""
    return {"format": SCORE_FORMAT, "ref": ref, "termination": record.get("termination"),
            **{k: record[k] for k in KEPT_WHEN_SET
               if record.get(k) is not None and (k == "semantic_score" or record[k])}}


def semantic_score(record: dict[str, Any]) -> float | None:
    """A record's semantic score as a person reads it: None (not scored) when no NL check was
    judged. Records written before `parity_semantic_score` existed hold the original's 1.0 for
    "nothing judged" under parity scoring: judged or not is read from their checks."""
    value = record.get("semantic_score")
    if value is None or "parity_semantic_score" in record or record.get("scoring") != "parity":
        return value
    from .explain import check_list

    judged = any(c.get("tier") == 2 and c.get("passed") is not None
                 for c in check_list(record.get("checks")) if isinstance(c, dict))
    return value if judged else None


def parity_semantic_score(record: dict[str, Any]) -> float | None:
    """The semantic score the original pi-bench reports for this run (its leaderboard payload's):
    under parity scoring 1.0 when no NL check was judged; else the same as `semantic_score`."""
    return record.get("parity_semantic_score", record.get("semantic_score"))


def partial_credit(value: Any, md: Any) -> float:
    """A score's partial credit, exactly. The score value's `partial_credit` is rounded to 3
    decimals so the viewer shows it readably; the record and the slim metadata keep `credit`,
    [passed, scored], from which it is exact (the metrics and the leaderboard payload read it).
    Logs written before hold the exact figure in the value, and a `credit` that is not two
    counts with 0 <= passed <= scored > 0 is not read."""
    credit = md.get("credit") if isinstance(md, dict) else None
    if isinstance(credit, (list, tuple)) and len(credit) == 2 and \
            all(isinstance(x, int) and not isinstance(x, bool) for x in credit) and 0 <= credit[0] <= credit[1] > 0:
        return credit[0] / credit[1]
    raw = value.get("partial_credit", 0.0) if isinstance(value, dict) else 0.0
    try:
        return float(raw)
    except (TypeError, ValueError):
        return 0.0


def info_record(record: dict[str, Any], ref: str) -> dict[str, Any]:
    return {"ref": ref, **record}


def score_record(sample: EvalSample, scorer: str = SCORER) -> dict[str, Any]:
    """The full record of the sample's `scorer` score, whichever format the log has ({} when the
    sample has no such score; format 3 whose event is gone, e.g. a log rewritten without its
    events: the slim metadata, with `record_missing` set)."""
    score = (sample.scores or {}).get(scorer)
    if score is None:
        return {}
    md = dict(score.metadata or {})
    if md.get("format") != SCORE_FORMAT or not md.get("ref"):
        return md  # format 2 and older: the metadata is the record
    data = _record_event(sample, md["ref"])
    return {**md, "record_missing": True} if data is None else data


def _record_event(sample: EvalSample, ref: str) -> dict[str, Any] | None:
    found = None
    for event in sample.events or []:
        if getattr(event, "event", None) == "info" and event.source == RECORD_SOURCE and \
                isinstance(event.data, dict) and event.data.get("ref") == ref:
            found = event.data
    # Inspect keeps a long string of an event once, as an attachment of the sample
    return None if found is None else _resolve(found, sample.attachments or {})


def _resolve(v: Any, attachments: dict[str, str]) -> Any:
    if isinstance(v, str) and v.startswith("attachment://"):
        return attachments.get(v.removeprefix("attachment://"), v)
    if isinstance(v, dict):
        return {k: _resolve(x, attachments) for k, x in v.items()}
    if isinstance(v, list):
        return [_resolve(x, attachments) for x in v]
    return v
