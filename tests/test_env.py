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
    assert (len(train), len(test)) == (744, 300)  # as the README says
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


# ---- through a real script (issue 41: defects 9 and 15; issue 42: item 8)

def run_script(tmp_path, code: str, timeout: float = 120):
    """`code` run by a fresh interpreter, as a trainer's script is; its exit is part of the test."""
    import subprocess
    import sys

    script = tmp_path / "train.py"
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout,
                          cwd=tmp_path)


NOISE = ("Traceback", "Exiting span created in another context", "Task was destroyed", "nanobind", "Error")


def test_the_environment_serves_exactly_what_inspect_eval_runs_and_a_bad_call_is_a_tool_error(tmp_path):
    """A scenario `inspect eval` skips as invalid (a check naming a tool the catalog lacks) was
    listed and served, and even the oracle got reward 0; now it is neither listed nor served, and
    make() names the reason. Arguments that are not a JSON object are a tool error for that call,
    as on every agent path, where they raised ValueError."""
    from conftest import source_with_invalid_scenario

    src = source_with_invalid_scenario(tmp_path)
    r = run_script(tmp_path, f"""
from pibench_inspect import env
src = {str(src)!r}
print("listed", env.list_scenarios(source=src))
try:
    env.make("MINI_BAD", source=src)
    print("served MINI_BAD")
except ValueError as err:
    print("refused:", err)
with env.make("MINI_001_REFUND_OK", source=src) as e:
    e.reset()
    for arguments in ('{{"order_id": "O-1",}}', '[1, 2]', [1, 2]):
        obs, reward, done, info = e.step({{"tool": "lookup_order", "arguments": arguments}})
        print("tool error:", bool(obs["messages"][0]["error"]), "done:", done)
    obs, reward, done, info = e.step({{"tool": "lookup_order", "arguments": '{{"order_id": "O-1"}}'}})
    print("then:", '"delivered"' in obs["messages"][0]["content"])
""")
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.splitlines()
    assert out[0] == "listed ['MINI_001_REFUND_OK', 'MINI_002_FINAL_SALE', 'MINI_003_BIG_ORDER']", out
    assert out[1].startswith("refused: scenario 'MINI_BAD' is invalid and `inspect eval` skips it"), out
    assert "tool 'no_such_tool' is not in the mini catalog" in out[1]
    assert out[2:5] == ["tool error: True done: False"] * 3, out
    assert out[5] == "then: True"


def test_a_script_that_drops_or_leaves_an_environment_open_exits_cleanly(tmp_path):
    """Dropping an environment mid-episode, and leaving one open at the end of the script: the
    process used to wait for ever at exit (__del__ -> close() waited on a loop thread already
    frozen), and a collected episode was closed from another context. Now both end their
    episodes without waiting on a thread that is gone, and the process exits at once, quietly."""
    r = run_script(tmp_path, f"""
import gc
from pibench_inspect import env
src = {str(ROOT / "tests" / "fixtures" / "mini")!r}

def mid_episode():
    e = env.make("MINI_001_REFUND_OK", source=src)
    e.reset()
    e.step({{"tool": "lookup_order", "arguments": {{"order_id": "O-1"}}}})
    return e

dropped = mid_episode()
del dropped
gc.collect()
print("dropped", flush=True)
left_open = mid_episode()
print("left open", flush=True)
""", timeout=90)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["dropped", "left", "open"]
    assert not [x for x in NOISE if x in r.stderr], r.stderr[-3000:]
