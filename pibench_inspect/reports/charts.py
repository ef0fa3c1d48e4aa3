"""PNG charts: column scores with 95% intervals, the decision confusion matrix, and a
comparison of several agents. Horizontal bars because the column names are long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..scenario.model import LABELS  # noqa: E402
from ..scoring.metrics import COLUMNS, GROUPS  # noqa: E402

HEADLINE = ("overall_score", "compliance_rate", *GROUPS)


def _interval(ci: dict[str, Any], key: str) -> tuple[float, float, float] | None:
    c = ci.get(key)
    return (c["value"], c["low"], c["high"]) if c else None


def columns_chart(ci: dict[str, Any], path: Path, title: str) -> Path:
    names = list(COLUMNS) + [k for k in ci if k not in COLUMNS and k not in HEADLINE]
    names = [*HEADLINE, *names]
    fig, ax = plt.subplots(figsize=(9, 0.42 * len(names) + 1.4))
    y = np.arange(len(names))[::-1]
    for yi, name in zip(y, names):
        iv = _interval(ci, name)
        color = "#4c72b0" if name in COLUMNS else "#55a868"
        if iv is None:
            ax.text(0.01, yi, "no scenarios", va="center", fontsize=8, color="grey")
            continue
        v, lo, hi = iv
        ax.barh(yi, v, color=color, height=0.6)
        ax.errorbar(v, yi, xerr=[[max(v - lo, 0)], [max(hi - v, 0)]], color="black", capsize=3, lw=1)
        ax.text(min(hi, 1.0) + 0.01, yi, f"{v:.2f}", va="center", fontsize=8)
    labels = [n.replace("_", " ") + (f"  (n={ci[n]['n_scenarios']})" if n in ci and n in COLUMNS else "")
              for n in names]
    ax.set_yticks(y, labels, fontsize=9)
    ax.axhline(y[len(HEADLINE) - 1] - 0.5, color="grey", lw=0.6)
    ax.set_xlim(0, 1.12)
    ax.set_xlabel("score (mean partial credit; compliance = share of runs passing every check)")
    ax.set_title(f"{title}: 9 columns with bootstrap 95% intervals", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def confusion_chart(rows: list[dict[str, Any]], path: Path, title: str) -> Path:
    """Expected label x canonical decision over completed runs; unresolved decisions are INVALID."""
    decisions = [*LABELS, "INVALID"]
    m = np.zeros((len(LABELS), len(decisions)), dtype=int)
    for r in rows:
        if r["status"] != "completed" or r["label"] not in LABELS:
            continue
        d = r["canonical_decision"] if r["canonical_decision"] in LABELS else "INVALID"
        m[LABELS.index(r["label"]), decisions.index(d)] += 1
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.imshow(m, cmap="Blues", vmin=0, vmax=max(int(m.max()), 1))
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            ax.text(j, i, str(m[i, j]), ha="center", va="center",
                    color="white" if m[i, j] > m.max() / 2 else "black", fontsize=10)
    ax.set_xticks(range(len(decisions)), [d.replace("-", "-\n") for d in decisions], fontsize=9)
    ax.set_yticks(range(len(LABELS)), LABELS, fontsize=9)
    ax.set_xlabel("canonical decision")
    ax.set_ylabel("expected label")
    errors = sum(1 for r in rows if r["status"] != "completed")
    ax.set_title(f"{title}: decisions ({int(m.sum())} runs" + (f", {errors} errored runs left out)" if errors else ")"),
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def compare_chart(cis: dict[str, dict[str, Any]], path: Path) -> Path:
    """One group of bars per statistic, one bar per agent, with 95% intervals."""
    names = [*HEADLINE, *COLUMNS]
    agents = list(cis)
    height = 0.8 / max(len(agents), 1)
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(names) * max(1, len(agents) / 2) + 1.6))
    base = np.arange(len(names))[::-1].astype(float) * max(1, len(agents) / 2)
    for i, agent in enumerate(agents):
        ys, vs, errs = [], [], [[], []]
        for yb, name in zip(base, names):
            iv = _interval(cis[agent], name)
            if iv is None:
                continue
            ys.append(yb + 0.4 - (i + 0.5) * height)
            vs.append(iv[0])
            errs[0].append(max(iv[0] - iv[1], 0))
            errs[1].append(max(iv[2] - iv[0], 0))
        ax.barh(ys, vs, height=height * 0.9, xerr=errs, capsize=2, label=agent, error_kw={"lw": 0.8})
        for yv, v, hi in zip(ys, vs, errs[1]):
            # the value next to each bar: a zero score must not look like a missing one
            ax.text(min(v + hi, 1.0) + 0.01, yv, f"{v:.2f}", va="center", fontsize=7)
    ax.set_yticks(base, [n.replace("_", " ") for n in names], fontsize=9)
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("score (bootstrap 95% intervals; no bar: no scenario in that column)")
    # outside the axes, so it never covers a bar
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="agent")
    ax.set_title("agents compared", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def envelope_chart(view: dict[str, Any], path: Path, title: str) -> Path:
    """Compliance under each pressure envelope, and per column without pressure (baseline) and
    under pressure (every other envelope), with 95% intervals resampling families."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, max(3.2, 0.42 * len(view["by_column"]) + 1.6)),
                                      gridspec_kw={"width_ratios": [1, 1.6]})

    def bar(ax: Any, y: float, iv: dict[str, Any] | None, color: str, h: float, label: str | None = None) -> None:
        if iv is None:
            return
        v = iv["value"]
        ax.barh(y, v, height=h, color=color, label=label,
                xerr=[[max(v - iv["low"], 0)], [max(iv["high"] - v, 0)]], capsize=2, error_kw={"lw": 0.8})
        ax.text(min(iv["high"], 1.0) + 0.01, y, f"{v:.2f}", va="center", fontsize=7)

    envs = list(view["by_envelope"])
    ys = np.arange(len(envs))[::-1]
    for y, e in zip(ys, envs):
        bar(left, y, view["by_envelope"][e], "#55a868" if e == "baseline" else "#c44e52", 0.6)
    left.set_yticks(ys, [f"{e}  (n={view['by_envelope'][e]['runs']})" for e in envs], fontsize=9)
    left.set_xlim(0, 1.12)
    left.set_xlabel("compliance (share of runs passing every check)")
    cost = view.get("pressure_cost")
    left.set_title("by envelope" + (f": pressure cost {cost['value']:+.2f} [{cost['low']:+.2f}, {cost['high']:+.2f}]"
                                    if cost else ""), fontsize=10)
    cols = list(view["by_column"])
    yc = np.arange(len(cols))[::-1].astype(float)
    for y, c in zip(yc, cols):
        bar(right, y + 0.2, view["by_column"][c].get("baseline"), "#55a868", 0.38, "baseline" if c == cols[0] else None)
        bar(right, y - 0.2, view["by_column"][c].get("pressure"), "#c44e52", 0.38, "under pressure" if c == cols[0] else None)
    right.set_yticks(yc, cols, fontsize=9)
    right.set_xlim(0, 1.12)
    right.set_xlabel("compliance")
    right.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    right.set_title("by column", fontsize=10)
    fig.suptitle(f"{title}: what user pressure costs (95% intervals, families resampled)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def ladder_chart(ladder: dict[str, dict[str, Any]], path: Path) -> Path:
    """Compliance under each envelope, one line per agent (95% intervals, families resampled):
    an agent that holds stays flat; one that gives in drops from the baseline."""
    envs = sorted({e for v in ladder.values() for e in v["by_envelope"]}, key=lambda e: (e != "baseline", e))
    x = np.arange(len(envs))
    fig, ax = plt.subplots(figsize=(max(7, 1.3 * len(envs) + 3), 4.6))
    for i, (agent, view) in enumerate(ladder.items()):
        pts = [(j, view["by_envelope"].get(e)) for j, e in enumerate(envs)]
        pts = [(j, iv) for j, iv in pts if iv]
        if not pts:
            continue
        xs = np.array([j for j, _ in pts]) + (i - (len(ladder) - 1) / 2) * 0.04
        vs = np.array([iv["value"] for _, iv in pts])
        err = [[max(iv["value"] - iv["low"], 0) for _, iv in pts], [max(iv["high"] - iv["value"], 0) for _, iv in pts]]
        cost = view.get("pressure_cost")
        label = agent + (f"  (cost {cost['value']:+.2f} [{cost['low']:+.2f}, {cost['high']:+.2f}])" if cost else "")
        ax.errorbar(xs, vs, yerr=err, marker="o", ms=4, capsize=2, lw=1.2, label=label)
    ax.set_xticks(x, envs, fontsize=9, rotation=20)
    ax.set_ylim(-0.03, 1.05)
    ax.set_ylabel("compliance (share of runs passing every check)")
    ax.set_title("User pressure, agent by agent: compliance under each envelope (95% intervals, families resampled)",
                 fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
