"""The GitHub bot: one action run, by event. Resolve the target and its baseline, evaluate, then report back.

`run(settings, port)` is the shell around `pipeline.run_config`: it reads the event payload and the runner's
files, talks to GitHub only through the port, and returns the exit code, which is always the gate's verdict
(0 pass, 1 regression, 2 unusable input or environment).
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from diagbot.action import relay, runner
from diagbot.action.baseline import resolve_baseline
from diagbot.action.events import Role, Target, resolve_target
from diagbot.action.publish import Notes, Post, publish
from diagbot.action.record import (
    MAX_PROBLEMS,
    MAX_WARNINGS,
    PR_RECORD,
    PrRecord,
    RecordBaseline,
    RecordCounts,
    RecordGate,
    short,
)
from diagbot.action.settings import RunMode, Settings
from diagbot.core.errors import ConfigError
from diagbot.core.gate import GateSettings
from diagbot.core.rates import rate, timestamp
from diagbot.core.report import RunInfo
from diagbot.core.values import cut_utf8
from diagbot.github.port import GitHubPort
from diagbot.io.config import Config, load_config
from diagbot.io.files import register_secret, write_file
from diagbot.kinds import registry
from diagbot.kinds.workers import default_workers
from diagbot.pipeline import Outcome, clear_outputs, run_config, write_outputs
from diagbot.render.markdown import CHECK_SUMMARY_LIMIT, BaselineInfo, CurrentInfo


def run(settings: Settings, port: GitHubPort, now: datetime | None = None, out: TextIO | None = None) -> int:
    """One action run; returns the gate's exit code."""
    stream = out or sys.stdout
    now = now or datetime.now(UTC)
    token = settings.github_token.get_secret_value()
    print(f"::add-mask::{token}", file=stream)
    register_secret(token)  # masked in every file and annotation diagbot writes from here on
    if settings.mode is RunMode.COMMENT:
        return relay.run(settings, port, out=stream)
    report_dir = settings.workspace / settings.report_dir
    clear_outputs(report_dir, settings.workspace, everything=True)  # before anything can stop this run: reports
    notes = Notes()  # a pull request committed there would be uploaded as this run's, and read as a baseline
    target = resolve_target(settings, port)
    config = _config(settings, target)
    gate = _gate(settings, config, target)
    strict = target.role is Role.PULL_REQUEST  # a pull request's gate never passes on a baseline it could not fetch
    baselines, info = resolve_baseline(
        settings, port, config, target.base_branch, target.base_sha, now, notes.warnings, strict
    )
    run_info = RunInfo(git_sha=target.head_sha, ref=target.ref, time=timestamp(now))
    current = CurrentInfo(sha=target.head_sha, ref=target.ref, run_url=settings.run_url)
    outcome = run_config(config, baselines, info, current, run_info, gate, workers=default_workers())
    notes.warnings.extend(write_outputs(outcome, report_dir, settings.workspace))  # a baseline too big to read

    comment_url: str | None = None
    summary = outcome.summary
    if target.role is Role.PULL_REQUEST and target.pr_number is not None and target.head_sha is not None:
        record = _pr_record(settings, target, config, info, outcome, gate).dump()
        annotations, left_out = case_annotations(settings, outcome)
        left_out_note = _annotations_left_out(left_out)
        write_file(report_dir / PR_RECORD, record, report_dir, settings.workspace)
        post = Post(
            number=target.pr_number,
            head_sha=target.head_sha,
            marker_id=config.marker_id,
            comment=outcome.comment,
            comment_mode=settings.comment.value,
            comment_author=settings.comment_author,
            conclusion=outcome.decision.conclusion.value,
            title=outcome.reason,
            summary=outcome.render("summary.md.j2", CHECK_SUMMARY_LIMIT - len(left_out_note), in_bytes=True)
            + left_out_note,
            annotations=annotations,
            run_id=settings.run_id,
        )
        comment_url = publish(port, post, notes)
        if comment_url is None and settings.comment.value != "off":
            summary = outcome.comment + "\n\n" + summary

    runner.write_summary(settings.step_summary, summary)
    runner.write_outputs(settings.output, _outputs(outcome, info, comment_url, settings.report_dir))
    notes.warnings.extend(outcome.warnings)
    notes.errors.extend(outcome.problems)
    runner.annotate(stream, notes.warnings, notes.errors)
    print(f"diagbot: {outcome.reason} ({outcome.decision.conclusion.value}); report in {report_dir}", file=stream)
    return outcome.exit_code


def _config(settings: Settings, target: Target) -> Config:
    path = settings.workspace / (settings.config or "diagbot.yml")
    if not path.resolve().is_relative_to(settings.workspace.resolve()):
        if settings.config is None:  # the repository's own diagbot.yml is a link that leaves it
            raise ConfigError("diagbot.yml resolves outside the workspace (a link?); commit the file itself")
        raise ConfigError(f"input 'config' ({settings.config}) is outside the workspace; give a path inside it")
    config = load_config(path, required=settings.config is not None)
    thresholds = config.thresholds.override(settings.thresholds, "input '{name}'")
    update: dict[str, Any] = {}
    if settings.baseline_max_age_days is not None:
        update["baseline_max_age_days"] = settings.baseline_max_age_days
    gate = config.gate.model_copy(update=update)
    return config.model_copy(update={"thresholds": thresholds, "gate": gate, "boundary": settings.workspace})


def _gate(settings: Settings, config: Config, target: Target) -> GateSettings:
    """The inputs win over diagbot.yml; a push never gates (it makes the next baseline, and a first push has none)."""
    if target.role is Role.PUSH:
        return GateSettings(fail_on_regression=False, require_baseline=False, fail_on_blocking=False)
    fail = settings.fail_on_regression
    require = settings.require_baseline
    return GateSettings(
        fail_on_regression=config.gate.fail_on_regression if fail is None else fail,
        require_baseline=config.gate.require_baseline if require is None else require,
    )


def case_annotations(settings: Settings, outcome: Outcome) -> tuple[list[dict[str, Any]], int]:
    """An annotation on each failing case (its line in its case file), blocking failures first, then those of gating
    cases; and how many were left out. A pull request decides how many cases fail, and each 50 annotations are one
    more request, so at most MAX_CHECK_ANNOTATIONS, of at most MAX_CHECK_ANNOTATION_BYTES of messages together, are
    sent."""
    found = [
        annotation
        for suite in outcome.suites
        if suite.report is not None and suite.input is not None
        for annotation in registry.annotate(suite.input, suite.report)
    ]
    # the failures that fail the check on their own first, then the rest of gating cases' failures: stable, in
    # suite and file order within each (a trace suite's 200 failures must not push out an agent suite's blocking P0)
    found.sort(key=lambda a: (not a.blocking, a.level != "failure"))
    made: list[dict[str, Any]] = []
    size = 0
    for a in found[:MAX_CHECK_ANNOTATIONS]:
        message = cut_utf8(a.message, MAX_ANNOTATION_BYTES)
        size += len(message.encode("utf-8", "surrogatepass"))
        if size > MAX_CHECK_ANNOTATION_BYTES:
            break
        made.append({
            "path": _relative(a.path, settings.workspace),
            "start_line": a.line,
            "end_line": a.line,
            "annotation_level": a.level,
            "title": a.title[:255],
            "message": message,
        })  # fmt: skip
    return made, len(found) - len(made)


MAX_ANNOTATION_BYTES = 60_000  # GitHub refuses an annotation message over 64 KB, and with it the whole check run
MAX_CHECK_ANNOTATIONS = 200  # four requests of 50
MAX_CHECK_ANNOTATION_BYTES = 1_000_000


def _annotations_left_out(count: int) -> str:
    """What the check run's summary says of the annotations not sent."""
    if not count:
        return ""
    return (
        f"\n\n{count:,} more failing case{'s are' if count != 1 else ' is'} not annotated here (a check run gets at "
        f"most {MAX_CHECK_ANNOTATIONS} annotations, of at most {MAX_CHECK_ANNOTATION_BYTES:,} bytes of text together, "
        "blocking failures first, then gating ones); the comment and the report list every case."
    )


def _relative(path: Path, workspace: Path) -> str:
    """The file's path in the repository, as GitHub places an annotation: where the file really is (a path the
    config wrote through a link, `x/../../cases.json`, would read as one outside it)."""
    return os.path.relpath(path.resolve(), workspace.resolve()).replace(os.sep, "/")


def _outputs(outcome: Outcome, info: BaselineInfo, comment_url: str | None, report_dir: str) -> dict[str, str]:
    reports = [s.report for s in outcome.suites if s.report is not None]
    diffs = [s.diff for s in outcome.suites if s.diff is not None]
    total = sum(r.total_cases for r in reports)
    passed = sum(r.passed_cases for r in reports)
    return {
        "has-regression": "true" if outcome.has_regression else "false",
        "pass-rate": f"{rate(passed, total):.4f}" if total else "",
        "regression-count": str(sum(d.regression_count for d in diffs)),
        "improvement-count": str(sum(d.improvement_count for d in diffs)),
        "changed-count": str(sum(d.changed_count for d in diffs)),
        "baseline-sha": info.sha or "",
        "comment-url": comment_url or "",
        "report-dir": report_dir,
    }


def _pr_record(
    settings: Settings, target: Target, config: Config, info: BaselineInfo, outcome: Outcome, gate: GateSettings
) -> PrRecord:
    """What the fork relay needs to post this run's results (it re-renders from the reports, never this text)."""
    baseline = info.model_dump(mode="json", exclude={"run_url"})
    baseline["label"] = short(baseline["label"], 200) if baseline.get("label") else None
    baseline["missingReason"] = short(baseline["missingReason"]) if baseline.get("missingReason") else None
    baseline["warnings"] = [short(w) for w in baseline.get("warnings", [])][:MAX_WARNINGS]
    return PrRecord.model_validate(
        {
            "repository": settings.repository,
            "number": target.pr_number,
            "headSha": target.head_sha,
            "baseRef": target.base_branch,
            "baseSha": target.base_sha,
            "marker": f"<!-- diagbot:{config.marker_id} -->",
            "suites": [suite.name for suite in outcome.suites if suite.report is not None],
            "baseline": RecordBaseline.model_validate(baseline),
            "problems": [short(problem) for problem in outcome.problems[:MAX_PROBLEMS]],
            "gate": RecordGate(failOnRegression=gate.fail_on_regression, requireBaseline=gate.require_baseline),
            "baselines": {
                f.name: RecordCounts(cases=f.baseline_cases, gating=f.baseline_gating)
                for f in (suite.facts() for suite in outcome.suites if suite.baseline is not None)
            },
        }
    )
