"""The trace suite behind the kind protocol: one incident-diagnosis agent's own trace JSON (seeds 000/002)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from diagbot.core.diff import CaseOutcome, DiffReport, Thresholds
from diagbot.core.errors import CaseFileError, DiagbotError
from diagbot.core.report import headline
from diagbot.core.values import one_line
from diagbot.kinds.base import Annotation, Blocked, SuiteInput, tracked_list
from diagbot.kinds.trace.cases import load_case_file
from diagbot.kinds.trace.diff import diff_trace
from diagbot.kinds.trace.evaluate import evaluate_suite
from diagbot.kinds.trace.report import TraceReport, parse_report
from diagbot.render.markdown import MAX_NOTES, SuiteView, md, removed_notes, warning_notes


def no_cases_warning(label: str) -> str:
    return f"{label}: holds no cases, so the suite evaluates nothing; add cases to it"


class TraceKind:
    name = "trace"
    options: type[BaseModel] | None = None

    def validate(self, suite: SuiteInput) -> list[str]:
        cases = load_case_file(suite.cases, suite.cases_label)
        return [] if cases.cases else [no_cases_warning(suite.cases_label)]

    def blocking(self, report: TraceReport) -> list[Blocked]:
        return []

    def gating(self, report: TraceReport) -> int:
        return report.total_cases

    def outcomes(self, report: TraceReport) -> dict[str, CaseOutcome]:
        return {r.case_id: CaseOutcome(r.passed, not r.passed) for r in report.results}

    def warnings(self, report: TraceReport) -> list[str]:
        return list(report.warnings)

    def evaluate(self, suite: SuiteInput) -> TraceReport:
        cases = load_case_file(suite.cases, suite.cases_label)
        if not suite.fixtures.is_dir():
            raise CaseFileError(
                f"{suite.fixtures_label}: fixtures folder not found, so no case could be judged; "
                "check the --fixtures path or the suite's fixtures in diagbot.yml"
            )
        if suite.progress is not None:
            cases = cases.model_copy(update={"cases": tracked_list(cases.cases, suite.progress)})
        return evaluate_suite(cases, suite.fixtures, suite.name, suite.run, suite.max_fixture_bytes)

    def parse(self, data: dict[str, Any], where: str) -> TraceReport:
        return parse_report(data, where)

    def diff(self, baseline: TraceReport, current: TraceReport, thresholds: Thresholds) -> DiffReport:
        return diff_trace(baseline, current, thresholds)

    def view(self, name: str, report: TraceReport, diff: DiffReport | None) -> SuiteView:
        ordered = sorted(report.results, key=lambda r: r.passed)  # stable: failing first, then file order
        rows = [
            [
                "✅" if r.passed else "❌",
                md(r.case_id, 80),
                md(r.verdict or "none", 20),
                md(
                    "; ".join(r.failed_checks[:3])
                    + (f" (+{len(r.failed_checks) - 3} more)" if len(r.failed_checks) > 3 else "")
                ),
            ]
            for r in ordered
        ]
        return SuiteView(
            name=name, kind=self.name, passed=report.passed_cases, total=report.total_cases,
            pass_rate=report.pass_rate, baseline_pass_rate=diff.baseline_pass_rate if diff else None, diff=diff,
            result_headers=["", "Case", "Verdict", "Failed checks"], result_rows=rows,
            failing=report.total_cases - report.passed_cases,
            notes=removed_notes(diff) + warning_notes(report.warnings),
        )  # fmt: skip

    def annotations(self, suite: SuiteInput, report: TraceReport) -> list[Annotation]:
        failing = [r for r in report.results if not r.passed]
        try:
            lines = load_case_file(suite.cases).lines if failing else {}
        except DiagbotError:
            lines = {}
        return [
            Annotation(
                suite.cases, lines.get(r.case_id, 1), f"{suite.name}: {r.case_id}",
                "; ".join(r.failed_checks) or "the case failed",
            )
            for r in failing
        ]  # fmt: skip

    def console(self, report: TraceReport, limit: int = 20) -> str:
        lines = [headline(report)]
        failing = [r for r in report.results if not r.passed]
        for result in failing[:limit]:
            first = result.failed_checks[0] if result.failed_checks else "failed"
            more = f" (+{len(result.failed_checks) - 1} more)" if len(result.failed_checks) > 1 else ""
            lines.append(f"  FAIL {one_line(result.case_id, 200)}: {one_line(first, 500)}{more}")
        if len(failing) > limit:
            lines.append(f"  ... and {len(failing) - limit} more failing cases (see the report)")
        if not report.total_cases:
            lines.append("  warning: the case file holds no cases, so nothing was evaluated")
        lines += [f"  warning: {one_line(warning, 500)}" for warning in report.warnings[:MAX_NOTES]]
        if len(report.warnings) > MAX_NOTES:
            lines.append(f"  ... and {len(report.warnings) - MAX_NOTES} more warnings (see the report)")
        return "\n".join(lines)
