"""The agent suite (general eval cases of seed 001 over recorded conversations) behind the kind protocol."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from diagbot.core.diff import CaseOutcome, DiffReport, Thresholds
from diagbot.core.errors import CaseFileError, ReportFormatError
from diagbot.core.rates import percent
from diagbot.core.report import check_version, stored_model, unique_case_ids
from diagbot.core.values import one_line
from diagbot.kinds.agent import parallel
from diagbot.kinds.agent.cases import Transition
from diagbot.kinds.agent.diff import diff_agent
from diagbot.kinds.agent.evaluate import (
    authoring_slips,
    evaluate_cases,
    governance_slips,
    ignored_checks,
    is_checked,
    not_gating_because,
    today_of,
)
from diagbot.kinds.agent.load import (
    CaseFile,
    FieldLines,
    LoadedCase,
    RawCase,
    decode_located,
    iter_cases,
    load_cases,
    read_cases,
    unread_warning,
)
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import AGENT_SCHEMA_VERSION, AgentCaseResult, AgentReport, Aggregate, build_report
from diagbot.kinds.base import Annotation, Blocked, SuiteInput, tracked
from diagbot.kinds.workers import can_fork
from diagbot.render.markdown import MAX_NOTES, SuiteView, cases_note, md, warning_notes

_ICONS = {"passed": "✅", "failed": "❌", "unchecked": "➖"}
_UNCHECKED_CELL = "unchecked: nothing machine-checked, so it neither passes nor fails"  # what ➖ means, in its row
_SHOWN_CHECKS = 2
_COUNTS = (("totalCases", "total_cases"), ("passedCases", "passed_cases"), ("uncheckedCases", "unchecked_cases"),
           ("gatingCases", "gating_cases"))  # fmt: skip  # a stored report's counts, held to its results


def _options(suite: SuiteInput) -> AgentOptions:
    return suite.options if isinstance(suite.options, AgentOptions) else AgentOptions()


def _blocking(result: AgentCaseResult) -> bool:
    return result.gating and result.risk_level == "P0" and result.status == "failed"


def _gone(diff: DiffReport | None, report: AgentReport) -> list[str]:
    """Notes under the suite's headline on the gating cases a pull request removed, made informational (under the
    same case_version or a new one), gave a new case_version (not compared) or new checks under the same one, or
    recorded with another number of trials, the count first: each is a way past the gate that shows as a change
    only, and a comment cut to GitHub's size may lose their rows among other changes."""
    if diff is None:
        return []
    removed = [i for i in diff.items if i.metric == "case" and i.current_value is None and i.gating]
    informational = {r.case_id for r in report.results if not r.gating}
    demoted = [
        i
        for i in diff.items
        if (i.metric == "gating" and i.baseline_value is True)
        or (i.metric == "caseVersion" and i.gating and i.case_id in informational)
    ]
    gating = [i for i in diff.items if i.gating and i.case_id not in informational]
    versioned = [i for i in gating if i.metric == "caseVersion"]
    rewritten = [i for i in gating if i.metric == "checks"]
    retried = [i for i in gating if i.metric == "trials"]
    notes = []
    for items, what in (
        (removed, "removed since the baseline"),
        (demoted, "no longer gating since the baseline"),
        (versioned, "with a new case_version since the baseline, so not compared with it"),
        (rewritten, "whose checks changed under the same case_version since the baseline"),
        (retried, "recorded with another number of trials than in the baseline"),
    ):
        if items:
            notes.append(cases_note("gating case", what, [f"{i.case_id} ({i.severity})" for i in items]))
    return notes


def _options_changed(diff: DiffReport | None, report: AgentReport) -> list[str]:
    """A note under the headline when the suite's options that decide verdicts changed since the baseline: the
    cases they moved are listed as improvements or regressions, which they are not. Without a baseline, the options
    not left to their defaults are named (`trials: any` lets a P0 case with a failing trial pass): nothing else
    would say that a pull request's diagbot.yml set them."""
    if diff is None:
        shown = ", ".join(f"{name}: {value}" for name, value in (report.options or {}).items())
        return [md(f"Suite options that decide verdicts, not at their defaults: {shown}", 600)] if shown else []
    moved = [i.metric.removeprefix("options.") for i in diff.items if i.metric.startswith("options.")]
    if not moved:
        return []
    return [md(f"Suite options that decide verdicts changed since the baseline ({', '.join(moved)}): a case that "
               "passes or fails differently may have moved by them, not by the agent", 600)]  # fmt: skip


def _no_rate(report: AgentReport, diff: DiffReport | None) -> str | None:
    """Why the headline has no gating pass rate to show, or None: no checked case gates, or (with a baseline) none
    of those is compared, being new, of a new case_version or checked on one side only. A rate of no case would
    read 0.0%."""
    if diff is None:
        checked = report.gating.total_cases > report.gating.unchecked_cases
        return None if checked else "no checked case gates, so no gating pass rate"
    apart = {i.case_id for i in diff.items if i.metric in ("case", "caseVersion")} | {
        i.case_id for i in diff.items if i.metric == "status" and "unchecked" in (i.baseline_value, i.current_value)
    }
    compared = any(r.gating and r.status != "unchecked" and r.case_id not in apart for r in report.results)
    if compared:
        return None
    return "no gating pass rate to compare (no checked gating case is in the baseline as it is now)"


def _failures(failed: list[str], shown: int) -> str:
    """A case's failed checks as a cell or a note shows them: the first `shown` in full, and, when there are more,
    the codes of all of them first, so a cut cell still names every kind of failure (a P0 case's
    `confirmation_missing` behind a long `tool_sequence_mismatch`)."""
    said = "; ".join(failed[:shown])
    if len(failed) <= shown:
        return said
    codes = ", ".join(dict.fromkeys(check.partition(":")[0] for check in failed))
    return f"{len(failed)} failed ({codes}); {said} (+{len(failed) - shown} more)"


def _first_failing(result: AgentCaseResult) -> str | None:
    """The trial whose failures a case of several trials shows (its failedChecks are that trial's); None for a case
    of one, or of no failing trial."""
    trial = next((t.trial for t in result.trial_results if not t.passed), None)
    return trial if result.trials > 1 else None


def _aggregate_line(aggregate: Aggregate) -> str:
    """`10/14 pass (71.4%), pass^1 73.8%`: the gating cases' figures, and beside them the informational ones'."""
    checked = aggregate.total_cases - aggregate.unchecked_cases
    if not checked:
        return "none checked" if aggregate.total_cases else "none"
    hat = "".join(f", pass^{k} {percent(v)}" for k, v in aggregate.pass_hat_k.items())
    return f"{aggregate.passed_cases}/{checked} pass ({percent(aggregate.pass_rate)}){hat}"


def _failed_cell(result: AgentCaseResult) -> str:
    """A failed case's failed checks as its row shows them, after the trial they are of."""
    trial = _first_failing(result)
    return (f"{trial}: " if trial else "") + _failures(result.failed_checks, _SHOWN_CHECKS)


class AgentKind:
    name = "agent"
    options: type[BaseModel] | None = AgentOptions

    def _load(self, suite: SuiteInput) -> list[LoadedCase]:
        return load_cases(suite.cases, suite.cases_label, _options(suite).rules)

    def evaluate(self, suite: SuiteInput) -> AgentReport:
        unread: list[str] = []  # filled by the walk that lists the case files
        report = self._evaluate(suite, unread)
        said = unread_warning(unread)
        return report.model_copy(update={"warnings": said + report.warnings}) if said else report

    def _evaluate(self, suite: SuiteInput, unread: list[str]) -> AgentReport:
        read: list[RawCase] | None = None  # the case files, when read already
        if suite.workers > 1 and can_fork() and suite.fixtures.is_dir():
            # None: a file has a problem, said below in its place; a suite of many files: its files, unread
            units = read_cases(suite.cases, suite.cases_label, parallel.MIN_CASES, unread)
            if units is not None and len(units) >= parallel.MIN_CASES:
                report = parallel.evaluate_in_workers(suite, _options(suite), units)
                if report is not None:
                    return report  # else a case has a problem: judged below, where every problem is said
            elif units is not None:  # a small suite: all of it read, and decoded here unless a case has a problem
                faults: list[str] = []
                decoded = decode_located([unit for unit in units if not isinstance(unit, CaseFile)], faults)
                read = None if faults else [item for item in decoded if item is not None]
        problems: list[str] = []
        cases = iter_cases(suite.cases, suite.cases_label, _options(suite).rules, problems, read, unread)
        if not suite.fixtures.is_dir():
            list(cases)  # every case problem is still reported, with the missing folder
            raise CaseFileError(
                *problems,
                f"{suite.fixtures_label}: fixtures folder not found, so no case could be judged; fix the suite's "
                "`fixtures` path (it is relative to the config file)",
            )
        judged = tracked(cases, suite.progress)  # through the command line's progress bar, when it shows one
        report = evaluate_cases(judged, suite.fixtures, _options(suite), suite.max_fixture_bytes, suite.governance,
                                suite.name, suite.run)  # fmt: skip
        if problems:  # found while the cases streamed past: the suite's input is unusable all the same
            raise CaseFileError(*problems)
        return report

    def validate(self, suite: SuiteInput) -> list[str]:
        """The warnings of the suite's cases; with problems, CaseFileError carries the usable cases' warnings."""
        problems: list[str] = []
        unread: list[str] = []
        valid: list[LoadedCase] = []  # a case with a problem in this suite is warned of too: all said at once
        rules = _options(suite).rules
        loaded_cases = list(iter_cases(suite.cases, suite.cases_label, rules, problems, None, unread, valid))
        warnings = unread_warning(unread) + self._warnings(suite, valid)
        if problems:
            raise CaseFileError(*problems, warnings=warnings)
        if not loaded_cases:  # the same words as the trace kind's (kinds never import each other)
            warnings.append(f"{suite.cases_label}: holds no cases, so the suite evaluates nothing; add cases to it")
        return warnings

    def _warnings(self, suite: SuiteInput, loaded_cases: list[LoadedCase]) -> list[str]:
        options = _options(suite)
        warnings = [f"suite {suite.name}: {warning}" for warning in options.warnings]
        today = today_of(suite.run)
        rules = options.rules
        unaudited = options.trace_format not in ("auto", "diagbot")  # only diagbot's own trace records audits
        lines = FieldLines()
        for loaded in loaded_cases:
            case, said = loaded.case, []
            if not case.negative_behavior and case.risk_level not in ("P0", "P1"):  # for those an error says it
                said.append("no negative_behavior; say what must not happen (001 12.9.3)")
            if not is_checked(case):
                said.append(
                    "nothing in it is machine-checked, so it can never fail; add expected_tool_sequence, "
                    "rule_checks, success_criteria objects or another check"
                )
            if case.reviews:
                latest = case.reviews[-1]
                if (latest.review_result == "approved") != (case.metadata.review_status == "approved") or (
                    latest.review_result != "approved" and latest.review_result != case.metadata.review_status
                ):
                    said.append(
                        f"metadata.review_status is {case.metadata.review_status} but the latest review "
                        f"({latest.reviewer}) is {latest.review_result}"
                    )
            slips = governance_slips(case, suite.governance)
            held_back = not_gating_because(case, suite.governance, today)
            if held_back and case.risk_level in ("P0", "P1") and not slips:  # a slip says why already
                said.append(
                    f"a {case.risk_level} case that does not gate ({held_back}): its failures are shown but never fail "
                    "the check; if it should, see its metadata, and gate.roles and gate.usage-rights in diagbot.yml"
                )
            else:
                lapsed = case.metadata.retain_until
                if lapsed is not None and lapsed < today:
                    said.append(f"usage rights lapsed on {lapsed.isoformat()} (retain_until); it does not gate")
            said += slips
            said += ignored_checks(case, rules, options.folded_rules) + authoring_slips(case)
            said += [
                f"side_effect_policy.audit_requirement: the suite's runs are {options.trace_format}, which records "
                f"no audit, so every call of {one_line(policy.tool, 100)} fails audit_missing; record the "
                "runs in diagbot's own trace format (a tool_call step's audit), or drop the requirement"
                for policy in case.policies
                if unaudited and policy.audit_fields
            ]
            for policy in case.policies:
                for field in ("allowed_state_transition", "forbidden_state_transition"):
                    for label in policy.transitions(getattr(policy, field)):
                        if not isinstance(label, Transition):
                            said.append(
                                f"side_effect_policy.{field}: {label!r} is a label for people, not "
                                "machine-checked; write {key, from, to} to check it"
                            )
            for warning in said:
                line = lines.of(warning, loaded.file, loaded.index, loaded.line)
                warnings.append(f"{loaded.label}:{line}: case {case.case_id}: {warning}")
        if loaded_cases and all(not_gating_because(c.case, suite.governance, today) for c in loaded_cases):
            warnings.append(
                f"{suite.cases_label}: no case gates (each is informational: see the cases' metadata, and gate.roles "
                "and gate.usage-rights in diagbot.yml), so no failure of this suite can fail the check"
            )
        return warnings

    def warnings(self, report: AgentReport) -> list[str]:
        return list(report.warnings)

    def blocking(self, report: AgentReport) -> list[Blocked]:
        return [Blocked(r.case_id, f"{r.case_id} (P0) failed: {_failures(r.failed_checks, 1) or 'trials failed'}")
                for r in report.results if _blocking(r)]  # fmt: skip

    def gating(self, report: AgentReport) -> int:
        return report.gating_cases

    def outcomes(self, report: AgentReport) -> dict[str, CaseOutcome]:
        return {
            r.case_id: CaseOutcome(r.status == "passed", r.status == "failed", r.gating, r.risk_level)
            for r in report.results
        }

    def parse(self, data: dict[str, Any], where: str) -> AgentReport:
        check_version(data, where, AGENT_SCHEMA_VERSION, "agent report")
        stored = stored_model(AgentReport, data, where, "agent report")
        unique_case_ids((r.case_id for r in stored.results), where)
        # aggregates remade: never trusted as stored; but counts that are not its results' say results were cut out
        remade = build_report(
            stored.results, stored.suite, stored.run, stored.warnings, stored.options, stored.schema_version
        )
        counted = {name: (getattr(stored, field), getattr(remade, field)) for name, field in _COUNTS}
        if any(given != found for given, found in counted.values()):
            raise ReportFormatError(
                f"{where}: {', '.join(f'{name} {given}' for name, (given, _) in counted.items())} disagree with its "
                f"results ({', '.join(f'{found}' for _, found in counted.values())}); a report's counts are its "
                "results' (this one was not written by diagbot, or was edited)"
            )
        return remade

    def diff(self, baseline: AgentReport, current: AgentReport, thresholds: Thresholds) -> DiffReport:
        return diff_agent(baseline, current, thresholds)

    def view(self, name: str, report: AgentReport, diff: DiffReport | None) -> SuiteView:
        changed = {i.case_id for i in diff.items} if diff else set()
        ordered = sorted(
            report.results,
            key=lambda r: (
                not _blocking(r),
                r.status != "failed",
                r.risk_level if r.status == "failed" else "",
                not r.gating,
                r.case_id not in changed,
            ),  # failing P0 cases first, gating or not
        )
        rows = [
            [
                _ICONS[r.status],
                md(r.case_id, 80),
                md(r.risk_level, 10),
                f"{r.trials_passed}/{r.trials}",
                "yes" if r.gating else md(f"no: {r.not_gating_because}", 120),
                md(_failed_cell(r)) if r.status == "failed" else _UNCHECKED_CELL if r.status == "unchecked" else "",
            ]
            for r in ordered
        ]  # fmt: skip
        blocked = self.blocking(report)  # one note each, capped as warnings are: the table below lists them all
        notes = [md(f"Blocking: {b.line}", 400) for b in blocked[:MAX_NOTES]]
        if len(blocked) > MAX_NOTES:
            notes.append(f"... and {len(blocked) - MAX_NOTES:,} more failing gating P0 cases in the report")
        notes += _gone(diff, report) + _options_changed(diff, report)
        gating, informational = _aggregate_line(report.gating), _aggregate_line(report.informational)
        notes.append(md(f"Gating cases: {gating}; informational: {informational}; unchecked: {report.unchecked_cases}"))
        if diff is not None and diff.common_cases is not None:
            notes.append(md(f"{diff.common_cases} of {report.total_cases} cases were comparable with the baseline "
                            "(present on both sides with the same case_version, and machine-checked on both or "
                            "neither)", 300))  # fmt: skip
        notes += warning_notes(report.warnings)
        return SuiteView(
            name=name, kind=self.name, passed=report.passed_cases, total=report.total_cases,
            # the rate that gates, of the gating cases (with a baseline, of the comparable ones: same id and
            # case_version, as the diff's); the notes give the informational cases' beside it
            pass_rate=diff.current_pass_rate if diff else report.pass_rate,
            rate_label="gating pass rate of the comparable cases" if diff else "gating pass rate",
            no_rate=_no_rate(report, diff),
            baseline_pass_rate=diff.baseline_pass_rate if diff else None, diff=diff,
            result_headers=["", "Case", "Risk", "Trials", "Gating", "Failed checks"], result_rows=rows,
            failing=sum(1 for r in report.results if r.status == "failed"), notes=tuple(notes),
            blocking=sum(1 for r in report.results if _blocking(r)), common_rates=True,
        )  # fmt: skip

    def annotations(self, suite: SuiteInput, report: AgentReport) -> list[Annotation]:
        try:
            where = {c.case.case_id: c for c in self._load(suite)}
        except CaseFileError:
            return []
        found = []
        failing = [r for r in report.results if r.status == "failed" and r.case_id in where]
        for r in sorted(failing, key=lambda r: (not _blocking(r), not r.gating)):  # blocking P0 first, then gating
            loaded = where[r.case_id]
            title = one_line(f"{suite.name}: {r.case_id} ({r.risk_level}{'' if r.gating else ', informational'})", 250)
            first = _first_failing(r)
            message = f"{r.trials_passed}/{r.trials} trials passed" + (
                f"; {one_line(first, 200)} failed" if first else ""
            )
            message += "".join(f"\n{one_line(c, 5_000)}" for c in r.failed_checks[:10])  # one line each, escaped
            level = "failure" if r.gating else "warning"
            found.append(Annotation(loaded.file, loaded.line, title, message, level, _blocking(r)))
        return found

    def console(self, report: AgentReport, limit: int = 20) -> str:
        g = report.gating
        lines = [
            f"{report.suite or 'suite'}: {report.passed_cases}/{report.total_cases} cases passed"
            + (f", {report.unchecked_cases} unchecked" if report.unchecked_cases else "")
            + f"; gating {g.passed_cases}/{g.total_cases - g.unchecked_cases} ({percent(report.pass_rate)})"
        ]
        failing = [r for r in report.results if r.status == "failed"]
        failing.sort(key=lambda r: not _blocking(r))
        for r in failing[:limit]:
            mark = " [blocking P0]" if _blocking(r) else "" if r.gating else " [informational]"
            first = one_line(r.failed_checks[0], 500) if r.failed_checks else ""
            lines.append(f"  FAIL {one_line(r.case_id, 200)}{mark} {r.trials_passed}/{r.trials}: {first}")
        if len(failing) > limit:
            lines.append(f"  ... and {len(failing) - limit} more failing cases (see the report)")
        return "\n".join(lines)
