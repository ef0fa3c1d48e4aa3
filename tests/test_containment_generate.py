"""`pibench generate` under hostile family files and output folders (issue 41, defects 3, 6, 7,
8, 14 and 16).

A family file is data and so is the folder it writes into. Through the real command: each
hostile family is one line naming it and nothing is written for it (expressions bounded as they
are built, the family's counts and sizes bounded before the work, every file checked by the
scenario loader's rules before any is written); a symlinked output folder or file is refused and
nothing outside is touched; a FIFO or a link to /dev/zero in the output folder neither hangs the
command nor fills its memory. Every subprocess runs under a memory limit, so a regression fails
the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from pibench_inspect.families import bounds
from pibench_inspect.families.expr import ExprError, evaluate, render
from pibench_inspect.families.generate import build, write
from pibench_inspect.scenario.errors import ScenarioError

PIBENCH = str(Path(sys.executable).with_name("pibench"))
EXEMPLAR = ROOT / "families" / "retail" / "price_adjustment.json"
MEMORY = 1536 * 1024 * 1024  # the command needs ~150 MB; 1.4 GB of text would not fit


def limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def generate(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PIBENCH, "generate", *args], capture_output=True, text=True, timeout=timeout,
                          preexec_fn=limited)


def source(tmp: Path) -> Path:
    src = tmp / "src"
    shutil.copytree(ROOT / "domains" / "retail", src / "domains" / "retail")
    (src / "scenarios").mkdir()
    (src / "families" / "retail").mkdir(parents=True)
    return src


def family(src: Path, name: str, patch=None) -> Path:
    raw = json.loads(EXEMPLAR.read_text())
    raw["family"] = f"RET_{name.upper()}"
    if patch:
        patch(raw)
    path = src / "families" / "retail" / f"{name}.json"
    path.write_text(json.dumps(raw))
    return path


# ---------------------------------------------------------------- the hostile families


def percent_format(raw: dict) -> None:  # 1.4 GB of zeros, before the text-length check
    raw["slots"]["pad"] = {"expr": "'%01400000000d' % 0"}


def huge_join(raw: dict) -> None:  # 1,500 items joined by a 0.9 MB separator: 1.35 GB
    raw["slots"]["sep"] = {"value": "y" * 900_000}
    raw["slots"]["items"] = {"value": list(range(1500))}
    raw["slots"]["joined"] = {"expr": "join(items, sep)"}


def zero_step(raw: dict) -> None:  # a slice with step 0 in a template (a ValueError)
    raw["envelopes"]["baseline"]["opening"] = "Hello, {{'abc'[::0]}}"


def far_date(raw: dict) -> None:  # 1e11 days (an OverflowError)
    raw["slots"]["when"] = {"expr": "date_add(today, 1e11)"}


def nan_state(raw: dict) -> None:  # NaN in the state: the loader refuses the file
    raw["slots"]["ratio"] = {"expr": "float('nan')"}
    raw["state"]["orders"]["{{order_id}}"]["order_notes"] = "{{ratio}}"


def lone_surrogate(raw: dict) -> None:  # text no UTF-8 file can hold: the loader refuses the file
    raw["state"]["orders"]["{{order_id}}"]["order_notes"] = "\ud800"


def oversized(raw: dict) -> None:  # one 0.95 MB value in four places: files over the loader's 5 MB
    raw["slots"]["blob"] = {"value": "x" * 950_000}
    raw["state"]["orders"]["{{order_id}}"]["order_notes"] = "{{blob}}"
    raw["customer"]["note"] = "{{blob}}"
    raw["steps"]["order"]["args"]["note"] = "{{blob}}"
    raw["envelopes"] = {"baseline": raw["envelopes"]["baseline"]}
    for c in raw["constraints"]:  # a case's line for an envelope now gone would be refused first
        c.pop("threshold", None)  # and no boundary cases: seven files (all met, three constraints, three pairs)
        tactics = c["when_unsatisfied"].get("tactics", {})
        for key in [k for k in tactics if ":" in k]:
            del tactics[key]


def many_variants(raw: dict) -> None:  # 17 cases x 25 envelopes each: 425 scenarios
    for c in raw["constraints"]:  # no boundary cases: the 17 are all-met and 16 single constraints
        c.pop("threshold", None)
    first = raw["constraints"][0]
    raw["constraints"] += [{**first, "name": f"extra_{i}"} for i in range(16 - len(raw["constraints"]))]
    names = [c["name"] for c in raw["constraints"]]  # no pairs: every one kept apart
    raw.pop("combos", None)
    raw["apart"] = [{"constraints": [a, b], "why": "copies"} for i, a in enumerate(names) for b in names[i + 1:]]
    raw["envelopes_per_case"] = 25
    base = raw["envelopes"]["baseline"]
    raw["envelopes"].update({f"press_{i}": {**base, "opening": f"{base['opening']} ({i})"} for i in range(25 - len(raw["envelopes"]))})


def much_output(raw: dict) -> None:  # 20 files of 2 MB each: past MAX_OUTPUT_BYTES (32 MiB)
    for c in raw["constraints"]:  # 4 cases x 5 envelopes, no boundary cases
        c.pop("threshold", None)
    raw["slots"]["blob"] = {"value": "x" * 950_000}
    raw["state"]["orders"]["{{order_id}}"]["order_notes"] = "{{blob}}"
    raw["customer"]["note"] = "{{blob}}"


HOSTILE = {  # family -> what its one line must say
    "percent_format": "% is for numbers only",
    "huge_join": "join: text longer than 10,000 characters",
    "zero_step": "slice step cannot be zero",
    "far_date": "date_add: 100000000000.0 is not a number of days",
    "nan_state": "not a finite number: nan",
    "lone_surrogate": "would not load: (file): holds text that is not UTF-8",
    "oversized": "larger than the loader's limit of 5,242,880 bytes (MAX_FILE_BYTES)",
    "many_variants": "425 scenarios, more than 400 (MAX_VARIANTS)",
    "much_output": "(MAX_OUTPUT_BYTES); nothing was written",
}


@pytest.mark.slow
def test_hostile_families_are_refused_in_one_line_each_and_nothing_of_them_is_written(tmp_path):
    src = source(tmp_path)
    paths = [family(src, name, globals()[name]) for name in HOSTILE]
    good = family(src, "good")
    started = time.monotonic()
    r = generate(*map(str, paths + [good]), timeout=300)
    assert time.monotonic() - started < 240
    assert r.returncode == 1, r.stderr[-3000:]
    assert "Traceback" not in r.stderr and "MemoryError" not in r.stderr, r.stderr[-3000:]
    lines = r.stderr.splitlines()
    assert all(line.startswith("error: ") for line in lines), lines
    for path, (name, says) in zip(paths, HOSTILE.items()):
        mine = [line for line in lines if line.startswith(f"error: {path}: ")]
        assert mine and all(says in line for line in mine), (name, mine or lines)
        assert not (src / "scenarios" / "retail" / f"ret_{name}").exists(), name
    assert len([line for line in lines if "oversized" in line]) == 7  # one per file it would write (7 cases, 1 envelope)
    # the good family still generates: one bad family never stops the rest
    assert "RET_GOOD: wrote 30 scenario(s)" in r.stdout
    assert len(list((src / "scenarios" / "retail" / "ret_good").glob("*.json"))) == 30  # 10 cases (all met, 3 constraints, 3 pairs, 3 at the threshold) x 3 envelopes each


# ---------------------------------------------------------------- where it writes


@pytest.mark.slow
def test_generate_writes_only_inside_its_folder(tmp_path):
    src = source(tmp_path)
    fam = family(src, "price")
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = src / "scenarios" / "retail" / "ret_price"
    folder.parent.mkdir()

    # the output folder is a symlink out of the source
    folder.symlink_to(outside, target_is_directory=True)
    r = generate(str(fam))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "resolves outside" in r.stderr and str(folder) in r.stderr, r.stderr
    assert list(outside.iterdir()) == []

    # an output file is a symlink to a file outside: refused before anything is written
    folder.unlink()
    folder.mkdir()
    victim = outside / "victim.json"
    victim.write_text("precious")
    (folder / "all_met__urgency.json").symlink_to(victim)
    r = generate(str(fam))
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1 and "all_met__urgency.json" in r.stderr and "not a regular file" in r.stderr
    assert victim.read_text() == "precious"
    assert [p.name for p in folder.iterdir()] == ["all_met__urgency.json"]

    # --out naming a file: one line, before any work
    r = generate(str(fam), "--out", str(victim))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "not a folder" in r.stderr, r.stderr
    assert victim.read_text() == "precious"


@pytest.mark.slow
def test_generate_reads_only_regular_bounded_files_of_its_folder(tmp_path):
    src = source(tmp_path)
    fam = family(src, "price")
    write(build(fam))
    folder = src / "scenarios" / "retail" / "ret_price"
    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps({"meta": {"family": "RET_PRICE"}}))
    os.mkfifo(folder / "waiting.json")  # opening it would wait for a writer for ever
    (folder / "zero.json").symlink_to("/dev/zero")  # reading it would never end
    (folder / "elsewhere.json").symlink_to(outside)  # claims to be the family's: outside, not read
    held = folder / "all_met__urgency.json"
    held.unlink()
    os.mkfifo(held)  # a file the family makes, now a FIFO

    r = generate("--check", str(fam), timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.splitlines() == [f"{held}: not a regular file (a symlink, FIFO or folder); generate neither "
                                     "reads nor writes through it: remove it"], r.stdout

    held.unlink()
    r = generate(str(fam), timeout=60)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert held.is_file() and outside.exists()
    assert {"waiting.json", "zero.json", "elsewhere.json"} <= {p.name for p in folder.iterdir()}  # left alone


# ---------------------------------------------------------------- the bounds, in process


HOSTILE_EXPRESSIONS = [
    "'%01400000000d' % 0", "'abc' % 1", "'abc'[::0]", "date_add(today, 1e11)", "date_add(today, 10000000)",
    "float('nan')", "float('inf')", "-[1]", "sum([[1], [2]], [])", "round(5, -100000000000)",
    "{[1]: 2}", "-" * 200 + "1", "+".join(["1"] * 120), "big + big", "join(big_list)", "str(deep)",
    "len([deep, deep]) == 2",
]
EVALUATE_EACH = """
import json, sys
from pibench_inspect.families.expr import ExprError, evaluate
big = "x" * 9000
deep = [["y" * 1000] * 10] * 30  # 300 kB as JSON, held in a few objects
env = {"today": "2025-05-20", "big": big, "big_list": [big, big], "deep": [deep] * 5}
for source in json.loads(sys.argv[1]):
    try:
        evaluate(source, env)
        print("evaluated")
    except ExprError:
        print("refused")
    except BaseException as err:
        print(type(err).__name__)
"""


def test_expressions_are_bounded_before_their_result_is_built():
    # in a child with a memory limit and a timeout: unbounded, these take gigabytes or forever
    r = subprocess.run([sys.executable, "-c", EVALUATE_EACH, json.dumps(HOSTILE_EXPRESSIONS)], capture_output=True,
                       text=True, timeout=60, preexec_fn=limited)
    assert dict(zip(HOSTILE_EXPRESSIONS, r.stdout.split())) == {x: "refused" for x in HOSTILE_EXPRESSIONS}, r.stderr


def test_a_value_that_holds_another_many_times_over_is_measured_without_spelling_it_out():
    value: object = "x" * 100
    for _ in range(12):  # 100 * 30**12 characters described, a few hundred objects held
        value = [value] * 30
    started = time.monotonic()
    assert bounds.json_size(value, 1_000_000) > 1_000_000
    assert time.monotonic() - started < 2
    with pytest.raises(ExprError, match="MAX_VALUE_BYTES"):
        render("{{v}}", {"v": value})


def test_a_generation_stops_at_its_deadline_and_its_allowance():
    with bounds.budget(seconds=0), pytest.raises(bounds.OverBudget, match="deadline"):
        time.sleep(0.01)
        evaluate("1 + 1", {})
    with bounds.budget(computed=10), pytest.raises(bounds.OverBudget, match="MAX_COMPUTED_BYTES"):
        evaluate("'twelve chars'", {})


def test_the_output_limit_refuses_the_family_before_anything_is_written(tmp_path, monkeypatch):
    import pibench_inspect.families.generate as gen

    monkeypatch.setattr(gen, "MAX_OUTPUT_BYTES", 100_000)  # the exemplar makes ~450 kB
    with pytest.raises(ScenarioError, match="MAX_OUTPUT_BYTES"):
        build(EXEMPLAR, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_write_never_follows_a_symlink_it_finds(tmp_path):
    out = build(EXEMPLAR, tmp_path / "out")
    (tmp_path / "out").mkdir()
    victim = tmp_path / "victim.json"
    victim.write_text("precious")
    name = next(iter(out.files))
    (tmp_path / "out" / name).symlink_to(victim)
    with pytest.raises(ScenarioError, match="not a regular file"):
        write(out)
    assert victim.read_text() == "precious" and len(list((tmp_path / "out").iterdir())) == 1
    (tmp_path / "out" / name).unlink()
    assert len(write(out)) == len(out.files) and victim.read_text() == "precious"
