"""The GitHub bot: one action run, by event. Resolve the target and its baseline, evaluate, then report back.

`run(settings, github)` is the shell around `pipeline.run_config`: it reads the event payload and the runner's
files, talks to GitHub only through `diagbot.github`, and returns the exit code (the gate).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, TextIO

from github import Github
from github.Repository import Repository

from diagbot import github as gh
from diagbot import relay, runner
from diagbot.cases import load_case_file
from diagbot.config import Config, load_config
from diagbot.errors import DiagbotError
from diagbot.pipeline import Outcome, find_baselines, run_config, write_outputs
from diagbot.render import CHECK_SUMMARY_LIMIT, BaselineInfo, CurrentInfo
from diagbot.report import RunInfo, TraceReport, write_file
from diagbot.settings import RunMode, Settings
from diagbot.suites import Report


class Role(StrEnum):
    PULL_REQUEST = "pull_request"  # comment + check run + gate
    PUSH = "push"  # report folder as the next baseline; never gates on a regression


class UnsupportedEvent(DiagbotError):
    """diagbot was triggered by an event it has no meaning for."""


class EventError(DiagbotError):
    """The event payload is missing or lacks a field diagbot needs."""


@dataclass(frozen=True)
class Target:
    """What this run evaluates and against which branch's baseline."""

    role: Role
    head_sha: str | None
    ref: str | None
    base_branch: str | None
    base_sha: str | None
    pr_number: int | None = None


@dataclass
class Notes:
    """Warnings and errors gathered along the run, printed as workflow annotations."""

    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def run(settings: Settings, github: Github, now: datetime | None = None, out: TextIO | None = None) -> int:
    """One action run; returns the exit code (0 pass, 1 regression, 2 unusable input or environment)."""
    stream = out or sys.stdout
    now = now or datetime.now(UTC)
    token = settings.github_token.get_secret_value()
    print(f"::add-mask::{token}", file=stream)
    if settings.mode is RunMode.COMMENT:
        return relay.run(settings, github, out=stream)
    notes = Notes()
    repo = github.get_repo(settings.repository)
    target = resolve_target(settings, repo)
    config = _config(settings, target)
    baselines, info = resolve_baseline(settings, github, repo, config, target, now, notes)
    fail = settings.fail_on_regression if settings.fail_on_regression is not None else config.gate.fail_on_regression
    run_info = RunInfo(git_sha=target.head_sha, ref=target.ref, time=now.replace(microsecond=0).isoformat())
    current = CurrentInfo(sha=target.head_sha, ref=target.ref, run_url=settings.run_url)
    outcome = run_config(config, baselines, info, current, run_info, fail and target.role is Role.PULL_REQUEST)
    report_dir = settings.workspace / settings.report_dir
    write_outputs(outcome, report_dir)

    comment_url: str | None = None
    summary = outcome.summary
    if target.role is Role.PULL_REQUEST and target.pr_number is not None:
        write_file(
            report_dir / "pr.json", json.dumps(_pr_record(settings, target, config, info, outcome), indent=2) + "\n"
        )
        comment_url = _comment(settings, repo, target.pr_number, config, outcome, notes)
        if comment_url is None and settings.comment.value != "off":
            summary = outcome.comment + "\n\n" + summary
        _check_run(settings, repo, target, config, outcome, notes)

    runner.write_summary(settings.step_summary, summary)
    runner.write_outputs(settings.output, _outputs(outcome, info, comment_url, settings.report_dir))
    notes.errors.extend(outcome.problems)
    runner.annotate(stream, notes.warnings, notes.errors)
    print(f"diagbot: {outcome.reason} ({outcome.conclusion.value}); report in {report_dir}", file=stream)
    # A GitHub failure other than a permission downgrade (comment/check not written) fails the step too.
    return max(outcome.exit_code, 2) if notes.errors else outcome.exit_code


# --- event -------------------------------------------------------------------------------------------------------


def load_event(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EventError(f"{path}: cannot read the event payload ({exc}); is GITHUB_EVENT_PATH right?") from None
    return data if isinstance(data, dict) else {}


def resolve_target(settings: Settings, repo: Repository) -> Target:
    """The PR (head, base) or pushed branch this run is about, from the event payload or the pr-number input."""
    event = settings.event_name
    pull_events = ("pull_request", "pull_request_target")
    if event not in (*pull_events, "push", "workflow_dispatch") and settings.mode is RunMode.AUTO:
        raise UnsupportedEvent(
            f"diagbot does not handle the '{event}' event; run it on pull_request, push or workflow_dispatch "
            "(or set the mode input with pr-number)"
        )
    payload = load_event(settings.event_path)
    if settings.mode is RunMode.PUSH or (event == "push" and settings.mode is RunMode.AUTO):
        return _push_target(settings, payload)
    if event in pull_events and settings.pr_number is None:
        pull = payload.get("pull_request")
        if not isinstance(pull, dict):
            raise EventError(f"{settings.event_path}: a {event} payload without 'pull_request'")
        try:
            return Target(
                Role.PULL_REQUEST,
                head_sha=str(pull["head"]["sha"]),
                ref=str(pull["head"]["ref"]),
                base_branch=str(pull["base"]["ref"]),
                base_sha=str(pull["base"]["sha"]),
                pr_number=int(pull["number"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise EventError(f"{settings.event_path}: the pull_request payload lacks {exc}") from None
    if settings.pr_number is not None and (
        event in (*pull_events, "workflow_dispatch") or settings.mode is RunMode.PULL_REQUEST
    ):
        number = settings.pr_number
        pull = gh.call(f"reading pull request #{number}", lambda: repo.get_pull(number))
        return gh.call(
            f"reading pull request #{number}",
            lambda: Target(
                Role.PULL_REQUEST,
                pull.head.sha,
                pull.head.ref,
                pull.base.ref,
                pull.base.sha,
                pr_number=number,
            ),
        )
    if settings.mode is RunMode.PULL_REQUEST:
        raise EventError("mode is pull-request but no pull request is known; set the pr-number input")
    if event == "workflow_dispatch":
        return _push_target(settings, payload)
    raise UnsupportedEvent(
        f"diagbot does not handle the '{event}' event; run it on pull_request, push or workflow_dispatch "
        "(see the README's workflow example)"
    )


def _push_target(settings: Settings, payload: dict[str, Any]) -> Target:
    ref = str(payload.get("ref") or settings.ref or "")
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    before = payload.get("before")
    base_sha = str(before) if isinstance(before, str) and before.strip("0") else None
    head = payload.get("after")
    return Target(Role.PUSH, str(head) if head else settings.sha, ref or None, branch, base_sha)


# --- config and baseline ---------------------------------------------------------------------------------------------


def _config(settings: Settings, target: Target) -> Config:
    path = settings.workspace / (settings.config or "diagbot.yml")
    config = load_config(path, required=settings.config is not None)
    thresholds = config.thresholds.override(settings.thresholds)
    gate: dict[str, Any] = {}
    if settings.require_baseline is not None:
        gate["require_baseline"] = settings.require_baseline
    if settings.baseline_max_age_days is not None:
        gate["baseline_max_age_days"] = settings.baseline_max_age_days
    if target.role is Role.PUSH:
        gate["require_baseline"] = False  # a first push has no baseline, and a push never gates on one
    return config.model_copy(update={"thresholds": thresholds, "gate": config.gate.model_copy(update=gate)})


def resolve_baseline(
    settings: Settings,
    github: Github,
    repo: Repository,
    config: Config,
    target: Target,
    now: datetime,
    notes: Notes,
) -> tuple[dict[str, Report], BaselineInfo]:
    """The newest usable baseline artifact of the base branch (exact base sha first), with its provenance."""
    name = settings.baseline_artifact
    if target.base_branch is None:
        return {}, BaselineInfo(source="none", missing_reason="this run has no base branch to compare against")
    try:
        candidates = gh.find_baseline_artifact(repo, name, target.base_branch, target.base_sha)
    except gh.GitHubError as exc:
        notes.warnings.extend(exc.problems)
        return {}, BaselineInfo(source="none", missing_reason=f"the '{name}' artifacts could not be listed")
    tried: list[str] = []
    for candidate in candidates:
        where = f"artifact {candidate.id} ('{candidate.name}', run {candidate.run_id})"
        try:
            files = gh.unpack_artifact(gh.download_artifact(github.requester, candidate), where)
            baselines = _read_baselines(files, config, where)
        except gh.GitHubError as exc:  # gone, unsafe, deleted, forbidden, unavailable: the next one may do
            tried.extend(exc.problems)
            continue
        if not baselines:
            tried.append(f"{where}: holds no report for these suites")
            continue
        notes.warnings.extend(tried)
        return baselines, _provenance(settings, candidate, config, now)
    notes.warnings.extend(tried)
    reason = (
        f"no unexpired '{name}' artifact from {target.base_branch} in this repository"
        if not candidates
        else f"none of the {len(candidates)} '{name}' artifacts from {target.base_branch} was usable"
    )
    return {}, BaselineInfo(source="none", branch=target.base_branch, missing_reason=reason)


def _read_baselines(files: dict[str, bytes], config: Config, where: str) -> dict[str, Report]:
    with tempfile.TemporaryDirectory(prefix="diagbot-baseline-") as tmp:
        root = Path(tmp)
        try:
            for relative, content in files.items():
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
        except OSError as exc:  # e.g. both `reports` and `reports/x.json` in one archive
            raise gh.UnsafeArtifact(f"{where}: cannot lay out its files ({exc.strerror}); re-upload it") from None
        location = root / "report.json" if list(files) == ["report.json"] else root
        baselines, problems = find_baselines(location, config)
        if problems and not baselines:
            raise gh.UnsafeArtifact(*problems)  # tried like any unusable candidate, and said why
        return baselines


def _provenance(settings: Settings, candidate: gh.ArtifactCandidate, config: Config, now: datetime) -> BaselineInfo:
    age = max(0.0, (now - candidate.created_at).total_seconds() / 86400)
    warnings = []
    if age > config.gate.baseline_max_age_days:
        warnings.append(
            f"the baseline is {age:.0f} days old (limit {config.gate.baseline_max_age_days:g}); "
            f"merge or rerun on {candidate.head_branch} to refresh it"
        )
    if not candidate.exact:
        warnings.append(
            f"no baseline from the base commit itself; compared with the newest from {candidate.head_branch}"
        )
    return BaselineInfo(
        source="artifact",
        label=f"{candidate.name} #{candidate.id}",
        branch=candidate.head_branch,
        sha=candidate.head_sha,
        run_id=candidate.run_id,
        run_url=settings.run_link(candidate.run_id),
        age_days=round(age, 2),
        exact=candidate.exact,
        warnings=warnings,
    )


# --- comment and check run ------------------------------------------------------------------------------------------


def _comment(
    settings: Settings, repo: Repository, number: int, config: Config, outcome: Outcome, notes: Notes
) -> str | None:
    marker = f"<!-- diagbot:{config.marker_id} -->"
    try:
        issue = repo.get_issue(number)
        return gh.upsert_comment(issue, marker, outcome.comment, settings.comment.value, settings.comment_author)
    except gh.CannotComment as exc:
        notes.warnings.extend(exc.problems)
    except gh.GitHubError as exc:
        notes.errors.extend(exc.problems)
    return None


def _check_run(
    settings: Settings, repo: Repository, target: Target, config: Config, outcome: Outcome, notes: Notes
) -> None:
    if target.head_sha is None:
        return
    title = f"{outcome.reason}"
    try:
        gh.create_check_run(
            repo,
            target.head_sha,
            f"diagbot ({config.marker_id})",
            outcome.conclusion.value,
            title,
            outcome.render("summary.md.j2", CHECK_SUMMARY_LIMIT),
            case_annotations(settings, config, outcome),
        )
    except gh.CannotCheck as exc:
        notes.warnings.extend(exc.problems)
    except gh.GitHubError as exc:
        notes.errors.extend(exc.problems)


def case_annotations(settings: Settings, config: Config, outcome: Outcome) -> list[dict[str, Any]]:
    """A failure annotation on every failing case: its line in a trace case file, or its workspace case.yaml."""
    found: list[tuple[Path, int, str, str]] = []  # file, line, title, message
    by_name = {s.name: s for s in config.suites}
    for suite in outcome.suites:
        spec = by_name.get(suite.name)
        if spec is None or suite.report is None:
            continue
        cases = config.path(spec.cases)
        if isinstance(suite.report, TraceReport):
            failing = [r for r in suite.report.results if not r.passed]
            try:
                lines = load_case_file(cases).lines if failing else {}
            except DiagbotError:
                lines = {}
            for r in failing:
                message = "; ".join(r.failed_checks) or "the case failed"
                found.append((cases, lines.get(r.case_id, 1), f"{suite.name}: {r.case_id}", message))
        else:
            for w in suite.report.results:
                if w.verdict != "pass":
                    missed = [
                        f"{name}.{c.id}: {c.detail}"
                        for name, bucket in w.packet.buckets.items()
                        for c in bucket.checks
                        if c.required and not c.passed
                    ]
                    message = f"{w.verdict} ({w.reason}), score {w.score:g}" + "".join(f"\n{m}" for m in missed)
                    found.append((cases / w.case_id / "case.yaml", 1, f"{suite.name}: {w.case_id}", message))
    return [
        {
            "path": os.path.relpath(path, settings.workspace).replace(os.sep, "/"),
            "start_line": line,
            "end_line": line,
            "annotation_level": "failure",
            "title": title[:255],
            "message": message[:60_000],
        }
        for path, line, title, message in found
    ]


# --- runner files ----------------------------------------------------------------------------------------------------


def _outputs(outcome: Outcome, info: BaselineInfo, comment_url: str | None, report_dir: str) -> dict[str, str]:
    reports = [s.report for s in outcome.suites if s.report is not None]
    diffs = [s.diff for s in outcome.suites if s.diff is not None]
    total = sum(r.total_cases for r in reports)
    passed = sum(r.passed_cases for r in reports)
    return {
        "has-regression": "true" if outcome.has_regression else "false",
        "pass-rate": f"{passed / total:.4f}" if total else "",
        "regression-count": str(sum(d.regression_count for d in diffs)),
        "improvement-count": str(sum(d.improvement_count for d in diffs)),
        "changed-count": str(sum(d.changed_count for d in diffs)),
        "baseline-sha": info.sha or "",
        "comment-url": comment_url or "",
        "report-dir": report_dir,
    }


def _pr_record(
    settings: Settings, target: Target, config: Config, info: BaselineInfo, outcome: Outcome
) -> dict[str, Any]:
    """What the fork-mode relay needs to post this run's results (it re-renders from the reports, never this text)."""
    return {
        "repository": settings.repository,
        "number": target.pr_number,
        "headSha": target.head_sha,
        "baseRef": target.base_branch,
        "baseSha": target.base_sha,
        "marker": f"<!-- diagbot:{config.marker_id} -->",
        "suites": [suite.name for suite in outcome.suites if suite.report is not None],
        "baseline": info.model_dump(mode="json", exclude={"run_url"}),
        "problems": [problem[:500] for problem in outcome.problems[:50]],
    }
