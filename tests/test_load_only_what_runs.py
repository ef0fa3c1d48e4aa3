"""Issue 42, item 7: a run loads only what it runs.

`--sample-id` is read when the task is built (runtime/inspect_internals.eval_sample_ids), so the
scenarios it does not select are read for their id alone: not parsed, not validated, not checked
against their domain (scenario/catalog.peek). The time this saves is measured in bench/startup.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import MINI, mini_scenario

BIN = Path(sys.executable).parent


def test_peek_leaves_out_only_what_the_selection_cannot_want(tmp_path):
    from pibench_inspect.runtime.inspect_internals import sample_id_matcher
    from pibench_inspect.scenario.catalog import peek

    only = sample_id_matcher(["WANTED*"])

    def peeked(text: str):
        path = tmp_path / "s.json"
        path.write_text(text)
        return peek(path, tmp_path, only)

    assert peeked(json.dumps({"meta": {"scenario_id": "OTHER", "domain": "retail"}})) == ("OTHER", "retail")
    assert peeked(json.dumps({"meta": {"scenario_id": "WANTED_1"}})) is None  # wanted: loaded in full
    # every "scenario_id" in the text is a candidate: a decoy never hides the wanted id
    assert peeked(json.dumps({"notes": {"scenario_id": "OTHER"}, "meta": {"scenario_id": "WANTED_2"}})) is None
    # an id written with escapes is read as JSON reads it
    assert peeked('{"meta": {"scenario_id": "WANT\\u0045D_3"}}') is None
    # no readable id (an escaped key, not JSON, nested past the parser): loaded in full, which says why
    assert peeked('{"meta": {"scenario\\u005fid": "OTHER"}}') == ("OTHER", "")
    assert peeked("not json") is None and peeked("[" * 100000) is None


def test_a_source_loaded_for_some_ids_knows_the_others_by_id():
    from pibench_inspect.runtime.inspect_internals import sample_id_matcher
    from pibench_inspect.scenario.catalog import load_set

    full, part = load_set(MINI), load_set(MINI, only=sample_id_matcher(["MINI_002*"]))
    assert list(part.entries) == ["MINI_002_FINAL_SALE"]
    assert sorted([*part.entries, *part.unloaded]) == sorted(full.entries)
    assert set(part.unloaded.values()) == {"mini"}


@pytest.mark.slow
def test_a_one_scenario_run_reads_no_other_scenario(tmp_path):
    """A broken scenario file beside the one asked for: never parsed, never warned about; the
    log's dataset is the one scenario."""
    src = tmp_path / "src"
    (src / "scenarios" / "mini").mkdir(parents=True)
    shutil.copytree(MINI / "domains", src / "domains")
    (src / "scenarios" / "mini" / "ok.json").write_text(json.dumps(mini_scenario()))
    broken = mini_scenario()
    broken["meta"]["scenario_id"] = "MINI_BROKEN"
    broken["label"] = "MAYBE"
    (src / "scenarios" / "mini" / "broken.json").write_text(json.dumps(broken))
    r = subprocess.run([str(BIN / "inspect"), "eval", "pibench_inspect/pibench", "-T", f"source={src}",
                        "-T", "agent=oracle", "-T", "user=scripted", "--model", "none", "--sample-id",
                        "MINI_001_REFUND_OK", "--display", "plain", "--log-dir", str(tmp_path / "logs")],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "MINI_BROKEN" not in r.stdout + r.stderr and "skipping invalid" not in r.stdout + r.stderr
    (path,) = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path), header_only=True)
    assert log.eval.dataset.samples == 1 and log.eval.dataset.sample_ids == ["MINI_001_REFUND_OK"]
    assert log.status == "success" and log.results.completed_samples == 1


def test_filters_over_a_selection_refuse_only_what_no_scenario_could_match():
    """-T label=DENY,ESCALATE with --sample-id of a DENY scenario: ESCALATE is a label, absent from
    the selection only; a misspelt label is still refused."""
    from pibench_inspect.cli.refusal import Refusal
    from pibench_inspect.scenario.catalog import load_set
    from pibench_inspect.task import select
    from pibench_inspect.task_args import TaskArgs

    (entry,) = [e for e in load_set(MINI).entries.values() if e.scenario.expected == "DENY"]
    assert select([entry], TaskArgs(label=["DENY", "ESCALATE"]), partial=True) == [entry]
    with pytest.raises(Refusal, match="'ESCALATE' matches no scenario here"):
        select([entry], TaskArgs(label=["DENY", "ESCALATE"]))  # the whole set: ESCALATE is in none
    with pytest.raises(Refusal, match="matches no scenario here"):
        select([entry], TaskArgs(label=["ESCALATE"]), partial=True)  # nothing left
