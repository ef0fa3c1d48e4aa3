"""The green server calls only what it promises (issue 25, item 4), through the real command
(`pi-bench-green` in a process of its own): a request cannot name one of LiteLLM's local-endpoint
providers, and when the operator allows one, what that endpoint answers never reaches the
caller's artifact. The payload refuses a log that lost a sample (item 5).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a_helpers import free_port, serve
from conftest import MINI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

GREEN = str(Path(sys.executable).with_name("pi-bench-green"))
SECRET = "SECRET-BODY-7f3a9c"


def start_green(tmp_path: Path, *extra: str, env: dict | None = None):
    port = free_port()
    proc = subprocess.Popen([GREEN, "--port", str(port), "--scenarios-dir", str(MINI), "--log-dir", str(tmp_path / "logs"),
                             "--heartbeat", "0.5", *extra], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.TransportError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError("the green server did not start: " + proc.stderr.read().decode()[-2000:])


def stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()


def send(url: str, request: dict[str, Any]) -> dict:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/send",
            "params": {"message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                                   "parts": [{"kind": "data", "data": request}]}}}
    return httpx.post(url + "/", json=body, timeout=180).json()


AGENT = {"participants": {"agent": "http://127.0.0.1:9"}}


@pytest.fixture(scope="module")
def green(tmp_path_factory):
    """One server for the module: a refused request runs nothing, an accepted one runs in its
    own task, so the requests below do not see each other."""
    proc, url = start_green(tmp_path_factory.mktemp("green"))
    yield url
    stop(proc)


@pytest.mark.parametrize("model", ["litellm/ollama/llama3", "litellm/ollama_chat/x", "litellm/llamafile/x",
                                   "litellm/lm_studio/x", "litellm/hosted_vllm/x", "litellm/custom_openai/x",
                                   "ollama/llama3"])
def test_local_endpoint_providers_are_refused_by_default(green, model):
    answer = send(green, {**AGENT, "config": {"user_model": model, "scenarios": ["MINI_001_REFUND_OK"]}})
    assert "result" not in answer, answer
    assert answer["error"]["message"].startswith("config.user_model:") and "not allowed" in answer["error"]["message"]


@pytest.mark.slow
def test_hosted_litellm_providers_are_still_accepted(green):
    """Planned, then failing on the missing key: not refused as a provider."""
    answer = send(green, {**AGENT, "config": {"user_model": "litellm/openai/gpt-4o-mini", "judge": "off",
                                              "scenarios": ["MINI_001_REFUND_OK"]}})
    assert "result" in answer, answer


def local_model_server(hits: list) -> Starlette:
    async def anything(request: Request):
        hits.append(request.url.path)
        return PlainTextResponse(f"internal admin page: {SECRET}", status_code=500)

    return Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST"])])


@pytest.mark.slow
def test_no_endpoint_answer_reaches_the_artifact(tmp_path):
    """The operator allowed a local provider; it fails with a body the caller must never see."""
    hits: list = []
    with serve(local_model_server(hits)) as local:
        proc, url = start_green(tmp_path, "--model-providers", "litellm,litellm/ollama",
                                env={"OLLAMA_API_BASE": local})
        try:
            answer = send(url, {**AGENT, "config": {"user_model": "litellm/ollama/llama3", "judge": "off",
                                                    "scenarios": ["MINI_001_REFUND_OK"]}})
        finally:
            stop(proc)
    task = answer["result"]
    assert task["status"]["state"] == "failed", task["status"]
    assert hits, "the allowed local provider was never called"
    text = str(task)
    assert SECRET not in text
    assert "cannot be reached" in text
