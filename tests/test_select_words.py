"""`select` with `match: words` and `fields`: a search by words of a name, declaratively.

Retail's product search is written this way, so its samples share the process's sandboxed
DuckDB instance (a raw `sql` step would need an instance per sample)."""

from __future__ import annotations

from conftest import ROOT
from pibench_inspect.conversation.solver import runs_raw_sql
from pibench_inspect.domain.loader import load_domain_dir
from pibench_inspect.environment.effects import execute
from pibench_inspect.environment.state import StateDB

RETAIL = load_domain_dir(ROOT / "domains" / "retail")


def search(query: str, *, allow_sql: bool = False):
    state = StateDB(dict(RETAIL.seed_state), allow_sql=allow_sql)
    try:
        return execute(RETAIL.tool_index["search_products"], state, {"query": query})["products"]
    finally:
        state.close()


def expected(query: str) -> list[dict]:
    words = query.lower().split()
    rows = [p for p in RETAIL.seed_state["products"].values() if words and all(w in p["name"].lower() for w in words)]
    return [{k: p[k] for k in ("sku", "name", "category", "status")} for p in sorted(rows, key=lambda p: p["sku"])]


def test_every_word_must_appear_case_insensitively_and_no_price_is_shown():
    name = next(iter(RETAIL.seed_state["products"].values()))["name"]
    first, last = name.split()[0], name.split()[-1]
    for query in (name, f"  {last.upper()}   {first.lower()} ", last, "no-such-product-word", "a"):
        got = search(query)
        assert got == expected(query), query
    assert search(name) and all("current_price" not in row for row in search(name))


def test_a_query_without_words_matches_nothing_and_quotes_are_plain_text():
    assert search("") == [] and search("   ") == []
    assert search("' OR 1=1 --") == expected("' OR 1=1 --") == []


def test_retail_runs_no_raw_sql():
    assert not runs_raw_sql(RETAIL)
