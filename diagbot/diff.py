"""Structured comparison of two reports: regressions, improvements and plain changes."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from diagbot.models import Output
from diagbot.report import CaseResult, TraceReport


class ItemType(StrEnum):
    REGRESSION = "REGRESSION"
    IMPROVEMENT = "IMPROVEMENT"
    CHANGED = "CHANGED"


class Scope(StrEnum):
    AGGREGATE = "aggregate"
    CASE = "case"


class DiffItem(Output):
    """One difference between baseline and current (the documents' DiagnosisEvalDiffItem)."""

    type: ItemType
    scope: Scope
    case_id: str | None = None
    metric: str
    baseline_value: Any = None
    current_value: Any = None
    delta: float | None = None
    message: str


class Thresholds(Output):
    """When a cost metric's rise counts as a regression: both the relative and the absolute bar must be passed."""

    tool_call_pct: float = 20.0
    tool_call_abs: float = 1.0
    duration_pct: float = 20.0
    duration_abs_ms: float = 500.0
    score_points: float = 5.0


class DiffReport(Output):
    """The comparison of two reports (the documents' DiagnosisEvalDiffReport)."""

    baseline_total_cases: int
    current_total_cases: int
    baseline_passed_cases: int
    current_passed_cases: int
    baseline_pass_rate: float
    current_pass_rate: float
    regression_count: int
    improvement_count: int
    changed_count: int
    has_regression: bool
    items: list[DiffItem]


_TYPE_ORDER = {ItemType.REGRESSION: 0, ItemType.IMPROVEMENT: 1, ItemType.CHANGED: 2}
_SCOPE_ORDER = {Scope.AGGREGATE: 0, Scope.CASE: 1}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _delta(baseline: Any, current: Any) -> float | None:
    b, c = _number(baseline), _number(current)
    return round(c - b, 6) if b is not None and c is not None else None


def item(kind: ItemType, case_id: str | None, metric: str, baseline: Any, current: Any, message: str) -> DiffItem:
    scope = Scope.AGGREGATE if case_id is None else Scope.CASE
    return DiffItem(
        type=kind,
        scope=scope,
        case_id=case_id,
        metric=metric,
        baseline_value=baseline,
        current_value=current,
        delta=_delta(baseline, current),
        message=message,
    )


def better_or_worse(
    case_id: str | None,
    metric: str,
    baseline: Any,
    current: Any,
    higher_is_better: bool,
    label: str,
    show: Callable[[Any], str] | None = None,
    threshold: float = 0.0,
) -> list[DiffItem]:
    """An ordered metric (pass rate, keyword count, score): down is a regression when higher is better.

    A change counts only when it is larger than `threshold` (0: any change)."""
    show = show or _show
    if baseline is None or current is None or baseline == current or abs(current - baseline) <= threshold:
        return []
    worse = (current < baseline) == higher_is_better
    kind = ItemType.REGRESSION if worse else ItemType.IMPROVEMENT
    return [
        item(
            kind,
            case_id,
            metric,
            baseline,
            current,
            f"{label} {'fell' if current < baseline else 'rose'} from {show(baseline)} to {show(current)}",
        )
    ]


def cost(
    case_id: str | None, metric: str, baseline: Any, current: Any, pct: float, minimum: float, unit: str
) -> list[DiffItem]:
    """A cost metric: a change counts only when it is more than `pct` percent AND at least `minimum` units."""
    b, c = _number(baseline), _number(current)
    if b is None or c is None:
        return []
    change = c - b
    relative_ok = abs(change) * 100 > pct * b if b > 0 else change != 0
    if not (relative_ok and abs(change) >= minimum):
        return []
    kind = ItemType.REGRESSION if change > 0 else ItemType.IMPROVEMENT
    percent = f" ({change / b:+.0%})" if b > 0 else ""
    return [
        item(
            kind,
            case_id,
            metric,
            baseline,
            current,
            f"{metric} {'rose' if change > 0 else 'fell'} from {_show(b)}{unit} to {_show(c)}{unit}{percent}",
        )
    ]


def flag(case_id: str, metric: str, baseline: bool | None, current: bool | None, what: str) -> list[DiffItem]:
    """A yes/no metric: true -> false regresses, false -> true improves, one side missing is a plain change."""
    if baseline == current:
        return []
    if baseline is None or current is None:
        side = "only in current" if baseline is None else "only in baseline"
        return [item(ItemType.CHANGED, case_id, metric, baseline, current, f"{what} is {side}")]
    kind = ItemType.REGRESSION if baseline and not current else ItemType.IMPROVEMENT
    return [item(kind, case_id, metric, baseline, current, f"{what} {'lost' if baseline else 'gained'}")]


def changed(case_id: str | None, metric: str, baseline: Any, current: Any, message: str) -> list[DiffItem]:
    return [] if baseline == current else [item(ItemType.CHANGED, case_id, metric, baseline, current, message)]


def case_presence(case_id: str, in_baseline: bool) -> DiffItem:
    """A case on one side only: never a regression by itself (a removed failing case is not an improvement)."""
    message = "case removed (only in the baseline)" if in_baseline else "case added (only in the current run)"
    present = "present"
    return item(
        ItemType.CHANGED,
        case_id,
        "case",
        present if in_baseline else None,
        None if in_baseline else present,
        message,
    )


def percent(value: Any) -> str:
    return f"{value:.1%}"


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if not value.is_integer() else str(int(value))
    return str(value)


def order(items: list[DiffItem], case_order: list[str]) -> list[DiffItem]:
    """Regressions, then improvements, then changes; aggregate before case; then the cases' report order."""
    position: dict[str, int] = {}
    for i, case_id in enumerate(case_order):
        position.setdefault(case_id, i)  # the first listing wins: current order, then removed cases
    return sorted(
        items,
        key=lambda it: (_TYPE_ORDER[it.type], _SCOPE_ORDER[it.scope], position.get(it.case_id or "", -1)),
    )


def summarize(items: list[DiffItem], totals: tuple[int, int, int, int], rates: tuple[float, float]) -> DiffReport:
    """Wrap ordered items with the counts the documents' diff report carries."""
    count = {kind: sum(1 for it in items if it.type is kind) for kind in ItemType}
    return DiffReport(
        baseline_total_cases=totals[0],
        current_total_cases=totals[1],
        baseline_passed_cases=totals[2],
        current_passed_cases=totals[3],
        baseline_pass_rate=rates[0],
        current_pass_rate=rates[1],
        regression_count=count[ItemType.REGRESSION],
        improvement_count=count[ItemType.IMPROVEMENT],
        changed_count=count[ItemType.CHANGED],
        has_regression=count[ItemType.REGRESSION] > 0,
        items=items,
    )


def diff_trace(baseline: TraceReport, current: TraceReport, thresholds: Thresholds | None = None) -> DiffReport:
    """Compare two trace-suite reports by the rules of the documents' baseline diff."""
    t = thresholds or Thresholds()
    items = [
        *better_or_worse(None, "passRate", baseline.pass_rate, current.pass_rate, True, "pass rate", percent),
        *cost(
            None,
            "averageToolCallCount",
            baseline.average_tool_call_count,
            current.average_tool_call_count,
            t.tool_call_pct,
            t.tool_call_abs,
            "",
        ),
        *cost(
            None,
            "averageDurationMs",
            baseline.average_duration_ms,
            current.average_duration_ms,
            t.duration_pct,
            t.duration_abs_ms,
            " ms",
        ),
    ]
    for verdict in sorted(set(baseline.verdict_distribution) | set(current.verdict_distribution)):
        b, c = baseline.verdict_distribution.get(verdict, 0), current.verdict_distribution.get(verdict, 0)
        items += changed(None, f"verdictDistribution.{verdict}", b, c, f"{verdict} verdicts: {b} → {c}")

    base_cases = {r.case_id: r for r in baseline.results}
    current_ids = {r.case_id for r in current.results}
    for now in current.results:
        before = base_cases.get(now.case_id)
        if before is None:
            items.append(case_presence(now.case_id, in_baseline=False))
            continue
        items += _diff_case(before, now, t)
    items += [case_presence(r.case_id, in_baseline=True) for r in baseline.results if r.case_id not in current_ids]

    case_order = [r.case_id for r in current.results] + [r.case_id for r in baseline.results]
    return summarize(
        order(items, case_order),
        (baseline.total_cases, current.total_cases, baseline.passed_cases, current.passed_cases),
        (baseline.pass_rate, current.pass_rate),
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
