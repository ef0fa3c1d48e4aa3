"""Compatibility with the original pi-bench: its tool semantics, replay and scoring (docs/parity.md)."""
