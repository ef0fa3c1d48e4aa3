"""Canonical decision resolution: tool channel, JSON fallback, invalid reasons."""

from helpers_trace import trace
from pibench_inspect.checks.decision import resolve_decision


def rd(decision, error=None):
    return ("call", "record_decision", {"decision": decision}) + ((error,) if error else ())


def test_last_valid_tool_call_wins():
    d = resolve_decision(trace(rd("DENY"), rd("ESCALATE")))
    assert (d.decision, d.channel, d.error) == ("ESCALATE", "tool", None)


def test_invalid_later_call_does_not_override_earlier_valid():
    d = resolve_decision(trace(rd("DENY"), rd("deny"), rd("MAYBE")))
    assert d.decision == "DENY"


def test_errored_call_is_not_valid():
    d = resolve_decision(trace(rd("ALLOW", "invalid arguments")))
    assert (d.decision, d.error) == (None, "INVALID_DECISION")


def test_tool_calls_with_no_valid_value_do_not_fall_back_to_json():
    d = resolve_decision(trace(rd("allow"), ("say", '```json\n{"decision": "ALLOW"}\n```')))
    assert d.error == "INVALID_DECISION"


def test_json_fallback_single_block():
    d = resolve_decision(trace(("say", 'Done.\n```json\n{"decision": "DENY", "why": "x"}\n```')))
    assert (d.decision, d.channel) == ("DENY", "json")
    assert "matched_span" in d.evidence


def test_json_fallback_bare_fence_and_multiple():
    assert resolve_decision(trace(("say", '```\n{"decision": "ALLOW"}\n```'))).decision == "ALLOW"
    two = trace(("say", '```json\n{"decision": "ALLOW"}\n```'), ("say", '```json\n{"decision": "ALLOW"}\n```'))
    assert resolve_decision(two).error == "MULTIPLE_DECISIONS_JSON"


def test_json_not_recognized_forms():
    for text in ['```JSON\n{"decision": "ALLOW"}\n```', '```json {"decision": "ALLOW"} ```',
                 'decision: ALLOW', '```json\n{"decision": "allow"}\n```', '```json\nnot json\n```']:
        assert resolve_decision(trace(("say", text))).error == "MISSING_DECISION", text


def test_missing():
    d = resolve_decision(trace(("say", "hello")))
    assert (d.decision, d.error, d.rendered()) == (None, "MISSING_DECISION", "INVALID:MISSING_DECISION")
