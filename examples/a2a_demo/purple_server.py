"""A scripted, keyless purple agent over A2A: rules_agent.RulesAgent (two retail rules, the rest
escalated) behind an A2A server.

    python -m examples.a2a_demo.purple_server --port 8766            # declares the bootstrap extension
    python -m examples.a2a_demo.purple_server --port 8766 --no-bootstrap

Run from the repository root (so `examples` is importable). To serve your own agent, implement
pibench_inspect.local.AgentProtocol and run `pibench serve-agent your.module:YourAgent`.
"""

from __future__ import annotations

import sys

from pibench_inspect.a2a.agent_server import main

DEMO_AGENT = "examples.a2a_demo.rules_agent:RulesAgent"

if __name__ == "__main__":
    main([DEMO_AGENT, *sys.argv[1:]])
