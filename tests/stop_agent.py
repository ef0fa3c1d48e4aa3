"""A protocol agent whose first sample loses its backend while the others are still talking:
the run stops on that error (fail_on_error) and Inspect cancels the samples in flight."""

from __future__ import annotations

import threading
import time

from pibench_inspect.local.errors import AgentUnavailable

_LOCK = threading.Lock()
_STARTED = [0]


class FirstFails:
    model_name = "first-fails"

    def init_state(self, benchmark_context, tools, message_history=None):
        with _LOCK:
            _STARTED[0] += 1
            return {"first": _STARTED[0] == 1, "n": 0}

    def generate(self, message, state):
        state = {**state, "n": state["n"] + 1}
        if state["first"]:
            time.sleep(1.0)  # the others are in flight by now
            raise AgentUnavailable("backend down")
        time.sleep(0.5)
        call = {"id": f"c{state['n']}", "name": "lookup_order", "arguments": {"order_id": "O-1"}}
        return {"role": "assistant", "content": None, "tool_calls": [call]}, state

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass
