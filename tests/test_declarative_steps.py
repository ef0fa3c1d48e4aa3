"""Declarative steps that stand in for raw SQL: `select` with `match: words` and `fields` (a
search by words of a name), and `verify` (caller-supplied values against a record).

Retail's product search and helpdesk's identity check are written this way, so every shipped
domain's samples share the process's sandboxed DuckDB instance (a raw `sql` step would need an
instance per sample)."""

from __future__ import annotations

from conftest import ROOT
from pibench_inspect.domain.loader import load_domain_dir
from pibench_inspect.environment.effects import execute
from pibench_inspect.environment.state import StateDB

RETAIL = load_domain_dir(ROOT / "domains" / "retail")
HELPDESK = load_domain_dir(ROOT / "domains" / "helpdesk")


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


def verify(**args):
    state = StateDB(dict(HELPDESK.seed_state), allow_sql=False)
    try:
        return execute(HELPDESK.tool_index["verify_identity"], state, args)
    finally:
        state.close()


def test_verify_reports_each_item_and_counts_matches():
    records = HELPDESK.seed_state["identity_records"]
    rec = next(iter(records.values())) if isinstance(records, dict) else records[0]
    got = verify(employee_id=rec["employee_id"].lower(), date_of_birth=f"  {rec['date_of_birth']} ",
                 employee_number="nobody", phone_last_four="")
    assert got == {"employee_id": rec["employee_id"], "date_of_birth": "match", "employee_number": "no_match",
                   "phone_last_four": "not_supplied", "items_matched": 1}
    assert list(got) == ["employee_id", "date_of_birth", "employee_number", "phone_last_four", "items_matched"]
    everything = verify(employee_id=rec["employee_id"], date_of_birth=rec["date_of_birth"],
                        employee_number=str(rec["employee_number"]).upper(), phone_last_four=rec["phone_last_four"])
    assert everything["items_matched"] == 3
    assert verify(employee_id="NO-SUCH-EMPLOYEE")["error"] is True


def test_shipped_domains_run_no_raw_sql():
    assert not RETAIL.runs_raw_sql and not HELPDESK.runs_raw_sql
