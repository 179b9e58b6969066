"""Structured comparison of two reports: regressions, improvements and plain changes."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import ValidationError

from diagbot.core.errors import ReportFormatError
from diagbot.core.models import Output
from diagbot.core.rates import number
from diagbot.core.report import load_json_object
from diagbot.core.text import look_alike


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
    # What the gate needs to know of the case behind the item; kinds that know no such thing keep the defaults.
    gating: bool = True
    severity: str | None = None
    case_version: str | None = None


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
    common_cases: int | None = None  # the cases present on both sides, over which aggregates are compared

    @property
    def gating_regressions(self) -> int:
        """Regressions the gate counts: those of cases that gate (all of them, for kinds without the notion)."""
        return sum(1 for i in self.items if i.type is ItemType.REGRESSION and i.gating)


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
    if b is None and c is None:
        return []
    if b is None or c is None:  # a metric that stops being recorded is no improvement, and no silence either
        what = f"no longer recorded (was {_show(b)}{unit})" if c is None else f"recorded again ({_show(c)}{unit})"
        return [item(ItemType.CHANGED, case_id, metric, baseline, current, f"{metric} {what}")]
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


def case_presence(case_id: str, in_baseline: bool, was: str = "") -> DiffItem:
    """A case on one side only: never a regression by itself (a removed failing case is not an improvement).
    `was`: what the removed case was on the baseline, for the reviewer ("a gating P0 case that failed")."""
    message = "case removed (only in the baseline)" if in_baseline else "case added (only in the current run)"
    message += f": it was {was}" if was else ""
    present = "present"
    return item(
        ItemType.CHANGED,
        case_id,
        "case",
        present if in_baseline else None,
        None if in_baseline else present,
        message,
    )


def renamed(removed: dict[str, bool], added: dict[str, bool]) -> list[DiffItem]:
    """`removed`: each case only the baseline has, and whether it passed there; `added`: each case only the current
    run has, and whether it fails. An added case that fails, whose id differs from a removed passing case's only in
    case, separators or character forms (`payment‐timeout` with U+2010 for `payment-timeout`, `Payment_Timeout`),
    is a regression: the rename would otherwise hide one behind a removal and an addition."""
    passing: dict[str, str] = {}
    for case_id, passed in removed.items():
        if passed:
            passing.setdefault(look_alike(case_id), case_id)
    found = []
    for case_id, fails in added.items():
        old = passing.get(look_alike(case_id)) if fails else None
        if old is not None:
            said = (
                f"fails, and looks like {old!r}, which passed in the baseline and is gone: ids that differ only in "
                "case, separators or character forms are one case to the gate (a rename starts no new history)"
            )
            found.append(item(ItemType.REGRESSION, case_id, "passed", True, False, said))
    return found


class CaseOutcome(NamedTuple):
    """What the gate needs of one case across suites: whether it passed, whether it failed (an agent case may do
    neither: unchecked), whether it gates, and its severity (the agent kind's risk level)."""

    passed: bool
    failed: bool
    gating: bool = True
    severity: str | None = None


def moved(
    baselines: dict[str, dict[str, CaseOutcome]],
    currents: dict[str, dict[str, CaseOutcome]],
    kinds: dict[str, str],
) -> dict[str, list[DiffItem]]:
    """For each suite with a baseline, a regression for each case that passed there, is gone from it, and now
    fails in another suite of the same kind under an id that reads the same (`look_alike`): moved there, it would
    be a removal in one suite and an addition in the other, and the gate would pass. `baselines`: each suite's
    baseline cases (the suites that have one); `currents`: each suite's current cases; `kinds`: each suite's kind.
    Each baseline case is matched once, and not at all when its own suite holds a failing look-alike (its kind's
    diff says that rename)."""
    found: dict[str, list[DiffItem]] = {}
    gone: dict[tuple[str, str], tuple[str, str]] = {}  # (kind, look-alike id) -> (suite, id there): cases that passed
    for suite, cases in baselines.items():
        now = currents.get(suite, {})
        renamed_here = {look_alike(i) for i, o in now.items() if o.failed and i not in cases}
        for case_id, was in cases.items():
            alike = look_alike(case_id)
            if was.passed and case_id not in now and alike not in renamed_here:
                gone.setdefault((kinds[suite], alike), (suite, case_id))
    for suite, cases in currents.items():
        before = baselines.get(suite, {})
        for case_id, outcome in cases.items():
            key = (kinds[suite], look_alike(case_id))
            old = gone.get(key) if outcome.failed and case_id not in before else None
            if old is None or old[0] == suite:
                continue
            del gone[key]
            said = (
                f"moved to suite {suite} (as {case_id!r}), where it fails; it passed in this suite's baseline: a case "
                "moved between suites starts no new history (if it is another case that only shares the id, give "
                "it an id of its own)"
            )
            regression = item(ItemType.REGRESSION, old[1], "passed", True, False, said)
            regression.gating, regression.severity = outcome.gating, outcome.severity
            found.setdefault(old[0], []).append(regression)
    return found


def with_items(diff: DiffReport, items: list[DiffItem]) -> DiffReport:
    """The diff with more items, its counts and `has_regression` with them."""
    count = {kind: sum(1 for it in items if it.type is kind) for kind in ItemType}
    return diff.model_copy(
        update={
            "items": order(diff.items + items, []),  # stable: the diff's own order, each new item in its place
            "regression_count": diff.regression_count + count[ItemType.REGRESSION],
            "improvement_count": diff.improvement_count + count[ItemType.IMPROVEMENT],
            "changed_count": diff.changed_count + count[ItemType.CHANGED],
            "has_regression": diff.has_regression or any(i.type is ItemType.REGRESSION and i.gating for i in items),
        }
    )


def _show(value: Any) -> str:
    if isinstance(value, float):
        return number(value)
    return str(value)


def order(items: list[DiffItem], case_order: list[str]) -> list[DiffItem]:
    """Regressions, then improvements, then changes; within each, what gates before what does not (a comment cut to
    GitHub's size keeps the rows that decide the check), aggregate before case, the more severe case first (a
    removed gating P0 case before a new informational one), a case removed or added before the others of its
    severity where items have one (the agent kind's), then the cases' report order."""
    position: dict[str, int] = {}
    for i, case_id in enumerate(case_order):
        position.setdefault(case_id, i)  # the first listing wins: current order, then removed cases
    return sorted(
        items,
        key=lambda it: (
            _TYPE_ORDER[it.type],
            not it.gating,
            _SCOPE_ORDER[it.scope],
            it.severity is None,
            it.severity or "",
            it.severity is not None and it.metric != "case",  # a case removed or added first (kinds with severity)
            position.get(it.case_id or "", -1),
        ),
    )


def common_ids(baseline: Iterable[str], current: Iterable[str]) -> set[str]:
    """The case ids on both sides: aggregates are compared over these only, so adding a failing case (or
    removing a passing one) is a visible change, never a regression of the pass rate."""
    return set(baseline) & set(current)


def summarize(
    items: list[DiffItem],
    totals: tuple[int, int, int, int],
    rates: tuple[float, float],
    common_cases: int | None = None,
) -> DiffReport:
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
        has_regression=any(it.type is ItemType.REGRESSION and it.gating for it in items),
        items=items,
        common_cases=common_cases,
    )


def moved_inputs(diff: DiffReport, was: dict[str, str | None], now: dict[str, str | None]) -> DiffReport:
    """The diff with a change for each input of the suite (`cases`, `fixtures`, as diagbot.yml names them) that
    both reports record and that differs: a suite pointed at other runs than the baseline's, or other cases, may pass
    by that alone, and the comment must say so (the agent kind names it under its headline too)."""
    found = [
        item(ItemType.CHANGED, None, f"options.{name}", was[name], now[name],
             f"suite {name} read from {now[name]!r}, the baseline's from {was[name]!r}: a case may pass or fail "
             f"differently because it was judged on other {name}, not by the agent")
        for name in sorted(was)
        if was[name] is not None and now.get(name) is not None and was[name] != now[name]
    ]  # fmt: skip
    if not found:
        return diff
    return diff.model_copy(update={"items": diff.items + found, "changed_count": diff.changed_count + len(found)})


def parse_diff(text: str, where: str) -> DiffReport:
    """A diff file diagbot wrote, read with the same caps as a report (it may come from a fork's artifact)."""
    data = load_json_object(text, where)
    try:
        return DiffReport.model_validate(data)
    except ValidationError as exc:
        raise ReportFormatError(f"{where}: not a readable diff ({exc.error_count()} problems)") from None
