"""The fixture fields the checks read, and the warnings that keep a misspelt one from passing silently.

A fixture is read leniently: keys diagbot does not know are skipped, so a guessed `toolInvocations[].tool` reads as
"no tool named" and a misspelt `totalDurationMs` as "no duration", and the case may still pass. After a suite is
evaluated, `FieldCensus` says which fields the checks read were absent in every fixture whose case relies on them,
and which keys look like a misspelling of a missing field next to them. Warnings only: no verdict changes.

The work is bounded, since it runs on every fixture of every suite. Presence is read from the parsed fixture
(`model_fields_set`), only for the fields not seen yet (so a suite whose fixtures hold them all soon costs next to
nothing), looking at the first `MAX_ITEMS` items of a list. Keys are compared only in fixtures that lack such a field,
in at most `MAX_EXAMINED` of them per suite (each decoded a second time for it), and at most `MAX_KEYS` keys of an
object.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, get_args

from pydantic import BaseModel

from diagbot.core import values
from diagbot.core.text import closest
from diagbot.kinds.trace.cases import TraceCase
from diagbot.kinds.trace.fixture import Trace

MAX_ITEMS = 100
"""Items of each list looked at, per fixture."""
MAX_EXAMINED = 20
"""Fixtures per suite whose keys are compared with the missing fields' names."""
MAX_KEYS = 200
"""Keys of one object compared."""
MAX_NEAR_MISSES = 20
"""Distinct near-miss warnings per suite."""

LIST = "[]"


class Need(StrEnum):
    """Which cases rely on a field: all of them, or those that ask for the check that reads it."""

    ALWAYS = "always"
    TOOLS = "tools"  # requiredEvidenceTools
    CLAIMS = "claims"  # requireV2AuditClosure, requireClaimChecks
    GATEKEEPER = "gatekeeper"  # requireV2AuditClosure, expectedGatekeeperStatuses, ...RuleSetVersion
    RULE_SET = "rule_set"  # expectedGatekeeperRuleSetVersion
    COMPOSER = "composer"  # requireV2AuditClosure, requireComposerOutput, expectedComposerStatuses


def needs(case: TraceCase) -> frozenset[Need]:
    """What `case` relies on (memoised on the few fields that decide it: a suite has few distinct answers)."""
    return _needs(
        bool(case.required_evidence_tools),
        case.require_v2_audit_closure,
        case.require_claim_checks,
        case.require_composer_output,
        bool(case.expected_gatekeeper_statuses),
        case.expected_gatekeeper_rule_set_version is not None,
        bool(case.expected_composer_statuses),
    )


@lru_cache(maxsize=128)
def _needs(tools: bool, v2: bool, claim_checks: bool, composer: bool, statuses: bool, rule_set: bool,
           composer_statuses: bool) -> frozenset[Need]:  # fmt: skip
    found = {Need.ALWAYS}
    found |= {Need.TOOLS} if tools else set()
    found |= {Need.CLAIMS} if v2 or claim_checks else set()
    found |= {Need.GATEKEEPER} if v2 or statuses or rule_set else set()
    found |= {Need.RULE_SET} if rule_set else set()
    found |= {Need.COMPOSER} if v2 or composer or composer_statuses else set()
    return frozenset(found)


@dataclass(frozen=True)
class FixtureField:
    """A field the checks read: its JSON path (`[]` steps into every item of a list), what is lost when no fixture
    holds it, and which cases rely on it."""

    path: str
    effect: str
    need: Need

    @property
    def parent(self) -> str:
        """The path of the objects that hold it (`""` for the fixture itself)."""
        return self.path.rpartition(".")[0]

    @property
    def key(self) -> str:
        return self.path.rpartition(".")[2]


_V = "session.selfEvaluation.verifier_evaluation"
FIELDS: tuple[FixtureField, ...] = (
    FixtureField("session", "no answer, duration or verdict is read", Need.ALWAYS),
    FixtureField("session.answer", "every answer reads as empty", Need.ALWAYS),
    FixtureField("session.totalDurationMs", "duration is not compared", Need.ALWAYS),
    FixtureField("session.selfEvaluation", "no verdict is read", Need.ALWAYS),
    FixtureField(_V, "no verdict is read", Need.ALWAYS),
    FixtureField(f"{_V}.verdict", "no case has a verdict", Need.ALWAYS),
    FixtureField(f"{_V}.tool_trace_summary[].tool_name", "the verifier's tool summary names no tool", Need.TOOLS),
    FixtureField(f"{_V}.executor_structured_output", "no claim is checked for evidence bindings", Need.CLAIMS),
    FixtureField(f"{_V}.executor_structured_output.claims", "no claim is checked for evidence bindings", Need.CLAIMS),
    FixtureField(
        f"{_V}.executor_structured_output.claims[].evidence_bindings",
        "every confirmed claim counts as unbound",
        Need.CLAIMS,
    ),
    FixtureField(f"{_V}.gatekeeper_result", "no gatekeeper status is read", Need.GATEKEEPER),
    FixtureField(f"{_V}.gatekeeper_result.status", "no gatekeeper status is read", Need.GATEKEEPER),
    FixtureField(f"{_V}.gatekeeper_result.rule_set_version", "no gatekeeper rule-set version is read", Need.RULE_SET),
    FixtureField(f"{_V}.claim_checks", "no claim checks are read", Need.CLAIMS),
    FixtureField(f"{_V}.composer_output", "no composer status is read", Need.COMPOSER),
    FixtureField(f"{_V}.composer_output.status", "no composer status is read", Need.COMPOSER),
    FixtureField("toolInvocations", "tool calls are not counted or compared", Need.ALWAYS),
    FixtureField(
        "toolInvocations[].toolName", "only the verifier's tool summary can show which tools were used", Need.TOOLS
    ),
)


def _nested(annotation: Any) -> type[BaseModel] | None:
    """The model a field's annotation holds, through optionals, lists and Annotated."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _nested(arg)
        if found is not None:
            return found
    return None


@dataclass(frozen=True)
class _Step:
    key: str  # as fixtures spell it
    attribute: str  # as the parsed model holds it
    each: bool  # a list: step into its items


@lru_cache(maxsize=64)
def _walk(path: str) -> tuple[tuple[_Step, ...], type[BaseModel]]:
    """The steps of `path` (a FIELDS path or one of their parents), and the model of the objects it leads to."""
    steps: list[_Step] = []
    model: type[BaseModel] = Trace
    for part in path.split(".") if path else ():
        key = part.removesuffix(LIST)
        name, info = next((n, i) for n, i in model.model_fields.items() if key in (n, i.alias))
        steps.append(_Step(key, name, part.endswith(LIST)))
        nested = _nested(info.annotation)
        if nested is None:
            break
        model = nested
    return tuple(steps), model


_PARENTS = tuple(sorted(dict.fromkeys(field.parent for field in FIELDS), key=lambda p: p.count(".") + bool(p)))
# Keys the model reads at each parent, whether or not a warning is ever given about them (claims[].status): such
# a key is never taken for a misspelling of another.
_READ = {
    parent: frozenset(key for name, info in _walk(parent)[1].model_fields.items() for key in (name, info.alias) if key)
    for parent in _PARENTS
}


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


_LAST_STEP = {prefix: _walk(prefix)[0][-1] for field in FIELDS for prefix in _prefixes(field.path)}
_ATTRIBUTES = {field.path: _LAST_STEP[field.path].attribute for field in FIELDS}


def _objects(found: dict[str, list[Any]], parent: str) -> list[Any]:
    """The parsed objects at `parent`, walked once per fixture into `found` (which starts as {"": [the trace]})."""
    objects = found.get(parent)
    if objects is None:
        objects = found[parent] = _step(_objects(found, parent.rpartition(".")[0]), _LAST_STEP[parent])
    return objects


def _step(objects: list[Any], step: _Step) -> list[Any]:
    """What `step` leads to from each of `objects` (in a list, its first MAX_ITEMS items)."""
    found: list[Any] = []
    for obj in objects:
        value = getattr(obj, step.attribute)
        if value is None:
            continue
        if step.each:
            found += itertools.islice(value, MAX_ITEMS)
        else:
            found.append(value)
    return found


def _raw_objects(data: Any, parent: str) -> list[dict[str, Any]]:
    """The same objects in the decoded JSON, where the keys the model skips are still there."""
    found: list[Any] = [data]
    for step in _walk(parent)[0]:
        following: list[Any] = []
        for obj in found:
            value = obj.get(step.key) if isinstance(obj, dict) else None
            if step.each and isinstance(value, list):
                following += itertools.islice(value, MAX_ITEMS)
            elif value is not None:
                following.append(value)
        found = following
    return [obj for obj in found if isinstance(obj, dict)]


def _close(key: str, names: list[str]) -> str | None:
    """The name `key` most likely misspells: the same but for case and separators, else the closest by
    `core.text.closest` (which never compares a key too long to be close to any name)."""
    folded = key.casefold().replace("_", "").replace("-", "")
    same = [n for n in names if n.casefold().replace("_", "") == folded]
    if same:
        return same[0]
    return closest(key, names)


@dataclass
class _NearMiss:
    first: str  # the first fixture it was seen in
    fixtures: int = 1


class FieldCensus:
    """Collects, fixture by fixture, which fields were present, then gives the warnings (see the module)."""

    def __init__(self) -> None:
        self.read = 0
        self.open = list(FIELDS)  # fields not yet seen in a fixture whose case relies on them
        self.relying: dict[str, int] = {}  # fixtures whose case relies on an open field, by field
        self.reached: set[str] = {""}  # parents that held an object in a fixture whose case relies on their field
        self.examined = 0
        self.not_examined = 0
        self.near_misses: dict[tuple[str, str], _NearMiss] = {}
        self._todo: dict[frozenset[Need], list[FixtureField]] = {}  # the open fields a case with those needs relies on

    def observe(self, case: TraceCase, trace: Trace, data: bytes, name: str) -> None:
        """Count one parsed fixture; `data` is its bytes, decoded again only when its keys are compared. This runs
        for every fixture, so it looks only at the fields not seen yet: once each has been, it does nothing."""
        self.read += 1
        if not self.open:
            return
        wanted = needs(case)
        todo = self._todo.get(wanted)
        if todo is None:
            todo = self._todo[wanted] = [f for f in self.open if f.need in wanted]
        if not todo:
            return
        found: dict[str, list[Any]] = {"": [trace]}
        lacking: list[FixtureField] = []
        for field in todo:
            self.relying[field.path] = self.relying.get(field.path, 0) + 1
            held = _objects(found, field.parent)
            if not held:
                continue
            self.reached.add(field.parent)
            attribute = _ATTRIBUTES[field.path]
            if any(attribute in obj.model_fields_set for obj in held):
                self.open.remove(field)
                self._todo.clear()  # made again from what is still open
            else:
                lacking.append(field)
        if not lacking:
            return
        if self.examined >= MAX_EXAMINED:
            self.not_examined += 1
            return
        self.examined += 1
        try:
            decoded = values.loads(data)
        except (ValueError, RecursionError):  # it parsed once already; anything odd here only skips the comparison
            return
        self._compare(decoded, lacking, name)

    def _compare(self, decoded: Any, lacking: list[FixtureField], name: str) -> None:
        found: dict[tuple[str, str], None] = {}  # in the order of the walk: the fixture's own keys first
        for parent in _PARENTS:
            wanted = [field.key for field in lacking if field.parent == parent]
            if not wanted:
                continue
            for obj in _raw_objects(decoded, parent):
                missing = [key for key in wanted if key not in obj]
                if not missing:
                    continue
                for key in itertools.islice(obj, MAX_KEYS):
                    match = None if key in _READ[parent] else _close(key, missing)
                    if match is not None:
                        found[(f"{parent}.{key}" if parent else key, match)] = None
        for pair in found:
            seen = self.near_misses.get(pair)
            if seen is not None:
                seen.fixtures += 1
            elif len(self.near_misses) < MAX_NEAR_MISSES:
                self.near_misses[pair] = _NearMiss(name)

    def warnings(self) -> list[str]:
        """The fields no fixture held among those whose case relies on them (a field whose parent never held an
        object is left to the parent's warning), then near-miss keys, then what was not looked at."""
        found = []
        for field in self.open:
            count = self.relying.get(field.path, 0)
            if count and field.parent in self.reached:
                scope = "" if count == self.read else " of the cases that check it"
                found.append(f"{field.path} absent in {count}/{count} fixtures{scope}: {field.effect}")
        for (label, match), seen in self.near_misses.items():
            more = f" and {seen.fixtures - 1} more" if seen.fixtures > 1 else ""
            found.append(f"{label} -> did you mean {match}? (in fixture '{seen.first}'{more})")
        if self.not_examined and self.near_misses:
            found.append(
                f"near-miss keys were looked for in the first {MAX_EXAMINED} fixtures that lack a field no earlier "
                f"fixture held; {self.not_examined} more such fixtures were not examined"
            )
        return found
