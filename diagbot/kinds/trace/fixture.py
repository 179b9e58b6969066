"""Trace fixtures: what the agent actually did, read leniently but never trusted.

Only the fields the checks need are modelled; everything else in a fixture is skipped unparsed. Types are
strict (a string where a list belongs is a broken fixture, not an empty list), and every problem becomes a
`FixtureProblem` that names the file and the JSON path, so one bad fixture fails its own case only.

A fixture comes from the pull request, so its cost is bounded by its shape as well as its size: a fixture may
hold at most MAX_JSON_VALUES values (the parser's tree, and the Python values a type error copies, grow with
the number of values, not bytes: 21 million `{}` are only 64 MiB), and each list the checks read at most
MAX_LIST_ITEMS items. Either limit fails the case as fixture_invalid, saying which limit; nothing is cut
silently, since a count or a check on the part not read could turn a failing run into a pass.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from diagbot.core.fs import FileProblem, read_bounded
from diagbot.core.text import Folded
from diagbot.core.values import count_values, first_repeated_key, loads_unique, lone_surrogate, one_line
from diagbot.kinds.trace.codes import Code
from diagbot.kinds.trace.search import AnswerSearch

DEFAULT_MAX_FIXTURE_BYTES = 64 * 1024 * 1024
MAX_LIST_ITEMS = 10_000  # items in each list the checks read (toolInvocations, claims, claim_checks, ...)
UTF8_BOM = b"\xef\xbb\xbf"
MAX_JSON_VALUES = 1_000_000  # values in one fixture: objects, arrays, strings, numbers, booleans and nulls

_Items = Field(max_length=MAX_LIST_ITEMS)  # over it, pydantic stops at the first item past the limit
MAX_LABEL_CHARS = 1_000
"""Characters of a verdict, a status or a rule set version: the report keeps them whole (and a diff compares them),
so a label the size of the fixture would make a report too large for the next run to read as its baseline."""
Label = Annotated[str, Field(max_length=MAX_LABEL_CHARS)]


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, populate_by_name=True)


# The descriptions are the published schema's (`diagbot schema trace-fixture`): what each field is used for.


class ToolInvocation(_Lenient):
    """One tool call the agent made."""

    tool_name: str | None = Field(
        default=None, alias="toolName", description="the tool called; counts as evidence for requiredEvidenceTools"
    )
    success: bool | None = Field(
        default=None, description="whether the call succeeded; type-checked only, since a failed call still counts"
    )


class ToolSummary(_Lenient):
    """One entry of the verifier's own summary of the tools used."""

    tool_name: str | None = Field(default=None, description="a tool used; counts as evidence for requiredEvidenceTools")


class Claim(_Lenient):
    """One claim of the executor's structured answer."""

    status: str | None = Field(default=None, description="`confirmed` or absent: the claim needs evidence_bindings")
    evidence_bindings: Annotated[list[Any] | None, _Items] = Field(
        default=None, description="the evidence a confirmed claim rests on; empty or absent fails claim_unbound"
    )


class ExecutorOutput(_Lenient):
    claims: Annotated[list[Claim] | None, _Items] = Field(default=None, description="checked by claim_unbound")


class GatekeeperResult(_Lenient):
    status: Label | None = Field(
        default=None, description="compared with expectedGatekeeperStatuses; `fail` with a PASS verdict fails"
    )
    rule_set_version: Label | None = Field(default=None, description="compared with expectedGatekeeperRuleSetVersion")


class ComposerOutput(_Lenient):
    status: Label | None = Field(default=None, description="compared with expectedComposerStatuses")


class VerifierEvaluation(_Lenient):
    """The verifier's judgement of the run, and the V2 audit artifacts."""

    verdict: Label | None = Field(default=None, description="PASS, REJECT, ...: checked against allowedVerdicts")
    tool_trace_summary: Annotated[list[ToolSummary] | None, _Items] = Field(
        default=None, description="tools the verifier saw used, besides toolInvocations"
    )
    executor_structured_output: ExecutorOutput | None = None
    gatekeeper_result: GatekeeperResult | None = Field(default=None, description="required by requireV2AuditClosure")
    claim_checks: Annotated[list[Any] | None, _Items] = Field(
        default=None,
        description="objects with claim_id, verification and detail; required by requireV2AuditClosure and "
        "requireClaimChecks",
    )
    composer_output: ComposerOutput | None = Field(
        default=None, description="required by requireV2AuditClosure and requireComposerOutput"
    )


class SelfEvaluation(_Lenient):
    verifier_evaluation: VerifierEvaluation | None = None


class Session(_Lenient):
    answer: str | None = Field(default=None, description="the final answer the keyword checks search")
    total_duration_ms: float | None = Field(
        default=None,
        alias="totalDurationMs",
        allow_inf_nan=False,
        ge=0,  # a negative duration read as a 7,418,397,726% improvement
        le=1e12,  # about 30 years; 1e51 was kept as a 51-digit integer that no report may hold, so the next run
        # refused the report as its baseline
        description="the run's duration in milliseconds, compared with the baseline",
    )
    self_evaluation: SelfEvaluation | None = Field(default=None, alias="selfEvaluation")


class Trace(_Lenient):
    """The parts of a recorded agent run that the checks read."""

    session: Session | None = None
    tool_invocations: list[ToolInvocation] | None = Field(
        default=None,
        alias="toolInvocations",
        max_length=MAX_LIST_ITEMS,
        description="every tool call, in order; their number is compared with the baseline",
    )

    @property
    def answer(self) -> str:
        return (self.session.answer if self.session else None) or ""

    @cached_property
    def search(self) -> AnswerSearch:
        """The answer normalised for matching (once, capped: see `diagbot.core.text.fold`) and searched."""
        return AnswerSearch(self.answer)

    @property
    def folded_answer(self) -> Folded:
        return self.search.folded

    def share_search(self, earlier: AnswerSearch | None) -> AnswerSearch:
        """This trace's search, taken over from an earlier trace's when the two answers are the same: what that
        one found is not searched for again."""
        if earlier is not None and earlier.answer == self.answer:
            self.__dict__["search"] = earlier  # where cached_property keeps its value
        return self.search

    @property
    def verifier(self) -> VerifierEvaluation | None:
        if self.session and self.session.self_evaluation:
            return self.session.self_evaluation.verifier_evaluation
        return None

    @property
    def verdict(self) -> str | None:
        return self.verifier.verdict if self.verifier else None

    @property
    def duration_ms(self) -> int | float | None:
        """The run's duration, as an int when whole (reports keep `8000`, not `8000.0`)."""
        value = self.session.total_duration_ms if self.session else None
        return int(value) if value is not None and value.is_integer() else value

    @property
    def tool_call_count(self) -> int:
        return len(self.tool_invocations or [])

    @property
    def tools_seen(self) -> set[str]:
        """Tools the agent used: its own invocations (failed ones too) plus the verifier's summary."""
        seen = {t.tool_name for t in self.tool_invocations or [] if t.tool_name}
        if self.verifier:
            seen |= {t.tool_name for t in self.verifier.tool_trace_summary or [] if t.tool_name}
        return seen


class FixtureProblem(BaseModel):
    """Why a fixture could not be used: `code` is fixture_missing or fixture_invalid."""

    model_config = ConfigDict(frozen=True)

    code: Code
    message: str


def _json_path(loc: tuple[int | str, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _type_name(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


_EXPECTED = {
    "list_type": "an array",
    "string_type": "a string",
    "bool_type": "a boolean",
    "int_type": "a number",
    "float_type": "a number",
    "model_type": "an object",
    "dict_type": "an object",
}


def _too_many_values(data: bytes) -> int | None:
    """The value count when it may be over MAX_JSON_VALUES, else None. Files up to twice the limit in bytes
    cannot be over it (a value takes at least a byte and a separator), so they cost nothing here."""
    if len(data) <= 2 * MAX_JSON_VALUES:
        return None
    count = count_values(data)
    return count if count > MAX_JSON_VALUES else None


def parse_trace(data: bytes, where: str) -> Trace | FixtureProblem:
    """Parse a fixture's bytes. Pure: never raises for any input."""
    if not data or data.isspace():  # `isspace` stops at the first other byte: no copy, no full scan
        return FixtureProblem(
            code=Code.FIXTURE_INVALID, message=f"{where} is empty (no JSON in it); record the trace again"
        )
    values = _too_many_values(data)
    if values is not None:
        return FixtureProblem(
            code=Code.FIXTURE_INVALID,
            message=f"{where}: holds {values:,} JSON values (objects, arrays, strings, numbers...); "
            f"diagbot reads at most {MAX_JSON_VALUES:,} per fixture",
        )
    try:
        trace = Trace.model_validate_json(data)  # the parser checks UTF-8 itself: no separate decode pass
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as bad:
                return FixtureProblem(
                    code=Code.FIXTURE_INVALID,
                    message=f"{where}: not UTF-8 (bad byte at offset {bad.start}); re-save as UTF-8",
                )
            detail = first["msg"].removeprefix("Invalid JSON: ")
            half = lone_surrogate(data, detail)
            said = half if half is not None else f"not valid JSON ({detail})"
            return FixtureProblem(code=Code.FIXTURE_INVALID, message=f"{where}: {said}")
        if not first["loc"]:
            return FixtureProblem(
                code=Code.FIXTURE_INVALID, message=f"{where}: expected a JSON object at the top level"
            )
        if first["type"] == "too_long":
            return FixtureProblem(
                code=Code.FIXTURE_INVALID,
                message=f"{where}: {_json_path(first['loc'])} has more than {MAX_LIST_ITEMS:,} items; "
                f"diagbot reads at most {MAX_LIST_ITEMS:,}",
            )
        if first["type"] == "string_too_long":
            return FixtureProblem(
                code=Code.FIXTURE_INVALID,
                message=f"{where}: {_json_path(first['loc'])} is {len(first['input']):,} characters long; diagbot "
                f"reads a verdict or a status of at most {MAX_LABEL_CHARS:,}",
            )
        expected = _EXPECTED.get(first["type"], first["msg"].lower().removeprefix("input should be "))
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        return FixtureProblem(
            code=Code.FIXTURE_INVALID,
            message=f"{where}: {_json_path(first['loc'])} should be {expected}, "
            f"found {_type_name(first['input'])}{more}",
        )
    try:  # pydantic's parser keeps the last value of a repeated key: a second "finalAnswer" would hide the first
        loads_unique(data)
    except json.JSONDecodeError as exc:  # it parsed once already: a repeated key
        detail = f"{exc.msg}, line {exc.lineno} column {exc.colno}"
        return FixtureProblem(code=Code.FIXTURE_INVALID, message=f"{where}: not valid JSON ({detail})")
    except (ValueError, RecursionError):  # what only `json` refuses (NaN, 60 digits), which the fixture's parser
        repeated = first_repeated_key(data)  # reads: a repeated key would hide a value all the same
        if repeated is not None:
            return FixtureProblem(
                code=Code.FIXTURE_INVALID,
                message=f"{where}: not valid JSON (duplicate key {one_line(repeated, 100)!r}; keep one)",
            )
    return trace


def load_trace(fixtures_dir: Path, name: str, max_bytes: int = DEFAULT_MAX_FIXTURE_BYTES) -> Trace | FixtureProblem:
    """Read and parse one fixture from inside `fixtures_dir` (see `read_fixture`)."""
    data = read_fixture(fixtures_dir, name, max_bytes)
    return data if isinstance(data, FixtureProblem) else parse_trace(data, fixture_label(name))


def fixture_label(name: str) -> str:
    """How messages name a fixture: as the case's traceFixture wrote it, relative to the fixtures folder."""
    return f"fixture '{one_line(name, 200)}'"  # a case may write any length of name


def read_fixture(fixtures_dir: Path, name: str, max_bytes: int = DEFAULT_MAX_FIXTURE_BYTES) -> bytes | FixtureProblem:
    """The bytes of one fixture inside `fixtures_dir`, without a leading UTF-8 byte-order mark; links that lead
    outside it are refused, and so is anything that is not a regular file (a FIFO, a device, a link loop)."""
    where = fixture_label(name)
    try:
        root = fixtures_dir.resolve()
        path = (fixtures_dir / name).resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL
        return FixtureProblem(code=Code.FIXTURE_INVALID, message=f"{where} cannot be resolved (a symbolic link loop?)")
    if not path.is_relative_to(root):
        return FixtureProblem(code=Code.FIXTURE_INVALID, message=f"{where} resolves outside the fixtures folder")
    try:
        data = read_bounded(path, max_bytes)
    except FileProblem as problem:
        if problem.missing:
            return FixtureProblem(
                code=Code.FIXTURE_MISSING,
                message=f"{where} not found in the fixtures folder; record the trace or fix traceFixture",
            )
        hint = " (raise max-fixture-bytes)" if problem.too_big else ""
        return FixtureProblem(code=Code.FIXTURE_INVALID, message=f"{where} {problem.message}{hint}")
    return data.removeprefix(UTF8_BOM)  # some editors start UTF-8 with one; JSON parsers refuse it
