"""Reference policies over observations: the built-in agents, and uniformly random moves."""

from __future__ import annotations

from typing import Any, Callable

from .episode import Action, PibenchEnv

def builtin_policy(env: PibenchEnv, name: str = "oracle") -> Callable[[dict[str, Any]], Action]:
    """A built-in agent (`oracle`, `nothing`, `deny_all`, `escalate_all`, `pushover`) as a policy
    over observations: it plays the same moves as `-T agent=NAME`. Build it after each reset()."""
    from .._sync import run_now
    from ..conversation.agents import builtin_agent

    scripted = builtin_agent(name, env.entry.domain, env.entry.scenario)

    def policy(observation: dict[str, Any]) -> Action:
        # the scripted agent reads earlier results from the conversation by call id; it awaits nothing
        return run_now(scripted.next(env.messages, []))

    return policy


def random_policy(env: PibenchEnv, seed: int = 0, talk: float = 0.3) -> Callable[[dict[str, Any]], Action]:
    """Uniformly random moves: with probability `talk` a short text, else a call of a random
    offered tool with arguments drawn from its schema (types and enums, no understanding)."""
    import random

    rng = random.Random(seed)

    def value(schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            return rng.choice(schema["enum"])
        kind = schema.get("type")
        if kind == "integer":
            return rng.randint(0, 100)
        if kind == "number":
            return round(rng.uniform(0, 1000), 2)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "array":
            return [value(schema.get("items") or {"type": "string"})]
        if kind == "object":
            return {}
        return rng.choice(["yes", "no", "12345", "please help"])

    def policy(observation: dict[str, Any]) -> Action:
        if not env.tools or rng.random() < talk:
            return rng.choice(["Let me check that for you.", "Could you tell me more?", "Done."])
        tool = rng.choice(env.tools)
        props = tool["parameters"].get("properties") or {}
        return {"tool": tool["name"], "arguments": {k: value(v) for k, v in props.items()}}

    return policy
