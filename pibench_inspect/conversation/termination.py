"""How a conversation ended (`Termination`), and what a party's model stop becomes.

The solver writes one `Termination` value into the sample's store (`pibench:termination`), the
scorer copies it into the score metadata (and its record), and `checks/evaluate.py` and
`scoring/metrics.py` read it. The values are the strings logs have always held (a `StrEnum`:
`Termination.USER_STOP == "user_stop"`), plus three added for a model that stopped without an
answer.

A model stops with one of Inspect's stop reasons. What each becomes, per party (docs/design.md
has the same table):

* the agent under test: `model_length` (its context or output overflowed), `content_filter`
  (the provider refused) and an empty reply (no text, no tool call) end the conversation with
  `agent_overflow`, `agent_content_filter` and `agent_empty`; the run is scored on the state
  reached, and the provider's text is kept out of the conversation (never shown to the user
  simulator, never read as the agent's words) and recorded as the stop's detail.
* the user simulator: the same three stops end the conversation as `user_error` with the reason,
  never as agent behaviour.
* the judge: the same three stops are a `judge_error` on that check (checks/judge.py).

`max_tokens` (the reply was cut at the output budget the run set) is not a stop: the text is the
party's own, as far as it got; a tool call cut in its arguments is a malformed call
(conversation/tool_calls.py).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class Termination(StrEnum):
    NOT_STARTED = "not_started"  # set before the first turn; stays if setup failed
    USER_STOP = "user_stop"  # the user simulator ended the conversation (a stop token, its turns used up)
    AGENT_STOP = "agent_stop"  # the agent sent a stop token (or, solo, answered in text)
    MAX_STEPS = "max_steps"  # -T max_steps reached
    LIMIT = "limit"  # an Inspect limit (messages, tokens, turns, time, working time)
    AGENT_ERROR = "agent_error"  # an external agent broke the protocol
    USER_ERROR = "user_error"  # the user simulator failed (its model stopped, a remote user broke)
    ERROR = "error"  # the sample ended on an Inspect error (no score)
    AGENT_OVERFLOW = "agent_overflow"  # the agent's model stopped: model_length
    AGENT_CONTENT_FILTER = "agent_content_filter"  # the agent's model stopped: content_filter
    AGENT_EMPTY = "agent_empty"  # the agent replied with no text and no tool call


# conversations scored on the state reached; the rest are abnormal (no check is evaluated)
SCORED = frozenset({
    Termination.AGENT_STOP, Termination.USER_STOP, Termination.MAX_STEPS, Termination.AGENT_ERROR,
    Termination.LIMIT, Termination.AGENT_OVERFLOW, Termination.AGENT_CONTENT_FILTER, Termination.AGENT_EMPTY,
})
# the party broke: counted in error_rate
ERRORS = (Termination.AGENT_ERROR, Termination.USER_ERROR)

# a model's stop reason -> what it ends the conversation as, when the agent's model stops
AGENT_STOPS = {
    "model_length": Termination.AGENT_OVERFLOW,
    "content_filter": Termination.AGENT_CONTENT_FILTER,
    "empty": Termination.AGENT_EMPTY,
}
DETAIL_CHARS = 300  # what is kept of a provider's own text about the stop


def model_stop(output: Any) -> str | None:
    """The stop of a model output that gives no answer to use: "model_length", "content_filter"
    or "empty" (no text and no tool call); None for an answer (stop, tool_calls, max_tokens...)."""
    reason = getattr(output, "stop_reason", None)
    if reason in ("model_length", "content_filter"):
        return reason
    message = output.message if getattr(output, "choices", None) else None
    if message is None or (not message.text.strip() and not message.tool_calls):
        return "empty"
    return None


def stop_detail(party: str, model: Any, reason: str, output: Any = None) -> str:
    """One line: which party's model stopped, how, and what the provider said (bounded)."""
    said = " ".join((output.completion or "").split()) if output is not None and getattr(output, "choices", None) else ""
    if len(said) > DETAIL_CHARS:
        said = said[:DETAIL_CHARS] + "..."
    what = {"model_length": "overflowed its context or output (model_length)",
            "content_filter": "was stopped by the provider's content filter (content_filter)",
            "empty": "returned an empty reply (no text, no tool call)"}.get(reason, reason)
    if reason == "empty" and getattr(output, "stop_reason", None) not in (None, "stop", "unknown"):
        what += f", stop reason {output.stop_reason}"
    return f"the {party}'s model {model} {what}" + (f": {said}" if said else "")


class ModelStopped(Exception):
    """The agent's model stopped without an answer: the conversation ends as `termination`.

    Raised by an agent (the model agent, the LiteLLM agent) instead of returning the provider's
    text as a reply; the solver records the termination and the detail, and scores the run on the
    state reached. Not an error of the run and not a protocol break."""

    def __init__(self, termination: Termination, detail: str, output: Any = None) -> None:
        super().__init__(detail)
        self.termination = termination
        self.detail = detail
        self.output = output  # the model's output, when there was one (shown as the sample's output)


def agent_stopped(model: Any, output: Any) -> ModelStopped | None:
    """The `ModelStopped` an agent's model output amounts to, or None when it is an answer."""
    reason = model_stop(output)
    if reason is None:
        return None
    return ModelStopped(AGENT_STOPS[reason], stop_detail("agent", model, reason, output), output)
