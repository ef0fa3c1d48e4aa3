"""Synthetic cases for the re-implemented original tools (pibench_inspect.parity.generic), covering
branches the shared sample does not exercise. All ids and values here are invented.
Each case states the behaviour of reference 2.4-2.6."""

from __future__ import annotations

import json

import pytest

from pibench_inspect.environment.effects import ToolContext
from pibench_inspect.environment.state import StateDB
from pibench_inspect.parity.generic import dispatch

NOW = "2030-05-20T12:00:00-04:00"


def call(state: StateDB, name: str, **arguments):
    """One call as the executor makes it, including the JSON text the agent would see."""
    result = dispatch(ToolContext(state, name), **arguments)
    return json.loads(json.dumps(result, default=str))


def finra_state(**extra) -> StateDB:
    doc = {
        "now": NOW,
        "customers": {"C-ALPHA": {"customer_id": "C-ALPHA", "display_name": "Alpha Person"}},
        "transactions": [
            {"transaction_id": "T1", "customer_id": "C-ALPHA", "account_id": "A-100", "type": "wire_in", "amount": 10},
            {"transaction_id": "T2", "customer_id": "C-ALPHA", "type": "cash_deposit", "amount": 20},
            {"transaction_id": "T3", "customer_id": "C-BETA", "account_id": "A-200", "type": "buy", "symbol": "ZZQ"},
        ],
        "account_events": [
            {"event_id": "E1", "account_id": "A-100", "event_type": "LOGIN"},
            {"event_id": "E2", "account_id": "A-200", "event_type": "LOGIN"},
            {"event_id": "E3", "account_id": "A-100", "event_type": "ADDRESS_CHANGE"},
        ],
        "related_account_activity": {
            "CL-1": {"member_accounts": ["A-100", "A-300"], "note": "x"},
            "CL-2": {"member_accounts": ["A-200"]},
        },
        "certificate_deposits": [{"deposit_id": "D1", "customer_id": "C-BETA", "account_id": "A-200", "ticker": "ZZQ"}],
        "securities": {"ZZQ": {"name": "Zed Corp", "ticker": "ZZQ"}, "k-yy": {"name": "Why Inc", "symbol": "YYR"}},
        "positions": {"A-100": {"ZZQ": 50}},
        "journal_entries": [],
        "activity": {
            "pending_requests": [
                {"request_id": "R1", "requested_by_customer_id": "C-ALPHA", "account_id": "A-100",
                 "type": "wire_transfer", "status": "pending", "details": {"amount": 5}},
                {"request_id": "R2", "requested_by_customer_id": "C-BETA", "account_id": "A-200",
                 "type": "trade", "status": "pending", "details": {"security": "ZZQ", "action": "sell", "shares": 7}},
            ],
            "trades": [],
        },
        "monitoring": {"alerts": [{"alert_id": "AL-1", "account_id": "A-100", "status": "open"}]},
        "investigations": {"cases": []},
        "decisions": [],
    }
    doc.update(extra)
    return StateDB(doc)


# ---------------------------------------------------------------- determinism / shared handlers


def test_ids_follow_the_shared_counter_and_record_decision_echoes_kwargs_in_order():
    state = StateDB({"now": NOW})
    first = call(state, "process_refund", order_id="NOPE")
    assert first["refund_id"] == "REF_BFF2D5F7"  # sha256("REF:0"), reference 2.5
    rec = dispatch(ToolContext(state, "record_decision"), note="n", decision="DENY", extra=1)
    assert list(rec) == ["decision_record_id", "decision", "recorded_at", "note", "extra"]
    assert rec["recorded_at"] == NOW
    # `decisions` did not exist: created (reference 2.6); the counter is shared (now 2)
    assert state.export()["decisions"][0]["decision"] == "DENY"
    assert state.export()["_id_counter"] == 2


def test_escalation_echoes_kwargs_except_reason_and_summary_and_changes_only_the_counter():
    state = finra_state()
    before = state.export()
    out = call(state, "escalate_to_compliance", reason="r", summary="s", urgency="high", linked_case_id="K")
    assert out["status"] == "pending_review" and out["assigned_to"] == "Senior Officer"
    assert list(out)[4:] == ["urgency", "linked_case_id"]
    after = state.export()
    assert after.pop("_id_counter") == 1 and after == before


def test_unknown_lookup_falls_back_to_a_collection_and_unknown_tools_soft_error():
    state = StateDB({"widgets": [{"widget_id": "W-9", "colour": "teal"}]})
    assert call(state, "lookup_widget", widget_id="w-9 ") == {"widget_id": "W-9", "colour": "teal"}
    miss = call(state, "lookup_widget", widget_id="W-0", colour="teal")
    assert miss["error"] is True and miss["lookup"] == "widget" and miss["criteria"] == {"widget_id": "W-0"}
    other = call(state, "frobnicate", x=1)
    assert other["error"] is True and "no handler registered" in other["message"].lower()


def test_argument_named_db_raises_like_the_original():
    with pytest.raises(TypeError):
        dispatch(ToolContext(StateDB({}), "record_decision"), db={}, decision="ALLOW")


def test_lookup_customer_profile_not_found_shape():
    out = call(finra_state(), "lookup_customer_profile", customer_id="C-NONE")
    assert out == {"error": True, "message": "No customer_profile found for customer_id='C-NONE'.",
                   "customer_id": "C-NONE"}
    assert call(finra_state(), "lookup_customer_profile", customer_id="c-alpha")["display_name"] == "Alpha Person"


# ---------------------------------------------------------------- finra reads


def test_query_transaction_history_infers_customers_of_an_account():
    out = call(finra_state(), "query_transaction_history", account_id="A-100")
    # T2 has no account_id, but its customer was seen with A-100 (in T1 and R1): included (reference 2.6)
    assert [t["transaction_id"] for t in out["transactions"]] == ["T1", "T2"]
    assert [r["request_id"] for r in out["pending_requests"]] == ["R1"]
    assert out["count"] == 2
    typed = call(finra_state(), "query_transaction_history", transaction_type="BUY")
    assert [t["transaction_id"] for t in typed["transactions"]] == ["T3"]
    assert call(finra_state(), "query_transaction_history")["count"] == 3


def test_lookup_account_events_uses_accounts_inferred_for_the_customer():
    out = call(finra_state(), "lookup_account_events", customer_id="C-ALPHA", event_type="login")
    assert [e["event_id"] for e in out["account_events"]] == ["E1"] and out["count"] == 1
    # a customer with no inferable account and no account_id: no restriction
    assert call(finra_state(), "lookup_account_events", customer_id="C-GHOST")["count"] == 3


def test_lookup_related_account_activity_and_certificate_deposits():
    out = call(finra_state(), "lookup_related_account_activity", account_id="A-300")
    assert out["count"] == 1 and out["related_account_activity"][0]["cluster_id"] == "CL-1"
    assert call(finra_state(), "lookup_related_account_activity", related_group_id="cl-2")["count"] == 1
    deposits = call(finra_state(), "lookup_certificate_deposits", symbol="zzq")
    assert deposits["count"] == 1 and deposits["certificate_deposits"][0]["deposit_id"] == "D1"


def test_lookup_security_info_exact_normalized_and_missing():
    assert call(finra_state(), "lookup_security_info", symbol="ZZQ") == {"symbol": "ZZQ", "name": "Zed Corp", "ticker": "ZZQ"}
    assert call(finra_state(), "lookup_security_info", ticker="yyr")["symbol"] == "YYR"
    assert call(finra_state(), "lookup_security_info", security="NOPE") == {
        "error": True, "message": "No security found for symbol='NOPE'.", "symbol": "NOPE"}


# ---------------------------------------------------------------- finra mutators


def pending(state: StateDB, rid: str) -> dict:
    return next(r for r in state.get("activity.pending_requests") if r["request_id"] == rid)


def test_wire_hold_release_cycle():
    state = finra_state()
    held = call(state, "hold_transaction", request_id="R1")
    assert held == {"request_id": "R1", "status": "held", "hold_reason": "compliance_review",
                    "hold_expiry": "2026-03-01T10:00:00-05:00"}
    call(state, "release_hold", request_id="R1", reason="cleared")
    req = pending(state, "R1")
    assert req["status"] == "pending" and req["hold_released_at"] == NOW and req["hold_release_reason"] == "cleared"
    wire = call(state, "process_wire_transfer", request_id="R1")
    assert wire["wire_id"].startswith("WIRE_") and wire["confirmation_number"].startswith("CNF_")
    assert pending(state, "R1")["status"] == "submitted"
    # new keys go last, as in a Python dict
    assert list(pending(state, "R1"))[-3:] == ["hold_reason", "hold_released_at", "hold_release_reason"]


def test_mutators_with_unknown_or_differently_cased_ids_change_nothing():
    state = finra_state()
    before = state.export()
    assert call(state, "hold_transaction", request_id="r1")["status"] == "held"  # exact match only
    assert call(state, "dismiss_alert", alert_id="AL-404", reason="x") == {"alert_id": "AL-404", "status": "dismissed"}
    assert state.export() == before


def test_cash_deposit_appends_a_transaction_and_processes_the_request():
    state = finra_state()
    out = call(state, "process_cash_deposit", customer_id="C-ALPHA", amount=12000, ctr_exemption=True, request_id="R1")
    assert out == {"deposit_id": out["deposit_id"], "status": "processed", "amount": 12000, "timestamp": NOW}
    row = state.get("transactions")[-1]
    assert row["transaction_id"] == out["deposit_id"] and row["account_id"] == "C-ALPHA"
    assert row["type"] == "cash_deposit" and row["ctr_exemption_applied"] is True
    assert pending(state, "R1")["status"] == "processed"


def test_execute_trade_takes_fields_from_the_request_details():
    state = finra_state()
    trade = call(state, "execute_trade", request_id="R2")
    assert (trade["symbol"], trade["side"], trade["quantity"]) == ("ZZQ", "sell", 7)
    assert state.get("activity.trades") == [trade]
    assert pending(state, "R2")["status"] == "executed"


def test_journal_security_positions_moves_quantity_and_posts_an_entry():
    state = finra_state()
    entry = call(state, "journal_security_positions", symbol="ZZQ", quantity=20,
                 from_account_id="A-100", to_account_id="A-900")
    assert state.get("positions") == {"A-100": {"ZZQ": 30}, "A-900": {"ZZQ": 20}}
    assert entry["status"] == "posted" and state.get("journal_entries") == [entry]


def test_annuity_and_beneficiary_requests():
    state = finra_state()
    ann = call(state, "process_annuity_cancellation", request_id="R1", surrender_value_usd=900)
    assert ann["cancellation_id"].startswith("ANN_") and ann["surrender_value_usd"] == 900
    call(state, "update_beneficiary_designation", request_id="R2", beneficiary_name="Someone")
    event = state.get("account_events")[-1]
    assert event["event_type"] == "BENEFICIARY_DESIGNATION_UPDATED" and event["account_id"] == "A-200"
    assert pending(state, "R2")["status"] == "executed"


def test_alerts_cases_and_filings():
    state = finra_state()
    alert = call(state, "create_alert", account_id="A-100", description="d", linked_movements=["M1"])
    stored = state.get("monitoring.alerts")[-1]
    assert stored["alert_id"] == alert["alert_id"] and stored["category"] == "OTHER" and stored["severity"] == "medium"
    assert stored["linked_movements"] == ["M1"]
    call(state, "dismiss_alert", alert_id="AL-1", reason="false positive")
    assert state.get("monitoring.alerts")[0]["status"] == "dismissed"
    case = call(state, "open_case", customer_id="C-ALPHA", case_type="AML", summary="s", linked_account_ids=["A-100"])
    assert case["assigned_to"] == "Analyst" and state.get("investigations.cases")[0]["linked_account_ids"] == ["A-100"]
    before = state.export()
    ctr = call(state, "file_ctr", customer_id="C-ALPHA", transaction_ids=["T1"], total_amount_usd=15000)
    sar = call(state, "file_sar", customer_id="C-ALPHA", case_id="K", narrative="n", amount_involved_usd=1)
    assert ctr["ctr_id"].startswith("CTR_") and ctr["filing_status"] == "draft" and ctr["filed_at"] == NOW
    assert sar["sar_id"].startswith("SAR_") and sar["filing_status"] == "draft"
    after = state.export()
    assert after.pop("_id_counter") == before.pop("_id_counter") + 2 and after == before


def test_create_alert_without_monitoring_stores_nothing():
    state = StateDB({"now": NOW, "decisions": []})
    assert call(state, "create_alert", account_id="A-1")["status"] == "open"
    assert "monitoring" not in state.export()


# ---------------------------------------------------------------- retail


def retail_state(order: dict, tier: str = "Silver") -> StateDB:
    base = {"order_id": "O-1", "customer_id": "CU-1", "status": "delivered", "total_amount": 200.0,
            "is_final_sale": False, "flags": [], "items": [{"item_id": "I-1", "category": "Apparel", "price": 200.0}]}
    base.update(order)
    return StateDB({
        "now": NOW,
        "orders": [base],
        "customer_profile": {"customer_id": "CU-1", "loyalty_tier": tier, "account_flags": []},
        "decisions": [],
    })


@pytest.mark.parametrize(
    "order, tier, window, days, eligible, fee",
    [
        ({"delivery_date": "2030-05-01T09:00:00-04:00"}, "Silver", 30, 19, True, 0),
        ({"delivery_date": "2030-04-10T09:00:00-04:00"}, "Silver", 30, 40, False, 0),
        ({"delivery_date": "2030-04-10T09:00:00-04:00"}, "Gold", 45, 40, True, 0),
        ({"delivery_date": "2030-03-10", "items": [{"category": "Electronics"}]}, "Platinum", 30, 71, False, 0),
        ({"purchased_at": "2030-05-01", "items": [{"category": " electronics "}]}, "silver", 15, 19, False, 15),
        ({"delivered_at": "2030-05-10T23:30:00", "items": [{"category": "electronics"}]}, "GOLD", 21, 10, True, 0),
    ],
)
def test_check_return_eligibility_windows(order, tier, window, days, eligible, fee):
    out = call(retail_state(order, tier), "check_return_eligibility", order_id="O-1")
    assert list(out)[:6] == ["order_id", "customer_id", "return_window_days", "days_since_delivery",
                             "restocking_fee_applicable", "restocking_fee_percent"]
    assert (out["return_window_days"], out["days_since_delivery"], out["eligible"]) == (window, days, eligible)
    assert (out["restocking_fee_percent"], out["restocking_fee_applicable"]) == (fee, fee > 0)
    if days > window:
        assert str(days) in out["reason"] and str(window) in out["reason"]


def test_check_return_eligibility_final_sale_missing_date_and_missing_order():
    final = call(retail_state({"delivery_date": "2030-05-19", "flags": ["final_sale"]}), "check_return_eligibility", order_id="O-1")
    assert final["eligible"] is False and final["days_since_delivery"] == 1
    undated = call(retail_state({}), "check_return_eligibility", order_id="O-1")
    assert undated["eligible"] is False and undated["days_since_delivery"] is None
    missing = call(retail_state({}), "check_return_eligibility", order_id="O-2")
    assert missing == {"error": True, "message": "No order found for order_id='O-2'.", "order_id": "O-2", "eligible": False}


def test_refund_with_restocking_percent_flag_account_and_order_lookup():
    state = retail_state({})
    out = call(state, "process_refund", order_id="O-1", refund_type="partial", restocking_fee_percent=15)
    assert (out["amount_refunded"], out["restocking_fee_amount"]) == (170.0, 30.0)
    assert call(state, "lookup_order", order_id="o-1")["status"] == "refunded"
    assert call(state, "lookup_order", order_id="O-9")["error"] is True
    flag = call(state, "flag_account", customer_id="CU-1", flag_type="suspected_fraud", notes="n")
    assert flag["status"] == "active" and state.get("customer_profile")["account_flags"] == ["suspected_fraud"]
    denial = call(state, "deny_refund", order_id="O-1", reason_code="final_sale", customer_message="m")
    assert denial["status"] == "denied" and denial["reason_code"] == "final_sale"


# ---------------------------------------------------------------- helpdesk


def helpdesk_state(**extra) -> StateDB:
    doc = {
        "now": NOW,
        "_policy_text": "Synthetic policy.",
        "employee": {"employee_id": "EMP-7", "display_name": "Pat Example", "manager": "Lee Boss",
                     "phone_last_four": "1234", "department": "Ops"},
        "accounts": {
            "EMP-7": {"account_type": "standard", "status": "locked", "lockout_status": "locked",
                      "lockout_reason": "security_flag", "password_last_changed": "2029-01-01"},
            "EMP-8": {"account_type": "standard", "status": "locked", "lockout_status": "locked",
                      "security_flagged": True},
        },
        "approvals": [{"ticket_id": "TK-1", "employee_id": "EMP-7", "resource_name": "BigDB", "status": "Approved"}],
        "tickets": [],
        "prohibited_software": ["TorrentThing"],
        "decisions": [],
    }
    doc.update(extra)
    return StateDB(doc)


def test_verify_identity_match_mismatch_and_bad_items():
    state = helpdesk_state()
    ok = call(state, "verify_identity", employee_id="EMP-7", verification_items={"manager": "lee boss", "phone_last_four": 1234})
    assert ok["verified"] is True and ok["matched_fields"] == ["manager", "phone_last_four"]
    bad = call(state, "verify_identity", employee_id="EMP-7", verification_items={"manager": "Lee Boss", "department": "Sales"})
    assert bad["verified"] is False and bad["mismatched_fields"] == ["department"]
    assert bad["checked_fields"] == ["manager", "department"]
    empty = call(state, "verify_identity", employee_id="EMP-7", verification_items={})
    assert empty["error"] is True and empty["verified"] is False and empty["matched_fields"] == []
    ghost = call(state, "verify_identity", employee_id="EMP-0", verification_items={"manager": "x"})
    assert ghost["error"] is True and ghost["verified"] is False and ghost["mismatched_fields"] == []


def test_unlock_account_security_flag_blocks_but_security_flagged_does_not():
    state = helpdesk_state()
    blocked = call(state, "unlock_account", employee_id="EMP-7")
    assert blocked["status"] == "locked" and blocked["requires_escalation"] is True
    assert state.get("accounts")["EMP-7"]["lockout_status"] == "locked"
    other = call(state, "unlock_account", employee_id="EMP-8")
    assert other == {"employee_id": "EMP-8", "status": "unlocked", "previous_lockout_reason": "failed_login_attempts"}
    assert state.get("accounts")["EMP-8"]["lockout_status"] == "none"
    assert state.get("accounts")["EMP-8"]["status"] == "locked"  # `status` is not touched


def test_reset_password_and_lookup_employee():
    state = helpdesk_state()
    refused = call(state, "reset_password", employee_id="EMP-7", account_type="admin")
    assert refused["error"] is True
    done = call(state, "reset_password", employee_id="EMP-7")
    assert done["status"] == "reset_complete" and done["expires_in_hours"] == 24
    assert state.get("accounts")["EMP-7"]["password_last_changed"] == NOW
    emp = call(state, "lookup_employee", employee_id="EMP-7")
    assert emp["display_name"] == "Pat Example" and emp["account"]["lockout_reason"] == "security_flag"
    assert emp["lockout_status"] == "locked" and emp["account_type"] == "standard"
    assert call(state, "lookup_employee", employee_id="EMP-0")["error"] is True


def test_check_approval_status_found_and_missing():
    state = helpdesk_state()
    found = call(state, "check_approval_status", employee_id="EMP-7", resource_name="bigdb")
    assert found["approved"] is True and found["status"] == "Approved"
    missing = call(state, "check_approval_status", employee_id="EMP-7", ticket_id="TK-2")
    assert missing["approved"] is False and missing["status"] == "missing"


def test_install_software_provisioning_and_tickets():
    state = helpdesk_state()
    refused = call(state, "install_software", employee_id="EMP-7", software_name=" torrentthing ")
    assert refused["error"] is True
    assert "_id_counter" not in state.export() or state.export()["_id_counter"] == 0
    assert call(state, "install_software", software_name="Editor")["status"] == "installed"
    assert call(state, "provision_vpn_access", employee_id="EMP-7")["status"] == "provisioned"
    access = call(state, "create_access_request", resource_name="BigDB", access_level="write")
    assert (access["status"], access["access_level"]) == ("submitted", "write")
    ticket = call(state, "log_ticket", employee_id="EMP-7", category="c", summary="s", action_taken="a", status="resolved")
    assert ticket["status"] == "resolved" and state.get("tickets")[0]["ticket_id"] == ticket["ticket_id"]
    assert call(state, "read_policy") == {"available": True, "policy": "Synthetic policy."}
