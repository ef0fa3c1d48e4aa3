"""`pibench validate` names every tool-schema keyword Inspect would silently drop.

Inspect builds tool parameters with its ToolParams/JSONSchema models, which keep only their own
fields: a catalog's minItems, uniqueItems, exclusiveMinimum, multipleOf, title, ... never reach
the model. Only oneOf/allOf/const/$ref/not/anyOf were reported before.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from inspect_ai.tool import ToolParams

DROPPED = {
    ("refund_order", "amount", "exclusiveMinimum"),
    ("refund_order", "amount", "multipleOf"),
    ("lookup_order", "order_id", "title"),
    ("lookup_order", "fields", "minItems"),
    ("lookup_order", "fields", "uniqueItems"),
}


@pytest.mark.slow
def test_dropped_keywords_are_reported_naming_tool_and_parameter(mini_source):
    path = mini_source / "domains" / "mini" / "tools.json"
    catalog = json.loads(path.read_text())
    tools = {t["name"]: t for t in catalog["tools"]}
    tools["refund_order"]["parameters"]["properties"]["amount"].update(exclusiveMinimum=0, multipleOf=0.01)
    lookup = tools["lookup_order"]["parameters"]["properties"]
    lookup["order_id"]["title"] = "Order"
    # minLength/maxLength inside items are kept by Inspect: not reported
    lookup["fields"] = {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 20},
                        "minItems": 1, "uniqueItems": True, "description": "fields to show"}
    path.write_text(json.dumps(catalog))

    # the premise: Inspect really drops them, and keeps the rest
    kept = ToolParams.model_validate(tools["lookup_order"]["parameters"]).model_dump(exclude_none=True)
    assert "minItems" not in kept["properties"]["fields"] and kept["properties"]["fields"]["items"]["minLength"] == 1

    r = subprocess.run([sys.executable, "-m", "pibench_inspect.cli", "validate", "--source", str(mini_source)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stdout + r.stderr
    lines = [line for line in r.stdout.splitlines() if "tools.json" in line]
    for tool, param, keyword in DROPPED:
        assert any(f"({tool})" in line and f"properties.{param}.{keyword}:" in line for line in lines), (tool, param, keyword, lines)
    assert not any("minLength" in line or "maxLength" in line for line in lines)
