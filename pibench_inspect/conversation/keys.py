"""Names the conversation writes and later stages read: the sample store keys (the scorer,
re-scoring and reports read these) and the original's opening greeting. A module of its own so
the A2A user client and the scorer need not import the solver."""

GREETING = "Hi! How can I help you today?"

# store keys (the scorer and re-scoring read these)
FINAL_STATE = "pibench:final_state"  # the whole final document (logs written before state_changes)
STATE_CHANGES = "pibench:state_changes"  # what changed since the initial state (read with stored_final_state)
TERMINATION = "pibench:termination"
STEPS = "pibench:steps"
USER_MODEL = "pibench:user_model"
AGENT = "pibench:agent"
ORACLE_NOTES = "pibench:oracle_notes"
AGENT_ERROR = "pibench:agent_error"
USER_ERROR = "pibench:user_error"  # why the simulated user failed (its model stopped, a remote user broke)
STOP_DETAIL = "pibench:stop_detail"  # how the agent's model stopped (agent_overflow, agent_content_filter, agent_empty)
USER_CONFIG = "pibench:user_config"  # what the LLM user generated with (provenance)
INTERRUPTED = "pibench:interrupted"  # a person stopped the session (pibench play): "ctrl-c" or "eof"
TACTICS = "pibench:tactics"  # the pressure tactics the scripted user played, in order (scenario/pressure.py)
