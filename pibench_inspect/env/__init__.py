"""A training environment over pi-bench scenarios: `reset()` and `step(action)`.

    from pibench_inspect import env

    e = env.make("RET_PRICE_ADJUSTMENT.all_met.baseline")
    obs = e.reset(seed=0)
    done = False
    while not done:
        obs, reward, done, info = e.step(my_policy(obs))
    # reward: 1.0 when every deterministic check passed, else 0.0; info["checks"]: each check

An episode is one conversation of the scenario, run by the same conversation solver as
`inspect eval` (the policy takes the agent's seat, conversation/seats.py): the same tools over
the same per-episode state, the same simulated user, step limit and stop rules, then the same
scorer. The caller needs no event loop: each environment runs its episodes on an event loop in
a thread of its own, and `step` hands the action over and waits for the next observation.

Train/test splits (`list_scenarios(split="train" | "test")`) keep every variant of a family on
one side (a family's variants are not independent; a hand-written scenario is its own family),
decided per domain by a hash of the domain and family names: the same split on every machine
and in every version, and adding a family never moves another.
"""

from .episode import Action, EpisodeOver, PibenchEnv, make, message_dict
from .policies import builtin_policy, random_policy
from .splits import SPLITS, TEST_SHARE, family_position, list_scenarios, scenario_set, skipped, split_of, splits

__all__ = [
    "Action", "EpisodeOver", "PibenchEnv", "SPLITS", "TEST_SHARE", "builtin_policy", "family_position",
    "list_scenarios", "make", "message_dict", "random_policy", "scenario_set", "skipped", "split_of", "splits",
]
