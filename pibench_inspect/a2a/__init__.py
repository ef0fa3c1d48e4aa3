"""A2A interop: evaluate a remote agent (purple), serve the benchmark (green), and run the
simulated user in another process.

Wire format: A2A JSON-RPC as the AgentBeats ecosystem speaks it (v0.3: `message/send`, a
`messageId` and `kind` on every message and part), and A2A 1.x (`SendMessage`, proto-JSON parts)
when an agent card declares a 1.x JSON-RPC interface. The servers are built on a2a-sdk 0.3.x;
the clients are our own httpx code so that every failure names the URL and what went wrong.
"""
