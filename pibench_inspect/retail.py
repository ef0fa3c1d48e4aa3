"""Retail returns and refunds: a store's customer-service agent under a returns SOP.

    inspect eval pibench_inspect/pibench_retail --model openai/gpt-4o-mini
    inspect eval pibench_inspect/pibench_retail -T agent=oracle -T user=scripted --model none
"""

from typing import Any

from inspect_ai import Task, task

from pibench_inspect.task import pibench_task


@task
def pibench_retail(
    agent: str = "model",
    user: str = "llm",
    column: str | list[str] | None = None,
    label: str | list[str] | None = None,
    judge: str | bool = "auto",
    scoring: str = "auto",
    max_steps: int = 40,
    max_user_turns: int = 8,
    user_temperature: float | None = None,
    user_seed: int | None = None,
    hard_gate: bool = False,
    agent_args: dict[str, Any] | None = None,
    agent_url: str | None = None,
    agent_mode: str = "auto",
    user_url: str | None = None,
    a2a_timeout: float = 120.0,
    source: str | None = None,
    shard: str | None = None,
    ablation: str | None = None,
    **unknown: Any,
) -> Task:
    """pi-bench retail domain: returns and refunds under a store's SOP.

    Choose scenarios with Inspect's `--sample-id ID[,ID...]` (globs allowed; `pibench list`
    shows the ids) and repeat runs with `--epochs N` (adds pass^k and PolicyPassAll /
    PolicyPassAny / ViolationEver to the metrics).

    Args:
      agent: The agent under test: "model" (the --model), a built-in agent ("oracle",
        "nothing", "deny_all", "escalate_all", "pushover"), "module:ClassOrFactory" (your own
        agent implementing pibench_inspect.local.AgentProtocol), or "a2a" (a remote A2A agent
        at agent_url).
      user: The simulated user: "llm" (the `user` model role, else --model), "scripted"
        (replays the scenario's turns; no model), "solo" (no user: the request arrives once)
        or "a2a" (a user simulator at user_url).
      column: Only scenarios of these leaderboard column(s) (comma-separated).
      label: Only scenarios with these expected label(s): ALLOW, ALLOW-CONDITIONAL, DENY,
        ESCALATE (comma-separated).
      judge: NL judge (tier 2): "auto" (the `grader` role, else the model under test, else
        not scored), "on" (a judge error when no model is available) or "off"; on/off/yes/no
        also arrive as booleans and are accepted.
      scoring: "parity" scores as the original pi-bench did (default for original pi-bench
        folders), "strict" is ours, "auto" follows the domain.
      max_steps: Conversation step limit (each agent message, tool execution and user message
        is one step).
      max_user_turns: Messages the LLM user may send, the opening included.
      user_temperature: Temperature of the LLM user (default: the `user` role's own, else 0.0).
      user_seed: Base seed of the LLM user and of remote parties, derived per scenario and epoch
        (default: the `user` role's own seed, else 42).
      hard_gate: Tools a tool_not_called check forbids refuse to run.
      agent_args: Keyword arguments for a module:ClassOrFactory agent (JSON).
      agent_url: URL of the A2A agent under test (agent="a2a").
      agent_mode: A2A bootstrap: "auto" (when the agent card declares it), "stateless" or
        "bootstrap".
      user_url: URL of the A2A user simulator (user="a2a").
      a2a_timeout: Seconds to wait for each A2A reply.
      source: A folder holding scenarios/ and domains/ (default: the shipped set).
      shard: "K/N" runs only the K-th of N disjoint parts of the scenarios (by a hash of the
        scenario id; K from 1), for splitting a run over processes or machines.
      ablation: "no_pressure" (the user asks plainly: the family's baseline envelope, or the
        scenario's ablation_hints.no_pressure_user_message with no pressure script) or
        "structured_policy" (the agent also gets ablation_hints.structured_policy); scenarios
        without the hint are left out with a logged reason. The checks do not change.
      **unknown: Rejected with an error naming them (catches misspelt -T names).
    """
    args = {k: v for k, v in locals().items() if k != "unknown"}
    if args["agent_args"] is None:
        args.pop("agent_args")
    return pibench_task('retail', **args, **unknown)
