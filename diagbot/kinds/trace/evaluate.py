"""Turning a case and its trace into a CaseResult, and a whole suite into a report."""

from __future__ import annotations

from pathlib import Path

from diagbot.core.report import RunInfo
from diagbot.kinds.trace.cases import CaseSuite, TraceCase
from diagbot.kinds.trace.checks import keyword_search, run_checks
from diagbot.kinds.trace.fields import FieldCensus
from diagbot.kinds.trace.fixture import (
    DEFAULT_MAX_FIXTURE_BYTES,
    FixtureProblem,
    Trace,
    fixture_label,
    parse_trace,
    read_fixture,
)
from diagbot.kinds.trace.report import CaseResult, TraceReport, build_report
from diagbot.kinds.trace.search import AnswerSearch


def evaluate_case(case: TraceCase, trace: Trace | FixtureProblem) -> CaseResult:
    """Pure: run every registered check. A fixture problem fails the case with that one reason."""
    if isinstance(trace, FixtureProblem):
        return CaseResult(
            case_id=case.id,
            title=case.title,
            passed=False,
            failed_checks=[f"{trace.code}: {trace.message}"],
            required_keyword_count=len(case.expected_root_cause_keywords),
            evidence_coverage={tool: False for tool in case.required_evidence_tools},
        )
    failed = run_checks(case, trace)
    verifier = trace.verifier
    gatekeeper = verifier.gatekeeper_result if verifier else None
    composer = verifier.composer_output if verifier else None
    seen = trace.tools_seen
    return CaseResult(
        case_id=case.id,
        title=case.title,
        passed=not failed,
        failed_checks=failed,
        verdict=trace.verdict,
        matched_keyword_count=len(keyword_search(case, trace).found),
        required_keyword_count=len(case.expected_root_cause_keywords),
        evidence_coverage={tool: tool in seen for tool in case.required_evidence_tools},
        gatekeeper_status=gatekeeper.status if gatekeeper else None,
        gatekeeper_rule_set_version=gatekeeper.rule_set_version if gatekeeper else None,
        composer_status=composer.status if composer else None,
        claim_check_count=len(verifier.claim_checks) if verifier and verifier.claim_checks is not None else None,
        tool_call_count=trace.tool_call_count if trace.tool_invocations is not None else None,
        duration_ms=trace.duration_ms,
    )


def evaluate_suite(
    suite: CaseSuite,
    fixtures_dir: Path,
    name: str | None = None,
    run: RunInfo | None = None,
    max_fixture_bytes: int = DEFAULT_MAX_FIXTURE_BYTES,
) -> TraceReport:
    """Evaluate every case, reading one fixture at a time so memory stays flat however big the suite. The report
    carries the census's warnings: fields the checks read that no fixture held, and keys that look misspelt."""
    census = FieldCensus()
    results = []
    search: AnswerSearch | None = None  # the last answer searched, shared with the next case when it is the same
    for case in suite.cases:
        data = read_fixture(fixtures_dir, case.trace_fixture, max_fixture_bytes)
        trace = data if isinstance(data, FixtureProblem) else parse_trace(data, fixture_label(case.trace_fixture))
        if isinstance(trace, Trace) and isinstance(data, bytes):
            census.observe(case, trace, data, case.trace_fixture)
            search = trace.share_search(search)
        del data
        results.append(evaluate_case(case, trace))
    return build_report(results, suite=name, run=run, warnings=census.warnings())
