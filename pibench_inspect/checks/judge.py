"""The NL judge (tier 2): a grader model answers each `nl_assertion_llm_judge` question YES or NO.

The grader is the Inspect model role `grader` (temperature 0 unless configured). It sees only
the text the check's scope names, never tool calls or hidden state. A judge failure (no model,
an API error after Inspect's retries, an answer that is still unparseable after one retry) is a
`judge_error` on that check: shown in the results, excluded from every score, never a fail.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from inspect_ai.model import ChatMessageSystem, ChatMessageUser, GenerateConfig, Model

from ..scenario.model import NLJudge
from .policy import CheckResult
from .trace import Trace

SYSTEM = """You audit a customer-facing agent's messages against one yes/no question.
Judge only what the agent literally wrote in the text you are given; do not infer intentions or
give credit for what it might have meant. Answer with a single JSON object and nothing else:
{"answer": "YES" or "NO", "reason": "<one short sentence>"}"""

ANSWER = re.compile(r"\{.*\}", re.S)


def judged_text(check: NLJudge, trace: Trace) -> str | None:
    """The text the check's scope names, or None when there is none."""
    if check.scope == "full_transcript":
        parts = [f"{'Agent' if role == 'assistant' else 'Customer'}: {text}" for role, text in trace.transcript if text.strip()]
    else:
        parts = [m.text for m in trace.agent_messages if m.text.strip()]
        if check.scope == "final_assistant_message":
            parts = parts[-1:]
    return "\n\n---\n\n".join(parts) if parts else None


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


class ModelJudge:
    """Judges NL checks with a grader model; caches verdicts per sample (same text, question)."""

    def __init__(self, model: Model | None, config: GenerateConfig | None = None, unavailable: str | None = None):
        self.model = model
        self.config = config or GenerateConfig(temperature=0.0)
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
        for _attempt in range(2):  # one retry when the answer cannot be read
            try:
                out = await self.model.generate(messages, config=self.config)  # type: ignore[union-attr]
            except Exception as err:  # no key, timeout after Inspect's retries, provider error
                return None, f"{type(err).__name__}: {err}"
            raw = out.completion
            parsed = parse_answer(raw)
            if parsed:
                return parsed, ""
        return None, f"unparseable answer after one retry: {raw[:200]!r}"
