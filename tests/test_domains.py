"""The shipped domains: every scenario runs end to end; the built-in agents score as the gates demand.

oracle passes every scenario; nothing passes none; deny_all fails every ALLOW/ALLOW-CONDITIONAL
scenario; escalate_all fails every non-ESCALATE one; pushover fails every non-ALLOW one.
"""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import ROOT, run_eval, sample_scores, shipped
from pibench_inspect.authoring.floor import floor_table
from pibench_inspect.conversation.prompts import system_prompt
from pibench_inspect.environment.tools import exposed_tools
from pibench_inspect.authoring.gates import play_agent
from pibench_inspect.scenario.model import CHECK_TYPES, LABELS
from pibench_inspect.scoring.record import partial_credit
from conftest import registered
from pibench_inspect.authoring.validate import validate_set

DOMAINS = ("finra", "retail", "helpdesk")
SHIPPED = shipped()


@pytest.mark.slow
def test_shipped_set_validates():
    """Every gate passes on every shipped scenario: the static and dynamic gates, information
    flow, and the mutation gate (no surviving mutant)."""
    assert validate_set(SHIPPED) == []


@pytest.mark.slow
def test_published_floor_is_current():
    """docs/baselines.md is what `pibench floor` writes for the shipped set. Kept next to
    test_shipped_set_validates: one module runs in one worker, so the floor reuses the baseline
    plays and mutation-gate results validate just computed (per-process, per-case caches) instead
    of playing the whole set a second time."""
    committed = (ROOT / "docs" / "baselines.md").read_text()
    domains = sorted({e.domain.name for e in SHIPPED.entries.values()})
    assert committed == floor_table(SHIPPED, domains), "run: pibench floor --out docs/baselines.md"


@pytest.mark.parametrize("domain", DOMAINS)
def test_each_domain_has_starter_scenarios(domain):
    assert len(SHIPPED.by_domain(domain)) >= 3


def test_starter_content_covers_every_label_and_check_type():
    labels = Counter(e.scenario.expected for e in SHIPPED.entries.values())
    assert set(labels) == set(LABELS)
    used = set()
    for e in SHIPPED.entries.values():
        c = e.scenario.criteria
        used |= {x.type for x in c.policy_checks} | {x.type for x in c.state_field_checks} | {x.type for x in c.nl_judge_checks}
    # escalation_attempted only means something in hard-gate runs; tests/test_checks.py covers it
    assert set(CHECK_TYPES) - used <= {"escalation_attempted"}


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.slow
def test_oracle_passes_every_scenario_through_inspect(domain):
    log = run_eval(registered(domain, agent="oracle", user="scripted"), max_samples=32)
    assert log.status == "success", log.error
    scores = sample_scores(log)
    assert set(scores) == {e.scenario.scenario_id for e in SHIPPED.by_domain(domain)}
    assert all(sc.value["all_passed"] == 1.0 for sc in scores.values()), {k: v.explanation for k, v in scores.items() if not v.value["all_passed"]}
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert metrics["pass"] == 1.0
    # the state mapping's bookkeeping (a keyed row's `_key`) never reaches the agent
    results = [m.text for s in log.samples for m in s.messages if m.role == "tool"]
    assert results and not [r for r in results if '"_key"' in r]


@pytest.mark.slow
def test_offline_plays_match_inspect_runs():
    """The gates play agents offline; on a sample of scenarios that must agree with real runs."""
    picks = [SHIPPED.by_domain(d)[i] for d in DOMAINS for i in (0, 5)]
    ids = ",".join(e.scenario.scenario_id for e in picks)
    for agent in ("pushover", "deny_all"):
        scores = sample_scores(run_eval(registered(agent=agent, user="scripted", scenarios=ids), max_samples=16))
        for e in picks:
            sc = scores[e.scenario.scenario_id]
            offline = play_agent(e, agent)
            assert (sc.value["all_passed"] == 1.0) == offline.all_passed, (agent, e.scenario.scenario_id)
            # the value is rounded for the viewer; the record's `credit` is exact
            assert partial_credit(sc.value, sc.metadata) == pytest.approx(offline.partial_credit), (agent, e.scenario.scenario_id)


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.slow
def test_baselines_fail_where_they_must(domain):
    labels = {e.scenario.scenario_id: e.scenario.expected for e in SHIPPED.by_domain(domain)}
    results = {agent: {e.scenario.scenario_id: play_agent(e, agent).all_passed for e in SHIPPED.by_domain(domain)}
               for agent in ("nothing", "deny_all", "escalate_all", "pushover")}
    assert not any(results["nothing"].values())
    for sid, label in labels.items():
        if label in ("ALLOW", "ALLOW-CONDITIONAL"):
            assert not results["deny_all"][sid], sid
        if label != "ESCALATE":
            assert not results["escalate_all"][sid], sid
        if label != "ALLOW":
            assert not results["pushover"][sid], sid


@pytest.mark.parametrize("sid", sorted(SHIPPED.entries))
def test_agent_visible_text_hides_label_notes_and_checks(sid):
    entry = SHIPPED.entries[sid]
    s, d = entry.scenario, entry.domain
    visible = "\n".join(
        [system_prompt(s, d), s.user_simulation.initial_user_message]
        + [t.description for t in exposed_tools(d, s)]
    )
    assert s.meta.notes.strip() not in visible
    assert s.scenario_id not in visible
    for c in s.criteria.nl_judge_checks:
        assert c.judge_question not in visible
    # the expected label may appear only in the decision-contract glossary, never as "the answer"
    assert f"expected decision is {s.expected}".lower() not in visible.lower()
