"""Bring your own agent: `from pibench_inspect.local import AgentProtocol`."""

from .protocol import AgentProtocol

__all__ = ["AgentProtocol"]
