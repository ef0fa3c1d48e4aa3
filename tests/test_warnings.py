"""Issue 42: `pytest` printed ~155 warnings. Nearly all were one DeprecationWarning, raised on every
model call of every test: Inspect 0.3.258's retries call tenacity's `wait_exponential_jitter`
with `initial=`, which tenacity 9.2 deprecated. constraints.txt (the tested set) pins the tenacity
before it; pyproject's `filterwarnings` turns any warning raised in the package's own code into
a test failure."""

from __future__ import annotations

import asyncio
import tomllib
import warnings

from inspect_ai.model import ModelOutput, ModelUsage, get_model

from conftest import ROOT


def test_a_model_call_through_inspects_retries_warns_nothing():
    out = ModelOutput.from_content("mockllm/model", "hello")
    out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", custom_outputs=[out], memoize=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(model.generate("hi"))
    assert [str(w.message) for w in caught] == []


def test_the_packages_own_warnings_fail_their_tests():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
    assert "error:::pibench_inspect" in config["filterwarnings"]
