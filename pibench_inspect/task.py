"""Build the pi-bench Task: scenarios -> samples, the conversation solver, the scorer.

The registered tasks (`pibench`, `pibench_finra`, `pibench_retail`, `pibench_helpdesk` in the
task files) take their `-T` arguments, typed and documented, from `TaskArgs` (task_args.py);
every value is validated here, so a typo or a bad value is a clear error naming the argument.

Scenario ids are chosen with Inspect's own `--sample-id` (lists and globs), repeated runs with
Inspect's `--epochs N`: the task defines no arguments for either.
"""

from __future__ import annotations

import logging
import re
from functools import wraps
from typing import Any, Callable

from inspect_ai import Task, task  # noqa: F401  (task: re-exported for the task files)
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model

from . import _bootstrap  # noqa: F401  (environment set-up before litellm can load)
from .runtime.startup import settle_imports

settle_imports()  # before the package's own imports (runtime/startup.py)
from .cli.refusal import Refusal, closest, glob_fix, is_glob, matches_any, prefix_glob
from .conversation.seats import SEATED_AGENTS, SEATED_USERS, require_seat
from .conversation.solver import conversation, is_none_model
from .runtime.inspect_internals import (
    SAMPLE_ID_LOGGER, PrerequisiteError, active_model, eval_sample_ids, sample_id_matcher, sample_id_patterns,
)
from .conversation.prompts import policy_shared, shared_policies
from .environment.merge import DIFF_LEGEND
from .scenario.catalog import Entry, ScenarioSet, load_set
from .scenario.content_hash import content_hash
from .scenario.shard import in_shard
from .scoring.metrics import COLUMNS
from .scoring.metric_names import DESCRIPTIONS as METRIC_DESCRIPTIONS
from .scoring.scorer import pibench_scorer
from .task_args import LABEL_VALUES, TaskArgs, parse_args, task_arguments

logger = logging.getLogger(__name__)

def sample_for(entry: Entry, ablation: str | None = None, label_filter: list[str] | None = None) -> Sample:
    s = entry.scenario
    metadata = {
        "domain": entry.domain.name,
        "label": s.expected,
        "column": s.primary,
        # a family's variants are not independent: intervals cluster by family, and the
        # robustness metrics compare the envelopes of one case (family + combo)
        "family": s.family,
        "combo": s.meta.combo,
        "envelope": s.meta.envelope,
        "ablation": ablation,
        "subskills": tuple(s.leaderboard.subskills) if s.leaderboard else (),
        "stressors": tuple(s.leaderboard.stressors) if s.leaderboard else (),
        "policy_version": s.policy_context.policy_version,
        "scenario_file": str(entry.path),
        # -T label: the labels the person chose, so the rates over a label may be shown even when
        # every run has it (scoring/metrics.states_a_label)
        "label_filter": tuple(label_filter) if label_filter else None,
    }
    # Why this shape: Inspect copies a sample's metadata for every epoch and keeps the copy, and
    # a summary of it, until the run ends. Unset keys are left out (readers `.get` them), lists
    # are tuples (a deep copy shares them), and the author's notes are in the score's record
    # (scoring/record.py), which the log keeps once, not in every copy Inspect holds.
    return Sample(
        id=s.scenario_id,
        input=s.user_simulation.initial_user_message,
        target=s.expected,
        metadata={k: v for k, v in metadata.items() if v is not None},
    )


def _choose(entries: list[Entry], wanted: list[str] | None, arg: str, value_of,
            valid: tuple[str, ...] = (), partial: bool = False) -> list[Entry]:
    """The entries whose value is wanted; a wanted value present in none is a Refusal naming the
    closest present values (none for a `valid` value that this selection simply lacks).
    `partial`: `entries` are only those `--sample-id` selected, so a `valid` value absent from
    them is no mistake as long as another wanted value is present."""
    if not wanted:
        return entries
    present = sorted({value_of(e) for e in entries})
    unknown = [w for w in wanted if w not in present and not (partial and w in valid)]
    out = [e for e in entries if value_of(e) in wanted]
    if not out or unknown:
        hint = "; ".join(
            f"{w!r}" + (f" (did you mean {', '.join(repr(c) for c in close)}?)"
                        if w not in valid and (close := closest(w, present)) else "")
            for w in unknown
        )
        raise Refusal(
            f"-T {arg}: {hint or 'nothing'} matches no scenario here; the values present are: {', '.join(present)}"
        )
    return out


def drop_invalid(chosen: list[Entry]) -> list[Entry]:
    """Scenarios `pibench validate` rejects (its static checks) never run: each is skipped
    with its reasons logged, and a selection of nothing but invalid scenarios is an error."""
    from .authoring.validate import static_problems

    invalid = static_problems(chosen)
    kept = [e for e in chosen if e.scenario.scenario_id not in invalid]
    for e in chosen:
        for problem in invalid.get(e.scenario.scenario_id, []):
            logger.warning("skipping invalid scenario %s: %s", e.scenario.scenario_id, problem)
    if not kept:
        raise Refusal("every selected scenario is invalid (run `pibench validate`): "
                         + "; ".join(p for e in chosen for p in invalid[e.scenario.scenario_id]))
    return kept


def apply_ablation(chosen: list[Entry], ablation: str, scenario_set: ScenarioSet) -> list[Entry]:
    """The chosen scenarios under `-T ablation=...`; those without the hint it needs are left
    out with the reason logged, and an ablation no chosen scenario supports is an error."""
    from .scenario.ablation import ablate_all

    everything = {sid: e.scenario for sid, e in scenario_set.entries.items()}
    ablated, skipped = ablate_all([e.scenario for e in chosen], ablation, everything)
    for sid, why in skipped.items():
        logger.warning("-T ablation=%s: leaving out %s: %s", ablation, sid, why)
    if not ablated:
        raise Refusal(f"-T ablation={ablation}: none of the {len(chosen)} selected scenarios can be ablated "
                         f"this way ({next(iter(skipped.values()))})")
    out = []
    for s in ablated:
        entry = scenario_set.entries[s.scenario_id]
        # the solver and the scorer resolve scenarios through the set: they see the ablated one
        scenario_set.entries[s.scenario_id] = entry = Entry(s, entry.domain, entry.path)
        out.append(entry)
    return out


def select(entries: list[Entry], args: TaskArgs, partial: bool = False) -> list[Entry]:
    """The scenarios the filters keep (a filter that matches nothing is an error naming it);
    `partial`: `entries` are what `--sample-id` selected, not the whole set (see _choose)."""
    out = _choose(entries, args.column, "column", lambda e: e.scenario.primary, COLUMNS, partial)
    out = _choose(out, args.label, "label", lambda e: e.scenario.expected, LABEL_VALUES, partial)
    return shard_part(out, args.shard)


def shard_part(entries: list[Entry], shard: str | None) -> list[Entry]:
    """-T shard=K/N: the K-th part of the selection (scenario/shard.py); an empty part is an error."""
    if not shard:
        return entries
    out = [e for e in entries if in_shard(e.scenario.scenario_id, shard)]
    if not out:
        raise Refusal(f"-T shard={shard}: no scenario of the {len(entries)} selected falls in this part; use fewer shards")
    return out


# datasets this process built: Inspect's own "sample id 'X' not found" warning for them is left
# out, because ScenarioDataset.filter says the same with the closest ids, and says nothing for a
# glob that does match (Inspect compares each pattern, globs included, with the ids verbatim)
_OWN_DATASETS: set[str] = set()
_NOT_FOUND = re.compile(r"sample id '.*' not found in dataset '(?P<name>.*)'\.$", re.S)
_SAID: set[str] = set()


class _OwnSampleIdWarnings(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        m = _NOT_FOUND.match(record.getMessage())
        return not (m and m.group("name") in _OWN_DATASETS)


# the logger Inspect's --sample-id check (slice_dataset) warns through
logging.getLogger(SAMPLE_ID_LOGGER).addFilter(_OwnSampleIdWarnings())


def unmatched_hint(pattern: str, ids: list[str]) -> str:
    """'RET_01' (did you mean 'RET_01*'? it matches 10; closest: RET_010_..., ...); a misspelt
    glob gets the glob meant: 'RET_PRICE_ADJUSTMNT.*' (did you mean 'RET_PRICE_ADJUSTMENT.*'? ...)."""
    parts = []
    if (glob := prefix_glob(pattern, ids) or glob_fix(pattern, ids)) is not None:
        parts.append(f"did you mean '{glob[0]}'? it matches {glob[1]}")
    if (not glob or not is_glob(pattern)) and (close := closest(pattern, ids)):
        parts.append(f"closest: {', '.join(close)}")
    return f"{pattern!r}" + (f" ({'; '.join(parts)})" if parts else "")


def check_patterns(patterns: list[str], ids: list[str], matched: int, task: str) -> None:
    """Say which `--sample-id` patterns match none of `ids` (the task's scenarios), with the
    closest ids: a Refusal when nothing matched at all (`matched` 0), else a warning, once."""
    unmatched = [p for p in patterns if not matches_any(p, ids)]
    if not unmatched and matched:
        return
    said = "; ".join(unmatched_hint(p, ids) for p in unmatched or patterns)
    if not matched:
        raise Refusal(f"--sample-id {','.join(patterns)}: no scenario {said} in task '{task}'; "
                      "`pibench list` shows every scenario id")
    line = (f"--sample-id: {said} matches no scenario in task '{task}'; "
            f"running the {matched} that the other patterns match")
    if line not in _SAID:  # Inspect slices the dataset twice
        _SAID.add(line)
        logger.warning(line)


class ScenarioDataset(MemoryDataset):
    """A MemoryDataset that answers `--sample-id` itself: a pattern matching no scenario is named
    with the closest ids (by prefix and edit distance; Inspect's own message lists only the first
    eight ids): a refusal when nothing matches, a warning when the other patterns match.

    `known_ids`: every scenario id of the task, when the dataset holds only those `--sample-id`
    selects (the task read it before Inspect filters: see build_task)."""

    def __init__(self, samples: list[Sample], name: str, known_ids: list[str] | None = None) -> None:
        super().__init__(samples, name=name)
        self.known_ids = known_ids
        _OWN_DATASETS.add(name)

    def filter(self, predicate, name=None):  # type: ignore[override]
        out = super().filter(predicate, name)
        patterns = sample_id_patterns(predicate)
        if patterns is not None:
            check_patterns(patterns, self.known_ids or [str(s.id) for s in self], len(out), self.name)
        return out


def check_models(args: TaskArgs) -> None:
    """Under `inspect eval` the model and roles are known while the task is built: a run that
    needs a model it does not have stops here, before any sample starts."""
    model = active_model()
    if model is None:  # built outside an eval (Python); the solver reports it per sample
        return
    keyless = "-T agent=oracle -T user=scripted --model none for a keyless run"
    if args.agent == "model" and is_none_model(model):
        raise Refusal(
            "-T agent=model (the default) evaluates --model, but --model is none: pass --model "
            f"PROVIDER/MODEL, or a built-in or your own agent with -T agent=..., or {keyless}"
        )
    if args.user == "llm" and is_none_model(get_model(role="user", default=model)):
        raise Refusal(
            "-T user=llm (the default) needs a model for the simulated user: bind --model-role "
            f"user=PROVIDER/MODEL or pass --model, or use -T user=scripted (or solo); or {keyless}"
        )


def remote_roles(args: TaskArgs) -> dict[str, Any]:
    """The model each role of this run calls: the agent's `--model` (`-T agent=model`), the LLM
    user's, and the judge's unless `-T judge=off` (the `grader` role, else the model under test,
    as scoring/scorer.grader); roles that call no model are left out."""
    model = active_model()
    if model is None:  # built outside an eval: nothing is known of the run's models
        return {}
    roles: dict[str, Any] = {
        "agent": model if args.agent == "model" else None,
        "user": get_model(role="user", default=model) if args.user == "llm" else None,
        "grader": get_model(role="grader", default=model) if args.judge != "off" else None,
    }
    return {role: m for role, m in roles.items() if m is not None and not is_none_model(m)}


def agent_name(args: TaskArgs) -> str:
    """The agent under test as a reader knows it: the built-in's or class's name, the A2A URL."""
    if args.agent == "a2a":
        return f"a2a {args.agent_url}"
    return args.agent


def run_tags(args: TaskArgs) -> list[str]:
    tags = [f"agent={agent_name(args)}", f"user={args.user}"]
    tags += [f"{k}={getattr(args, k)}" for k in ("ablation", "shard") if getattr(args, k)]
    return tags


def register_hooks() -> None:
    """Register our Inspect hooks (importing a module with `@hooks` registers it): the end-of-run
    error summary and the check that a run which lost samples exits non-zero. Here, when a
    pi-bench task is built, and not in the entry point: Inspect imports every `inspect_ai` entry
    point in every run, and lists every registered hook at start-up ("hooks enabled: ..."), so
    runs of other tasks showed ours. Inspect reads the registry at every hook call, so hooks
    registered while the tasks are built take part in the run."""
    from .reports import console  # noqa: F401
    from .runtime import run_check  # noqa: F401


def pibench_task(domain: str | None, **task_args: Any) -> Task:
    """The Task for one domain (or every domain with `domain=None`) from unchecked arguments."""
    return build_task(domain, parse_args(task_args))


def domain_task(domain: str | None) -> Callable[[Callable[[], Any]], Callable[..., Task]]:
    """Under `@task`, in a task file: the function (its docstring is the task's description)
    becomes the Task of `domain` (None: every domain) with the `-T` parameters declared once in
    task_args.py. The task files stay a decorated `def`, which is how Inspect finds a file's
    tasks (it reads the source for `@task` functions)."""

    def make(fn: Callable[[], Any]) -> Callable[..., Task]:
        @wraps(fn)
        def for_domain(args: TaskArgs) -> Task:
            return build_task(domain, args)

        return task_arguments()(for_domain)

    return make


def build_task(domain: str | None, args: TaskArgs) -> Task:
    """The Task for one domain (or every domain with `domain=None`)."""
    register_hooks()
    for role, seated in (("agent", SEATED_AGENTS), ("user", SEATED_USERS)):
        if getattr(args, role) in seated:  # only `pibench play` (a person) or an environment seats one
            require_seat(role, getattr(args, role))
    check_models(args)
    if args.model_check:  # a model nothing answers for stops the run now, in one line
        from .providers.model_check import require_reachable as require_models

        require_models(remote_roles(args))
    if ":" in args.agent:  # a module:Class agent: loadable, and its own preflight passes (credentials)
        from .local.adapter import check_agent

        try:
            check_agent(args.agent, args.agent_args)
        except PrerequisiteError:  # a missing key: already one line
            raise
        except ValueError as err:  # already names -T agent=...; said in one line, no traceback
            raise Refusal(str(err)) from None
    # `--sample-id`, read before Inspect filters the dataset with it: only what runs is loaded
    # (an ablation may need the family's other variants: everything is loaded for it)
    wanted = None if args.ablation else eval_sample_ids()
    try:
        scenario_set: ScenarioSet = load_set(args.source, only=sample_id_matcher(wanted) if wanted else None)
    except FileNotFoundError as err:
        why = str(err).split(": ", 1)[-1]  # "source PATH: no scenarios/ folder (...)"
        raise Refusal(f"-T source={args.source}: {why}; pass a folder holding scenarios/ and domains/") from None
    for err in scenario_set.errors:
        logger.warning("skipping invalid scenario input: %s", err)
    entries = (
        list(scenario_set.entries.values()) if domain is None else scenario_set.by_domain(domain)
    )
    known = None
    if wanted:  # every id of the task, for naming the closest to a pattern that matches none
        known = [e.scenario.scenario_id for e in entries] + [
            sid for sid, d in scenario_set.unloaded.items() if domain is None or d == domain]
        if not entries:  # nothing to run: refused now (a pattern of several that matches none is
            check_patterns(wanted, known, 0, domain or "pibench")  # said when Inspect filters)
    if not entries:
        where = f"domain {domain!r}" if domain else "any domain"
        raise Refusal(f"no valid scenarios for {where} under {scenario_set.source or 'the package data'}")
    chosen = select(entries, args, partial=bool(wanted))
    chosen = drop_invalid(chosen)
    if args.ablation:
        chosen = apply_ablation(chosen, args.ablation, scenario_set)
    if "a2a" in (args.agent, args.user):
        from .a2a.reachable import require_reachable

        require_reachable(args)  # a dead URL stops the run here, in one line, not per sample
    source = str(scenario_set.source) if scenario_set.source else None
    return Task(
        dataset=ScenarioDataset([sample_for(e, args.ablation, args.label) for e in chosen], name=domain or "pibench",
                                known_ids=known),
        # shown under the task's name in `inspect view` (its header and the log list's Tags
        # column): a built-in, local or A2A agent has no model to tell its runs apart by
        tags=run_tags(args),
        solver=conversation(scenario_set.resolve, args),
        # arguments Inspect records in the log, so `inspect score` rebuilds this scorer
        scorer=pibench_scorer(source=source, judge=args.judge, parity=args.parity, scenarios=scenario_set),
        metadata={
            "pibench": args.model_dump(),
            "domain": domain or "all",
            "scenario_set": content_hash(source),
            # what each metric is, in one line (docs/metrics.md); the viewer's Task tab shows it
            "metrics": dict(METRIC_DESCRIPTIONS),
            # how to read each sample's store `pibench:state_changes` (environment/merge.py)
            "state_changes": dict(DIFF_LEGEND),
            # once per log, not in each sample's system message (conversation/prompts.policy_shared)
            **({"policies": shared_policies({id(e.domain): e.domain for e in chosen}.values())}
               if policy_shared(args.agent) else {}),
        },
    )
