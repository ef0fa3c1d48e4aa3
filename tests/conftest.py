"""Shared test helpers: offline, deterministic, no network."""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("INSPECT_LOG_LEVEL", "warning")

import json
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# property tests run the same examples on every machine and every run (no example database): a
# red CI is reproducible, and `--hypothesis-seed` still explores when asked
settings.register_profile("pibench", derandomize=True, database=None)
settings.load_profile("pibench")

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "tests" / "fixtures" / "mini"
SHARED = ROOT.parent / "shared"
SAMPLE = SHARED / "upstream-sample"
NO_SAMPLE = "../shared/upstream-sample is absent (original files are read in place, never copied)"
TRAJECTORIES = sorted(SAMPLE.glob("trajectories/*/*.json")) if SAMPLE.is_dir() else []


_SHIPPED = None


def shipped():
    """The shipped scenario set, loaded once per test session (offline plays are memoized on it)."""
    global _SHIPPED
    if _SHIPPED is None:
        from pibench_inspect.scenario.catalog import load_set

        _SHIPPED = load_set()
    return _SHIPPED


def mini_copies(root: Path, n: int, prefix: str, patch=None, digits: int = 3) -> Path:
    """A source at `root/src` with n copies of the mini refund scenario, ids PREFIX_000...;
    `patch(i, scenario)` may change each copy. Domains are copied: a source may not reach
    outside its folder, through a symlink neither (issue 17)."""
    src = root / "src"
    (src / "scenarios" / "mini").mkdir(parents=True)
    shutil.copytree(MINI / "domains", src / "domains")
    base = mini_scenario()
    for i in range(n):
        d = json.loads(json.dumps(base))
        sid = f"{prefix}_{i:0{digits}d}"
        d["meta"]["scenario_id"] = sid
        if patch:
            patch(i, d)
        (src / "scenarios" / "mini" / f"{sid.lower()}.json").write_text(json.dumps(d))
    return src


@pytest.fixture
def mini_source(tmp_path: Path) -> Path:
    """A private copy of the mini fixture source that a test may modify."""
    dst = tmp_path / "mini"
    shutil.copytree(MINI, dst)
    return dst


def mini_scenario(name: str = "mini_001_refund_ok") -> dict:
    return json.loads((MINI / "scenarios" / "mini" / f"{name}.json").read_text())


def source_with_invalid_scenario(tmp_path: Path) -> Path:
    """A copy of the mini source plus MINI_BAD, a scenario `inspect eval` skips as invalid (a
    check naming a tool the catalog lacks)."""
    src = tmp_path / "src"
    shutil.copytree(MINI, src)
    bad = mini_scenario()
    bad["meta"]["scenario_id"] = "MINI_BAD"
    bad["evaluation_criteria"]["policy_checks"].append({"outcome_id": "E9", "type": "tool_called",
                                                        "tool_name": "no_such_tool"})
    (src / "scenarios" / "mini" / "mini_bad.json").write_text(json.dumps(bad))
    return src


def registered(domain: str | None = None, *, scenarios: str | list[str] | None = None, **args):
    """The registered task as `inspect eval pibench_inspect/pibench[_DOMAIN] -T ...` builds it
    (named, with its arguments in the log), narrowed to `scenarios` as --sample-id would."""
    from pibench_inspect.finra import pibench_finra
    from pibench_inspect.helpdesk import pibench_helpdesk
    from pibench_inspect.pibench import pibench
    from pibench_inspect.retail import pibench_retail

    make = {None: pibench, "finra": pibench_finra, "retail": pibench_retail, "helpdesk": pibench_helpdesk}[domain]
    task = make(**args)
    if scenarios is not None:
        ids = set(scenarios.split(",")) if isinstance(scenarios, str) else set(scenarios)
        unknown = ids - {str(s.id) for s in task.dataset}
        assert not unknown, f"unknown scenario ids {unknown}"
        task.dataset = task.dataset.filter(lambda s: str(s.id) in ids)
    return task


_LOG_DIR = None


def default_log_dir() -> str:
    """One temporary folder per test session: tests never write into ./logs."""
    global _LOG_DIR
    if _LOG_DIR is None:
        import atexit
        import tempfile

        _LOG_DIR = tempfile.mkdtemp(prefix="pibench-pytest-logs-")
        atexit.register(shutil.rmtree, _LOG_DIR, True)
    return _LOG_DIR


def run_eval(task, **kwargs):
    """Run one task with no model and return its EvalLog (logs in a temporary folder)."""
    from inspect_ai import eval as inspect_eval

    kwargs.setdefault("model", "none")
    kwargs.setdefault("display", "none")
    kwargs.setdefault("log_dir", default_log_dir())
    logs = inspect_eval(task, **kwargs)
    assert len(logs) == 1
    return logs[0]


def full_score(sample):
    """The sample's pibench Score with its full record as metadata (the record a log keeps in the
    scorer's info event, read back by the public `score_record`; the Score itself is slim)."""
    from pibench_inspect.scoring.record import score_record

    return sample.scores["pibench_scorer"].model_copy(update={"metadata": score_record(sample)})


def sample_scores(log) -> dict[str, "object"]:
    """scenario id -> the pibench Score of each sample (first epoch), with its full record."""
    out = {}
    for s in log.samples or []:
        if str(s.id) not in out:
            out[str(s.id)] = full_score(s)
    return out


def mock_outputs(*items, usage=None):
    """mockllm outputs: a string is a text reply, a (tool, arguments, call_id) tuple a tool call.
    Every output carries `usage` (without it mockllm downloads a tokenizer)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    usage = usage or ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    out = []
    for it in items:
        o = (ModelOutput.for_tool_call("mockllm/model", it[0], it[1], tool_call_id=it[2])
             if isinstance(it, tuple) else ModelOutput.from_content("mockllm/model", it))
        o.usage = usage
        out.append(o)
    return out


def ctrl_c_default() -> None:
    """preexec_fn of a process a test interrupts with SIGINT: a non-interactive shell starts its
    background jobs (`cmd &`, e.g. CI launched that way) with SIGINT ignored, and the children
    inherit it, so the Ctrl-C a test sends would never arrive. A terminal's foreground job, which
    the tests stand for, has the default action."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
