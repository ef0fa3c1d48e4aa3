"""Issue 27: the state changes stored once, as a diff; the policy once per log for scripted
agents; short per-turn info events; and logs written before all this still re-score and render."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st
from inspect_ai.log import read_eval_log, write_eval_log

from conftest import ROOT, mini_copies, registered, run_eval, full_score
from pibench_inspect.analysis import final_state
from pibench_inspect.cli import main
from pibench_inspect.conversation.keys import STATE_CHANGES
from pibench_inspect.conversation.orchestrator import CUT
from pibench_inspect.environment.merge import apply_changes, apply_diff, compact_changes, diff_value

OLD = ROOT / "tests" / "fixtures" / "logs"
OLD_MINI = OLD / "old_mini_oracle.eval"
OLD_SHIPPED = OLD / "old_shipped_oracle.eval"

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([1.0, 0.5]) | st.sampled_from(["a", "b", ""]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abcde"), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(json_values, json_values)
def test_a_stored_diff_rebuilds_the_changed_value_exactly(before, after):
    doc = {"coll": before, "other": [1, 2]}
    stored = json.loads(compact_changes(doc, json.dumps({"keys": ["coll", "other"], "changed": {"coll": after}})))
    rebuilt = apply_changes(doc, stored)
    # JSON text equal: 1, 1.0 and true stay apart, and key order is kept
    assert json.dumps(rebuilt) == json.dumps({"coll": after, "other": [1, 2]})
    assert stored["keys"] == ["coll", "other"] and "changed" not in stored


def test_a_diff_holds_only_what_changed():
    rows = [{"id": i, "status": "open", "note": "x" * 50} for i in range(200)]
    keyed = {f"O-{i}": {"status": "open", "total": i} for i in range(200)}
    doc = {"rows": rows, "keyed": keyed}
    after_rows = [*rows, {"id": 200, "status": "new"}]
    after_keyed = {**keyed, "O-7": {**keyed["O-7"], "status": "refunded"}}
    text = compact_changes(doc, json.dumps({"keys": ["rows", "keyed"], "changed": {"rows": after_rows, "keyed": after_keyed}}))
    assert len(text) < 200, text  # the collections in full are ~15 KB
    assert json.loads(text)["diff"] == {"rows": {"+": [{"id": 200, "status": "new"}]},
                                      "keyed": {"d": {"O-7": {"d": {"status": {"=": "refunded", "was": "open"}}}}}}
    # a collection written back to what it was stores nothing
    same = json.loads(compact_changes(doc, json.dumps({"keys": ["rows", "keyed"], "changed": {"rows": rows}})))
    assert same["diff"] == {}
    # a value whose type changed (1 -> 1.0) is a change, not an equal value
    changed = json.loads(compact_changes({"n": {"a": 1}}, json.dumps({"keys": ["n"], "changed": {"n": {"a": 1.0}}})))
    assert json.dumps(apply_changes({"n": {"a": 1}}, changed)) == '{"n": {"a": 1.0}}'
    # removed keys and a new key order
    node = diff_value({"a": 1, "b": 2, "c": 3}, {"c": 3, "a": 1})
    assert list(apply_diff({"a": 1, "b": 2, "c": 3}, node)) == ["c", "a"]


def _rescore(path: Path, out: Path) -> dict:
    assert main(["rescore", str(path), "--out", str(out)]) == 0
    return {(s.id, s.epoch): full_score(s) for s in read_eval_log(str(out)).samples}


@pytest.mark.parametrize("fixture", [OLD_MINI, OLD_SHIPPED], ids=["mini", "shipped"])
def test_old_logs_still_give_their_final_state_rescore_and_render(fixture, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the mini log's source is relative to the repository root
    log = read_eval_log(str(fixture))
    assert all(json.loads(s.store[STATE_CHANGES]).get("changed") is not None for s in log.samples)  # the old format
    for s in log.samples:
        state = final_state(log, s)
        changes = json.loads(s.store[STATE_CHANGES])
        assert list(state) == changes["keys"]
        for key, value in changes["changed"].items():
            assert state[key] == value
    logged = {(s.id, s.epoch): full_score(s) for s in log.samples}
    again = _rescore(fixture, tmp_path / "rescored.eval")
    assert again.keys() == logged.keys()
    for k, sc in again.items():
        assert sc.value == logged[k].value
        # a passed sample's changes are its store's, no longer repeated in the record (format 2 on)
        assert sc.value["all_passed"] == 1.0 and "state_changes" not in sc.metadata and logged[k].metadata["state_changes"]
    rescored = read_eval_log(str(tmp_path / "rescored.eval"))
    assert [final_state(rescored, s) for s in rescored.samples] == [final_state(log, s) for s in log.samples]
    assert main(["report", str(fixture), "--out", str(tmp_path / "report")]) == 0
    assert "oracle" in (tmp_path / "report" / "report.md").read_text()


def test_inspect_score_rescores_an_old_log(tmp_path):
    # the log names the absolute source of the checkout that wrote it: point it at this one's
    old = read_eval_log(str(OLD_MINI))
    old.eval.scorers[0].options["source"] = str(ROOT / "tests" / "fixtures" / "mini")
    write_eval_log(old, str(tmp_path / "old.eval"))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    inspect = str(Path(sys.executable).with_name("inspect"))
    r = subprocess.run([inspect, "score", str(tmp_path / "old.eval"), "--overwrite", "--action", "overwrite", "--display", "none"],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    log = read_eval_log(str(tmp_path / "old.eval"))
    before = {s.id: s.scores["pibench_scorer"].value for s in read_eval_log(str(OLD_MINI)).samples}
    assert {s.id: s.scores["pibench_scorer"].value for s in log.samples} == before


def test_a_new_keyless_log_stores_a_diff_and_names_the_policy(mini_source, tmp_path):
    log = run_eval(registered(source=str(mini_source), agent="oracle", user="scripted"), log_dir=str(tmp_path))
    old = {s.id: s for s in read_eval_log(str(OLD_MINI)).samples}
    old_log = read_eval_log(str(OLD_MINI))
    policy = (mini_source / "domains" / "mini" / "policy.md").read_text().strip()
    shared = log.eval.metadata["policies"]["mini"]
    assert shared["text"] == policy
    for s in log.samples:
        stored = json.loads(s.store[STATE_CHANGES])
        assert "diff" in stored and "changed" not in stored
        # the same final state as the earlier format gave for the same run
        assert final_state(log, s) == final_state(old_log, old[s.id], source=mini_source)
        assert s.scores["pibench_scorer"].value == old[s.id].scores["pibench_scorer"].value
        system = s.messages[0].text
        assert policy not in system and shared["sha256"] in system and "</policy>" in system
        # per-turn info events are short (no attachment each); the whole text is the message
        # (the score's record is one info event of the scoring span: scoring/record.py)
        infos = [e for e in s.events if e.event == "info" and e.source != "pibench_scorer"]
        assert infos and all(len(str(e.data)) <= 100 for e in infos)



def test_a_turn_cut_short_says_where_the_whole_text_is(tmp_path):
    """A scripted party's turn longer than TURN_CHARS shows its start and ends saying the whole
    text is in the Messages tab, still within TURN_CHARS (no attachment), and is the start of
    that message (issue 42: turns were cut with no pointer)."""
    long_opening = "I need a refund for order ORD-1001, " + "which arrived broken and late, " * 8 + "please."

    def patch(i, d):
        d["user_simulation"]["initial_user_message"] = long_opening

    src = mini_copies(tmp_path, 1, "LONG", patch)
    log = run_eval(registered(source=str(src), agent="oracle", user="scripted"), log_dir=str(tmp_path / "logs"))
    (sample,) = log.samples
    turns = [e for e in sample.events if e.event == "info" and e.source == "user (scripted)"]
    shown = str(turns[0].data)
    assert len(shown) <= 100 and shown.endswith(CUT) and shown == shown.strip()
    assert long_opening.startswith(shown.removesuffix(CUT)) and len(shown.removesuffix(CUT)) >= 60
    assert sample.messages[1].text == long_opening  # the whole text: the sample's message
    assert all(len(str(e.data)) <= 100 for e in sample.events if e.event == "info" and e.source != "pibench_scorer")


def test_a_model_agent_still_gets_the_whole_policy(mini_source, tmp_path):
    from inspect_ai.model import ModelOutput, get_model

    model = get_model("mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", "ok")] * 20)
    log = run_eval(registered(source=str(mini_source), scenarios="MINI_001_REFUND_OK", agent="model", user="scripted"),
                   model=model, log_dir=str(tmp_path))
    policy = (mini_source / "domains" / "mini" / "policy.md").read_text().strip()
    assert policy in log.samples[0].messages[0].text
    assert "policies" not in (log.eval.metadata or {})


def test_the_frozen_seed_and_its_plain_copy_are_the_same_value():
    """The initial state holds the domain seed's read-only objects (environment/seed.freeze),
    the final state plain ones: rows nobody changed are not listed as (empty) changes."""
    from pibench_inspect.environment.seed import freeze

    before = freeze({"orders": {"O-1": {"status": "open", "items": [1, 2]}, "O-2": {"status": "open"}}})
    after = {"orders": {"O-1": {"status": "refunded", "items": [1, 2]}, "O-2": {"status": "open"}}}
    assert diff_value(before, after) == {"d": {"orders": {"d": {"O-1": {"d": {"status": {"=": "refunded", "was": "open"}}}}}}}
    assert diff_value(before, json.loads(json.dumps(before))) == {}
    # scalars keep their type: 1 and 1.0 differ
    assert diff_value(freeze({"n": 1}), {"n": 1.0}) == {"d": {"n": {"=": 1.0, "was": 1}}}


def test_a_diff_gives_the_old_value_of_what_it_replaced_and_reads_without_it():
    """Issue 42: `=` gives the value now and `was` the one it replaced (when short); a diff
    written before `was` existed (the same without it) rebuilds the same state."""
    from pibench_inspect.environment.merge import DIFF_LEGEND, WAS_MAX

    before = {"O-1": {"status": "open", "total": 40, "note": "x" * (WAS_MAX + 1)}}
    after = {"O-1": {"status": "refunded", "total": 0, "note": "short"}}
    node = diff_value(before, after)
    assert node == {"d": {"O-1": {"d": {"status": {"=": "refunded", "was": "open"}, "total": {"=": 0, "was": 40},
                                        "note": {"=": "short"}}}}}  # a long old value is the initial state's
    old = json.loads(json.dumps(node).replace(', "was": "open"', "").replace(', "was": 40', ""))
    assert "was" not in json.dumps(old) and apply_diff(before, old) == apply_diff(before, node) == after
    assert set(DIFF_LEGEND) == {"keys", "=", "d", "x", "k", "+", "i"}  # every key a diff uses, explained
    from conftest import MINI
    from pibench_inspect.task import pibench_task

    task = pibench_task(None, source=str(MINI), agent="oracle", user="scripted")
    assert task.metadata["state_changes"] == DIFF_LEGEND  # in every log, for the viewer's Task tab

def test_a_new_score_is_compact_and_reads_as_an_old_one(mini_source, tmp_path):
    """Score format 3: the Score Inspect keeps holds only what the metrics read and its record's
    ref; the record (one info event of the scoring span) keeps each check with its type, verdict
    and detail only (no repeated outcome id, status, tier, empty evidence or the scenario's
    notes), and nothing the value or the checks give is repeated. Every reader goes through
    score_record / check_list / the value, so the report rows of the new log and of the old
    fixture (the same plays) are the same."""
    from pibench_inspect.analysis import checks, samples
    from pibench_inspect.scoring.record import RECORD_SOURCE, SCORE_FORMAT, score_record

    log = run_eval(registered(source=str(mini_source), agent="oracle", user="scripted"), log_dir=str(tmp_path))
    for s in log.samples:
        slim = s.scores["pibench_scorer"].metadata
        assert slim["format"] == SCORE_FORMAT == 3
        assert set(slim) <= {"format", "ref", "termination", "semantic_score", "malformed_calls", "credit"}, slim
        (event,) = [e for e in s.events if e.event == "info" and e.source == RECORD_SOURCE]
        assert event.data["ref"] == slim["ref"]
        md = score_record(s)
        assert md["checks"] and md["tool_calls"] and md["termination"] == slim["termination"]
        assert not {"all_passed", "partial_credit", "event_flags", "dimensions", "label", "column", "domain"} & set(md)
        assert {"label", "column", "domain"} <= set(s.metadata)  # the sample's own
        # passed: its state changes are the store's alone (a failed sample's: test_a_failed_sample_explained_at_a_glance)
        assert s.scores["pibench_scorer"].value["all_passed"] == 1.0 and "state_changes" not in md
        for key, record in md["checks"].items():
            assert set(record) == {"type", "passed", "detail"}, (key, record)
    old = read_eval_log(str(OLD_MINI))
    assert all("format" not in s.scores["pibench_scorer"].metadata for s in old.samples)  # the old layout
    cols = ["scenario_id", "outcome_id", "type", "tier", "status", "passed", "detail", "notes", "reason"]
    new_checks = checks([log.location]).sort_values(["scenario_id", "outcome_id"])[cols].reset_index(drop=True)
    old_checks = checks([str(OLD_MINI)]).sort_values(["scenario_id", "outcome_id"])[cols].reset_index(drop=True)
    assert len(new_checks) > 0 and new_checks.astype(str).equals(old_checks.astype(str))
    keep = ["scenario_id", "label", "column", "domain", "all_passed", "partial_credit", "termination"]
    assert samples([log.location])[keep].astype(str).equals(samples([str(OLD_MINI)])[keep].astype(str))


def test_check_list_fills_a_compact_record_and_keeps_a_full_one():
    from pibench_inspect.checks.policy import CheckResult
    from pibench_inspect.scoring.explain import check_list, compact_check

    full = [CheckResult("E1", "tool_called", True, "ok", notes="n1"),
            CheckResult("E1", "tool_called", False, "again", evidence={"reason": "late"}, notes="n1"),
            CheckResult("N1", "NL_JUDGE", None, "judge failed", tier=2, status="judge_error"),
            CheckResult("X", "tool_called", None, "not evaluated", tier=2)]
    compact = {"E1": compact_check(full[0], "E1"), "E1#2": compact_check(full[1], "E1#2"),
               "N1": compact_check(full[2], "N1"), "X": compact_check(full[3], "X")}
    assert compact["E1"] == {"type": "tool_called", "passed": True, "detail": "ok"}
    assert compact["E1#2"]["outcome_id"] == "E1" and compact["E1#2"]["evidence"] == {"reason": "late"}
    assert compact["N1"]["status"] == "judge_error" and "tier" not in compact["N1"]  # NL: tier 2 by type
    assert compact["X"]["tier"] == 2  # a tier other than its type's is kept
    notes = {"E1": "n1"}
    assert check_list(compact, notes) == [r.as_dict() for r in full]
    # a log before format 2: records in full, keyed or listed, read as they were written
    assert check_list({f"k{i}": r.as_dict() for i, r in enumerate(full)}) == [r.as_dict() for r in full]
    assert check_list([r.as_dict() for r in full]) == [r.as_dict() for r in full]


def test_a_score_record_whose_event_is_gone_says_so(mini_source, tmp_path):
    """A format 3 log rewritten without its events still gives the slim metadata, marked."""
    from pibench_inspect.scoring.record import score_record

    log = run_eval(registered(source=str(mini_source), scenarios="MINI_001_REFUND_OK", agent="oracle",
                              user="scripted"), log_dir=str(tmp_path))
    s = log.samples[0]
    assert score_record(s)["checks"] and "record_missing" not in score_record(s)
    bare = s.model_copy(update={"events": []})
    md = score_record(bare)
    assert md["record_missing"] is True and md["termination"] == "user_stop" and "checks" not in md
