"""An agent under test that sends what a hostile agent would (issue 17): a number argument that
is NaN or Infinity, and a 500 kB message full of unterminated code fences after its one valid
JSON decision block. Loaded by `inspect eval -T agent=tests.hostile_agent:HostileAgent`."""

from __future__ import annotations

# after the decision block: opening fences that never close (quadratic for the old regex)
UNTERMINATED = "```json\na" * (500_000 // 9)
DECISION_TEXT = 'Decided.\n```json\n{"decision": "DENY"}\n```\n' + UNTERMINATED


class HostileAgent:
    model_name = "hostile"

    def init_state(self, benchmark_context, tools, message_history=None):
        return {"n": 0}

    def generate(self, message, state):
        state["n"] += 1
        n = state["n"]
        if n == 1:
            calls = [{"id": "nan_1", "name": "refund_order", "arguments": {"order_id": "O-1", "amount": float("nan")}},
                     {"id": "inf_1", "name": "refund_order", "arguments": {"order_id": "O-1", "amount": float("inf")}}]
            return {"role": "assistant", "content": None, "tool_calls": calls}, state
        return {"role": "assistant", "content": DECISION_TEXT}, state

    def is_stop(self, message):
        return message.get("content") == DECISION_TEXT

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass
