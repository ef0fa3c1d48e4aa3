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


def test_fence_scanner_matches_the_original_regex():
    """The linear scanner (checks/fences.py) finds exactly what the original's regex found, on
    random texts built from the pieces that matter (fences, `json`, whitespace of every kind)."""
    import random
    import re

    from pibench_inspect.checks.fences import fenced_blocks

    original = re.compile(r"```(?:json)?\s*\n(.*?)\n```", re.S)
    pieces = ["```", "`", "json", "js", "\n", " ", "\t", "\r", "\x1c", "\u00a0", "\x85", "{", "}",
              '"decision"', ":", '"ALLOW"', "x"]
    rng = random.Random(17)
    for _ in range(20_000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        expected = [(m.group(1), m.group(0)) for m in original.finditer(text)]
        assert list(fenced_blocks(text)) == expected, repr(text)


def test_500kb_of_unterminated_fences_resolve():
    """Each unterminated fence made the original regex rescan the rest of the message (60 kB took
    seconds, 480 kB minutes); the scanner reads it once. Also: a block nested 100k deep."""
    fences = "```json\na" * (500_000 // 9)
    d = resolve_decision(trace(("say", 'ok\n```json\n{"decision": "DENY"}\n```\n' + fences)))
    assert (d.decision, d.channel) == ("DENY", "json")
    deep = "```json\n" + "[" * 100_000 + "]" * 100_000 + "\n```"
    assert resolve_decision(trace(("say", deep + fences))).error == "MISSING_DECISION"
