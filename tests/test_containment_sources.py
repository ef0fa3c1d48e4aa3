"""A hostile scenario source stays contained (issue 17, items 1-10 and 14).

One source holds a good mini scenario and, next to them, a domain or a scenario for
every attack of the issue. One `pibench validate` subprocess must name each attack in an error of
its own, load the good scenarios and touch nothing outside the source (no file read, no module
imported, no schema fetched); one `inspect eval` subprocess must run only the good scenarios
with a hostile agent under test and write a log that strict JSON readers accept.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from conftest import MINI, ROOT, mini_scenario

PIBENCH = str(Path(sys.executable).with_name("pibench"))
INSPECT = str(Path(sys.executable).with_name("inspect"))
GOOD = {"MINI_001_REFUND_OK", "LINKED_INSIDE"}


def nest(levels: int) -> str:
    return "[" * levels + "]" * levels


class Hostile:
    """Builds the hostile source; remembers what each attack must be reported as."""

    def __init__(self, tmp: Path, fetch_url: str):
        self.tmp, self.src = tmp, tmp / "src"
        shutil.copytree(MINI, self.src)
        for extra in ("mini_002_final_sale", "mini_003_big_order"):  # one good original is enough
            (self.src / "scenarios" / "mini" / f"{extra}.json").unlink()
        self.outside = tmp / "outside"
        self.outside.mkdir()
        (self.outside / "secret.md").write_text("OUTSIDE-SECRET policy text")
        (self.outside / "db.json").write_text("{}")
        self.expect: dict[str, list[str]] = {}  # attack -> fragments one output line must hold
        self.fetch_url = fetch_url

    # -- building blocks
    def domain(self, name: str, config: dict | None = None, *, files: dict | None = None,
               raw_config: bytes | None = None) -> Path:
        d = self.src / "domains" / name
        shutil.copytree(MINI / "domains" / "mini", d)
        cfg = json.loads((d / "domain.json").read_text())
        cfg.update({"name": name, "aliases": [], **(config or {})})
        (d / "domain.json").write_bytes(raw_config if raw_config is not None else json.dumps(cfg).encode())
        for fname, content in (files or {}).items():
            (d / fname).write_text(content) if isinstance(content, str) else (d / fname).write_bytes(content)
        return d

    def scenario(self, sid: str, *, domain: str = "mini", patch=None, text: str | None = None,
                 folder: Path | None = None) -> Path:
        s = mini_scenario()
        s["meta"]["scenario_id"], s["meta"]["domain"] = sid, domain
        if patch:
            patch(s)
        path = (folder or self.src / "scenarios" / "hostile") / (re.sub(r"[^a-z0-9_]", "_", sid.lower()) + ".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text if text is not None else json.dumps(s))
        return path

    def attack(self, key: str, *fragments: str) -> None:
        self.expect[key] = list(fragments)

    # -- the attacks, one per issue item
    def build(self) -> None:
        hostile = self.src / "scenarios" / "hostile"
        hostile.mkdir(parents=True)
        # 1: paths out of the source, devices, FIFOs, size
        self.domain("leak_env", {"policy": "/proc/self/environ"})
        self.scenario("USES_LEAK_ENV", domain="leak_env")
        self.attack("policy absolute", "leak_env/domain.json", "policy: '/proc/self/environ' resolves outside the source folder")
        self.domain("leak_dotdot", {"policy": "../../../outside/secret.md"})
        self.scenario("USES_LEAK_DOTDOT", domain="leak_dotdot")
        self.attack("policy ../", "leak_dotdot/domain.json", "policy: '../../../outside/secret.md' resolves outside")
        d = self.domain("leak_link")
        (d / "db.json").unlink()
        (d / "db.json").symlink_to(self.outside / "db.json")
        self.scenario("USES_LEAK_LINK", domain="leak_link")
        self.attack("state symlink out", "leak_link/domain.json", "state: 'db.json' resolves outside the source folder")
        (hostile / "zero.json").symlink_to("/dev/zero")
        self.attack("scenario -> /dev/zero", "zero.json", "scenario file resolves outside the source folder")
        os.mkfifo(self.src / "fifo.json")
        (hostile / "fifo.json").symlink_to(self.src / "fifo.json")
        self.attack("scenario FIFO", "hostile/fifo.json", "scenario file is not a regular file")
        (hostile / "huge.json").write_text(" " * (5 * 1024 * 1024 + 1))
        self.attack("huge scenario", "huge.json", "larger than the 5242880 byte limit")
        self.scenario("ESCAPES_DOMAINS", domain="../..")
        self.attack("meta.domain ../..", "escapes_domains.json", "meta.domain", "not a domain folder name")
        # inside the source: a symlink to it is fine
        elsewhere = self.scenario("LINKED_INSIDE", folder=self.src / "extra")
        (hostile / "linked_inside.json").symlink_to(elsewhere)
        # 2: a handler outside the package's own handler modules is refused, never imported
        marker = self.tmp / "imported.txt"
        (self.tmp / "evilmod.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\ndef boom(ctx, **kw): return 1\n")
        self.marker = marker
        d = self.domain("evil_handler")
        tools = json.loads((d / "tools.json").read_text())
        tools["tools"][0]["handler"] = "evilmod:boom"
        (d / "tools.json").write_text(json.dumps(tools))
        self.scenario("USES_EVIL_HANDLER", domain="evil_handler")
        self.attack("handler", "evil_handler/tools.json", "handler 'evilmod:boom' is not allowed")
        # 3: a remote $ref is an error at load, never fetched
        d = self.domain("remote_ref")
        tools = json.loads((d / "tools.json").read_text())
        tools["tools"][0]["parameters"]["properties"]["order_id"] = {"$ref": self.fetch_url}
        (d / "tools.json").write_text(json.dumps(tools))
        self.scenario("USES_REMOTE_REF", domain="remote_ref")
        self.attack("remote $ref", "remote_ref/tools.json", "is not a local reference")
        # 4: alias collisions and broken domain.json: one error each, the rest loads
        self.domain("thief", {"aliases": ["mini"]})
        self.attack("alias takes a folder's name", "thief/domain.json", "'mini' is the name of the domain folder")
        self.domain("twin_a", {"aliases": ["twin"]})
        self.domain("twin_b", {"aliases": ["twin"]})
        self.attack("alias declared twice", "twin_b/domain.json", "'twin' is also declared by", "twin_a/domain.json")
        self.domain("alias_five", {"aliases": 5})
        self.attack("aliases: 5", "alias_five/domain.json", "aliases: expected a list of strings")
        self.domain("latin1", raw_config=b'{"name": "latin1", "title": "caf\xe9"}')
        self.attack("non-UTF-8 domain.json", "latin1/domain.json", "not valid UTF-8")
        # 5: nesting
        (hostile / "deep.json").write_text(nest(100_000))
        self.attack("100k-deep scenario", "deep.json", "nests deeper than 64 levels")
        deep_patch = {}
        node = deep_patch
        for _ in range(900):
            node["x"] = {}
            node = node["x"]
        self.scenario("DEEP_PATCH", patch=lambda s: s["environment_setup"].update(initial_state_patch=deep_patch))
        self.attack("900-deep patch", "deep_patch.json", "nests deeper than 64 levels")
        # 6: scenario ids
        self.scenario("NUL\x00ID", patch=None, folder=hostile / "ids")
        self.attack("NUL id", "meta.scenario_id", "'NUL\\x00ID' is not a safe scenario id")
        self.scenario("../../x", folder=hostile / "ids")
        self.attack("../ id", "meta.scenario_id", "'../../x' is not a safe scenario id")
        # 7: NaN / Infinity in scenario and domain JSON
        self.scenario("HAS_NAN", text=json.dumps(mini_scenario()).replace('"amount": 40.0', '"amount": NaN'))
        self.attack("NaN in a scenario", "has_nan.json", "NaN is not a JSON number")
        self.domain("inf_seed", files={"db.json": '{"orders": {"O-1": {"total": 1e400}}}'})
        self.scenario("USES_INF_SEED", domain="inf_seed")
        self.attack("Infinity in db.json", "inf_seed/db.json", "1e400 overflows to Infinity")
        # 8: a dotted key and a namespace naming the same collection
        self.domain("clash_seed", files={"db.json": json.dumps({"a.b": [{"x": 1}], "a": {"b": [{"x": 2}]}})})
        self.scenario("USES_CLASH_SEED", domain="clash_seed")
        self.attack("seed clash", "clash_seed/db.json", "'a.b' and 'a' -> 'b' both map to the collection 'a.b'")
        self.scenario("PATCH_CLASH", patch=lambda s: s["environment_setup"].update(
            initial_state_patch={"ledger.items": [{"x": 1}], "ledger": {"items": [{"y": 2}]}}))
        self.attack("patch clash", "patch_clash.json", "initial_state_patch", "both map to the collection 'ledger.items'")
        # 10: clause patterns, missing state, scenarios that fail validate
        self.domain("bad_pattern", {"clause_pattern": "MINI-(\\d+"})
        self.scenario("USES_BAD_PATTERN", domain="bad_pattern")
        self.attack("invalid clause_pattern", "bad_pattern/domain.json", "clause_pattern", "invalid regular expression")
        self.domain("slow_pattern", {"clause_pattern": "(a+)+$"}, files={"policy.md": "a" * 60 + "!\n"})
        self.attack("catastrophic clause_pattern", "slow_pattern/domain.json", "clause_pattern", "ran over 2 s")
        self.scenario("USES_SLOW_PATTERN", domain="slow_pattern",
                      patch=lambda s: s["policy_context"].update(policy_clauses=[]))
        d = self.domain("no_state")
        (d / "db.json").unlink()
        self.scenario("USES_NO_STATE", domain="no_state")
        self.attack("missing state", "no_state/db.json", "seed state not found")
        self.scenario("NAMES_UNKNOWN_TOOL", patch=lambda s: s["evaluation_criteria"]["policy_checks"].append(
            {"outcome_id": "X1", "type": "tool_called", "tool_name": "no_such_tool"}))
        self.attack("fails validate", "names_unknown_tool.json", "tool 'no_such_tool' is not in the mini catalog")


@pytest.fixture(scope="module")
def fetches():
    """A loopback HTTP server counting requests: a schema `$ref` must never reach it."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            body = b'{"type": "string"}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/schema.json", hits
    server.shutdown()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, fetches) -> Hostile:
    h = Hostile(tmp_path_factory.mktemp("hostile"), fetches[0])
    h.build()
    return h


def env_with(extra_path: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(extra_path), env.get("PYTHONPATH", "")])
    env["COLUMNS"] = "2000"  # log lines unwrapped, so each reason reads as one line
    return env


@pytest.mark.slow
def test_validate_names_every_attack_and_loads_the_rest(hostile: Hostile, fetches):
    r = subprocess.run([PIBENCH, "validate", "--source", str(hostile.src)], capture_output=True, text=True,
                       timeout=300, env=env_with(hostile.tmp), cwd=ROOT)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out and "RecursionError" not in out, out
    lines = out.splitlines()
    for attack, fragments in hostile.expect.items():
        assert any(all(f in line for f in fragments) for line in lines), f"{attack}: no line with {fragments}\n{out}"
    # + NAMES_UNKNOWN_TOOL and USES_SLOW_PATTERN, which load but are invalid
    assert f"{len(GOOD) + 2} scenario(s) loaded" in out, out
    # nothing outside the source was read, imported or fetched
    assert "OUTSIDE-SECRET" not in out
    assert not hostile.marker.exists(), "validate imported a catalog's handler module"
    assert fetches[1] == [], f"a schema $ref was fetched: {fetches[1]}"
    # one broken domain is one error: the broken domain.json files are named once each
    for folder in ("alias_five", "latin1", "thief"):
        assert sum(f"{folder}/domain.json" in line for line in lines) == 1, out


def strict_json(data: bytes, name: str):
    def reject(c):
        raise AssertionError(f"{name}: bare {c} in the log")

    return json.loads(data, parse_constant=reject)


@pytest.mark.slow
def test_eval_runs_only_the_good_scenarios_with_a_hostile_agent(hostile: Hostile, tmp_path, fetches):
    """Items 5-7, 9, 10 at run time: the broken inputs are skipped with their reason, the agent's
    NaN arguments are its own tool errors, its 500 kB of unterminated fences resolve (this took
    minutes with the old regex), and the log is strict JSON."""
    import inspect_ai._util.zipfile  # noqa: F401  (Inspect's zstd support for reading entries)

    logs = tmp_path / "logs"
    r = subprocess.run(
        [INSPECT, "eval", "pibench_inspect/pibench", "-T", f"source={hostile.src}",
         "-T", "agent=tests.hostile_agent:HostileAgent", "-T", "user=scripted", "--model", "none",
         "--display", "plain", "--log-dir", str(logs)],
        capture_output=True, text=True, timeout=300, env=env_with(hostile.tmp), cwd=ROOT,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "skipping invalid scenario NAMES_UNKNOWN_TOOL" in out and "no_such_tool" in out, out
    assert "nests deeper than 64 levels" in out, out
    log_path = next(logs.glob("*.eval"))
    log = read_eval_log(str(log_path))
    assert log.status == "success"
    assert {str(s.id) for s in log.samples} == GOOD
    assert log.results.total_samples == len(GOOD) == log.results.completed_samples
    for s in log.samples:
        score = s.scores["pibench_scorer"]
        assert score.answer == "DENY", (s.id, score.answer)  # the one valid block before 500 kB of fences
        errors = [m.error.message for m in s.messages if m.role == "tool" and m.error]
        assert any("amount: NaN is not a JSON number" in e for e in errors), errors
        assert any("amount: Infinity is not a JSON number" in e for e in errors), errors
    with zipfile.ZipFile(log_path) as z:
        names = z.namelist()
        assert sorted(n for n in names if n.startswith("samples/")) == sorted(f"samples/{i}_epoch_1.json" for i in GOOD)
        for name in names:
            if name.startswith("samples/") or name == "reductions.json":
                strict_json(z.read(name), name)
    assert not hostile.marker.exists() and fetches[1] == []
