"""A protocol agent that acts once and then takes its time: for time-limit tests."""

from __future__ import annotations

import time


class SlowAgent:
    """Looks the order up at once, then keeps looking it up, a second per message, forever."""

    model_name = "slow"

    def init_state(self, benchmark_context, tools, message_history=None):
        return {"n": 0}

    def generate(self, message, state):
        state = {"n": state["n"] + 1}
        if state["n"] > 1:
            time.sleep(1.0)
        call = {"id": f"slow_{state['n']}", "name": "lookup_order", "arguments": {"order_id": "O-1"}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, state

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass
