"""Baseline reports: one report file for one suite, or a report folder's `reports/<suite>.json`, read capped."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from diagbot.core.errors import DiagbotError, ReportFormatError
from diagbot.core.fs import FileProblem, file_kind, read_bounded, read_text_bounded
from diagbot.core.report import MAX_CONTAINERS, SuiteReport
from diagbot.core.values import count_containers
from diagbot.kinds.registry import parse_any_report

REPORT_BYTES = 64 * 1024 * 1024
MAX_REPORTS = 1000
_SUITE_FILE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.json")


@dataclass
class Baselines:
    """What a baseline location holds: the readable reports, every problem met, and every suite it names."""

    reports: dict[str, SuiteReport] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)  # where each report was read, for messages about it
    filed: set[str] = field(default_factory=set)  # the suites whose report is a folder's reports/<suite>.json


def read_report_file(path: Path, cap: int = REPORT_BYTES) -> SuiteReport:
    """One report file: a regular file of at most `cap` bytes, UTF-8, of a kind diagbot knows."""
    try:
        text = read_text_bounded(path, cap)
    except FileProblem as problem:
        hint = _TOO_BIG if problem.too_big else ""
        raise ReportFormatError(f"{path}: the report {problem.message}{hint}") from None
    return _report(text, str(path))


_TOO_BIG = (
    " (a suite of about 65,000 passing agent cases, or fewer with long failure lists, writes one that size): split "
    "the suite so that each suite's report stays under it"
)


def _report(text: str, where: str) -> SuiteReport:
    if not text or text.isspace():  # stops at the first other character: a big report is not copied
        raise ReportFormatError(f"{where}: the report is empty; give a report a diagbot run or eval wrote")
    return parse_any_report(text, where)


def find_baselines(location: Path | None, suites: list[str]) -> Baselines:
    """Baseline reports by suite name from `location`: a report folder (only its `reports/` is read, so no other
    file can pose as a report) or, for a single suite, one report file."""
    found = Baselines()
    if location is None:
        return found
    try:
        location.exists()  # False for a path that is not there; raises for one that cannot be looked at
    except OSError as exc:  # a part over 255 bytes, a folder that may not be entered
        found.problems.append(f"{location}: cannot be looked at ({exc.strerror or exc}); give a report folder")
        return found
    if location.is_file():
        if len(suites) != 1:
            found.problems.append(f"{location}: a single baseline file fits a single suite; give a report folder")
            return found
        found.names = list(suites)
        _read(found, suites[0], location)
        return found
    reports = location / "reports"
    if not location.is_dir():
        try:
            mode = location.stat().st_mode
        except (OSError, ValueError):
            found.problems.append(
                f"{location}: baseline not found (expected a report file or a report folder; a run with "
                f"--out {location} writes one)"
            )
        else:  # a device, a FIFO, a socket: never a report, and reading one could block or never end
            found.problems.append(
                f"{location}: the baseline is not a regular file or a folder (it is {file_kind(mode)}); give a report "
                "file or the report folder a diagbot run wrote"
            )
        return found
    if reports.is_symlink() or not reports.is_dir():
        found.problems.append(f"{location}: holds no reports/ folder; give the report folder a diagbot run wrote")
        return found
    try:
        listed = sorted(entry.name for entry in reports.iterdir() if _SUITE_FILE.fullmatch(entry.name))
    except OSError as exc:
        found.problems.append(f"{reports}: cannot be listed ({exc.strerror or exc})")
        return found
    if len(listed) > MAX_REPORTS:
        found.problems.append(f"{reports}: {len(listed)} reports, more than the {MAX_REPORTS} diagbot reads")
        return found
    named = [name.removesuffix(".json") for name in listed]
    found.names = [n for n in named if n in suites or _file_reads_as_report(reports / f"{n}.json")]
    for name in suites:
        path = reports / f"{name}.json"
        if name in found.names and path.is_symlink():  # as reports/ itself: a run writes files, never links
            found.problems.append(
                f"baseline of suite {name}: {path}: the report is a symbolic link, which diagbot does not follow; "
                "give the report folder a diagbot run wrote"
            )
        elif name in found.names:
            _read(found, name, path)
            found.filed.add(name)
    return found


def baselines_in_archive(files: dict[str, bytes], suites: list[str]) -> Baselines:
    """The same, for a report folder unpacked in memory (a baseline artifact, paths relative to its root): only
    `reports/<suite>.json` count, and a lone `report.json` (an upload without a folder) fits a single suite."""
    found = Baselines()
    if list(files) == ["report.json"] and len(suites) == 1:
        found.names = list(suites)
        _parse(found, suites[0], files["report.json"], "report.json")
        return found
    if list(files) == ["report.json"]:  # with more suites, the one the report names (a suite added since is new)
        _parse(found, "report.json", files["report.json"], "report.json", label="baseline")
        report = found.reports.pop("report.json", None)
        source = found.sources.pop("report.json", "report.json")
        if report is not None and report.suite in suites:
            found.names, found.reports[report.suite], found.sources[report.suite] = [report.suite], report, source
        return found
    listed = sorted(p for p in files if p.startswith("reports/") and _SUITE_FILE.fullmatch(p.removeprefix("reports/")))
    if len(listed) > MAX_REPORTS:
        found.problems.append(f"reports/: {len(listed)} reports, more than the {MAX_REPORTS} diagbot reads")
        return found
    named = [p.removeprefix("reports/").removesuffix(".json") for p in listed]
    # another tool's JSON there (which the action's clearing keeps) is no suite that vanished from the config
    found.names = [n for n in named if n in suites or reads_as_report(files[f"reports/{n}.json"])]
    for name in suites:
        if name in found.names:
            _parse(found, name, files[f"reports/{name}.json"], f"reports/{name}.json")
            found.filed.add(name)
    return found


def _file_reads_as_report(path: Path) -> bool:
    try:
        return reads_as_report(read_bounded(path, REPORT_BYTES))
    except FileProblem as problem:
        return problem.too_big or path.is_symlink()  # a link is refused as a report, never taken for none


def reads_as_report(data: bytes) -> bool:
    """Whether a file of a report folder would be read as a report (a JSON object with a schemaVersion, however its
    keys are ordered or escaped): one over the size cap is refused as one, so it counts. The action clears such
    files before a run and keeps the rest, which are then no suite of the baseline."""
    if len(data) > REPORT_BYTES:
        return True
    if not data.lstrip(b" \t\r\n\xef\xbb\xbf").startswith(b"{"):  # a report is an object: 64 MiB of numbers is none
        return False
    if data.count(b"[") + data.count(b"{") > MAX_CONTAINERS and count_containers(data) > MAX_CONTAINERS:
        return True  # refused as a report too, and never decoded here: a few KB zipped could take gigabytes
    try:
        decoded = json.loads(data)
    except (ValueError, RecursionError):
        return False
    return isinstance(decoded, dict) and "schemaVersion" in decoded


def _read(found: Baselines, name: str, path: Path) -> None:
    try:
        found.reports[name] = read_report_file(path)
        found.sources[name] = str(path)
    except DiagbotError as exc:
        found.problems += [f"baseline of suite {name}: {problem}" for problem in exc.problems]


def _parse(found: Baselines, name: str, data: bytes, where: str, label: str | None = None) -> None:
    """A report of a baseline artifact, which diagbot's workflow uploaded: a version 0 report (the Java evaluator's,
    which a local `--baseline` may give) is none, and would skip the checks of a stored result that version 1 has."""
    try:
        if len(data) > REPORT_BYTES:
            raise ReportFormatError(
                f"{where}: the report is {len(data):,} bytes, over the {REPORT_BYTES:,}-byte limit{_TOO_BIG}"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ReportFormatError(f"{where}: the report is not UTF-8 text") from None
        report = _report(text, where)
        if getattr(report, "schema_version", 1) < 1:
            raise ReportFormatError(
                f"{where}: has no schemaVersion, which every report diagbot writes has, so the artifact was not "
                "uploaded by diagbot's workflow (or was edited); rerun the base branch's workflow for a new baseline"
            )
        found.reports[name] = report
        found.sources[name] = where
    except DiagbotError as exc:
        said = label or f"baseline of suite {name}"  # `label`: a report not yet known to be a suite's
        found.problems += [f"{said}: {problem}" for problem in exc.problems]
