"""The assessment request: the JSON an AgentBeats-style caller sends, read into a checked model.

The input is the first part of the message that is a data part holding an object, or a text
part holding a JSON object. Accepted shapes (reference 5.4):

    {"participants": {"agent": URL | {"url"|"endpoint"|"base_url": URL, "id"|"agentbeats_id": ID}},
     "agentbeats_ids": {"agent": ID}?, "config": {...}}

without an `agent` role the first participant is the agent under test; or, flat,
`{"purple_agent_url": URL, "purple_agent_id"|"agentbeats_id": ID, "config": {...}}`.

Every problem raises InvalidRequest with a message that names the field (`config.max_steps`,
`participants.agent`, ...) and says what is wrong, because the caller is usually a program run
by someone far away who only sees that message. Unknown config keys are refused (a typo would
otherwise silently run the default), except the original's `workspace_root`, which we do not use.
Numbers are bounded: a request must not be able to ask the server for unbounded work. They are
read by meaning (numbers.py): an a2a-sdk 1.x client sends every number as a double, so an
integral float is the integer it means (`max_steps: 40.0` is 40, `seed: 42.0` derives exactly the
seeds of 42), a fraction where a whole number is needed is refused naming the field, and a
boolean is never a number.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Literal

from a2a.types import DataPart, Message, TextPart
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..numbers import NotWholeNumber, describe, whole_number

logger = logging.getLogger(__name__)

AGENT_ROLE = "agent"
# a key of the original's config that has no meaning here: accepted so that an old request
# still runs, with a warning (the workspace is the server's --scenarios-dir)
IGNORED_KEYS = ("workspace_root",)
# bounds on what one request may ask of the server (the product of scenarios and trials is
# bounded again in plan.py)
MAX_TRIALS = 20
MAX_STEPS = 500
MAX_USER_TURNS = 100
MAX_A2A_TIMEOUT = 600.0
MAX_RETRIES = 5
URL_KEYS = ("url", "endpoint", "base_url")
ID_KEYS = ("id", "agentbeats_id")
# the config's whole-number fields (read by meaning: 40.0 is 40)
WHOLE_NUMBER_KEYS = ("num_trials", "concurrency", "max_steps", "seed", "max_user_turns", "retry_failed")


class InvalidRequest(ValueError):
    """The request cannot start an assessment; the message goes back as a JSON-RPC error."""


def _http_url(value: Any, field: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 2000:
        raise InvalidRequest(f"{field}: expected an http(s) URL string, got {_show(value)}")
    url = value.strip()
    if not url.startswith(("http://", "https://")):
        raise InvalidRequest(f"{field}: {url!r} is not an http:// or https:// URL")
    return url


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:80] + "..."


class AssessmentConfig(BaseModel):
    """`config` of the request. Strict types: a JSON caller that sends "40" for max_steps has
    made a mistake worth hearing about, and `true` must not pass as the integer 1. Whole numbers
    are read by meaning: 40.0 (what an a2a-sdk 1.x client sends for 40) is 40."""

    model_config = ConfigDict(extra="forbid", strict=True)

    domain: str = Field(default="policy_compliance", min_length=1, max_length=100)  # the result's label only
    scenario_scope: Literal["all", "domain"] = "all"
    scenario_domain: str | None = Field(default=None, max_length=100)  # a name or an original alias (plan.py)
    scenarios: list[str] | None = Field(default=None, max_length=10_000)  # ids (a comma-separated string too)
    num_trials: int = Field(default=1, ge=1, le=MAX_TRIALS)
    concurrency: int | None = Field(default=None, ge=1, le=1024)  # capped by the server's --concurrency
    max_steps: int = Field(default=40, ge=2, le=MAX_STEPS)
    seed: int = Field(default=42, ge=-(2**63), le=2**63 - 1)
    user: Literal["llm", "scripted"] = "llm"
    user_model: str | None = Field(default=None, min_length=1, max_length=200)
    user_url: str | None = Field(default=None, max_length=2000)
    judge: Literal["auto", "on", "off"] = "auto"
    judge_model: str | None = Field(default=None, min_length=1, max_length=200)
    observer_mode: Literal["audit_only", "hard_gate"] = "audit_only"
    scenarios_dir: str | None = Field(default=None, min_length=1, max_length=1000)
    max_user_turns: int = Field(default=8, ge=1, le=MAX_USER_TURNS)
    a2a_timeout: float = Field(default=120.0, gt=0, le=MAX_A2A_TIMEOUT)
    # rounds of re-running the sample runs that ended on an infrastructure error (Inspect's
    # retry_on_error), as the original's retry_failed re-ran its failed items
    retry_failed: int = Field(default=0, ge=0, le=MAX_RETRIES)

    @field_validator(*WHOLE_NUMBER_KEYS, mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        if v is None:
            return None  # absent optional (concurrency); a required field refuses it itself
        if isinstance(v, float) and abs(v) >= 2**63:  # integral, but no bound check should print 300 digits
            raise ValueError("expected a whole number between -2^63 and 2^63-1")
        try:
            return whole_number(v, "")
        except NotWholeNumber:
            # the field and the value are added by _config's message
            raise ValueError("expected a whole number" + (", not a boolean" if isinstance(v, bool) else "")) from None

    @field_validator("scenarios", mode="before")
    @classmethod
    def _split(cls, v: Any) -> Any:
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()] or None
        return v

    @field_validator("user_url")
    @classmethod
    def _url(cls, v: str | None) -> str | None:
        if v is None:
            return None
        try:
            return _http_url(v, "user_url")
        except InvalidRequest as err:
            raise ValueError(str(err).removeprefix("user_url: ")) from None


class AssessmentRequest(BaseModel):
    purple_url: str
    agent_id: str  # the leaderboard id when given, else the role name
    role: str
    config: AssessmentConfig
    warnings: list[str] = Field(default_factory=list)


def message_input(message: Message | None) -> dict[str, Any]:
    """The request object: the first object data part, or the first text part holding a JSON
    object (AgentBeats sends text)."""
    parts = message.parts if message else []
    if not parts:
        raise InvalidRequest("message.parts: empty; send one data part (or a text part) holding the request object")
    text_problem = None
    for i, part in enumerate(parts):
        root = part.root
        if isinstance(root, DataPart):
            if isinstance(root.data, dict):
                return root.data
            text_problem = text_problem or f"message.parts[{i}].data: expected a JSON object"
        elif isinstance(root, TextPart):
            try:
                value = json.loads(root.text)
            except ValueError as err:
                text_problem = text_problem or f"message.parts[{i}].text: not JSON ({err}): {_show(root.text)}"
                continue
            if isinstance(value, dict):
                return value
            text_problem = text_problem or f"message.parts[{i}].text: JSON {type(value).__name__}, expected an object"
    raise InvalidRequest(
        (text_problem or "message.parts: no data or text part")
        + "; the request is an object like {\"participants\": {\"agent\": URL}, \"config\": {...}}"
    )


def _participant(data: dict[str, Any]) -> tuple[str, str, str | None]:
    """(role, purple URL, id if the participant entry names one)."""
    participants = data.get("participants")
    if participants is not None:
        if not isinstance(participants, dict) or not participants:
            raise InvalidRequest(
                f"participants: expected an object mapping a role to a URL, got {_show(participants)}"
            )
        role = AGENT_ROLE if AGENT_ROLE in participants else next(iter(participants))
        entry = participants[role]
        where = f"participants.{role}"
        if isinstance(entry, dict):
            key = next((k for k in URL_KEYS if entry.get(k) is not None), None)
            if key is None:
                raise InvalidRequest(f"{where}: the object needs one of {', '.join(URL_KEYS)} with the agent's URL")
            ident = next((entry[k] for k in ID_KEYS if entry.get(k) is not None), None)
            return role, _http_url(entry[key], f"{where}.{key}"), _ident(ident, f"{where}.id")
        return role, _http_url(entry, where), None
    if data.get("purple_agent_url") is not None:
        return AGENT_ROLE, _http_url(data["purple_agent_url"], "purple_agent_url"), None
    raise InvalidRequest(
        "participants: missing; name the agent under test as {\"participants\": {\"agent\": \"http://HOST:PORT\"}} "
        "(or give purple_agent_url)"
    )


def _ident(value: Any, field: str) -> str | None:
    """An id: a non-empty string, or a whole number (7, or 7.0 from an a2a-sdk 1.x client: "7")."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return str(whole_number(value, field))
        except NotWholeNumber:
            raise InvalidRequest(f"{field}: expected a non-empty string or a whole number, got {describe(value)}") from None
    if not isinstance(value, str) or value == "":
        raise InvalidRequest(f"{field}: expected a non-empty string, got {_show(value)}")
    return value


def _agent_id(data: dict[str, Any], role: str, from_entry: str | None) -> str:
    if from_entry:
        return from_entry
    ids = data.get("agentbeats_ids")
    if ids is not None:
        if not isinstance(ids, dict):
            raise InvalidRequest(f"agentbeats_ids: expected an object mapping a role to an id, got {_show(ids)}")
        found = _ident(ids.get(role), f"agentbeats_ids.{role}")
        if found:
            return found
    for key in ("purple_agent_id", "agentbeats_id"):
        found = _ident(data.get(key), key)
        if found:
            return found
    return role


def _config(raw: Any) -> tuple[AssessmentConfig, list[str]]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidRequest(f"config: expected an object, got {_show(raw)}")
    known = list(AssessmentConfig.model_fields)
    unknown = [k for k in raw if k not in known and k not in IGNORED_KEYS]
    if unknown:
        raise InvalidRequest(
            f"config.{unknown[0]}: unknown config key"
            + (f" (also unknown: {', '.join(unknown[1:])})" if unknown[1:] else "")
            + f"; known keys: {', '.join(known)}"
        )
    warnings = [f"config.{k} is accepted for compatibility with the original and ignored"
                for k in IGNORED_KEYS if k in raw]
    try:
        config = AssessmentConfig.model_validate({k: v for k, v in raw.items() if k not in IGNORED_KEYS})
    except ValidationError as err:
        problems = []
        for e in err.errors(include_url=False):
            field = "config." + ".".join(str(p) for p in e["loc"]) if e["loc"] else "config"
            problems.append(f"{field}: {e['msg'].removeprefix('Value error, ')} (got {_show(e.get('input'))})")
        raise InvalidRequest("; ".join(problems)) from None
    if config.scenario_scope == "domain" and not config.scenario_domain:
        raise InvalidRequest("config.scenario_domain: required when config.scenario_scope is \"domain\"")
    if config.user_url and config.user == "scripted":
        raise InvalidRequest(
            "config.user_url: a remote user simulator cannot be combined with config.user \"scripted\"")
    return config, warnings


def parse_request(data: dict[str, Any]) -> AssessmentRequest:
    role, url, entry_id = _participant(data)
    config, warnings = _config(data.get("config"))
    for w in warnings:
        logger.warning(w)
    return AssessmentRequest(purple_url=url, agent_id=_agent_id(data, role, entry_id), role=role,
                             config=config, warnings=warnings)


def read_request(message: Message | None) -> AssessmentRequest:
    return parse_request(message_input(message))
