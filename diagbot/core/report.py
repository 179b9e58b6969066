"""What every suite kind's report shares: where it was made, how it is written, and how its JSON is read."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated, Any, Protocol, TypeVar

import orjson
from pydantic import BaseModel, Field, ValidationError
from pydantic_core import PydanticSerializationError

from diagbot.core import values
from diagbot.core.errors import ReportFormatError
from diagbot.core.models import Output, error_message
from diagbot.core.rates import percent, rate

MAX_CONTAINERS = 2_000_000
SUITE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
"""A suite's name, in diagbot.yml and in every report: it names the report's file and the comment's marker, and is
shown in the comment, so a stored report holding anything else (a forged artifact's) is refused."""
SuiteName = Annotated[str, Field(pattern=SUITE_NAME)]


class RunInfo(Output):
    """Where and when a report was made, and from which of the suite's files: the only part of a report that is not
    a function of what those files hold."""

    git_sha: str | None = None
    ref: str | None = None
    time: str | None = None
    # the suite's cases and fixtures as diagbot.yml names them: a pull request pointing a suite at other runs (a
    # committed copy of the baseline's) would be judged on them, and the diff says so
    cases: str | None = Field(default=None, max_length=4096, exclude_if=lambda v: v is None)
    fixtures: str | None = Field(default=None, max_length=4096, exclude_if=lambda v: v is None)
    # the thresholds costs were compared with (diagbot.yml's, or the command's or the action's inputs): a pull
    # request that loosens them passes a costlier agent, and the next run's comment names the change
    # (any name: one a later diagbot adds must not make its baselines unreadable here)
    thresholds: dict[Annotated[str, Field(max_length=100)], Annotated[float, Field(ge=0)]] | None = Field(
        default=None, max_length=100, exclude_if=lambda v: v is None
    )


class SuiteReport(Protocol):
    """The envelope every kind's report carries (as fields of its own model, so each keeps its JSON order)."""

    @property
    def kind(self) -> str: ...
    @property
    def suite(self) -> str | None: ...
    @property
    def total_cases(self) -> int: ...
    @property
    def passed_cases(self) -> int: ...
    @property
    def pass_rate(self) -> float: ...
    @property
    def run(self) -> RunInfo | None: ...


def headline(report: SuiteReport) -> str:
    """The first line of a suite's console summary: `name: 14/30 cases passed (46.7%)`."""
    shown = percent(report.pass_rate)
    return f"{report.suite or 'suite'}: {report.passed_cases}/{report.total_cases} cases passed ({shown})"


def with_rate(data: Any) -> Any:
    """A report's raw data with `passRate` recomputed from its counts, so a stored rate can never disagree."""
    if isinstance(data, dict):
        total, passed = data.get("totalCases"), data.get("passedCases")
        if isinstance(total, int) and isinstance(passed, int) and not isinstance(total, bool) and passed >= 0:
            data = {**data, "passRate": rate(passed, total)}
    return data


def dump_model(model: Output | SuiteReport) -> str:
    """The JSON text diagbot writes: camelCase, stable key order, UTF-8 kept readable, trailing newline."""
    if not isinstance(model, BaseModel):
        raise TypeError(f"not a model: {type(model).__name__}")
    try:  # pydantic writes the same text as json.dumps(indent=2, ensure_ascii=False), without a copy as dicts
        return model.model_dump_json(indent=2) + "\n"
    except PydanticSerializationError:  # a lone surrogate (an undecodable byte of a name): written as U+FFFD, since
        data = values.replace_surrogates(model.model_dump(mode="json"))  # its escape is refused as a baseline
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def dump_model_bytes(model: Output | SuiteReport) -> bytes:
    """`dump_model` as UTF-8 bytes, written by pydantic without a text copy (a 10,000-case report is 10 MB)."""
    if not isinstance(model, BaseModel):
        raise TypeError(f"not a model: {type(model).__name__}")
    try:
        return model.__pydantic_serializer__.to_json(model, indent=2) + b"\n"
    except PydanticSerializationError:
        return dump_model(model).encode("utf-8")


def load_json_object(text: str, where: str) -> dict[str, Any]:
    """A report file's JSON object, or a ReportFormatError that says where it went wrong. Reports may come from
    an artifact a fork wrote, so the count of arrays and objects is capped before anything is built."""
    if not text or text.isspace():
        raise ReportFormatError(f"{where}: the file is empty; give one diagbot wrote")
    containers = text.count("[") + text.count("{")
    if containers > MAX_CONTAINERS:  # what strings hold does not count: a title of brackets is one value
        containers = values.count_containers(text.encode("utf-8", "surrogatepass"))
    if containers > MAX_CONTAINERS:
        raise ReportFormatError(
            f"{where}: {containers:,} arrays and objects, more than the {MAX_CONTAINERS:,} a report may have"
        )
    try:
        data = values.loads_unique(text)  # a repeated key: which one diagbot wrote is not known
    except json.JSONDecodeError as exc:
        raise ReportFormatError(f"{where}:{exc.lineno}:{exc.colno}: not a JSON report ({exc.msg})") from None
    except values.BadNumber as exc:
        raise ReportFormatError(f"{where}: holds {exc}; no diagbot report holds one") from None
    except (RecursionError, ValueError):
        raise ReportFormatError(f"{where}: nested too deeply or too large to be a diagbot report") from None
    if not isinstance(data, dict):
        raise ReportFormatError(f"{where}: not a diagbot report (expected a JSON object)")
    bad_text = values.surrogate_paths(data, limit=3) if values.may_hold_surrogates(text) else []
    if bad_text:
        raise ReportFormatError(f"{where}: {', '.join(bad_text)} holds a lone surrogate, which is not Unicode text")
    oversized = values.oversized_number(data, text)
    if oversized is not None:  # two durations of 1e308 average to infinity, which no report can hold
        path, number = oversized
        raise ReportFormatError(
            f"{where}: {values.one_line(path, 200)} is {values.one_line(str(number), 60)}, larger than any number "
            f"diagbot writes in a report (at most {values.MAX_REPORT_NUMBER:.0e} in size); give a report diagbot wrote"
        )
    return data


def check_version(data: dict[str, Any], where: str, newest: int, what: str = "report") -> int:
    """The report's schemaVersion (0 when absent); a newer one than this diagbot knows is refused."""
    version = data.get("schemaVersion", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ReportFormatError(f"{where}: schemaVersion must be a whole number, found {json.dumps(version)[:40]}")
    if version > newest:
        raise ReportFormatError(
            f"{where}: {what} schemaVersion {version} is newer than this diagbot understands ({newest}); "
            "upgrade diagbot"
        )
    return version


MAX_PROBLEMS_SHOWN = 10


_Stored = TypeVar("_Stored", bound=BaseModel)


def stored_model(model: type[_Stored], data: dict[str, Any], where: str, what: str) -> _Stored:
    """A stored report as `model`, read strictly as JSON (`load_json_object` decoded it, checked): no value is
    coerced, so `"passed": "yes"`, `"trials": true` or `"durationMs": "5"` is refused rather than read as diagbot
    would never have written it."""
    try:
        return model.model_validate_json(orjson.dumps(data), strict=True)
    except ValidationError as exc:
        raise model_problems(exc, where, what) from None
    except orjson.JSONEncodeError as exc:  # not a value `load_json_object` lets through; said all the same
        raise ReportFormatError(f"{where}: not a readable {what} ({exc})") from None


def model_problems(exc: ValidationError, where: str, what: str) -> ReportFormatError:
    """A stored report the kind's model refused: the first problems, each with its field path (escaped: a forged
    report names its own keys), then how many more."""
    shown = []
    for error in exc.errors()[:MAX_PROBLEMS_SHOWN]:
        loc = values.one_line(".".join(str(part) for part in error["loc"]), 200) or "top level"
        message = error_message(error)
        shown.append(f"{where}: not a readable {what}: {loc}: {message[:1].lower() + message[1:]}")
    more = exc.error_count() - len(shown)
    said = f"{where}: ... and {more} more {'problem' if more == 1 else 'problems'}"
    return ReportFormatError(*shown, *([said] if more > 0 else []))


def counts_agree(total: int, passed: int, results: int, results_passed: int, where: str) -> None:
    """A stored report's counts are its results' counts: a baseline whose `passedCases` or `totalCases` says other
    than its results would show a pass rate that no run gave, and move a rate regression out of sight."""
    if (total, passed) != (results, results_passed):
        raise ReportFormatError(
            f"{where}: totalCases {total} and passedCases {passed} disagree with its results ({results} cases, "
            f"{results_passed} passed); a report's counts are its results' (this one was not written by diagbot, "
            "or was edited)"
        )


def unique_case_ids(case_ids: Iterable[str], where: str) -> None:
    """A stored report holds each case once: with a repeat, the diff would keep one entry and drop the other, and a
    regression recorded in the dropped one would vanish."""
    first: dict[str, int] = {}
    for index, case_id in enumerate(case_ids):
        seen = first.setdefault(case_id, index)
        if seen != index:
            raise ReportFormatError(
                f"{where}: results[{index}] repeats the caseId {values.one_line(case_id, 200)!r} of results[{seen}]; "
                "a report holds each case once (this one was not written by diagbot, or was edited)"
            )
