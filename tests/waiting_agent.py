"""A protocol agent that says it is waiting (a line on stderr) and then never answers: a run to
interrupt with Ctrl-C once it is known to be mid-sample."""

from __future__ import annotations

import sys
import threading

READY = "pibench-test: the agent is waiting"


class WaitingAgent:
    model_name = "waiting"

    def init_state(self, benchmark_context, tools, message_history=None):
        return {}

    def generate(self, message, state):
        print(READY, file=sys.stderr, flush=True)
        threading.Event().wait()  # never set: the run is interrupted here

    def is_stop(self, message):
        return False

    def set_seed(self, seed):
        pass

    def stop(self, message, state):
        pass
