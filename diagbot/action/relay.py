"""`mode: comment`: post a fork PR's results from the report folder its own (read-only) run uploaded.

The companion `workflow_run` workflow downloads the evaluating run's report artifact into `<report-dir>` and runs
this. Everything in that folder is UNTRUSTED: a fork's workflow could have written anything into it. So:

- every file is size-capped and validated with strict models (`pr.json`) or the report and diff models;
- the PR it names must exist in this repository, be open, and have exactly the head sha it claims (and, when the
  trigger is a `workflow_run`, the head sha GitHub says the evaluating run ran on);
- comment.md from the artifact is never posted: the comment is re-rendered from the validated reports, so every
  string goes through the template's escaping; links are rebuilt from run ids, never taken from the artifact.

It only reads JSON files: no PR code is checked out or run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from diagbot.action import runner
from diagbot.action.events import load_event
from diagbot.action.publish import Notes, Post, publish
from diagbot.action.record import PR_RECORD, SUITE_NAME, PrRecord, short
from diagbot.action.settings import Settings
from diagbot.core import values
from diagbot.core.diff import parse_diff
from diagbot.core.errors import DiagbotError
from diagbot.core.fs import FileProblem, read_text_bounded
from diagbot.core.gate import Conclusion, Decision, GateSettings, decide
from diagbot.github.port import GitHubPort, PullInfo
from diagbot.io.config import MAX_SUITES
from diagbot.kinds.registry import parse_any_report, view
from diagbot.pipeline import SuiteOutcome, headline_notes
from diagbot.render.markdown import CHECK_SUMMARY_LIMIT, COMMENT_LIMIT, BaselineInfo, CurrentInfo, render_markdown

PR_JSON_BYTES = 1024 * 1024
REPORT_BYTES = 64 * 1024 * 1024  # per report or diff file
TOTAL_BYTES = 256 * 1024 * 1024  # all reports and diffs together
FIX = "the evaluating run's artifact is not what diagbot writes; rerun that run, or check what uploads the artifact"


class RelayError(DiagbotError):
    """The report artifact cannot be trusted or used: nothing is posted."""


def run(settings: Settings, port: GitHubPort, out: TextIO) -> int:
    """Relay one evaluating run's results to its PR; 0 posted (or nothing to do), 2 refused or failed."""
    warnings: list[str] = []
    errors: list[str] = []
    try:
        posted = _relay(settings, port, out, warnings, errors)
    except DiagbotError as exc:
        errors.extend(exc.problems)
        posted = None
    runner.annotate(out, warnings, errors)
    if posted is not None:
        runner.write_outputs(settings.output, posted)
    if errors:
        runner.append(settings.step_summary, "### ⛔ diagbot could not post the results\n\n" + runner.bullets(errors))
        print("diagbot: nothing or not everything was posted; see the errors above", file=out)
        return 2
    return 0


def _relay(
    settings: Settings, port: GitHubPort, out: TextIO, warnings: list[str], errors: list[str]
) -> dict[str, str] | None:
    report_dir = settings.workspace / settings.report_dir
    record = load_record(report_dir / PR_RECORD, settings.workspace)
    if record.repository is not None and record.repository.lower() != settings.repository.lower():
        raise RelayError(
            f"{report_dir / PR_RECORD}: names repository {record.repository}, but this is {settings.repository}; "
            "the artifact comes from another repository's run"
        )
    evaluating = _check_event(settings, record)
    suites = load_suites(report_dir, record.suites, settings.workspace)
    views = [view(s.name, s.report, s.diff) for s in suites if s.report is not None]

    number = record.number
    pull = port.pull(number)
    if pull.head_sha != record.head_sha:
        raise RelayError(
            f"pull request #{number} is at {pull.head_sha}, but the artifact is for {record.head_sha}: a stale or "
            "forged artifact; nothing was posted (a newer run for the current head posts its own results)"
        )
    if evaluating is not None:
        _same_pull(evaluating, pull)
    if pull.state != "open":
        print(f"::notice::pull request #{number} is {pull.state}; nothing posted", file=out)
        return None

    baseline = _baseline(settings, record, any(v.diff is not None for v in views))
    current = CurrentInfo(sha=record.head_sha, run_url=settings.run_link(evaluating.id if evaluating else None))
    marker = f"diagbot:{record.marker_id}"
    # The evaluating run's own input problems fail the check as they failed that run; so does a run GitHub says
    # did not succeed when its artifact would pass (it may have stopped before writing what the artifact holds).
    problems = list(record.problems)
    counts = record.baselines or {}
    gate = _gate(settings, record)
    decision = _decide(gate, suites, problems, counts)
    ended = evaluating.conclusion if evaluating is not None else None
    recorded = _decide(_gate(None, record), suites, problems, counts)  # by the gate the evaluating run recorded
    if ended not in (None, "success") and recorded.conclusion is not Conclusion.FAILURE:  # yet it did not succeed
        problems.append(
            f"the evaluating workflow run (run {evaluating.id if evaluating else '?'}) ended as "
            f"{values.one_line(str(ended), 40)}, though its artifact passes the gate that run recorded: another job or "
            "step of it failed, or it stopped before writing what its artifact holds, so the artifact is not taken as "
            "passing; look at that run, and rerun it"
        )
        decision = _decide(gate, suites, problems, counts)
    failing = decision.reason if decision.conclusion is Conclusion.FAILURE else None  # the headline says why
    said = headline_notes(decision)
    comment = render_markdown(
        "comment.md.j2", views, baseline, current, marker, COMMENT_LIMIT, problems=problems,
        gate_failure=failing, headline_notes=said,
    )  # fmt: skip
    notes = Notes(warnings, errors)
    post = Post(
        number=number,
        head_sha=record.head_sha,
        marker_id=record.marker_id,
        comment=comment,
        comment_mode=settings.comment.value,
        comment_author=settings.comment_author,
        conclusion=decision.conclusion.value,
        title=decision.reason,
        summary=render_markdown(
            "summary.md.j2",
            views,
            baseline,
            current,
            marker,
            CHECK_SUMMARY_LIMIT,
            problems=problems,
            gate_failure=failing,
            headline_notes=said,
            in_bytes=True,
        ),
        annotations=[],
        run_id=settings.run_id,
    )
    comment_url = publish(port, post, notes)
    runner.write_summary(settings.step_summary, comment)
    print(f"diagbot: relayed to pull request #{number} ({decision.reason}; {decision.conclusion.value})", file=out)
    return {
        "has-regression": "true" if any(v.diff is not None and v.diff.has_regression for v in views) else "false",
        "comment-url": comment_url or "",
        "baseline-sha": baseline.sha or "",
        "report-dir": settings.report_dir,
    }


def _gate(settings: Settings | None, record: PrRecord) -> GateSettings:
    """The settings the evaluating run decided with (from pr.json), unless this workflow's inputs say otherwise
    (`settings`; None: the recorded ones alone)."""
    given = record.gate
    fail = settings.fail_on_regression if settings else None
    require = settings.require_baseline if settings else None
    return GateSettings(
        fail_on_regression=(given.fail_on_regression if given else True) if fail is None else fail,
        require_baseline=(given.require_baseline if given else False) if require is None else require,
    )


# --- untrusted files -----------------------------------------------------------------------------------------------


def read_capped(path: Path, cap: int, what: str, root: Path, required: bool = True) -> str | None:
    """A regular file of at most `cap` bytes, as UTF-8 text, reached from `root` through no symbolic link."""
    _no_links(path, root, what)
    if not os.path.lexists(path) and not required:
        return None
    try:
        return read_text_bounded(path, cap)
    except FileProblem as problem:
        if problem.missing:
            raise RelayError(
                f"{path}: {what} not found; the evaluating run did not get as far as writing it (see its log), or "
                "the download step put the artifact elsewhere (the step's path must be the report-dir input)"
            ) from None
        raise RelayError(f"{path}: {what} {problem.message}; {FIX}") from None


def _no_links(path: Path, root: Path, what: str) -> None:
    """Refuse a path any of whose parts below `root` (the workspace) is a symbolic link: a downloaded artifact
    could otherwise point a report, or the folder holding it, anywhere on the runner."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        raise RelayError(f"{path}: {what} is outside the workspace {root}; set report-dir inside it") from None
    current = root
    for part in parts:
        current = current / part
        try:
            linked = current.is_symlink()
        except OSError as exc:  # a part over 255 bytes: `is_symlink` raises for all but a missing path
            raise RelayError(
                f"{current}: cannot be looked at ({exc.strerror or exc}); set report-dir to a plain path"
            ) from None
        if linked:
            raise RelayError(f"{current}: a symbolic link on the way to {what}; {FIX}")


def load_record(path: Path, root: Path) -> PrRecord:
    text = read_capped(path, PR_JSON_BYTES, PR_RECORD, root) or ""
    try:
        values.loads_unique(text)  # a repeated key: which value the evaluating run wrote is not known
        return PrRecord.model_validate_json(text)
    except ValidationError as exc:
        raise RelayError(*_problems(exc, path)) from None
    except (ValueError, RecursionError) as exc:
        raise RelayError(f"{path}: not valid JSON ({exc}); {FIX}") from None


def _problems(exc: ValidationError, path: Path) -> list[str]:
    shown = []
    for error in exc.errors(include_url=False, include_input=False)[:10]:
        field = ".".join(str(p) for p in error["loc"]) or "top level"
        shown.append(f"{path}: field '{field}': {error['msg'].lower()}; {FIX}")
    more = exc.error_count() - len(shown)
    said = f"{path}: ... and {more} more {'problem' if more == 1 else 'problems'}"
    return shown + ([said] if more > 0 else [])


def load_suites(report_dir: Path, order: list[str] | None, root: Path) -> list[SuiteOutcome]:
    """Every `reports/<suite>.json` (in pr.json's order when it gives one) with its `diff/<suite>.json`, if any."""
    reports = report_dir / "reports"
    names = _listed(reports, root) if order is None else list(dict.fromkeys(order))
    suites: list[SuiteOutcome] = []
    budget = TOTAL_BYTES
    for name in names:
        where = reports / f"{name}.json"
        text = read_capped(where, REPORT_BYTES, f"the report of suite {name}", root) or ""
        budget = _spent(budget, text, report_dir)  # before parsing: a report's objects take ten times its bytes
        try:
            report = parse_any_report(text, str(where))
        except DiagbotError as exc:  # its messages may quote the untrusted file: keep them short
            raise RelayError(*[short(p) for p in exc.problems[:10]]) from None
        diff_path = report_dir / "diff" / f"{name}.json"
        diff_text = read_capped(diff_path, REPORT_BYTES, f"the diff of suite {name}", root, required=False)
        diff = None
        if diff_text is not None:
            budget = _spent(budget, diff_text, report_dir)
            try:
                diff = parse_diff(diff_text, str(diff_path))
            except DiagbotError as exc:
                raise RelayError(*[short(p) for p in exc.problems[:10]]) from None
            if diff.current_total_cases != report.total_cases or diff.current_passed_cases != report.passed_cases:
                raise RelayError(f"{diff_path}: does not match its report's case counts; {FIX}")
        suites.append(SuiteOutcome(name, report=report, diff=diff))
    return suites


def _spent(budget: int, text: str, report_dir: Path) -> int:
    """What is left of the artifact's byte budget after `text`; refused once it is overspent."""
    budget -= len(text.encode("utf-8", "surrogatepass"))
    if budget < 0:
        raise RelayError(f"{report_dir}: the reports are larger than the {TOTAL_BYTES:,} bytes allowed; {FIX}")
    return budget


def _listed(reports: Path, root: Path) -> list[str]:
    """The suite names of `reports/*.json`, listing at most a few more entries than a valid folder can hold."""
    _no_links(reports, root, "the reports folder")
    if not os.path.lexists(reports):
        return []
    if not reports.is_dir():
        raise RelayError(f"{reports}: not a folder; {FIX}")
    names: list[str] = []
    with os.scandir(reports) as entries:
        for count, entry in enumerate(entries):
            if count > 4 * MAX_SUITES:
                raise RelayError(f"{reports}: more than {4 * MAX_SUITES} entries; {FIX}")
            if entry.name.endswith(".json"):
                names.append(entry.name.removesuffix(".json"))
    if len(names) > MAX_SUITES:
        raise RelayError(f"{reports}: {len(names)} reports, more than the {MAX_SUITES} allowed; {FIX}")
    if any(not re.match(SUITE_NAME, n) for n in names):
        raise RelayError(f"{reports}: some report file names are not suite names; {FIX}")
    return sorted(names)


# --- trusted context -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EvaluatingRun:
    """The run that uploaded the artifact, as the workflow_run payload (trusted: GitHub wrote it) says."""

    id: int | None
    head_repository: str | None
    head_branch: str | None
    pull_numbers: tuple[int, ...]
    conclusion: str | None = None


def _decide(gate: GateSettings, suites: list[SuiteOutcome], problems: list[str], counts: dict[str, Any]) -> Decision:
    broken = [SuiteOutcome("(evaluating run)", problems=problems)] if problems else []
    facts = [s.facts() for s in [*suites, *broken]]
    facts = [replace(f, baseline_cases=c.cases, baseline_gating=c.gating) if (c := counts.get(f.name)) else f
             for f in facts]  # fmt: skip
    return decide(facts, gate)


def _same_pull(run: EvaluatingRun, pull: PullInfo) -> None:
    """The evaluating run ran on this pull request's head branch and repository, and, when GitHub lists its pull
    requests (it does not for forks), for this one: another fork's pull request at the same commit, whose artifact
    names this number, must not post here."""
    wrong = []
    if run.pull_numbers and pull.number not in run.pull_numbers:
        wrong.append(f"its pull requests are {', '.join(f'#{n}' for n in run.pull_numbers)}")
    if run.head_repository is not None and (pull.head_repo or "").lower() != run.head_repository.lower():
        wrong.append(
            f"it ran in {run.head_repository}, but #{pull.number}'s head is in {pull.head_repo or 'a deleted fork'}"
        )
    if run.head_branch is not None and run.head_branch != pull.head_ref:
        wrong.append(f"it ran on branch {run.head_branch}, but #{pull.number}'s head is {pull.head_ref}")
    if wrong:
        raise RelayError(
            f"the artifact names pull request #{pull.number}, but the run that uploaded it is not that pull request's "
            f"({'; '.join(wrong)}): a forged artifact; nothing was posted"
        )


def _check_event(settings: Settings, record: PrRecord) -> EvaluatingRun | None:
    """The evaluating run from a workflow_run payload (trusted: GitHub wrote it), checking its head sha."""
    if settings.event_name != "workflow_run" or settings.event_path is None:
        return None
    try:
        payload: Any = load_event(settings.event_path)
    except DiagbotError as exc:
        raise RelayError(*exc.problems) from None
    workflow_run = payload.get("workflow_run") if isinstance(payload, dict) else None
    if not isinstance(workflow_run, dict):
        return None
    head_sha = workflow_run.get("head_sha")
    if isinstance(head_sha, str) and head_sha != record.head_sha:
        raise RelayError(
            f"the artifact is for {record.head_sha}, but the run that uploaded it ran on {head_sha}: a forged "
            "artifact; nothing was posted"
        )
    run_id = workflow_run.get("id")
    repository = workflow_run.get("head_repository")
    name = repository.get("full_name") if isinstance(repository, dict) else None
    branch = workflow_run.get("head_branch")
    conclusion = workflow_run.get("conclusion")
    pulls = workflow_run.get("pull_requests")
    numbers = [p.get("number") for p in pulls if isinstance(p, dict)] if isinstance(pulls, list) else []
    return EvaluatingRun(
        id=run_id if isinstance(run_id, int) and not isinstance(run_id, bool) else None,
        head_repository=name if isinstance(name, str) else None,
        head_branch=branch if isinstance(branch, str) else None,
        pull_numbers=tuple(n for n in numbers if isinstance(n, int) and not isinstance(n, bool)),
        conclusion=conclusion if isinstance(conclusion, str) else None,
    )


def _baseline(settings: Settings, record: PrRecord, compared: bool) -> BaselineInfo:
    given = record.baseline
    if given is None and not compared:
        return BaselineInfo(source="none", missing_reason="the evaluating run had no baseline to compare against")
    if given is None:
        return BaselineInfo(source="file", label="the evaluating run's baseline")
    return BaselineInfo(
        source=given.source,
        label=given.label,
        branch=given.branch,
        sha=given.sha,
        run_id=given.run_id,
        run_url=settings.run_link(given.run_id),
        age_days=given.age_days,
        exact=given.exact,
        missing_reason=given.missing_reason or ("the evaluating run had none" if given.source == "none" else None),
        warnings=given.warnings,
    )
