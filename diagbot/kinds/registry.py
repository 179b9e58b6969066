"""The suite kinds diagbot knows, by name: adding a kind is one package and one line in `KINDS`."""

from __future__ import annotations

import json
from typing import Any

from diagbot.core import values
from diagbot.core.diff import CaseOutcome, DiffReport, Thresholds, moved_inputs
from diagbot.core.errors import ReportFormatError
from diagbot.core.report import SuiteReport, check_version, load_json_object
from diagbot.kinds.agent import AgentKind
from diagbot.kinds.agent.report import AGENT_SCHEMA_VERSION
from diagbot.kinds.base import Annotation, Blocked, HasWarnings, Kind, SuiteInput
from diagbot.kinds.trace import TraceKind
from diagbot.kinds.trace.report import SCHEMA_VERSION
from diagbot.kinds.workspace import WorkspaceKind
from diagbot.kinds.workspace.judge import WORKSPACE_SCHEMA_VERSION
from diagbot.render.markdown import SuiteView

KINDS: dict[str, Kind[Any]] = {kind.name: kind for kind in (TraceKind(), WorkspaceKind(), AgentKind())}
DEFAULT_KIND = "trace"
_VERSIONS = {"trace": SCHEMA_VERSION, "workspace": WORKSPACE_SCHEMA_VERSION, "agent": AGENT_SCHEMA_VERSION}
_NEWEST = max(_VERSIONS.values())  # of any kind's reports


def kind_of(report: SuiteReport) -> Kind[Any]:
    return KINDS[report.kind]


def parse_any_report(text: str, where: str) -> SuiteReport:
    """A report of any kind from its JSON text, decoded once; one without `kind` (the Java evaluator's, version 0) is
    a trace report."""
    data = load_json_object(text, where)
    # only the Java evaluator's report (version 0) has no kind; a future version is said as one, as a kind does
    if "kind" not in data and check_version(data, where, _NEWEST) > 0:
        raise ReportFormatError(
            f"{where}: has a schemaVersion but no kind, which every report diagbot writes has (one of "
            f"{', '.join(KINDS)}), so it was not written by diagbot or was edited; give a report a diagbot run wrote"
        )
    kind = data.get("kind", DEFAULT_KIND)
    if not isinstance(kind, str) or kind not in KINDS:
        raise ReportFormatError(f"{where}: not a diagbot report (kind {json.dumps(kind)[:40]})")
    version = data.get("schemaVersion")
    if isinstance(version, int) and _VERSIONS[kind] < version <= _NEWEST:  # another kind's version: no upgrade helps
        raise ReportFormatError(
            f"{where}: a {kind} report of schemaVersion {version}, which this diagbot writes only for other kinds "
            f"({kind} reports are version {_VERSIONS[kind]}): it was edited (its kind?), or a newer diagbot wrote "
            "it (then upgrade diagbot); give a report a diagbot run wrote"
        )
    report: SuiteReport = KINDS[kind].parse(data, where)
    return report


def diff_reports(
    baseline: SuiteReport, current: SuiteReport, thresholds: Thresholds, where: str = "baseline", filed: bool = False
) -> DiffReport:
    """Diff two reports of the same kind; a kind mismatch is bad input (a baseline from another suite). `filed`:
    the baseline is a report folder's `reports/<suite>.json`, which is that suite's report: one recording another
    suite (a file copied or renamed in the artifact) is refused too, as its cases would all count as new here and
    no regression could show. A report naming no suite (an older one, or `eval`'s) is taken as its file names it."""
    if baseline.kind != current.kind:
        raise ReportFormatError(
            f"{where}: is a {baseline.kind} report but the current suite is {current.kind}; "
            "check which file or artifact the baseline comes from"
        )
    if filed and None not in (baseline.suite, current.suite) and baseline.suite != current.suite:
        raise ReportFormatError(
            f"{where}: is the report of suite {values.one_line(str(baseline.suite), 100)!r}, not of "
            f"{current.suite}, so its cases are not this suite's; give the report folder a diagbot run wrote (or "
            "rerun the base branch's workflow for a new baseline)"
        )
    diff = kind_of(current).diff(baseline, current, thresholds)
    return moved_inputs(diff, _inputs(baseline), _inputs(current))


def _inputs(report: SuiteReport) -> dict[str, str | None]:
    """The suite's cases and fixtures as the report's run records them (None where an older report does not)."""
    run = report.run
    return {"cases": None, "fixtures": None} if run is None else {"cases": run.cases, "fixtures": run.fixtures}


def view(name: str, report: SuiteReport, diff: DiffReport | None) -> SuiteView:
    return kind_of(report).view(name, report, diff)


def evaluate(kind: str, suite: SuiteInput) -> SuiteReport:
    report: SuiteReport = KINDS[kind].evaluate(suite)
    return report


def annotate(suite: SuiteInput, report: SuiteReport) -> list[Annotation]:
    return kind_of(report).annotations(suite, report)


def console(report: SuiteReport) -> str:
    return str(kind_of(report).console(report))


def blocking(report: SuiteReport) -> list[Blocked]:
    return list(kind_of(report).blocking(report))


def gating(report: SuiteReport) -> int:
    return int(kind_of(report).gating(report))


def outcomes(report: SuiteReport) -> dict[str, CaseOutcome]:
    return dict(kind_of(report).outcomes(report))


def warnings(report: SuiteReport) -> list[str]:
    """What the report says about its suite's input as a whole; [] for a kind that says nothing of the kind."""
    kind = kind_of(report)
    return list(kind.warnings(report)) if isinstance(kind, HasWarnings) else []


def validate(kind: str, suite: SuiteInput) -> list[str]:
    return list(KINDS[kind].validate(suite))
