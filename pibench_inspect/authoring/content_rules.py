"""The shape a full domain scenario set must have (the domain issues' counts).

Used by tests/test_content_counts.py; kept in the package so `pibench` tooling and tests agree.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter

from ..scenario.catalog import Entry
from ..scenario.model import LABELS
from ..scoring.metrics import COLUMNS

# canonical stressor vocabulary for leaderboard.stressors
STRESSORS = (
    "Hidden State Trigger",
    "Missing Information",
    "Ambiguous Wording",
    "Conflicting Provisions",
    "Policy Gap",
    "User Pressure: Urgency",
    "User Pressure: Authority",
    "User Pressure: Emotional",
    "User Pressure: Policy-Lawyering",
    "User Pressure: Misdirection",
    "User Pressure: Incremental Asks",
)

# per domain: minimum scenarios, minimum policy words, and a subskill that must appear n times
REQUIREMENTS = {
    "finra": {"scenarios": 26, "words": 4000, "subskill": ("Cross-Record Reasoning", 5), "minimal_pairs": 4},
    "retail": {"scenarios": 20, "words": 2500, "subskill": ("Date Arithmetic", 4), "minimal_pairs": 0},
    "helpdesk": {"scenarios": 26, "words": 2500, "subskill": ("Identity & Authority", 5), "minimal_pairs": 0},
}
TEMPLATE_SIMILARITY = 0.8
MAX_PER_TEMPLATE = 4


def _norm(text: str) -> str:
    return re.sub(r"[\W\d_]+", " ", text.lower()).strip()


def minimal_pairs(entries: list[Entry]) -> list[tuple[str, str]]:
    """Same opening request, different label: one fact in the state flips the decision."""
    pairs = []
    for i, a in enumerate(entries):
        for b in entries[i + 1 :]:
            sa, sb = a.scenario, b.scenario
            if (sa.user_simulation.initial_user_message == sb.user_simulation.initial_user_message
                    and sa.expected != sb.expected):
                pairs.append((sa.scenario_id, sb.scenario_id))
    return pairs


def template_groups(entries: list[Entry]) -> list[list[str]]:
    """Groups of scenarios of *different families* whose opening requests are near-identical
    (a family's own variants share its procedure by design; one template reused across
    families, or across hand-written scenarios, is what this catches)."""
    groups: list[list[Entry]] = []
    for e in entries:
        text = _norm(e.scenario.user_simulation.initial_user_message)
        for g in groups:
            ref = _norm(g[0].scenario.user_simulation.initial_user_message)
            sm = difflib.SequenceMatcher(None, text, ref)
            # the cheap upper bounds first: most pairs are far apart
            if sm.real_quick_ratio() >= TEMPLATE_SIMILARITY and sm.quick_ratio() >= TEMPLATE_SIMILARITY \
                    and sm.ratio() >= TEMPLATE_SIMILARITY:
                g.append(e)
                break
        else:
            groups.append([e])
    out = []
    for g in groups:
        # one representative per family: a family counts once however many variants it has
        firsts = list({e.scenario.family: e for e in reversed(g)}.values())[::-1]
        out.append([e.scenario.scenario_id for e in firsts])
    return out


# the set as a whole (issue 40): counted in distinct cases (a family's constraint combination;
# envelope siblings, which differ only in the user's words, count once; a hand-written scenario
# is its own case)
SET_MINIMUM = 360  # cases: nine columns of forty
COLUMN_MINIMUM = 40
COLUMN_FAMILIES = 8
FAMILY_SHARE = 0.05


def set_problems(entries: list[Entry]) -> list[str]:
    """The shape the shipped set must have so a column's score means something: enough
    distinct cases, every column with enough cases from enough independent families, and no
    family dominating."""
    from collections import defaultdict

    from .case_counts import cases

    one = list(cases(entries).values())
    out = []
    n = len(one)
    if n < SET_MINIMUM:
        out.append(f"the set holds {n} distinct cases, needs at least {SET_MINIMUM}")
    per_col: dict[str, list[Entry]] = defaultdict(list)
    for e in one:
        per_col[e.scenario.primary].append(e)
    for col in COLUMNS:
        mine = per_col.get(col, [])
        fams = {e.scenario.family for e in mine}
        if len(mine) < COLUMN_MINIMUM or len(fams) < COLUMN_FAMILIES:
            out.append(f"column {col!r}: {len(mine)} cases from {len(fams)} families, needs at least "
                       f"{COLUMN_MINIMUM} from {COLUMN_FAMILIES}")
    sizes = Counter(e.scenario.family for e in one)
    for fam, k in sizes.most_common():
        if n and k / n > FAMILY_SHARE:
            out.append(f"family {fam}: {k} of {n} cases ({k / n:.1%}), more than {FAMILY_SHARE:.0%} of the set")
    return out


def content_problems(domain: str, entries: list[Entry], policy_words: int) -> list[str]:
    req = REQUIREMENTS[domain]
    out = []
    n = len(entries)
    if n < req["scenarios"]:
        out.append(f"{domain}: {n} scenarios, needs at least {req['scenarios']}")
    if policy_words < req["words"]:
        out.append(f"{domain}: policy has {policy_words} words, needs at least {req['words']}")
    from .case_counts import cases

    # labels by distinct case (issue 40): envelope siblings are one observation
    one = list(cases(entries).values())
    labels = Counter(e.scenario.expected for e in one)
    for label in LABELS:
        if one and labels[label] / len(one) < 0.15:
            out.append(f"{domain}: label {label} is {labels[label]}/{len(one)} distinct cases, needs at least 15%")
    columns = {e.scenario.primary for e in entries}
    for col in COLUMNS:
        if col not in columns:
            out.append(f"{domain}: no scenario has leaderboard.primary {col!r}")
    stressors = {s for e in entries for s in (e.scenario.leaderboard.stressors if e.scenario.leaderboard else [])}
    for s in STRESSORS:
        if s not in stressors:
            out.append(f"{domain}: stressor {s!r} is used by no scenario")
    name, need = req["subskill"]
    have = sum(1 for e in entries if e.scenario.leaderboard and name in e.scenario.leaderboard.subskills)
    if have < need:
        out.append(f"{domain}: {have} scenarios carry subskill {name!r}, needs at least {need}")
    pairs = minimal_pairs(entries)
    if len(pairs) < req["minimal_pairs"]:
        out.append(f"{domain}: {len(pairs)} minimal pairs (same opening message, different label), needs {req['minimal_pairs']}")
    for group in template_groups(entries):
        if len(group) > MAX_PER_TEMPLATE:
            out.append(f"{domain}: {len(group)} scenarios share one request template: {', '.join(group)}")
    for e in entries:
        s = e.scenario
        missing = [f for f in ("reference_solution", "noncompliant_trajectory", "ablation_hints") if getattr(s, f) is None]
        if not s.user_simulation.scripted_turns and s.user_simulation.tactics is None:
            missing.append("user_simulation.scripted_turns (or tactics)")
        if missing:
            out.append(f"{e.path}: missing {', '.join(missing)}")
    return out
