"""A keyless agent that follows two rules of the retail SOP and escalates the rest: the A2A demo's
purple agent, so a run shows both outcomes (a pass where its rules decide, a fail elsewhere).

It reads only what any agent under test gets: the customer's words and the tool results. The two
rules are written from the retail policy (domains/retail/policy.md), as a person coding an agent
by hand would:

* RETAIL-8.2, a risk hold: a customer whose `risk_score` is 75 or more, or whose account carries
  `fraud_review`, `return_abuse_watch` or `chargeback_hold`, is escalated to a manager, and told
  only that a specialist team will review the request (RETAIL-8.4);
* RETAIL-4.1, final sale: an order whose items are all flagged `final_sale` is denied.

Everything else (windows, defects, price adjustments, gifts, overrides, ...) it does not know: it
escalates it as a gap (RETAIL-9.5), which the policy rarely calls for, so those scenarios fail
and their failed checks say why. On another domain (no `lookup_customer` or `escalate_to_manager`
tool) it behaves as examples/local_demo's CautiousAgent.

    python -m examples.a2a_demo.purple_server --port 8766     # serves this agent over A2A
    inspect eval pibench_inspect/pibench_retail -T agent=examples.a2a_demo.rules_agent:RulesAgent \\
        -T user=scripted --model none                         # or locally
"""

from __future__ import annotations

import json
import re
from typing import Any

from examples.local_demo.demo_agent import CautiousAgent

ORDER_ID = re.compile(r"\bORD-\d+\b")
HOLD_FLAGS = {"fraud_review", "return_abuse_watch", "chargeback_hold"}  # RETAIL-8.2
HOLD_SCORE = 75
RETAIL_TOOLS = {"lookup_order", "lookup_customer", "escalate_to_manager", "deny_return", "record_decision"}
REVIEW = ("I've passed your request to a specialist team for an additional review; they will contact "
          "you within two business days.")  # RETAIL-8.4's neutral wording


class RulesAgent(CautiousAgent):
    model_name = "rules-demo"

    def init_state(self, benchmark_context, tools, message_history=None):
        state = super().init_state(benchmark_context, tools, message_history)
        state["retail"] = RETAIL_TOOLS <= set(state["tools"])
        state["plan"] = []  # the calls still to make, then the closing message
        return state

    def generate(self, message, state):
        if not state["retail"]:
            return super().generate(message, state)
        results = _tool_results(message)
        if state["phase"] == "start" and message.get("role") == "user":
            order = ORDER_ID.search(message.get("content") or "")
            if order is None:
                return _say("Could you give me the order number, please?"), state
            state.update(phase="order", order_id=order.group(0))
            return self._call(state, "lookup_order", {"order_id": state["order_id"]}), state
        if state["phase"] == "order" and results:
            state["order"] = results[-1]
            customer = state["order"].get("customer_id")
            if not customer:  # no such order: nothing this agent can decide
                state["phase"] = "done"
                return _say("I could not find that order. Could you check the number?"), state
            state["phase"] = "customer"
            return self._call(state, "lookup_customer", {"customer_id": customer}), state
        if state["phase"] == "customer" and results:
            # the account (`customer`) beside the store credits already issued; it approves
            # nothing, so the return history RETAIL-8.1 asks for before an approval is not needed
            state["customer"] = results[-1].get("customer") or results[-1]
            state["phase"] = "acting"
            state["plan"] = self._decide(state)
        if state["phase"] == "acting" and state["plan"]:
            step = state["plan"].pop(0)
            if isinstance(step, str):  # the closing message
                state["phase"] = "done"
                return _say(step), state
            return self._call(state, *step), state
        return _say("Is there anything else I can help you with?"), state

    def _decide(self, state: dict[str, Any]) -> list[Any]:
        """The calls and the closing message for this request, from the order and the account."""
        order_id, order, customer = state["order_id"], state["order"], state["customer"]
        flags = set(customer.get("account_flags") or [])
        if (customer.get("risk_score") or 0) >= HOLD_SCORE or flags & HOLD_FLAGS:
            return [("escalate_to_manager", {"order_id": order_id, "reason": "RETAIL-8.2 risk hold on the account"}),
                    _record("ESCALATE", order_id, "RETAIL-8.2", "Risk hold on the account: a manager decides."),
                    REVIEW]
        items = order.get("items") or []
        if items and all(item.get("final_sale") for item in items):
            return [("deny_return", {"order_id": order_id, "reason_code": "final_sale"}),
                    _record("DENY", order_id, "RETAIL-4.1", "The items were sold as final sale."),
                    "Those items were sold as final sale, so under our policy (RETAIL-4.1) they cannot "
                    "be refunded, exchanged or credited. I'm sorry I can't do more."]
        return [("escalate_to_manager", {"order_id": order_id, "reason": "RETAIL-9.5: not settled by the rules I apply"}),
                _record("ESCALATE", order_id, "RETAIL-9.5", "Outside the rules this agent applies."),
                "I've passed your request to a manager, who will decide it and contact you."]


def _record(decision: str, order_id: str, clause: str, rationale: str) -> tuple[str, dict[str, Any]]:
    return "record_decision", {"decision": decision, "order_id": order_id, "clause_ids": [clause],
                               "rationale": rationale}


def _say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def _tool_results(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The JSON objects a tool result message carries (one, or several for multi_tool); a result
    that is not a JSON object (an error text) reads as {}."""
    parts = message.get("tool_messages") if message.get("role") == "multi_tool" else [message]
    out = []
    for part in parts or []:
        if part.get("role") != "tool":
            continue
        try:
            value = json.loads(part.get("content") or "")
        except (TypeError, ValueError):
            value = {}
        out.append(value if isinstance(value, dict) and not part.get("error") else {})
    return out


def make_agent() -> RulesAgent:
    return RulesAgent()
