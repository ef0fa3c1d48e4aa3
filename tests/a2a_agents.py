"""Protocol agents for the A2A tests. The green server's runner is a subprocess started in the
repository root, so the ones it loads by name (a judge as `protocol/tests.a2a_agents:YesJudge`)
must be importable as `tests.a2a_agents`; the purple agents are served in the test process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLE = Path(__file__).resolve().parents[2] / "shared" / "upstream-sample"


class SeedEcho:
    """Says which seed it was given (set_seed is called before init_state) and of which type."""

    model_name = "seed-echo"

    def __init__(self) -> None:
        self.seed: Any = None

    def set_seed(self, seed: Any) -> None:
        self.seed = seed

    def init_state(self, benchmark_context: list[dict], tools: list[dict], message_history: Any = None) -> dict:
        return {}

    def generate(self, message: dict, state: dict) -> tuple[dict, dict]:
        return {"role": "assistant", "content": f"seed={self.seed!r} ({type(self.seed).__name__})"}, state

    def is_stop(self, message: dict) -> bool:
        return False

    def stop(self, message: Any = None, state: Any = None) -> None:
        pass


class TrajectoryAgent:
    """Plays the agent's side of a recorded run of the original pi-bench (the shared sample's
    trajectories, read in place): the scenario comes from the benchmark context's metadata, and
    each generate returns the next recorded assistant message after the orchestrator's greeting
    (its tool calls with their recorded ids and arguments, or its text)."""

    model_name = "trajectory"

    def __init__(self, variant: str = "gold", root: str | None = None) -> None:
        self.variant = variant
        self.root = Path(root) if root else SAMPLE

    def set_seed(self, seed: Any) -> None:
        pass

    def init_state(self, benchmark_context: list[dict], tools: list[dict], message_history: Any = None) -> dict:
        sid = benchmark_context[0]["metadata"]["scenario_id"]
        for path in sorted(self.root.glob(f"trajectories/*/*__{self.variant}.json")):
            traj = json.loads(path.read_text(encoding="utf-8"))
            if traj["scenario_id"] == sid:
                said = [m for m in traj["messages"] if m["role"] == "assistant"]
                return {"turns": said[1:], "next": 0}  # said[0] is the orchestrator's greeting
        raise LookupError(f"no {self.variant} trajectory for {sid} under {self.root}")

    def generate(self, message: dict, state: dict) -> tuple[dict, dict]:
        if state["next"] >= len(state["turns"]):
            return {"role": "assistant", "content": "###STOP###"}, state
        m = state["turns"][state["next"]]
        state["next"] += 1
        if m.get("tool_calls"):
            calls = [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in m["tool_calls"]]
            return {"role": "assistant", "content": m.get("content"), "tool_calls": calls}, state
        return {"role": "assistant", "content": m.get("content") or ""}, state

    def is_stop(self, message: dict) -> bool:
        return False

    def stop(self, message: Any = None, state: Any = None) -> None:
        pass


class YesJudge:
    """The shared sample's judge stub as a model (`protocol/tests.a2a_agents:YesJudge`): every
    question is answered exactly `{"answer": "YES", "reasoning": "stub"}`."""

    model_name = "judge-stub-yes"
    answer = "YES"

    def set_seed(self, seed: Any) -> None:
        pass

    def init_state(self, benchmark_context: list[dict], tools: list[dict], message_history: Any = None) -> dict:
        return {}

    def generate(self, message: dict, state: dict) -> tuple[dict, dict]:
        return {"role": "assistant", "content": json.dumps({"answer": self.answer, "reasoning": "stub"})}, state

    def is_stop(self, message: dict) -> bool:
        return False

    def stop(self, message: Any = None, state: Any = None) -> None:
        pass
