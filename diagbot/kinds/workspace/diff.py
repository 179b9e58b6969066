"""The workspace suite's diff rules on the shared primitives: score, pass/fail, bucket scores, check flips."""

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
    item,
    order,
    renamed,
    summarize,
)
from diagbot.core.rates import percent
from diagbot.kinds.workspace.judge import Verdict, WorkspaceReport, WorkspaceResult, build_workspace_report


def diff_workspace(
    baseline: WorkspaceReport, current: WorkspaceReport, thresholds: Thresholds | None = None
) -> DiffReport:
    """The workspace rules on the shared diff pipeline: score beyond the threshold, pass/fail, bucket scores and
    check flips; fail <-> invalid and a mode switch are plain changes."""
    points = (thresholds or Thresholds()).score_points
    common = common_ids((r.case_id for r in baseline.results), (r.case_id for r in current.results))
    old = build_workspace_report([r for r in baseline.results if r.case_id in common])
    new = build_workspace_report([r for r in current.results if r.case_id in common])
    every = len(common) == baseline.total_cases == current.total_cases
    rate_label, score_label = (
        ("pass rate", "average score") if every else ("common-case pass rate", "common-case average score")
    )
    items = [
        *better_or_worse(None, "passRate", old.pass_rate, new.pass_rate, True, rate_label, percent),
        *better_or_worse(None, "averageScore", old.average_score, new.average_score, True, score_label, None, points),
    ]
    before = {result.case_id: result for result in baseline.results}
    for result in current.results:
        was = before.get(result.case_id)
        items += [case_presence(result.case_id, in_baseline=False)] if was is None else _case_diff(was, result, points)
    items += [case_presence(r.case_id, in_baseline=True) for r in baseline.results if r.case_id not in common]
    items += renamed(
        {r.case_id: r.verdict is Verdict.PASS for r in baseline.results if r.case_id not in common},
        {r.case_id: r.verdict is not Verdict.PASS for r in current.results if r.case_id not in common},
    )
    return summarize(
        order(items, [r.case_id for r in current.results] + [r.case_id for r in baseline.results]),
        (baseline.total_cases, current.total_cases, baseline.passed_cases, current.passed_cases),
        (baseline.pass_rate, current.pass_rate),
        len(common),
    )


def _flip(case_id: str, metric: str, before: bool, after: bool, message: str) -> list[DiffItem]:
    """True -> False is a regression, False -> True an improvement."""
    if before == after:
        return []
    return [item(ItemType.REGRESSION if before else ItemType.IMPROVEMENT, case_id, metric, before, after, message)]


def _case_diff(old: WorkspaceResult, new: WorkspaceResult, points: float) -> list[DiffItem]:
    """Score, verdict, mode, then every bucket and check present on both sides."""
    case_id = new.case_id
    verdicts = f"verdict {old.verdict} → {new.verdict}" + (f" ({new.reason})" if new.reason else "")
    was = {name: bucket.points for name, bucket in old.packet.buckets.items()}
    now = {name: bucket.points for name, bucket in new.packet.buckets.items()}
    if was != now:  # weights or mode changed: points moved by the case's own scale, not by the run
        shown = ", ".join(f"{n} {was.get(n, 0):g} → {now.get(n, 0):g}" for n in dict.fromkeys([*was, *now]))
        said = f"bucket points changed ({shown}), so the scores are not compared: score {old.score:g} → {new.score:g}"
        items = changed(case_id, "score", old.score, new.score, said)
    else:
        items = better_or_worse(case_id, "score", old.score, new.score, True, "score", None, points)
    items += _flip(case_id, "passed", old.verdict is Verdict.PASS, new.verdict is Verdict.PASS, verdicts)
    if Verdict.PASS not in (old.verdict, new.verdict):
        items += changed(case_id, "verdict", old.verdict.value, new.verdict.value, verdicts)
    items += changed(case_id, "mode", old.mode.value, new.mode.value, f"mode {old.mode} → {new.mode}")
    for name, bucket in new.packet.buckets.items():
        previous = old.packet.buckets.get(name)
        if previous is None:
            continue
        if was == now:
            items += better_or_worse(case_id, f"bucket.{name}", previous.score, bucket.score, True, f"{name} score")
        passed_before = {check.id: check.passed for check in previous.checks}
        for check in bucket.checks:
            if check.id in passed_before:
                items += _flip(case_id, f"check.{name}.{check.id}", passed_before[check.id], check.passed, check.detail)
    return items
