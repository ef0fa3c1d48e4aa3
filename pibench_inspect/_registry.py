"""Inspect entry point: makes `inspect eval pibench_inspect/finra` (and retail, helpdesk,
pibench) resolve without a file path."""

# ruff: noqa: F401
from .finra import finra
from .helpdesk import helpdesk
from .pibench import pibench
from .retail import retail
from .providers import litellm
