"""The general eval case of seed 001 (12.10 generic fields, 12.11 extensions, 12.9.6 reviews), strictly.

Field names are 001's snake_case names. Every model forbids unknown keys, so a typo is an error naming file,
case and field with the closest known name, never an expectation quietly dropped. Where 001 allows a string or
a structure, the shape decides which model reads it (`_by_shape`), so a mistake is reported once, against the
shape that was written, instead of once per alternative.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from datetime import date
from functools import cached_property
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import orjson
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from diagbot.core import values
from diagbot.core.models import StrictInput
from diagbot.core.query import valid_query
from diagbot.core.regex import compile_regex, matches_empty, valid_regex

Role = Literal["golden", "regression", "hard_case", "red_team", "manual_review"]
ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]
RiskLevel = Literal["P0", "P1", "P2", "P3"]
Difficulty = Literal["Easy", "Medium", "Hard", "Hard Negative", "Adversarial"]
ReviewStatus = Literal["draft", "needs_revision", "approved", "rejected"]
TraceField = Literal["action", "tool_call", "observation", "state_change", "final_state"]
_SHAPES = ("text", "list", "object", "other")
SHAPE_TAGS = frozenset(f"<{shape}>" for shape in _SHAPES)  # what `_by_shape` adds to error locations: no key of a case
CASE_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}"  # also a file or folder name under the fixtures
MAX_ITEMS = 1_000  # items in any one list of a case (expected calls, criteria, policies...)
MAX_COUNT = 10**9  # the largest count a case may give (calls, turns, characters)
MAX_MS = 10.0**12  # the largest duration a case may give, in milliseconds (about 30 years)

Regex = Annotated[str, AfterValidator(valid_regex)]


def _finds_something(pattern: str) -> str:
    if matches_empty(pattern):  # `""`, `x*`, `refunded|`: it matches every text, so the check decides nothing
        raise ValueError(
            f"the pattern {values.one_line(pattern, 80)!r} matches empty text, so it matches every text and checks "
            "nothing; write what must (or must not) be there"
        )
    return pattern


TextPattern = Annotated[str, AfterValidator(valid_regex), AfterValidator(_finds_something)]
Query = Annotated[str, AfterValidator(valid_query)]
Texts = Annotated[list[str], Field(max_length=MAX_ITEMS)]
Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]  # a rate from 0 to 1


def _needle(value: str) -> str:
    if not value.strip():
        raise ValueError("an empty text (or only spaces) names nothing to look for; write the words or the tool's name")
    return value


def _visible(value: str) -> str:
    """The comment collapses whitespace and shows invisible characters escaped (`\\u200b`), but for a soft hyphen:
    two versions that differ in what it does not show would read as one."""
    if " ".join(value.split()) != value or "\u00ad" in value or any(unicodedata.category(c) == "Cc" for c in value):
        raise ValueError(
            "a version is compared exactly and shown in the comment, which collapses spaces: no leading, trailing "
            "or repeated spaces, no space but U+0020, and no control character or soft hyphen (a changed one "
            "would read as the same version there)"
        )
    return value


Version = Annotated[str, Field(min_length=1, max_length=200), AfterValidator(_visible)]


def _said(value: str) -> str:
    if not value.strip():
        raise ValueError("expected a text, found a blank one: say it in words (it names the case to people)")
    return value


Said = Annotated[str, AfterValidator(_said)]  # a required text of the case's identity, never blank


def _day(value: Any) -> Any:
    """A calendar day written `YYYY-MM-DD` (diagbot's YAML loader gives dates as text, as JSON does), or a date
    built in Python: not a number, which pydantic reads as seconds since 1970 (`0` lapsed in 1970), nor a time of
    day. The message leaves the value to the caller, which quotes it cut short."""
    if (isinstance(value, str) and _DAY.fullmatch(value)) or type(value) is date:
        return value
    raise ValueError("expected a date written YYYY-MM-DD")


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
Day = Annotated[date, BeforeValidator(_day)]
Needle = Annotated[str, AfterValidator(_needle)]  # a text looked for, or a tool's name
NeedleList = Annotated[list[Needle], Field(min_length=1, max_length=MAX_ITEMS)]  # a check of nothing never fails
NeedleTexts = Annotated[list[Needle], Field(max_length=MAX_ITEMS)]


def _shape(value: Any) -> str:
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    return "object" if isinstance(value, dict | BaseModel) else "other"  # a model: a case built in Python


_SHAPE_NAMES = {"text": "a string", "list": "a list", "object": "an object"}


def _by_shape(**branches: Any) -> Any:
    """A union read by the value's shape (a string, a list, an object): only that branch reports errors. A value
    of a shape it has no branch for (a number where a string or an object goes) is refused with the shapes it
    takes, in no published schema. The tags, which pydantic puts in an error's location, are `<text>` and so on,
    so that no key a case may have (`other`) is taken for one."""
    tag_of = {shape: f"<{shape if shape in branches else 'other'}>" for shape in _SHAPES}
    by_type: dict[type, str] = {str: tag_of["text"], list: tag_of["list"], dict: tag_of["object"]}  # YAML, JSON
    names = [_SHAPE_NAMES[shape] for shape in branches]
    takes = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)

    def pick(value: Any) -> str:
        return by_type.get(type(value)) or tag_of[_shape(value)]

    def refuse(value: Any) -> Any:
        raise ValueError(f"expected {takes}")

    tagged = tuple(Annotated[kind, Tag(f"<{shape}>")] for shape, kind in branches.items())
    other = Annotated[SkipJsonSchema[Any], BeforeValidator(refuse), Tag("<other>")]
    return Annotated[Union[(*tagged, other)], Discriminator(pick)]  # built at run time


class Model(StrictInput):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


# --- check objects ---------------------------------------------------------------------------------------------


class AnyAll(Model):
    any_of: NeedleTexts | None = Field(None, alias="any", min_length=1)
    all_of: NeedleTexts | None = Field(None, alias="all", min_length=1)

    @model_validator(mode="after")
    def _one(self) -> AnyAll:
        if (self.any_of is None) == (self.all_of is None):
            raise ValueError("give exactly one of 'any' or 'all'")
        return self


class ToolArgs(Model):
    tool: str = Field(min_length=1)
    args: dict[str, Any] | None = None


class CalledBefore(Model):
    first: str = Field(min_length=1)
    then: str = Field(min_length=1)


class StateQuery(Model):
    id: str | None = None
    expr: Query
    equals: Any = None

    @property
    def has_expected(self) -> bool:
        return "equals" in self.model_fields_set


if TYPE_CHECKING:  # what the shape-read unions are, for the type checker
    ContainsSpec = list[str] | AnyAll
    TextOrTexts = str | list[str]
    Needles = str | list[str]
    ToolRef = str | ToolArgs
else:
    ContainsSpec = _by_shape(list=NeedleList, object=AnyAll)
    TextOrTexts = _by_shape(text=str, list=Texts)
    Needles = _by_shape(text=Needle, list=NeedleList)
    ToolRef = _by_shape(text=Needle, object=ToolArgs)


CHECK_KEYS = (
    "answer_contains",
    "answer_not_contains",
    "answer_matches",
    "answer_not_matches",
    "replies_contain",
    "replies_matches",
    "replies_not_matches",
    "tool_called",
    "tool_not_called",
    "called_before",
    "max_tool_calls",
    "max_turns",
    "max_duration_ms",
    "state",
)


class Check(Model):
    """One machine check on a run: exactly one of CHECK_KEYS, and an optional id that failures name."""

    id: str | None = Field(None, min_length=1, max_length=200)
    answer_contains: ContainsSpec | None = None
    answer_not_contains: Needles | None = None
    answer_matches: TextPattern | None = None
    answer_not_matches: TextPattern | None = None
    replies_contain: ContainsSpec | None = None
    replies_matches: TextPattern | None = None  # some reply matches (each searched as the answer is)
    replies_not_matches: TextPattern | None = None  # no reply matches: a card number said before the last reply fails
    tool_called: ToolRef | None = None
    tool_not_called: Needles | None = None
    called_before: CalledBefore | None = None
    max_tool_calls: int | None = Field(None, ge=0, le=MAX_COUNT)
    max_turns: int | None = Field(None, ge=0, le=MAX_COUNT)
    max_duration_ms: float | None = Field(None, ge=0, le=MAX_MS, allow_inf_nan=False)
    state: StateQuery | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Check:
        given = [key for key in CHECK_KEYS if key in self.model_fields_set and getattr(self, key) is not None]
        if len(given) != 1:
            found = f"found {', '.join(given)}" if given else "found none"
            raise ValueError(f"a check object takes exactly one of {', '.join(CHECK_KEYS)} ({found})")
        return self

    @cached_property
    def key(self) -> str:  # computed once: every trial of every case asks
        return next(key for key in CHECK_KEYS if getattr(self, key) is not None)

    @property
    def value(self) -> Any:
        return getattr(self, self.key)


if TYPE_CHECKING:
    TextOrCheck = str | Check
    RuleRef = str | Check
else:
    TextOrCheck = _by_shape(text=str, object=Check)
    RuleRef = _by_shape(text=Annotated[str, Field(min_length=1)], object=Check)
Criteria = Annotated[list[TextOrCheck], Field(max_length=MAX_ITEMS)]


# --- governance --------------------------------------------------------------------------------------------------


class UsageRights(Model):
    status: str = Field(min_length=1)
    allowed_uses: Texts | None = None
    access_scope: str | None = None
    retain_until: Day | None = Field(None, strict=False)  # a day, YYYY-MM-DD


if TYPE_CHECKING:
    Rights = str | UsageRights
else:
    Rights = _by_shape(text=str, object=UsageRights)


class Metadata(Model):
    dataset_role: Role
    tags: Texts
    owner: str = Field(min_length=1)
    review_status: ReviewStatus
    usage_rights_status: Rights

    @property
    def rights(self) -> str:
        rights = self.usage_rights_status
        return rights.status if isinstance(rights, UsageRights) else str(rights)

    @property
    def retain_until(self) -> date | None:
        rights = self.usage_rights_status
        return rights.retain_until if isinstance(rights, UsageRights) else None


class Review(Model):
    reviewer: str = Field(min_length=1)
    review_result: Literal["approved", "rejected", "needs_revision"]
    issue_type: TextOrTexts | None = None
    required_fix: str | None = None
    approved_for: Annotated[list[Role], Field(max_length=len(ROLES))] | None = None


# --- evaluator configuration -------------------------------------------------------------------------------------


if TYPE_CHECKING:
    Scope = Literal["all", "side_effect"] | list[str]
else:
    Scope = _by_shape(text=Literal["all", "side_effect"], list=Texts)


class ToolSequenceConfig(Model):
    match: Literal["subsequence", "strict", "unordered", "superset", "subset"] = "subsequence"
    scope: Scope = "all"
    ignore_failed: bool = False


class EvaluatorConfig(Model):
    tool_sequence: ToolSequenceConfig = ToolSequenceConfig()
    args_match: Literal["partial", "exact"] = "partial"
    rule_checks: Annotated[list[RuleRef], Field(max_length=MAX_ITEMS)] = Field(default_factory=list)
    judge: Any = None  # a judge or rubric run elsewhere: recorded, never machine-checked
    # the lowest passing value of a machine-checked RAG metric (see rag.py); 1.0 when not given
    thresholds: Annotated[dict[str, Share], Field(max_length=MAX_ITEMS)] = Field(default_factory=dict)


# --- Tool and side-effect fields (12.6, 12.6.1) -------------------------------------------------------------------


class ToolSpec(Model):
    name: str = Field(min_length=1)
    side_effect: bool = False
    description: str | None = None


class Transition(Model):
    key: str | None = None
    from_: Any = Field(alias="from")
    to: Any


if TYPE_CHECKING:
    Transitions = str | list[str | Transition] | Transition
    Preconditions = list[dict[str, Any]] | dict[str, Any]
else:
    _TransitionItem = _by_shape(text=str, object=Transition)
    Transitions = _by_shape(
        text=str, list=Annotated[list[_TransitionItem], Field(max_length=MAX_ITEMS)], object=Transition
    )
    Preconditions = _by_shape(list=Annotated[list[dict[str, Any]], Field(max_length=MAX_ITEMS)], object=dict[str, Any])


_PATH = re.compile(r"([^.\[\]]+)((?:\[\d{1,6}\])*)", re.ASCII)  # an index is ASCII digits: not ٣ or ²
_INDEX = re.compile(r"\[(\d+)\]", re.ASCII)


def arg_path(path: str) -> list[str | int] | None:
    """An argument path as mismatch messages write plain keys (`items[0].id`; a key they quote, `["a.b"]`, cannot
    be named here) as its keys and indexes; None when the text is not one."""
    steps: list[str | int] = []
    for part in path.split(".") if len(path) <= 1000 else ():
        found = _PATH.fullmatch(part)
        if found is None:
            return None
        steps.append(found[1])
        steps += [int(index) for index in _INDEX.findall(found[2])]
    return steps or None


class SideEffectPolicy(Model):
    tool: str = Field(min_length=1)
    precondition: Preconditions | None = None
    confirmation_required: bool = False
    idempotency_key: TextOrTexts | None = None
    allowed_state_transition: Transitions | None = None
    forbidden_state_transition: Transitions | None = None
    audit_requirement: TextOrTexts | None = None

    @model_validator(mode="after")
    def _readable(self) -> SideEffectPolicy:
        """A precondition naming `called` is the whole item, `{called: TOOL}`: beside other keys, or with a value
        that is not a tool name, it was read as a state key called "called" and failed for the wrong reason. An
        idempotency path that is not one never found a repeat."""
        if self.precondition is not None and (not self.preconditions or not all(self.preconditions)):
            raise ValueError(
                "precondition (or an item of it) is empty, so it checks nothing: write {called: TOOL} or "
                "{STATE_KEY: VALUE} items, or leave precondition out"
            )
        for item in self.preconditions:
            if "called" in item and (len(item) != 1 or not isinstance(item["called"], str) or not item["called"]):
                raise ValueError(
                    "a precondition {called: TOOL} is an item of its own with a tool name: write each state key "
                    "as its own item, e.g. [{called: order_lookup}, {user_authenticated: true}]"
                )
        if self.idempotency_key is not None and not self.idempotency_paths:
            raise ValueError(
                "idempotency_key names no argument path, so it checks nothing: write the arguments that make two "
                "calls the same side effect (order_id + item_id, or a list of paths), or leave it out"
            )
        for path in self.idempotency_paths:
            if arg_path(path) is None:
                raise ValueError(
                    f"idempotency_key: {values.one_line(path, 100)!r} is not an argument path (a name, then .name "
                    "or [index] steps: order_id, refund.id, items[0].id)"
                )
        return self

    @property
    def preconditions(self) -> list[dict[str, Any]]:
        given = self.precondition
        return [] if given is None else [given] if isinstance(given, dict) else list(given)

    @property
    def idempotency_paths(self) -> list[str]:
        given = self.idempotency_key
        parts = given.split("+") if isinstance(given, str) else given or []
        return [part.strip() for part in parts if part.strip()]

    @property
    def audit_fields(self) -> list[str]:
        given = self.audit_requirement
        return [given] if isinstance(given, str) else list(given or [])

    @staticmethod
    def transitions(given: Any) -> list[Transition | str]:
        return [] if given is None else list(given) if isinstance(given, list) else [given]


class SequenceItem(Model):
    tool: str = Field(min_length=1)
    args: dict[str, Any] | None = None


class TraceRequirement(Model):
    required_fields: Annotated[list[TraceField], Field(max_length=5)] = Field(default_factory=list)


class Constraints(Model):
    must_include: NeedleTexts | None = None
    must_not_include: NeedleTexts | None = None
    max_chars: int | None = Field(None, ge=0, le=MAX_COUNT)
    format: Any = None  # prose: shown as not machine-checked
    tone: Any = None
    length: Any = None
    safety: Any = None


class ServiceLevel(Model):
    max_turns: int | None = Field(None, ge=0, le=MAX_COUNT)
    max_duration_ms: float | None = Field(None, ge=0, le=MAX_MS, allow_inf_nan=False)
    description: Any = None  # prose


class GoldEvidence(Model):
    doc_id: str = Field(min_length=1)
    passage_id: str | None = None
    required: bool = True


if TYPE_CHECKING:
    TextOrObject = str | dict[str, Any]
    Rubric = str | list[Any] | dict[str, Any]
    ToolEntry = str | ToolSpec
    SequenceEntry = str | SequenceItem
    ArgSets = list[dict[str, Any]] | dict[str, Any]
    Policies = list[SideEffectPolicy] | SideEffectPolicy
    StateChecks = list[StateQuery] | StateQuery
else:
    TextOrObject = _by_shape(text=str, object=dict[str, Any])
    Rubric = _by_shape(text=str, list=list[Any], object=dict[str, Any])
    ToolEntry = _by_shape(text=str, object=ToolSpec)
    SequenceEntry = _by_shape(text=str, object=SequenceItem)
    ArgSets = _by_shape(list=Annotated[list[dict[str, Any]], Field(max_length=MAX_ITEMS)], object=dict[str, Any])
    Policies = _by_shape(list=Annotated[list[SideEffectPolicy], Field(max_length=MAX_ITEMS)], object=SideEffectPolicy)
    StateChecks = _by_shape(list=Annotated[list[StateQuery], Field(max_length=MAX_ITEMS)], object=StateQuery)


MAX_SCHEMA_DEPTH = 64  # JSON levels of one tool_schema: checking it recurses about ten frames a level


def _regexes_in(schema: Any, tool: str) -> None:
    """Every `pattern` must run on RE2, and `patternProperties` is refused: jsonschema matches those keys with
    Python's backtracking `re` in several keywords, and a pull request writes them. The schema is at most
    MAX_SCHEMA_DEPTH levels deep, so that checking it cannot exhaust the stack."""
    todo = [(schema, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_SCHEMA_DEPTH and isinstance(node, list | dict):
            raise ValueError(
                f"the schema for {tool!r} is nested more than {MAX_SCHEMA_DEPTH} levels deep; flatten it ($defs and "
                "$ref name a shape once)"
            )
        if isinstance(node, list):
            todo.extend((item, depth + 1) for item in node)
        elif isinstance(node, dict):
            if "patternProperties" in node:
                raise ValueError(
                    f"the schema for {tool!r} uses patternProperties, which diagbot does not run; list the properties"
                )
            if isinstance(node.get("pattern"), str):
                try:
                    compile_regex(node["pattern"])
                except ValueError as exc:
                    raise ValueError(f"the schema for {tool!r} has pattern {node['pattern'][:60]!r}: {exc}") from None
            for key, value in node.items():
                if key in _SCHEMA_DATA or (isinstance(key, str) and key.startswith("x-")):
                    continue  # values, not schemas: a grep tool's example argument `{pattern: "foo(?=bar)"}`
                if key in _NAMED_SCHEMAS and isinstance(value, dict):  # names are not keywords: a property
                    todo.extend((schema, depth + 2) for schema in value.values())  # called `patternProperties`
                else:
                    todo.append((value, depth + 1))


_SCHEMA_DATA = frozenset(("default", "examples", "example", "const", "enum"))  # `example`: OpenAPI's
_NAMED_SCHEMAS = frozenset(("properties", "$defs", "definitions", "dependentSchemas", "dependencies"))


def _valid_schemas(schemas: dict[str, Any]) -> dict[str, Any]:
    import jsonschema  # only for cases that have a tool_schema: it takes longer to import than a trace suite to load

    from diagbot.kinds.agent.schema_check import draft_of

    for tool, schema in schemas.items():
        if not isinstance(schema, dict | bool):
            raise ValueError(f"the schema for {tool!r} must be a JSON Schema object")
        _regexes_in(schema, tool)
        try:
            draft = draft_of(schema)
        except ValueError as exc:
            raise ValueError(f"the schema for {tool!r} {exc}") from None
        try:
            draft.check_schema(schema)
        except jsonschema.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "top level"
            raise ValueError(
                f"the schema for {tool!r} is not a valid JSON Schema at {where}: {exc.message[:120]}"
            ) from None
        except RecursionError:  # a fallback: the depth bound above is set well below where jsonschema overflows
            raise ValueError(f"the schema for {tool!r} is nested too deeply to check; flatten it") from None
    return schemas


class AgentCase(Model):
    """One case. Required generic fields first (12.10), then the optional and extension fields (12.11)."""

    case_id: str = Field(pattern=f"^{CASE_ID_PATTERN}$")
    case_version: Version
    dataset_id: str = Field(min_length=1)
    dataset_version: Version
    title: Said
    scenario: Said
    user_task: Said
    ability_tags: Annotated[list[Said], Field(min_length=1, max_length=MAX_ITEMS)]
    risk_level: RiskLevel
    difficulty: Difficulty
    source: Said
    input: TextOrObject
    context: dict[str, Any] | None = None
    environment: dict[str, Any] | None = None
    expected_behavior: Annotated[list[TextOrCheck], Field(min_length=1, max_length=MAX_ITEMS)]
    negative_behavior: Criteria | None = None
    rubric: Rubric
    evaluator_config: EvaluatorConfig
    metadata: Metadata
    reviews: Annotated[list[Review], Field(max_length=MAX_ITEMS)] = Field(default_factory=list)
    # LLM (12.4)
    reference: Any = None
    constraints: Constraints | None = None
    generation_config: dict[str, Any] | None = None
    # Tool (12.6, 12.6.1)
    user_goal: Any = None
    state: dict[str, Any] | None = None
    available_tools: Annotated[list[ToolEntry], Field(max_length=MAX_ITEMS)] | None = None
    tool_schema: Annotated[dict[str, Any], AfterValidator(_valid_schemas)] | None = None
    expected_tool_sequence: Annotated[list[SequenceEntry], Field(max_length=MAX_ITEMS)] | None = None
    expected_args: Annotated[dict[str, ArgSets], Field(max_length=MAX_ITEMS)] | None = None
    expected_result_usage: Any = None
    side_effect_policy: Policies | None = None
    # Agent (12.7)
    goal: Any = None
    initial_state: dict[str, Any] | None = None
    interaction: Any = None
    trace_requirement: TraceRequirement | None = None
    success_criteria: Criteria | None = None
    failure_criteria: Criteria | None = None
    safety_constraints: Criteria | None = None
    final_state_check: StateChecks | None = None
    # Business (12.8)
    business_scenario: Any = None
    user_journey: Any = None
    sop: Any = None
    policy_constraints: Any = None
    service_level: ServiceLevel | None = None
    business_success: Any = None
    audit_requirement: Any = None
    # RAG (12.5): validated now, checked by the RAG checks
    environment_requirements: dict[str, Any] | None = None
    corpus_version: str | None = None
    gold_evidence: Annotated[list[GoldEvidence], Field(max_length=MAX_ITEMS)] | None = None
    context_policy: Any = None
    citation_requirement: Any = None
    evaluation_metrics: Texts | None = None

    @field_validator("reviews", mode="before")
    @classmethod
    def _no_null_reviews(cls, value: Any) -> Any:
        return [] if value is None else value

    @property
    def policies(self) -> list[SideEffectPolicy]:
        given = self.side_effect_policy
        return [] if given is None else [given] if isinstance(given, SideEffectPolicy) else list(given)

    @property
    def state_checks(self) -> list[StateQuery]:
        given = self.final_state_check
        return [] if given is None else [given] if isinstance(given, StateQuery) else list(given)

    @property
    def side_effect_tools(self) -> set[str]:
        marked = {t.name for t in self.available_tools or [] if isinstance(t, ToolSpec) and t.side_effect}
        return marked | {policy.tool for policy in self.policies}

    @property
    def tool_names(self) -> set[str] | None:
        if self.available_tools is None:
            return None
        return {t if isinstance(t, str) else t.name for t in self.available_tools}


FIELD_NAMES: tuple[str, ...] = tuple(AgentCase.model_fields)

CRITERIA_FIELDS = (  # the fields that hold check objects beside prose, and whether what they say must hold
    ("expected_behavior", True),
    ("success_criteria", True),
    ("safety_constraints", True),
    ("failure_criteria", False),
    ("negative_behavior", False),
)
PROSE_FIELDS = (
    "goal", "user_goal", "rubric", "reference", "expected_result_usage", "sop", "policy_constraints",
    "business_success", "user_journey", "audit_requirement", "context_policy", "citation_requirement", "gold_evidence",
)  # fmt: skip  # what a case expects in words: `interaction` and `business_scenario` describe the setting instead
# what no check reads: the case's identity, governance and setting, and its prose, but for what the RAG checks read
# (a set: pydantic excludes a frozenset slower)
_NOT_READ = {
    "case_id", "case_version", "dataset_id", "dataset_version", "title", "scenario", "user_task", "ability_tags",
    "risk_level", "difficulty", "source", "input", "context", "environment", "metadata", "reviews",
    "generation_config", "interaction", "business_scenario",
} | set(PROSE_FIELDS) - {"citation_requirement", "gold_evidence"}  # fmt: skip
_PROSE_INSIDE = {  # the words inside structured fields, for people too
    "evaluator_config": ("judge",),
    "service_level": ("description",),
    "constraints": ("format", "tone", "length", "safety"),
}


def checks_digest(case: AgentCase, rules: dict[str, Check]) -> str:
    """A digest of what the case's checks read: its check objects, the suite rules it names and their definitions,
    expected calls and arguments, policies, states, schemas, constraints and metrics, as written (fields left to
    their defaults are left out, so a diagbot that adds one changes no digest), keys sorted; not its prose,
    governance or identity. A baseline's differing from the current run's under one case_version says the contract
    changed without a new version, which the diff names: weakening a failing case's checks would otherwise pass it
    in silence."""
    given = case.model_dump(exclude=_NOT_READ, exclude_unset=True)  # `equals: null` given is not `equals` left out
    for name, _ in CRITERIA_FIELDS:  # the check objects among the prose
        checks = [item for item in given.pop(name, None) or () if not isinstance(item, str)]
        if checks:
            given[name] = checks
    for name, words in _PROSE_INSIDE.items():
        for word in words if isinstance(given.get(name), dict) else ():
            given[name].pop(word, None)
    for tool in given.get("available_tools") or ():
        if isinstance(tool, dict):
            tool.pop("description", None)
    named = [ref for ref in case.evaluator_config.rule_checks if isinstance(ref, str) and ref in rules]
    if named:
        given["suite rules"] = {ref: rules[ref].model_dump(exclude_unset=True) for ref in named}
    return hashlib.blake2b(_canonical(given), digest_size=8).hexdigest()


def _canonical(value: Any) -> bytes:
    """JSON with sorted keys. orjson refuses an integer past 64 bits and writes an infinity as null, so a text it
    cannot write, or one with a null in it, is written by json, which keeps both as they are."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except orjson.JSONEncodeError:
        text = b"null"
    if b"null" not in text:
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode("utf-8", "surrogatepass")
