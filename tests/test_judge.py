"""The NL judge (tier 2) through the `grader` role: verdicts, judge errors, off/auto modes."""

from __future__ import annotations

import asyncio

from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage, get_model

from conftest import MINI, run_eval, sample_scores
from helpers_trace import trace
from pibench_inspect.checks.judge import JUDGE_MAX_TOKENS, ModelJudge, judged_text, parse_answer, parse_verdict_word
from pibench_inspect.conversation.users import USER_MAX_TOKENS
from pibench_inspect.scenario.model import NLJudge
from pibench_inspect.scoring.explain import check_list
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
    return [c for c in check_list(sc.metadata["checks"]) if c["type"] == "NL_JUDGE"][0], sc


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
    assert metrics["semantic"] == 1.0


def test_no_verdict_fails_the_check_but_not_tier_one():
    log = run_eval(task(), model_roles={"grader": grader('{"answer": "NO", "reason": "curt"}')})
    check, sc = nl(sample_scores(log))
    assert check["passed"] is False and "curt" in check["detail"]
    assert sc.value["all_passed"] == 1.0 and sc.metadata["semantic_score"] == 0.0
    # a semantic score of 0.0 is a score: the metric reads it (the slim score kept only truthy values)
    assert log.results.scores[0].metrics["semantic"].value == 0.0
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


def grader_events(log):
    from inspect_ai.log import resolve_sample_attachments

    sample = resolve_sample_attachments(log.samples[0])  # long texts are logged as attachments
    return [e for e in sample.events if e.event == "model" and e.role == "grader"]


def test_the_judge_is_bounded_and_its_retry_asks_differently():
    log = run_eval(task(), model_roles={"grader": grader(
        "Well, let me think about this carefully. The agent said several things " * 20,
        "YES - the agent was polite")})
    check, _ = nl(sample_scores(log))
    assert check["passed"] is True and "the agent was polite" in check["detail"]
    first, retry = grader_events(log)
    # its own output budget and temperature, though the run set neither
    assert first.config.max_tokens == JUDGE_MAX_TOKENS == 256 and first.config.temperature == 0.0
    assert retry.config.max_tokens == JUDGE_MAX_TOKENS
    # the retry is not the same call again: the first answer is shown back with why it could not
    # be read and a stricter format reminder
    assert len(retry.input) == len(first.input) + 2
    assert retry.input[: len(first.input)] == first.input
    assert retry.input[-2].role == "assistant" and retry.input[-2].text.startswith("Well, let me think")
    assert "could not be read as a verdict (it holds no JSON object)" in retry.input[-1].text
    assert '{"answer": "YES"' in retry.input[-1].text and "single word YES or NO" in retry.input[-1].text


def test_the_grader_roles_own_config_overrides_the_judges_bounds():
    answer = ModelOutput.from_content("mockllm/model", '{"answer": "YES", "reason": "ok"}')
    answer.usage = USAGE
    role = get_model("mockllm/model", config=GenerateConfig(max_tokens=40, temperature=0.3), custom_outputs=[answer])
    log = run_eval(task(), model_roles={"grader": role})
    (event,) = grader_events(log)
    assert event.config.max_tokens == 40 and event.config.temperature == 0.3


def test_the_model_under_test_judging_keeps_the_judges_bounds_not_the_agents():
    # unbound, the model under test judges: its config holds the agent's --temperature and
    # --max-tokens, which must not reach the judge (it stays at temperature 0 and 256 tokens)
    answer = ModelOutput.from_content("mockllm/model", '{"answer": "YES", "reason": "ok"}')
    answer.usage = USAGE
    # by name, as `inspect eval --model M --temperature 0.9 --max-tokens 3000` resolves it
    log = run_eval(task(), model="mockllm/model", model_args={"custom_outputs": [answer]},
                   temperature=0.9, max_tokens=3000)
    check, _ = nl(sample_scores(log))
    assert check["passed"] is True
    (event,) = [e for e in log.samples[0].events if e.event == "model"]  # the oracle agent calls no model
    assert event.config.temperature == 0.0 and event.config.max_tokens == JUDGE_MAX_TOKENS


def test_attempt_timeout_reaches_the_judge_and_the_user_simulator_and_the_user_is_bounded():
    log = run_eval(task(), model_roles={"grader": grader('{"answer": "YES", "reason": "ok"}')}, attempt_timeout=45)
    (event,) = grader_events(log)
    assert event.config.attempt_timeout == 45
    user = grader("###STOP###")  # any mockllm with usage set
    log = run_eval(registered(source=str(MINI), scenarios="MINI_001_REFUND_OK", agent="oracle", user="llm", judge="off"),
                   model_roles={"user": user}, attempt_timeout=45)
    (event,) = [e for e in log.samples[0].events if e.event == "model" and e.role == "user"]
    assert event.config.attempt_timeout == 45
    assert event.config.max_tokens == USER_MAX_TOKENS == 256  # one to three sentences, not a ramble


def test_a_cut_off_answer_is_retried_with_the_reason():
    cut = ModelOutput.from_content("mockllm/model", '{"answer": "YES", "reason": "the agent', stop_reason="max_tokens")
    cut.usage = USAGE
    ok = ModelOutput.from_content("mockllm/model", '{"answer": "NO", "reason": "curt"}')
    ok.usage = USAGE
    log = run_eval(task(), model_roles={"grader": get_model("mockllm/model", custom_outputs=[cut, ok])})
    check, _ = nl(sample_scores(log))
    assert check["passed"] is False and "curt" in check["detail"]
    assert "cut off at the output limit" in grader_events(log)[1].input[-1].text


def test_the_verdict_word_is_read_only_on_the_retry():
    assert parse_verdict_word("**YES** - the agent was polite") == ("YES", "the agent was polite")
    assert parse_verdict_word("no.") == ("NO", "")
    assert parse_verdict_word("Nobody knows") is None and parse_verdict_word("I say YES") is None
    log = run_eval(task(), model_roles={"grader": grader("NO", "NO")})
    check, _ = nl(sample_scores(log))
    assert check["passed"] is False and len(grader_events(log)) == 2  # a bare first NO was retried
