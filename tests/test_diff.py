"""Every diff rule and threshold edge, plus properties: self-diff is empty, swapping sides swaps verdicts."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagbot.core.diff import CaseOutcome, ItemType, Thresholds, item, moved, summarize, with_items
from diagbot.kinds.trace.diff import diff_trace
from diagbot.kinds.trace.report import CaseResult, TraceReport, build_report


def result(case_id: str = "a", **overrides: Any) -> CaseResult:
    fields: dict[str, Any] = {
        "case_id": case_id,
        "title": case_id,
        "passed": True,
        "verdict": "PASS",
        "matched_keyword_count": 2,
        "required_keyword_count": 2,
        "evidence_coverage": {"query_logs": True},
        "tool_call_count": 5,
        "duration_ms": 10_000,
    }
    fields.update(overrides)
    return CaseResult(**fields)


def items(before: list[CaseResult], after: list[CaseResult], **thresholds: float) -> list[tuple[str, str, str | None]]:
    diff = diff_trace(build_report(before), build_report(after), Thresholds(**thresholds))
    return [(i.type.value, i.metric, i.case_id) for i in diff.items]


def test_identical_reports_give_nothing() -> None:
    diff = diff_trace(build_report([result()]), build_report([result()]))
    assert diff.items == [] and not diff.has_regression


def test_pass_to_fail_is_regression_with_reason_and_counts() -> None:
    diff = diff_trace(
        build_report([result()]), build_report([result(passed=False, failed_checks=["keyword_coverage: 1 of 2"])])
    )
    assert [(i.type, i.scope.value, i.metric) for i in diff.items] == [
        (ItemType.REGRESSION, "aggregate", "passRate"),
        (ItemType.REGRESSION, "case", "passed"),
    ]
    assert diff.items[1].message == "case now fails: keyword_coverage: 1 of 2"
    assert diff.items[0].delta == -1.0 and diff.items[1].delta is None
    assert (diff.regression_count, diff.has_regression, diff.baseline_pass_rate, diff.current_pass_rate) == (
        2,
        True,
        1.0,
        0.0,
    )


def test_fail_to_pass_is_improvement() -> None:
    assert items([result(passed=False)], [result()]) == [
        ("IMPROVEMENT", "passRate", None),
        ("IMPROVEMENT", "passed", "a"),
    ]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        ({"query_logs": True}, {"query_logs": False}, "REGRESSION"),
        ({"query_logs": False}, {"query_logs": True}, "IMPROVEMENT"),
        ({}, {"query_logs": True}, "CHANGED"),
        ({"query_logs": False}, {}, "CHANGED"),
    ],
    ids=["lost", "gained", "added-tool", "removed-tool"],
)
def test_evidence_coverage(before: dict[str, bool], after: dict[str, bool], expected: str) -> None:
    assert items([result(evidence_coverage=before)], [result(evidence_coverage=after)]) == [
        (expected, "evidenceCoverage.query_logs", "a")
    ]


def test_keyword_count() -> None:
    assert items([result()], [result(matched_keyword_count=1)]) == [("REGRESSION", "matchedKeywordCount", "a")]
    assert items([result(matched_keyword_count=1)], [result()]) == [("IMPROVEMENT", "matchedKeywordCount", "a")]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (5, 6, []),  # +20% exactly: not past the threshold
        (5, 7, ["REGRESSION"]),  # +40%, +2
        (10, 12, []),  # +20% exactly
        (10, 13, ["REGRESSION"]),
        (2, 3, ["REGRESSION"]),  # +50% and exactly 1
        (20, 25, ["REGRESSION"]),
        (7, 5, ["IMPROVEMENT"]),
        (0, 1, ["REGRESSION"]),  # from zero: any rise of at least 1
        (None, 5, ["CHANGED"]),  # recorded on one side only: a change, never silent
    ],
    ids=lambda v: str(v),
)
def test_tool_call_threshold(before: int | None, after: int | None, expected: list[str]) -> None:
    got = items([result(tool_call_count=before)], [result(tool_call_count=after)])
    assert [kind for kind, metric, case in got if case == "a"] == expected
    assert all(metric == "toolCallCount" for _, metric, case in got if case == "a")


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (2500, 3000, []),  # +500 ms is exactly 20%: the percentage must be exceeded
        (2400, 2900, ["REGRESSION"]),  # exactly 500 ms and +20.8%: "at least 500 ms" holds
        (2000, 2499, []),  # +25% but 499 ms
        (10_000, 12_000, []),  # exactly +20%
        (10_000, 12_001, ["REGRESSION"]),
        (12_001, 10_000, []),  # -16.7%: within the band
        (10_000, 7_999, ["IMPROVEMENT"]),  # -20.01% and 2 s
    ],
    ids=["500ms-at-20pct", "500ms-past-20pct", "499ms", "at-20pct", "past-20pct", "small-fall", "big-fall"],
)
def test_duration_threshold(before: int, after: int, expected: list[str]) -> None:
    got = items([result(duration_ms=before)], [result(duration_ms=after)])
    assert [kind for kind, metric, case in got if case] == expected


def test_thresholds_are_configurable() -> None:
    got = items([result(duration_ms=1000)], [result(duration_ms=1100)], duration_pct=5, duration_abs_ms=50)
    assert ("REGRESSION", "durationMs", "a") in got


def test_aggregate_averages_use_thresholds() -> None:
    before = [result("a", tool_call_count=5), result("b", tool_call_count=5)]
    after = [result("a", tool_call_count=9), result("b", tool_call_count=9)]
    assert items(before, after)[0] == ("REGRESSION", "averageToolCallCount", None)


def test_verdict_changes_and_distribution() -> None:
    assert items([result(verdict="PASS")], [result(verdict="LOW_CONFID")]) == [
        ("CHANGED", "verdictDistribution.LOW_CONFID", None),
        ("CHANGED", "verdictDistribution.PASS", None),
        ("CHANGED", "verdict", "a"),
    ]


def test_added_and_removed_cases_are_changes_in_order() -> None:
    got = items([result("a"), result("gone")], [result("new"), result("a")])
    assert got == [("CHANGED", "case", "new"), ("CHANGED", "case", "gone")]


def test_order_regressions_improvements_changes_aggregate_first() -> None:
    before = [result("a"), result("b", passed=False), result("c")]
    after = [result("a", passed=False), result("b"), result("c", verdict="REJECT")]
    kinds = [(k, c) for k, _, c in items(before, after)]
    assert kinds == [
        ("REGRESSION", "a"),
        ("IMPROVEMENT", "b"),
        ("CHANGED", None),
        ("CHANGED", None),
        ("CHANGED", "c"),
    ]


def test_java_report_without_new_fields_diffs() -> None:
    java = TraceReport.model_validate(
        {
            "totalCases": 1,
            "passedCases": 1,
            "passRate": 1.0,
            "verdictDistribution": {"PASS": 1},
            "averageToolCallCount": 5.0,
            "averageDurationMs": 10000.0,
            "results": [{"caseId": "a", "title": "a", "passed": True, "failedChecks": [], "verdict": "PASS",
                         "matchedKeywordCount": 2, "requiredKeywordCount": 2,
                         "evidenceCoverage": {"query_logs": True}, "toolCallCount": 5, "durationMs": 10000}],
        }
    )  # fmt: skip
    assert java.schema_version == 0
    assert diff_trace(java, build_report([result(title="a")])).items == []


# --- properties -------------------------------------------------------------------------------------------

case_ids = st.sampled_from(["a", "b", "c", "d"])
results = st.builds(
    lambda **fields: CaseResult(**fields),
    case_id=case_ids,
    passed=st.booleans(),
    verdict=st.sampled_from([None, "PASS", "LOW_CONFID", "REJECT"]),
    matched_keyword_count=st.integers(0, 4),
    evidence_coverage=st.dictionaries(st.sampled_from(["query_logs", "query_metrics"]), st.booleans(), max_size=2),
    tool_call_count=st.one_of(st.none(), st.integers(0, 30)),
    duration_ms=st.one_of(st.none(), st.integers(0, 60_000)),
)
reports = st.lists(results, max_size=4, unique_by=lambda r: r.case_id).map(build_report)


@settings(max_examples=200, deadline=None)
@given(reports)
def test_self_diff_is_empty(report: TraceReport) -> None:
    assert diff_trace(report, report).items == []


@settings(max_examples=300, deadline=None)
@given(reports, reports)
def test_swapping_sides_swaps_regressions_and_improvements(a: TraceReport, b: TraceReport) -> None:
    forward = {(i.metric, i.case_id): i.type for i in diff_trace(a, b).items}
    backward = {(i.metric, i.case_id): i.type for i in diff_trace(b, a).items}
    swap = {ItemType.REGRESSION: ItemType.IMPROVEMENT, ItemType.IMPROVEMENT: ItemType.REGRESSION}
    for key, kind in forward.items():
        if key[0] in COST_METRICS:
            # The percentage is taken of the baseline, so +25% one way is -20% the other: only the
            # direction must flip when both directions fire.
            assert backward.get(key, swap.get(kind)) == swap.get(kind, kind), key
        else:
            assert backward[key] == swap.get(kind, kind), key
    assert {k for k in forward if k[0] not in COST_METRICS} == {k for k in backward if k[0] not in COST_METRICS}


COST_METRICS = {"toolCallCount", "durationMs", "averageToolCallCount", "averageDurationMs"}


def test_case_items_follow_the_current_reports_order() -> None:
    before = [result("a"), result("b"), result("c")]
    after = [result("c", passed=False), result("new"), result("b", passed=False), result("a", passed=False)]
    assert [c for kind, metric, c in items(before, after) if metric in ("passed", "case")] == ["c", "b", "a", "new"]


def test_a_new_failing_case_is_a_change_not_a_regression() -> None:
    """Fault 2: adding a failing case used to lower the aggregate pass rate and count as a REGRESSION."""
    before = [result("a"), result("b")]
    after = [result("a"), result("b"), result("new", passed=False, tool_call_count=50, duration_ms=90_000)]
    diff = diff_trace(build_report(before), build_report(after))
    assert [(i.type.value, i.metric, i.case_id) for i in diff.items] == [("CHANGED", "case", "new")]
    assert (diff.regression_count, diff.common_cases, diff.current_pass_rate) == (0, 2, round(2 / 3, 6))


def test_a_removed_passing_case_stays_visible_and_is_no_improvement() -> None:
    before = [result("a", passed=False), result("b"), result("gone")]
    after = [result("a", passed=False), result("b")]
    diff = diff_trace(build_report(before), build_report(after))
    assert [(i.type.value, i.metric, i.case_id) for i in diff.items] == [("CHANGED", "case", "gone")]
    assert diff.items[0].message == "case removed (only in the baseline)"


def test_aggregates_compare_only_the_common_cases() -> None:
    before = [result("a", tool_call_count=5), result("gone", tool_call_count=100)]
    after = [result("a", tool_call_count=9), result("new", tool_call_count=1)]
    got = items(before, after)
    assert ("REGRESSION", "averageToolCallCount", None) in got  # 5 -> 9 over the one common case
    diff = diff_trace(build_report(before), build_report(after))
    assert next(i for i in diff.items if i.metric == "averageToolCallCount").message.startswith(
        "averageToolCallCount rose from 5 to 9"
    )


def test_the_common_pass_rate_is_labelled_as_such() -> None:
    before = [result("a"), result("b"), result("gone")]
    after = [result("a"), result("b", passed=False), result("new")]
    rate = next(i for i in diff_trace(build_report(before), build_report(after)).items if i.metric == "passRate")
    assert (rate.type.value, rate.message) == ("REGRESSION", "common-case pass rate fell from 100.0% to 50.0%")


def test_a_metric_that_stops_being_recorded_is_a_change_not_an_improvement() -> None:
    """A fixture that lost its toolInvocations and totalDurationMs: no case item, and the averages of nothing
    (0) read as 100% improvements."""
    before = [result(tool_call_count=7, duration_ms=13480)]
    after = [result(tool_call_count=None, duration_ms=None)]
    got = items(before, after)
    assert ("CHANGED", "toolCallCount", "a") in got and ("CHANGED", "durationMs", "a") in got, got
    assert not any(kind == "IMPROVEMENT" for kind, _, _ in got), got


@pytest.mark.parametrize(
    "renamed_to",
    ["payment\u2010timeout", "Payment-Timeout", "payment_timeout", "ｐａｙｍｅｎｔ-timeout",
     "payment\u2212timeout", "p\u0430yment-timeout", "\u0420AYMENT-TIMEOUT", "payment\u2796time\u03bfut",
     "payment-t\u04c0meout", "PAYMENT-T\u0399MEOUT"],
)  # fmt: skip  # the last six found by a hostile pass and its review: minus signs, Cyrillic а Р Ӏ, Greek ο Ι
def test_a_failing_look_alike_of_a_removed_passing_case_is_a_regression(renamed_to: str) -> None:
    """Renaming a case that now fails to an id that reads the same (a U+2010 hyphen, another case) turned its
    regression into "removed" plus "added", and the gate passed."""
    before = [result("payment-timeout"), result("b")]
    after = [result(renamed_to, passed=False), result("b")]
    diff = diff_trace(build_report(before), build_report(after))
    [regression] = [i for i in diff.items if i.type.value == "REGRESSION" and i.case_id]
    assert (regression.case_id, regression.metric, regression.gating) == (renamed_to, "passed", True)
    assert "looks like 'payment-timeout', which passed in the baseline and is gone" in regression.message
    assert diff.has_regression
    # a real rename of a passing case, or a new case that only looks alike and passes, is no regression
    for after in ([result(renamed_to), result("b")], [result("payment-timeout-2", passed=False), result("b")]):
        diff = diff_trace(build_report(before), build_report(after))
        assert not [i for i in diff.items if i.type.value == "REGRESSION" and i.case_id], diff.items


def test_a_case_moved_to_another_suite_where_it_fails_regresses_in_the_suite_it_left() -> None:
    """A gating case that passed moved, with its id, into a new suite and failed there: one suite saw a removal, the
    other (without a baseline) an addition, and the gate passed (an audit's find)."""
    ok, failing = CaseOutcome(True, False), CaseOutcome(False, True, gating=True, severity="P1")
    baselines = {"refunds": {"order_status_001": ok, "b": ok}}
    currents = {"refunds": {"b": ok}, "refunds2": {"order\u2010status-001": failing, "c": failing}}
    kinds = {"refunds": "agent", "refunds2": "agent", "smoke": "trace"}
    [regression] = moved(baselines, currents, kinds)["refunds"]
    assert (regression.type, regression.case_id, regression.metric, regression.gating, regression.severity) == (
        ItemType.REGRESSION, "order_status_001", "passed", True, "P1")  # fmt: skip
    assert regression.message.startswith("moved to suite refunds2 (as 'order\u2010status-001'), where it fails")
    informational = CaseOutcome(False, True, gating=False)
    [shown] = moved(baselines, {"refunds": {"b": ok}, "refunds2": {"order_status_001": informational}}, kinds)[
        "refunds"
    ]
    assert not shown.gating  # listed, and the gate does not count it
    for now in (
        {"refunds": {"b": ok}, "refunds2": {"order_status_001": ok}},  # moved and passing
        {"refunds": {"b": ok, "order-status-001": failing}},  # renamed within the suite: its kind's diff says it
        {"refunds": {"b": ok}, "refunds2": {"order_status_001": CaseOutcome(False, False)}},  # unchecked there
        {"refunds": {"b": ok}, "smoke": {"order_status_001": failing}},  # another kind's case that shares the id
        # renamed within its suite and also failing elsewhere (found by review): one regression, its kind's own
        {"refunds": {"b": ok, "Order-Status-001": failing}, "refunds2": {"order_status_001": failing}},
    ):
        assert moved(baselines, now, kinds) == {}, now
    was_failing = {"refunds": {"order_status_001": failing}}  # a case that failed in the baseline cannot regress
    assert moved(was_failing, {"refunds": {}, "refunds2": {"order_status_001": failing}}, kinds) == {}
    listed = [
        item(ItemType.REGRESSION, "x", "passed", True, False, "x"),
        item(ItemType.CHANGED, "y", "case", 1, 2, "y"),
    ]
    listed[0].gating = False
    grown = with_items(summarize(listed, (2, 1, 2, 1), (1.0, 1.0)), [regression])
    assert (grown.regression_count, grown.changed_count, grown.has_regression, grown.gating_regressions) == (
        2,
        1,
        True,
        1,
    )
    assert [i.case_id for i in grown.items] == ["order_status_001", "x", "y"]  # what gates first, as `order` puts it


def test_average_costs_are_compared_over_the_cases_that_record_them_on_both_sides() -> None:
    """A case whose trace recorded no tool calls in the baseline and 20 now moved the average from 2 to 11: a
    gating regression, while the case itself was only "recorded again" (a hostile pass of the trace kind)."""
    before = [result("a", tool_call_count=2, duration_ms=100), result("b", tool_call_count=None, duration_ms=None)]
    after = [result("a", tool_call_count=2, duration_ms=100), result("b", tool_call_count=20, duration_ms=90_000)]
    for old, new in ((before, after), (after, before)):  # nor the reverse, a false improvement
        got = items(old, new)
        assert not [i for i in got if i[1] in ("averageToolCallCount", "averageDurationMs")], got
    grown = [result("a", tool_call_count=9, duration_ms=100), result("b", tool_call_count=20, duration_ms=90_000)]
    assert ("REGRESSION", "averageToolCallCount", None) in items(before, grown)  # a's own rise still counts
