"""Catalog tools: declarative effects, validation, soft errors, determinism, bad input."""

from __future__ import annotations

import json

import pytest

from conftest import MINI
from pibench_inspect.domain.catalog import ToolSpec, normalize_parameters
from pibench_inspect.domain.loader import load_domain_dir
from pibench_inspect.environment.effects import ToolCallError, execute
from pibench_inspect.environment.state import StateDB

DOMAIN = load_domain_dir(MINI / "domains" / "mini")


def fresh() -> StateDB:
    return StateDB({**DOMAIN.seed_state, "now": "2026-11-02T10:00:00+00:00"})


def call(state, name, **args):
    return execute(DOMAIN.tool_index[name], state, args)


def test_lookup_and_soft_error():
    s = fresh()
    assert call(s, "lookup_order", order_id="o-1")["order_id"] == "O-1"  # case-insensitive lookup
    miss = call(s, "lookup_order", order_id="O-404")
    # the soft error echoes the filters, but never the state mapping's `_key` column
    assert miss == {"error": True, "message": "No order found for order_id='O-404'."}


def test_write_effect_ids_and_clock_are_deterministic():
    runs = []
    for _ in range(2):
        s = fresh()
        r = call(s, "refund_order", order_id="O-1", amount=40.0)
        runs.append((r, s.export()))
    assert runs[0] == runs[1]
    result, state = runs[0]
    assert result["refund_id"].startswith("REF_") and len(result["refund_id"]) == 12
    assert state["refunds"] == [{"refund_id": result["refund_id"], "order_id": "O-1", "amount": 40.0,
                                 "created_at": "2026-11-02T10:00:00+00:00"}]
    assert state["orders"]["O-1"]["status"] == "refunded"
    assert state["_id_counter"] == 1


def test_soft_error_in_a_write_rolls_back_every_step():
    s = fresh()
    before = s.export()
    out = call(s, "refund_order", order_id="O-404", amount=1.0)
    assert out["error"] is True
    assert s.export() == before


BAD_ARGS = [
    {},  # missing required
    {"order_id": 12, "amount": 1.0},  # wrong type
    {"order_id": "O-1", "amount": "lots"},  # wrong type
    {"order_id": "O-1", "amount": 1.0, "extra": "x"},  # extra argument
    {"order_id": None, "amount": 1.0},
]


@pytest.mark.parametrize("args", BAD_ARGS)
def test_bad_arguments_are_tool_errors_and_change_nothing(args):
    s = fresh()
    before = s.export()
    with pytest.raises(ToolCallError, match="invalid arguments for refund_order"):
        execute(DOMAIN.tool_index["refund_order"], s, args)
    assert s.export() == before


@pytest.mark.parametrize(
    "text",
    ["O-1'; DROP TABLE orders; --", "\" OR 1=1 --", "O-1\x00", "Ünïcødé 🚀 注文", "x" * 100_000, "$now", "{order_id}"],
)
def test_hostile_strings_are_plain_values(text):
    s = fresh()
    before = s.export()
    out = call(s, "lookup_order", order_id=text)
    assert out["error"] is True
    assert s.export() == before
    esc = call(s, "escalate", order_id=text, reason=text)
    assert s.export()["escalations"][-1]["reason"] == text  # stored verbatim, never interpreted
    assert esc["status"] == "pending_review"


def test_failing_effect_is_a_tool_error_not_a_crash():
    spec = ToolSpec.model_validate({
        "name": "broken", "parameters": {"type": "object", "properties": {}},
        "effect": [{"insert": "decisions", "values": {"a": 1}}, {"select": "no_such_table", "as": "x"}],
    })
    s = fresh()
    before = s.export()
    with pytest.raises(ToolCallError, match="no collection 'no_such_table'"):
        execute(spec, s, {})
    assert s.export() == before


def test_flat_parameters_are_normalized():
    flat = {"order_id": {"type": "string", "required": True, "description": "id"},
            "codes": {"items": "string"}, "junk": "x"}
    assert normalize_parameters(flat) == {
        "type": "object",
        "properties": {"order_id": {"type": "string", "description": "id"},
                       "codes": {"type": "array", "items": {"type": "string"}}},
        "required": ["order_id"],
    }


def test_catalog_errors_name_the_tool(tmp_path):
    from pibench_inspect.scenario.errors import ScenarioError

    d = tmp_path / "dom"
    d.mkdir()
    (d / "policy.md").write_text("policy")
    (d / "tools.json").write_text(json.dumps({"tools": [{"name": "t", "effect": [{"selekt": "x"}]}]}))
    with pytest.raises(ScenarioError) as info:
        load_domain_dir(d)
    assert "tools[0] (t)" in str(info.value) and "selekt" in str(info.value)


def test_python_handler_stands_in(tmp_path):
    spec = ToolSpec.model_validate({
        "name": "count_orders", "parameters": {"type": "object", "properties": {}},
        "handler": "pibench_inspect.environment.handlers_demo:count_rows",
    })
    assert execute(spec, fresh(), {}) == {"collection": "orders", "count": 3}


def test_only_the_hard_gate_ends_a_call_as_a_permission_error(monkeypatch):
    """Inspect records a PermissionError as a "permission" tool error, the type a blocked call is
    recognised by: any other call raising one becomes an ordinary tool error."""
    import asyncio

    from inspect_ai.model import ChatMessageAssistant, execute_tools
    from inspect_ai.tool import ToolCall

    from pibench_inspect.checks.trace import build_trace
    from pibench_inspect.environment import tools

    def denied(*args, **kwargs):
        raise PermissionError("Tool not permitted by policy")

    monkeypatch.setattr(tools, "execute", denied)
    spec = DOMAIN.tool_index["lookup_order"]
    state = fresh()
    calls = [ToolCall(id="a", function="lookup_order", arguments={"order_id": "O-1"})]
    message = ChatMessageAssistant(content="", tool_calls=calls)

    async def run(blocked: bool):
        result = await execute_tools([message], [tools.tool_def(spec, state, blocked=blocked)])
        return [m for m in result.messages if m.role == "tool"][0]

    ordinary, gated = asyncio.run(run(False)), asyncio.run(run(True))
    assert ordinary.error.type == "unknown" and "Tool not permitted by policy" in ordinary.error.message
    assert gated.error.type == tools.BLOCKED_ERROR_TYPE
    assert [e.blocked for e in build_trace([message, ordinary]).entries] == [False]
    assert [e.blocked for e in build_trace([message, gated]).entries] == [True]
