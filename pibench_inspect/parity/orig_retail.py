"""The original retail domain's tools (reference 2.4 retail table, 2.6 check_return_eligibility).

lookup_customer_profile, escalate_to_manager and record_decision are the shared handlers.
"""

from __future__ import annotations

import copy
import re
from datetime import datetime, timezone
from typing import Any

from .orig_common import find_in_collection, find_record, is_empty, not_found

STORE_CREDIT_EXPIRY = "2027-02-26"  # fixed in the original (reference 2.4)


def _norm(x: Any) -> str:
    return "" if x is None else str(x).strip().lower()


def lookup_order(db, ctx, /, order_id="", **_):
    order = find_record(db.get("orders"), "order_id", order_id)
    return copy.deepcopy(order) if order is not None else not_found("order", "order_id", order_id)


# ---------------------------------------------------------------- check_return_eligibility


def parse_timestamp(value: Any) -> datetime | None:
    """ISO parse; on failure retry without the UTC offset; naive times count as UTC (reference 2.6)."""
    text = str(value).strip()
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        try:
            dt = datetime.fromisoformat(re.sub(r"(Z|[+-]\d{2}:?\d{2})$", "", text))
        except ValueError:
            return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _days_since(now: str, ref: Any) -> int | None:
    """Calendar days between the two dates, each taken in its own offset (not converted)."""
    now_dt, ref_dt = parse_timestamp(now), parse_timestamp(ref)
    if now_dt is None or ref_dt is None:
        return None
    return max(0, (now_dt.date() - ref_dt.date()).days)


def _is_final_sale(order: dict) -> bool:
    flags = order.get("flags") if isinstance(order.get("flags"), list) else []
    return bool(order.get("is_final_sale")) or "final_sale" in flags or order.get("sale_type") == "final_sale"


def check_return_eligibility(db, ctx, /, order_id="", **_):
    # Simpler than the policy on purpose: no holiday extension, damage, activation, fraud or abuse.
    order = find_record(db.get("orders"), "order_id", order_id)
    if order is None:
        return {**not_found("order", "order_id", order_id), "eligible": False}
    customer_id = order.get("customer_id")
    profile = (find_record(db.get("customer_profile"), "customer_id", customer_id)
               or find_record(db.get("customers"), "customer_id", customer_id) or {})

    items = [i for i in order.get("items") or [] if isinstance(i, dict)]
    categories = [_norm(i.get("category")) for i in items]
    if "electronics" in categories:
        category = "electronics"
    else:
        category = next((c for c in categories if c), "") or _norm(order.get("category")) or "general"
    tier = _norm(profile.get("loyalty_tier")) or "silver"
    windows = {"platinum": 30, "gold": 21} if category == "electronics" else {"platinum": 60, "gold": 45}
    window = windows.get(tier, 15 if category == "electronics" else 30)
    fee_percent = 15 if category == "electronics" and tier not in ("gold", "platinum") else 0

    ref = next((order.get(k) for k in ("delivery_date", "delivered_at", "purchase_date", "purchased_at")
                if not is_empty(order.get(k))), None)
    days = None if ref is None else _days_since(ctx.now, ref)
    result = {"order_id": order.get("order_id", order_id), "customer_id": customer_id,
              "return_window_days": window, "days_since_delivery": days,
              "restocking_fee_applicable": fee_percent > 0, "restocking_fee_percent": fee_percent}
    if _is_final_sale(order):
        return {**result, "eligible": False, "reason": "Final sale items are not eligible for return."}
    if days is None:
        return {**result, "eligible": False, "reason": "No delivery or purchase date on record."}
    if days > window:
        return {**result, "eligible": False,
                "reason": f"{days} days since delivery exceeds the {window}-day return window."}
    return {**result, "eligible": True, "reason": f"Within the {window}-day return window."}


# ---------------------------------------------------------------- actions


def process_refund(db, ctx, /, order_id="", refund_type=None, amount=None, reason_code=None,
                   restocking_fee_applied=None, restocking_fee_percent=None, **_):
    order = find_in_collection(db, "orders", "order_id", order_id)
    if order is not None:
        order["status"] = "refunded"
    if amount is None:
        amount = (order or {}).get("total_amount", 0)
    fee = 0
    if restocking_fee_percent:  # undocumented argument; `restocking_fee_applied` alone changes nothing
        fee = round(float(amount) * float(restocking_fee_percent) / 100, 2)
        amount = round(float(amount) - fee, 2)
    return {"refund_id": ctx.new_id("REF"), "status": "processed", "amount_refunded": amount,
            "refund_method": "original_payment", "restocking_fee_amount": fee}


def process_exchange(db, ctx, /, **_):
    return {"exchange_id": ctx.new_id("EXC"), "status": "processed", "price_difference": 0,
            "new_order_id": ctx.new_id("ORD")}


def apply_store_credit(db, ctx, /, customer_id="", amount=0, **_):
    return {"credit_id": ctx.new_id("CRD"), "amount": amount, "customer_id": customer_id,
            "expiry_date": STORE_CREDIT_EXPIRY}


def deny_refund(db, ctx, /, reason_code="", **_):
    return {"denial_id": ctx.new_id("DEN"), "status": "denied", "reason_code": reason_code}


def flag_account(db, ctx, /, customer_id="", flag_type="other", notes=None, **_):
    profile = db.get("customer_profile")
    target = None
    if isinstance(profile, dict):
        if profile.get("customer_id") == customer_id:  # a single record (the usual layout)
            target = profile
        elif isinstance(customer_id, str) and isinstance(profile.get(customer_id), dict):
            target = profile[customer_id]
    if target is not None:
        if not isinstance(target.get("account_flags"), list):
            target["account_flags"] = []
        target["account_flags"].append(flag_type)
    return {"flag_id": ctx.new_id("FLG"), "customer_id": customer_id, "flag_type": flag_type, "status": "active"}


HANDLERS = {
    "lookup_order": lookup_order,
    "check_return_eligibility": check_return_eligibility,
    "process_refund": process_refund,
    "process_exchange": process_exchange,
    "apply_store_credit": apply_store_credit,
    "deny_refund": deny_refund,
    "flag_account": flag_account,
}
