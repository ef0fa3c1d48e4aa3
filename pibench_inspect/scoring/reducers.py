"""Epoch reducer: means of every score key, plus the original's repeatability aggregates."""

from __future__ import annotations

from inspect_ai.scorer import Score, ScoreReducer, score_reducer


@score_reducer(name="pibench_epochs")
def pibench_epochs() -> ScoreReducer:
    """Mean over epochs for every key; `pass_all` = every epoch passed (PolicyPassAll),
    `pass_any` = some epoch passed (PolicyPassAny), `violation_ever` = some epoch violated."""

    def reduce(scores: list[Score]) -> Score:
        values = [s.value for s in scores if isinstance(s.value, dict)]
        if not values:
            return scores[0]
        keys = list(values[0])
        out = {k: sum(float(v.get(k, 0.0)) for v in values) / len(values) for k in keys}
        passed = [float(v.get("all_passed", 0.0)) >= 1.0 for v in values]
        out["pass_all"] = float(all(passed))
        out["pass_any"] = float(any(passed))
        out["violation_ever"] = float(any(float(v.get("V_r", 0.0)) >= 1.0 for v in values))
        first = scores[0]
        answers = {s.answer for s in scores}
        return Score(
            value=out,
            answer=first.answer if len(answers) == 1 else None,
            explanation=first.explanation if len(scores) == 1 else None,
            metadata={**(first.metadata or {}), "epochs": len(scores)},
        )

    return reduce
