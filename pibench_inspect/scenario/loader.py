"""Read scenario files into validated `Scenario` objects.

`load_scenario` raises `ScenarioError` naming the file and every problem found;
`discover` lists scenario files the way the original did (recursive, sorted, skipping
`archive/` folders) but reports unparseable files instead of silently skipping them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..paths import files_under
from . import reading
from .errors import ScenarioError, validation_problems
from .model import CHECK_TYPES, Scenario
from .rules import scenario_problems

SCHEMA_VERSION = "pibench_scenario_v1"


def discover(root: str | Path) -> list[Path]:
    """Scenario files under `root`: `*.json`, sorted, no `archive` folders, no JSON Schemas."""
    root = Path(root)
    if root.is_file():
        return [root]
    return [p for parts, p in files_under(root, "*.json")
            if "archive" not in parts[:-1] and not p.name.endswith(".schema.json")]


def convert_expected_outcomes(raw: dict[str, Any]) -> dict[str, Any]:
    """The original's legacy conversion: `expected_outcomes` -> `evaluation_criteria`."""
    if raw.get("evaluation_criteria") or not raw.get("expected_outcomes"):
        return raw
    raw = copy.deepcopy(raw)
    buckets: dict[str, list[Any]] = {"policy": [], "state": [], "nl": []}
    for outcome in raw["expected_outcomes"]:
        o = dict(outcome)
        kind = o.get("type")
        if kind == "tool_called_with" and "args_match" in o:
            o["arguments"] = o.pop("args_match")
        if kind == "state_field":
            buckets["state"].append(o)
        elif kind == "nl_assertion_llm_judge":
            buckets["nl"].append(o)
        else:
            buckets["policy"].append(o)
    names = {"policy": "POLICY", "state": "STATE_FIELD", "nl": "NL_JUDGE"}
    raw["evaluation_criteria"] = {
        "reward_basis": [names[k] for k, v in buckets.items() if v],
        "policy_checks": buckets["policy"],
        "state_field_checks": buckets["state"],
        "nl_judge_checks": buckets["nl"],
    }
    return raw


def parse_scenario(raw: Any, path: str | Path = "<memory>", *, check_rules: bool = True) -> Scenario:
    if not isinstance(raw, dict):
        raise ScenarioError(path, ["(top level): expected a JSON object"])
    if raw.get("schema_version") != SCHEMA_VERSION:
        got = raw.get("schema_version")
        raise ScenarioError(
            path, [f"schema_version: expected {SCHEMA_VERSION!r}, got {got!r}"]
        )
    raw = convert_expected_outcomes(raw)
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as err:
        raise ScenarioError(path, validation_problems(err, CHECK_TYPES)) from None
    if check_rules:
        problems = scenario_problems(scenario)
        if problems:
            raise ScenarioError(path, problems)
    return scenario


def read_json(path: Path, root: Path | None = None) -> Any:
    """A scenario file's JSON; with `root`, the file must lie inside it (see reading.py)."""
    return reading.read_json(path, root, "scenario file")


def load_scenario(
    path: str | Path, *, check_rules: bool = True, root: str | Path | None = None
) -> Scenario:
    path = Path(path)
    return parse_scenario(
        read_json(path, Path(root) if root is not None else None), path, check_rules=check_rules
    )
