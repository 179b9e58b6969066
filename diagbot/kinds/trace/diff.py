"""The trace suite's diff rules: the documents' baseline comparison, on the shared diff primitives."""

from __future__ import annotations

from diagbot.core.diff import (
    DiffItem,
    DiffReport,
    ItemType,
    Thresholds,
    better_or_worse,
    case_presence,
    changed,
    common_ids,
    cost,
    flag,
    item,
    order,
    renamed,
    summarize,
)
from diagbot.core.rates import percent
from diagbot.kinds.trace.report import CaseResult, TraceReport, build_report


def diff_trace(baseline: TraceReport, current: TraceReport, thresholds: Thresholds | None = None) -> DiffReport:
    """Compare two trace-suite reports by the rules of the documents' baseline diff."""
    t = thresholds or Thresholds()
    common = common_ids((r.case_id for r in baseline.results), (r.case_id for r in current.results))
    before = build_report([r for r in baseline.results if r.case_id in common])
    now = build_report([r for r in current.results if r.case_id in common])
    label = "pass rate" if len(common) == baseline.total_cases == current.total_cases else "common-case pass rate"
    calls = _both_record(baseline, current, common, "tool_call_count")
    durations = _both_record(baseline, current, common, "duration_ms")
    items = [
        *better_or_worse(None, "passRate", before.pass_rate, now.pass_rate, True, label, percent),
        *cost(
            None,
            "averageToolCallCount",
            calls[0].average_tool_call_count,
            calls[1].average_tool_call_count,
            t.tool_call_pct,
            t.tool_call_abs,
            "",
        ),
        *cost(
            None,
            "averageDurationMs",
            durations[0].average_duration_ms,
            durations[1].average_duration_ms,
            t.duration_pct,
            t.duration_abs_ms,
            " ms",
        ),
    ]
    for verdict in sorted(set(before.verdict_distribution) | set(now.verdict_distribution)):
        b, c = before.verdict_distribution.get(verdict, 0), now.verdict_distribution.get(verdict, 0)
        items += changed(None, f"verdictDistribution.{verdict}", b, c, f"{verdict} verdicts: {b} → {c}")

    base_cases = {r.case_id: r for r in baseline.results}
    for result in current.results:
        old = base_cases.get(result.case_id)
        items += [case_presence(result.case_id, in_baseline=False)] if old is None else _diff_case(old, result, t)
    items += [case_presence(r.case_id, in_baseline=True) for r in baseline.results if r.case_id not in common]
    items += renamed(
        {r.case_id: r.passed for r in baseline.results if r.case_id not in common},
        {r.case_id: not r.passed for r in current.results if r.case_id not in common},
    )

    case_order = [r.case_id for r in current.results] + [r.case_id for r in baseline.results]
    return summarize(
        order(items, case_order),
        (baseline.total_cases, current.total_cases, baseline.passed_cases, current.passed_cases),
        (baseline.pass_rate, current.pass_rate),
        len(common),
    )


def _both_record(
    baseline: TraceReport, current: TraceReport, common: set[str], field: str
) -> tuple[TraceReport, TraceReport]:
    """Each side's report of the common cases whose traces record `field` on both sides: an average over other
    cases on each side (a case recorded again after a run that lost it) would move with no case's cost moving."""
    old = {r.case_id: getattr(r, field) for r in baseline.results if r.case_id in common}
    both = {r.case_id for r in current.results if getattr(r, field) is not None and old.get(r.case_id) is not None}
    return (
        build_report([r for r in baseline.results if r.case_id in both]),
        build_report([r for r in current.results if r.case_id in both]),
    )


def _diff_case(before: CaseResult, now: CaseResult, t: Thresholds) -> list[DiffItem]:
    case_id = now.case_id
    items: list[DiffItem] = []
    if before.passed != now.passed:
        reason = f": {now.failed_checks[0]}" if now.failed_checks and not now.passed else ""
        message = f"case now fails{reason}" if before.passed else "case now passes"
        kind = ItemType.REGRESSION if before.passed else ItemType.IMPROVEMENT
        items.append(item(kind, case_id, "passed", before.passed, now.passed, message))
    for tool in sorted(set(before.evidence_coverage) | set(now.evidence_coverage)):
        items += flag(
            case_id,
            f"evidenceCoverage.{tool}",
            before.evidence_coverage.get(tool),
            now.evidence_coverage.get(tool),
            f"evidence from {tool}",
        )
    items += better_or_worse(
        case_id,
        "matchedKeywordCount",
        before.matched_keyword_count,
        now.matched_keyword_count,
        True,
        "matched root-cause keywords",
    )
    items += cost(
        case_id,
        "toolCallCount",
        before.tool_call_count,
        now.tool_call_count,
        t.tool_call_pct,
        t.tool_call_abs,
        "",
    )
    items += cost(case_id, "durationMs", before.duration_ms, now.duration_ms, t.duration_pct, t.duration_abs_ms, " ms")
    items += changed(
        case_id,
        "verdict",
        before.verdict,
        now.verdict,
        f"verdict changed from {before.verdict or 'none'} to {now.verdict or 'none'}",
    )
    return items
