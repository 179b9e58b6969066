"""The agent suite's report: per case, per trial, aggregates over gating and informational cases, slices."""

from __future__ import annotations

from math import comb
from typing import Annotated, Literal

from pydantic import Field, model_validator

from diagbot.core.models import Output
from diagbot.core.rates import mean, rate
from diagbot.core.report import RunInfo, SuiteName
from diagbot.kinds.agent.cases import CASE_ID_PATTERN, Difficulty, RiskLevel, Role

AGENT_SCHEMA_VERSION = 2
"""2: a case's toolCallCount, turnCount and durationMs are the most over its readable trials (1: its first
readable trial's). The diff does not compare the cost of a case that had several trials in a version-1 baseline."""
MAX_TRIALS = 100
"""Trials read per case (a folder with more fails the case). A stored report is held to it too: pass^k is
computed for every k up to the smallest trial count, so a forged baseline claiming a million trials would stall."""
SLICE_FIELDS = ("scenario", "ability_tags", "risk_level", "difficulty", "dataset_role")
Status = Literal["passed", "failed", "unchecked"]
Share = Annotated[float, Field(ge=0, le=1)]  # a RAG metric and pass^k are shares: a stored one beyond is forged


class TrialResult(Output):
    trial: str  # the run file's name: `<case_id>.json`, or `trial-1.json` inside `<case_id>/`
    passed: bool
    failed_checks: list[str] = Field(default_factory=list)
    metrics: dict[str, Share] = Field(default_factory=dict, exclude_if=lambda v: not v)  # RAG metrics (rag.py)


class AgentCaseResult(Output):
    case_id: str = Field(pattern=f"^{CASE_ID_PATTERN}$")  # as a case's: a stored one that is not was not written so
    case_version: str
    title: str
    scenario: str
    risk_level: RiskLevel  # as a case's: a stored report's values reach the comment's rows and the gate
    difficulty: Difficulty
    ability_tags: list[str]
    dataset_id: str
    dataset_version: str
    dataset_role: Role
    gating: bool
    not_gating_because: str | None = Field(
        default=None, exclude_if=lambda v: v is None
    )  # only on one that does not gate
    status: Status
    passed: bool
    trials: int = Field(ge=1, le=MAX_TRIALS)
    trials_passed: int = Field(ge=0, le=MAX_TRIALS)
    trial_results: list[TrialResult] = Field(max_length=MAX_TRIALS)
    failed_checks: list[str]  # those of the first failing trial
    unchecked_expectations: list[str] = Field(default_factory=list)
    metrics: dict[str, Share] = Field(default_factory=dict, exclude_if=lambda v: not v)  # mean over its trials
    tool_call_count: int | None = Field(default=None, ge=0)  # a stored report's metrics are never negative
    turn_count: int | None = Field(default=None, ge=0)
    duration_ms: float | None = Field(default=None, ge=0)
    # what the case's checks read (`cases.checks_digest`); absent from reports written before it was recorded
    checks_digest: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$", exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _agrees_with_its_trials(self) -> AgentCaseResult:
        """A stored result whose verdict disagrees with its own trials was edited: a baseline saying `failed` over
        passing trials would hide a regression, so it is refused rather than believed."""
        if self.trials_passed > self.trials:
            raise ValueError(f"trialsPassed {self.trials_passed} is more than trials {self.trials}")
        if len(self.trial_results) != self.trials:
            raise ValueError(f"trials is {self.trials}, but {len(self.trial_results)} trialResults are listed")
        if any(t.passed == bool(t.failed_checks) for t in self.trial_results):
            raise ValueError("a trial's passed disagrees with its failedChecks (passed exactly when there are none)")
        if sum(t.passed for t in self.trial_results) != self.trials_passed:
            raise ValueError(f"trialsPassed {self.trials_passed} disagrees with the trialResults that passed")
        if self.passed != (self.status == "passed"):
            raise ValueError(f"passed is {str(self.passed).lower()} while status is {self.status}")
        if self.status == "failed" and not self.failed_checks:
            raise ValueError("status is failed with no failedChecks")
        if self.status == "passed" and not self.trials_passed:
            raise ValueError("status is passed with no trial passed")
        if self.gating == (self.not_gating_because is not None):  # every case that does not gate says why
            raise ValueError(
                "gating is true beside a notGatingBecause"
                if self.gating
                else "gating is false with no notGatingBecause"
            )
        return self


class Aggregate(Output):
    total_cases: int = 0
    passed_cases: int = 0
    unchecked_cases: int = 0
    pass_rate: float = 0.0
    pass_hat_k: dict[str, Share] = Field(default_factory=dict)


class SliceStat(Output):
    total_cases: int
    passed_cases: int
    unchecked_cases: int
    pass_rate: float


OptionName = Literal["trace-format", "tool-error-pattern", "trials", "confirmation-pattern", "citation-pattern"]
"""The suite options a report records (`AgentOptions.judging`)."""


class AgentReport(Output):
    schema_version: int = AGENT_SCHEMA_VERSION
    kind: Literal["agent"] = "agent"
    suite: SuiteName | None = None
    run: RunInfo | None = None
    total_cases: int
    passed_cases: int
    unchecked_cases: int
    pass_rate: float
    pass_hat_k: dict[str, Share]
    gating_cases: int
    gating: Aggregate
    informational: Aggregate
    dataset_versions: dict[str, list[str]]
    slices: dict[str, dict[str, SliceStat]]
    # the suite options that decide verdicts and are not left to their defaults, as diagbot.yml writes them (None:
    # a report from before they were recorded, which is not compared)
    options: dict[OptionName, str | int] | None = Field(None, exclude_if=lambda v: v is None)
    results: list[AgentCaseResult]
    warnings: list[str] = Field(default_factory=list, max_length=1_000, exclude_if=lambda v: not v)  # checks of nothing


def aggregate(results: list[AgentCaseResult]) -> Aggregate:
    """Counts, the pass rate over checked cases (passed / (total - unchecked); 0.0 when none) and pass^k for
    k = 1 .. the smallest trial count: the mean over checked cases of C(c, k) / C(n, k), as tau-bench reports it."""
    checked = [r for r in results if r.status != "unchecked"]
    passed = sum(1 for r in checked if r.status == "passed")
    smallest = min((r.trials for r in checked), default=0)
    hat_k = {
        str(k): mean([comb(r.trials_passed, k) / comb(r.trials, k) for r in checked]) for k in range(1, smallest + 1)
    }
    return Aggregate(
        total_cases=len(results),
        passed_cases=passed,
        unchecked_cases=len(results) - len(checked),
        pass_rate=rate(passed, len(checked)),
        pass_hat_k=hat_k,
    )


def slices(results: list[AgentCaseResult]) -> dict[str, dict[str, SliceStat]]:
    """Totals, passes and the pass rate per value of each slice field, counted in one walk (pass^k is not sliced)."""
    counts: dict[str, dict[str, list[int]]] = {name: {} for name in SLICE_FIELDS}  # [total, passed, unchecked]
    for result in results:
        status = result.status
        for name in SLICE_FIELDS:
            value = getattr(result, name)
            by_value = counts[name]
            for key in dict.fromkeys(value) if isinstance(value, list) else (value,):  # a tag written twice: once
                tally = by_value.get(key)
                if tally is None:
                    tally = by_value[key] = [0, 0, 0]
                tally[0] += 1
                tally[1] += status == "passed"
                tally[2] += status == "unchecked"
    return {
        name: {
            key: SliceStat(total_cases=total, passed_cases=passed, unchecked_cases=unchecked,
                           pass_rate=rate(passed, total - unchecked))
            for key, (total, passed, unchecked) in sorted(by_value.items())
        }
        for name, by_value in counts.items()
    }  # fmt: skip


def build_report(
    results: list[AgentCaseResult],
    suite: str | None = None,
    run: RunInfo | None = None,
    warnings: list[str] | None = None,
    options: dict[OptionName, str | int] | None = None,
    schema_version: int = AGENT_SCHEMA_VERSION,
) -> AgentReport:
    gating = aggregate([r for r in results if r.gating])
    informational = aggregate([r for r in results if not r.gating])
    versions: dict[str, set[str]] = {}
    for r in results:
        versions.setdefault(r.dataset_id, set()).add(r.dataset_version)
    # `model_construct`: every part is a model checked already, and pydantic would run each result's after-validator
    # again (10,000 of them, in the parent, after the workers are done)
    return AgentReport.model_construct(
        schema_version=schema_version,
        suite=suite,
        run=run,
        # the counts are of every case; the rates, which gate, of the gating ones
        total_cases=gating.total_cases + informational.total_cases,
        passed_cases=gating.passed_cases + informational.passed_cases,
        unchecked_cases=gating.unchecked_cases + informational.unchecked_cases,
        pass_rate=gating.pass_rate,
        pass_hat_k=gating.pass_hat_k,
        gating_cases=gating.total_cases,
        gating=gating,
        informational=informational,
        dataset_versions={k: sorted(v) for k, v in sorted(versions.items())},
        slices=slices(results),
        options=options,
        results=results,
        warnings=warnings or [],
    )
