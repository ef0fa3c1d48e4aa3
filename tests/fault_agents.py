"""Agents under test that fault as a hostile or broken agent would (issue 25): loaded by
`inspect eval -T agent=tests.fault_agents:FaultAgent -T agent_args='{"fault": ..., "where": ...}'`
or `--model protocol/tests.fault_agents:FaultAgent -M fault=...`.

A scenario can choose its own fault: a customer id `FAULT:<fault>@<where>` in its session context
(which the agent receives in init_state) overrides the arguments, so that one run holds many.

`where` is the operation that faults (init_state, generate, is_stop, stop; set_seed); the first
generate otherwise looks the order up, the second answers with a decision. Faults:
  system_exit, exit_3, keyboard_interrupt, generator_exit: raise that BaseException
  bad_str: raise an exception whose __str__ raises
  block: never return
  deep: a tool call whose arguments nest `depth` levels
  huge_int: a tool call argument of 10**5000 (beyond Python's integer string limit)
  cycle: a tool call argument that contains itself
  unavailable: raise AgentUnavailable (an infrastructure failure)
  calls: play `calls` (a list of {name, arguments}), then decide
"""

from __future__ import annotations

import json
import re
import sys
import threading

DECISION = 'Done.\n```json\n{"decision": "DENY"}\n```'


class BadStr(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message for you")

    def __repr__(self) -> str:
        raise RuntimeError("no repr either")


def nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"x": value}
    return value


def fault(kind: str, depth: int = 0) -> None:
    if kind == "system_exit":
        raise SystemExit(0)
    if kind == "exit_3":
        sys.exit(3)
    if kind == "keyboard_interrupt":
        raise KeyboardInterrupt
    if kind == "generator_exit":
        raise GeneratorExit
    if kind == "bad_str":
        raise BadStr()
    if kind == "deep_error":
        raise ValueError(nested(depth))
    if kind == "block":
        threading.Event().wait()
    if kind == "unavailable":  # infrastructure, not behaviour: an Inspect sample error
        from pibench_inspect.local.errors import AgentUnavailable

        raise AgentUnavailable("the agent's model cannot be reached (test)")
    raise AssertionError(f"unknown fault {kind}")


CALL_FAULTS = ("deep", "huge_int", "cycle")


class FaultAgent:
    model_name = "fault"

    def __init__(self, fault: str = "none", where: str = "generate", depth: int = 260, calls: list | None = None):
        self.fault, self.where, self.depth, self.calls = fault, where, int(depth), list(calls or [])

    def _maybe(self, op: str) -> None:
        if op == self.where and self.fault not in CALL_FAULTS and self.fault not in ("calls", "none"):
            fault(self.fault, self.depth)

    def init_state(self, benchmark_context, tools, message_history=None):
        chosen = re.search(r"FAULT:([a-z_0-9]+)@([a-z_]+)", json.dumps(benchmark_context))
        if chosen:
            self.fault, self.where = chosen.group(1), chosen.group(2)
        self._maybe("init_state")
        return {"n": 0}

    def generate(self, message, state):
        self._maybe("generate")
        n = state["n"]
        state = {"n": n + 1}
        if self.fault in CALL_FAULTS and n == 0:
            if self.fault == "deep":
                arguments = {"order_id": "O-1", "extra": nested(self.depth)}
            elif self.fault == "huge_int":
                arguments = {"order_id": "O-1", "amount": 10**5000}
            else:
                arguments = {"order_id": "O-1"}
                arguments["self"] = arguments
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"id": "bad_1", "name": "refund_order", "arguments": arguments}]}, state
        if self.fault == "calls" and n < len(self.calls):
            call = self.calls[n]
            return {"role": "assistant", "content": None,
                    "tool_calls": [{"id": f"call_{n}", "name": call["name"], "arguments": call["arguments"]}]}, state
        if self.fault == "none" and n == 0:
            return {"role": "assistant", "content": None, "tool_calls": [
                {"id": "look_1", "name": "lookup_order", "arguments": {"order_id": "O-1"}}]}, state
        return {"role": "assistant", "content": DECISION}, state

    def is_stop(self, message):
        self._maybe("is_stop")
        return message.get("content") == DECISION

    def set_seed(self, seed):
        self._maybe("set_seed")

    def stop(self, message, state):
        self._maybe("stop")


class AsyncFaultAgent(FaultAgent):
    """The same faults from `agenerate`, which the adapter awaits on the event loop."""

    async def agenerate(self, message, state):
        return self.generate(message, state)
