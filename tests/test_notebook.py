"""examples/scoring.ipynb runs top to bottom offline (it makes its own keyless demo log)."""

from __future__ import annotations

import pytest

from conftest import ROOT

nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (pip install -e '.[dev]')")
nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (pip install -e '.[dev]')")
pytest.importorskip("ipykernel", reason="ipykernel is not installed: no python3 kernel to run the notebook")

NOTEBOOK = ROOT / "examples" / "scoring.ipynb"


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") and not c.get("execution_count") for c in nb.cells if c.cell_type == "code")


def test_notebook_says_what_the_intervals_resample():
    """The report's intervals resample families (reports/stats.bootstrap); the notebook says the same."""
    import inspect

    from pibench_inspect.reports.stats import bootstrap

    assert "resampling families" in inspect.getdoc(bootstrap)
    text = "\n".join(c.source for c in nbformat.read(NOTEBOOK, as_version=4).cells)
    assert "bootstrap over families" in text and "over scenarios" not in text
    assert '"trial"' not in text  # the checks frame numbers runs by `epoch`, as the samples frame


@pytest.mark.slow
def test_notebook_runs(monkeypatch, tmp_path):
    from pibench_inspect.scenario.catalog import load_set

    # a short keyless demo: one shipped scenario per label, two epochs (for pass^k)
    by_label = {}
    for e in load_set().entries.values():
        by_label.setdefault(e.scenario.expected, e.scenario.scenario_id)
    monkeypatch.setenv("PIBENCH_DEMO_SCENARIOS", ",".join(sorted(by_label.values())))
    monkeypatch.setenv("PIBENCH_DEMO_EPOCHS", "2")
    monkeypatch.delenv("PIBENCH_LOG", raising=False)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=600,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    text = "\n".join(o.get("text", "") or str(o.get("data", {}).get("text/plain", ""))
                     for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "analysing" in text and "compliance_rate" in text
