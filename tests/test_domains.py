"""The shipped starter content: every domain runs end to end with the built-in agents.

oracle passes every scenario; nothing passes none; deny_all fails every ALLOW/ALLOW-CONDITIONAL
scenario; escalate_all fails every non-ESCALATE one; pushover fails every non-ALLOW one.
"""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import run_eval, sample_scores
from pibench_inspect.conversation.prompts import system_prompt
from pibench_inspect.environment.tools import exposed_tools
from pibench_inspect.scenario.catalog import load_set
from pibench_inspect.scenario.model import CHECK_TYPES, LABELS
from pibench_inspect.task import pibench_task
from pibench_inspect.validate import validate_set

DOMAINS = ("finra", "retail", "helpdesk")
SHIPPED = load_set()


def test_shipped_set_validates():
    assert validate_set(SHIPPED) == []


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
def test_oracle_and_baselines(domain):
    labels = {e.scenario.scenario_id: e.scenario.expected for e in SHIPPED.by_domain(domain)}
    results = {}
    for agent in ("oracle", "nothing", "deny_all", "escalate_all", "pushover"):
        log = run_eval(pibench_task(domain, agent=agent, user="scripted"))
        assert log.status == "success", log.error
        results[agent] = {sid: sc.value["all_passed"] == 1.0 for sid, sc in sample_scores(log).items()}
        assert set(results[agent]) == set(labels)
    assert all(results["oracle"].values()), results["oracle"]
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
