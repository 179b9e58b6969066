"""Trace-suite reports: per-case results and the aggregate, written and read back as versioned JSON.

Writing is deterministic (same inputs, same bytes, apart from `run`). Reading is lenient by version: reports
from older diagbot versions and from the original Java evaluator (same field names, no `schemaVersion`) load.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, model_validator

from diagbot.errors import ReportFormatError
from diagbot.models import Output

SCHEMA_VERSION = 1
NO_VERDICT = "NONE"


class RunInfo(Output):
    """Where and when a report was made: the only part of a report that is not a function of its inputs."""

    git_sha: str | None = None
    ref: str | None = None
    time: str | None = None


class CaseResult(Output):
    """One case's outcome (the documents' DiagnosisEvalResult)."""

    case_id: str
    title: str | None = ""  # the Java evaluator writes null for an untitled case
    passed: bool
    failed_checks: list[str] = Field(default_factory=list)
    verdict: str | None = None
    matched_keyword_count: int = 0
    required_keyword_count: int = 0
    evidence_coverage: dict[str, bool] = Field(default_factory=dict)
    gatekeeper_status: str | None = None
    gatekeeper_rule_set_version: str | None = None
    composer_status: str | None = None
    claim_check_count: int | None = None
    tool_call_count: int | None = None
    duration_ms: int | float | None = None


class TraceReport(Output):
    """A whole trace suite's outcome (the documents' DiagnosisEvalReport) plus schemaVersion and run."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["trace"] = "trace"
    suite: str | None = None
    total_cases: int
    passed_cases: int
    pass_rate: float
    verdict_distribution: dict[str, int] = Field(default_factory=dict)
    average_tool_call_count: float | None = None
    average_duration_ms: float | None = None
    results: list[CaseResult]
    run: RunInfo | None = None

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        # Version 0 is the Java evaluator's format: same fields, no schemaVersion or kind.
        if isinstance(data, dict) and "schemaVersion" not in data and "schema_version" not in data:
            data = {**data, "schemaVersion": 0}
        return data


def _average(values: list[int | float | None]) -> float:
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 3) if present else 0.0


def build_report(results: list[CaseResult], suite: str | None = None, run: RunInfo | None = None) -> TraceReport:
    """Aggregate per-case results. Averages are over the cases whose trace had a value."""
    passed = sum(r.passed for r in results)
    verdicts = Counter(r.verdict or NO_VERDICT for r in results)
    return TraceReport(
        schema_version=SCHEMA_VERSION,
        suite=suite,
        total_cases=len(results),
        passed_cases=passed,
        pass_rate=round(passed / len(results), 6) if results else 0.0,
        verdict_distribution=dict(sorted(verdicts.items())),
        average_tool_call_count=_average([r.tool_call_count for r in results]),
        average_duration_ms=_average([r.duration_ms for r in results]),
        results=results,
        run=run,
    )


def dump_model(model: Output) -> str:
    """The JSON text diagbot writes: camelCase, stable key order, UTF-8 kept readable, trailing newline."""
    return json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def write_file(path: Path, text: str) -> None:
    """Write one output file as UTF-8, making its folder first (every file diagbot writes goes through here)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _problems(exc: ValidationError, where: str) -> list[str]:
    shown = [
        f"{where}: {'.'.join(str(p) for p in e['loc']) or 'top level'}: {e['msg'].lower()}" for e in exc.errors()[:10]
    ]
    more = exc.error_count() - len(shown)
    return shown + ([f"{where}: ... and {more} more problems"] if more > 0 else [])


def load_json_object(text: str, where: str) -> dict[str, Any]:
    """A report file's JSON object, or a ReportFormatError that says where it went wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportFormatError(f"{where}:{exc.lineno}:{exc.colno}: not a JSON report ({exc.msg})") from None
    except RecursionError:
        raise ReportFormatError(f"{where}: nested too deeply to be a diagbot report") from None
    if not isinstance(data, dict):
        raise ReportFormatError(f"{where}: not a diagbot report (expected a JSON object)")
    return data


def parse_report(text: str, where: str) -> TraceReport:
    """Read a report written by diagbot (any schema version) or by the Java evaluator."""
    data = load_json_object(text, where)
    version = data.get("schemaVersion", 0)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ReportFormatError(f"{where}: schemaVersion must be a whole number, found {json.dumps(version)[:40]}")
    if version > SCHEMA_VERSION:
        raise ReportFormatError(
            f"{where}: report schemaVersion {data['schemaVersion']} is newer than this diagbot understands "
            f"({SCHEMA_VERSION}); upgrade diagbot"
        )
    try:
        return TraceReport.model_validate(data)
    except ValidationError as exc:
        raise ReportFormatError(*_problems(exc, where)) from None
