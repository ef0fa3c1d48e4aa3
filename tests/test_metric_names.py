"""The metric names fit where Inspect's viewer shows them (issue 42: the header read `compliar`,
`policy_ur`, `error_rat`; the "All scoring..." dialog `column/Policy Ac`), and the leaderboard
payload keeps the original's names.

Widths are measured in DejaVu Sans (matplotlib ships it), the font a headless Chromium renders
the viewer in on Linux and among the widest UI fonts, at the viewer's 0.8rem; the widths that fit
are read off the installed viewer's own code and stylesheet.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from inspect_ai.scorer import SampleScore, Score

from conftest import MINI, registered, run_eval, shipped
from pibench_inspect.conversation.termination import Termination
from pibench_inspect.reports.logs import load_logs
from pibench_inspect.reports.rows import log_rows
from pibench_inspect.scoring.metric_names import (
    DIALOG_PX, FONT_PX, HEADER_PX, HEADLINE_MAX, PAYLOAD_NAMES, TABLE_METRICS,
)
from pibench_inspect.scoring.metrics import COLUMNS, FLAG_KEYS, SCORER_METRICS
from pibench_inspect.scoring.payload import metrics_payload

MARGIN = 1.0  # px: the measure here and Chromium's layout differ by a fraction of a pixel


def text_px(text: str) -> float:
    """Width of `text` in DejaVu Sans at the viewer's header size."""
    from matplotlib import font_manager
    from PIL import ImageFont

    path = font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans"), fallback_to_default=False)
    font = ImageFont.truetype(path, int(FONT_PX * 10), layout_engine=ImageFont.Layout.BASIC)
    return font.getlength(text) / 10


def grouped(m) -> bool:
    from inspect_ai._util.registry import registry_params

    params = registry_params(m)
    return {"group_key", "metric"} <= set(params) and bool(params["metric"].get("name"))


def table_of(m) -> str:
    from inspect_ai._util.registry import registry_unqualified_name

    return registry_unqualified_name(m)


def every_kind_of_run() -> list[SampleScore]:
    """Scores holding every name a run on the shipped set can produce: each column and domain,
    each way a conversation ends, each pressure envelope, the NL tier scored, ten epochs."""
    entries = list(shipped().entries.values())
    domains = sorted({e.domain.name for e in entries})
    envelopes = sorted({e.scenario.meta.envelope for e in entries if e.scenario.meta.envelope})
    assert len(envelopes) >= 5 and {"retail", "finra", "helpdesk"} <= set(domains)
    out = []
    for i in range(40):
        md = {"column": COLUMNS[i % 9], "label": ("ALLOW", "DENY", "ESCALATE", "ALLOW-CONDITIONAL")[i % 4],
              "domain": domains[i % len(domains)], "termination": list(Termination)[i % len(Termination)].value,
              "semantic_score": 0.5, "malformed_calls": 1, "family": "F", "combo": f"c{i % 3}",
              "envelope": envelopes[i % len(envelopes)]}
        for epoch in range(10):
            value = {"all_passed": float((i + epoch) % 2), "partial_credit": 0.5,
                     **{k: float(i % 2) for k in FLAG_KEYS.values()}}
            out.append(SampleScore(score=Score(value=value, answer="DENY", metadata=md), sample_id=f"S{i}"))
    return out


def names_by_table() -> dict[str, tuple[bool, list[str]]]:
    runs = every_kind_of_run()
    return {table_of(m): (grouped(m), list(m(runs))) for m in SCORER_METRICS}


def test_the_widths_are_the_installed_viewers():
    """HEADER_PX and DIALOG_PX are the viewer's column widths less their padding (ScoreGrid:
    kMetricColWidthCompact, kMetricColWidth; its stylesheet's padding and 0.8rem header size)."""
    import inspect_ai

    assets = Path(inspect_ai.__file__).parent / "_view" / "dist" / "assets"
    if not (assets / "index.js").is_file():
        pytest.skip(f"no viewer bundle at {assets} (this Inspect packages its viewer elsewhere)")
    js, css = (assets / "index.js").read_text(), (assets / "index.css").read_text()
    compact = int(re.search(r"kMetricColWidthCompact = (\d+)", js).group(1))
    dialog = int(re.search(r"kMetricColWidth = (\d+)", js).group(1))
    table = re.search(r"\._table_\w+ th,\s*\._table_\w+ td \{[^}]*padding: 0 (\d+)px", css)
    small = re.search(r"\._compact_\w+ th,\s*\._compact_\w+ td \{[^}]*padding: 0 (\d+)px", css)
    header = re.search(r"\._table_\w+ th \{[^}]*font-size: ([\d.]+)rem", css)
    assert (compact - 2 * int(small.group(1)), dialog - 2 * int(table.group(1))) == (HEADER_PX, DIALOG_PX)
    assert float(header.group(1)) * 16 == FONT_PX
    # the dialog is at most 1000 px wide (less its borders) beside a 180 px scorer column
    assert re.search(r'width: "min\(1000px, 90vw\)"', js) and "kScorerColWidth = 180" in js
    assert 180 + TABLE_METRICS * dialog <= 1000 - 20 < 180 + (TABLE_METRICS + 1) * dialog


def test_every_metric_name_fits_where_the_viewer_shows_it():
    tables = names_by_table()
    header = [n for is_grouped, names in tables.values() if not is_grouped for n in names]
    assert header == ["pass", "stderr", "overall", "under", "exec", "bounds"]
    assert len(header) <= HEADLINE_MAX
    too_wide = [(n, round(text_px(n), 1)) for n in header if text_px(n) > HEADER_PX - MARGIN]
    assert not too_wide, f"header names wider than {HEADER_PX} px: {too_wide}"
    dialog = [n for names in (names for _, names in tables.values()) for n in names]
    too_wide = [(n, round(text_px(n), 1)) for n in dialog if text_px(n) > DIALOG_PX - MARGIN]
    assert not too_wide, f"names wider than the dialog's {DIALOG_PX} px: {too_wide}"
    # each table fits the dialog; what grows with the run (ten epochs, every way to end) aside
    wide = {t: len(names) for t, (_, names) in tables.items()
            if len(names) > TABLE_METRICS and t not in ("pass_k", "terminations")}
    assert not wide, wide
    assert len(dialog) == len(set(dialog))  # one name each: Inspect would suffix a digit to a repeat


def test_names_the_data_defines_are_cut_to_fit_and_never_clash():
    """A domain or envelope of another source is named by its words, shortened; one named like a
    metric is prefixed, never suffixed with a digit (the viewer drops trailing digits)."""
    from pibench_inspect.scoring.metrics import domain_rates, envelope_rates

    def run(domain: str, envelope: str, sid: str) -> SampleScore:
        md = {"domain": domain, "envelope": envelope, "family": "F", "combo": "c"}
        return SampleScore(score=Score(value={"all_passed": 1.0}, answer="DENY", metadata=md), sample_id=sid)

    runs = [run("international_wire_transfers", "misdirection_format", "A"), run("pass", "pass_all", "B"),
            run("retail", "baseline", "C")]
    assert list(domain_rates(runs)) == ["intern_wire_t", "domain_pass", "retail"]
    assert list(envelope_rates(runs)) == ["baseline", "misdir_format", "envelope_pass_all"]
    for name in (*domain_rates(runs), *envelope_rates(runs)):
        assert text_px(name) <= DIALOG_PX - MARGIN or name.endswith(("_pass", "_pass_all")), name


def test_the_payload_keeps_the_originals_names_and_the_same_numbers(tmp_path):
    """The leaderboard payload of a run is named as the original's (compliance_rate,
    overall_score, by_group, event_flag_rates) and each Inspect metric PAYLOAD_NAMES maps equals
    its figure there: the names changed, the numbers did not."""
    log = run_eval(registered(source=str(MINI), agent="pushover", user="scripted"), epochs=2,
                   log_dir=str(tmp_path / "logs"))
    inspect_metrics = {k: v.value for k, v in log.results.scores[0].metrics.items()}
    payload = metrics_payload(log_rows(load_logs([Path(log.location)])))
    assert {"compliance_rate", "overall_score", "by_group", "by_column", "event_flag_rates"} <= set(payload)
    assert set(payload["event_flag_rates"]) == {"violation_rate", "under_refusal_rate", "over_refusal_rate",
                                                "escalation_accuracy_rate", "attempt_rate"}
    compared = 0
    for name, path in PAYLOAD_NAMES.items():
        if name not in inspect_metrics:
            continue
        figure = payload
        for key in path:
            figure = figure[key]
        ours = inspect_metrics[name]
        if math.isnan(ours):  # not applicable: the payload keeps the original's 0.0
            assert figure == 0.0, name
        else:
            assert ours == pytest.approx(figure, abs=1e-12), (name, path)
        compared += 1
    assert {"pass", "overall", "violation"} <= set(inspect_metrics) and compared >= 6
    assert 0.0 < inspect_metrics["overall"] < 1.0  # partial credit, not all or nothing


def test_partial_credit_shows_rounded_and_is_read_exactly():
    """The samples list shows a score value's numbers with every digit they have (4/13 read
    0.3076923076923077): the value holds partial_credit rounded to 3 decimals; the record and
    the slim metadata keep `credit` [passed, scored], from which every reader gets it exactly. A
    `credit` that is not two counts with 0 <= passed <= scored > 0 is not read."""
    from pibench_inspect.checks.decision import Decision
    from pibench_inspect.checks.evaluate import Evaluation
    from pibench_inspect.scoring.metrics import column_scores
    from pibench_inspect.scoring.record import partial_credit, slim_metadata
    from pibench_inspect.scoring.scorer import score_value

    ev = Evaluation(decision=Decision("DENY", "tool", None), partial_credit=4 / 13, credit=(4, 13))
    value = score_value(ev)
    assert value["partial_credit"] == 0.308 and repr(value["partial_credit"]) == "0.308"
    md = slim_metadata({"termination": "user_stop", "credit": [4, 13]}, "ref")
    assert md["credit"] == [4, 13] and partial_credit(value, md) == 4 / 13
    score = SampleScore(score=Score(value=value, metadata={**md, "column": COLUMNS[0]}), sample_id="A")
    assert column_scores([score])[COLUMNS[0]]["score"] == 4 / 13  # the metrics read it exactly
    assert partial_credit(value, {}) == 0.308  # a log without credit: the value
    assert partial_credit({"partial_credit": 0.25}, {"credit": [4, 13]}) == 4 / 13
    for hostile in ([5, 3], [1, 0], [-1, 2], [True, 2], ["1", "2"], [1, 2, 3], "1/2", None):
        assert partial_credit({"partial_credit": 0.5}, {"credit": hostile}) == 0.5, hostile
