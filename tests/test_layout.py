"""The package reads as the pipeline: no import cycles, and only pipeline entry points at its top.

Every import statement counts, lazy ones inside functions included: a cycle that only works
because one side imports late is still two modules that cannot be understood apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "pibench_inspect"

# the top of the package: the registered tasks, task building, where data lives, and set-up
TOP_LEVEL = {
    "__init__", "_bootstrap", "_registry", "_sync", "analysis", "paths", "task", "task_args",
    "pibench", "finra", "retail", "helpdesk",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in files.items():
        package = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    deps.add(sub if sub in files else target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        # importing one's own package (its __init__) is how Python loads it, not a cycle
        graph[mod] = {d for d in deps if d in files and d != mod and not mod.startswith(d + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_cycle_finder_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycles():
    assert cycles(import_graph()) == []


def test_top_of_the_package_is_the_pipeline():
    stray = {p.stem for p in PACKAGE.glob("*.py")} - TOP_LEVEL
    assert not stray, f"modules at the package root that belong in a subpackage: {sorted(stray)}"


def test_the_state_engine_stays_short():
    """Issue 24: the state (one DuckDB engine) is under 400 lines; what grows is split by concept
    (transactions.py, bounds.py, document.py, seed.py, mapping.py, filters.py)."""
    lines = len((PACKAGE / "environment" / "state.py").read_text().splitlines())
    assert lines < 400, f"environment/state.py has {lines} lines"
