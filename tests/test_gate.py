"""The gate decision, pure: what fails the check and with which exit code, whatever other suites exist."""

from __future__ import annotations

import itertools

import pytest

from diagbot.core.gate import Conclusion, GateSettings, SuiteFacts, decide
from diagbot.kinds.trace.diff import diff_trace
from diagbot.kinds.trace.report import CaseResult, build_report
from diagbot.pipeline import SuiteOutcome, gate_outcome

GATE = GateSettings()
REQUIRED = GateSettings(require_baseline=True)
NOT_GATING = GateSettings(fail_on_regression=False)


def outcome(before: bool | None, after: bool, problems: tuple[str, ...] = (), name: str = "s") -> SuiteOutcome:
    current = build_report([CaseResult(case_id="a", passed=after)])
    baseline = build_report([CaseResult(case_id="a", passed=before)]) if before is not None else None
    diff = diff_trace(baseline, current) if baseline else None
    return SuiteOutcome(name, report=current, baseline=baseline, diff=diff, problems=list(problems))


@pytest.mark.parametrize(
    ("suites", "gate", "expected"),
    [
        ([outcome(True, True)], GATE, (Conclusion.SUCCESS, 0)),
        ([outcome(True, False)], GATE, (Conclusion.FAILURE, 1)),
        ([outcome(True, False)], NOT_GATING, (Conclusion.SUCCESS, 0)),
        ([outcome(None, False)], GATE, (Conclusion.SUCCESS, 0)),
        ([outcome(None, True)], REQUIRED, (Conclusion.FAILURE, 1)),
        ([outcome(True, True), outcome(True, True, ("bad case file",))], GATE, (Conclusion.FAILURE, 2)),
        ([SuiteOutcome("s", problems=["x"])], GATE, (Conclusion.FAILURE, 2)),
        ([SuiteOutcome("s", report=build_report([]))], GATE, (Conclusion.NEUTRAL, 0)),
        ([SuiteOutcome("s", report=build_report([]))], REQUIRED, (Conclusion.FAILURE, 1)),
    ],
    ids=["no-regression", "regression", "regression-not-gating", "no-baseline", "baseline-required",
         "bad-input-beats-all", "only-bad-input", "nothing-evaluated", "empty-suite-still-needs-its-baseline"],
)  # fmt: skip
def test_gate(suites: list[SuiteOutcome], gate: GateSettings, expected: tuple[Conclusion, int]) -> None:
    decision = gate_outcome(suites, gate)
    assert (decision.conclusion, decision.exit_code) == expected


def test_missing_required_baseline_fails_whatever_else_regressed() -> None:
    """Fault 1: suite A regressing (not gating) and suite B without a baseline used to pass; B alone failed."""
    a, b = outcome(True, False, name="a"), outcome(None, True, name="b")
    gate = GateSettings(fail_on_regression=False, require_baseline=True)
    alone = gate_outcome([b], gate)
    together = gate_outcome([a, b], gate)
    assert (alone.exit_code, together.exit_code) == (1, 1)
    assert together.reason == "no baseline for b, and require-baseline is set"


def test_the_verdict_does_not_depend_on_suite_order_or_company() -> None:
    """For every mix of suite situations and settings, the gate fails when any one suite alone would fail."""
    kinds = [outcome(True, True), outcome(True, False), outcome(None, True), outcome(True, True, ("bad",))]
    for gate in itertools.starmap(GateSettings, itertools.product([True, False], repeat=2)):
        for pair in itertools.permutations(kinds, 2):
            worst = max(gate_outcome([s], gate).exit_code for s in pair)
            assert gate_outcome(list(pair), gate).exit_code == worst, (gate, [s.facts() for s in pair])


def test_only_gating_regressions_count() -> None:
    """A regression item of a case that does not gate (a draft, say) is shown but does not fail the check."""
    gating = outcome(True, False)
    assert gating.diff is not None and gating.diff.gating_regressions == 2
    items = [i.model_copy(update={"gating": False}) for i in gating.diff.items]
    quiet = SuiteOutcome("s", report=gating.report, diff=gating.diff.model_copy(update={"items": items}))
    assert quiet.diff is not None and quiet.diff.regression_count == 2 and quiet.diff.gating_regressions == 0
    assert (gate_outcome([gating], GATE).exit_code, gate_outcome([quiet], GATE).exit_code) == (1, 0)
    assert decide([SuiteFacts("s", evaluated=True, cases=3, compared=True, regressions=2)], GATE).reason == (
        "2 regressions"
    )


def test_required_baseline_present_and_nothing_regressed_is_a_success() -> None:
    assert (
        gate_outcome([outcome(True, True)], REQUIRED).conclusion,
        gate_outcome([outcome(True, True)], REQUIRED).reason,
    ) == (
        Conclusion.SUCCESS,
        "no regression",
    )


def test_reasons_count_over_every_suite_and_name_at_most_five() -> None:
    """The check run's title sums what the suites found (the counts were only ever asserted for one suite)."""
    facts = [SuiteFacts(f"s{i}", evaluated=True, cases=1, compared=True, regressions=1, blocking=1) for i in range(2)]
    assert decide(facts, GATE).reason == "2 gating P0 cases failed"
    assert decide([f.__class__(**{**f.__dict__, "blocking": 0}) for f in facts], GATE).reason == "2 regressions"
    assert decide(facts[:1], GATE.__class__(fail_on_blocking=False)).reason == (
        "1 gating P0 case failed (not failing: --no-fail)"
    )
    one = SuiteFacts("s", evaluated=True, cases=1, compared=True, regressions=1)
    assert decide([one], GATE).reason == "1 regression"
    broken = [SuiteFacts(f"b{i}", problems=1) for i in range(7)]
    assert decide(broken, GATE).reason == "input could not be used: b0, b1, b2, b3, b4 and 2 more"
    unevaluated = SuiteFacts("never", evaluated=False)  # a suite that was not evaluated is not one without baseline
    assert decide([one.__class__(**{**one.__dict__, "regressions": 0}), unevaluated], REQUIRED).exit_code == 0


def test_a_suite_emptied_of_its_baseline_cases_fails() -> None:
    """Deleting every case of a suite left nothing to regress, and the gate passed."""
    emptied = SuiteFacts("agent", evaluated=True, cases=0, compared=True, baseline_cases=2)
    other = SuiteFacts("trace", evaluated=True, cases=30, compared=True, baseline_cases=30)
    decision = decide([emptied, other], GateSettings())
    assert (decision.conclusion, decision.exit_code) == (Conclusion.FAILURE, 1)
    assert decision.reason.startswith("suite agent has no cases, and its baseline had 2: restore them")
    waived = decide([emptied], GateSettings(fail_on_regression=False))
    assert waived.exit_code == 0 and waived.reason.endswith("(not gating)")
    new = SuiteFacts("agent", evaluated=True, cases=0)  # no baseline yet: a warning, not a failure
    assert decide([new], GateSettings()).exit_code == 0


def test_a_suite_whose_cases_no_longer_gate_fails() -> None:
    """gate.roles: [] in a pull request's diagbot.yml made every agent case informational, and the gate passed."""
    demoted = SuiteFacts("agent", evaluated=True, cases=17, compared=True, baseline_cases=17, baseline_gating=14)
    decision = decide([demoted], GateSettings())
    assert (decision.conclusion, decision.exit_code) == (Conclusion.FAILURE, 1)
    assert decision.reason == (
        "no case of suite agent gates, and 14 did in its baseline: each case's notGatingBecause in the report says "
        "why (gate.roles, gate.usage-rights, review)"
    )
    assert decide([demoted], GateSettings(fail_on_regression=False)).reason.endswith("(not gating)")
    one_left = SuiteFacts("agent", evaluated=True, cases=17, compared=True, gating=1, baseline_gating=14)
    assert decide([one_left], GateSettings()).exit_code == 0  # demoting some cases is shown, not failed
    never = SuiteFacts("agent", evaluated=True, cases=3, compared=True, baseline_cases=3)  # none gated before either
    assert decide([never], GateSettings()).exit_code == 0
