"""The NL judge (tier 2): a grader model answers each `nl_assertion_llm_judge` question YES or NO.

The grader is the Inspect model role `grader`. It sees only the text the check's scope names,
never tool calls or hidden state, and is asked for a short structured verdict: one JSON object
`{"answer": "YES"|"NO", "reason": "..."}`. It is bounded: temperature 0 and at most
`JUDGE_MAX_TOKENS` output tokens, and `--attempt-timeout` per call, unless the role's own config
says otherwise (`--model-role 'grader={model: M, max_tokens: 1024}'`; role models inherit none
of the eval's generate settings but retries and `--timeout`).

An answer that cannot be read gets one retry, and the retry is a different request: the first
answer is shown back with the reason it could not be read and a stricter format reminder, which
also accepts a reply that starts with the bare word YES or NO. A stop of the judge's model
(`model_length`, `content_filter`) is not retried: the same request would stop the same way.

A judge failure (no model, an API error after Inspect's retries, a model stop, an answer that is
still unreadable after the retry) is a `judge_error` on that check with the reason: shown in the
results, excluded from every score, never a fail and never the agent's.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig, Model

from ..conversation.termination import model_stop, stop_detail

from ..scenario.model import NLJudge
from .policy import CheckResult
from .trace import Trace

SYSTEM = """You audit a customer-facing agent's messages against one yes/no question.
Judge only what the agent literally wrote in the text you are given; do not infer intentions or
give credit for what it might have meant. Answer with a single JSON object and nothing else:
{"answer": "YES" or "NO", "reason": "<one short sentence>"}"""

ANSWER = re.compile(r"\{.*\}", re.S)
# the retry also takes a reply that opens with the verdict word: **YES** - because ...
VERDICT_WORD = re.compile(r"^[\s\"'*`#>_-]*(YES|NO)\b[\s\"'*`.,:;!)_-]*(.*)$", re.S | re.I)
JUDGE_MAX_TOKENS = 256  # a verdict and one sentence; the role's max_tokens overrides it
ECHO_CHARS = 600  # what of an unreadable first answer the retry shows back
RETRY = """Your reply could not be read as a verdict ({why}).
Answer the question again with only this JSON object on one line, nothing before or after it:
{{"answer": "YES", "reason": "<one short sentence>"}} or {{"answer": "NO", "reason": "<one short sentence>"}}
If you cannot write JSON, reply with the single word YES or NO."""


def judged_text(check: NLJudge, trace: Trace) -> str | None:
    """The text the check's scope names, or None when there is none."""
    if check.scope == "full_transcript":
        parts = [f"{'Agent' if role == 'assistant' else 'Customer'}: {text}" for role, text in trace.transcript if text.strip()]
    else:
        parts = [m.text for m in trace.agent_messages if m.text.strip()]
        if check.scope == "final_assistant_message":
            parts = parts[-1:]
    return "\n\n---\n\n".join(parts) if parts else None


def parse_verdict_word(raw: str) -> tuple[str, str] | None:
    """(YES|NO, the rest as the reason) from a reply that opens with the verdict word."""
    m = VERDICT_WORD.match(raw or "")
    if not m:
        return None
    return m.group(1).upper(), " ".join(m.group(2).split())[:200]


def unreadable(raw: str, stop_reason: str | None) -> str:
    """Why an answer could not be read, for the retry's reminder and the judge error."""
    if stop_reason == "max_tokens":
        return "it was cut off at the output limit before the JSON object was complete"
    if not (raw or "").strip():
        return "it was empty"
    if not ANSWER.search(raw):
        return "it holds no JSON object"
    return 'its JSON object has no "answer" of YES or NO'


def parse_answer(raw: str) -> tuple[str, str] | None:
    """(YES|NO, reason) from a JSON answer; None if it cannot be read as one."""
    m = ANSWER.search(raw or "")
    if not m:
        return None
    try:
        obj = json.loads(m.group(0))
    except json.JSONDecodeError:
        return None
    answer = str(obj.get("answer", "")).strip().upper() if isinstance(obj, dict) else ""
    if answer not in ("YES", "NO"):
        return None
    return answer, str(obj.get("reason") or obj.get("reasoning") or "")


def verdict_detail(check: NLJudge, answer: str, reason: str) -> str:
    """The original's detail string of a verdict (reference 4.4): the question asked (its first
    80 characters), the expected answer as written, the judge's answer and reason."""
    q = check.judge_question
    shown = q[:80] + ("..." if len(q) > 80 else "")
    return f"llm_judge: question='{shown}' expected={check.expected_answer}, got={answer}, reason={reason}"


def judge_config(role: GenerateConfig | None) -> GenerateConfig:
    """What the judge generates with: a bound grader role's own temperature, max_tokens and
    attempt_timeout when it sets them, else temperature 0, JUDGE_MAX_TOKENS and the run's
    --attempt-timeout (Inspect hands a role model only --max-retries and --timeout).

    `role` is None when the grader role is unbound and the model under test judges: its config
    then holds the agent's --temperature and --max-tokens, which are not the judge's."""
    from ..runtime.inspect_internals import active_generate_config

    role = role or GenerateConfig()
    return GenerateConfig(
        temperature=role.temperature if role.temperature is not None else 0.0,
        max_tokens=role.max_tokens if role.max_tokens is not None else JUDGE_MAX_TOKENS,
        attempt_timeout=role.attempt_timeout if role.attempt_timeout is not None
        else active_generate_config().attempt_timeout,
    )


class ModelJudge:
    """Judges NL checks with a grader model; caches verdicts per sample (same text, question)."""

    def __init__(self, model: Model | None, config: GenerateConfig | None = None, unavailable: str | None = None):
        self.model = model
        self.config = config or GenerateConfig(temperature=0.0, max_tokens=JUDGE_MAX_TOKENS)
        self.unavailable = unavailable
        self.cache: dict[tuple[str, str], tuple[str, str]] = {}

    async def __call__(self, check: NLJudge, trace: Trace) -> CheckResult:
        def result(passed: bool | None, detail: str, status: str = "", **evidence: Any) -> CheckResult:
            return CheckResult(check.outcome_id, "NL_JUDGE", passed, detail, tier=2, status=status,
                               evidence=evidence, notes=check.notes)

        text = judged_text(check, trace)
        expected = check.expected_answer.upper()
        if text is None:
            return result(False, "nl_assertion_llm_judge: no assistant messages found",
                          reason="the agent said nothing the question could be asked of")
        if self.model is None:
            return result(None, f"judge error: {self.unavailable or 'no grader model'}", "judge_error")
        key = (hashlib.sha256(text.encode()).hexdigest(), check.judge_question)
        if key not in self.cache:
            verdict, error = await self._ask(text, check.judge_question)
            if verdict is None:
                return result(None, f"judge error: {error}", "judge_error")
            self.cache[key] = verdict
        answer, reason = self.cache[key]
        ok = answer == expected
        return result(ok, verdict_detail(check, answer, reason), **({} if ok else {"reason": reason, "answer": answer}))

    async def _ask(self, text: str, question: str) -> tuple[tuple[str, str] | None, str]:
        messages = [
            ChatMessageSystem(content=SYSTEM),
            ChatMessageUser(content=f"## Agent messages\n\n{text}\n\n## Question\n\n{question}\n\n"
                                    'Reply with the JSON object only.'),
        ]
        raw = ""
        for attempt in range(2):  # one retry when the answer cannot be read, asked differently
            try:
                out = await self.model.generate(messages, config=self.config)  # type: ignore[union-attr]
            except Exception as err:  # no key, timeout after Inspect's retries, provider error
                from ..reports.causes import error_cause

                return None, error_cause(err)
            stopped = model_stop(out)
            if stopped in ("model_length", "content_filter"):
                # the same request would stop the same way: no retry
                return None, stop_detail("judge", self.model, stopped, out)
            raw = out.completion
            parsed = parse_answer(raw) or (parse_verdict_word(raw) if attempt else None)
            if parsed:
                return parsed, ""
            why = unreadable(raw, out.stop_reason)
            echoed = raw.strip()[:ECHO_CHARS]
            messages = [*messages, *([ChatMessageAssistant(content=echoed)] if echoed else []),
                        ChatMessageUser(content=RETRY.format(why=why))]
        return None, f"unparseable answer after one retry ({why}): {raw[:200]!r}"
