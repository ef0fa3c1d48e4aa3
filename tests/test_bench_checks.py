"""Issue 27: a bench never compares against a failed run. Inspect exits 0 on a run that ended in
`error`; bench/floor.py reads each run's log and fails loudly instead of printing a figure."""

from __future__ import annotations

import json
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import floor  # noqa: E402
from _common import FailedRun, check_run  # noqa: E402


def test_the_floor_bench_fails_loudly_on_a_bare_run_that_errored(tmp_path):
    # a bare task whose sample cannot run (its turn count is not a number): the run ends in
    # `error`, yet `inspect eval` exits 0 (timed() raises only on a non-zero exit)
    (tmp_path / "shape.json").write_text(json.dumps({"A": "not a number", "B": 1}))
    log_dir = str(tmp_path / "bare")
    with pytest.raises(FailedRun) as err:
        floor.run(floor.bare_cmd(tmp_path / "shape.json", log_dir), log_dir, 2, "bare run")
    message = str(err.value)
    assert "bare run FAILED, not a measurement" in message and "'error'" in message and "0 of 2" in message
    assert isinstance(err.value, SystemExit)  # the bench exits (non-zero: the code is the message)


def test_a_complete_bare_run_is_measured(tmp_path):
    (tmp_path / "shape.json").write_text(json.dumps({f"S{i}": 1 for i in range(3)}))
    log_dir = str(tmp_path / "bare")
    r = floor.run(floor.bare_cmd(tmp_path / "shape.json", log_dir, epochs=2), log_dir, 6, "bare run")
    assert r["log_bytes_per_sample"] > 0 and r["wall"] > 0 and r["cpu"] > 0
    # a run short of samples is refused too, whatever its status
    with pytest.raises(FailedRun, match="6 of 7 samples"):
        check_run(log_dir, 7, "bare run")


def test_memory_kept_per_sample_is_the_slope_over_finished_samples():
    done = [float(t) for t in range(100)]  # one sample finished each second
    trace = [(t + 0.5, 1000 + 30 * (t + 1)) for t in range(100)]  # 30 KB more per finished sample
    assert floor.kept_per_sample(trace, done) == pytest.approx(30.0)
    assert floor.kept_per_sample(trace, done[:10]) is None  # too few samples to say


def test_the_bare_run_with_calls_makes_the_tool_calls_through_inspect(tmp_path):
    # the "bare + calls" shape: per agent turn, the lengths of the tool results it got
    (tmp_path / "calls.json").write_text(json.dumps({"A": [[120, 7], [], [30]], "B": [[]]}))
    log_dir = str(tmp_path / "calls")
    floor.run(floor.bare_cmd(tmp_path / "calls.json", log_dir), log_dir, 2, "bare run with the tool calls")
    from inspect_ai.log import list_eval_logs, read_eval_log

    log = read_eval_log(list_eval_logs(log_dir)[0].name)
    by_id = {s.id: s for s in log.samples}
    a, b = by_id["A"], by_id["B"]
    assert [len(m.text) for m in a.messages if m.role == "tool"] == [120, 7, 30]
    assert sum(1 for e in a.events if e.event == "tool") == 3 and sum(1 for e in a.events if e.event == "model") == 3
    assert not [m for m in b.messages if m.role == "tool"] and sum(1 for e in b.events if e.event == "model") == 1


def test_the_kept_count_counts_each_object_once_and_leaves_out_the_shared():
    import kept

    shared = ["x" * 1000]
    own = ["y" * 10]
    a, b = [shared, own], [shared]
    seen: set[int] = set()
    kept._walk([shared], seen)  # the dataset's: not per finished sample
    alone = kept._walk([a, b], seen)
    assert alone == sys.getsizeof(a) + sys.getsizeof(b) + sys.getsizeof(own) + sys.getsizeof(own[0])
    # without the exclusion the shared list and its text are counted, once
    assert kept._walk([a, b], set()) == alone + sys.getsizeof(shared) + sys.getsizeof(shared[0])


def test_the_local_model_bench_reads_what_a_score_says_from_its_record(tmp_path):
    """Issue 42: bench/local_model.py failed its own checks ("ended agent_overflow without a
    reason", "no NL check was judged") on samples whose score record held both: it read the
    Score's metadata, which keeps only what the metrics read since the record became an event.
    Offline, on the same kinds of samples: an agent whose model overflowed, a judge that fails."""
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    import local_model
    from conftest import MINI, mock_outputs, registered, run_eval

    usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    overflow = ModelOutput.from_content("mockllm/model", "This model's maximum context length is 8192 tokens.",
                                        stop_reason="model_length")
    overflow.usage = usage
    task = registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", user="scripted", judge="off")
    run_eval(task, model=get_model("mockllm/model", custom_outputs=[overflow]), log_dir=str(tmp_path / "agent"))
    rows, problems = local_model.check_log("agent", tmp_path / "agent")
    assert problems == [] and "agent_overflow: the agent's model" in rows[0][3], rows

    task = registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="oracle", user="scripted", judge="on")
    judge = get_model("mockllm/model", custom_outputs=mock_outputs("I think so.", "Probably yes?"))
    run_eval(task, model_roles={"grader": judge}, log_dir=str(tmp_path / "judge"))
    rows, problems = local_model.check_log("judge", tmp_path / "judge")
    assert problems == [] and rows[0][4].startswith("judge_error (judge error: unparseable answer"), rows
