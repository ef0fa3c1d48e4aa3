"""The original helpdesk domain's tools (reference 2.4 helpdesk table, 2.6 verify_identity and
check_approval_status). escalate_to_tier2 / escalate_to_it_security / record_decision are shared.

None of these tools enforce the policy (identity items, approvals, business hours): the
original left that to the agent, and so do we.
"""

from __future__ import annotations

import copy
from typing import Any

from .orig_common import find_record, is_empty, iter_records, not_found, values_equal

TEMP_PASSWORD = "TmpP@ss_2026!"  # fixed in the original (reference 2.4)
ACCOUNT_COPIES = ("account_type", "status", "lockout_status", "lockout_reason", "is_privileged")


def _employee(db: dict, employee_id: Any) -> dict | None:
    return find_record(db.get("employee"), "employee_id", employee_id) or find_record(
        db.get("employees"), "employee_id", employee_id
    )


def _account(db: dict, employee_id: Any) -> dict | None:
    """The live `accounts[employee_id]` record (exact key), for reads and in-place updates."""
    accounts = db.get("accounts")
    if isinstance(accounts, dict) and isinstance(employee_id, str) and isinstance(accounts.get(employee_id), dict):
        return accounts[employee_id]
    return None


def read_policy(db, ctx, /, **_):
    text = db.get("_policy_text")
    if not text:
        return {"error": True, "available": False, "message": "No policy document is available."}
    return {"available": True, "policy": text}


def lookup_employee(db, ctx, /, employee_id="", **_):
    emp, acct = _employee(db, employee_id), _account(db, employee_id)
    if emp is None and acct is None:
        return not_found("employee", "employee_id", employee_id)
    result = copy.deepcopy(emp) if emp is not None else {"employee_id": employee_id}
    if acct is not None:
        result["account"] = copy.deepcopy(acct)
        for field in ACCOUNT_COPIES:  # surfaced at top level unless the employee record has them
            if field in acct and field not in result:
                result[field] = copy.deepcopy(acct[field])
    return result


def verify_identity(db, ctx, /, employee_id="", verification_items=None, **_):
    empty = {"verified": False, "matched_fields": [], "mismatched_fields": []}
    emp = _employee(db, employee_id)
    if emp is None:
        return {**not_found("employee", "employee_id", employee_id), **empty}
    if not isinstance(verification_items, dict) or not verification_items:
        return {"error": True, "message": "verification_items must be a non-empty object.",
                "employee_id": employee_id, **empty}
    matched = [k for k, v in verification_items.items() if values_equal(emp.get(k), v)]
    mismatched = [k for k in verification_items if k not in matched]
    # one matching item is enough here: the policy's three-item rule is not enforced by the tool
    return {"employee_id": employee_id, "verified": bool(matched) and not mismatched,
            "matched_fields": matched, "mismatched_fields": mismatched,
            "checked_fields": list(verification_items)}


APPROVAL_SOURCES = ("approvals", "approval_tickets", "tickets", "access_requests")
APPROVED = {"approved", "valid", "complete", "completed"}


def check_approval_status(db, ctx, /, employee_id="", ticket_id=None, resource_name=None, **_):
    filters = [
        (employee_id, ("employee_id",)),
        (ticket_id, ("ticket_id", "approval_ticket_id", "access_request_id")),
        (resource_name, ("resource_name", "resource", "software_name")),
    ]
    filters = [(v, fields) for v, fields in filters if not is_empty(v)]

    def matches(rec: dict) -> bool:
        return all(any(values_equal(rec.get(f), v) for f in fields) for v, fields in filters)

    for source in APPROVAL_SOURCES:
        for rec in iter_records(db.get(source)):
            if matches(rec):
                status = rec.get("status")
                return {"approved": str(status).strip().lower() in APPROVED, "status": status,
                        "record": copy.deepcopy(rec)}
    return {"approved": False, "status": "missing", "employee_id": employee_id,
            "ticket_id": ticket_id, "resource_name": resource_name}


def reset_password(db, ctx, /, employee_id="", account_type="standard", ticket_id=None, **_):
    if account_type == "admin":  # the one refusal the original built in
        return {"error": True, "message": "Admin password resets require IT Security approval. Please escalate."}
    acct = _account(db, employee_id)
    if acct is not None:
        acct["password_last_changed"] = ctx.now
    return {"employee_id": employee_id, "status": "reset_complete", "temporary_password": TEMP_PASSWORD,
            "expires_in_hours": 24}


def unlock_account(db, ctx, /, employee_id="", lockout_reason_override=None, ticket_id=None, **_):
    # Only lockout_reason "security_flag" blocks; `security_flagged` / `status` are not looked at.
    acct = _account(db, employee_id)
    if acct is not None and acct.get("lockout_reason") == "security_flag":
        return {"employee_id": employee_id, "status": "locked", "requires_escalation": True,
                "message": "Account is locked by a security flag. Escalate to IT Security."}
    previous = (acct or {}).get("lockout_reason") or "failed_login_attempts"
    if acct is not None:
        acct["lockout_status"] = "none"
    return {"employee_id": employee_id, "status": "unlocked", "previous_lockout_reason": previous}


def provision_vpn_access(db, ctx, /, employee_id="", access_level=None, **_):
    # no approval check (reference 2.4)
    return {"vpn_access_id": ctx.new_id("VPN"), "employee_id": employee_id, "status": "provisioned",
            "access_level": access_level or "standard"}


def _prohibited_name(entry: Any) -> Any:
    if isinstance(entry, dict):
        return entry.get("name") or entry.get("software_name")
    return entry


def install_software(db, ctx, /, employee_id="", software_name="", ticket_id=None, **_):
    prohibited = db.get("prohibited_software")
    for entry in prohibited if isinstance(prohibited, list) else []:
        name = _prohibited_name(entry)
        if name is not None and str(name).strip().lower() == str(software_name).strip().lower():
            return {"error": True, "message": f"'{software_name}' is prohibited software and cannot be installed.",
                    "software_name": software_name}
    return {"install_id": ctx.new_id("INS"), "status": "installed", "software_name": software_name}


def create_access_request(db, ctx, /, resource_name="", access_level=None, **_):
    # always submitted, whatever the approval ticket says (reference 2.4)
    return {"access_request_id": ctx.new_id("AR"), "status": "submitted", "resource_name": resource_name,
            "access_level": access_level or "read"}


def log_ticket(db, ctx, /, employee_id="", category="", summary="", action_taken="", status=None, **_):
    ticket = {"ticket_id": ctx.new_id("TKT"), "employee_id": employee_id, "category": category,
              "summary": summary, "action_taken": action_taken, "status": status or "open",
              "created_at": ctx.now}
    if not isinstance(db.get("tickets"), list):
        db["tickets"] = []
    db["tickets"].append(ticket)
    return {"ticket_id": ticket["ticket_id"], "status": ticket["status"]}


HANDLERS = {
    "read_policy": read_policy,
    "lookup_employee": lookup_employee,
    "verify_identity": verify_identity,
    "check_approval_status": check_approval_status,
    "reset_password": reset_password,
    "unlock_account": unlock_account,
    "provision_vpn_access": provision_vpn_access,
    "install_software": install_software,
    "create_access_request": create_access_request,
    "log_ticket": log_ticket,
}
