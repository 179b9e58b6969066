"""The gate decision, pure: what fails the check and with which exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from diagbot.config import Config, GateConfig, SuiteConfig
from diagbot.diff import diff_trace
from diagbot.pipeline import Conclusion, SuiteOutcome, decide
from diagbot.report import CaseResult, build_report

CONFIG = Config(suites=[SuiteConfig(name="s", cases="c.json", fixtures="f")], root=Path("."))
REQUIRED = CONFIG.model_copy(update={"gate": GateConfig(require_baseline=True)})


def outcome(before: bool | None, after: bool, problems: tuple[str, ...] = ()) -> SuiteOutcome:
    current = build_report([CaseResult(case_id="a", passed=after)])
    baseline = build_report([CaseResult(case_id="a", passed=before)]) if before is not None else None
    diff = diff_trace(baseline, current) if baseline else None
    return SuiteOutcome("s", report=current, baseline=baseline, diff=diff, problems=list(problems))


@pytest.mark.parametrize(
    ("suites", "config", "fail", "expected"),
    [
        ([outcome(True, True)], CONFIG, True, (Conclusion.SUCCESS, 0)),
        ([outcome(True, False)], CONFIG, True, (Conclusion.FAILURE, 1)),
        ([outcome(True, False)], CONFIG, False, (Conclusion.SUCCESS, 0)),
        ([outcome(None, False)], CONFIG, True, (Conclusion.SUCCESS, 0)),
        ([outcome(None, True)], REQUIRED, True, (Conclusion.FAILURE, 1)),
        ([outcome(True, True), outcome(True, True, ("bad case file",))], CONFIG, True, (Conclusion.FAILURE, 2)),
        ([SuiteOutcome("s", problems=["x"])], CONFIG, True, (Conclusion.FAILURE, 2)),
        ([SuiteOutcome("s", report=build_report([]))], CONFIG, True, (Conclusion.NEUTRAL, 0)),
    ],
    ids=["no-regression", "regression", "regression-not-gating", "no-baseline", "baseline-required",
         "bad-input-beats-all", "only-bad-input", "nothing-evaluated"],
)  # fmt: skip
def test_gate(suites: list[SuiteOutcome], config: Config, fail: bool, expected: tuple[Conclusion, int]) -> None:
    assert decide(suites, config.gate.require_baseline, fail)[:2] == expected
