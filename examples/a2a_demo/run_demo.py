"""Run the A2A demo end to end, keylessly: a purple agent, the green server, one assessment.

    python -m examples.a2a_demo.run_demo                   # retail, bootstrap mode
    python -m examples.a2a_demo.run_demo --stateless --domain finra --save-to results.json
    python -m examples.a2a_demo.run_demo --serve-user      # the simulated user over A2A too

It starts the servers as subprocesses on free local ports, waits for their /health, sends the
green server an AgentBeats assessment request over A2A (message/stream), shows its progress on
one line, then prints what the returned leaderboard payload says: each scenario's outcome, its
decision and the failed checks in plain words (summary.py), and the headline. The purple agent is
rules_agent.RulesAgent, which applies two retail rules and escalates the rest, so a run shows
passes and failures. Exit 0 when the assessment completed, 2 when it failed.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(stack: ExitStack, name: str, args: list[str], log_dir: Path) -> str:
    """Start a server subprocess on a free port; return its URL once /health answers."""
    port = free_port()
    log = (log_dir / f"{name}.log").open("w")
    proc = subprocess.Popen([sys.executable, *args, "--host", "127.0.0.1", "--port", str(port)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    stack.callback(lambda: (proc.terminate(), proc.wait(timeout=10)))
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited with code {proc.returncode}; see {log.name}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                print(f"{name} ready at {url}")
                return url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit(f"{name} did not answer /health within 60 s; see {log.name}")


AGENT_ID = "rules-demo"  # the payload's participant id


def assessment(purple: str, args: argparse.Namespace, user_url: str | None) -> dict:
    config = {"domain": "pi-bench a2a demo", "scenario_scope": "domain", "scenario_domain": args.domain,
              "num_trials": 1, "concurrency": 4, "judge": "off", "seed": 42}
    config.update({"user_url": user_url} if user_url else {"user": "scripted"})
    return {"participants": {"agent": purple}, "agentbeats_ids": {"agent": AGENT_ID}, "config": config}


class Progress:
    """The green server's progress updates (JSON text, docs/a2a.md) as one short line: rewritten
    in place on a terminal; elsewhere (a pipe, a log) a line at the start and at each quarter."""

    def __init__(self) -> None:
        self.tty = sys.stdout.isatty()
        self.shown = -1  # the last quarter printed (not on a terminal)

    def update(self, text: str) -> None:
        try:
            status = json.loads(text)
            done, total = int(status["completed"]), int(status["total"])
            elapsed = float(status.get("elapsed_seconds") or 0.0)
        except (ValueError, KeyError, TypeError):
            return  # not a progress update: nothing to show
        line = f"[working] {done}/{total} scenarios done, {elapsed:.0f} s"
        if self.tty:
            print(f"\r{line}", end="", flush=True)
        elif total and (quarter := 4 * done // total) > self.shown:
            self.shown = quarter
            print(line, flush=True)

    def end(self, text: str) -> None:
        print(("\r" if self.tty else "") + text, flush=True)


def stream(green: str, request: dict) -> dict | None:
    """Send the request with message/stream; show progress; return the final task's artifact data."""
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/stream",
            "params": {"message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                                   "parts": [{"kind": "data", "data": request}]}}}
    artifact = None
    progress = Progress()
    with httpx.stream("POST", green + "/", json=body, timeout=httpx.Timeout(None, connect=10)) as response:
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue
            event = json.loads(line[5:])
            if "error" in event:
                raise SystemExit(f"green server refused the request: {event['error']}")
            result = event.get("result", {})
            if result.get("kind") == "status-update":
                status = result["status"]
                text = " ".join(p.get("text", "") for p in (status.get("message") or {}).get("parts", [])
                                if p.get("kind") == "text")
                if status["state"] == "working":
                    progress.update(text)
                else:
                    progress.end(f"[{status['state']}] {text}")
            elif result.get("kind") == "artifact-update":
                parts = result["artifact"]["parts"]
                artifact = next((p["data"] for p in parts if p.get("kind") == "data"), artifact)
    return artifact


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domain", default="retail", choices=("finra", "retail", "helpdesk"))
    parser.add_argument("--stateless", action="store_true", help="the purple does not declare the bootstrap extension")
    parser.add_argument("--serve-user", action="store_true", help="serve the scripted user over A2A as well")
    parser.add_argument("--save-to", help="write the leaderboard payload (the task artifact) to this file")
    parser.add_argument("--log-dir", default=str(ROOT / "logs" / "a2a_demo"), help="server logs and Inspect logs")
    args = parser.parse_args(argv)
    log_dir = Path(args.log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        purple = start(stack, "purple", ["-m", "examples.a2a_demo.purple_server"]
                       + (["--no-bootstrap"] if args.stateless else []), log_dir)
        user = start(stack, "user", ["-m", "pibench_inspect.a2a.user_server", "--kind", "scripted"], log_dir) if args.serve_user else None
        green = start(stack, "green", ["-m", "pibench_inspect.a2a.green.server", "--log-dir", str(log_dir / "inspect")], log_dir)
        payload = stream(green, assessment(purple, args, user))
    if not payload or "results" not in payload:
        print(f"the assessment failed: {payload}")
        return 2
    result = payload["results"][0]
    from pibench_inspect.scenario.catalog import load_set

    from .summary import summary_lines

    print()
    print("\n".join(summary_lines(result["scenario_details"], load_set())))
    m = result["metrics"]
    print(f"\n{result['score']:.0f} of {result['max_score']:.0f} scenarios passed ({result['pass_rate']:.1f}%): "
          f"compliance_rate {m['compliance_rate']:.3f}, overall_score {m['overall_score']:.3f}")
    if args.save_to:
        Path(args.save_to).write_text(json.dumps(payload, indent=2))
        print(f"wrote {args.save_to}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
