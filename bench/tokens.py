"""Benchmark 4: token footprint. Input tokens per agent turn, by domain, before a run.

Every scenario is played with the `oracle` agent and the scripted user (no model). For each
agent turn, the input a model would receive is counted: the system prompt (role + policy +
session context + decision contract), the tool definitions (OpenAI function format JSON) and the
conversation history so far (user messages, earlier agent messages and tool calls, tool
results). Tokens are counted with tiktoken's cl100k_base when its encoding is available offline,
otherwise estimated as characters / 4 (the output says which).

A real model usually takes more turns than the oracle (it explores and talks), so treat the
per-sample totals as a floor and the per-turn figures as typical.

Usage: python bench/tokens.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import append_results, check_run, load_avg, table  # noqa: E402


def counter():
    """(count function, description)."""
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base")
        enc.encode("probe")
        return (lambda s: len(enc.encode(s, disallowed_special=()))), "tiktoken cl100k_base"
    except Exception as err:  # no package, or the encoding file is not cached and there is no network
        reason = type(err).__name__
        return (lambda s: (len(s) + 3) // 4), f"characters / 4 (tiktoken cl100k_base unavailable offline: {reason})"


def tools_json(domain, scenario) -> str:
    from pibench_inspect.environment.tools import exposed_tools, with_descriptions

    return json.dumps([
        {"type": "function", "function": {"name": t.name, "description": t.description or t.name,
                                          "parameters": with_descriptions(t.schema)}}
        for t in exposed_tools(domain, scenario)
    ])


def message_text(m) -> str:
    text = m.text or ""
    for c in getattr(m, "tool_calls", None) or []:
        text += json.dumps({"name": c.function, "arguments": c.arguments})
    if m.role == "tool" and m.error is not None:
        text += m.error.message
    return text


def main() -> None:
    load_before = load_avg()
    count, how = counter()
    from inspect_ai import eval as inspect_eval

    from pibench_inspect.scenario.catalog import load_set
    from pibench_inspect.task import pibench_task

    scenario_set = load_set(None)
    task = pibench_task(None, agent="oracle", user="scripted")
    log = inspect_eval(task, model="none", display="none", log_dir=tempfile.mkdtemp(prefix="pibench-bench-tokens-"))[0]
    check_run(log, len(task.dataset), "the tokens run")
    per_domain: dict[str, dict[str, list[float]]] = {}
    for s in log.samples or []:
        scenario, domain = scenario_set.resolve(str(s.id))
        d = per_domain.setdefault(domain.name, {k: [] for k in ("system", "tools", "history", "turn", "sample", "turns")})
        msgs = s.messages
        system = count(msgs[0].text) if msgs and msgs[0].role == "system" else 0
        tools = count(tools_json(domain, scenario))
        history, sample_total, turns = 0, 0, 0
        for m in msgs[1:]:
            if m.role == "assistant":
                turns += 1
                turn_input = system + tools + history
                d["history"].append(history)
                d["turn"].append(turn_input)
                sample_total += turn_input
            history += count(message_text(m)) + 4  # ~4 tokens of per-message framing
        d["system"].append(system)
        d["tools"].append(tools)
        d["sample"].append(sample_total)
        d["turns"].append(turns)

    rows = []
    for name, d in sorted(per_domain.items()):
        rows.append([
            name, len(d["system"]), statistics.mean(d["system"]), statistics.mean(d["tools"]),
            statistics.mean(d["history"]), statistics.mean(d["turn"]), max(d["turn"]),
            statistics.mean(d["turns"]), statistics.mean(d["sample"]), sum(d["sample"]) / 1e6,
        ])
    all_turn = [x for d in per_domain.values() for x in d["turn"]]
    all_sample = [x for d in per_domain.values() for x in d["sample"]]
    body = f"""
Token counting: {how}. Oracle agent + scripted user, one epoch, {len(log.samples or [])} samples.

{table(["domain", "scenarios", "system prompt (policy)", "tool definitions", "history per turn", "input per turn", "max input per turn", "agent turns per sample", "input per sample", "input per domain run (M)"], rows)}

All domains: mean input per agent turn {statistics.mean(all_turn):,.0f} tokens, mean per sample
{statistics.mean(all_sample):,.0f}, a full one-epoch run {sum(all_sample) / 1e6:.2f} M input tokens (times epochs;
a model that takes more turns than the oracle costs proportionally more; the simulated user's own
calls, with `-T user=llm`, come on top). Output tokens are small by comparison (short messages and tool calls).
"""
    append_results("Token footprint (bench/tokens.py)", body, load_before=load_before)


if __name__ == "__main__":
    main()
