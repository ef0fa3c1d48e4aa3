"""The NL judge (tier 2) through the `grader` role: verdicts, judge errors, off/auto modes."""

from __future__ import annotations

import asyncio

from inspect_ai.model import ModelOutput, ModelUsage, get_model

from conftest import MINI, run_eval, sample_scores
from helpers_trace import trace
from pibench_inspect.checks.judge import ModelJudge, judged_text, parse_answer
from pibench_inspect.scenario.model import NLJudge
from conftest import registered

USAGE = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)


def grader(*answers):
    outs = []
    for a in answers:
        o = ModelOutput.from_content("mockllm/model", a)
        o.usage = USAGE
        outs.append(o)
    return get_model("mockllm/model", custom_outputs=outs)


def nl(scores):
    sc = scores["MINI_001_REFUND_OK"]
    return [c for c in sc.metadata["checks"].values() if c["type"] == "NL_JUDGE"][0], sc


def task(**kw):
    return registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="oracle", user="scripted", **kw)


def test_parse_answer():
    assert parse_answer('{"answer": "yes", "reason": "polite"}') == ("YES", "polite")
    assert parse_answer('Sure! {"answer": "NO", "reasoning": "rude"} done') == ("NO", "rude")
    assert parse_answer("YES") is None and parse_answer('{"answer": "maybe"}') is None


def test_grader_verdict_scores_the_nl_tier_only():
    log = run_eval(task(), model_roles={"grader": grader('{"answer": "YES", "reason": "polite"}')})
    check, sc = nl(sample_scores(log))
    assert check["passed"] is True and check["status"] == "passed"
    assert sc.metadata["semantic_score"] == 1.0 and sc.metadata["judge_model"] == "mockllm/model"
    assert sc.value["partial_credit"] == 1.0  # strict partial credit is tier 1 only
    metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    assert metrics["semantic_score"] == 1.0


def test_no_verdict_fails_the_check_but_not_tier_one():
    log = run_eval(task(), model_roles={"grader": grader('{"answer": "NO", "reason": "curt"}')})
    check, sc = nl(sample_scores(log))
    assert check["passed"] is False and "curt" in check["detail"]
    assert sc.value["all_passed"] == 1.0 and sc.metadata["semantic_score"] == 0.0
    # strict partial credit is deterministic: a failed NL verdict does not move it
    # (parity scoring counts NL verdicts, as the original did: tests/test_parity_replay.py)
    assert sc.value["partial_credit"] == 1.0


def test_unparseable_twice_is_a_judge_error_excluded_from_scores():
    log = run_eval(task(), model_roles={"grader": grader("I think so.", "Probably yes?")})
    check, sc = nl(sample_scores(log))
    assert check["status"] == "judge_error" and check["passed"] is None
    assert "unparseable answer after one retry" in check["detail"]
    assert sc.metadata["semantic_score"] is None
    assert "judge error" in sc.explanation


def test_retry_after_one_unparseable_answer():
    log = run_eval(task(), model_roles={"grader": grader("hmm", '{"answer": "YES", "reason": "ok"}')})
    check, _ = nl(sample_scores(log))
    assert check["passed"] is True


def test_provider_error_is_a_judge_error():
    class Broken:
        async def generate(self, *a, **k):
            raise ConnectionError("no API key")

    j = ModelJudge(Broken())  # type: ignore[arg-type]
    check = NLJudge(type="nl_assertion_llm_judge", judge_question="Polite?", expected_answer="YES")
    r = asyncio.run(j(check, trace(("say", "Hello there."))))
    assert r.status == "judge_error" and r.passed is None and "no API key" in r.detail


def test_judge_off_and_keyless_auto_say_not_scored():
    for kw, reason in ((dict(judge="off"), "judge=off"), ({}, "no grader model")):
        log = run_eval(task(**kw))
        _, sc = nl(sample_scores(log))
        metrics = log.results.scores[0].metrics
        assert "semantic_score" not in metrics and "semantic" not in metrics
        assert sc.metadata["nl_tier"].startswith("not_scored") and reason in sc.metadata["nl_tier"]
        assert "NL tier not scored" in sc.explanation
        assert sc.metadata["semantic_score"] is None


def test_judge_on_without_any_model_records_judge_errors():
    check, _ = nl(sample_scores(run_eval(task(judge="on"))))
    assert check["status"] == "judge_error" and "no grader model" in check["detail"]


def test_scopes_select_the_right_text():
    t = trace(("user", "I want a refund"), ("say", "Checking."), ("call", "lookup_order", {}), ("say", "Done, refunded."))
    q = dict(type="nl_assertion_llm_judge", judge_question="?", expected_answer="YES")
    assert judged_text(NLJudge(**q, scope="final_assistant_message"), t) == "Done, refunded."
    assert judged_text(NLJudge(**q), t) == "Checking.\n\n---\n\nDone, refunded."
    assert "Customer: I want a refund" in judged_text(NLJudge(**q, scope="full_transcript"), t)
