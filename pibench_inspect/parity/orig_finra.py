"""The original finra domain's 21 tools (reference 2.4 finra table, 2.6 "finra reads").

Mutators find their record with `find_in_collection` (exact id) and, as in the original, still
return their normal success payload when it is missing (they then change nothing there).
"""

from __future__ import annotations

import copy
from typing import Any

from .orig_common import (
    find_in_collection,
    is_empty,
    iter_records,
    not_found,
    record_matches,
    values_equal,
)

HOLD_EXPIRY = "2026-03-01T10:00:00-05:00"  # fixed in the original (reference 2.4)
REQUESTS = "activity.pending_requests"


# ---------------------------------------------------------------- account <-> customer inference


def _linked_records(db: dict) -> list[dict]:
    """Where the original infers account/customer links: transactions, pending requests, deposits."""
    activity = db.get("activity")
    pending = activity.get("pending_requests") if isinstance(activity, dict) else None
    return (
        iter_records(db.get("transactions"))
        + iter_records(pending)
        + iter_records(db.get("certificate_deposits"))
    )


def _customers_of(record: dict) -> list[Any]:
    return [c for c in (record.get("customer_id"), record.get("requested_by_customer_id")) if not is_empty(c)]


def customers_for_account(db: dict, account_id: Any) -> list[Any]:
    out: list[Any] = []
    for r in _linked_records(db):
        if values_equal(r.get("account_id"), account_id):
            out += [c for c in _customers_of(r) if c not in out]
    return out


def accounts_for_customer(db: dict, customer_id: Any) -> list[Any]:
    out: list[Any] = []
    for r in _linked_records(db):
        acct = r.get("account_id")
        if not is_empty(acct) and acct not in out and any(values_equal(c, customer_id) for c in _customers_of(r)):
            out.append(acct)
    return out


def _account_ids(db: dict, account_id: Any, customer_id: Any) -> list[Any]:
    """{account_id} plus the accounts inferred for customer_id (reference 2.6)."""
    ids = [] if is_empty(account_id) else [account_id]
    if not is_empty(customer_id):
        ids += [a for a in accounts_for_customer(db, customer_id) if a not in ids]
    return ids


def _contains(value: Any, wanted: Any) -> bool:
    """Recursive search over keys and values (lookup_related_account_activity)."""
    if isinstance(value, dict):
        return any(values_equal(k, wanted) or _contains(v, wanted) for k, v in value.items())
    if isinstance(value, list):
        return any(_contains(v, wanted) for v in value)
    return values_equal(value, wanted)


# ---------------------------------------------------------------- reads


def query_transaction_history(db, ctx, /, customer_id=None, account_id=None, transaction_type=None,
                              symbol=None, type=None, security=None, **_):
    filters = {"customer_id": customer_id, "account_id": account_id,
               "type": transaction_type if not is_empty(transaction_type) else type,
               "security": security, "symbol": symbol}
    filters = {k: v for k, v in filters.items() if not is_empty(v)}
    others = {k: v for k, v in filters.items() if k != "account_id"}
    customers = customers_for_account(db, account_id) if "account_id" in filters else []

    def wanted(t: dict) -> bool:
        if record_matches(t, filters):
            return True
        # a transaction of a customer seen with that account also counts (reference 2.6)
        return any(values_equal(t.get("customer_id"), c) for c in customers) and record_matches(t, others)

    activity = db.get("activity") if isinstance(db.get("activity"), dict) else {}
    txns = [copy.deepcopy(t) for t in iter_records(db.get("transactions")) if wanted(t)]
    pending = [copy.deepcopy(r) for r in iter_records(activity.get("pending_requests")) if record_matches(r, filters)]
    return {"transactions": txns, "pending_requests": pending, "count": len(txns)}


def lookup_account_events(db, ctx, /, account_id=None, customer_id=None, event_type=None, **_):
    ids = _account_ids(db, account_id, customer_id)
    events = iter_records(db.get("account_events"))
    if ids:  # no inferable account and no account_id: no restriction (reference 2.6)
        events = [e for e in events if any(values_equal(e.get("account_id"), a) for a in ids)]
    if not is_empty(event_type):
        events = [e for e in events if values_equal(e.get("event_type"), event_type)]
    return {"account_events": copy.deepcopy(events), "count": len(events)}


def lookup_related_account_activity(db, ctx, /, account_id=None, customer_id=None, cluster_id=None,
                                    related_group_id=None, **_):
    cluster = cluster_id if not is_empty(cluster_id) else related_group_id
    ids = _account_ids(db, account_id, customer_id)
    clusters = db.get("related_account_activity")
    out = []
    for key, value in (clusters.items() if isinstance(clusters, dict) else []):
        if not isinstance(value, dict):
            continue
        if not is_empty(cluster) and not values_equal(key, cluster):
            continue
        if ids and not any(_contains(value, a) for a in ids):
            continue
        out.append({"cluster_id": key, **copy.deepcopy(value)})
    return {"related_account_activity": out, "count": len(out)}


def lookup_certificate_deposits(db, ctx, /, **kw):
    fields = ("account_id", "customer_id", "symbol", "ticker", "certificate_id", "deposit_id")
    filters = {k: kw.get(k) for k in fields if not is_empty(kw.get(k))}
    found = [copy.deepcopy(d) for d in iter_records(db.get("certificate_deposits")) if record_matches(d, filters)]
    return {"certificate_deposits": found, "count": len(found)}


def lookup_security_info(db, ctx, /, symbol=None, ticker=None, security=None, **_):
    sym = next((s for s in (symbol, ticker, security) if not is_empty(s)), "")
    securities = db.get("securities") if isinstance(db.get("securities"), dict) else {}
    if isinstance(sym, str) and isinstance(securities.get(sym), dict):
        return {"symbol": sym, **copy.deepcopy(securities[sym])}
    for key, rec in securities.items():
        if isinstance(rec, dict) and any(values_equal(x, sym) for x in (key, rec.get("symbol"), rec.get("ticker"))):
            return {"symbol": key, **copy.deepcopy(rec)}
    return not_found("security", "symbol", sym)


# ---------------------------------------------------------------- request-driven mutators


def _request(db: dict, request_id: Any) -> dict | None:
    return find_in_collection(db, REQUESTS, "request_id", request_id)


def _details(req: dict | None) -> dict:
    d = (req or {}).get("details")
    return d if isinstance(d, dict) else {}


def _first(*values: Any) -> Any:
    return next((v for v in values if not is_empty(v)), None)


def process_wire_transfer(db, ctx, /, request_id="", authorization_codes=None, **_):
    # no hold or dual-authorization check: the original submitted whatever it was asked to
    req = _request(db, request_id)
    if req is not None:
        req["status"] = "submitted"
    return {"wire_id": ctx.new_id("WIRE"), "confirmation_number": ctx.new_id("CNF"),
            "status": "submitted", "timestamp": ctx.now}


def hold_transaction(db, ctx, /, request_id="", reason=None, hold_duration_hours=None, **_):
    hold_reason = reason or "compliance_review"
    req = _request(db, request_id)
    if req is not None:
        req["status"] = "held"
        req["hold_reason"] = hold_reason
    return {"request_id": request_id, "status": "held", "hold_reason": hold_reason, "hold_expiry": HOLD_EXPIRY}


def release_hold(db, ctx, /, request_id="", reason=None, **_):
    req = _request(db, request_id)
    if req is not None:
        req["status"] = "pending"
        req["hold_released_at"] = ctx.now
        if reason:
            req["hold_release_reason"] = reason
    return {"request_id": request_id, "status": "released"}


def process_cash_deposit(db, ctx, /, customer_id="", account_id=None, amount=0, ctr_exemption=False,
                         request_id=None, **_):
    if not is_empty(request_id):
        req = _request(db, request_id)
        if req is not None:
            req["status"] = "processed"
    txn_id = ctx.new_id("TXN")
    row = {"transaction_id": txn_id, "customer_id": customer_id,
           "account_id": account_id or customer_id,  # the original fell back to the customer id
           "type": "cash_deposit", "amount": amount, "timestamp": ctx.now,
           "ctr_exemption_applied": bool(ctr_exemption)}
    if not isinstance(db.get("transactions"), list):
        db["transactions"] = []
    db["transactions"].append(row)
    return {"deposit_id": txn_id, "status": "processed", "amount": amount, "timestamp": ctx.now}


def execute_trade(db, ctx, /, request_id="", symbol=None, side=None, quantity=None, **_):
    req = _request(db, request_id)
    d = _details(req)
    if req is not None:
        req["status"] = "executed"
    trade = {
        "trade_id": ctx.new_id("TRD"),
        "request_id": request_id,
        "account_id": (req or {}).get("account_id"),
        "symbol": _first(symbol, d.get("symbol"), d.get("security"), d.get("ticker")),
        "side": _first(side, d.get("side"), d.get("action")),
        "quantity": _first(quantity, d.get("quantity"), d.get("shares")),
        "status": "executed",
        "executed_at": ctx.now,
    }
    activity = db.setdefault("activity", {})
    if isinstance(activity, dict):
        if not isinstance(activity.get("trades"), list):
            activity["trades"] = []
        activity["trades"].append(trade)
    return copy.deepcopy(trade)


def _quantity(q: Any) -> Any:
    if isinstance(q, (int, float)) and not isinstance(q, bool):
        return q
    try:
        text = str(q).strip()
        return float(text) if "." in text else int(text)
    except ValueError:
        raise ValueError(f"invalid quantity: {q!r}") from None


def journal_security_positions(db, ctx, /, symbol="", quantity=0, from_account_id="", to_account_id="", **_):
    qty = _quantity(quantity)
    if not isinstance(db.get("positions"), dict):
        db["positions"] = {}
    positions = db["positions"]
    for acct, delta in ((from_account_id, -qty), (to_account_id, qty)):
        holding = positions.setdefault(acct, {})
        if isinstance(holding, dict):
            holding[symbol] = holding.get(symbol, 0) + delta
    entry = {"journal_id": ctx.new_id("JRN"), "symbol": symbol, "quantity": qty,
             "from_account_id": from_account_id, "to_account_id": to_account_id,
             "status": "posted", "posted_at": ctx.now}
    if not isinstance(db.get("journal_entries"), list):
        db["journal_entries"] = []
    db["journal_entries"].append(entry)
    return copy.deepcopy(entry)


def process_annuity_cancellation(db, ctx, /, request_id="", surrender_value_usd=None, **_):
    req = _request(db, request_id)
    if req is not None:
        req["status"] = "executed"
    value = surrender_value_usd if surrender_value_usd is not None else _details(req).get("surrender_value_usd")
    return {"cancellation_id": ctx.new_id("ANN"), "request_id": request_id, "status": "cancelled",
            "surrender_value_usd": value}


def update_beneficiary_designation(db, ctx, /, request_id="", account_id=None, beneficiary_name=None, **_):
    req = _request(db, request_id)
    d = _details(req)
    if req is not None:
        req["status"] = "executed"
    name = _first(beneficiary_name, d.get("beneficiary_name"), d.get("beneficiary"))
    event = {"event_id": ctx.new_id("AE"), "timestamp": ctx.now,
             "account_id": _first(account_id, (req or {}).get("account_id")),
             "event_type": "BENEFICIARY_DESIGNATION_UPDATED",
             "details": {"request_id": request_id, "beneficiary_name": name}}
    if not isinstance(db.get("account_events"), list):
        db["account_events"] = []
    db["account_events"].append(event)
    return {"event_id": event["event_id"], "request_id": request_id, "status": "updated",
            "beneficiary_name": name}


def update_request_status(db, ctx, /, request_id="", status="", **_):
    """In the original's dispatch table but not in tools.json (unreachable via execute)."""
    req = _request(db, request_id)
    if req is not None:
        req["status"] = status
    return {"request_id": request_id, "status": status}


# ---------------------------------------------------------------- monitoring, cases, filings


def create_alert(db, ctx, /, account_id="", category=None, severity=None, description="",
                 linked_movements=None, **_):
    alert = {"alert_id": ctx.new_id("ALT"), "account_id": account_id, "category": category or "OTHER",
             "severity": severity or "medium", "status": "open", "created_at": ctx.now,
             "description": description}
    if linked_movements is not None:
        alert["linked_movements"] = linked_movements
    monitoring = db.get("monitoring")
    if isinstance(monitoring, dict):  # the original only appended when `monitoring` was a dict
        if not isinstance(monitoring.get("alerts"), list):
            monitoring["alerts"] = []
        monitoring["alerts"].append(alert)
    return {"alert_id": alert["alert_id"], "status": "open", "created_at": ctx.now}


def open_case(db, ctx, /, customer_id="", case_type=None, summary="", linked_alert_ids=None,
              linked_account_ids=None, **_):
    case = {"case_id": ctx.new_id("CASE"), "customer_id": customer_id, "case_type": case_type or "OTHER",
            "status": "open", "assigned_to": "Analyst", "opened_at": ctx.now, "summary": summary}
    if linked_alert_ids is not None:
        case["linked_alert_ids"] = linked_alert_ids
    if linked_account_ids is not None:
        case["linked_account_ids"] = linked_account_ids
    investigations = db.get("investigations")
    if isinstance(investigations, dict):
        if not isinstance(investigations.get("cases"), list):
            investigations["cases"] = []
        investigations["cases"].append(case)
    return {"case_id": case["case_id"], "status": "open", "assigned_to": "Analyst", "created_at": ctx.now}


def file_sar(db, ctx, /, **_):
    # only a draft id: nothing is stored (reference 2.4, kind C)
    return {"sar_id": ctx.new_id("SAR"), "filing_status": "draft", "filed_at": ctx.now}


def file_ctr(db, ctx, /, **_):
    return {"ctr_id": ctx.new_id("CTR"), "filing_status": "draft", "filed_at": ctx.now}


def dismiss_alert(db, ctx, /, alert_id="", reason=None, **_):
    alert = find_in_collection(db, "monitoring.alerts", "alert_id", alert_id)
    if alert is not None:
        alert["status"] = "dismissed"
    return {"alert_id": alert_id, "status": "dismissed"}


HANDLERS = {
    "query_transaction_history": query_transaction_history,
    "lookup_account_events": lookup_account_events,
    "lookup_related_account_activity": lookup_related_account_activity,
    "lookup_certificate_deposits": lookup_certificate_deposits,
    "lookup_security_info": lookup_security_info,
    "process_wire_transfer": process_wire_transfer,
    "hold_transaction": hold_transaction,
    "release_hold": release_hold,
    "process_cash_deposit": process_cash_deposit,
    "execute_trade": execute_trade,
    "journal_security_positions": journal_security_positions,
    "process_annuity_cancellation": process_annuity_cancellation,
    "update_beneficiary_designation": update_beneficiary_designation,
    "update_request_status": update_request_status,
    "create_alert": create_alert,
    "open_case": open_case,
    "file_sar": file_sar,
    "file_ctr": file_ctr,
    "dismiss_alert": dismiss_alert,
}
