"""A case's pressure: the tactics, closing lines and wants of its scenario under one envelope.

The envelope gives the order of the tactics and when each is played (`press`); each tactic's
line is the case's own (its `envelope:kind`, then its `kind`: the clause that decides this case,
a pivot the same rule forbids), else the envelope's, else the family's library. Closing lines
come from the case, then the envelope, then the family's user. What the user wants (the calls
that give it what it asked for) follows from the steps it pushes for, less any call of the same
tool in the compliant form the case's path makes.
"""

from __future__ import annotations

from typing import Any

from ..domain.loader import Domain
from ..scenario.pressure import guidance
from ..scenario.model import Tactic
from .cases import Case, FamilyError, pinned, rendered
from .model import Envelope, Family, Line, TacticLine


def tactic_line(family: Family, case: Case, name: str, envelope: Envelope, kind: str) -> tuple[Line, str]:
    for where, table, key in ((f"{case.combo}.tactics", case.outcome.tactics, f"{name}:{kind}"),
                              (f"{case.combo}.tactics", case.outcome.tactics, kind),
                              (f"envelopes.{name}.tactics", envelope.tactics, kind),
                              ("tactics", family.tactics, kind)):
        if key in table:
            return table[key], f"{where}.{key}"
    raise FamilyError(f"envelopes.{name}.press: no line for the tactic {kind!r} in case {case.combo} "
                      "(give it in the family's tactics, the envelope's, or the case's)")


def closing(family: Family, case: Case, name: str, envelope: Envelope) -> dict[str, str]:
    mine = case.outcome.closing
    merged = {**family.user.closing, **envelope.closing, **{k: v for k, v in mine.items() if ":" not in k},
              **{k.split(":", 1)[1]: v for k, v in mine.items() if k.startswith(f"{name}:")}}
    missing = [k for k in ("granted", "held") if not merged.get(k)]
    if missing:
        raise FamilyError(f"user.closing: needs {' and '.join(missing)} (case {case.combo}, envelope {name})")
    return {k: rendered(v, case.env, f"closing.{k}") for k, v in merged.items()}


def tactics(family: Family, case: Case, name: str, envelope: Envelope) -> list[Tactic]:
    out = []
    for step in envelope.press or []:
        line, where = tactic_line(family, case, name, envelope, step.tactic)
        spec = line if isinstance(line, TacticLine) else TacticLine(say=line)
        unknown = [t for t in spec.asks if t not in (family.available_tools or [])]
        if family.available_tools is not None and unknown:
            raise FamilyError(f"{where}.asks: {', '.join(unknown)} not offered (available_tools)")
        when = spec.when or played_when(case, step.when, own=where.startswith(f"{case.combo}."))
        out.append(Tactic(tactic=step.tactic, say=rendered(spec.say, case.env, where), when=when, asks=spec.asks))
    return out


# what "held" (the press default) means for a line, by whose it is and what the case expects
DECIDED_AGAINST = ["refused", "escalated", "conditional"]
NOT_GRANTED_AT_ALL = ["undecided", "refused", "escalated"]


def played_when(case: Case, when: list[str], own: bool) -> list[str]:
    """The acts that let a line be played when neither it nor its press step says more than
    `held`. A case's own line answers the rule that decides the case (the clause quoted back, a
    pivot the same rule forbids), so it waits until the agent has decided against the request;
    an envelope's or the family's line asks for the thing itself, so in a case granted with a
    condition it is not played once the conditional grant is made."""
    if when != ["held"]:
        return when
    if own and case.outcome.label != "ALLOW":
        return DECIDED_AGAINST
    if not own and case.outcome.label == "ALLOW-CONDITIONAL":
        return NOT_GRANTED_AT_ALL
    return when


def wants(family: Family, domain: Domain, case: Case, pushed_calls: list[dict[str, Any]],
          asked: list[str] = ()) -> list[dict[str, Any]]:
    wanted = case.outcome.wants if case.outcome.wants is not None else family.user.wants
    if wanted is not None:
        calls = [{"name": family.steps[s].tool,
                  "arguments": rendered(family.steps[s].args, case.env, f"steps.{s}.args")} for s in wanted]
        steps = [family.steps[s] for s in wanted]
    else:
        calls = [c for c in pushed_calls if domain.tool_index[c["name"]].kind == "write"]
        steps = [None] * len(calls)
    compliant = {}
    for sid, call in zip(case.path, case.calls):
        compliant[call["name"]] = pinned(family.steps[sid], call["arguments"], domain)
    out: list[dict[str, Any]] = []
    for call, step in zip(calls, steps):
        spec = domain.tool_index[call["name"]]
        skip = set(spec.free_text) | set(spec.filters) | (set(step.unpinned) if step else set())
        asked = {k: v for k, v in call["arguments"].items() if k not in skip}
        want: dict[str, Any] = {"tool": call["name"]}
        if call["name"] in compliant and compliant[call["name"]] != asked:
            want["unless"] = compliant[call["name"]]
        if want not in out:
            out.append(want)
    # a tool a tactic asks for that the case's own path calls in a conditional or refused case:
    # that compliant call is not what the user pushes for (in an approval it is what it wanted)
    for tool in dict.fromkeys(asked) if case.outcome.label != "ALLOW" else ():
        if tool in compliant and not any(w["tool"] == tool for w in out):
            out.append({"tool": tool, "unless": compliant[tool]})
    return out


def user_pressure(family: Family, domain: Domain, case: Case, name: str, envelope: Envelope,
                  pushed_calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The user_simulation keys of a conditional script (`press`), or of the older fixed one."""
    env = case.env
    if envelope.press is None:
        return {"pressure_script": rendered(envelope.guidance, env, f"envelopes.{name}.guidance"),
                "scripted_turns": rendered(envelope.turns, env, f"envelopes.{name}.turns")}
    played = tactics(family, case, name, envelope)
    ends = closing(family, case, name, envelope)
    return {
        "pressure_script": guidance(played, ends),
        "tactics": [t.model_dump(exclude_defaults=True) | {"when": t.when} for t in played],
        "closing": ends,
        "wants": wants(family, domain, case, pushed_calls, [t for p in played for t in p.asks]),
    }
