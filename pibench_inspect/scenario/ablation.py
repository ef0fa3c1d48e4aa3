"""Ablations (`-T ablation=...`): the same scenarios with one factor taken away or added.

The original pi-bench wrote `ablation_hints` into 70 of its 71 scenarios and never ran them.
Here they run, on any scenario set (the original's included):

* `no_pressure`: the user asks plainly and does not press. A family variant takes the user of
  its family's baseline envelope (same case, same slot values, the neutral opening and turns);
  any other scenario opens with `ablation_hints.no_pressure_user_message` and has no pressure
  script and no scripted turns (its facts table still answers what the agent asks).
* `structured_policy`: the agent's task text carries `ablation_hints.structured_policy`, a
  structured summary of the rules that decide the case, after the policy.

The checks are never changed: an ablation changes what the agent is told, not how it is judged.
A scenario without the hint an ablation needs cannot be ablated; it is left out of the run with
a logged reason (never run unablated under the ablation's name).
"""

from __future__ import annotations

from typing import Iterable, Literal

from .model import Scenario

Ablation = Literal["no_pressure", "structured_policy"]
ABLATIONS: tuple[str, ...] = ("no_pressure", "structured_policy")


def baseline_sibling_id(s: Scenario) -> str | None:
    """The id of the baseline-envelope variant of the same family and case, if generated."""
    m = s.meta
    if m.family and m.combo and m.envelope and m.envelope != "baseline":
        return f"{m.family}.{m.combo}.baseline"
    return None


def missing_hint(s: Scenario, ablation: str, siblings: dict[str, Scenario]) -> str | None:
    """Why the scenario cannot be ablated this way, or None when it can."""
    hints = s.ablation_hints
    if ablation == "structured_policy":
        if not (hints and hints.structured_policy and hints.structured_policy.strip()):
            return "no ablation_hints.structured_policy"
        return None
    if s.meta.envelope == "baseline":
        return None
    sibling = baseline_sibling_id(s)
    if sibling and sibling in siblings:
        return None
    if not (hints and hints.no_pressure_user_message and hints.no_pressure_user_message.strip()):
        return "no ablation_hints.no_pressure_user_message (and no baseline variant of its family in the set)"
    return None


def ablate(s: Scenario, ablation: str, siblings: dict[str, Scenario]) -> Scenario:
    """The scenario as the agent meets it under the ablation (check `missing_hint` first)."""
    if ablation == "structured_policy":
        out = s.model_copy()
        out.set_policy_hint(s.ablation_hints.structured_policy.strip())  # type: ignore[union-attr]
        return out
    if s.meta.envelope == "baseline":
        return s
    sibling = siblings.get(baseline_sibling_id(s) or "")
    if sibling is not None:
        sim = sibling.user_simulation
    else:
        sim = s.user_simulation.model_copy(update={
            "initial_user_message": s.ablation_hints.no_pressure_user_message.strip(),  # type: ignore[union-attr]
            "pressure_script": [],
            "scripted_turns": [] if s.user_simulation.tactics is None else None,
            # a conditional script keeps its closing lines and plays no tactic
            "tactics": None if s.user_simulation.tactics is None else [],
        })
    return s.model_copy(update={"user_simulation": sim})


def ablate_all(scenarios: Iterable[Scenario], ablation: str, siblings: dict[str, Scenario]
               ) -> tuple[list[Scenario], dict[str, str]]:
    """(ablated scenarios, {scenario id: why it was left out})."""
    kept, skipped = [], {}
    for s in scenarios:
        why = missing_hint(s, ablation, siblings)
        if why:
            skipped[s.scenario_id] = why
        else:
            kept.append(ablate(s, ablation, siblings))
    return kept, skipped
