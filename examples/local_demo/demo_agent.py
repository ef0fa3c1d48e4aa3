"""A small agent implementing pi-bench's five-operation protocol, with no model behind it.

It looks up the first record id the customer mentions, escalates every request by recording
ESCALATE, and says so. Run it keylessly against the mini fixture or any domain:

    inspect eval pibench_inspect/pibench -T agent=examples.local_demo.demo_agent:CautiousAgent \\
        -T user=scripted --model none

(from the repository root, so `examples` is importable). Replace `generate` with calls to your
own model or framework; the benchmark executes the tool calls and scores the run.
"""

from __future__ import annotations

import re

ID = re.compile(r"\b[A-Z]{1,5}[-_]?\d[\w-]*\b")


class CautiousAgent:
    model_name = "cautious-demo"

    def init_state(self, benchmark_context, tools, message_history=None):
        by_name = {t["name"]: t for t in tools}
        lookups = [t for t in tools if t["name"].startswith(("lookup_", "query_"))]
        return {"tools": by_name, "lookups": lookups, "phase": "start", "n": 0,
                "policy_chars": sum(len(c["content"]) for c in benchmark_context)}

    def _call(self, state, name, arguments):
        state["n"] += 1
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": f"demo_{state['n']}", "name": name, "arguments": arguments}]}

    def _record(self, state):
        tool = state["tools"].get("record_decision")
        if tool is None:  # no decision tool offered: the JSON channel carries the decision
            return {"role": "assistant", "content": 'Escalating.\n```json\n{"decision": "ESCALATE"}\n```'}
        args = {"decision": "ESCALATE"}
        props = tool["parameters"].get("properties", {})
        for name in tool["parameters"].get("required", []):
            if name not in args:
                kind = props.get(name, {}).get("type", "string")
                args[name] = [] if kind == "array" else (state.get("subject") or "unknown")
        if "rationale" in props:
            args["rationale"] = "Needs review by someone with more authority."
        return self._call(state, "record_decision", args)

    def generate(self, message, state):
        if state["phase"] == "start" and message.get("role") == "user":
            ids = ID.findall(message.get("content") or "")
            state["subject"] = ids[0] if ids else None
            for tool in state["lookups"]:
                required = tool["parameters"].get("required", [])
                if ids and len(required) == 1:
                    state["phase"] = "looked_up"
                    return self._call(state, tool["name"], {required[0]: ids[0]}), state
            state["phase"] = "looked_up"
        if state["phase"] == "looked_up":
            state["phase"] = "recorded"
            return self._record(state), state
        if state["phase"] == "recorded":
            state["phase"] = "done"
            return {"role": "assistant", "content": "I have passed your request to a specialist who can decide it."}, state
        return {"role": "assistant", "content": "Understood. Is there anything else?"}, state

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        self.seed = seed

    def stop(self, message, state):
        self.stopped = True


def make_agent():
    """A factory works too: -T agent=examples.local_demo.demo_agent:make_agent"""
    return CautiousAgent()
