"""The machine-readable outcome of `diagbot run --format json`: the gate's verdict, each suite's counts and the
files the run wrote. Its JSON Schema is published (`diagbot schema run-outcome`), so tools can rely on it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from diagbot.core.gate import Conclusion
from diagbot.core.models import Output

RUN_OUTCOME_VERSION: Literal[1] = 1


MAX_LISTED = 100  # case ids a suite's summary lists


class SuiteOutcomeSummary(Output):
    """One suite of the run. The counts are zero and `passRate` null when the suite could not be evaluated."""

    name: str
    kind: str
    evaluated: bool = Field(description="a report was made (false when the suite's input was unusable)")
    total_cases: int = Field(ge=0)
    passed_cases: int = Field(ge=0)
    failed_cases: int = Field(ge=0)
    unchecked_cases: int = Field(ge=0, description="agent cases with nothing machine-checked")
    pass_rate: float | None = Field(
        ge=0, le=1, description="the report's passRate: an agent suite's is over its checked gating cases"
    )
    blocking_cases: int = Field(ge=0, description="failing gating P0 agent cases, which fail the gate by themselves")
    compared: bool = Field(description="a baseline report was found and diffed")
    regressions: int = Field(ge=0)
    gating_regressions: int = Field(ge=0, description="the regressions the gate counts")
    improvements: int = Field(ge=0)
    changes: int = Field(ge=0)
    blocking_case_ids: list[str] = Field(
        default_factory=list, max_length=MAX_LISTED, description="the blocking cases' ids (at most 100)"
    )
    regressed_case_ids: list[str] = Field(
        default_factory=list, max_length=MAX_LISTED,
        description="the ids of the cases of gating regressions, in the diff's order (at most 100)",
    )  # fmt: skip
    report: str | None = Field(description="the report file written, as a path from the working folder")
    diff: str | None = Field(description="the diff file written; null without a baseline")
    problems: list[str]
    warnings: list[str]


class RunOutcome(Output):
    """What `diagbot run` decided and wrote."""

    schema_version: Literal[1] = RUN_OUTCOME_VERSION
    conclusion: Conclusion
    exit_code: Literal[0, 1, 2]
    reason: str = Field(description="the gate's one-line reason, as in the check run's title")
    has_regression: bool
    config: str | None = Field(description="the config file read; null when the built-in default suite was used")
    baseline: str | None = Field(description="the --baseline given; null without one")
    report_dir: str
    comment: str | None = Field(description="the PR comment written (Markdown); null when nothing could be run")
    summary: str | None = Field(description="the job summary written (Markdown, every row); null likewise")
    suites: list[SuiteOutcomeSummary]
    problems: list[str] = Field(description="every problem of the run, the baseline's included")
    warnings: list[str]


def unusable(problems: list[str], report_dir: str, config: str | None, baseline: str | None) -> RunOutcome:
    """The outcome of a run stopped before any suite was evaluated (an unusable diagbot.yml or --baseline)."""
    return RunOutcome(
        conclusion=Conclusion.FAILURE, exit_code=2, reason="input could not be used: nothing was evaluated",
        has_regression=False, config=config, baseline=baseline, report_dir=report_dir, comment=None, summary=None,
        suites=[], problems=problems, warnings=[],
    )  # fmt: skip
