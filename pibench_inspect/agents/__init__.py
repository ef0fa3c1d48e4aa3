"""Reference agents implementing the local protocol (pibench_inspect.local.AgentProtocol)."""
