"""Authoring-time checks: what `pibench validate` and `pibench floor` run over a scenario set
(static rules, content rules, validity gates, the information-flow gate, the baseline floor).
Nothing here runs during an evaluation."""
