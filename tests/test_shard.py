"""Sharded runs (`-T shard=K/N`, issue 13 item 3): stable, disjoint parts of a selection, and
`pibench report` over the shards' logs is the report of the unsharded run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import MINI, registered, run_eval
from pibench_inspect.cli import main as pibench_main
from pibench_inspect.scenario.shard import in_shard, parse_shard, shard_of

INSPECT = str(Path(sys.executable).with_name("inspect"))


def test_shard_values_are_checked():
    assert parse_shard(None) is None and parse_shard("2/3") == (2, 3)
    for bad in ("3", "0/3", "4/3", "a/b", "1/0", "1/2/3"):
        with pytest.raises(ValueError, match="K/N"):
            parse_shard(bad)
    with pytest.raises(ValueError, match="-T shard"):
        registered(source=str(MINI), agent="oracle", user="scripted", shard="4/3")
    # a part with no scenario in it says so
    with pytest.raises(ValueError, match="-T shard=2/3: no scenario"):
        registered(source=str(MINI), agent="oracle", user="scripted", shard="2/3")


def test_shards_are_stable_and_partition_the_selection():
    # fixed by the id alone (SHA-256), never by Python's per-process string hash
    assert [shard_of(s, 3) for s in ("MINI_001_REFUND_OK", "MINI_003_BIG_ORDER_B", "MINI_002_FINAL_SALE_B")] == [1, 3, 2]
    ids = [f"S_{i}" for i in range(200)]
    parts = [[s for s in ids if in_shard(s, f"{k}/7")] for k in range(1, 8)]
    assert sorted(sum(parts, [])) == sorted(ids) and all(parts)


def six_scenarios(root: Path) -> Path:
    """The mini source plus a renamed copy of each scenario: 6 scenarios over 3 shards."""
    src = root / "src"
    shutil.copytree(MINI, src)
    folder = src / "scenarios" / "mini"
    for f in sorted(folder.glob("*.json")):
        d = json.loads(f.read_text())
        d["meta"]["scenario_id"] += "_B"
        (folder / f"{f.stem}_b.json").write_text(json.dumps(d))
    return src


def normalized(payload: dict) -> dict:
    """A results.json without what differs between any two runs (wall time, log paths, ids)."""
    payload = json.loads(json.dumps(payload))
    payload["results"][0].pop("time_used")
    for row in payload["results"][0]["scenario_details"]:
        row.pop("duration")
    payload["pibench_inspect"].pop("provenance")
    payload["pibench_inspect"]["run"].pop("logs")  # 3 parts against 1 log: the one thing that differs
    return payload


@pytest.mark.slow
def test_three_shard_processes_report_exactly_the_unsharded_run(tmp_path: Path):
    src = six_scenarios(tmp_path)

    def run(logs: Path, *extra: str) -> subprocess.Popen:
        return subprocess.Popen(
            [INSPECT, "eval", "pibench_inspect/pibench", "-T", f"source={src}", "-T", "agent=oracle",
             "-T", "user=scripted", "--epochs", "2", "--model", "none", "--display", "none",
             "--log-dir", str(logs), *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )

    procs = [run(tmp_path / "shards", "-T", f"shard={k}/3") for k in (1, 2, 3)]
    # the unsharded run in this process while the shards run in theirs
    whole_log = run_eval(registered(source=str(src), agent="oracle", user="scripted"), epochs=2,
                         log_dir=str(tmp_path / "all"))
    assert whole_log.status == "success"
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0, out
    shard_logs = sorted((tmp_path / "shards").glob("*.eval"))
    assert len(shard_logs) == 3

    assert pibench_main(["report", str(tmp_path / "all"), "--out", str(tmp_path / "r-all")]) == 0
    assert pibench_main(["report", str(tmp_path / "shards"), "--out", str(tmp_path / "r-shards")]) == 0
    whole = json.loads((tmp_path / "r-all" / "results.json").read_text())
    parts = json.loads((tmp_path / "r-shards" / "results.json").read_text())
    # every scenario ran, each in one shard, with all its epochs
    assert len(parts["pibench_inspect"]["provenance"]["logs"]) == 3
    assert len(whole["results"][0]["task_rewards"]) == 12
    assert normalized(parts) == normalized(whole)
