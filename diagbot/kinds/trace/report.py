"""Trace-suite reports: per-case results and the aggregate, written and read back as versioned JSON.

Writing is deterministic (same inputs, same bytes, apart from `run`). Reading is lenient by version: reports
from older diagbot versions and from the original Java evaluator (same field names, no `schemaVersion`) load.
"""

from __future__ import annotations

from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from diagbot.core import values
from diagbot.core.errors import ReportFormatError
from diagbot.core.models import Output
from diagbot.core.rates import rate
from diagbot.core.report import (
    RunInfo,
    SuiteName,
    check_version,
    counts_agree,
    stored_model,
    unique_case_ids,
    with_rate,
)

SCHEMA_VERSION = 1
NO_VERDICT = "NONE"


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
    claim_check_count: int | None = Field(default=None, ge=0)  # a stored report's metrics are never negative
    tool_call_count: int | None = Field(default=None, ge=0)
    duration_ms: Annotated[int, Field(ge=0)] | Annotated[float, Field(ge=0)] | None = None


class TraceReport(Output):
    """A whole trace suite's outcome (the documents' DiagnosisEvalReport) plus schemaVersion and run."""

    schema_version: int = SCHEMA_VERSION
    kind: Literal["trace"] = "trace"
    suite: SuiteName | None = None
    total_cases: int
    passed_cases: int
    pass_rate: float
    verdict_distribution: dict[str, int] = Field(default_factory=dict)
    average_tool_call_count: float | None = Field(default=None, ge=0)
    average_duration_ms: float | None = Field(default=None, ge=0)
    # Said about the fixtures as a whole (a field no fixture held, a misspelt key); never part of a verdict. Added
    # within schema version 1: older reports read as having none, and older diagbots skip the key.
    warnings: list[str] = Field(default_factory=list)
    results: list[CaseResult]
    run: RunInfo | None = None

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        # Version 0 is the Java evaluator's format: same fields, no schemaVersion or kind.
        if isinstance(data, dict) and "schemaVersion" not in data and "schema_version" not in data:
            data = {**data, "schemaVersion": 0}
        return with_rate(data)


def _average(values: list[int | float | None]) -> float | None:
    """None when no case recorded the value: an average of nothing is not 0 (which read as a 100% improvement)."""
    present = [v for v in values if v is not None]
    return round(sum(present) / len(present), 3) if present else None


def build_report(
    results: list[CaseResult],
    suite: str | None = None,
    run: RunInfo | None = None,
    warnings: list[str] | None = None,
) -> TraceReport:
    """Aggregate per-case results. Averages are over the cases whose trace had a value."""
    passed = sum(r.passed for r in results)
    verdicts = Counter(r.verdict or NO_VERDICT for r in results)
    return TraceReport(
        schema_version=SCHEMA_VERSION,
        suite=suite,
        total_cases=len(results),
        passed_cases=passed,
        pass_rate=rate(passed, len(results)),
        verdict_distribution=dict(sorted(verdicts.items())),
        average_tool_call_count=_average([r.tool_call_count for r in results]),
        average_duration_ms=_average([r.duration_ms for r in results]),
        warnings=warnings or [],
        results=results,
        run=run,
    )


def parse_report(data: dict[str, Any], where: str) -> TraceReport:
    """A report written by diagbot (any schema version) or by the Java evaluator, from its decoded JSON."""
    version = check_version(data, where, SCHEMA_VERSION)
    report = stored_model(TraceReport, data, where, "trace report")
    unique_case_ids((result.case_id for result in report.results), where)
    for index, result in enumerate(report.results):  # diagbot fails a case exactly when a check of it failed
        if version >= 1 and result.passed == bool(result.failed_checks):
            said = "passes with failed checks" if result.passed else "fails with no failed check"
            raise ReportFormatError(
                f"{where}: results[{index}] ({values.one_line(result.case_id, 200)!r}) {said}; diagbot fails a case "
                "exactly when one of its checks failed (this report was not written by diagbot, or was edited)"
            )
    passed = sum(result.passed for result in report.results)
    counts_agree(report.total_cases, report.passed_cases, len(report.results), passed, where)
    return report
