"""Text DuckDB cannot store (a lone surrogate) is refused by name wherever it enters the state,
the same on every kind of state; and the domain seed shared by every sample cannot be edited
in place (issue 24)."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from conftest import MINI, mini_copies
from pibench_inspect.environment.effects import ToolCallError, execute
from pibench_inspect.environment.merge import domain_document
from pibench_inspect.environment.state import StateDB, StateError
from pibench_inspect.parity.execute import execute_original
from pibench_inspect.scenario.catalog import load_set

LONE = "\ud800"
KINDS = ["solver", "own instance", "private catalog"]


def make_state(domain, scenario, kind):
    doc = domain_document(domain, scenario)
    if kind == "solver":
        return StateDB(doc, allow_sql=False, seed=domain.seed_state, limits=domain.config.limits)
    return StateDB(doc, allow_sql=kind == "own instance")


@pytest.fixture(scope="module")
def mini():
    return load_set(MINI).resolve("MINI_001_REFUND_OK")


def test_a_lone_surrogate_in_a_scenario_patch_is_a_named_scenario_error_at_load(tmp_path):
    def patch(i, d):
        env = d["environment_setup"]
        env.setdefault("initial_state_patch", {})["orders"] = {"O-9": {"status": "open", "note": "x" + LONE}}

    src = mini_copies(tmp_path, 2, "SUR", patch=lambda i, d: patch(i, d) if i == 1 else None)
    loaded = load_set(src)
    assert list(loaded.entries) == ["SUR_000"]
    [err] = loaded.errors
    assert err.path.endswith("sur_001.json")
    assert "environment_setup.initial_state_patch.orders.O-9.note" in str(err) and "lone surrogate" in str(err)


def test_a_lone_surrogate_in_a_domain_seed_is_a_named_error_at_load(mini_source):
    from pibench_inspect.domain.loader import load_domain
    from pibench_inspect.scenario.errors import ScenarioError

    db = mini_source / "domains" / "mini" / "db.json"
    seed = json.loads(db.read_text())
    first = next(iter(seed["orders"]))
    seed["orders"][first]["status"] = LONE
    db.write_text(json.dumps(seed))
    with pytest.raises(ScenarioError, match=f"orders.{first}.status: holds text that is not valid UTF-8"):
        load_domain(mini_source / "domains" / "mini")


@pytest.mark.parametrize("allow_sql", [False, True])
@pytest.mark.parametrize("doc, where", [
    ({"orders": {"O-1": {"status": LONE}}}, "field 'status'"),
    ({"orders": {LONE: {"status": "open"}}}, "the key"),
    ({"log": [{LONE: 1}]}, "a field name"),
    ({"tags": ["a", LONE]}, "field 'value'"),
    ({"ns": {"a": [{"x": [LONE]}]}}, "field 'x'"),
    ({"now": LONE}, "'now'"),
])
def test_a_document_holding_a_lone_surrogate_is_refused_when_loaded(doc, where, allow_sql):
    with pytest.raises(StateError, match="lone surrogate") as err:
        StateDB(doc, allow_sql=allow_sql)
    assert where in str(err.value)


@pytest.mark.parametrize("kind", KINDS)
def test_a_lone_surrogate_in_a_filter_or_a_write_is_refused_by_the_state_by_name(mini, kind):
    state = make_state(mini[1], mini[0], kind)
    try:
        before = state.export_text()
        for match in ("exact", "ci", "words"):
            with pytest.raises(StateError, match="the filter on '_key' holds text that is not valid UTF-8"):
                state.select("orders", {"_key": LONE}, match=match)
            with pytest.raises(StateError, match="the filter on 'status'"):
                state.update("orders", {"status": ["x", LONE]}, {"status": "y"}, match=match)
        with pytest.raises(StateError, match="field 'reason'"):
            state.insert("escalations", {"order_id": "O-1", "reason": LONE})
        with pytest.raises(StateError, match="field 'note'"):
            state.update("orders", {}, {"note": {"k": LONE}})
        assert state.export_text() == before
    finally:
        state.close()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tool, args, named", [
    ("lookup_order", {"order_id": LONE}, "'order_id'"),  # a filter
    ("lookup_order", {"order_id": "O-1" + LONE}, "'order_id'"),
    ("escalate", {"order_id": "O-1", "reason": "why " + LONE}, "'reason'"),  # a write
    ("refund_order", {"order_id": LONE, "amount": 1}, "'order_id'"),  # a write's filter
])
def test_a_lone_surrogate_argument_is_a_tool_error_naming_it_on_every_path(mini, kind, tool, args, named):
    scenario, domain = mini
    spec = domain.tool_index[tool]
    state = make_state(domain, scenario, kind)
    try:
        before = state.export_text()
        with pytest.raises(ToolCallError) as err:
            execute(spec, state, args)
        assert f"argument {named} holds text that is not valid UTF-8" in str(err.value)
        # replay of recorded calls (the original's error envelope) refuses it the same way
        content, error = execute_original(domain, {tool}, state, tool, args)
        assert error and f"argument {named} holds text that is not valid UTF-8" in json.loads(content)
        assert state.export_text() == before
    finally:
        state.close()


def test_the_shared_seed_cannot_be_edited_in_place_and_nothing_leaks_to_the_next_sample(mini):
    scenario, domain = mini
    seed = domain.seed_state
    pristine = json.dumps(seed)
    order = next(iter(seed["orders"].values()))
    doc = domain_document(domain, scenario)
    attempts = [
        lambda: order.__setitem__("status", "stolen"),
        lambda: order.update(status="stolen"),
        lambda: order.pop("status"),
        lambda: seed["orders"].clear(),
        lambda: seed.setdefault("extra", 1),
        lambda: doc["orders"][next(iter(doc["orders"]))].__setitem__("status", "stolen"),  # shared via the merge
        lambda: doc["refunds"].append({"x": 1}),
        lambda: doc["refunds"].extend([{"x": 1}]),
    ]
    for attempt in attempts:
        with pytest.raises(TypeError, match="shared by every sample"):
            attempt()
    # a sample changes its own state; what it reads is a copy
    a = make_state(domain, scenario, "solver")
    a.get("orders")[next(iter(seed["orders"]))]["status"] = "stolen"
    a.select("orders")[0]["status"] = "stolen"
    a.update("orders", {}, {"status": "stolen"})
    a.insert("refunds", {"order_id": "O-1", "amount": 1})
    a.close()
    assert json.dumps(seed) == pristine
    b = make_state(domain, scenario, "solver")
    try:
        assert b.export_text() == json.dumps(domain_document(domain, scenario))
        assert "stolen" not in json.dumps(b.select("orders")) and b.select("refunds") == []
    finally:
        b.close()
    # a copy is an ordinary value again
    for mutable in (copy.deepcopy(seed), pickle.loads(pickle.dumps(seed)), json.loads(json.dumps(seed))):
        next(iter(mutable["orders"].values()))["status"] = "changed"
        assert type(mutable) is dict
    assert json.dumps(seed) == pristine


def test_a_handler_putting_an_object_with_a_key_that_is_not_text_is_refused_by_name():
    # JSON objects have text keys; a handler's Python value can carry others (1, a tuple)
    state = StateDB({"orders": {"O-1": {"status": "open"}}, "count": 1})
    try:
        with pytest.raises(StateError, match=r"'orders'.*the key 7 is not text"):
            with state.transaction():
                state.put("orders", {"O-1": {"status": "open", "lines": {7: "x"}}})
        assert state.export() == {"orders": {"O-1": {"status": "open"}}, "count": 1}  # unchanged
        state.put("orders", {"O-2": {"status": "new"}})  # text keys are fine
        assert state.export()["orders"] == {"O-2": {"status": "new"}}
    finally:
        state.close()
