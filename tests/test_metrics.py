"""Metric formulas on hand-made scores (reference 4.8), including the empty list; metric names."""

from __future__ import annotations

import math

import pytest
from inspect_ai.scorer import SampleScore, Score

from pibench_inspect.scoring.metric_names import DESCRIPTIONS, HEADLINE_MAX
from pibench_inspect.scoring.metrics import (
    SCORER_METRICS, boundaries, domains, execution, flags, headline, nl_tier, not_applicable, other_columns, pass_k,
    repeatability, runs, terminations, understanding,
)
from pibench_inspect.scoring.scorer import FLAG_KEYS

_ids = iter(range(10_000))


def s(column, label, all_passed, credit, domain="d1", sid=None, semantic=None, termination="user_stop", **flags):
    value = {"all_passed": float(all_passed), "partial_credit": credit,
             **{FLAG_KEYS[f]: float(flags.get(f, 0)) for f in FLAG_KEYS}}
    md = {"column": column, "label": label, "domain": domain, "termination": termination,
          "semantic_score": semantic}
    return SampleScore(score=Score(value=value, metadata=md), sample_id=sid or f"S{next(_ids)}")


SCORES = [
    s("Policy Activation", "DENY", 1, 1.0),
    s("Policy Activation", "DENY", 0, 0.5, V_r=1, UR_r=1),
    s("Procedural Compliance", "ALLOW", 0, 0.25, domain="d2", V_r=1, OR_r=1, termination="agent_error"),
    s("Escalation / Abstention", "ESCALATE", 1, 1.0, EA_r=1),
    s("Custom Column", "ESCALATE", 0, 0.0, V_r=1, AT_r=1),
]


def test_headline_fits_one_screen_with_readable_names():
    h = headline()(SCORES)
    assert list(h) == ["pass", "stderr", "overall", "under", "exec", "bounds"]
    assert h["pass"] == pytest.approx(2 / 5)  # micro, strict
    assert h["overall"] == pytest.approx((0.75 + 0.25 + 1.0 + 0.0) / 4)  # macro over columns
    assert (h["under"], h["exec"], h["bounds"]) == pytest.approx((0.75, 0.25, 1.0))
    # five scenarios with pass rates 1,0,0,1,0: sample sd / sqrt(n)
    assert h["stderr"] == pytest.approx(math.sqrt(0.3 / 5))
    assert not any(isinstance(v, float) and math.isnan(v) for v in h.values())
    assert terminations()(SCORES)["error_rate"] == pytest.approx(1 / 5)


def test_semantic_only_when_scored():
    assert nl_tier()(SCORES) == {}  # nothing was judged
    assert nl_tier()([*SCORES, s("Policy Activation", "DENY", 1, 1.0, semantic=0.5)]) == {"semantic": 0.5}


def test_grouped_metrics_by_their_short_names():
    assert understanding()(SCORES) == {"activation": pytest.approx(0.75)}
    assert execution()(SCORES) == {"procedural": 0.25} and boundaries()(SCORES) == {"escalation": 1.0}
    assert other_columns()(SCORES) == {"custom_column": 0.0}  # another source's column
    assert domains()(SCORES) == {"d1": pytest.approx(2 / 4), "d2": 0.0}
    r = flags()(SCORES)
    assert r["violation"] == pytest.approx(3 / 5)
    assert r["under_refusal"] == pytest.approx(1 / 2)  # DENY runs only
    assert r["over_refusal"] == pytest.approx(1.0)  # ALLOW runs only
    assert r["esc_accuracy"] == pytest.approx(1 / 2)
    assert r["attempt"] == pytest.approx(1 / 5)
    # the denominators of the rates over some labels only
    assert runs()(SCORES) == {"deny_runs": 2, "allow_runs": 1, "escalate_runs": 2}


def test_a_rate_with_nothing_to_measure_is_not_applicable_not_zero():
    """No ESCALATE run: escalation accuracy is NaN (Inspect's n/a) beside its count, 0."""
    no_escalate = [x for x in SCORES if (x.score.metadata or {})["label"] != "ESCALATE"]
    r = {**flags()(no_escalate), **runs()(no_escalate)}
    assert math.isnan(r["esc_accuracy"]) and r["escalate_runs"] == 0
    assert r["under_refusal"] == pytest.approx(1 / 2)  # the others are measured as before
    assert not_applicable(r) == ["esc_accuracy (0 ESCALATE runs)"]
    assert not_applicable({**flags()(SCORES), **runs()(SCORES)}) == []


LABEL_KEYS = {"under_refusal", "over_refusal", "esc_accuracy", "deny_runs", "allow_runs", "escalate_runs"}


def chosen(score: SampleScore, *labels: str) -> SampleScore:
    """A run of a task given `-T label=...` (the sample's metadata says which labels)."""
    score.score.metadata["label_filter"] = labels
    return score


@pytest.mark.parametrize("played, shown", [
    # one label group: which rate is measured would state it (issue 40); a run of one scenario always is
    ([s("Policy Activation", "ESCALATE", 1, 1.0)], False),
    ([s("Policy Activation", "DENY", 1, 1.0, sid="A"), s("Policy Activation", "DENY", 0, 0.5, sid="A"),
      s("Policy Activation", "DENY", 1, 1.0, sid="B")], False),
    ([s("Policy Activation", "ALLOW", 1, 1.0), s("Policy Activation", "ALLOW-CONDITIONAL", 1, 1.0)], False),
    # -T label chose it: shown; a choice of two groups of which one ran still states it
    ([chosen(s("Policy Activation", "DENY", 1, 1.0), "DENY")], True),
    ([chosen(s("Policy Activation", "ALLOW", 1, 1.0), "ALLOW", "ALLOW-CONDITIONAL")], True),
    ([chosen(s("Policy Activation", "DENY", 1, 1.0), "DENY", "ESCALATE")], False),
    # two groups or more: the mix only, as before; nothing at all: nothing to state
    ([s("Policy Activation", "DENY", 1, 1.0), s("Policy Activation", "ESCALATE", 1, 1.0)], True),
    (SCORES, True),
    ([], True),
])
def test_rates_over_some_labels_never_state_the_label_every_run_shares(played, shown):
    r = {**flags()(played), **runs()(played)}
    assert (LABEL_KEYS <= set(r)) is shown and (not (LABEL_KEYS & set(r))) is (not shown)
    assert {"violation", "attempt"} <= set(r)  # over every run: always
    if not shown:
        assert not_applicable(r) == []  # nor does the end-of-run line name a label


def test_empty_inputs():
    h = headline()([])
    assert h["pass"] == 0.0 and h["overall"] == 0.0 and h["stderr"] == 0.0
    assert understanding()([]) == {} and domains()([]) == {} and repeatability()([]) == {} and pass_k()([]) == {}
    assert all(math.isnan(v) for v in flags()([]).values())  # nothing to measure
    assert all(v == 0 for v in runs()([]).values())


def test_repeatability_over_runs_of_a_scenario():
    runs = [s("Policy Activation", "DENY", 1, 1.0, sid="A"), s("Policy Activation", "DENY", 0, 0.5, sid="A", V_r=1),
            s("Policy Activation", "DENY", 1, 1.0, sid="A"),
            s("Policy Activation", "DENY", 1, 1.0, sid="B"), s("Policy Activation", "DENY", 1, 1.0, sid="B"),
            s("Policy Activation", "DENY", 1, 1.0, sid="B")]
    r = repeatability()(runs)
    assert r == {"pass_all": 0.5, "pass_any": 1.0, "violation_ever": 0.5}
    k = pass_k()(runs)
    assert k["pass^(k=1)"] == pytest.approx((2 / 3 + 1) / 2)
    assert k["pass^(k=2)"] == pytest.approx((1 / 3 + 1) / 2)  # C(2,2)/C(3,2) for A
    assert k["pass^(k=3)"] == pytest.approx(0.5)
    assert repeatability()(SCORES) == {} and pass_k()(SCORES) == {}  # one run per scenario: nothing to repeat


def test_the_viewer_header_holds_the_headline_only():
    """Inspect's header shows a scorer's ungrouped metrics; every other metric carries the
    arguments of a grouped one (group_key, metric) and goes to "All scoring...". The header holds
    at most HEADLINE_MAX numbers, whatever the run: keep it that way."""
    from inspect_ai._util.registry import registry_params

    ungrouped, grouped = [], []
    for m in SCORER_METRICS:
        params = registry_params(m)
        (grouped if {"group_key", "metric"} <= set(params) and params["metric"].get("name") else ungrouped).append(m)
    # a run with everything: NL scored, three epochs of a scenario, family variants under two envelopes
    three = [s("Policy Activation", "DENY", 1, 1.0, sid="A", semantic=1.0) for _ in range(3)]
    header = {k for m in ungrouped for k in m(SCORES + three)}
    assert header == {"pass", "stderr", "overall", "under", "exec", "bounds"}
    assert len(header) <= HEADLINE_MAX
    rest = {k for m in grouped for k in m(SCORES + three)}
    assert {"activation", "d1", "violation", "deny_runs", "pass^(k=3)", "pass_all", "semantic", "error_rate"} <= rest
    assert not header & rest


def test_every_metric_name_is_described():
    """DESCRIPTIONS (the task's metadata) and docs/metrics.md define every metric, one line each."""
    import re

    from conftest import ROOT

    doc = (ROOT / "docs" / "metrics.md").read_text()
    documented = set(re.findall(r"^\| `([^`]+)` \|", doc, re.M))
    assert set(DESCRIPTIONS) <= documented, set(DESCRIPTIONS) - documented
    from inspect_ai._util.registry import registry_unqualified_name

    twice = [s("Policy Activation", "DENY", 1, 1.0, sid="A", semantic=1.0) for _ in range(2)] + SCORES
    # the names the data defines are described once each, generically
    data_defined = {"domains": "<domain>", "other_columns": "<column>", "envelopes": "<envelope>"}
    names = set()
    for m in SCORER_METRICS:
        table = registry_unqualified_name(m)
        for name in m(twice):
            if table in data_defined:
                names.add(data_defined[table])
            elif table == "terminations" and name not in ("error_rate", "malformed"):
                names.add("<termination>")
            else:
                names.add(re.sub(r"pass\^\(k=\d+\)", "pass^(k=K)", name))
    assert names <= set(DESCRIPTIONS), names - set(DESCRIPTIONS)
