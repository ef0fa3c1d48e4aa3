"""The green agent: pi-bench served over A2A (`pi-bench-green`), as AgentBeats runs benchmarks.

A caller sends one assessment request naming the agent under test (a purple A2A agent) and a
config. request.py reads it, plan.py turns it into an Inspect run and checks that run against
the scenario set, handler.py does both before a task exists (so a bad request is a JSON-RPC
error naming the field). executor.py queues the assessment for a slot (slots.py), runs the
eval in a subprocess (runner.py inside it, process.py outside), streams progress as task status
updates and ends with the leaderboard payload (results.py) as the task's artifact. server.py
holds the command line, the card and the routes.
"""
