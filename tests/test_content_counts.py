"""The domain issues' counts: size, label balance, columns, stressors, pairs, templates.

Every count is asserted for every shipped domain.
"""

from __future__ import annotations

import pytest

from conftest import shipped
from pibench_inspect.authoring.content_rules import REQUIREMENTS, content_problems

SHIPPED = shipped()


@pytest.mark.parametrize("domain", sorted(REQUIREMENTS))
@pytest.mark.slow
def test_domain_meets_its_counts(domain):
    entries = SHIPPED.by_domain(domain)
    words = len(entries[0].domain.policy_text.split()) if entries else 0
    assert content_problems(domain, entries, words) == []


def test_the_set_has_enough_cases_per_column_from_enough_families():
    """360+ distinct cases, every column >= 40 cases from >= 8 families, no family above 5% of the
    cases (issue 40: envelope siblings count once)."""
    from pibench_inspect.authoring.content_rules import set_problems

    assert set_problems(list(SHIPPED.entries.values())) == []
