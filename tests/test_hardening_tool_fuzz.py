"""Hardening: bad tool arguments (wrong types, missing and extra arguments, huge strings, SQL
fragments, unicode) give the agent a tool error, leave the state unchanged, and never raise
anything but ToolCallError. Tested on every tool of every shipped domain through
`effects.execute`, and once through a real eval with a mockllm model emitting bad calls."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai.model import ModelOutput, ModelUsage, get_model

from conftest import MINI, run_eval
from pibench_inspect.conversation.arguments import fill_arguments
from pibench_inspect.analysis import final_state
from pibench_inspect.conversation.solver import TERMINATION
from pibench_inspect.environment.effects import ToolCallError, argument_errors, execute
from pibench_inspect.environment.merge import domain_document
from pibench_inspect.environment.state import StateDB
from pibench_inspect.scenario.catalog import load_set
from conftest import registered

SQL = [
    "'; DROP TABLE orders; --",
    "\" OR 1=1 --",
    "x') UNION SELECT * FROM _scalars --",
    "$order_id",
    "{order_id}",
    "$$now",
    "$id:DEC",
    "{{calls[0].id}}",
    "%s %d ?",
]
UNICODE = ["Zoë Ünïcødé", "\u202eevil\u202c", "emoji 🚀🔥", "零件", "\x00nul\x00", "\ud800 lone surrogate", "a\r\nb\tc", ""]
HUGE = ["A" * 200_000, "é" * 50_000]
ODD_STRINGS = SQL + UNICODE + HUGE
# one argument value per kind of hostility, for the sweep over every tool
HOSTILE = [
    SQL[0],
    SQL[2],
    "$order_id {order_id} {{calls[0].id}} $$now %s ?",
    "Zoë 🚀 \u202e 零件 \x00 a\r\nb",
    "\ud800 lone surrogate",
    HUGE[0],
]
WRONG_VALUES = [None, True, 0, -1, 2**70, 1e308, float("nan"), "", "1", [], ["x"], {}, {"$gt": 1}]


@lru_cache(maxsize=None)
def _set(source: str | None):
    return load_set(source)


def domains() -> list[tuple[str | None, str]]:
    out = []
    for source in (None, str(MINI)):
        seen = set()
        for e in _set(source).entries.values():
            if e.domain.name not in seen:
                seen.add(e.domain.name)
                out.append((source, e.scenario.scenario_id))
    return out


DOMAINS = domains()
IDS = [f"{_set(src).resolve(sid)[1].name}" for src, sid in DOMAINS]


def fresh_state(source: str | None, scenario_id: str):
    scenario, domain = _set(source).resolve(scenario_id)
    return domain, StateDB(domain_document(domain, scenario))


def assert_intact(before: dict, after: dict) -> None:
    """No collection lost, none shrank (tools only add or update)."""
    assert set(before) <= set(after), set(before) - set(after)
    for k, v in before.items():
        if isinstance(v, (list, dict)) and isinstance(after[k], (list, dict)):
            assert len(after[k]) >= len(v), k


def call(spec, db: StateDB, args: Any) -> tuple[str, Any]:
    """('error', message) | ('soft', payload) | ('ok', result); anything else raises."""
    try:
        result = execute(spec, db, args)
    except ToolCallError as err:
        assert str(err), "a tool error must say what is wrong"
        return "error", str(err)
    json.dumps(result, default=str)
    if isinstance(result, dict) and result.get("error") is True:
        return "soft", result
    return "ok", result


def bad_calls(spec) -> list[tuple[str, Any]]:
    """Calls the argument schema rejects."""
    props = spec.schema.get("properties", {})
    required = spec.schema.get("required", [])
    good = fill_arguments(spec, {})
    out: list[tuple[str, Any]] = [("not an object", ["a"]), ("not an object", "order_id=1")]
    if required:
        out.append(("no arguments", {}))
        for r in required:
            out.append((f"missing {r}", {k: v for k, v in good.items() if k != r}))
    out.append(("extra argument", {**good, "unexpected": 1}))
    out.append(("extra SQL-named argument", {**good, "1; DROP TABLE x": "y"}))
    for name, prop in props.items():
        kind = prop.get("type")
        for wrong in WRONG_VALUES:
            if _accepts(prop, wrong):
                continue
            out.append((f"{name}={wrong!r:.30}", {**good, name: wrong}))
        if kind == "string" and prop.get("enum"):
            out.append((f"{name} outside enum", {**good, name: "NOT_IN_ENUM'; --"}))
    return out


def _accepts(prop: dict, value: Any) -> bool:
    from jsonschema import Draft7Validator

    return not list(Draft7Validator(prop).iter_errors(value))


@pytest.mark.parametrize("source, scenario_id", DOMAINS, ids=IDS)
def test_every_tool_rejects_invalid_arguments_without_touching_state(source, scenario_id):
    domain, db = fresh_state(source, scenario_id)
    try:
        before = db.export()
        for spec in domain.tools:
            for what, args in bad_calls(spec):
                if isinstance(args, dict):
                    assert argument_errors(spec, args), (spec.name, what)
                outcome, detail = call(spec, db, args)
                assert outcome == "error", (spec.name, what, detail)
            assert db.export() == before, f"{spec.name}: a rejected call changed the state"
    finally:
        db.close()


@pytest.mark.parametrize("source, scenario_id", DOMAINS, ids=IDS)
def test_every_tool_survives_hostile_strings(source, scenario_id):
    """Schema-valid calls with SQL fragments, unicode and huge strings in every string argument:
    a result, a soft error or a tool error; a failed call changes nothing; SQL never runs."""
    domain, db = fresh_state(source, scenario_id)
    try:
        before = db.export()
        for spec in domain.tools:
            props = spec.schema.get("properties", {})
            strings = [n for n, p in props.items() if p.get("type") == "string" and not p.get("enum")]
            reads = spec.kind == "read"
            for text in HOSTILE if strings else []:
                args = fill_arguments(spec, {n: text for n in strings})
                if argument_errors(spec, args):
                    continue  # e.g. a maxLength/pattern rejects it: covered by the test above
                outcome, detail = call(spec, db, args)
                if reads:
                    continue  # a read never changes the state: checked once after all its calls
                after = db.export()
                if outcome != "ok":
                    assert after == before, (spec.name, text[:40], outcome)
                assert_intact(before, after)
                before = after
            if reads:
                assert db.export() == before, f"read tool {spec.name} changed the state"
    finally:
        db.close()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=40) | st.sampled_from(ODD_STRINGS[:-2]),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)


@pytest.mark.parametrize("source, scenario_id", DOMAINS, ids=IDS)
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_arguments_are_a_tool_error_or_a_result(source, scenario_id, data):
    scenario, domain = _set(source).resolve(scenario_id)
    spec = data.draw(st.sampled_from(domain.tools), label="tool")
    props = list(spec.schema.get("properties", {}))
    good = fill_arguments(spec, {})
    keys = st.sampled_from(props + ["extra", "_key", "__proto__"]) if props else st.sampled_from(["extra"])
    changes = data.draw(st.dictionaries(keys, json_values, max_size=4), label="changes")
    drop = data.draw(st.lists(st.sampled_from(props), max_size=2, unique=True), label="drop") if props else []
    args = {k: v for k, v in {**good, **changes}.items() if k not in drop}
    db = _shared_db(source, scenario_id)
    before = _LAST_EXPORT.get(id(db)) or db.export()
    invalid = bool(argument_errors(spec, args))
    outcome, detail = call(spec, db, args)
    after = _LAST_EXPORT[id(db)] = db.export()
    if invalid:
        assert outcome == "error", (spec.name, args, detail)
    if outcome != "ok":
        assert after == before, (spec.name, outcome, detail)
    assert_intact(before, after)


_LAST_EXPORT: dict[int, dict] = {}


@lru_cache(maxsize=None)
def _shared_db(source: str | None, scenario_id: str) -> StateDB:
    return fresh_state(source, scenario_id)[1]


# ------------------------------------------------------------------ through a real eval

USAGE = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)


def _out(item) -> ModelOutput:
    if isinstance(item, tuple):
        o = ModelOutput.for_tool_call("mockllm/model", item[0], item[1], tool_call_id=item[2])
    else:
        o = ModelOutput.from_content("mockllm/model", item)
    o.usage = USAGE
    return o


def test_bad_calls_from_a_model_in_a_real_eval_are_tool_errors_and_the_sample_continues():
    bad = [
        ("refund_order", {"order_id": 1001, "amount": "all"}),                   # wrong types
        ("refund_order", {"order_id": "O-1"}),                                    # missing argument
        ("refund_order", {"order_id": "O-1", "amount": 5, "note": "x"}),          # extra argument
        ("refund_order", {"order_id": "O-1'; DROP TABLE orders; --", "amount": 5}),  # SQL, no such order
        ("lookup_order", {"order_id": "A" * 100_000}),                            # huge string
        ("lookup_order", {"order_id": "Zoë 🚀 \u202e 零件"}),                      # unicode
        ("record_decision", {"decision": "MAYBE", "order_id": "O-1", "clause_ids": "MINI-1", "rationale": 3}),
        ("no_such_tool", {"x": 1}),
    ]
    outputs = [_out((name, args, f"bad{i}")) for i, (name, args) in enumerate(bad)]
    outputs += [_out(("lookup_order", {"order_id": "O-1"}, "good")), _out("Let me think about that."), _out("Goodbye.")]
    outputs += [_out("Goodbye.") for _ in range(10)]
    model = get_model("mockllm/model", custom_outputs=outputs)
    log = run_eval(
        registered(source=str(MINI), user="scripted", scenarios="MINI_001_REFUND_OK", max_steps=60),
        model=model,
    )
    assert log.status == "success", log.error
    sample = log.samples[0]
    assert sample.error is None
    tool_msgs = [m for m in sample.messages if m.role == "tool"]
    assert len(tool_msgs) == len(bad) + 1
    for m in tool_msgs[: len(bad)]:
        errored = m.error is not None or '"error": true' in m.text
        assert errored, (m.function, m.text[:200])
    assert tool_msgs[-1].error is None and "O-1" in tool_msgs[-1].text  # the sample went on working
    final = final_state(log, sample)
    assert final["orders"]["O-1"]["status"] == "delivered"
    assert final["refunds"] == [] and final["decisions"] == []
    assert sample.store[TERMINATION] in ("user_stop", "agent_stop", "max_steps")
    sc = sample.scores["pibench_scorer"]
    assert sc.value["all_passed"] == 0.0 and sc.answer.startswith("INVALID:")  # the MAYBE call


def test_one_message_calling_an_unknown_and_a_known_tool_in_a_real_eval():
    """In one message from a model, a call of an unknown tool is Inspect's "not found" tool
    error and a known tool beside it still runs, in the order called."""
    from inspect_ai.model import ChatMessageAssistant
    from inspect_ai.tool import ToolCall

    both = ModelOutput.from_message(ChatMessageAssistant(content="", model="mockllm/model", tool_calls=[
        ToolCall(id="u1", function="no_such_tool", arguments={"x": 1}),
        ToolCall(id="k1", function="lookup_order", arguments={"order_id": "O-1"}),
    ]))
    both.usage = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
    outputs = [both] + [_out("Goodbye.") for _ in range(10)]
    log = run_eval(registered(source=str(MINI), user="scripted", scenarios="MINI_001_REFUND_OK", max_steps=20),
                   model=get_model("mockllm/model", custom_outputs=outputs))
    assert log.status == "success", log.error
    tool_msgs = [m for m in log.samples[0].messages if m.role == "tool"]
    assert [m.tool_call_id for m in tool_msgs] == ["u1", "k1"]
    assert tool_msgs[0].error is not None and "no_such_tool not found" in tool_msgs[0].error.message
    assert tool_msgs[1].error is None and "O-1" in tool_msgs[1].text
