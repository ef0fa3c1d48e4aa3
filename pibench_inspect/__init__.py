"""pibench-inspect: pi-bench, the policy-compliance benchmark for tool-using agents, on Inspect AI."""

from . import _bootstrap  # noqa: F401  (must run before anything imports litellm)

__version__ = "0.1.0"
