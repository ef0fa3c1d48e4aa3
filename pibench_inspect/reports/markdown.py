"""report.md: what a reader needs to trust and use a result, per agent and side by side."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import TYPE_CHECKING, Any

from ..scenario.model import LABELS
from ..scoring.metrics import COLUMNS, FLAG_RATES, GROUPS
from .stats import PRESSURE_STATS
from .usage import ROLES, combined

if TYPE_CHECKING:
    from .agent_result import AgentResult
    from .side_by_side import SideBySide

FLAG_NAMES = {
    "violation_rate": "violation (V_r)", "under_refusal_rate": "under-refusal (UR_r, DENY runs)",
    "over_refusal_rate": "over-refusal (OR_r, ALLOW runs)", "escalation_accuracy_rate": "escalation accuracy (EA_r, ESCALATE runs)",
    "attempt_rate": "forbidden tool attempted (AT_r)",
}
TOP_MISSED = 15


def cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def table(head: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(cell(x) for x in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def ci_text(ci: dict[str, Any], key: str) -> list[str]:
    c = ci.get(key)
    if not c:
        return ["—", "no runs", "0"]
    return [pct(c["value"]), f"[{c['low']:.3f}, {c['high']:.3f}]", str(c["n_scenarios"])]


def status_line(a: AgentResult) -> str:
    m = a.payload["results"][0]["metrics"]
    if not a.rows:
        return "**This log holds no samples: there is nothing to score.**\n"
    line = f"{m['total_scenarios']} runs ({len({r['scenario_id'] for r in a.rows})} scenarios): {m['completed']} completed, {m['errors']} errored."
    if not m["completed"]:
        reasons = Counter(r.get("error", "") for r in a.rows)
        line += "\n\n**Every run ended on an error, so no score is given.** Errors: " + "; ".join(
            f"{cell(k)} ({n})" for k, n in reasons.most_common(3))
    elif m["errors"]:
        line += " Errored runs are left out of every score (and count in the leaderboard's task rewards as 0)."
    return line + "\n"


def played_by_people(a: AgentResult) -> bool:
    return bool(a.logs) and all(x.played_by_person for x in a.logs)


def people_note(a: AgentResult) -> str:
    """Runs a person played (`pibench play`) are a baseline row of their own: say so."""
    if not played_by_people(a):
        return ""
    played = len({r["scenario_id"] for r in a.rows})
    what = ("**Human baseline:** {n} `pibench play` session(s) of people playing the agent" if a.agent == "human"
            else "**Against people:** {n} `pibench play` session(s) of people playing the user against this agent")
    return (what.format(n=len(a.logs)) + f", on {played} scenario(s). A session is one scenario, so these scores "
            "describe the scenarios played, not the whole set (see docs/baselines.md, Human baselines).\n")


def column_name(a: AgentResult) -> str:
    return "human (baseline)" if played_by_people(a) and a.agent == "human" else a.agent


def user_cell(user: dict[str, Any]) -> str:
    """The simulated user and, for an LLM user, the settings it actually generated with."""
    name = ", ".join(user["models"]) or user["mode"]
    cfg = user["generate_config"]
    if cfg.get("temperature") is None and cfg.get("seed") is None:
        return name
    return f"{name} (T={cfg['temperature']}, seed={cfg['seed']})"


def judge_cell(judge: dict[str, Any]) -> str:
    """Who judged the NL checks, with its temperature; or, in plain words, that no judge ran
    and why (a keyless run, `-T judge=off`, no NL check in the scenarios run)."""
    if judge["models"]:
        temperature = (judge.get("generate_config") or {}).get("temperature")
        return ", ".join(judge["models"]) + ("" if temperature is None else f" (T={temperature})")
    tiers = judge["nl_tier"]
    why = sorted({t.split(": ", 1)[1].split(" (")[0] for t in tiers if t.startswith("not_scored: ")})
    if why:
        return f"no judge ran ({'; '.join(why)}): NL checks not scored"
    if "scored" in tiers:
        return "no judge model: NL checks recorded as judge errors"
    return "no judge needed (no NL checks)" if tiers else "no judge ran"


def provenance_md(a: AgentResult) -> str:
    prov = a.payload["pibench_inspect"]["provenance"]
    rows = []
    for lp in prov["logs"]:
        s = lp["scenario_set"]
        mods = lp["models"]
        rows.append([
            lp["log"].rsplit("/", 1)[-1], lp["status"], (s["sha256"] or "unavailable")[:16], s["source"],
            f"{mods['agent']['agent']} / {mods['agent']['model']} {mods['agent']['generate_config'] or ''}".strip(),
            user_cell(mods["user"]),
            judge_cell(mods["judge"]), lp["epochs"], lp["inspect_ai_version"],
        ])
    notes = sorted({lp["scenario_set"].get("note", "") for lp in prov["logs"]} - {""})
    return (f"pibench-inspect {prov['pibench_inspect_version']}; scenario-set hash is sha256 of scenarios/ and domains/"
            + (f" ({'; '.join(notes)})" if notes else "") + ".\n\n"
            + table(["log", "status", "scenario set", "source", "agent / model", "user", "judge", "epochs", "inspect"], rows))


def headline(a: AgentResult) -> str:
    m = a.payload["results"][0]["metrics"]
    ci = a.ci
    rows = [["**overall score**", *ci_text(ci, "overall_score")], ["**compliance rate**", *ci_text(ci, "compliance_rate")]]
    rows += [[f"group: {g}", *ci_text(ci, g)] for g in GROUPS]
    rows += [[f"column: {c}", *ci_text(ci, c)] for c in COLUMNS]
    sem = [r["semantic_score"] for r in a.rows if r["status"] == "completed" and r["semantic_score"] is not None]
    rows.append(["semantic (NL judge)", pct(sum(sem) / len(sem)) if sem else "not scored", "", str(len(sem))])
    completed = [r for r in a.rows if r["status"] == "completed"]
    for k, v in m["event_flag_rates"].items():
        labels = FLAG_RATES.get(k, (None, None))[1]
        pool = [r for r in completed if labels is None or r.get("label") in labels]
        # an empty denominator is not a 0: the payload keeps the original's 0.0, the report says n/a
        value = pct(v) if pool else f"n/a (0 {' or '.join(sorted(labels or ()))} runs)"
        rows.append([f"flag: {FLAG_NAMES.get(k, k)}", value, "", str(len({r['scenario_id'] for r in pool}))])
    return table(["statistic", "value", "95% CI", "scenarios"], rows)


def repeatability(a: AgentResult) -> str:
    if not a.pass_k or max(a.pass_k) < 2:
        return ""
    rep = a.payload["results"][0]["metrics"].get("repeatability", {}).get("aggregate", {})
    out = "### Repeatability\n\n" + table(["k", "pass^k", "scenarios"],
                                           [[k, pct(v["pass_hat_k"]), v["scenarios"]] for k, v in a.pass_k.items()])
    out += "\npass^k: the chance that k runs of a scenario all pass (unbiased C(c,k)/C(n,k) per scenario, averaged).\n\n"
    out += table(["PolicyPassAll", "PolicyPassAny", "ViolationEver"],
                 [[pct(rep.get("policy_pass_all_rate")), pct(rep.get("policy_pass_any_rate")), pct(rep.get("violation_ever_rate"))]])
    return out + "\n"


def power(a: AgentResult) -> str:
    """How much each column can tell: its distinct cases, families and interval half-width."""
    rows = [[p["column"], p.get("cases", p["scenarios"]), p["scenarios"], p["families"], p["runs"], pct(p["score"]),
             "—" if p["half_width"] is None else f"±{p['half_width']:.3f}"] for p in a.power]
    return table(["column", "cases", "scenarios", "families", "runs", "score", "95% half-width"], rows) + (
        "\nCases are distinct cases, not scenarios: a family's constraint combination counts once however "
        "many pressure envelopes it is played in (its envelope siblings differ only in the user's words). "
        "A family's variants are not independent: the interval resamples families, so a column's "
        "precision grows with its families more than with its scenarios. Two agents whose scores differ "
        "by less than about the half-width cannot be told apart on that column "
        "(`pibench compare` pairs them on the same scenarios, which needs fewer).\n")


def pressure(a: AgentResult) -> str:
    view = a.pressure
    parts = []
    if view:
        rows = [[e, iv["runs"], iv["families"], f"{iv['value']:.3f} [{iv['low']:.3f}, {iv['high']:.3f}]"]
                for e, iv in view["by_envelope"].items() if iv]
        parts.append(table(["envelope", "runs", "families", "compliance [95% CI]"], rows))
        cost = view.get("pressure_cost")
        flip = view.get("decision_flip_rate")
        parts.append(
            f"\nPressure cost (baseline compliance minus compliance under pressure, over {cost['cases']} cases run "
            f"both ways): **{cost['value']:+.3f}** [{cost['low']:+.3f}, {cost['high']:+.3f}]. " if cost else
            "\nNo case ran both with and without pressure, so no pressure cost. ")
        if flip is not None:
            parts.append(f"Decision flip rate (cases whose decision changes with the envelope, of {view['cases']}): "
                         f"**{flip:.3f}**.\n")
        if a.files.get("envelopes"):
            parts.append(f"\n![envelopes]({a.files['envelopes']})\n")
    if a.ablation:
        ab = a.ablation
        parts.append(
            f"\nWith and without pressure (`-T ablation=no_pressure`), on {ab['scenarios']} scenarios both runs "
            f"completed: compliance {ab['compliance_with_pressure']:.3f} with the scenario's pressure, "
            f"{ab['compliance_without_pressure']:.3f} without; pressure cost **{ab['pressure_cost']:+.3f}**, "
            f"decision flip rate **{ab['decision_flip_rate']:.3f}**."
            + (f" Left out (in one run only): {', '.join(ab['only_in_one'][:10])}." if ab["only_in_one"] else "") + "\n")
    return "\n".join(parts)


def by_group_of(a: AgentResult, key: str, order: list[str] | None = None) -> str:
    acc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in a.rows:
        if r["status"] == "completed":
            acc[str(r.get(key) or "unknown")].append(r)
    names = [n for n in (order or []) if n in acc] + sorted(n for n in acc if n not in (order or []))
    rows = []
    for n in names:
        runs = acc[n]
        passed = sum(bool(r["all_passed"]) for r in runs)
        decisions = Counter(r["canonical_decision"] or "INVALID" for r in runs)
        rows.append([n, len(runs), passed, pct(passed / len(runs)),
                     pct(sum(r["partial_credit"] for r in runs) / len(runs)),
                     ", ".join(f"{d} {c}" for d, c in decisions.most_common())])
    return table([key.replace("_", " "), "runs", "passed", "compliance", "mean partial credit", "decisions"], rows) if rows else "no completed runs\n"


def missed_checks(a: AgentResult) -> str:
    miss: dict[tuple[str, str], dict[str, Any]] = {}
    for r in a.rows:
        for c in r["checks"]:
            key = (r["scenario_id"], str(c.get("outcome_id")))
            e = miss.setdefault(key, {"runs": 0, "missed": 0, "check": c, "row": r})
            e["runs"] += c.get("passed") is not None
            e["missed"] += c.get("passed") is False
    top = sorted((e for e in miss.values() if e["missed"]), key=lambda e: (-e["missed"], e["row"]["scenario_id"]))[:TOP_MISSED]
    if not top:
        return "No check failed.\n"
    rows = []
    for e in top:
        c, r = e["check"], e["row"]
        clause = "; ".join(c.get("clauses") or []) or (
            "not named by the check" if r["scenario_file_found"]
            else "unknown (scenario file not found, or not readable inside the run's source)")
        rows.append([f"{r['scenario_id']} / {c.get('outcome_id')}", c.get("type"), f"{e['missed']}/{e['runs']}",
                     clause, c.get("notes") or "—", c.get("detail", "")])
    return table(["scenario / check", "type", "missed/runs", "clause tested", "check notes", "detail"], rows)


def money(u: dict[str, Any]) -> str:
    if u["cost"] is None:
        return "tokens only (no price known)" if u["calls"] else "—"
    return f"${u['cost']:.4f}" + ("" if u["cost_complete"] else " (some calls unpriced)")


def usage_md(a: AgentResult) -> str:
    if not any(u["calls"] or u["total_tokens"] for u in a.usage.values()):
        return "No model calls were made (keyless run): 0 tokens, no cost.\n"
    rows = [[role, ", ".join(u["models"]) or "—", u["calls"], u["input_tokens"], u["output_tokens"], u["total_tokens"],
             f"{u.get('seconds', 0.0):.1f}", money(u)]
            for role, u in a.usage.items()]
    out = table(["role", "models", "calls", "input tokens", "output tokens", "total tokens", "model time (s)", "cost"], rows)
    per = [[r["scenario_id"], r["trial"], *(r["usage"][x]["total_tokens"] for x in ROLES),
            money(combined(r["usage"]))] for r in a.rows]
    return out + "\n<details><summary>per sample</summary>\n\n" + table(
        ["scenario", "trial", "agent tokens", "user tokens", "judge tokens", "cost"], per) + "\n</details>\n"


def agent_section(a: AgentResult, heading: str) -> str:
    parts = [f"{heading} {a.agent}\n", status_line(a), people_note(a), "### Provenance\n", provenance_md(a)]
    if not any(r["status"] == "completed" for r in a.rows):
        parts.append(f"\nLeaderboard payload: `{a.files.get('results')}` (all runs errored or none).\n")
        return "\n".join(parts)
    parts += [
        "### Headline\n", headline(a),
        f"95% intervals: {a.payload['pibench_inspect']['confidence_intervals']['method']}; overall and groups "
        "are means over columns, compliance is over runs.\n",
        repeatability(a),
        "### Power per column (distinct cases)\n", power(a),
        *(["### User pressure\n", pressure(a)] if a.pressure or a.ablation else []),
        "### By domain\n", by_group_of(a, "domain"),
        "### By label\n", by_group_of(a, "label", list(LABELS)),
        "### Checks most often missed\n", missed_checks(a),
        "### Tokens and cost\n", usage_md(a),
        "### Files\n",
        f"Leaderboard payload (submit as is): `{a.files.get('results')}`\n",
        f"![columns]({a.files.get('columns')})\n\n![decisions]({a.files.get('confusion')})\n",
    ]
    return "\n".join(p for p in parts if p)


def comparison(results: list[AgentResult], cis: dict[str, dict[str, Any]]) -> str:
    """The runs' statistics side by side, each from `cis` (run label -> intervals on the
    scenarios compared)."""
    keys = ["overall_score", "compliance_rate", *GROUPS, *COLUMNS]
    if any(k in (cis.get(a.agent) or {}) for a in results for k in PRESSURE_STATS):
        keys[2:2] = PRESSURE_STATS  # what pressure costs each agent, on the cases run both ways
    rows = [[k.replace("_", " ")] + [
        (f"{ci[k]['value']:.3f} [{ci[k]['low']:.2f}, {ci[k]['high']:.2f}]" if k in (ci := cis.get(a.agent) or {}) else "—")
        for a in results]
        for k in keys]
    return table(["statistic", *(column_name(a) for a in results)], rows)


def ladder(group: SideBySide) -> str:
    """Compliance under each envelope, agent by agent, with what pressure costs each: the runs
    side by side on the same cases, so an agent that gives in shows as a drop from its baseline."""
    envs = sorted({e for v in group.ladder.values() for e in v["by_envelope"]}, key=lambda e: (e != "baseline", e))
    rows = []
    for a in group.runs:
        view = group.ladder.get(a.agent)
        if not view:
            continue
        cells = [(f"{iv['value']:.2f} [{iv['low']:.2f}, {iv['high']:.2f}]" if (iv := view["by_envelope"].get(e))
                  else "—") for e in envs]
        cost = view.get("pressure_cost")
        tactics = view.get("tactics")
        rows.append([column_name(a), *cells,
                     f"**{cost['value']:+.3f}** [{cost['low']:+.3f}, {cost['high']:+.3f}]" if cost else "—",
                     f"{tactics:.1f}" if tactics is not None else "—"])
    text = ["### User pressure, agent by agent\n",
            "Compliance under each envelope (95% intervals, families resampled) and the pressure cost: "
            "baseline compliance minus compliance under pressure, on the cases run both ways. The last column is "
            "how many pressure tactics the scripted user played per pressure run (`pibench:tactics`; none with "
            "an LLM user). `pibench compare A B` says which of these differences are distinguishable.\n",
            table(["run", *envs, "pressure cost [95% CI]", "tactics played"], rows)]
    if group.ladder_chart:
        text.append(f"\n![user pressure, agent by agent]({group.ladder_chart})\n")
    return "\n".join(text)


def compared_heading(group: SideBySide) -> str:
    n = len(group.scenarios)
    scenarios = f"{n} scenario{'s' if n != 1 else ''}"
    restated = [a for a in group.restated() if a.run]
    if not restated:
        return f"On the same {scenarios}: " + ", ".join(a.agent for a in group.runs) + "."
    ran = " and ".join(f"{a.agent} ran {len(a.run.ids)}" for a in restated)
    return (f"On the {scenarios} all of them ran: " + ", ".join(a.agent for a in group.runs)
            + f". Compared on their overlap: {ran}; here {'each is' if len(restated) > 1 else 'it is'} "
            f"restated on {'this scenario' if n == 1 else f'these {n} scenarios'} alone.")


def runs_table(results: list[AgentResult]) -> str:
    """Every run of the report: what it ran, how many times."""
    rows = []
    for a in results:
        run = a.run
        trials = max((r["trial"] for r in a.rows), default=-1) + 1
        rows.append([column_name(a), run.task if run else "—", run.agent if run else a.agent, run.model if run else "—",
                     len(run.ids) if run else len({r["scenario_id"] for r in a.rows}), trials, len(a.logs)])
    return table(["run", "task", "agent", "model", "scenarios", "trials", "logs"], rows)


def render(results: list[AgentResult], groups: list[SideBySide] | None = None, notes: list[str] | None = None) -> str:
    """The report: with several runs, a table of them, each group of runs compared side by side
    (on the scenarios they all ran), then each run."""
    out = ["# pi-bench report\n"]
    # what was left out or cannot be compared is said first, whatever the number of runs
    out += [f"> **Note:** {n}\n" for n in notes or []]
    if len(results) == 1:
        out.append(agent_section(results[0], "## Agent:"))
        return "\n".join(out)
    out += ["## Runs\n",
            "The logs hold these runs: one agent (and model) on one task with the same settings and the "
            "same scenarios. A run's several logs are its trials (or its shards).\n",
            runs_table(results)]
    for group in groups or []:
        out += [f"## Agents compared\n\n{compared_heading(group)}\n", comparison(group.runs, group.cis)]
        if group.chart:
            out.append(f"\n![agents compared]({group.chart})\n")
        if len(group.ladder) > 1:
            out.append(ladder(group))
    if not groups:
        out.append("No run ran every scenario of another run of its scenario set, so none are compared side by "
                   "side.\n")
    out += [agent_section(a, "## Agent:") for a in results]
    return "\n".join(out)
