"""Load a domain folder: policy, tool catalog, seed state and framing.

`domains/<name>/` holds `policy.md`, `tools.json`, `db.json` (the seed state) and an optional
`domain.json` (title, aliases, the agent's role, the clause-id pattern). Folders of the
original layout (no domain.json) load with defaults.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..scenario.errors import ScenarioError, validation_problems
from .catalog import ToolSpec, catalog_entries

# meta.domain values of the original scenario files -> folder names
BUILTIN_ALIASES = {
    "retail_refund_sop_v1": "retail",
    "helpdesk_access_control_v1": "helpdesk",
}

PARITY_HANDLER = "pibench_inspect.parity.generic:dispatch"

DEFAULT_ROLE = (
    "You are an operations agent working under the policy below. Use the provided tools to "
    "inspect the current state before acting."
)


class DomainConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = None
    title: str | None = None
    aliases: list[str] = Field(default_factory=list)
    agent_role: str = DEFAULT_ROLE
    clause_pattern: str | None = None
    decision_tool: str = "record_decision"
    policy: str = "policy.md"
    tools: str = "tools.json"
    state: str = "db.json"


@dataclass
class Domain:
    name: str
    path: Path
    config: DomainConfig
    policy_text: str
    tools: list[ToolSpec]
    seed_state: dict[str, Any]
    tool_index: dict[str, ToolSpec] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.tool_index = {t.name: t for t in self.tools}

    @property
    def original_layout(self) -> bool:
        """A folder of the original pi-bench (no domain.json): parity semantics apply."""
        return not (self.path / "domain.json").exists()

    @property
    def clause_ids(self) -> set[str]:
        if not self.config.clause_pattern:
            return set()
        return set(re.findall(self.config.clause_pattern, self.policy_text))


def _read(path: Path, what: str) -> Any:
    if not path.is_file():
        raise ScenarioError(path, [f"(file): {what} not found"])
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ScenarioError(path, [f"(file): not valid UTF-8 (byte {err.start})"]) from None
    except json.JSONDecodeError as err:
        raise ScenarioError(
            path, [f"(file): invalid JSON at line {err.lineno} column {err.colno}: {err.msg}"]
        ) from None


def load_domain_dir(path: Path) -> Domain:
    cfg_path = path / "domain.json"
    config = DomainConfig()
    if cfg_path.exists():
        try:
            config = DomainConfig.model_validate(_read(cfg_path, "domain.json"))
        except ValidationError as err:
            raise ScenarioError(cfg_path, validation_problems(err)) from None
    policy_path = path / config.policy
    if not policy_path.is_file():
        raise ScenarioError(policy_path, ["(file): policy not found"])
    try:
        policy_text = policy_path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ScenarioError(policy_path, [f"(file): not valid UTF-8 (byte {err.start})"]) from None
    if not policy_text.strip():
        raise ScenarioError(policy_path, ["(file): policy is empty"])
    tools_path = path / config.tools
    raw_tools = _read(tools_path, "tool catalog")
    try:
        entries = catalog_entries(raw_tools)
    except ValueError as err:
        raise ScenarioError(tools_path, [f"(top level): {err}"]) from None
    tools, problems = [], []
    for i, entry in enumerate(entries):
        try:
            tools.append(ToolSpec.model_validate(entry))
        except ValidationError as err:
            name = entry.get("name") if isinstance(entry, dict) else None
            label = f"tools[{i}]" + (f" ({name})" if name else "")
            problems += [f"{label}.{p}" for p in validation_problems(err)]
    if not cfg_path.exists():
        # an original pi-bench domain folder: its catalog describes tools but not their effects;
        # our re-implementation of the original's tool semantics stands in (docs/parity.md)
        tools = [
            t if (t.effect or t.handler) else t.model_copy(update={"handler": PARITY_HANDLER})
            for t in tools
        ]
    names = [t.name for t in tools]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        problems.append(f"tools: duplicate tool name {dup!r}")
    if problems:
        raise ScenarioError(tools_path, problems)
    state_path = path / config.state
    seed = _read(state_path, "seed state") if state_path.exists() else {}
    if not isinstance(seed, dict):
        raise ScenarioError(state_path, ["(top level): seed state must be a JSON object"])
    return Domain(
        name=config.name or path.name,
        path=path,
        config=config,
        policy_text=policy_text,
        tools=tools,
        seed_state=seed,
    )


@lru_cache(maxsize=64)
def _load_cached(path: str, mtime_key: tuple[float, ...]) -> Domain:
    return load_domain_dir(Path(path))


def load_domain(path: Path) -> Domain:
    """Load (and cache until a file changes) the domain in folder `path`."""
    stamps = tuple(p.stat().st_mtime for p in sorted(path.glob("*")) if p.is_file())
    return _load_cached(str(path.resolve()), stamps)


def domain_aliases(domains_root: Path) -> dict[str, str]:
    aliases = dict(BUILTIN_ALIASES)
    for cfg in sorted(domains_root.glob("*/domain.json")):
        try:
            data = json.loads(cfg.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        for alias in data.get("aliases", []) if isinstance(data, dict) else []:
            aliases[str(alias)] = cfg.parent.name
    return aliases


def resolve_domain_dir(domain: str, domains_root: Path) -> Path:
    name = domain_aliases(domains_root).get(domain, domain)
    path = domains_root / name
    if not (path / "tools.json").exists() and not (path / "domain.json").exists():
        raise FileNotFoundError(f"domain {domain!r}: no folder {path}")
    return path
