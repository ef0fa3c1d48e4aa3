"""Execute a recorded tool call the way the original did, on our state.

The original never validated arguments, reported handler exceptions as a JSON-quoted
`"Error: <message>"` with the envelope error flag, and answered unknown or unexposed tools with
`Tool '<name>' not found.`. Live runs keep schema validation; replay uses this path.
"""

from __future__ import annotations

import json
from typing import Any

from ..domain.loader import Domain
from ..environment.effects import ToolContext, resolve_handler, run_effect, unstorable_arguments
from ..environment.state import StateDB


def original_content(result: Any) -> str:
    return json.dumps(result) if isinstance(result, str) else json.dumps(result, default=str)


def execute_original(
    domain: Domain, offered: set[str], state: StateDB, name: str, arguments: Any
) -> tuple[str, bool]:
    """(content, envelope error) for one call, as the original's executor produced them."""
    spec = domain.tool_index.get(name)
    if spec is None or name not in offered:
        return json.dumps(f"Error: Tool '{name}' not found."), True
    if not isinstance(arguments, dict):
        return json.dumps("Error: arguments must be an object"), True
    bad = unstorable_arguments(arguments)
    if bad:  # as a live call: a named refusal, before the handler runs (effects.refuse_unstorable)
        return json.dumps(f"Error: argument {', '.join(map(repr, bad))} holds text that is not valid UTF-8 "
                          "(a lone surrogate)"), True
    ctx = ToolContext(state, name)
    try:
        with state.transaction():
            if spec.handler:
                result = resolve_handler(spec.handler)(ctx, **arguments)
            else:
                result = run_effect(spec, ctx, arguments)
            content = original_content(result)
    except Exception as err:  # the original turned every handler exception into an error result
        return json.dumps(f"Error: {err}"), True
    return content, False
