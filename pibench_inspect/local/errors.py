"""The two ways an agent's turn can fail, kept apart because they are scored differently.

* `AgentProtocolError`: the agent answered, but broke the protocol (a malformed message, an
  exception of its own). That is agent behaviour: the run ends with termination `agent_error`
  and is scored on what happened, as in the original.
* `AgentUnavailable`: the agent (or the model behind it) could not be reached: no connection,
  HTTP 5xx after retries, a timeout, missing credentials. That is infrastructure, not behaviour:
  the solver lets it propagate so the sample ends as an Inspect sample error (kept out of the
  scores, retried by `--retry-on-error`, tolerated by `--no-fail-on-error`, re-run by
  `inspect eval-retry`).

Both the local adapter and the A2A client raise these; import them from here. The A2A client's
`A2AUnavailable` (a2a/wire.py) is an `AgentUnavailable`.
"""

from __future__ import annotations


class AgentProtocolError(Exception):
    """The agent broke the protocol (bad message, exception in generate)."""


class AgentUnavailable(RuntimeError):
    """The agent or its model could not be reached: an infrastructure failure, not a scored outcome."""
