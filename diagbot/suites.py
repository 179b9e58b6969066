"""Suites of several kinds behind one interface: evaluate, read back, diff and present a report.

Adding a suite kind means adding one entry to `KINDS`; the CLI, the bot and the templates stay as they are.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from diagbot.cases import load_case_file
from diagbot.config import Config, SuiteConfig, SuiteKind
from diagbot.diff import DiffReport, Thresholds, diff_trace
from diagbot.errors import CaseFileError, ReportFormatError
from diagbot.evaluate import evaluate_suite
from diagbot.render import SuiteView, md
from diagbot.report import RunInfo, TraceReport, load_json_object, parse_report
from diagbot.workspace import (
    WORKSPACE_SCHEMA_VERSION,
    Bucket,
    WorkspaceReport,
    diff_workspace,
    judge_suite,
    load_workspace_suite,
)

Report = TraceReport | WorkspaceReport


@dataclass(frozen=True)
class Kind:
    evaluate: Callable[[SuiteConfig, Config, RunInfo | None], Report]
    parse: Callable[[str, str], Report]
    diff: Callable[[Report, Report, Thresholds], DiffReport]
    view: Callable[[str, Report, DiffReport | None], SuiteView]


# --- trace ---------------------------------------------------------------------------------------------------


def _evaluate_trace(suite: SuiteConfig, config: Config, run: RunInfo | None) -> Report:
    cases = load_case_file(config.path(suite.cases), suite.cases)
    return evaluate_suite(cases, config.path(suite.fixtures), suite.name, run, suite.max_fixture_bytes)


def _diff_trace(baseline: Report, current: Report, thresholds: Thresholds) -> DiffReport:
    assert isinstance(baseline, TraceReport) and isinstance(current, TraceReport)
    return diff_trace(baseline, current, thresholds)


def _view_trace(name: str, report: Report, diff: DiffReport | None) -> SuiteView:
    assert isinstance(report, TraceReport)
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
        name=name, kind="trace", passed=report.passed_cases, total=report.total_cases, pass_rate=report.pass_rate,
        baseline_pass_rate=diff.baseline_pass_rate if diff else None, diff=diff,
        result_headers=["", "Case", "Verdict", "Failed checks"], result_rows=rows,
        failing=report.total_cases - report.passed_cases,
    )  # fmt: skip


# --- workspace -----------------------------------------------------------------------------------------------


def _evaluate_workspace(suite: SuiteConfig, config: Config, run: RunInfo | None) -> Report:
    cases, problems = load_workspace_suite(config.path(suite.cases), config.path(suite.fixtures))
    if problems:
        raise CaseFileError(*problems)
    fixtures = config.path(suite.fixtures)
    return judge_suite(cases, fixtures)


def _parse_workspace(text: str, where: str) -> Report:
    version = load_json_object(text, where).get("schemaVersion")
    if isinstance(version, int) and version > WORKSPACE_SCHEMA_VERSION:
        raise ReportFormatError(f"{where}: workspace report schemaVersion {version} is newer than diagbot; upgrade")
    try:
        return WorkspaceReport.model_validate_json(text)
    except ValidationError as exc:
        raise ReportFormatError(f"{where}: not a readable workspace report ({exc.error_count()} problems)") from None


def _diff_workspace(baseline: Report, current: Report, thresholds: Thresholds) -> DiffReport:
    assert isinstance(baseline, WorkspaceReport) and isinstance(current, WorkspaceReport)
    return diff_workspace(baseline, current, thresholds)


def _view_workspace(name: str, report: Report, diff: DiffReport | None) -> SuiteView:
    assert isinstance(report, WorkspaceReport)
    changed = {i.case_id for i in diff.items} if diff else set()
    ordered = sorted(report.results, key=lambda r: (r.verdict == "pass", r.case_id not in changed))
    present = {b for r in report.results for b in r.packet.buckets}
    buckets = [b.value for b in Bucket if b.value in present]  # mode_contract first, then the judging order
    rows = [
        [
            {"pass": "✅", "fail": "❌", "invalid": "⛔"}[r.verdict],
            md(r.case_id, 80),
            f"{r.score:g}",
            md(r.reason or ""),
            *[f"{r.packet.buckets[b].score:g}/{r.packet.buckets[b].points:g}" if b in r.packet.buckets else "—"
              for b in buckets],
        ]
        for r in ordered
    ]  # fmt: skip
    return SuiteView(
        name=name, kind="workspace", passed=report.passed_cases, total=report.total_cases,
        pass_rate=report.pass_rate, baseline_pass_rate=diff.baseline_pass_rate if diff else None, diff=diff,
        result_headers=["", "Case", "Score", "Reason", *buckets], result_rows=rows,
        failing=report.total_cases - report.passed_cases,
    )  # fmt: skip


KINDS: dict[SuiteKind, Kind] = {
    SuiteKind.TRACE: Kind(_evaluate_trace, parse_report, _diff_trace, _view_trace),
    SuiteKind.WORKSPACE: Kind(_evaluate_workspace, _parse_workspace, _diff_workspace, _view_workspace),
}


def report_kind(text: str, where: str) -> SuiteKind:
    """Which kind of report a file holds; reports without `kind` (old or Java) are trace reports."""
    kind = load_json_object(text, where).get("kind", "trace")
    if not isinstance(kind, str) or kind not in set(SuiteKind):
        raise ReportFormatError(f"{where}: not a diagbot report (kind {json.dumps(kind)[:40]})")
    return SuiteKind(kind)


def parse_any_report(text: str, where: str) -> Report:
    return KINDS[report_kind(text, where)].parse(text, where)


def diff_reports(baseline: Report, current: Report, thresholds: Thresholds, where: str = "baseline") -> DiffReport:
    """Diff two reports of the same kind; a kind mismatch is bad input (a baseline from another suite)."""
    if baseline.kind != current.kind:
        raise ReportFormatError(
            f"{where}: is a {baseline.kind} report but the current suite is {current.kind}; "
            "check which file or artifact the baseline comes from"
        )
    return KINDS[SuiteKind(current.kind)].diff(baseline, current, thresholds)


def view(name: str, report: Report, diff: DiffReport | None) -> SuiteView:
    return KINDS[SuiteKind(report.kind)].view(name, report, diff)


def load_report_file(path: Path) -> Report:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportFormatError(f"{path}: report not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportFormatError(f"{path}: cannot read the report ({exc})") from None
    return parse_any_report(text, str(path))
