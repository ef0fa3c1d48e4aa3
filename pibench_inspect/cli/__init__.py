"""The command line: `pibench` / `pi` (main.py) and the original CLI's `pi run` flags (run.py)."""

from .main import main

__all__ = ["main"]
