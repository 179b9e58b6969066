"""The workspace suite behind the kind protocol (seed 004)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from diagbot.core.diff import CaseOutcome, DiffReport, Thresholds
from diagbot.core.errors import CaseFileError
from diagbot.core.report import check_version, counts_agree, headline, stored_model, unique_case_ids
from diagbot.core.values import one_line
from diagbot.kinds.base import Annotation, Blocked, SuiteInput, tracked_list
from diagbot.kinds.workspace.diff import diff_workspace
from diagbot.kinds.workspace.judge import (
    WORKSPACE_SCHEMA_VERSION,
    Bucket,
    Reason,
    Verdict,
    WorkspaceReport,
    WorkspaceResult,
    authoring_slips,
    contract_failures,
    contract_needs,
    judge_suite,
    load_workspace_suite,
)
from diagbot.render.markdown import SuiteView, md, removed_notes

_ICONS = {Verdict.PASS: "✅", Verdict.FAIL: "❌", Verdict.INVALID: "⛔"}
_CONTRACT = (Reason.EVIDENCE_ONLY_ARTIFACTS_MISSING, Reason.EVIDENCE_ONLY_STAGE_BOUNDARY_FAILED)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _reason(result: WorkspaceResult) -> str:
    """The verdict's reason; for a broken evidence-only contract, with what was missing, invalid or present."""
    if result.reason in _CONTRACT:
        return f"{result.reason}: {'; '.join(contract_failures(result))}"
    return result.reason or ""


class WorkspaceKind:
    name = "workspace"
    options: type[BaseModel] | None = None

    def validate(self, suite: SuiteInput) -> list[str]:
        cases, problems = load_workspace_suite(suite.cases, suite.fixtures)
        if problems:
            raise CaseFileError(*problems)
        if not cases:
            return [f"{suite.cases_label}: holds no <case-id>/case.yaml, so the suite evaluates nothing"]
        return [f"case {case.id}: {slip}" for case in cases for slip in authoring_slips(case)]

    def blocking(self, report: WorkspaceReport) -> list[Blocked]:
        return []

    def gating(self, report: WorkspaceReport) -> int:
        return report.total_cases

    def outcomes(self, report: WorkspaceReport) -> dict[str, CaseOutcome]:
        passing = {r.case_id: r.verdict is Verdict.PASS for r in report.results}
        return {case_id: CaseOutcome(passed, not passed) for case_id, passed in passing.items()}

    def evaluate(self, suite: SuiteInput) -> WorkspaceReport:
        cases, problems = load_workspace_suite(suite.cases, suite.fixtures)
        if problems:
            raise CaseFileError(*problems)
        return judge_suite(tracked_list(cases, suite.progress), suite.fixtures, suite.name, suite.run)

    def parse(self, data: dict[str, Any], where: str) -> WorkspaceReport:
        check_version(data, where, WORKSPACE_SCHEMA_VERSION, "workspace report")
        report = stored_model(WorkspaceReport, data, where, "workspace report")
        unique_case_ids((result.case_id for result in report.results), where)
        passed = sum(result.verdict is Verdict.PASS for result in report.results)
        counts_agree(report.total_cases, report.passed_cases, len(report.results), passed, where)
        return report

    def diff(self, baseline: WorkspaceReport, current: WorkspaceReport, thresholds: Thresholds) -> DiffReport:
        return diff_workspace(baseline, current, thresholds)

    def view(self, name: str, report: WorkspaceReport, diff: DiffReport | None) -> SuiteView:
        changed = {i.case_id for i in diff.items} if diff else set()
        ordered = sorted(report.results, key=lambda r: (r.verdict == "pass", r.case_id not in changed))
        present = {b for r in report.results for b in r.packet.buckets}
        buckets = [b.value for b in Bucket if b.value in present]  # mode_contract first, then the judging order
        rows = [
            [
                _ICONS[r.verdict],
                md(r.case_id, 80),
                f"{r.score:g}",
                md(_reason(r)),
                *[f"{r.packet.buckets[b].score:g}/{r.packet.buckets[b].points:g}" if b in r.packet.buckets else "—"
                  for b in buckets],
            ]
            for r in ordered
        ]  # fmt: skip
        return SuiteView(
            name=name, kind=self.name, passed=report.passed_cases, total=report.total_cases,
            pass_rate=report.pass_rate, baseline_pass_rate=diff.baseline_pass_rate if diff else None, diff=diff,
            result_headers=["", "Case", "Score", "Reason", *buckets], result_rows=rows,
            failing=report.total_cases - report.passed_cases,
            notes=removed_notes(diff) + (
                (md(_capital(contract_needs()), 500),) if any(r.reason in _CONTRACT for r in report.results) else ()
            ),
        )  # fmt: skip

    def annotations(self, suite: SuiteInput, report: WorkspaceReport) -> list[Annotation]:
        found = []
        for w in report.results:
            if w.verdict is Verdict.PASS:
                continue
            missed = [
                f"{name}.{c.id}: {c.detail}"
                for name, bucket in w.packet.buckets.items()
                for c in bucket.checks
                if c.required and not c.passed
            ]
            message = f"{w.verdict} ({w.reason}), score {w.score:g}" + "".join(f"\n{m}" for m in missed)
            found.append(Annotation(suite.cases / w.case_id / "case.yaml", 1, f"{suite.name}: {w.case_id}", message))
        return found

    def console(self, report: WorkspaceReport, limit: int = 20) -> str:
        lines = [headline(report)]
        failing = [r for r in report.results if r.verdict is not Verdict.PASS]
        lines += [f"  {r.verdict.value.upper()} {r.case_id}: {one_line(_reason(r), 500)}, score {r.score:g}"
                  for r in failing[:limit]]  # fmt: skip
        if len(failing) > limit:
            lines.append(f"  ... and {len(failing) - limit} more failing cases (see the report)")
        if any(r.reason in _CONTRACT for r in failing):
            lines.append(f"  note: {contract_needs()}")
        return "\n".join(lines)
