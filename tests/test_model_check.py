"""Issue 42, item 1: a model that cannot be reached is named before any sample starts.

Each remote model a run uses (agent, user, grader) gets one minimal request under a short
deadline when the task is built; a failure stops the run with one line naming the role, model,
endpoint and error, and how to skip the check. Keyless runs reach nothing.
"""

from __future__ import annotations

import contextvars
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
from openai_standin import OpenAIStandin, serve  # noqa: E402

BIN = Path(sys.executable).parent
DEAD = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


def model(name: str = "openai-api/standin/m", url: str = DEAD, **args):
    from inspect_ai.model import get_model

    return get_model(name, base_url=url, api_key="sk-test", memoize=False, **args)


def test_an_unreachable_endpoint_is_one_line_naming_role_model_endpoint_and_skip():
    from pibench_inspect.cli.refusal import Refusal
    from pibench_inspect.providers.model_check import require_reachable

    m = model()
    started = time.monotonic()
    with pytest.raises(Refusal) as err:
        require_reachable({"agent": m, "user": m, "grader": model("openai-api/standin/judge")})
    assert time.monotonic() - started < 15
    line = str(err.value)
    assert "\n" not in line
    assert "cannot reach the agent and user model openai-api/standin/m at http://127.0.0.1:9/v1" in line
    assert "cannot reach the grader model openai-api/standin/judge" in line
    assert "Connection" in line and "-T model_check=false" in line


@pytest.mark.parametrize("status, stops", [(None, False), (401, True), (404, True), (500, False), (429, False)])
def test_what_counts_as_reached(status, stops):
    """A connection and any answer but a refused key or an unknown model: the run goes on."""
    from pibench_inspect.cli.refusal import Refusal
    from pibench_inspect.providers.model_check import require_reachable

    standin = OpenAIStandin(latency=0, status=status)
    with serve(standin) as url:
        if stops:
            with pytest.raises(Refusal, match=rf"cannot reach the agent model .* at {url}: .*{status}"):
                require_reachable({"agent": model(url=url, max_retries=0)})
        else:
            require_reachable({"agent": model(url=url, max_retries=0)})
    assert standin.requests >= 1
    assert all(b.get("max_tokens", b.get("max_completion_tokens")) == 8 for b in standin.bodies)


def test_no_answer_within_the_deadline_stops_the_run():
    from pibench_inspect.cli.refusal import Refusal
    from pibench_inspect.providers.model_check import require_reachable

    with serve(OpenAIStandin(latency=5)) as url:
        started = time.monotonic()
        with pytest.raises(Refusal, match="no answer within 0.5 s"):
            require_reachable({"user": model(url=url)}, seconds=0.5)
        assert time.monotonic() - started < 4


def test_keyless_and_local_models_are_never_reached():
    """--model none, mockllm, a protocol agent: nothing to reach, nothing sent."""
    from inspect_ai.model import get_model

    from pibench_inspect.providers.model_check import require_reachable, targets

    local = {"agent": get_model("none"), "user": get_model("mockllm/model"),
             "grader": get_model("protocol/examples.local_demo.demo_agent:CautiousAgent")}
    assert targets(local) == []
    require_reachable(local)  # returns at once, no request


def test_the_roles_a_run_calls():
    """Which models a run's roles call: only those that generate, as the solver and scorer bind them."""
    # the bindings are context variables: set them in a copy, never in the rest of the test run's context
    contextvars.copy_context().run(_roles_a_run_calls)


def _roles_a_run_calls():
    from inspect_ai.model import get_model

    from pibench_inspect.runtime.inspect_internals import bind_models
    from pibench_inspect.task import remote_roles
    from pibench_inspect.task_args import TaskArgs

    def roles(**args) -> dict[str, str]:
        return {role: str(m) for role, m in remote_roles(TaskArgs(**args)).items()}

    bind_models(get_model("none"), {})
    assert roles(agent="oracle", user="scripted") == {}  # the keyless demo: nothing
    bind_models(get_model("none"), {"grader": model("openai-api/standin/judge")})
    assert roles(agent="oracle", user="scripted") == {"grader": "openai-api/standin/judge"}
    assert roles(agent="oracle", user="scripted", judge="off") == {}
    bind_models(model(), {"user": model("openai-api/standin/user")})
    assert roles() == {"agent": "openai-api/standin/m", "user": "openai-api/standin/user", "grader": "openai-api/standin/m"}
    assert roles(agent="nothing", user="solo") == {"grader": "openai-api/standin/m"}


def run_headline(tmp: Path, *extra: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_BASE_URL"))}
    env.update(OPENAI_API_KEY="sk-test", OPENAI_BASE_URL=DEAD, COLUMNS="1000")
    started = time.monotonic()
    r = subprocess.run([str(BIN / "inspect"), "eval", "pibench_inspect/pibench_finra", "--model", "openai/gpt-4o-mini",
                        "--log-dir", str(tmp / "logs"), *extra], cwd=tmp, env=env, capture_output=True, text=True,
                       timeout=120)
    return r, time.monotonic() - started


@pytest.mark.slow
def test_the_readme_headline_command_against_an_unreachable_endpoint_stops_at_once(tmp_path):
    r, took = run_headline(tmp_path)
    lines = [x for x in (r.stdout + r.stderr).splitlines()
             if x.strip() and not x.startswith(("inspect_ai v", "- hooks enabled", "  pibench_inspect/", "Monitor "))]
    assert r.returncode == 1, r.stdout[-2000:] + r.stderr[-2000:]
    assert took < 30, took
    assert "Traceback" not in r.stdout + r.stderr
    assert len(lines) == 1, lines
    assert "cannot reach the agent, user and grader model openai/gpt-4o-mini at http://127.0.0.1:9/v1" in lines[0]
    assert "-T model_check=false" in lines[0]
    assert not list((tmp_path / "logs").glob("*.eval"))  # stopped before the run began
