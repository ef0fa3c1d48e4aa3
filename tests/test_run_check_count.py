"""The end-of-run check counts the sample runs an .eval log holds from the zip's directory
(runtime/run_check._samples_present): the same count as Inspect's sample summaries on real
logs, and a log missing a sample run is reported as losing it."""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from inspect_ai.log import read_eval_log_sample_summaries

from pibench_inspect.runtime.run_check import _samples_present, log_problem

FIXTURES = Path(__file__).parent / "fixtures" / "logs"


@pytest.mark.parametrize("name", ["old_mini_oracle.eval", "old_shipped_oracle.eval"])
def test_count_matches_inspect_summaries(name: str) -> None:
    path = FIXTURES / name
    log = SimpleNamespace(samples=None, location=str(path))
    assert _samples_present(log) == len(read_eval_log_sample_summaries(str(path))) > 0


def _log(path: Path, total: int) -> SimpleNamespace:
    return SimpleNamespace(samples=None, location=str(path), status="success", error=None,
                           results=SimpleNamespace(total_samples=total))


def test_missing_sample_run_is_a_problem(tmp_path: Path) -> None:
    path = tmp_path / "run.eval"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("header.json", "{}")
        archive.writestr("summaries.json", "[]")
        archive.writestr("samples/A_epoch_1.json", "{}")
        archive.writestr("samples/B_epoch_1.json", "{}")
    assert log_problem(_log(path, 2)) is None
    problem = log_problem(_log(path, 3))
    assert problem is not None and "holds 2 of the 3 sample runs" in problem


def test_unreadable_log_holds_nothing(tmp_path: Path) -> None:
    path = tmp_path / "broken.eval"
    path.write_bytes(b"not a zip")
    problem = log_problem(_log(path, 1))
    assert problem is not None and "holds 0 of the 1" in problem
