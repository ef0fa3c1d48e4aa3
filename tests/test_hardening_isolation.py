"""Hardening: 100 samples in flight at once never see each other's state: each scenario copy
carries a private marker in its initial_state_patch, and at the end every sample's stored final
state holds exactly its own marker and only its own writes."""

from __future__ import annotations

import pytest

from conftest import mini_copies, run_eval
from pibench_inspect.analysis import final_state
from conftest import registered

N = 100


@pytest.mark.slow
def test_one_hundred_concurrent_samples_keep_private_state(tmp_path):
    def private(i, d):
        sid = d["meta"]["scenario_id"]
        d["environment_setup"]["initial_state_patch"] = {
            "marker": {"owner": sid, "secret": f"s-{i * 7919 % 1000:03d}"},
            # a private customer per sample: a leak would show up as a foreign key here
            "customers": {f"C-{sid}": {"name": sid}},
        }

    src = mini_copies(tmp_path, N, "ISO100", private)
    log = run_eval(registered(source=str(src), agent="oracle", user="scripted"), max_samples=N)
    assert log.status == "success", log.error
    assert len(log.samples) == N
    for s in log.samples:
        i = int(str(s.id).rsplit("_", 1)[1])
        final = final_state(log, s)
        assert final["marker"] == {"owner": s.id, "secret": f"s-{i * 7919 % 1000:03d}"}
        foreign = [k for k in final.get("customers", {}) if k.startswith("C-ISO100_") and k != f"C-{s.id}"]
        assert not foreign, (s.id, foreign)
        # exactly this sample's own writes: one refund, one decision, ids from its own counter
        assert len(final["refunds"]) == 1 and len(final["decisions"]) == 1
        assert final["_id_counter"] == 2
        assert s.scores["pibench_scorer"].value["all_passed"] == 1.0
    # the samples really overlapped (otherwise this proves nothing about concurrency)
    starts = sorted((s.events[0].timestamp, s.id) for s in log.samples)
    ends = {s.id: s.events[-1].timestamp for s in log.samples}
    first_end = min(ends.values())
    assert sum(1 for t, _ in starts if t < first_end) > 1
