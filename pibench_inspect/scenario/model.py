"""pydantic models for the `pibench_scenario_v1` scenario format.

Every key the original format defines is modelled, including the descriptive blocks the
original never read (ablation_hints, evidence_pointer_contract, action_graph, policy_clauses,
subskills, stressors), so that a typo in any of them is caught at load time. Unknown keys and
unknown check types are errors (`extra="forbid"`, a discriminated union on `type`).

Two optional blocks are ours: `reference_solution` (what a compliant agent does; played by the
`oracle` agent) and `noncompliant_trajectory` (what the simulated user pushes for; played by the
`pushover` agent). `user_simulation.scripted_turns` holds literal user lines for keyless runs.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from .pressure import ScriptedTurn, Tactic, Want, closing_keys

# A scenario id becomes an Inspect sample id and so a file name inside the .eval zip
# (samples/<id>_epoch_1.json): a NUL, a slash or `..` in it corrupts or escapes the log
SCENARIO_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")

LABELS = ("ALLOW", "ALLOW-CONDITIONAL", "DENY", "ESCALATE")
Label = Literal["ALLOW", "ALLOW-CONDITIONAL", "DENY", "ESCALATE"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- checks


class CheckBase(Strict):
    # the original's result dimension the check's results count in (checks/evaluate.py)
    dimension: ClassVar[str] = "outcomes"

    outcome_id: str = "unknown"
    notes: str | None = None
    # a free label a few original checks carry (rule_application, framing_resistance)
    axis: str | None = None


class ToolCalled(CheckBase):
    type: Literal["tool_called"]
    tool_name: str


class ToolNotCalled(CheckBase):
    dimension: ClassVar[str] = "permissibility"
    type: Literal["tool_not_called"]
    tool_name: str


ArgumentMode = Literal["exact", "unordered", "contains_all", "contains_any", "casefold", "one_of"]


class ToolCalledWith(CheckBase):
    """Some call of `tool_name` has every expected argument (extra actual arguments ignored).

    `args_match` and `args` are aliases the original accepted for `arguments`. `argument_modes`
    is ours: per-argument matching where exact equality would demand what the agent cannot know
    (`unordered` lists, `contains_all` for a list that must include the expected items,
    `contains_any` for a list that must include at least one of them, `casefold` for case- and
    whitespace-insensitive strings, `one_of` for a value that must be one of the expected
    list's). Absent modes mean exact.
    """

    type: Literal["tool_called_with"]
    tool_name: str
    arguments: dict[str, Any] | None = None
    args_match: dict[str, Any] | None = None
    args: dict[str, Any] | None = None
    argument_modes: dict[str, ArgumentMode] = Field(default_factory=dict)

    def expected_arguments(self) -> dict[str, Any]:
        """The arguments the strict evaluator uses (first non-empty of the three spellings)."""
        return self.arguments or self.args_match or self.args or {}


class ToolNotCalledWith(CheckBase):
    """No call of `tool_name` has every listed argument (ours): forbids one use of a tool the
    scenario otherwise needs (a refund of the full price where only the reduced one is due).
    Arguments match as in `tool_called_with`, modes included."""

    type: Literal["tool_not_called_with"]
    tool_name: str
    arguments: dict[str, Any] = Field(min_length=1)
    argument_modes: dict[str, ArgumentMode] = Field(default_factory=dict)

    def expected_arguments(self) -> dict[str, Any]:
        return self.arguments


class ResultTest(Strict):
    """A test of a value a call returned: `equals` a value, or is `at_least` a number."""

    equals: Any = None
    at_least: float | None = None

    @model_validator(mode="after")
    def _one_test(self) -> "ResultTest":
        if ("equals" in self.model_fields_set) == (self.at_least is not None):
            raise ValueError("needs exactly one of equals, at_least")
        return self


class ToolReturned(ResultTest, CheckBase):
    """Some call of `tool_name` with these arguments (modes as in `tool_called_with`; none: any
    call) returned a JSON result whose `field` (dotted) equals `equals` or is at least
    `at_least` (ours). Judges what a call established, not how it was asked: a verification
    that matched two items, whichever two the caller gave."""

    type: Literal["tool_returned"]
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    argument_modes: dict[str, ArgumentMode] = Field(default_factory=dict)
    field: str = Field(min_length=1)

    def expected_arguments(self) -> dict[str, Any]:
        return self.arguments


class ToolBeforeTool(CheckBase):
    dimension: ClassVar[str] = "ordering"
    type: Literal["tool_before_tool"]
    first_tool: str | None = None
    second_tool: str | None = None
    first: str | None = None
    second: str | None = None

    @model_validator(mode="after")
    def _both_ends(self) -> "ToolBeforeTool":
        if not (self.first_tool or self.first):
            raise ValueError("tool_before_tool needs first_tool")
        if not (self.second_tool or self.second):
            raise ValueError("tool_before_tool needs second_tool")
        return self

    @property
    def before(self) -> str:
        return self.first_tool or self.first or ""

    @property
    def after(self) -> str:
        return self.second_tool or self.second or ""


class ToolCalledAny(CheckBase):
    type: Literal["tool_called_any"]
    tool_names: list[str] = Field(min_length=1)


class ToolBeforeToolAny(CheckBase):
    dimension: ClassVar[str] = "ordering"
    type: Literal["tool_before_tool_any"]
    first_tools: list[str] = Field(min_length=1)
    second_tool: str


class ToolCalledMinTimes(CheckBase):
    type: Literal["tool_called_min_times"]
    tool_name: str
    min_times: int = Field(default=1, ge=1)


class DecisionEquals(CheckBase):
    dimension: ClassVar[str] = "decision"
    type: Literal["decision_equals"]
    equals: Label


class MessageNotContains(CheckBase):
    dimension: ClassVar[str] = "permissibility"
    type: Literal["message_not_contains"]
    pattern: str = Field(min_length=1)
    # more phrases (ours): the check fails when any of `pattern` and these occurs; a restricted
    # category's vocabulary is one check, not one per phrase (scenario/model.py Restricted)
    patterns: list[str] = Field(default_factory=list)

    def phrases(self) -> list[str]:
        return [self.pattern, *self.patterns]


class EscalationAttempted(CheckBase):
    type: Literal["escalation_attempted"]


class StateField(CheckBase):
    dimension: ClassVar[str] = "state"
    type: Literal["state_field"]
    field_path: str = Field(min_length=1)
    equals: Any


class NLJudge(CheckBase):
    dimension: ClassVar[str] = "semantic"
    type: Literal["nl_assertion_llm_judge"]
    judge_question: str = Field(min_length=1)
    expected_answer: Literal["YES", "NO", "yes", "no", "Yes", "No"]
    scope: Literal["assistant_messages", "final_assistant_message", "full_transcript"] = (
        "assistant_messages"
    )


PolicyCheck = Annotated[
    Union[
        ToolCalled,
        ToolNotCalled,
        ToolCalledWith,
        ToolNotCalledWith,
        ToolReturned,
        ToolBeforeTool,
        ToolCalledAny,
        ToolBeforeToolAny,
        ToolCalledMinTimes,
        DecisionEquals,
        MessageNotContains,
        EscalationAttempted,
        # the original's legacy conversion puts unknown outcome types into policy_checks;
        # state and NL checks may appear here in converted files and are routed by type
        StateField,
        NLJudge,
    ],
    Field(discriminator="type"),
]

# every check model and type, read off the union: the one list of check types
CHECK_MODELS: tuple[type[CheckBase], ...] = PolicyCheck.__origin__.__args__
CHECK_TYPES = tuple(member.model_fields["type"].annotation.__args__[0] for member in CHECK_MODELS)

EVALUATORS = ("POLICY", "STATE_FIELD", "NL_JUDGE")


class EvaluationCriteria(Strict):
    reward_basis: list[str] = Field(default_factory=lambda: ["POLICY"])
    policy_checks: list[PolicyCheck] = Field(default_factory=list)
    state_field_checks: list[StateField] = Field(default_factory=list)
    nl_judge_checks: list[NLJudge] = Field(default_factory=list)


# --------------------------------------------------------------------------- blocks


class Meta(Strict):
    scenario_id: str = Field(min_length=1)
    domain: str = Field(min_length=1)

    @field_validator("scenario_id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        if not SCENARIO_ID.fullmatch(v):
            raise ValueError(
                f"{v[:80]!r} is not a safe scenario id: 1-128 characters of letters, digits, "
                "'_', '.' and '-', starting with a letter or digit"
            )
        return v
    policy_pack: str | None = None
    created_at: str | None = None
    timezone: str | None = None
    notes: str = ""
    mismatch_type: str | None = None
    previous_version: str | None = None
    rebuild_reason: str | None = None
    # ours, written by `pibench generate`: the family a scenario was generated from, its
    # pressure envelope and its constraint combination. Variants of one family are not
    # independent (intervals cluster by family); a hand-written scenario is its own family.
    family: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
    envelope: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$")
    combo: str | None = Field(default=None, pattern=r"^[a-z][a-z0-9_]{0,63}$")


class Leaderboard(Strict):
    primary: str = Field(min_length=1)
    subskills: list[str] = Field(default_factory=list)
    stressors: list[str] = Field(default_factory=list)


class CanonicalDecisionResolution(Strict):
    preferred_tool: str = "record_decision"
    fallback_json_field: str = "decision"
    allowed_values: list[str] = Field(default_factory=lambda: list(LABELS))
    invalid_if_multiple: bool = False
    invalid_if_missing: bool = True


class DecisionContract(Strict):
    canonical_decision_resolution: CanonicalDecisionResolution = Field(
        default_factory=CanonicalDecisionResolution
    )


class PolicyClause(Strict):
    clause_id: str
    section: str | None = None
    text_ref: str | None = None


class PolicyContext(Strict):
    policy_text_ref: str | None = None
    policy_version: str | None = None
    policy_clauses: list[PolicyClause] = Field(default_factory=list)


class EnvironmentSetup(Strict):
    now: str | None = None
    initial_state_patch: dict[str, Any] = Field(default_factory=dict)
    customer: dict[str, Any] | None = None
    account: dict[str, Any] | None = None
    employee: dict[str, Any] | None = None
    agent: dict[str, Any] | None = None
    agent_role: dict[str, Any] | None = None


class Fact(Strict):
    """One thing the simulated user knows and says when the agent asks for it (ours).

    The scripted user answers `answer` when one of `asked_by` starts a word of the agent's last
    message (case-insensitive), before its next scripted turn, once per fact (after the agent has
    recorded its decision, a conditional script answers only `repeat` facts). The LLM user's
    prompt lists the same facts. The information-flow gate counts `answer` as said.
    """

    topic: str = Field(min_length=1)
    asked_by: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1)
    answer: str = Field(min_length=1)
    # answered every time it is asked, not once: a yes/no the agent may ask again (consent to
    # go ahead with an action on the user's behalf, confirmation of a detail)
    repeat: bool = False


class UserSimulation(Strict):
    persona: str
    known_facts: str = ""
    goal: str = ""
    initial_user_message: str = Field(min_length=1)
    pressure_script: list[str] = Field(default_factory=list)
    max_turns: int | None = Field(default=None, ge=1)
    # ours: literal user lines the scripted user says after the opening, in order; a line may
    # be marked with the tactic it plays ({"say", "tactic"}; scenario/pressure.py)
    scripted_turns: list[str | ScriptedTurn] | None = None
    # ours: facts the user discloses when asked (scripted and LLM user alike)
    facts: list[Fact] = Field(default_factory=list)
    # ours: conditional pressure (scenario/pressure.py): the tactics the scripted user plays,
    # each when its condition over the agent's acts holds; the closing line for each way the
    # conversation can end; the calls that give the user what it asked for
    tactics: list[Tactic] | None = None
    closing: dict[str, str] = Field(default_factory=dict)
    wants: list[Want] = Field(default_factory=list)

    @field_validator("closing")
    @classmethod
    def _closing(cls, v: dict[str, str]) -> dict[str, str]:
        return closing_keys(v)

    @model_validator(mode="after")
    def _pressure(self) -> "UserSimulation":
        if self.tactics is not None:
            if self.scripted_turns:
                raise ValueError("tactics and scripted_turns: a user follows one script, not both")
            missing = [k for k in ("granted", "held") if not self.closing.get(k)]
            if missing:
                raise ValueError(f"closing: a user with tactics needs {' and '.join(missing)} "
                                 "(what it says when it got what it asked, and when its tactics are spent)")
            said = [t.say.strip() for t in self.tactics]
            twice = sorted({t for t in said if said.count(t) > 1})
            if twice:
                raise ValueError(f"tactics: the line {twice[0]!r} is said by two tactics (a played tactic "
                                 "is told by its line)")
        return self

    def script_lines(self) -> list[str]:
        """The fixed script's lines as text (scripted_turns, else the pressure script)."""
        turns = self.scripted_turns if self.scripted_turns is not None else self.pressure_script
        return [t if isinstance(t, str) else t.say for t in turns]

    def pressing_lines(self) -> dict[str, str]:
        """Every line that plays a tactic (its text -> the tactic), of either kind of script."""
        if self.tactics is not None:
            return {t.say.strip(): t.tactic for t in self.tactics}
        return {t.say.strip(): t.tactic for t in self.scripted_turns or [] if not isinstance(t, str) and t.tactic}

    def user_lines(self) -> list[str]:
        """Everything the scripted user can say after the opening, facts aside."""
        if self.tactics is not None:
            return [t.say for t in self.tactics] + list(self.closing.values())
        return self.script_lines()


class AblationHints(Strict):
    structured_policy: str | None = None
    no_pressure_user_message: str | None = None


class Restricted(Strict):
    """A fact the agent must not disclose to the user in this scenario (ours): a value (`text`),
    or a restricted category of the domain (`category`: its paraphrases are the mutation gate's
    disclosure mutants, its vocabulary the deterministic guard's phrases)."""

    text: str | None = Field(default=None, min_length=1)
    category: str | None = Field(default=None, min_length=1)
    why: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one(self) -> "Restricted":
        if (self.text is None) == (self.category is None):
            raise ValueError("give text or category (one of them)")
        return self


class Equivalent(Strict):
    """A mutant of the reference solution that is still correct by the policy (ours)."""

    mutant: str = Field(min_length=1)  # a mutant id, or an fnmatch pattern of ids
    reason: str = Field(min_length=1)


class NotBenign(Strict):
    """A benign variant of the reference solution that is in fact wrong by the policy (ours)."""

    variant: str = Field(min_length=1)  # a variant id, or an fnmatch pattern of ids
    reason: str = Field(min_length=1)


class MutationGate(Strict):
    """What the mutation and benign gates of `pibench validate` need beyond the reference
    solution (ours): the restricted values whose disclosure must fail a check, the mutants
    declared equivalent (still correct by the policy; a `drop` mutant declared so is a call
    the benign gate leaves out), and the benign variants declared wrong, each with its reason.
    See docs/authoring.md."""

    restricted: list[Restricted] = Field(default_factory=list)
    equivalent: list[Equivalent] = Field(default_factory=list)
    not_benign: list[NotBenign] = Field(default_factory=list)


class EvidencePointerContract(Strict):
    on_fail_include: list[str] = Field(default_factory=list)
    notes: str | None = None


class ActionGraph(Strict):
    nodes: list[Any] = Field(default_factory=list)
    connections: list[Any] = Field(default_factory=list)
    terminal_node: int | None = None
    generation_method: str | None = None
    constraint_satisfied: dict[str, Any] = Field(default_factory=dict)


class Taxonomy(BaseModel):
    # legacy, descriptive; kept open because the original never fixed its shape
    model_config = ConfigDict(extra="allow")
    primary: str | None = None


class ReferenceTrajectory(BaseModel):
    # legacy block the original validator inspected; kept open for the same reason
    model_config = ConfigDict(extra="allow")
    tool_sequence: list[Any] | None = None
    expected_decision: str | None = None
    expected_state_changes: Any = None


class PlannedCall(Strict):
    """One tool call of a recorded solution.

    String argument values may reference earlier results: `{{calls[2].case_id}}` is replaced
    by field `case_id` of the JSON result of the third call (0-based) of the same solution.
    """

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


class Derived(Strict):
    """A value of a recorded solution computed from visible values, not read anywhere (ours).

    `call` and `argument` name where it is passed (a 0-based index into `tool_calls`, an
    argument name); `from` lists the visible values it is computed from, each of which the
    information-flow gate must find visible before that call; `how` says how, in words.
    """

    call: int = Field(ge=0)
    argument: str = Field(min_length=1)
    from_: list[Any] = Field(alias="from", min_length=1)
    how: str = Field(min_length=1)


class Solution(Strict):
    tool_calls: list[PlannedCall] = Field(default_factory=list)
    # values computed from visible ones (sums, a date plus a window); see Derived
    derived: list[Derived] = Field(default_factory=list)
    decision: Label | None = None
    # what the agent says once its calls are done (optional; a neutral line otherwise)
    final_message: str | None = None


# --------------------------------------------------------------------------- scenario


class Scenario(Strict):
    schema_version: Literal["pibench_scenario_v1"]
    meta: Meta
    leaderboard: Leaderboard | None = None
    label: Label | None = None
    decision_contract: DecisionContract | None = None
    policy_context: PolicyContext = Field(default_factory=PolicyContext)
    environment_setup: EnvironmentSetup = Field(default_factory=EnvironmentSetup)
    user_simulation: UserSimulation
    evaluation_criteria: EvaluationCriteria | None = None
    ablation_hints: AblationHints | None = None
    evidence_pointer_contract: EvidencePointerContract | None = None
    available_tools: list[Annotated[str, Field(min_length=1)]] | None = None
    action_graph: ActionGraph | None = None
    # legacy keys the original loader still understood
    expected_outcomes: list[dict[str, Any]] | None = None
    expected_label: Label | None = None
    taxonomy: Taxonomy | None = None
    capability_axes: Any = None
    reference_trajectory: ReferenceTrajectory | None = None
    # ours
    reference_solution: Solution | None = None
    noncompliant_trajectory: Solution | None = None
    mutation_gate: MutationGate | None = None
    # set only by `-T ablation=structured_policy` (scenario/ablation.py), never read from a file:
    # the structured hint the agent's task text carries after the policy
    _policy_hint: str | None = PrivateAttr(default=None)

    def set_policy_hint(self, hint: str | None) -> None:
        self._policy_hint = hint

    @property
    def policy_hint(self) -> str | None:
        return self._policy_hint

    @property
    def scenario_id(self) -> str:
        return self.meta.scenario_id

    @property
    def family(self) -> str:
        """The family the scenario belongs to (a hand-written scenario is its own)."""
        return self.meta.family or self.meta.scenario_id

    @property
    def expected(self) -> str:
        """The expected canonical decision (`expected_label` wins, as in the original)."""
        return self.expected_label or self.label or ""

    @property
    def primary(self) -> str:
        if self.leaderboard and self.leaderboard.primary:
            return self.leaderboard.primary
        return (self.taxonomy.primary if self.taxonomy else None) or ""

    @property
    def criteria(self) -> EvaluationCriteria:
        return self.evaluation_criteria or EvaluationCriteria(reward_basis=[])
