"""Hardening: random mutations of valid scenario and domain files only ever produce a clear
validation error (ScenarioError naming the file, each problem naming a field), never another
exception type."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import MINI, ROOT
from pibench_inspect.domain.loader import load_domain_dir
from pibench_inspect.scenario.errors import ScenarioError
from pibench_inspect.scenario.loader import load_scenario

SCENARIO_FILES = sorted(
    [p for p in (ROOT / "scenarios").rglob("*.json") if not p.name.endswith(".schema.json")]
    + list((MINI / "scenarios").rglob("*.json"))
)
DOMAIN_DIRS = sorted([p for p in (ROOT / "domains").iterdir() if (p / "tools.json").exists()]) + [
    MINI / "domains" / "mini"
]
SETTINGS = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # deterministic: the same examples on every run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

OTHER_VALUES = [None, True, 0, -1, 3.5, "", "x", "ALLOW", [], [1, "a"], {}, {"k": "v"}, 10**30]


def paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every location in a JSON document (object keys and list indices)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += paths(v, prefix + (i,))
    return out


def parent_of(doc: Any, path: tuple) -> Any:
    for p in path[:-1]:
        doc = doc[p]
    return doc


def same_kind(a: Any, b: Any) -> bool:
    return type(a) is type(b) or (a is None and b is None)


@st.composite
def mutation(draw, doc: Any) -> tuple[str, Any, tuple]:
    """(kind, mutated document or text, location)."""
    kind = draw(st.sampled_from(["delete", "retype", "unknown_key", "corrupt", "truncate"]))
    doc = json.loads(json.dumps(doc))
    text = json.dumps(doc, indent=1)
    if kind == "truncate":
        cut = draw(st.integers(min_value=0, max_value=max(len(text) - 1, 0)))
        return kind, text[:cut], ()
    if kind == "corrupt":
        pos = draw(st.integers(min_value=0, max_value=len(text)))
        junk = draw(st.sampled_from(["{", "}", "]", ",", ":", "\"", "\\", "\x00", "NaN", "tru", "\ufeff", "é", "\u202e"]))
        return kind, text[:pos] + junk + text[pos:], ()
    locs = paths(doc)
    if kind == "unknown_key":
        dicts = [()] + [p for p in locs if isinstance(parent_of(doc, p + ("_",)), dict)]
        loc = draw(st.sampled_from(dicts))
        target = doc
        for p in loc:
            target = target[p]
        key = draw(st.sampled_from(["unexpected_key", "Type", "__proto__", "x" * 300, "ключ"]))
        target[key] = draw(st.sampled_from(OTHER_VALUES))
        return kind, doc, loc + (key,)
    loc = draw(st.sampled_from(locs))
    parent = parent_of(doc, loc)
    if kind == "delete":
        del parent[loc[-1]]
        return kind, doc, loc
    new = draw(st.sampled_from([v for v in OTHER_VALUES if not same_kind(v, parent[loc[-1]])]))
    parent[loc[-1]] = new
    return kind, doc, loc


def check_error(err: ScenarioError, path: Path, loc: tuple, kind: str) -> None:
    text = str(err)
    assert str(path) in text, text
    assert err.problems, text
    assert err.path == str(path)
    for problem in err.problems:
        # `field.path: message` (a key may itself contain odd characters, so split at the last ": ")
        field, sep, msg = problem.rpartition(": ")
        assert sep and field.strip() and msg.strip(), f"problem without field and message: {problem!r}"
        assert f"{path}: {problem}" in text
    if kind in ("corrupt", "truncate"):
        return
    # a structural mutation is reported at the field that was changed or one enclosing it
    # (a semantic rule may name a related field instead, e.g. a check that no longer matches the label)
    names = {str(p) for p in loc if isinstance(p, str)}
    fields = [p.rpartition(": ")[0] for p in err.problems]
    assert any(n in f for f in fields for n in names) or any(f == "(top level)" for f in fields) or _rule_problem(err), text


RULE_WORDS = ("label", "decision", "check", "clause", "tool", "reward_basis", "outcome_id", "scenario_id", "domain", "schema_version")


def _rule_problem(err: ScenarioError) -> bool:
    return any(any(w in p for w in RULE_WORDS) for p in err.problems)


@pytest.mark.parametrize("idx", range(0, len(SCENARIO_FILES), max(1, len(SCENARIO_FILES) // 6)))
@SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_mutated_scenario_gives_a_scenario_error_naming_file_and_field(idx, data):
    src = SCENARIO_FILES[idx]
    base = json.loads(src.read_text())
    kind, mutated, loc = data.draw(mutation(base), label="mutation")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / src.name
        path.write_text(mutated if isinstance(mutated, str) else json.dumps(mutated), encoding="utf-8")
        try:
            load_scenario(path)
        except ScenarioError as err:
            check_error(err, path, loc, kind)
        # any other exception type propagates and fails the test


@pytest.mark.parametrize("name", ["meta.scenario_id", "schema_version", "evaluation_criteria", "label"])
def test_deleted_required_field_is_named(tmp_path, name):
    src = MINI / "scenarios" / "mini" / "mini_001_refund_ok.json"
    doc = json.loads(src.read_text())
    parts = name.split(".")
    target = doc
    for p in parts[:-1]:
        target = target[p]
    target.pop(parts[-1], None)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    assert parts[-1] in str(info.value)


def test_binary_and_non_object_files_are_scenario_errors(tmp_path):
    for i, payload in enumerate([b"\x00" * 16, b"", "[1, 2]".encode(), b'"just a string"', b"\xef\xbb\xbf{}"]):
        path = tmp_path / f"bad_{i}.json"
        path.write_bytes(payload)
        with pytest.raises(ScenarioError) as info:
            load_scenario(path)
        assert str(path) in str(info.value)


DOMAIN_FILES = ["domain.json", "tools.json", "db.json"]


@pytest.mark.parametrize("domain_dir", DOMAIN_DIRS, ids=lambda p: p.name)
@SETTINGS
@given(data=st.data())
@pytest.mark.slow
def test_mutated_domain_gives_a_scenario_error_naming_a_file(domain_dir, data):
    which = data.draw(st.sampled_from([f for f in DOMAIN_FILES if (domain_dir / f).exists()]), label="file")
    base = json.loads((domain_dir / which).read_text())
    kind, mutated, loc = data.draw(mutation(base), label="mutation")
    with tempfile.TemporaryDirectory() as d:
        dst = Path(d) / domain_dir.name
        shutil.copytree(domain_dir, dst)
        (dst / which).write_text(mutated if isinstance(mutated, str) else json.dumps(mutated), encoding="utf-8")
        try:
            load_domain_dir(dst)
        except ScenarioError as err:
            text = str(err)
            assert str(dst) in text and err.path.startswith(str(dst)), text
            assert err.problems, text
            for problem in err.problems:
                field, sep, msg = problem.rpartition(": ")
                assert sep and field.strip() and msg.strip(), f"problem without field and message: {problem!r}"


def test_non_utf8_scenario_file_is_a_scenario_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(b'{"schema_version": "pibench_scenario_v1", "meta": {"notes": "caf\xe9"}}')
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(path) in str(info.value) and "not valid UTF-8" in str(info.value)


def test_non_utf8_domain_file_is_a_scenario_error(mini_source):
    dst = mini_source / "domains" / "mini"
    (dst / "tools.json").write_bytes(b'{"tools": [], "note": "caf\xe9"}')
    with pytest.raises(ScenarioError) as info:
        load_domain_dir(dst)
    assert "tools.json" in str(info.value)
