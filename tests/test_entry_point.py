"""The Inspect entry point (pibench_inspect_entry.py) registers a stand-in under exactly the names
the package registers, and a stand-in, called as Inspect calls it, gives what the real object
gives. Each check runs in a fresh Python: the registry is per process, and what it holds
depends on what was imported first."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import ROOT
from pibench_inspect.scoring.metrics import SCORER_METRICS

# the registry's entries of pi-bench (its tasks, solver, scorer, metrics, providers), as a JSON
# list of [key, "stand-in" or "real"]; after importing the modules the first argument names
REGISTERED = """
import importlib, json, sys
from inspect_ai._util.registry import _registry

for module in sys.argv[1].split(","):
    importlib.import_module(module)
print(json.dumps(sorted([k, "stand-in" if hasattr(v, "stand_in_for") else "real"]
                        for k, v in _registry.items() if "pibench" in k)))
"""
# what the package registers: importing the modules that define them
REAL = ["pibench_inspect.pibench", "pibench_inspect.finra", "pibench_inspect.retail", "pibench_inspect.helpdesk",
        "pibench_inspect.scoring.scorer", "pibench_inspect.providers"]
# the names only the entry point gives: the earlier task names
ALIASES = {"task:pibench_inspect/finra", "task:pibench_inspect/retail", "task:pibench_inspect/helpdesk"}


def _python(code: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    r = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_the_stand_ins_have_exactly_the_names_the_package_registers():
    entry = dict(json.loads(_python(REGISTERED, "pibench_inspect_entry")))
    real = dict(json.loads(_python(REGISTERED, ",".join(REAL))))
    assert set(entry) == set(real) | ALIASES, (sorted(set(entry) - set(real)), sorted(set(real) - set(entry)))
    assert set(entry.values()) == {"stand-in"} and set(real.values()) == {"real"}
    assert not any(k.startswith("hooks:") for k in entry)  # hooks: at a pi-bench task's build only
    # imported after the real objects, the entry point leaves them in place
    both = dict(json.loads(_python(REGISTERED, ",".join([*REAL, "pibench_inspect_entry"]))))
    assert {k for k, v in both.items() if v == "stand-in"} == ALIASES


CALLED = """
import json, sys
import pibench_inspect_entry
assert "pibench_inspect" not in sys.modules
from inspect_ai._eval.registry import task_create
from inspect_ai._util.registry import registry_info, registry_lookup, registry_params
from inspect_ai.scorer._metric import metric_create, metric_scores
from inspect_ai.scorer._scorer import scorer_create, scorer_metrics
from inspect_ai.model import get_model

out = {}
for name in ("pibench_inspect/pibench_retail", "pibench_inspect/retail"):
    t = task_create(name, agent="oracle", user="scripted")
    out[name] = [registry_info(t).name, registry_params(t), len(t.dataset),
                 hasattr(registry_lookup("task", name), "stand_in_for")]
try:
    task_create("pibench_inspect/pibench_retail", agnet="oracle")
except Exception as err:
    out["misspelt"] = str(err)
s = scorer_create("pibench_scorer", source=None, judge="off", parity=None)
out["scorer"] = [registry_info(s).name, registry_params(s), len(scorer_metrics(s))]
m = metric_create("pibench_inspect/overall")
out["metric"] = [registry_info(m).name, metric_scores(m)]
# the distribution a log names as the task's package, found by the (stand-in's) module
from inspect_ai._eval.task.log import resolve_task_distribution
out["distribution"] = [getattr(resolve_task_distribution(n), "name", None) for n in ("pibench_inspect/retail", "pibench_inspect/pibench_retail")]
out["provider"] = type(get_model("litellm/openai/gpt-4o-mini", api_key="none").api).__name__
print(json.dumps(out))
"""


def test_a_stand_in_called_as_inspect_calls_it_gives_the_real_objects():
    out = json.loads(_python(CALLED).splitlines()[-1])  # after the hooks get_model lists
    for name in ("pibench_inspect/pibench_retail", "pibench_inspect/retail"):
        logged, args, n, module = out[name]
        assert logged == name and n > 0
        assert args["agent"] == "oracle" and args["user"] == "scripted"  # the task args the log records
    # the real task replaced its stand-in; the earlier name stays a stand-in handing calls over
    assert out["pibench_inspect/pibench_retail"][3] is False
    assert out["pibench_inspect/retail"][3] is True
    assert "-T agnet=oracle: unknown task argument (did you mean -T agent?)" in out["misspelt"]
    assert out["scorer"][0] == "pibench_inspect/pibench_scorer" and out["scorer"][1]["judge"] == "off"
    assert out["scorer"][2] == len(SCORER_METRICS)  # its metrics, from the real scorer
    assert out["metric"] == ["pibench_inspect/overall", "unreduced"]
    # the earlier name's log names the same package as the task's (None only where the
    # installed distribution is another checkout's, as in a worktree run against it)
    assert out["distribution"][0] == out["distribution"][1]
    assert out["provider"] == "LiteLLMAPI"
