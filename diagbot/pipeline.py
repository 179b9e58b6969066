"""One run of diagbot over a config: evaluate each suite, diff it against its baseline, decide the gate, render.

Shared by `diagbot run`, `diagbot diff` and the GitHub action, so what a developer sees locally is what the PR
gets. Pure but for reading the suites' own files; writing the report folder is `write_outputs`.
"""

from __future__ import annotations

import dataclasses
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from diagbot.core.diff import DiffReport, ItemType, Thresholds, moved, with_items
from diagbot.core.errors import DiagbotError, OutputError
from diagbot.core.fs import FileProblem, read_bounded
from diagbot.core.gate import Conclusion, Decision, GateSettings, SuiteFacts, decide
from diagbot.core.outcome import MAX_LISTED, RunOutcome, SuiteOutcomeSummary
from diagbot.core.report import RunInfo, SuiteReport, dump_model, dump_model_bytes
from diagbot.core.text import listing
from diagbot.io.baselines import REPORT_BYTES, Baselines, reads_as_report
from diagbot.io.config import Config, ThresholdConfig
from diagbot.io.files import remove_stale, write_file
from diagbot.kinds import registry
from diagbot.kinds.base import Progress, SuiteInput
from diagbot.render.markdown import (
    COMMENT_LIMIT,
    SUMMARY_LIMIT,
    BaselineInfo,
    Caps,
    CurrentInfo,
    SuiteView,
    render_markdown,
)

BASELINE = "(baseline)"  # the outcome that holds the baseline's own problems; no suite can have this name


@dataclass
class SuiteOutcome:
    name: str
    report: SuiteReport | None = None
    baseline: SuiteReport | None = None
    diff: DiffReport | None = None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    input: SuiteInput | None = None
    kind: str = ""

    def facts(self) -> SuiteFacts:
        baseline_cases = 0
        if self.baseline is not None:
            baseline_cases = self.baseline.total_cases
        elif self.diff is not None:  # the relay has the diff but not the baseline's report
            baseline_cases = self.diff.baseline_total_cases
        return SuiteFacts(
            name=self.name,
            problems=len(self.problems),
            evaluated=self.report is not None,
            cases=self.report.total_cases if self.report is not None else 0,
            compared=self.diff is not None,
            regressions=self.diff.gating_regressions if self.diff is not None else 0,
            blocking=len(registry.blocking(self.report)) if self.report is not None else 0,
            baseline_cases=baseline_cases,
            gating=registry.gating(self.report) if self.report is not None else 0,
            baseline_gating=registry.gating(self.baseline) if self.baseline is not None else 0,
        )


@dataclass
class Outcome:
    """A run's suites and gate, plus what rendering needs; each Markdown output is rendered when first asked for."""

    suites: list[SuiteOutcome]
    decision: Decision
    views: list[SuiteView]
    baseline_info: BaselineInfo
    current: CurrentInfo
    marker: str
    comment_limit: int = COMMENT_LIMIT
    retired: tuple[str, ...] = ()  # suites the baseline has that gate.retired-suites retires
    moved: tuple[str, ...] = ()  # what changed since the baseline's run in what decides verdicts (the thresholds)

    def render(self, template: str, limit: int, caps: Caps | None = None, in_bytes: bool = False) -> str:
        failing = self.decision.reason if self.decision.conclusion is Conclusion.FAILURE else None
        notes = headline_notes(self.decision)
        if self.retired:  # a suite a pull request broke may be dropped and retired: said first, not in the footer
            notes.append(f"Retired since the baseline (gate.retired-suites), not compared: {', '.join(self.retired)}")
        notes += [note[0].upper() + note[1:] for note in self.moved]
        return render_markdown(
            template, self.views, self.baseline_info, self.current, self.marker, limit, caps, self.problems, failing,
            notes, in_bytes,
        )  # fmt: skip

    @cached_property
    def comment(self) -> str:
        return self.render("comment.md.j2", self.comment_limit)

    @cached_property
    def summary(self) -> str:
        return self.render("summary.md.j2", SUMMARY_LIMIT, Caps(None, None, None, None), in_bytes=True)

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code

    @property
    def reason(self) -> str:
        return self.decision.reason

    @property
    def has_regression(self) -> bool:
        return any(s.diff is not None and s.diff.has_regression for s in self.suites)

    @property
    def problems(self) -> list[str]:
        return [p for s in self.suites for p in s.problems]

    @property
    def warnings(self) -> list[str]:
        return [w for s in self.suites for w in s.warnings]


def _nothing_in_common(diff: DiffReport) -> bool:
    """An agent diff over no common case: none compared, and none whose status changed (a case that lost its checks
    on one side is not compared, but it is in common)."""
    if diff.common_cases != 0 or not diff.current_total_cases:
        return False
    return not any(i.case_id is not None and i.metric == "status" for i in diff.items)


def gate_outcome(suites: list[SuiteOutcome], gate: GateSettings) -> Decision:
    return decide([s.facts() for s in suites], gate)


def _moved_between_suites(outcomes: list[SuiteOutcome]) -> None:
    """A case that passed in one suite's baseline, is gone from it, and fails in another suite under an id that
    reads the same regresses in the suite it left (`core.diff.moved`): each suite's own diff sees only a removal or
    an addition."""
    compared = [o for o in outcomes if o.diff is not None and o.baseline is not None and o.report is not None]
    if not compared:
        return
    baselines = {o.name: registry.outcomes(o.baseline) for o in compared if o.baseline is not None}
    currents = {o.name: registry.outcomes(o.report) for o in outcomes if o.report is not None}
    found = moved(baselines, currents, {o.name: o.kind for o in outcomes})
    for outcome in compared:
        if outcome.name in found and outcome.diff is not None:
            outcome.diff = with_items(outcome.diff, found[outcome.name])


def run_config(
    config: Config,
    baselines: Baselines,
    baseline_info: BaselineInfo,
    current: CurrentInfo,
    run: RunInfo | None,
    gate: GateSettings,
    comment_limit: int = COMMENT_LIMIT,
    progress: Callable[[str], Progress] | None = None,
    workers: int = 1,
) -> Outcome:
    """Evaluate and diff every suite; one suite's bad input never stops the others.

    A baseline problem (a report the user pointed at that cannot be read, a suite the baseline has that this
    config lost) fails the gate with exit 2 rather than letting a suite pass for want of a baseline. `progress`,
    when given, makes the progress callback of each suite as it starts (the command line's bar). `workers`: the
    processes a suite may be judged in (the kinds that can use them do; the report is the same either way)."""
    outcomes: list[SuiteOutcome] = []
    thresholds = config.thresholds.to_thresholds()
    named = config.thresholds.model_dump(by_alias=True)  # as diagbot.yml names them, as `run.thresholds` keeps them
    for suite in config.suites:
        outcome = SuiteOutcome(suite.name, baseline=baselines.reports.get(suite.name), kind=suite.kind)
        outcomes.append(outcome)
        try:
            inputs = {"cases": suite.cases, "fixtures": suite.fixtures, "thresholds": named}
            spec = outcome.input = config.suite_input(suite, run and run.model_copy(update=inputs))
            if progress is not None:
                spec = dataclasses.replace(spec, progress=progress(suite.name))
            if workers > 1:
                spec = dataclasses.replace(spec, workers=workers)
            outcome.report = registry.evaluate(suite.kind, spec)
            if outcome.baseline is not None:
                source = baselines.sources.get(suite.name)
                where = f"baseline for {suite.name}" + (f" ({source})" if source else "")
                outcome.diff = registry.diff_reports(
                    outcome.baseline, outcome.report, thresholds, where, suite.name in baselines.filed
                )
        except DiagbotError as exc:
            outcome.problems = exc.problems
        if outcome.diff is not None and _nothing_in_common(outcome.diff):
            compared = (  # a case whose id differs from a baseline case's only in case or separators: a rename
                "only cases that look renamed from the baseline's were compared (their items say which)"
                if any(i.type is ItemType.REGRESSION for i in outcome.diff.items)
                else "nothing was compared, so nothing could regress"
            )  # fmt: skip
            outcome.warnings.append(
                f"suite {suite.name} has no case in common with its baseline (none of its "
                f"{outcome.diff.current_total_cases} cases is there with the same case_id and case_version): "
                f"{compared}; make the baseline again from these cases (a run with --out, then --baseline that "
                "folder; in the action, a push to the base branch)"
            )
        if outcome.report is not None and outcome.report.total_cases == 0:
            outcome.warnings.append(
                f"suite {suite.name} has no cases, so nothing was evaluated; add cases to {config.shown(suite.cases)}"
            )
    _moved_between_suites(outcomes)
    outcomes += _baseline_outcomes(config, baselines)
    if thresholds != Thresholds() and any(o.diff is not None for o in outcomes):
        outcomes.append(SuiteOutcome(BASELINE, warnings=[_thresholds_note(named)]))
    info = _with_warnings(baseline_info, outcomes)
    views = [registry.view(s.name, s.report, s.diff) for s in outcomes if s.report is not None]
    marker = f"diagbot:{config.marker_id}"
    moved = tuple(_thresholds_moved(outcomes, named))
    retired = _retired(config, baselines)
    return Outcome(outcomes, gate_outcome(outcomes, gate), views, info, current, marker, comment_limit, retired, moved)


def headline_notes(decision: Decision) -> list[str]:
    """The lines under the comment's headline that the gate gives: a finding the gate settings let pass."""
    return [f"The check passes all the same, as the gate settings say: {decision.reason}"] if decision.waived else []


_UNITS = {"tool-calls-pct": "%", "duration-pct": "%", "duration-min-ms": " ms"}
_COSTS = ("tool-calls-pct", "tool-calls-min", "duration-pct", "duration-min-ms")
_SCORES = ("score-points",)
_DEFAULTS = ThresholdConfig().model_dump(by_alias=True)


def _thresholds_note(now: dict[str, float]) -> str:
    """The thresholds this run compared with, when they are not the defaults (diagbot.yml's, or the command's or
    the action's inputs), stricter or looser: a pull request may raise them so that an agent looping through many
    more calls passes."""
    found = [
        f"{name} {value:g}{_UNITS.get(name, '')} (default {default:g}{_UNITS.get(name, '')})"
        for (name, value), default in zip(now.items(), _DEFAULTS.values(), strict=True)
        if value != default
    ]
    return f"compared with thresholds other than the defaults: {', '.join(found)}"


def _thresholds_moved(outcomes: list[SuiteOutcome], now: dict[str, float]) -> list[str]:
    """Each change of the thresholds since the baseline's run, as its report records them (reports before they
    were record none): a pull request that loosens them, or removes the stricter ones a repository set, passes an
    agent whose costs rose, and the defaults note alone would not say it (it would vanish with them)."""
    said: dict[str, list[str]] = {}
    for outcome in outcomes:
        run = outcome.baseline.run if outcome.baseline is not None and outcome.report is not None else None
        if run is None or run.thresholds is None:
            continue
        used = _SCORES if outcome.kind == "workspace" else _COSTS  # the thresholds the suite's kind compares with
        moved = [
            f"{name} {was:g}{_UNITS.get(name, '')} → {now[name]:g}{_UNITS.get(name, '')}"
            for name, was in run.thresholds.items()
            if name in used and was != now[name]
        ]
        if moved:
            said.setdefault(", ".join(moved), []).append(outcome.name)
    return [
        f"the thresholds changed since the baseline's run ({listing(suites, 5)}): {moved}; a rise is now judged "
        "against another bar than the baseline's was, so a worse agent may pass by that alone"
        for moved, suites in said.items()
    ]


def _baseline_outcomes(config: Config, baselines: Baselines) -> list[SuiteOutcome]:
    """Problems of the baseline itself: unreadable reports, and suites it has that this config no longer runs."""
    configured = {s.name for s in config.suites}
    retired = _retired(config, baselines)
    vanished = [n for n in baselines.names if n not in configured and n not in retired]
    problems = list(baselines.problems) + [
        f"suite {name} is in the baseline but not in this run's config: a suite (or shard) that vanished cannot "
        "pass; restore it, or list it under gate.retired-suites in diagbot.yml to retire it on purpose"
        for name in vanished
    ]
    notes = [f"suite {n} is retired (gate.retired-suites): its baseline is not compared" for n in retired]
    return [SuiteOutcome(BASELINE, problems=problems, warnings=notes)] if problems or notes else []


def _retired(config: Config, baselines: Baselines) -> tuple[str, ...]:
    """The baseline's suites that this config no longer runs and `gate.retired-suites` retires."""
    configured = {s.name for s in config.suites}
    return tuple(n for n in baselines.names if n in config.gate.retired_suites and n not in configured)


def _with_warnings(info: BaselineInfo, outcomes: list[SuiteOutcome]) -> BaselineInfo:
    warnings = [w for s in outcomes for w in s.warnings]
    missing = [s.name for s in outcomes if s.report is not None and s.baseline is None]
    unreadable = any(s.name == BASELINE and s.problems for s in outcomes)
    if info.source != "none" and missing and not unreadable:
        warnings.append(f"the baseline has no report for: {', '.join(missing)}")
    elif info.source != "none" and missing:
        warnings.append(f"no usable baseline report for: {', '.join(missing)} (see the problems above)")
    if not warnings:
        return info
    return info.model_copy(update={"warnings": [*info.warnings, *warnings]})


def report_path(out: Path, suite: str) -> Path:
    return out / "reports" / f"{suite}.json"


def diff_path(out: Path, suite: str) -> Path:
    return out / "diff" / f"{suite}.json"


def write_outputs(outcome: Outcome, out: Path, anchor: Path | None = None) -> list[str]:
    """The report folder: reports/<suite>.json, diff/<suite>.json, comment.md, summary.md (the next baseline),
    and nothing an earlier run left there: a report of a suite this run did not evaluate (or no longer has) would
    read as this run's. An OutputError when the folder cannot take them, or a folder from `anchor` (the checkout)
    down is a link (`io.files.write_file`); then what this run wrote and what an earlier run left are both
    removed, as far as they can be, so the folder never holds a mix of the two (each file is written whole, the
    folder is not). Returns warnings of what was written: a report too large for diagbot to read back as a
    baseline."""
    try:
        written = _write_outputs(outcome, out, anchor)
        clear_outputs(out, anchor, keep=frozenset(written))
    except OutputError:
        clear_outputs(out, anchor, quiet=True)
        raise
    return [
        f"{path}: {size:,} bytes, over the {REPORT_BYTES:,} bytes diagbot reads of a baseline report, so no run can "
        "be compared with it: split the suite so that each suite's report stays under it"
        for path, size in written.items()
        if path.parent.name == "reports" and size > REPORT_BYTES
    ]


def _write_outputs(outcome: Outcome, out: Path, anchor: Path | None) -> dict[Path, int]:
    files: dict[Path, str | bytes] = {}
    for suite in outcome.suites:
        if suite.name == BASELINE:
            continue
        if suite.report is not None:
            files[report_path(out, suite.name)] = dump_model_bytes(suite.report)
        if suite.diff is not None:
            files[diff_path(out, suite.name)] = dump_model(suite.diff)
    files[out / "comment.md"] = outcome.comment
    files[out / "summary.md"] = outcome.summary
    for path, text in files.items():
        write_file(path, text, out, anchor)
    return {path: len(text) for path, text in files.items()}  # a report's size in bytes (it is written as bytes)


MAX_CLEARED = 10_000  # report and diff files of an earlier run that `clear_outputs` removes from one folder


def clear_outputs(
    out: Path,
    anchor: Path | None = None,
    quiet: bool = False,
    keep: frozenset[Path] = frozenset(),
    everything: bool = False,
) -> None:
    """Remove what an earlier run wrote to the report folder but for the files in `keep` (this run's): its
    reports, diffs, comment, summary and pull-request record would read as this run's. `quiet`: remove what can
    be removed and raise nothing (after a failed write, whose error is the one to report). `everything`: also
    what reads as a report whoever wrote it, `report.json` beside them included (what a pull request commits
    there would be uploaded as the run's report, and read as a baseline); other tools' files stay."""
    if everything:  # a link the pull request committed as the folder, or as its reports/ or diff/, is removed
        for link in (out, out / "reports", out / "diff"):  # (the link, never what it points at): uploaded as the
            if link.is_symlink():  # run's, the folder it points at would be read as a baseline
                remove_stale(link, link.parent, anchor)
        _remove_links(out, anchor)  # first: nothing after this may leave them behind for the upload step
    stale = [out / "comment.md", out / "summary.md", out / "pr.json"]
    looked = [MAX_LOOKED_AT_BYTES]  # bytes still to be read to tell another tool's JSON from a report
    if everything and _reads_as_report(out / "report.json", looked):  # an artifact of it alone is a bare report
        stale.append(out / "report.json")
    for folder in (out / "reports", out / "diff"):
        try:
            if folder.is_dir() and not folder.is_symlink():
                with os.scandir(folder) as entries:
                    listed = [Path(e.path) for _, e in zip(range(MAX_CLEARED + 1), entries, strict=False)]
                if everything and len(listed) > MAX_CLEARED:
                    raise OutputError(
                        f"{folder}: holds more than {MAX_CLEARED:,} entries, so what it holds cannot all be removed "
                        "before this run; the report folder is diagbot's: do not commit it"
                    )
                stale += [
                    p
                    for p in listed[:MAX_CLEARED]
                    if p.suffix == ".json" and (_written_by_diagbot(p) or (everything and _reads_as_report(p, looked)))
                ]
        except OSError as exc:
            if not quiet:
                message = f"{folder}: an earlier run's outputs cannot be listed ({exc.strerror or exc})"
                raise OutputError(message) from None
    for path in stale:
        if path in keep:
            continue
        try:
            remove_stale(path, out, anchor)
        except OutputError:
            if not quiet:
                raise


MAX_LINK_WALK = 100_000  # entries of the report folder looked through for links before it is moved aside unread


def _remove_links(out: Path, anchor: Path | None) -> None:
    """Remove every symbolic link in the report folder and on its way from the workspace (`anchor`), as each is
    found (the link, never what it points at): diagbot writes none, and the workflow uploads the folder, what a link
    points at included. A pull request that commits one there (a rerun of it with pr-number runs the default
    branch's workflow on its files) would have a file of the runner's uploaded: the upload step's environment, a
    checkout's credentials. A folder of more than MAX_LINK_WALK entries cannot all be looked through: it is moved
    aside (so that the upload finds no folder), and the run stops saying so. Only a folder strictly inside the
    workspace is looked through: one that is the workspace is the repository's, its links are its own."""
    if anchor is None:
        return
    root = Path(os.path.normpath(anchor.absolute()))
    try:
        below = Path(os.path.normpath(out.absolute())).relative_to(root).parts
    except ValueError:  # outside the workspace: refused where the folder is written
        return
    at = root
    for part in below:  # a link on the way (`build` -> elsewhere, for build/diagbot) would be followed by all below
        at = at / part
        try:
            if at.is_symlink():
                at.unlink()
                return  # nothing is below it now
            if not at.is_dir():
                return
        except OSError as exc:
            raise OutputError(f"{at}: cannot be looked at for links ({exc.strerror or exc})") from None
    if not below:
        return
    todo, seen = [at], 0
    while todo:
        folder = todo.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_LINK_WALK:
                        aside = at.with_name(f"{at.name}.unchecked-{secrets.token_hex(4)}")
                        at.rename(aside)
                        raise OutputError(
                            f"{at}: holds more than {MAX_LINK_WALK:,} entries, too many to look through for links "
                            f"(which the upload would follow), so it was moved aside to {aside.name} and this run "
                            "stopped; the report folder is diagbot's: do not commit it, nor write other files there"
                        )
                    if entry.is_symlink():
                        Path(entry.path).unlink()
                    elif entry.is_dir(follow_symlinks=False):
                        todo.append(Path(entry.path))
        except OSError as exc:
            raise OutputError(f"{folder}: cannot be looked through for links ({exc.strerror or exc})") from None


_OUR_FIRST_KEYS = (b'"schemaVersion"', b'"baselineTotalCases"')  # how diagbot's reports and diffs open


MAX_LOOKED_AT_BYTES = 256 * 1024 * 1024  # what one `clear_outputs` reads of JSON files to tell reports from others


def _reads_as_report(path: Path, looked: list[int]) -> bool:
    """Whether a file would be read as a report (a JSON object with a schemaVersion, however its keys are ordered
    or escaped) by a baseline reader: one over the reader's size cap, or not JSON, is refused there anyway. Past
    the bytes `looked` has left, a file is taken for one unread (removed, never kept unknown)."""
    if path.is_symlink():
        return True
    try:
        size = path.stat().st_size
    except OSError:
        return False  # not there: nothing to remove
    if size > looked[0]:
        return size <= REPORT_BYTES
    looked[0] -= size
    try:
        return reads_as_report(read_bounded(path, REPORT_BYTES))
    except FileProblem:
        return False


def _written_by_diagbot(path: Path) -> bool:
    """Whether a JSON file in the report folder is an earlier run's report or diff (by how diagbot writes them:
    their first key), not a file of the user's own that happens to sit there. A link is never diagbot's: it is
    removed, never what it points at."""
    if path.is_symlink():
        return True
    try:
        opening = read_bounded(path, 64, head=True).lstrip().removeprefix(b"{").lstrip()
    except FileProblem:
        return False
    return opening.startswith(_OUR_FIRST_KEYS)


def run_outcome(
    outcome: Outcome, out: Path, config: str | None, baseline: str | None, unwritten: list[str] | None = None
) -> RunOutcome:
    """The machine-readable outcome of a run whose report folder `write_outputs` wrote to `out`, or failed to
    write for the `unwritten` problems: then the run fails with exit 2 and names no file."""
    views = {v.name: v for v in outcome.views}
    suites = [_suite_summary(s, views.get(s.name), out) for s in outcome.suites if s.name != BASELINE]
    code = outcome.exit_code
    written = RunOutcome(
        conclusion=outcome.decision.conclusion, exit_code=code if code in (0, 1) else 2, reason=outcome.reason,
        has_regression=outcome.has_regression, config=config, baseline=baseline, report_dir=str(out),
        comment=str(out / "comment.md"), summary=str(out / "summary.md"), suites=suites,
        problems=outcome.problems, warnings=[*outcome.baseline_info.warnings],
    )  # fmt: skip
    if not unwritten:
        return written
    return written.model_copy(update={
        "conclusion": Conclusion.FAILURE, "exit_code": 2, "reason": "the report folder could not be written",
        "comment": None, "summary": None, "problems": [*outcome.problems, *unwritten],
        "suites": [s.model_copy(update={"report": None, "diff": None}) for s in suites],
    })  # fmt: skip


def _regressed(diff: DiffReport | None) -> list[str]:
    """The ids of the cases of the diff's gating regressions, each once, in its order; at most MAX_LISTED."""
    items = diff.items if diff is not None else []
    found = {i.case_id: None for i in items if i.type is ItemType.REGRESSION and i.gating and i.case_id}
    return list(found)[:MAX_LISTED]


def _suite_summary(suite: SuiteOutcome, view: SuiteView | None, out: Path) -> SuiteOutcomeSummary:
    report, diff = suite.report, suite.diff
    total, passed = (report.total_cases, report.passed_cases) if report is not None else (0, 0)
    failed = view.failing if view is not None else 0
    return SuiteOutcomeSummary(
        name=suite.name, kind=suite.kind, evaluated=report is not None, total_cases=total, passed_cases=passed,
        failed_cases=failed, unchecked_cases=max(0, total - passed - failed),
        pass_rate=report.pass_rate if report is not None else None,
        blocking_cases=view.blocking if view is not None else 0, compared=diff is not None,
        regressions=diff.regression_count if diff else 0, gating_regressions=diff.gating_regressions if diff else 0,
        improvements=diff.improvement_count if diff else 0, changes=diff.changed_count if diff else 0,
        blocking_case_ids=[b.case_id for b in registry.blocking(report)][:MAX_LISTED] if report is not None else [],
        regressed_case_ids=_regressed(diff),
        report=str(report_path(out, suite.name)) if report is not None else None,
        diff=str(diff_path(out, suite.name)) if diff is not None else None,
        problems=suite.problems,
        warnings=[*suite.warnings, *(registry.warnings(report) if report is not None else [])],
    )  # fmt: skip
