"""Loading trace-suite case files: strict, with every problem named by file, case and field."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import ConfigDict, Field, ValidationError

from diagbot.core import values
from diagbot.core.errors import CaseFileError
from diagbot.core.fs import FileProblem, read_text_bounded
from diagbot.core.models import StrictInput
from diagbot.core.text import Suggestions, fold

MAX_CASE_FILE_BYTES = 16 * 1024 * 1024
MAX_LIST_ITEMS = 1_000
"""Items in one of a case's lists (keywords, tools, statuses): each keyword is searched for in the whole answer,
so the list's length multiplies the work of every check that reads it."""
Items = Annotated[list[str], Field(max_length=MAX_LIST_ITEMS)]


class TraceCase(StrictInput):
    """What one diagnosis must achieve. Field names on the wire are the documents' camelCase names."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    id: str = Field(min_length=1)
    title: str = ""
    question: str = ""
    trace_fixture: str = Field(alias="traceFixture", min_length=1)
    expected_root_cause_keywords: Items = Field(default_factory=list, alias="expectedRootCauseKeywords")
    min_keyword_matches: int | None = Field(default=None, ge=0, alias="minKeywordMatches")
    required_evidence_tools: Items = Field(default_factory=list, alias="requiredEvidenceTools")
    allowed_verdicts: Items = Field(default_factory=list, alias="allowedVerdicts")
    forbidden_answer_keywords: Items = Field(default_factory=list, alias="forbiddenAnswerKeywords")
    require_v2_audit_closure: bool = Field(default=False, alias="requireV2AuditClosure")
    require_claim_checks: bool = Field(default=False, alias="requireClaimChecks")
    require_composer_output: bool = Field(default=False, alias="requireComposerOutput")
    expected_gatekeeper_statuses: Items = Field(default_factory=list, alias="expectedGatekeeperStatuses")
    expected_gatekeeper_rule_set_version: str | None = Field(default=None, alias="expectedGatekeeperRuleSetVersion")
    expected_composer_statuses: Items = Field(default_factory=list, alias="expectedComposerStatuses")
    forbidden_confirmed_claim_keywords: Items = Field(default_factory=list, alias="forbiddenConfirmedClaimKeywords")
    degradation_keywords: Items = Field(default_factory=list, alias="degradationKeywords")

    @property
    def required_keyword_matches(self) -> int:
        """How many keywords must match: all of them unless minKeywordMatches says otherwise."""
        if self.min_keyword_matches is None:
            return len(self.expected_root_cause_keywords)
        return self.min_keyword_matches


FIELD_NAMES = [f.alias or name for name, f in TraceCase.model_fields.items()]
PHRASE_LISTS = (
    "expectedRootCauseKeywords",
    "forbiddenAnswerKeywords",
    "degradationKeywords",
    "forbiddenConfirmedClaimKeywords",
)
"""The lists searched for in the answer, compared after NFKC and case folding; the other lists are names, compared
as written (tools, verdicts, statuses)."""
NAME_LISTS = ("requiredEvidenceTools", "allowedVerdicts", "expectedGatekeeperStatuses", "expectedComposerStatuses")


def _list_problems(raw: dict[str, Any]) -> list[str]:
    """Items of a case's (or the defaults') lists that say nothing: an empty or blank string, and a repeat (for
    phrases, a repeat once normalised: `Connection Pool` repeats `connection pool`). A repeated keyword would count
    twice toward minKeywordMatches. Checked on the lists as written, so a default is checked once, not per case;
    lists of the wrong type are left to the model. One problem per list, with how many more it has."""
    problems = []
    for name in (*PHRASE_LISTS, *NAME_LISTS):
        items = raw.get(name)
        if not isinstance(items, list) or len(items) > MAX_LIST_ITEMS:
            continue
        what, verb = ("phrase", "matches") if name in PHRASE_LISTS else ("name", "names")
        first: dict[str, int] = {}
        bad = []
        for index, item in enumerate(items):
            if not isinstance(item, str):
                break
            folded = fold(item) if what == "phrase" else None
            key = folded.text if folded and not folded.cut else item
            if not key.strip():
                bad.append(f"item [{index}] is empty or blank, so it {verb} nothing; remove it")
            elif (earlier := first.setdefault(key, index)) != index:
                normalised = " once normalised (NFKC, case folded, digits and hyphens as ASCII)"
                how = normalised if items[earlier] != item else ""
                bad.append(
                    f"item [{index}] {_shown(item)} repeats item [{earlier}] {_shown(items[earlier])}{how}; "
                    f"list each {what} once"
                )
        if bad:
            rest = len(bad) - 1
            more = f" (and {rest:,} more {'problem' if rest == 1 else 'problems'} in this list)" if rest else ""
            problems.append(f"field '{name}': {bad[0]}{more}")
    return problems


def _shown(item: str) -> str:
    return f"'{values.one_line(item, 80)}'"


class CaseSuite(StrictInput):
    """A validated case file: the cases in file order and the line each case starts on (for annotations)."""

    path: str
    cases: list[TraceCase]
    lines: dict[str, int]


MAX_SUGGESTIONS = 50  # distinct misspelt fields of one case file given the closest known name (a difflib pass each)


def _suggest(name: str, suggestions: Suggestions) -> str:
    close = suggestions.closest(name, FIELD_NAMES)
    return f" (did you mean {close}?)" if close else f" (known fields: {', '.join(FIELD_NAMES)})"


def _describe(error: dict[str, Any], suggestions: Suggestions) -> str:
    loc = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field '{values.one_line(loc, 200)}'{_suggest(str(error['loc'][0]), suggestions)}"
    if error["type"] == "missing":
        return f"missing required field '{loc}'"
    return f"field '{loc}': {error['msg'].lower()} (found {json.dumps(error.get('input'), default=str)[:60]})"


def _fixture_path_problem(raw: object) -> str | None:
    if not isinstance(raw, str) or not raw:
        return None  # the model reports type problems
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in raw):
        return f"traceFixture {json.dumps(raw)[:80]} holds a control character or a lone surrogate; give a plain path"
    normal = posixpath.normpath(raw.replace("\\", "/"))
    if raw.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", raw) or normal == ".." or normal.startswith("../"):
        return f"traceFixture '{raw}' leaves the fixtures folder: give a path relative to it, without '..'"
    return None


def _case_lines(text: str) -> dict[str, int]:
    """The line of each case's `"id": ...` key (first occurrence), so annotations can point at the case."""
    lines: dict[str, int] = {}
    line, pos = 1, 0
    for match in re.finditer(r'"id"\s*:\s*("(?:[^"\\]|\\.)*")', text):
        line += text.count("\n", pos, match.start())
        pos = match.start()
        try:
            lines.setdefault(json.loads(match.group(1)), line)
        except json.JSONDecodeError:
            continue
    return lines


def _check_defaults(raw: dict[str, Any], suggestions: Suggestions) -> tuple[dict[str, Any], list[str]]:
    """The usable defaults and the problems with the rest, each reported once (not again for every case)."""
    problems = []
    usable = {}
    for key, value in raw.items():
        if key == "id":
            problems.append("'id' cannot have a default; give each case its own id")
        elif key not in FIELD_NAMES:
            problems.append(f"unknown field '{values.one_line(str(key), 200)}'{_suggest(str(key), suggestions)}")
        else:
            usable[key] = value
    path_problem = _fixture_path_problem(usable.get("traceFixture"))
    if path_problem:
        problems.append(path_problem)
        usable.pop("traceFixture")
    try:  # a stand-in case carries the defaults through the same validation as a real one
        stand_in = TraceCase.model_validate({"id": "defaults", "traceFixture": "defaults.json", **usable})
    except ValidationError as exc:
        for error in exc.errors():
            problems.append(_describe(dict(error), suggestions))
            usable.pop(str(error["loc"][0]), None)
    else:
        if usable.keys() >= _COUNTED:  # else each case is checked with what it adds
            problems += _unreachable(stand_in)
    problems += _list_problems(usable)
    return usable, problems


_COUNTED = {"minKeywordMatches", "expectedRootCauseKeywords"}


def _unreachable(case: TraceCase) -> list[str]:
    """minKeywordMatches over the number of keywords: the case could never pass."""
    need, have = case.min_keyword_matches, len(case.expected_root_cause_keywords)
    if need is None or need <= have:
        return []
    return [
        f"field 'minKeywordMatches': {need} is more than the {have} expectedRootCauseKeywords, so the case can "
        "never pass; lower it or add keywords"
    ]


def parse_case_file(text: str, path: str) -> CaseSuite:
    """Validate a case file's text. Raises CaseFileError listing every problem, each naming file, case, field."""
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark, which some editors write
    if not text.strip():
        raise CaseFileError(f"{path}: the case file is empty; write a JSON array of cases (see the README)")
    try:
        data = values.loads_written(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(
            f"{path}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg}); fix the syntax and run again"
        ) from None
    except values.BadNumber as exc:
        raise CaseFileError(f"{path}: holds {exc}; case files need only small whole numbers") from None
    except RecursionError:
        raise CaseFileError(f"{path}: nested too deeply to be a case file") from None
    surrogates = values.may_hold_surrogates(text)
    suggestions = Suggestions(MAX_SUGGESTIONS)  # one budget for the whole file
    defaults: dict[str, Any] = {}
    problems: list[str] = []
    if isinstance(data, dict):
        unknown = sorted(set(data) - {"defaults", "cases"})
        if unknown:
            problems.append(f"{path}: unknown top-level key(s) {unknown}; expected 'defaults' and 'cases'")
        raw_defaults = data.get("defaults", {})
        raw_cases = data.get("cases")
        if not isinstance(raw_defaults, dict):
            problems.append(f"{path}: 'defaults' must be an object of case fields")
        elif surrogates and values.surrogate_paths(raw_defaults):
            problems.append(f"{path}: defaults: a string holds a lone surrogate, which is not Unicode text")
        else:
            defaults, found = _check_defaults(raw_defaults, suggestions)
            problems += [f"{path}: defaults: {problem}" for problem in found]
    else:
        raw_cases = data
    if not isinstance(raw_cases, list):
        problems.append(f"{path}: expected an array of cases, or an object with a 'cases' array")
        raise CaseFileError(*problems)

    cases: list[TraceCase] = []
    lines = _case_lines(text)
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_cases):
        label = f"case #{index + 1}"
        if not isinstance(raw, dict):
            problems.append(f"{path}: {label}: expected an object, found {type(raw).__name__}")
            continue
        bad_text = values.surrogate_paths(raw) if surrogates else []
        if bad_text:
            problems.append(
                f"{path}: {label}: {', '.join(bad_text)} holds a lone surrogate (an unpaired \\ud800-\\udfff "
                "escape), which is not Unicode text; fix the string"
            )
            continue
        raw_id = raw.get("id")
        duplicate = False
        if isinstance(raw_id, str) and raw_id:
            label = f"case '{raw_id}' (#{index + 1})"
            duplicate = raw_id in seen
            if duplicate:
                problems.append(f"{path}: {label}: duplicate id '{raw_id}' (first used by case #{seen[raw_id]})")
            else:
                seen[raw_id] = index + 1
        path_problem = _fixture_path_problem(raw.get("traceFixture"))
        if path_problem:
            problems.append(f"{path}: {label}: {path_problem}")
        found = _list_problems(raw)
        try:
            case = TraceCase.model_validate({**defaults, **raw})
        except ValidationError as exc:
            found += [_describe(dict(e), suggestions) for e in exc.errors()]
        else:
            found += [] if defaults.keys() >= _COUNTED and not _COUNTED & raw.keys() else _unreachable(case)
        problems += [f"{path}: {label}: {problem}" for problem in found]
        if not found and not duplicate:
            cases.append(case)
    if problems:
        raise CaseFileError(*problems)
    return CaseSuite(path=path, cases=cases, lines={case.id: lines.get(case.id, 1) for case in cases})


def load_case_file(path: Path, display: str | None = None) -> CaseSuite:
    """Read and validate a case file from disk."""
    shown = display or str(path)
    try:
        text = read_text_bounded(path, MAX_CASE_FILE_BYTES)
    except FileProblem as problem:
        if problem.missing:
            raise CaseFileError(f"{shown}: case file not found; check the --cases path or diagbot.yml") from None
        raise CaseFileError(f"{shown}: the case file {problem.message}") from None
    return parse_case_file(text, shown)
