"""Judging an agent suite: each case's trials against its checks, the trials policy, and whether it gates."""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from diagbot.core import stack, values
from diagbot.core.query import quoted_text_slips
from diagbot.core.rates import mean
from diagbot.core.report import RunInfo
from diagbot.core.text import Suggestions, closest, look_alike, unplain_name
from diagbot.kinds.agent import rag
from diagbot.kinds.agent.cases import (
    CHECK_KEYS,
    CRITERIA_FIELDS,
    PROSE_FIELDS,
    AgentCase,
    AnyAll,
    Check,
    SideEffectPolicy,
    Transition,
    arg_path,
    checks_digest,
)
from diagbot.kinds.agent.checks import CHECKS, CaseWork, Code, criteria, judge, metrics, trial
from diagbot.kinds.agent.formats import TraceMissing, load_run
from diagbot.kinds.agent.load import LoadedCase, policy_slip
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import (
    MAX_TRIALS,
    AgentCaseResult,
    AgentReport,
    OptionName,
    Status,
    TrialResult,
    build_report,
)
from diagbot.kinds.agent.run import Run, TraceInvalid
from diagbot.kinds.base import Governance

TRIAL_SUFFIXES = (".json", ".jsonl")  # the files of a case's folder that are its trials (JSON Lines: OTLP)
_SHOWN = 160
MAX_WARNINGS = 100  # warnings a report keeps; a suite where every case has some says so once, with the count
_LEFT_OUT_NAMED = 5
_SUGGESTED = 20  # tool names of one case looked up for a closest known name


MAX_FIXTURE_ENTRIES = 1_000_000  # entries listed in the fixtures folder; past this the listing stops
MAX_NEAR_LOOKED_AT = 200  # fixtures entries a missing run's close name is looked for among


class Fixtures:
    """The fixtures folder, listed once: which names are files, folders and links, without a syscall per case."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = os.path.join(root, "")  # trial paths joined as text: a Path per case costs more than its read
        self._entries: dict[str, tuple[bool, bool]] = {}  # name -> (is a folder, is a link)
        self.cut = False
        self.left_out = 0  # entries of trial folders that are not trials (a hidden one if named as one), first few
        # named below
        self.left_out_names: list[str] = []
        self._folded: dict[str, str] | None = None  # casefolded name -> name, built when a run is missing
        self._cased: dict[str, list[str]] = {}  # case-folded -> the names that are not (`C1.JSON`), one file with
        # their folded name on macOS and Windows
        with os.scandir(root) as entries:
            for count, entry in enumerate(entries):
                if count == MAX_FIXTURE_ENTRIES:
                    self.cut = True
                    break
                try:
                    self._entries[entry.name] = (entry.is_dir(), entry.is_symlink())
                except OSError:
                    self._entries[entry.name] = (False, True)  # unknowable: treated as a link, resolved when read
                folded = entry.name.casefold()
                if folded != entry.name:
                    self._cased.setdefault(folded, []).append(entry.name)

    def trials(self, case_id: str) -> list[tuple[str, str, str, bool]] | str:
        """(trial name, the file as messages name it, the file, whether it may lead outside through a link) of
        each recorded trial, or why they cannot be listed. An unrecorded case gets its single file, whose read
        then says it is missing."""
        single = f"{case_id}.json"
        folder = self._entries.get(case_id)
        if folder is None and single not in self._entries and self.cut:
            return f"the fixtures folder holds more than {MAX_FIXTURE_ENTRIES:,} entries; split the suite"
        if folder is None or not folder[0]:
            if single in self._entries and (clash := self._cased_alike(case_id)):
                return clash
            return [(single, single, self._prefix + single, self._entries.get(single, (False, False))[1])]
        if single in self._entries:
            return f"both {single} and the folder {case_id}/ are recorded; keep one"
        clash = self._cased_alike(case_id)
        if clash:
            return clash
        why = _outside(self._prefix + case_id, self.root) if folder[1] else None
        if why:  # listed, it would put the names of what it leads to in the report and the comment
            return f"{case_id}/: {why}"
        found = []
        with os.scandir(self._prefix + case_id) as entries:
            for count, entry in enumerate(entries):
                if count == MAX_FIXTURE_ENTRIES:
                    return (
                        f"{case_id}/ holds more than {MAX_FIXTURE_ENTRIES:,} entries; diagbot lists at most that many"
                    )
                trial_like = entry.name.lower().endswith(TRIAL_SUFFIXES)  # `trial-2.JSON` is one
                if entry.name.startswith(".") and not trial_like:  # `.DS_Store`; a hidden `.t2.json` is named
                    continue
                if entry.is_dir() or not trial_like or entry.name.startswith("."):
                    self.left_out += 1  # the first few by name, as a listing in any order would make them vary
                    bisect.insort(
                        self.left_out_names, f"{case_id}/{values.one_line(entry.name, 200)}" + "/" * entry.is_dir()
                    )
                    del self.left_out_names[_LEFT_OUT_NAMED:]
                    continue
                if not values.plain_name(entry.name):  # it would reach the report, the log and the comment
                    return (
                        f"{case_id}/{values.one_line(entry.name, 200)}: a trial file name with a control "
                        "character or undecodable byte; rename it"
                    )
                found.append((entry.name, f"{case_id}/{entry.name}", entry.path, folder[1] or entry.is_symlink()))
                if len(found) > MAX_TRIALS:
                    return f"{case_id}/ holds more than {MAX_TRIALS} trials; diagbot reads at most {MAX_TRIALS}"
        return sorted(found)

    def _cased_alike(self, case_id: str) -> str | None:
        """Why the case's run is not known when more than one entry records it under names that differ only in
        case (`C1.JSON` beside `c1/` or `c1.json`): one is read, and the other's failing run would go unseen (on
        macOS and Windows they are one file)."""
        single, folder = f"{case_id}.json".casefold(), case_id.casefold()
        folders = [folder] * (folder in self._entries) + self._cased.get(folder, [])
        recorded = [single] * (single in self._entries) + self._cased.get(single, [])
        recorded += [name for name in folders if self._entries[name][0]]
        if len(recorded) < 2:
            return None
        named = ", ".join(values.one_line(n, 200) + "/" * self._entries[n][0] for n in sorted(recorded)[:3])
        return f"{named} all record this case's run (names that differ only in case); keep one"

    def misnamed(self, case_id: str) -> str | None:
        """The entry a missing run was most likely recorded as: its name in another case or with other separators
        (`C1.JSON` for `c1`, `t-chat.json` for `t_chat`)."""
        if self._folded is None:
            self._folded = {}
            for name in self._entries:
                self._folded.setdefault(look_alike(name), name)
        for wanted in (f"{case_id}.json", case_id):
            found = self._folded.get(look_alike(wanted))
            if found is not None and found != wanted:
                return found
        lines = f"{case_id}.jsonl"  # JSON Lines is read as a trial in the case's folder, not beside it
        return lines if lines in self._entries else None

    def spelt_near(self, case_id: str) -> str | None:
        """A run file or folder whose name is close to the case's (`book_flight_confirm_002.json` for
        `book_flight_confirmed_002`), looked for only in a folder of at most MAX_NEAR_LOOKED_AT entries: each
        missing run is a difflib pass over the names (about a millisecond), whichever process judges it."""
        if len(self._entries) > MAX_NEAR_LOOKED_AT:
            return None
        files = [name for name in self._entries if name.endswith(".json")]
        folders = [name for name, (is_folder, _) in self._entries.items() if is_folder]
        return closest(f"{case_id}.json", files, cutoff=0.8) or closest(case_id, folders, cutoff=0.8)

    def left_out_warning(self) -> list[str]:
        """What the trial folders hold that is not a trial, said once for the suite: a failing trial recorded under
        another name must not vanish unseen."""
        if not self.left_out:
            return []
        more = f" and {self.left_out - _LEFT_OUT_NAMED:,} more" if self.left_out > _LEFT_OUT_NAMED else ""
        named = ", ".join(self.left_out_names)
        return [
            f"fixtures: {named}{more} left out: a case's folder holds its trials, files ending in "
            f"{' or '.join(TRIAL_SUFFIXES)} whose names do not start with a dot; move anything else out of it"
        ]

    def take_left_out(self) -> tuple[int, list[str]]:
        """What was left out since the last call (a worker's share, for the parent to add up)."""
        taken = self.left_out, self.left_out_names
        self.left_out, self.left_out_names = 0, []
        return taken

    def add_left_out(self, count: int, names: list[str]) -> None:
        self.left_out += count
        self.left_out_names = sorted(self.left_out_names + names)[:_LEFT_OUT_NAMED]


def _outside(path: str, root: Path) -> str | None:
    """Why a linked trial file cannot be read, or None when it resolves inside the fixtures folder."""
    try:
        inside = Path(path).resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError, ValueError):
        return "cannot be resolved (a symbolic link loop?)"
    return None if inside else "a link that leads outside the fixtures folder; diagbot does not follow it"


_SLIPS = {"left": 200}  # distinct usage rights looked up, per process: a suggestion is advice, never worth seconds


@functools.lru_cache(maxsize=1024)
def slip_of(given: str, allowed: tuple[str, ...]) -> str | None:
    """`near_miss`, once per distinct value, for the first 200 distinct values (a suite has a handful)."""
    if _SLIPS["left"] <= 0:
        return None
    _SLIPS["left"] -= 1
    return near_miss(given, allowed)


def near_miss(given: str, allowed: tuple[str, ...]) -> str | None:
    """The one of the first 10 allowed values that `given` misspells by a letter or two (`approved_for_evalution`),
    or None: a usage right that differs by more (`revoked_for_evaluation`) is deliberate, and never suggested."""
    folded = given.casefold()  # `Approved_For_Evaluation` is the same right written otherwise
    for name in allowed[:10]:
        if name != given and (name.casefold() == folded or _within_two_edits(folded, name.casefold())):
            return name
    return None


def _within_two_edits(a: str, b: str) -> bool:
    """Whether two texts of at most 100 characters differ by at most two insertions, deletions or substitutions:
    an edit distance in a band of two, given up as soon as a row of it is over two."""
    if a == b or abs(len(a) - len(b)) > 2 or len(a) > 100 or len(b) > 100:
        return False
    before = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        now = [i] + [3] * len(b)
        for j in range(max(1, i - 2), min(len(b), i + 2) + 1):
            now[j] = min(before[j] + 1, now[j - 1] + 1, before[j - 1] + (char != b[j - 1]))
        if min(now) > 2:
            return False
        before = now
    return before[len(b)] <= 2


def not_gating_because(case: AgentCase, governance: Governance, today: dt.date) -> str | None:
    """Every reason the case does not gate, so that fixing one does not reveal the next only in the next run."""
    meta = case.metadata
    reasons = []
    if meta.review_status != "approved":
        reasons.append(f"review_status is {meta.review_status}")
    if meta.rights not in governance.usage_rights:
        near = slip_of(meta.rights, governance.usage_rights)
        hint = f" (did you mean {near}?)" if near else ""
        rights = values.one_line(meta.rights, 100)  # a case's text, repeated for every case its defaults give it to
        allowed = " or ".join(repr(r) if not r.strip() else r for r in governance.usage_rights)
        reasons.append(
            f"usage rights are {rights}, not {allowed}{hint}"
            if allowed
            else f"usage rights are {rights}, and gate.usage-rights allows none"
        )
    if meta.retain_until is not None and meta.retain_until < today:
        reasons.append(f"usage rights lapsed on {meta.retain_until.isoformat()}")
    if meta.dataset_role not in governance.roles:
        reasons.append(
            f"dataset_role {meta.dataset_role} does not gate (gate.roles: {', '.join(governance.roles) or 'none'})"
        )
    if case.reviews:
        latest = case.reviews[-1]
        reviewer = values.one_line(latest.reviewer, 100)
        if latest.review_result != "approved":
            reasons.append(f"the latest review ({reviewer}) is {latest.review_result}")
        elif latest.approved_for is not None and meta.dataset_role not in latest.approved_for:
            reasons.append(f"the latest review ({reviewer}) does not approve it for {meta.dataset_role}")
    return "; ".join(reasons) or None


_PROSE_LINES = 20  # items of a prose list (`sop: [...]`) listed; a case's defaults may give every case thousands


def unchecked_expectations(case: AgentCase) -> list[str]:
    """The prose of a case, for people: listed in the report as not machine-checked."""
    found = [f"expected_behavior: {t}" for t in case.expected_behavior if isinstance(t, str)]
    for name in ("negative_behavior", "success_criteria", "failure_criteria", "safety_constraints"):
        found += [f"{name}: {t}" for t in getattr(case, name) or [] if isinstance(t, str)]
    for name in PROSE_FIELDS:
        value = getattr(case, name)
        if value is None or value == [] or value == {} or (name == "gold_evidence" and _uses_gold(case)):
            continue
        lines = [item for item in value[:_PROSE_LINES] if isinstance(item, str)] if isinstance(value, list) else []
        if lines and len(lines) == min(len(value), _PROSE_LINES):  # prose as a list of lines: the first ones
            found += [f"{name}: {line}" for line in lines]
            if len(value) > _PROSE_LINES:
                found.append(f"{name}: … and {len(value) - _PROSE_LINES:,} more items")
        else:
            found.append(f"{name}: {value if isinstance(value, str) else '(structured, not machine-checked)'}")
    judged = [m for m in case.evaluation_metrics or [] if not rag.is_checked(m)]
    found += [f"evaluation_metrics: {m} (a judged metric)" for m in judged]
    if case.evaluator_config.judge is not None:
        found.append("evaluator_config.judge: a judge run elsewhere")
    for policy in case.policies:
        for name in ("allowed_state_transition", "forbidden_state_transition"):
            labels = [i for i in policy.transitions(getattr(policy, name)) if not isinstance(i, Transition)]
            found += [f"side_effect_policy.{name}: {label}" for label in labels]
    if case.service_level is not None and case.service_level.description is not None:
        found.append(f"service_level.description: {case.service_level.description}")
    if case.constraints is not None:
        for name in ("format", "tone", "length", "safety"):
            value = getattr(case.constraints, name)
            if value is not None:
                found.append(f"constraints.{name}: {value}")
    return [item if len(item) <= _SHOWN else item[: _SHOWN - 1] + "…" for item in found]


_COMPOSED = ("$ref", "$dynamicRef", "allOf", "anyOf", "oneOf", "if", "dependentSchemas", "patternProperties")


def _unknown_idempotency_args(case: AgentCase, policy: SideEffectPolicy) -> list[str]:
    """idempotency_key paths whose argument the tool's tool_schema does not list among its properties: a call
    without the key repeats nothing, so a misspelt key would find no duplicate. Only a schema that lists its
    properties in one place says which arguments there are (expected_args may leave any of them out)."""
    schema = (case.tool_schema or {}).get(policy.tool)
    if (
        not isinstance(schema, dict)
        or not isinstance(schema.get("properties"), dict)
        or any(key in schema for key in _COMPOSED)
    ):
        return []
    known = sorted(schema["properties"])
    found = []
    for path in policy.idempotency_paths:
        steps = arg_path(path)
        if known and steps and steps[0] not in known:
            found.append(
                f"side_effect_policy.idempotency_key: {values.one_line(path, 100)!r} is not an argument of "
                f"{values.one_line(policy.tool, 100)} in its tool_schema (properties: "
                f"{values.one_line(', '.join(known[:12]), 300)}); a call without it repeats nothing, so no duplicate "
                "would be found"
            )
    return found


def ignored_checks(case: AgentCase, rules: dict[str, Check], folded: dict[str, str]) -> list[str]:
    """What in a case reads like a check but checks nothing, so the case can pass without it: a suite rule's name
    written as text where text is for people, and tool_schema keywords that the schema's draft does not have.
    `run` puts them in the report's warnings (and so the comment), `validate` among its own. `folded`: the suite's
    rule names by their case-folded form (`AgentOptions.folded_rules`), for a name written in another case."""
    found = []
    for field, _ in CRITERIA_FIELDS:
        for i, item in enumerate(getattr(case, field) or ()):
            rule = folded.get(item.strip().casefold()) if isinstance(item, str) and len(item) <= 200 else None
            if rule is not None:
                said = "is the name of a suite rule" if rule == item else f"reads as the suite rule {rule}"
                found.append(
                    f"{field}[{i}]: {values.one_line(item, 100)!r} {said}, but a text here is for people and is not "
                    "checked; write the check object itself here (a rule is named only in "
                    "evaluator_config.rule_checks, where it must hold)"
                )
    if case.tool_schema:
        from diagbot.kinds.agent.schema_check import unknown_keywords  # jsonschema, imported only when a case needs it

        for tool, schema in case.tool_schema.items():
            found += [
                f"tool_schema.{values.one_line(tool, 100)}: {unknown}; JSON Schema ignores it, so it checks nothing"
                for unknown in unknown_keywords(schema)
            ]
    found += [
        f"expected_args.{values.one_line(tool, 100)}: an empty list of argument sets asks for nothing"
        for tool, given in (case.expected_args or {}).items()
        if given == []
    ]
    scope = case.evaluator_config.tool_sequence.scope
    if case.expected_tool_sequence is not None and (
        scope == [] or (scope == "side_effect" and not case.side_effect_tools)
    ):
        found.append(
            "evaluator_config.tool_sequence.scope puts no call in scope ("
            + ("an empty list" if scope == [] else "no tool is marked side_effect or named by a side_effect_policy")
            + "), so the sequence is compared with nothing"
        )
    for policy in case.policies:
        found += _unknown_idempotency_args(case, policy)
    placed = _placed(rules, criteria(case))  # looked through once for the names and queries below
    named, forbidden = list(_tools_named(case, placed)), list(_forbidden(placed))
    for where, expr in _queries(case, placed):
        found += quoted_text_slips(where, expr)
    for name, threshold in case.evaluator_config.thresholds.items():
        shown = values.one_line(name, 80)
        if threshold <= 0:  # not a check (the case is unchecked on it alone), a figure compared with the baseline's
            found.append(
                f"evaluator_config.thresholds.{shown}: 0 passes every value, so {shown} is only computed and "
                "compared with the baseline, never checked; give the lowest passing value"
            )
    unplain = set()
    known = case.tool_names  # a set built per call: once here
    listed = [("available_tools", name) for name in sorted(known or ())]
    for where, tool in [*named, *forbidden, *listed]:  # `refund_submit ` forbids nothing: a run calling a tool so
        why = unplain_name(tool)  # named is refused
        parts = _LISTED.split(tool.strip()) if len(tool) <= 1000 and not why else []
        if len(parts) < 2 and known and len(spaced := tool.split()) > 1 and set(spaced) <= known:
            parts = spaced  # `refund_submit order_cancel`, both given tools (`refund submit` is a misspelt one)
        if len(parts) > 1:  # `tool_not_called: a, b` in YAML is one name, as are `a、b` and `a|b`
            unplain.add(tool)
            found.append(
                f"{where}: the tool name '{values.one_line(tool, 100)}' reads as a list of names, so it names no "
                f"tool; write one name an item, as a list: [{values.one_line(', '.join(p for p in parts if p), 100)}]"
            )
        elif why:
            unplain.add(tool)
            found.append(
                f"{where}: the tool name '{values.one_line(tool, 100)}' {why}: no tool is named so, and this checks "
                "a tool no run can call; write the name as the agent's tool has it"
            )
    if known is not None:
        names, suggestions = sorted(known), Suggestions(_SUGGESTED)  # difflib is bounded per case, not per name
        for where, tool in named:
            if tool not in known and tool not in unplain:
                if where.startswith("side_effect_policy") and policy_slip(tool, names):
                    continue  # a case problem (`load._misspelt_policy_tools`)
                close = suggestions.closest(tool, names)
                found.append(
                    f"{where}: {values.one_line(tool, 100)!r} is not in available_tools"
                    + (f" (did you mean {values.one_line(close, 100)}?)" if close else "")
                    + "; tool names match exactly, so this checks a tool the agent is not given"
                )
        alike: dict[str, str] | None = None  # built for the first forbidden name the agent is not given
        for where, tool in forbidden:  # forbidding a tool the agent is not given is deliberate; a
            if tool in known or tool in unplain:  # slip of one it is given is not
                continue
            alike = alike if alike is not None else {look_alike(name): name for name in names}
            near = alike.get(look_alike(tool))
            if near is not None:
                found.append(
                    f"{where}: '{values.one_line(tool, 100)}' is not in available_tools, but {near} is, written "
                    f"otherwise; tool names match exactly, so this forbids nothing the agent can call, and {near} "
                    "stays allowed"
                )
    return found


def _placed(rules: dict[str, Check], refs: Criteria) -> list[tuple[str, Check]]:
    """Each check object of the case (`refs`: its `criteria`), a suite rule's name resolved to its definition,
    with where messages name it (an unknown rule name is a case problem, said elsewhere)."""
    placed = []
    for field, index, ref, _ in refs:
        check = rules.get(ref) if isinstance(ref, str) else ref
        if check is not None:
            placed.append((f"rules.{ref}" if isinstance(ref, str) else f"{field}[{index}]", check))
    return placed


def _queries(case: AgentCase, placed: list[tuple[str, Check]]) -> Iterator[tuple[str, str]]:
    """Every JMESPath expression of the case's state checks (`placed`: its check objects), with where."""
    yield from ((f"{where}.state.expr", check.value.expr) for where, check in placed if check.key == "state")
    yield from ((f"final_state_check[{n}].expr", item.expr) for n, item in enumerate(case.state_checks))


def _forbidden(placed: list[tuple[str, Check]]) -> Iterator[tuple[str, str]]:
    """Every tool name a `tool_not_called` check of the case (`placed`: its check objects) names, with where."""
    for where, check in placed:
        if check.key == "tool_not_called":
            yield from ((where, tool) for tool in ([check.value] if isinstance(check.value, str) else check.value))


Criteria = list[tuple[str, int, Check | str, bool]]  # `checks.criteria` of a case
_LIMITS = ("max_tool_calls", "max_turns", "max_duration_ms")


_NEGATED = {  # a negated check among what must not happen: what the run must then do, and the check that forbids
    "tool_not_called": ("the run calls one of its tools", "tool_called"),
    "answer_not_contains": ("the answer contains one of its texts", "answer_contains"),
    "answer_not_matches": ("the answer matches it", "answer_matches"),
    "replies_not_matches": ("a reply matches it", "replies_matches"),
}
_PROSE_LOOKED_AT = 100  # values of a prose field looked through for a check object


_LISTED = re.compile(r"\s*[,，、;；|]\s*")  # what separates the names of a list written as one string


def _needs_all(check: Check) -> bool:
    """Whether a contains check needs every one of several texts (a list, or `all`)."""
    value = check.value
    needles = value if isinstance(value, list) else value.all_of if isinstance(value, AnyAll) else None
    return needles is not None and len(needles) > 1


def authoring_slips(case: AgentCase) -> list[str]:
    """What in a case checks something other than its author most likely meant (`validate` warns): a limit or a
    negated check among what must not happen, which fails every run that stays within it (or does not do it), a
    check object in a field for people, which checks nothing, the business `audit_requirement` when no policy
    checks an audit record, and a precondition's state key that the case's declared state does not hold
    (`{caled: search}` for `{called: search}`), which only a state change of the run can make true."""
    found = []
    for field, must in CRITERIA_FIELDS:
        for i, item in enumerate(getattr(case, field) or () if not must else ()):
            if isinstance(item, Check) and item.key in _LIMITS:
                limit = f"{int(item.value):,}" if float(item.value).is_integer() else f"{item.value:,g}"
                found.append(
                    f"{field}[{i}]: {item.key} {limit} here says the run must not stay within it, so every run of at "
                    f"most {limit} fails the case; to cap the run, move it to success_criteria or safety_constraints"
                )
            elif isinstance(item, Check) and item.key in ("answer_contains", "replies_contain") and _needs_all(item):
                found.append(
                    f"{field}[{i}]: {item.key} with several texts here fails the case only when all of them are said, "
                    f"so saying one of them passes; to forbid each of them, write {item.key}: {{any: [...]}}"
                )
            elif isinstance(item, Check) and item.key in _NEGATED:
                needed, forbids = _NEGATED[item.key]
                found.append(
                    f"{field}[{i}]: {item.key} here is a double negative: the case fails unless {needed}; to forbid "
                    f"that, write {forbids} here (or keep {item.key} and move it to success_criteria)"
                )
    for name in PROSE_FIELDS:
        key = _check_inside(getattr(case, name))
        if key is not None:
            found.append(
                f"{name}: holds a check object ({key}), but {name} is for people and nothing in it is checked; "
                "write the check in success_criteria, negative_behavior or evaluator_config.rule_checks"
            )
    if case.audit_requirement and not any(p.audit_fields for p in case.policies):  # with no policy too (newcomer)
        found.append(
            "audit_requirement is for people and is not checked; to check each call's audit record, list its fields "
            "in side_effect_policy.audit_requirement"
        )
    declared = case.initial_state if case.initial_state is not None else case.state
    holds = "initial_state" if case.initial_state is not None else "state" if case.state is not None else None
    for n, policy in enumerate(case.policies):
        for item in policy.preconditions:
            for key in item:
                if key == "called" or (declared is not None and key in declared):
                    continue
                near = " (did you mean called?)" if closest(key, ["called"]) else ""
                where = f"the case's {holds} has no key {values.one_line(key, 100)!r}" if holds else (
                    "the case declares no initial_state or state"
                )  # fmt: skip
                found.append(
                    f"side_effect_policy[{n}].precondition: {values.one_line(key, 100)!r} is read as a state key"
                    f"{near}, but {where}; it holds only when a state_change step of the run sets it before the call"
                )
    return found


def _check_inside(value: Any) -> str | None:
    """The check key (`tool_not_called`, ...) of the first check object among the first values of a prose field."""
    todo, looked = [value], 0
    while todo and looked < _PROSE_LOOKED_AT:
        node, looked = todo.pop(), looked + 1
        if isinstance(node, dict):
            keys = [k for k in node if k in CHECK_KEYS]  # a check object: one of them, and nothing but its id beside
            if len(keys) == 1 and node.keys() <= {keys[0], "id"}:
                return str(keys[0])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(reversed(node[:_PROSE_LOOKED_AT]))
    return None


def _tools_named(case: AgentCase, placed: list[tuple[str, Check]]) -> Iterator[tuple[str, str]]:
    """Every tool name the case's checks refer to (`placed`: its check objects), with where."""
    for i, policy in enumerate(case.policies):
        yield f"side_effect_policy[{i}].tool", policy.tool
    for i, item in enumerate(case.expected_tool_sequence or ()):
        yield f"expected_tool_sequence[{i}]", item if isinstance(item, str) else item.tool
    for field in ("expected_args", "tool_schema"):
        for tool in getattr(case, field) or {}:
            yield f"{field}.{values.one_line(tool, 100)}", tool
    scope = case.evaluator_config.tool_sequence.scope
    for tool in scope if isinstance(scope, list) else ():
        yield "evaluator_config.tool_sequence.scope", tool
    for where, check in placed:
        value = check.value
        if check.key == "tool_called":
            yield where, value if isinstance(value, str) else value.tool
        elif check.key == "called_before":  # tool_not_called of a tool the agent is not given is deliberate
            yield from ((where, value.first), (where, value.then))


def _uses_gold(case: AgentCase) -> bool:
    asked = any(rag.is_checked(m) for m in case.evaluation_metrics or [])
    return asked or rag.required_citation(case.citation_requirement)


def is_checked(case: AgentCase) -> bool:
    return any(check.applies(case) for check in CHECKS)


@stack.headroom()  # how deep a run may nest before reading or a check gives up does not depend on the caller
def evaluate_case(
    loaded: LoadedCase,
    fixtures: Fixtures,
    options: AgentOptions,
    max_bytes: int,
    gate: Governance,
    today: dt.date,
    called: set[str] | None = None,
) -> AgentCaseResult:
    """The case's result over its trials, in whatever process it is judged (one process, a worker, the action).
    `called`, when given, gets the names of the tools its runs called."""
    case = loaded.case
    checks = [check for check in CHECKS if check.applies(case)]
    try:
        files = fixtures.trials(case.case_id)
    except OSError as exc:
        files = f"its folder cannot be listed ({exc.strerror or exc})"
    error_pattern = options.error_regex
    confirmation = options.confirmation
    trials: list[TrialResult] = []
    cost = _Cost()  # the costliest of the trials that could be read: a later trial cannot loop unseen
    work = CaseWork()  # what the checks spend, over all the case's trials
    if isinstance(files, str):
        trials.append(
            TrialResult(trial=f"{case.case_id}/", passed=False, failed_checks=[f"{Code.TRACE_INVALID}: {files}"])
        )
        files = []
    for name, shown, path, linked in files:
        found: dict[str, float] = {}
        try:
            why = _outside(path, fixtures.root) if linked else None
            if why:
                raise TraceInvalid("", why)
            run = load_run(path, options.trace_format, max_bytes, error_pattern)
        except TraceMissing:
            near = fixtures.misnamed(case.case_id)
            hint = f" ({values.one_line(near, 200)} is there: names match exactly, so rename it)" if near else ""
            close = None if near else fixtures.spelt_near(case.case_id)
            if close:  # perhaps another case's run: asked, not told
                hint = f" (is {values.one_line(close, 200)} this case's run? a run is named by its case_id exactly)"
            if near == f"{case.case_id}.jsonl":
                hint = f" ({near} is there: a JSON Lines (OTLP) run is read as a trial, in the folder {case.case_id}/)"
            failed = [
                f"{Code.TRACE_MISSING}: {shown} is a symbolic link to nothing (its target does not exist); record "
                "the run there, or replace the link with the run file"
                if linked else
                f"{Code.TRACE_MISSING}: no run recorded: expected {shown} or a folder {case.case_id}/ in the fixtures "
                f"folder{hint}"
            ]  # fmt: skip
        except TraceInvalid as exc:
            failed = [f"{Code.TRACE_INVALID}: {shown}{': ' + exc.path if exc.path else ''}: {exc.message}"]
        except RecursionError:
            failed = [f"{Code.TRACE_INVALID}: {shown}: a value is nested too deeply to read"]
        else:
            cost.add(run)
            if called is not None and len(called) < _CALLED_KEPT:
                called.update(call.tool for call in run.calls)
            judged = trial(run, case, options.rules, confirmation, options.citation_pattern, work)
            failed = judge(case, judged, checks)
            found = metrics(case, judged) if case.evaluation_metrics else {}
        trials.append(TrialResult(trial=name, passed=not failed, failed_checks=failed, metrics=found))
    if not trials:
        trials.append(
            TrialResult(
                trial=f"{case.case_id}/",
                passed=False,
                failed_checks=[f"{Code.TRACE_MISSING}: the folder {case.case_id}/ holds no trials"],
            )
        )
    passed_trials = sum(t.passed for t in trials)
    required = options.required(len(trials))
    # `trials: n` with fewer trials recorded: say so, or the case would fail with nothing failing; a case with
    # nothing machine-checked passes no trial, so it stays unchecked however many it has
    short = [] if required <= len(trials) or not checks else [
        f"{Code.TRACE_MISSING}: the suite's trials: {required} needs {required} passing trials; "
        f"{len(trials)} {'is' if len(trials) == 1 else 'are'} recorded"
    ]  # fmt: skip
    passed = passed_trials >= required
    # nothing machine-checked: neither passed nor failed, whatever its runs (a missing one is in the trial results
    # and in the suite's runs warning, but a case that checks nothing cannot fail the gate)
    status: Status = "unchecked" if not checks else "passed" if passed else "failed"
    reason = not_gating_because(case, gate, today)
    first_failing = next((t for t in trials if not t.passed), None)
    result = AgentCaseResult(
        case_id=case.case_id,
        case_version=case.case_version,
        title=case.title,
        scenario=case.scenario,
        risk_level=case.risk_level,
        difficulty=case.difficulty,
        ability_tags=list(case.ability_tags),
        dataset_id=case.dataset_id,
        dataset_version=case.dataset_version,
        dataset_role=case.metadata.dataset_role,
        gating=reason is None,
        not_gating_because=reason,
        status=status,
        passed=status == "passed",
        trials=len(trials),
        trials_passed=passed_trials,
        trial_results=trials,
        failed_checks=(first_failing.failed_checks if first_failing and checks else []) + short,
        unchecked_expectations=unchecked_expectations(case),
        tool_call_count=cost.calls,
        turn_count=cost.turns,
        duration_ms=cost.duration_ms,
        metrics=_mean_metrics(trials),
        checks_digest=checks_digest(case, options.rules),
    )
    for model in (result, *trials):
        _share_fields_set(model)
    return result


class _Cost:
    """The most calls, turns and milliseconds of a case's trials that could be read (each None when none records
    it: the turns of a run whose messages were not recorded are unknown, not 0). Compared with the baseline's
    against the suite's thresholds, so the costliest trial counts, not the first."""

    def __init__(self) -> None:
        self.calls: int | None = None
        self.turns: int | None = None
        self.duration_ms: float | None = None

    def add(self, run: Run) -> None:
        self.calls = max(self.calls or 0, len(run.calls))
        if not run.unrecorded:
            self.turns = max(self.turns or 0, run.turns)
        least = run.least_duration_ms  # as max_duration_ms reads it: never shorter than its longest call
        if least is not None:
            self.duration_ms = max(self.duration_ms or 0.0, least)


def _mean_metrics(trials: list[TrialResult]) -> dict[str, float]:
    names = dict.fromkeys(name for t in trials for name in t.metrics)
    return {name: mean([t.metrics[name] for t in trials if name in t.metrics]) for name in names}


_FIELDS_SETS: dict[type[BaseModel], set[str]] = {}


def _share_fields_set(model: BaseModel) -> None:
    """pydantic keeps, per instance, the set of fields it was given (2 KB for a case's result, 20 MB for a suite
    of 10,000); every result is given every field, so all of them share one set. Nothing reads it but pydantic's
    `exclude_unset`, which diagbot does not use, and assigning a field adds a name the set already holds."""
    shared = _FIELDS_SETS.get(type(model))
    if shared is None:
        shared = _FIELDS_SETS[type(model)] = set(type(model).model_fields)
    if len(model.model_fields_set) == len(shared):  # a subset of the fields, so all of them
        object.__setattr__(model, "__pydantic_fields_set__", shared)


def today_of(run: RunInfo | None) -> dt.date:
    """The day retention is judged on: the run's own time when it has one (so a report can be remade), else today."""
    if run is not None and run.time:
        try:
            return dt.datetime.fromisoformat(run.time.replace("Z", "+00:00")).date()
        except ValueError:
            pass
    return dt.datetime.now(dt.UTC).date()


def governance_slips(case: AgentCase, gate: Governance) -> list[str]:
    """What keeps a case from gating that its author most likely did not mean (`validate` and `run` warn, since a
    failing case that does not gate fails nothing): a usage right one slip from an allowed one (a trailing space,
    `Approved_...`), and an approved case whose latest review does not approve it for its dataset role."""
    found = []
    outcome = "so the case does not gate"
    if case.risk_level in ("P0", "P1"):  # the cases whose failures a reader most expects to fail the check
        outcome = f"so this {case.risk_level} case does not gate: its failures never fail the check"
    rights = case.metadata.rights
    near = slip_of(rights, gate.usage_rights) if rights not in gate.usage_rights else None
    if near is not None:
        found.append(
            f"metadata.usage_rights_status {values.one_line(rights, 100)!r} is not in gate.usage-rights (did you mean "
            f"{near}?), {outcome}"
        )
    latest = case.reviews[-1] if case.reviews else None
    role = case.metadata.dataset_role
    if (
        latest is not None
        and latest.review_result == "approved"
        and latest.approved_for is not None
        and role not in latest.approved_for
        and role in gate.roles
    ):
        found.append(
            f"the latest review ({values.one_line(latest.reviewer, 100)}) approves it for "
            f"{', '.join(latest.approved_for) or 'no role'}, not for its dataset_role {role}, {outcome}"
        )
    return found


def judge_case(
    loaded: LoadedCase, fixtures: Fixtures, options: AgentOptions, max_bytes: int, gate: Governance, today: dt.date
) -> tuple[AgentCaseResult, list[str]]:
    """A case's result, and the parts of it that check nothing or keep it from gating (the report's warnings)."""
    called: set[str] = set()
    result = evaluate_case(loaded, fixtures, options, max_bytes, gate, today, called)
    found = ignored_checks(loaded.case, options.rules, options.folded_rules) + governance_slips(loaded.case, gate)
    found += called_otherwise(loaded.case, options.rules, called)
    if result.status == "unchecked" and result.gating and result.risk_level == "P0":
        found.append(
            "a gating P0 case with nothing machine-checked (its expectations are text for people), so it can never "
            "fail the gate; add a check object (negative_behavior, success_criteria, expected_tool_sequence, ...)"
        )
    return result, [f"case {loaded.case.case_id}: {w}" for w in found]


_CALLED_KEPT = 1_000  # tool names of a case's runs kept for `called_otherwise`


def called_otherwise(case: AgentCase, rules: dict[str, Check], called: set[str]) -> list[str]:
    """Where a case without available_tools names a tool its runs never call but call one written otherwise
    (`Refund_Submit` for `refund_submit`): names match exactly, so the check or policy judged nothing of that tool
    and the case could pass; validate cannot tell without available_tools, the runs can."""
    if case.tool_names is not None or not called:
        return []
    alike = {look_alike(name): name for name in sorted(called)}
    placed = _placed(rules, criteria(case))
    found: list[str] = []
    for where, tool in [*_tools_named(case, placed), *_forbidden(placed)]:
        near = alike.get(look_alike(tool)) if tool not in called else None
        if near is not None and len(found) < _SUGGESTED:
            found.append(
                f"{where}: '{values.one_line(tool, 100)}' is no tool its runs call, but {values.one_line(near, 100)} "
                "is, written otherwise; tool names match exactly, so this checks nothing of "
                f"{values.one_line(near, 100)}: write the name as the runs have it"
            )
    return found


def ungated_warning(results: list[AgentCaseResult]) -> list[str]:
    """Said when no case of the suite gates: then no failure of it, a P0 case's included, can fail the check, and a
    misspelt usage right in a case or in gate.usage-rights is all it takes."""
    if not results or any(r.gating for r in results):
        return []
    first = results[0]
    return [
        f"no case gates: all {len(results):,} are informational, so no failure among them fails the check (the "
        f"first, {values.one_line(first.case_id, 100)}: {values.one_line(first.not_gating_because or '', 300)}); "
        "check gate.roles and gate.usage-rights in diagbot.yml and the cases' metadata"
    ]


_UNJUDGED_NAMED = 5


def unjudged_warning(results: list[AgentCaseResult]) -> list[str]:
    """The cases with a trial whose run is missing or unreadable, said once for the suite: each fails without its
    run being judged, and a baseline where it fails can never show it regress, so a recording step that broke must
    not pass unseen in a long table."""
    missing = invalid = fewer = 0
    named: list[str] = []
    first = ""  # why the first of them could not be judged: the console's --quiet shows no table to look it up in
    for result in results:
        said = [c for t in result.trial_results for c in t.failed_checks]
        # the case's own trace_missing, of no trial: fewer trials recorded than the suite's `trials: n` needs
        short = [c for c in result.failed_checks if c.startswith(Code.TRACE_MISSING) and c not in said]
        why = next((c for c in said + short if c.startswith((Code.TRACE_MISSING, Code.TRACE_INVALID))), None)
        if why is None:
            continue
        missing += any(c.startswith(Code.TRACE_MISSING) for c in said)
        invalid += any(c.startswith(Code.TRACE_INVALID) for c in said)
        fewer += bool(short)
        named.append(values.one_line(result.case_id, 100))
        first = first or f"; {named[0]}: {values.one_line(why, 300)}"
    if not named:
        return []
    shown = ", ".join(named[:_UNJUDGED_NAMED])
    more = f" and {len(named) - _UNJUDGED_NAMED:,} more" if len(named) > _UNJUDGED_NAMED else ""
    short_of = f", {fewer:,} with fewer trials than the suite's trials: n needs" if fewer else ""
    return [
        f"runs: {len(named):,} of {len(results):,} cases could not be judged on every trial ({missing:,} with a run "
        f"missing, {invalid:,} with a run that could not be read{short_of}): {shown}{more}; such a trial fails "
        f"unjudged, and a baseline where a case fails cannot show it regress: record the runs{first}"
    ]


class Assembly:
    """The report of a suite, put together as its cases' results arrive in order."""

    def __init__(self, options: dict[OptionName, str | int]) -> None:
        self.options = options  # the suite's, as the report records them
        self.results: list[AgentCaseResult] = []
        self.warnings: list[str] = []
        self.unlisted = 0

    def add(self, result: AgentCaseResult, found: list[str]) -> None:
        self.results.append(result)
        kept = found[: max(0, MAX_WARNINGS - len(self.warnings))]
        self.warnings += kept
        self.unlisted += len(found) - len(kept)

    def report(self, fixtures: Fixtures, suite: str | None, run: RunInfo | None, notes: list[str]) -> AgentReport:
        warnings = fixtures.left_out_warning() + ungated_warning(self.results) + unjudged_warning(self.results)
        warnings += notes + self.warnings
        if self.unlisted:
            warnings.append(f"... and {self.unlisted:,} more of these warnings (diagbot validate lists them all)")
        return build_report(self.results, suite, run, warnings, self.options)


def evaluate_cases(
    cases: Iterable[LoadedCase], fixtures: Path, options: AgentOptions, max_bytes: int, gate: Governance,
    suite: str | None = None, run: RunInfo | None = None,
) -> AgentReport:  # fmt: skip
    today = today_of(run)
    listed = Fixtures(fixtures)
    assembly = Assembly(options.judging)
    for loaded in cases:
        assembly.add(*judge_case(loaded, listed, options, max_bytes, gate, today))
    return assembly.report(listed, suite, run, options.warnings)
