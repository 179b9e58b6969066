"""One run of diagbot over a config: evaluate each suite, diff it against its baseline, render, decide the gate.

Shared by `diagbot run` and the GitHub bot, so what a developer sees locally is what the PR gets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from pathlib import Path

from diagbot.config import Config
from diagbot.diff import DiffReport
from diagbot.errors import DiagbotError
from diagbot.render import (
    COMMENT_LIMIT,
    SUMMARY_LIMIT,
    BaselineInfo,
    Caps,
    CurrentInfo,
    SuiteView,
    render_markdown,
)
from diagbot.report import RunInfo, dump_model, write_file
from diagbot.suites import KINDS, Report, diff_reports, load_report_file, view


class Conclusion(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    NEUTRAL = "neutral"


@dataclass
class SuiteOutcome:
    name: str
    report: Report | None = None
    baseline: Report | None = None
    diff: DiffReport | None = None
    problems: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """A run's suites and gate, plus what rendering needs; each Markdown output is rendered when first asked for."""

    suites: list[SuiteOutcome]
    conclusion: Conclusion
    exit_code: int
    reason: str
    views: list[SuiteView]
    baseline_info: BaselineInfo
    current: CurrentInfo
    marker: str
    comment_limit: int = COMMENT_LIMIT

    def render(self, template: str, limit: int, caps: Caps | None = None) -> str:
        return render_markdown(
            template, self.views, self.baseline_info, self.current, self.marker, limit, caps, self.problems
        )

    @cached_property
    def comment(self) -> str:
        return self.render("comment.md.j2", self.comment_limit)

    @cached_property
    def summary(self) -> str:
        return self.render("summary.md.j2", SUMMARY_LIMIT, Caps(None, None, None, None))

    @property
    def has_regression(self) -> bool:
        return any(s.diff is not None and s.diff.has_regression for s in self.suites)

    @property
    def problems(self) -> list[str]:
        return [p for s in self.suites for p in s.problems]


def find_baselines(location: Path | None, config: Config) -> tuple[dict[str, Report], list[str]]:
    """Baseline reports by suite from a folder (`<suite>.json` or `reports/<suite>.json`) or one report file."""
    if location is None:
        return {}, []
    if location.is_file():
        if len(config.suites) != 1:
            return {}, [f"{location}: a single baseline file fits a single suite; give a folder of <suite>.json"]
        try:
            return {config.suites[0].name: load_report_file(location)}, []
        except DiagbotError as exc:
            return {}, exc.problems
    if not location.is_dir():
        return {}, [f"{location}: baseline not found (expected a report file or a folder of reports)"]
    found: dict[str, Report] = {}
    problems: list[str] = []
    for suite in config.suites:
        for candidate in (location / f"{suite.name}.json", location / "reports" / f"{suite.name}.json"):
            if candidate.is_file():
                try:
                    found[suite.name] = load_report_file(candidate)
                except DiagbotError as exc:
                    problems += exc.problems
                break
    return found, problems


def decide(suites: list[SuiteOutcome], require_baseline: bool, fail_on_regression: bool) -> tuple[Conclusion, int, str]:
    """The gate: unusable input fails (2); a regression fails (1) when asked to; no baseline only when required.

    Returns the check run's conclusion, the exit code and a one-line reason (the check run's title)."""
    if any(s.problems for s in suites):
        return Conclusion.FAILURE, 2, "some input could not be used"
    if all(s.report is None or s.report.total_cases == 0 for s in suites):
        return Conclusion.NEUTRAL, 0, "nothing was evaluated"
    regressions = sum(s.diff.regression_count for s in suites if s.diff is not None)
    if regressions:
        found = f"{regressions} regression{'' if regressions == 1 else 's'}"
        return (
            (Conclusion.FAILURE, 1, found) if fail_on_regression else (Conclusion.SUCCESS, 0, f"{found} (not gating)")
        )
    if require_baseline and any(s.report is not None and s.diff is None for s in suites):
        return Conclusion.FAILURE, 1, "no baseline, and require-baseline is set"
    return Conclusion.SUCCESS, 0, "no regression"


def run_config(
    config: Config,
    baselines: dict[str, Report],
    baseline_info: BaselineInfo,
    current: CurrentInfo,
    run: RunInfo | None,
    fail_on_regression: bool,
    comment_limit: int = COMMENT_LIMIT,
    baseline_problems: Sequence[str] = (),
) -> Outcome:
    """Evaluate and diff every suite; one suite's bad input never stops the others.

    `baseline_problems` are baseline files the user named that could not be read: the suites still run and the
    reports are still written, but the gate fails (exit 2) instead of passing for want of a baseline."""
    outcomes: list[SuiteOutcome] = []
    thresholds = config.thresholds.to_thresholds()
    for suite in config.suites:
        outcome = SuiteOutcome(suite.name, baseline=baselines.get(suite.name))
        outcomes.append(outcome)
        try:
            outcome.report = KINDS[suite.kind].evaluate(suite, config, run)
            if outcome.baseline is not None:
                outcome.diff = diff_reports(outcome.baseline, outcome.report, thresholds, f"baseline for {suite.name}")
        except DiagbotError as exc:
            outcome.problems = exc.problems
    if baseline_problems:
        outcomes.append(SuiteOutcome("baseline", problems=list(baseline_problems)))
    views = [view(s.name, s.report, s.diff) for s in outcomes if s.report is not None]
    conclusion, code, reason = decide(outcomes, config.gate.require_baseline, fail_on_regression)
    if baseline_info.source != "none" and any(s.report is not None and s.diff is None for s in outcomes):
        missing = [s.name for s in outcomes if s.report is not None and s.diff is None]
        baseline_info = baseline_info.model_copy(
            update={"warnings": [*baseline_info.warnings, f"the baseline has no report for: {', '.join(missing)}"]}
        )
    marker = f"diagbot:{config.marker_id}"
    return Outcome(outcomes, conclusion, code, reason, views, baseline_info, current, marker, comment_limit)


def write_outputs(outcome: Outcome, out: Path) -> None:
    """The report folder: reports/<suite>.json, diff/<suite>.json, comment.md, summary.md (the next baseline)."""
    for suite in outcome.suites:
        if suite.report is not None:
            write_file(out / "reports" / f"{suite.name}.json", dump_model(suite.report))
        if suite.diff is not None:
            write_file(out / "diff" / f"{suite.name}.json", dump_model(suite.diff))
    write_file(out / "comment.md", outcome.comment)
    write_file(out / "summary.md", outcome.summary)
