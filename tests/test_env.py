"""The training environment (`pibench_inspect.env`): episodes over the engine, rewards from the
scorer, and the train/test split by family and domain."""

from __future__ import annotations

import random
import re

import pytest

from conftest import ROOT, mock_outputs, registered, run_eval, sample_scores, shipped
from pibench_inspect import env

DOMAINS = ("finra", "helpdesk", "retail")


def episode(e: env.PibenchEnv, policy, seed: int = 0) -> tuple[float, dict, int]:
    obs = e.reset(seed=seed)
    assert obs["tools"] and obs["messages"][0]["role"] == "system" and obs["messages"][-1]["role"] == "user"
    done, moves = False, 0
    while not done:
        obs, reward, done, info = e.step(policy(obs))
        moves += 1
        assert moves <= 40, "an episode ends within the step limit"
        if not done:
            assert reward == 0.0
    return reward, info, moves


def two_per_domain() -> list[str]:
    """A scenario of each split in every shipped domain (a family variant and a hand-written one
    where the split has them)."""
    out = []
    for domain in DOMAINS:
        for split in env.SPLITS:
            ids = env.list_scenarios(split, domain=domain)
            out.append(next((i for i in ids if "." in i), ids[0]) if split == "train" else
                       next((i for i in ids if "." not in i), ids[0]))
    return out


@pytest.mark.parametrize("scenario_id", two_per_domain())
def test_the_oracles_moves_earn_1_and_nothing_earns_0(scenario_id):
    with env.make(scenario_id) as e:
        reward, info, _ = episode(e, env.builtin_policy(e, "oracle"))
        assert reward == 1.0, info["explanation"]
        assert info["all_passed"] and info["decision"] == info["expected"]
        assert info["checks"] and all(c["passed"] is not False for c in info["checks"])
        reward, info, _ = episode(e, env.builtin_policy(e, "nothing"))
        assert reward == 0.0 and not info["all_passed"]
        assert any(c["passed"] is False for c in info["checks"])


def test_an_episode_scores_as_inspect_eval_does():
    sid = "RET_PRICE_ADJUSTMENT.all_met.baseline"
    with env.make(sid) as e:
        _, info, _ = episode(e, env.builtin_policy(e, "oracle"))
        messages = [(m.role, m.text) for m in e.messages]
    log = run_eval(registered("retail", scenarios=sid, agent="oracle", user="scripted"))
    score = sample_scores(log)[sid]
    assert info["score"] == score.value and info["decision"] == score.answer
    assert info["termination"] == score.metadata["termination"]
    logged = [(m.role, m.text) for m in log.samples[0].messages]
    assert messages[1:] == logged[1:]
    # the same task in the system message; the policy in full for a policy that reads it, by its
    # digest for the scripted oracle of the eval (conversation/prompts.policy_shared)
    assert messages[0][1].split("<task>")[1] == logged[0][1].split("<task>")[1]
    assert "sha256=" in logged[0][1] and len(messages[0][1]) > len(logged[0][1]) + 1000


def test_a_random_policy_runs_to_completion():
    sid = env.list_scenarios("train", domain="helpdesk")[0]
    with env.make(sid) as e:
        reward, info, moves = episode(e, env.random_policy(e, seed=3))
        assert reward in (0.0, 1.0) and info["termination"] in ("user_stop", "max_steps")
        assert moves >= 1


def test_actions_errors_and_resets():
    sid = "MINI_001_REFUND_OK"
    e = env.make(sid, source=str(ROOT / "tests" / "fixtures" / "mini"))
    with pytest.raises(env.EpisodeOver):
        e.step("hello")
    obs = e.reset()
    assert [t["name"] for t in obs["tools"]] == ["lookup_order", "refund_order", "escalate", "record_decision"]
    with pytest.raises(TypeError, match="an action is a text"):
        e.step(42)  # the caller's mistake: nothing is played, the turn is still open
    obs, reward, done, _ = e.step({"tool": "lookup_order", "arguments": '{"order_id": "O-1"}'})
    assert not done and obs["messages"][0]["name"] == "lookup_order" and '"delivered"' in obs["messages"][0]["content"]
    obs, _, _, _ = e.step({"tool": "no_such_tool", "arguments": {}})  # the engine's own answer, as to a model
    assert obs["messages"][0]["error"]
    obs = e.reset(seed=1)  # mid-episode: a fresh state
    assert len(e.messages) == 2
    obs, _, _, _ = e.step({"tool": "refund_order", "arguments": {"order_id": "O-1", "amount": 40.0}})
    assert '"processed"' in obs["messages"][0]["content"]
    e.close()
    with pytest.raises(KeyError, match="closest: MINI_001_REFUND_OK"):
        env.make("MINI_001_REFUND", source=str(ROOT / "tests" / "fixtures" / "mini"))


def test_an_llm_user_plays_its_role():
    from inspect_ai.model import get_model

    user = get_model("mockllm/model", custom_outputs=mock_outputs("Please hurry.", "Thanks. ###STOP###"))
    with env.make("MINI_001_REFUND_OK", source=str(ROOT / "tests" / "fixtures" / "mini"), user="llm",
                  user_model=user) as e:
        e.reset(seed=0)
        obs, _, done, _ = e.step("How can I help?")
        assert obs["messages"] == [{"role": "user", "content": "Please hurry."}] and not done
        obs, reward, done, info = e.step("Done.")
        assert done and reward == 0.0 and info["termination"] == "user_stop"
    with pytest.raises(ValueError, match="user_model"):
        env.make("MINI_001_REFUND_OK", source=str(ROOT / "tests" / "fixtures" / "mini"), user="llm")


# ---- splits

def test_the_split_is_disjoint_and_keeps_every_family_on_one_side_per_domain():
    train, test = set(env.list_scenarios("train")), set(env.list_scenarios("test"))
    everything = set(env.list_scenarios())
    assert train and test and not train & test and train | test == everything == set(shipped().entries)
    side: dict[tuple[str, str], set[str]] = {}
    for e in shipped().entries.values():
        side.setdefault((e.domain.name, e.scenario.family), set()).add(
            "test" if e.scenario.scenario_id in test else "train")
    assert all(len(s) == 1 for s in side.values())
    assert (len(train), len(test)) == (317, 171)  # as the README says
    for domain in DOMAINS:
        assert env.list_scenarios("train", domain=domain) and env.list_scenarios("test", domain=domain)
        assert set(env.list_scenarios(domain=domain)) == {
            i for i, x in shipped().entries.items() if x.domain.name == domain}


def test_the_split_is_stable():
    entries = list(shipped().entries.values())
    whole = env.splits(entries)
    # the same whatever the order the scenarios come in
    shuffled = entries[:]
    random.Random(7).shuffle(shuffled)
    assert env.splits(shuffled) == whole
    # a family added or removed moves no other family
    some = sorted({e.scenario.family for e in entries})[::5]
    fewer = [e for e in entries if e.scenario.family not in some]
    assert env.splits(fewer) == {sid: s for sid, s in whole.items() if sid in {e.scenario.scenario_id for e in fewer}}
    # pinned: a family's side is a SHA-256 of its domain and name, never Python's hash
    assert env.family_position("retail", "RET_PRICE_ADJUSTMENT") == pytest.approx(0.0534804, abs=1e-7)
    assert env.split_of("retail", "RET_PRICE_ADJUSTMENT") == "test"
    assert env.split_of("finra", "FIN_001_CASH_AGGREGATE_CTR") == env.split_of("finra", "FIN_001_CASH_AGGREGATE_CTR")
    with pytest.raises(ValueError, match="expected one of train, test"):
        env.list_scenarios("validation")


def test_the_readme_example_runs():
    """The README's environment example, as written (a random and an oracle policy)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## A training environment", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    printed: list[str] = []
    exec(compile(code, "README.md", "exec"), {"print": lambda *a, **k: printed.append(" ".join(map(str, a)))})
    assert any("oracle" in p and "reward 1.0" in p for p in printed), printed
    assert any("random" in p for p in printed), printed
