"""The simulated user runs in another process, behind an A2A server (`-T user=a2a`, reference 5.8).

Each user turn is one message/send carrying one data part; the server is stateless, so the state
it returns rides along on the next request:

  init      {"init": true, "scenario": {...}, "message_history": [...], "seed"?} -> {"state"}
  generate  {"message": {"role": "assistant", "content"}, "state", "seed"?}
            -> {"message": {"role": "user", "content"}, "state"}
  stop      {"stop": true, "message", "state"} -> {"stopped": true}   (at the end; errors ignored)

The user only ever sees the agent's visible text, never tool calls or tool results.

A user server that cannot be reached or does not answer within `-T a2a_timeout` (connection
refused, HTTP 5xx after retries, the deadline passed) is an infrastructure failure: A2AUnavailable
propagates and the sample ends as an Inspect sample error (retryable, out of the scores). A user
server that answers with something unusable (an HTTP 4xx, a JSON-RPC error, a failed task, a
reply we cannot read) must not crash the sample: `next` records the reason in the transcript and
in the sample store under USER_ERROR, then ends the conversation with ###STOP###. The solver then
ends the run as `user_error`, scored as an abnormal termination (as in the original) with the
reason in the score's record and the leaderboard row.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageUser
from inspect_ai.util import LimitExceededError, store

from ..conversation.keys import GREETING, USER_ERROR
from ..conversation.pressure import DECISION_TOOL, read_acts
from ..conversation.users import UserTurn, split_stop
from ..scenario.model import UserSimulation
from .client import A2AClient
from .wire import A2AError, A2AUnavailable, bounded, data_part, first_data, message_content

logger = logging.getLogger(__name__)

STOP_TIMEOUT = 10.0  # the stop notice is a courtesy; never wait long for it


def visible_history(messages: list[ChatMessage]) -> list[dict[str, str]]:
    """What the user has seen, as pi-bench messages: user lines and the agent's non-empty text."""
    out = []
    for m in messages:
        if isinstance(m, ChatMessageUser):
            out.append({"role": "user", "content": m.text})
        elif isinstance(m, ChatMessageAssistant) and m.text.strip():
            out.append({"role": "assistant", "content": m.text})
    return out


class A2AUser:
    def __init__(self, url: str, sim: UserSimulation, seed: int | None, timeout: float = 120.0,
                 decision_tool: str = DECISION_TOOL):
        self.url = url
        self.decision_tool = decision_tool
        self.sim = sim
        self.seed = seed
        self.timeout = timeout
        self.name = f"a2a:{url}"
        # created on first use, inside the sample's event loop; a bad URL then becomes a
        # recorded user error rather than a crash while the sample is being set up
        self._client: A2AClient | None = None
        self._state: dict[str, Any] | None = None  # the server's state; None until init
        self._last: dict[str, Any] | None = None  # the last message exchanged, for stop
        self._ended = False
        self._failed = False

    def _data(self, **fields: Any) -> dict[str, Any]:
        return {**fields, **({"seed": self.seed} if self.seed is not None else {})}

    async def _call(self, what: str, data: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = A2AClient(self.url, self.timeout)
        reply = await self._client.send([data_part(data)])
        return first_data(reply, self._client.url, what)

    def _state_of(self, data: dict[str, Any], what: str) -> dict[str, Any]:
        state = data.get("state")
        if not isinstance(state, dict):
            raise A2AError(f"{self.url}: the {what} reply has no 'state' object")
        return state

    async def next(self, messages: list[ChatMessage]) -> UserTurn:
        if self._ended:
            return UserTurn("", "###STOP###")
        try:
            return await self._next(messages)
        except (LimitExceededError, A2AUnavailable):
            raise  # an Inspect limit is the solver's to handle; an outage is the sample's error
        except Exception as err:  # never let a network or protocol failure crash the sample
            return self._fail(err)

    async def _next(self, messages: list[ChatMessage]) -> UserTurn:
        seen = visible_history(messages)
        # the user answers the agent's latest visible text; before the agent has spoken, the
        # original's greeting stands in for it
        last = max((i for i, m in enumerate(seen) if m["role"] == "assistant"), default=None)
        message = seen[last] if last is not None else {"role": "assistant", "content": GREETING}
        if self._state is None:
            # init carries what was seen before that message (message_history + message = all)
            history = seen[:last] if last is not None else seen
            scenario = self.sim.model_dump(mode="json", exclude_none=True)
            data = await self._call("init", self._data(init=True, scenario=scenario, message_history=history))
            self._state = self._state_of(data, "init")
        self._last = message
        extra = {}
        if self.sim.tactics is not None:  # a conditional script reads what the agent did
            extra["acts"] = read_acts(self.sim, messages, decision_tool=self.decision_tool).wire()
        data = await self._call("generate", self._data(message=message, state=self._state, **extra))
        self._state = self._state_of(data, "generate")
        reply = data.get("message")
        text = message_content(reply, f"{self.url}: the generate reply's 'message'")
        self._last = {"role": "user", "content": text}
        # an empty line ends the conversation, as it does for the in-process LLM user
        turn = split_stop(text) if text.strip() else UserTurn("", "###STOP###")
        turn.tactic = self.sim.pressing_lines().get(turn.text.strip())
        self._ended = turn.stop is not None
        return turn

    def _fail(self, err: Exception) -> UserTurn:
        reason = str(err) if isinstance(err, A2AError) else bounded(f"{self.url}: {type(err).__name__}: {err}")
        self._ended = self._failed = True
        logger.warning("simulated user over A2A failed: %s", reason)
        if isinstance(err, A2AError) and err.detail:
            transcript().info({"a2a user reply": err.detail})
        transcript().info({"user error": reason})
        store().set(USER_ERROR, reason)
        return UserTurn("", "###STOP###")

    async def aclose(self) -> None:
        if self._client is None:
            return
        try:
            # a courtesy notice, skipped when the server already failed; errors do not matter now
            if self._state is not None and not self._failed:
                with anyio.fail_after(min(self.timeout, STOP_TIMEOUT)):
                    await self._call("stop", {"stop": True, "message": self._last, "state": self._state})
        except Exception as err:
            logger.info("stop notice to %s failed (ignored): %s", self.url, err)
        finally:
            await self._client.aclose()
            self._client = None
