"""A2A JSON-RPC envelopes and replies, in the two dialects we speak.

Internally every part is the v0.3 shape (`{"kind": "text", "text"}` or `{"kind": "data",
"data"}`); the 1.x dialect converts at the edge. Replies are reduced to their candidate parts in
the order a client should try them: artifacts, then the task's status message, then a `message`
field, then a direct Message result (the original missed the last one).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..conversation.tool_calls import nested_deeper as depth_exceeds  # one iterative depth check
from ..local.adapter import text_of
from ..local.errors import AgentUnavailable
from .numbers import integral_numbers

BOOTSTRAP_URN = "urn:pi-bench:policy-bootstrap:v1"

MAX_DEPTH = 100  # nesting levels kept from a peer's JSON (deeper is refused, not recursed into)
MAX_ERROR_CHARS = 500  # what is kept of a peer's own error text


class A2AError(Exception):
    """A remote A2A peer answered, but with something we cannot use: an HTTP error status, a
    JSON-RPC error, a failed task, a reply that is not JSON, too large or too deep, or lacks what
    the protocol needs. The message names the URL and says which. `detail` holds a snippet of
    what was received, for the transcript only: bodies never go into messages, which can reach
    a caller (the green server's artifact)."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(bounded(message))
        self.detail = detail


class A2AUnavailable(AgentUnavailable):
    """The remote peer could not be reached or did not answer: connection refused, reset or
    dropped, HTTP 5xx after retries, no reply within the deadline. An infrastructure failure:
    deliberately not an A2AError, so it ends the sample as an Inspect sample error (retryable,
    out of the scores) rather than as the agent's own outcome."""


def bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """Error text from a peer is kept to `limit` characters (a peer decides its length)."""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more characters]"


def error_kind(message: str) -> str:
    """The exception type at the head of an error message ("APIError('...')", "KeyError: ..."),
    without the text that follows: provider errors quote what an endpoint answered, and that
    never goes back to the caller (docs/a2a.md)."""
    import re

    head = re.match(r"\s*([A-Za-z_][A-Za-z0-9_.]*)\s*[(:]", message or "")
    return head.group(1).rsplit(".", 1)[-1] if head else "an error"


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(raw: str | bytes, url: str, what: str = "reply") -> Any:
    """Strict JSON from a peer, nested at most MAX_DEPTH deep: deep nesting would otherwise
    recurse (a RecursionError in the parser or later in whatever walks the value), and NaN or
    Infinity would be written into the log as bare tokens strict JSON readers reject."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise A2AError(f"{url} sent a {what} nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, UnicodeDecodeError) as err:  # json.JSONDecodeError is a ValueError
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        raise A2AError(f"{url} sent a {what} that is not JSON ({str(err)[:120]})", _snippet(text)) from None
    if depth_exceeds(value, MAX_DEPTH):
        raise A2AError(f"{url} sent a {what} nested deeper than {MAX_DEPTH} levels")
    return value




def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Dialect:
    version: str  # "0.3" or "1.0"
    method: str

    @property
    def v1(self) -> bool:
        return self.version.startswith("1")

    def headers(self) -> dict[str, str]:
        return {"A2A-Version": "1.0"} if self.v1 else {}

    def part(self, part: dict[str, Any]) -> dict[str, Any]:
        """One of our (v0.3-shaped) parts on the wire."""
        if not self.v1:
            return part
        out: dict[str, Any] = {"data": part["data"]} if part["kind"] == "data" else {"text": part["text"]}
        if part.get("metadata"):
            out["metadata"] = part["metadata"]
        return out

    def message(
        self,
        parts: list[dict[str, Any]],
        *,
        context_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        role: str = "user",
    ) -> dict[str, Any]:
        msg: dict[str, Any] = {
            "role": ("ROLE_USER" if role == "user" else "ROLE_AGENT") if self.v1 else role,
            "parts": [self.part(p) for p in parts],
            "messageId": new_id(),
        }
        if not self.v1:
            msg["kind"] = "message"
        if context_id:
            msg["contextId"] = context_id
        if metadata:
            msg["metadata"] = metadata
        return msg

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": new_id(), "method": self.method, "params": {"message": message}}


V03 = Dialect("0.3", "message/send")
V10 = Dialect("1.0", "SendMessage")


def data_part(data: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"kind": "data", "data": data}
    if metadata:
        part["metadata"] = metadata
    return part


def text_part(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _normal_part(part: Any, integral: bool) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("kind")
    if kind == "data" or (kind is None and "data" in part):
        # 1.x carries data as protobuf Values, where every number is a double: 3 arrives as 3.0;
        # tool arguments and ids must keep their integers, so integral doubles become ints again
        data = integral_numbers(part.get("data")) if integral else part.get("data")
        return {"kind": "data", "data": data, "metadata": part.get("metadata") or {}}
    if kind == "text" or (kind is None and "text" in part):
        text = part.get("text")
        return {"kind": "text", "text": text if isinstance(text, str) else ""}
    return {"kind": str(kind or "unknown")}


@dataclass
class Reply:
    """What a message/send returned, reduced to what we use."""

    parts: list[dict[str, Any]] = field(default_factory=list)  # candidates, best first
    context_id: str | None = None
    task_id: str | None = None
    state: str | None = None  # task state, v0.3 spelling ("completed", "failed", ...)
    raw: Any = None


def _state(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    # 1.x: TASK_STATE_INPUT_REQUIRED -> input-required
    return value.removeprefix("TASK_STATE_").lower().replace("_", "-") if value.startswith("TASK_STATE_") else value


def parse_reply(body: Any, url: str, v1: bool = False, integral: bool | None = None) -> Reply:
    """A JSON-RPC response body -> Reply, or A2AError naming what is wrong with it. `integral`
    (default: `v1`): the peer sends every number as a double (a2a-sdk 1.x, in either dialect),
    so integral ones in data parts are read back as integers."""
    integral = v1 if integral is None else integral
    if not isinstance(body, dict) or body.get("jsonrpc") != "2.0":
        raise A2AError(f"{url} did not answer with a JSON-RPC 2.0 response", _snippet(body))
    if "error" in body and body["error"] is not None:
        err = body["error"] if isinstance(body["error"], dict) else {"message": str(body["error"])}
        # the peer's own words about its failure (a protocol field, not a body), kept short
        code, said = str(err.get("code", "?"))[:20], bounded(str(err.get("message", "")), 200)
        raise A2AError(f"{url} returned JSON-RPC error {code}: {said}".rstrip())
    result = body.get("result")
    if not isinstance(result, dict):
        raise A2AError(f"{url} returned a JSON-RPC response without a result object", _snippet(body))
    # 1.x wraps the result: {"task": {...}} or {"message": {...}}
    wrapped = len(result) == 1 and next(iter(result)) in ("task", "message")
    if v1 or wrapped:
        kind = "task" if "task" in result else "message" if "message" in result else None
        if kind is None or not isinstance(result[kind], dict):
            raise A2AError(f"{url} returned a result with neither a task nor a message", _snippet(body))
        result = result[kind]
        is_task = kind == "task"
    else:
        is_task = result.get("kind") == "task" or "status" in result or "artifacts" in result
    reply = Reply(raw=body, context_id=result.get("contextId"))
    candidates: list[Any] = []
    if is_task:
        reply.task_id = result.get("id")
        status = result.get("status") if isinstance(result.get("status"), dict) else {}
        reply.state = _state(status.get("state"))
        for artifact in result.get("artifacts") or []:
            if isinstance(artifact, dict):
                candidates += artifact.get("parts") or []
        if isinstance(status.get("message"), dict):
            candidates += status["message"].get("parts") or []
        if isinstance(result.get("message"), dict):
            candidates += result["message"].get("parts") or []
    else:
        candidates += result.get("parts") or []
        if isinstance(result.get("message"), dict):
            candidates += result["message"].get("parts") or []
    reply.parts = [p for p in (_normal_part(c, integral) for c in candidates) if p is not None]
    if reply.state in ("failed", "rejected", "canceled"):
        said = " ".join(p.get("text", "") for p in reply.parts if p["kind"] == "text").strip()
        raise A2AError(f"{url} ended the task as {reply.state}" + (f": {bounded(said, 200)}" if said else ""))
    return reply


def _snippet(value: Any, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + "..."


def message_content(message: Any, where: str, error: type[Exception] = A2AError) -> str:
    """The text of a pi-bench message: a string, or Anthropic-style text blocks (reference 3.1).
    `error` is what the caller raises for a malformed message (the server and the client differ)."""
    if not isinstance(message, dict):
        raise error(f"{where} must be an object with a 'content' string, got {type(message).__name__}")
    content = message.get("content")
    if content is not None and not isinstance(content, (str, list)):
        raise error(f"{where}.content must be a string, got {type(content).__name__}")
    return text_of(content)


def first_data(reply: Reply, url: str, what: str) -> dict[str, Any]:
    """The first data part whose data is an object (the user simulator and bootstrap need one)."""
    for part in reply.parts:
        if part["kind"] == "data" and isinstance(part.get("data"), dict):
            return part["data"]
    raise A2AError(f"{url} sent no data part with an object for {what}", _snippet(reply.raw))
