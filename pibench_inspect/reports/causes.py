"""The underlying cause of a failure, in one line.

Inspect wraps a model call that failed after its retries in tenacity's `RetryError`, whose text
is `RetryError(<Future at 0x... state=finished raised AttemptTimeoutError>)`: it names neither
the model nor the cause. These helpers unwrap retry, group and timeout wrappers and say what
happened, e.g. `model call to openai-api/local/smollm2 timed out after 120 s (--attempt-timeout;
2 attempts)`.

* `error_cause(err)`: a live exception (the judge, the LiteLLM agent).
* `sample_error_cause(sample)`: a sample that ended in an error, from the log (the run-end
  summary, `pibench report`, the A2A green server's progress): the model call that failed, read
  from the sample's model events, else the innermost exception of the error.
"""

from __future__ import annotations

import re
from typing import Any

MAX_CHARS = 300
WRAPPED = re.compile(r"<Future at 0x[0-9a-fA-F]+ state=\w+ raised (\w+)>")
WRAPPERS = ("RetryError", "ExceptionGroup", "BaseExceptionGroup")
ATTEMPT_TIMEOUT = re.compile(r"attempt_timeout '([0-9.]+)' exceeded")
# the last "Name: message" line of a traceback section
EXC_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Timeout|Unavailable|Exceeded)\w*): ?(.*)$")


def one_line(text: str, limit: int = MAX_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _seconds(value: Any) -> str:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{f:g}"


def unwrap(err: BaseException) -> BaseException:
    """The innermost exception under tenacity's RetryError and exception groups."""
    seen: set[int] = set()
    while id(err) not in seen:
        seen.add(id(err))
        last = getattr(err, "last_attempt", None)  # tenacity.RetryError
        if last is not None and getattr(last, "failed", False) and last.exception() is not None:
            err = last.exception()
            continue
        if isinstance(err, BaseExceptionGroup) and err.exceptions:
            err = err.exceptions[0]
            continue
        break
    return err


def describe(name: str, message: str, attempt_timeout: Any = None) -> str:
    """What an exception (its class name and message) says happened, in words."""
    if name == "AttemptTimeoutError":
        m = ATTEMPT_TIMEOUT.search(message)
        seconds = m.group(1) if m else attempt_timeout
        return f"timed out after {_seconds(seconds)} s (--attempt-timeout)" if seconds is not None else "timed out (--attempt-timeout)"
    if name in ("TimeoutError", "APITimeoutError", "Timeout", "ReadTimeout", "ConnectTimeout"):
        return "timed out" + (f": {message}" if message else "")
    if name in ("APIConnectionError", "ConnectError", "ConnectionError", "ConnectionRefusedError"):
        return f"could not connect ({name})" + (f": {message}" if message else "")
    return f"failed: {name}" + (f": {message}" if message else "")


def error_cause(err: BaseException) -> str:
    """One line for a live exception: retry and group wrappers unwrapped."""
    inner = unwrap(err)
    name = getattr(inner, "kind", None) or type(inner).__name__  # LiteLLMCallError keeps the kind
    message = str(getattr(inner, "original", None) or inner)
    if type(inner).__name__ == "AttemptTimeoutError":
        return one_line("model call " + describe(name, message))
    return one_line(f"{name}: {message}" if message else name)


def _event_error(error: str) -> tuple[str, str]:
    """(exception name, message) from a model event's error text, e.g.
    `AttemptTimeoutError("attempt_timeout '1' exceeded.")` or `RateLimitError: ...`."""
    m = re.match(r"^\s*([A-Za-z_][\w.]*)\((.*)\)\s*$", error, re.S)
    if m:
        return m.group(1).rsplit(".", 1)[-1], m.group(2).strip().strip("'\"")
    m = re.match(r"^\s*([A-Za-z_][\w.]*):\s*(.*)$", error, re.S)
    if m:
        return m.group(1).rsplit(".", 1)[-1], m.group(2)
    return "", error


def _failed_call(sample: Any) -> str | None:
    """The last model call of the sample that failed, and how often it was tried."""
    events = [e for e in (getattr(sample, "events", None) or []) if getattr(e, "event", None) == "model"]
    failed = [e for e in events if e.error]
    if not failed:
        return None
    last = failed[-1]
    after = events[events.index(last) + 1:]
    if any(e.model == last.model and not e.error for e in after):
        return None  # that call was retried and went through: not what ended the sample
    attempts = 0
    for e in reversed(events[: events.index(last) + 1]):
        if e.model != last.model or not e.error:
            break
        attempts += 1
    name, message = _event_error(str(last.error))
    role = f" ({last.role} role)" if getattr(last, "role", None) else ""
    timeout = getattr(getattr(last, "config", None), "attempt_timeout", None)
    what = describe(name, one_line(message, 200), timeout)
    if attempts > 1:
        what = (what[:-1] + f"; {attempts} attempts)" if what.endswith("(--attempt-timeout)")
                else what + f" ({attempts} attempts)")
    return f"model call to {last.model}{role} {what}"


def _innermost(error: Any) -> str | None:
    """The innermost `Name: message` of an error's traceback (the chain's first cause)."""
    text = getattr(error, "traceback", None) or ""
    for line in text.splitlines():
        m = EXC_LINE.match(line.strip())
        if m and m.group(1).rsplit(".", 1)[-1] not in WRAPPERS:
            name, message = m.group(1).rsplit(".", 1)[-1], m.group(2)
            return f"{name}: {message}" if message else name
    return None


def is_wrapper(message: str) -> bool:
    return bool(WRAPPED.search(message)) or message.split("(", 1)[0].split("[", 1)[0].strip() in WRAPPERS


def sample_error_cause(sample: Any) -> str | None:
    """One line saying why a logged sample ended in an error (None when it did not)."""
    error = getattr(sample, "error", None)
    if error is None:
        return None
    message = str(getattr(error, "message", "") or "")
    wrapped = WRAPPED.search(message)
    call = _failed_call(sample)
    if call is not None and (is_wrapper(message) or (wrapped and wrapped.group(1) in call)):
        return one_line(call)
    if is_wrapper(message):
        inner = _innermost(error)
        if inner:
            return one_line(inner)
        if wrapped:
            return one_line(f"{wrapped.group(1)} (after retries)")
    return one_line(message) or "unknown error"
