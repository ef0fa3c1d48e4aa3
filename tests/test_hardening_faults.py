"""Hardening: a model provider that fails on some samples is retried as configured, then the
sample is recorded as an error while the other samples finish (fail_on_error=False); errors
are counted apart from completed samples."""

from __future__ import annotations

import sys

from inspect_ai.model import GenerateConfig, get_model

from conftest import MINI, ROOT, run_eval

sys.path.insert(0, str(ROOT / "bench"))
import standin  # noqa: E402  (registers the pibench-standin provider)

from conftest import registered  # noqa: E402

FAILING = "MINI_002_FINAL_SALE"
MAX_RETRIES = 2


def standin_model(**args):
    return get_model(
        f"{standin.PROVIDER}/replay",
        config=GenerateConfig(max_retries=MAX_RETRIES, max_connections=10),
        latency=0.0,
        source=str(MINI),
        **args,
    )


def test_persistent_fault_is_retried_then_the_sample_errors_and_the_rest_finish():
    model = standin_model(fail_ids=FAILING)
    log = run_eval(registered(source=str(MINI), user="scripted"), model=model, fail_on_error=False)
    assert log.status == "success", log.error
    by_id = {str(s.id): s for s in log.samples}
    assert set(by_id) == {"MINI_001_REFUND_OK", FAILING, "MINI_003_BIG_ORDER"}
    # the failing sample: every attempt raised; the first call plus the configured retries
    api = model.api
    assert api.failures[FAILING] == api.calls[FAILING] == MAX_RETRIES + 1
    bad = by_id[FAILING]
    assert bad.error is not None and "StandinFault" in bad.error.message + bad.error.traceback
    # the others finished and were scored
    for sid, s in by_id.items():
        if sid != FAILING:
            assert s.error is None
            assert s.scores["pibench_scorer"].value["all_passed"] == 1.0
    # errors are counted separately from completed samples
    assert log.results.total_samples == 3
    assert log.results.completed_samples == 2
    assert sum(1 for s in log.samples if s.error) == 1
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert metrics["pass"] == 1.0  # over the completed samples only


def test_transient_fault_is_retried_and_the_sample_completes():
    model = standin_model(fail_ids=FAILING, fail_times=1)
    log = run_eval(registered(source=str(MINI), user="scripted", scenarios=FAILING), model=model,
                   fail_on_error=False)
    sample = log.samples[0]
    assert sample.error is None
    assert model.api.failures[FAILING] == 1
    assert sample.scores["pibench_scorer"].value["all_passed"] == 1.0
    assert log.results.completed_samples == 1


def test_fail_on_error_true_stops_the_eval_with_an_error():
    model = standin_model(fail_ids=FAILING)
    log = run_eval(registered(source=str(MINI), user="scripted"), model=model, fail_on_error=True)
    assert log.status == "error"
    assert "StandinFault" in str(log.error)
