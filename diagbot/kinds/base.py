"""The protocol every suite kind implements, and the plain values that cross it.

A kind owns its case format, its report model and its diff rules. The layers above it (config, pipeline,
action, CLI) only ever call these methods, looked up by the kind's name in `diagbot.kinds.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from diagbot.core.diff import CaseOutcome, DiffReport, Thresholds
from diagbot.core.report import RunInfo, SuiteReport
from diagbot.render.markdown import SuiteView

R = TypeVar("R", bound=SuiteReport)
R_contra = TypeVar("R_contra", bound=SuiteReport, contravariant=True)
T = TypeVar("T")

Progress = Callable[[int, int | None], None]
"""Told after each case of a suite is judged: how many are done, and how many there are (None when the kind
streams its cases and cannot know yet). The command line's progress bar is the one user."""


class Blocked(NamedTuple):
    """A failure that fails the gate whatever the baseline says: the case it is in, and the line that says it."""

    case_id: str
    line: str


@dataclass(frozen=True)
class Governance:
    """Which cases may gate, for kinds whose cases carry governance (the agent kind): `gate.roles` and
    `gate.usage-rights` in diagbot.yml."""

    roles: tuple[str, ...] = ("golden", "regression", "red_team")
    usage_rights: tuple[str, ...] = ("approved_for_evaluation",)


@dataclass(frozen=True)
class SuiteInput:
    """One suite to evaluate, its paths already resolved; the labels are how messages name those paths."""

    name: str
    cases: Path
    fixtures: Path
    cases_label: str
    fixtures_label: str
    max_fixture_bytes: int
    run: RunInfo | None = None
    options: Any = None  # the kind's own diagbot.yml keys, validated by its `options` model (None: it has none)
    governance: Governance = Governance()
    progress: Progress | None = field(default=None, compare=False, repr=False)
    workers: int = 1  # processes a kind may judge the cases in (`kinds.workers`); the shell says how many


def tracked(cases: Iterable[T], progress: Progress | None, total: int | None = None) -> Iterable[T]:
    """The cases, telling `progress` after each one is judged; the cases themselves when nobody asks."""
    return cases if progress is None else _report_each(iter(cases), progress, total)


def tracked_list(cases: list[T], progress: Progress | None) -> list[T]:
    """`tracked` for a kind whose evaluation takes a list: the same list, reporting as it is iterated."""
    return cases if progress is None else _TrackedList(cases, progress)


def _report_each(cases: Iterator[T], progress: Progress, total: int | None) -> Iterator[T]:
    for done, case in enumerate(cases, 1):
        yield case  # the caller judges it before asking for the next one
        progress(done, total)


class _TrackedList(list[T]):
    def __init__(self, cases: list[T], progress: Progress) -> None:
        super().__init__(cases)
        self._progress = progress

    def __iter__(self) -> Iterator[T]:
        return _report_each(super().__iter__(), self._progress, len(self))


@dataclass(frozen=True)
class Annotation:
    """A failing case, pinned to the file (and line) a reviewer would open to fix it."""

    path: Path
    line: int
    title: str
    message: str
    level: str = "failure"  # GitHub's annotation_level: "warning" for a case that does not gate
    blocking: bool = False  # fails the check on its own (an agent suite's gating P0): sent before any other


class Kind(Protocol[R]):
    """What a suite kind does: load and evaluate its cases, read its reports back, diff, present, annotate."""

    name: str
    options: type[BaseModel] | None  # the model of the kind's own keys in a suite of diagbot.yml, if any

    def evaluate(self, suite: SuiteInput) -> R:
        """Load the cases and judge every run; bad cases raise CaseFileError, bad runs fail only their case."""
        ...

    def validate(self, suite: SuiteInput) -> list[str]:
        """Load the cases without running anything: their problems raise CaseFileError, the warnings return."""
        ...

    def blocking(self, report: R) -> list[Blocked]:
        """Failures that fail the gate whatever the baseline says (the agent kind's gating P0 cases)."""
        ...

    def gating(self, report: R) -> int:
        """How many of the report's cases gate: all of them for a kind whose cases carry no governance."""
        ...

    def outcomes(self, report: R) -> dict[str, CaseOutcome]:
        """Each case's outcome by its id, for the rules that look across suites (`core.diff.moved`)."""
        ...

    def parse(self, data: dict[str, Any], where: str) -> R:
        """A report of this kind from its decoded JSON object (any schema version it still reads), or
        ReportFormatError. The registry decodes the text once, with the caps of `core.report.load_json_object`."""
        ...

    def diff(self, baseline: R, current: R, thresholds: Thresholds) -> DiffReport:
        """The structured comparison; aggregates are compared over the cases both sides have."""
        ...

    def view(self, name: str, report: R, diff: DiffReport | None) -> SuiteView:
        """The suite's rows for the comment, every cell already escaped."""
        ...

    def annotations(self, suite: SuiteInput, report: R) -> list[Annotation]:
        """One annotation per failing case."""
        ...

    def console(self, report: R) -> str:
        """A one-screen summary for the terminal."""
        ...


@runtime_checkable
class HasWarnings(Protocol[R_contra]):
    """A kind whose reports carry warnings about the suite's input as a whole (the trace kind: fields no fixture
    held, near-miss keys). Never part of a verdict; a kind without this method has none to give."""

    def warnings(self, report: R_contra) -> list[str]:
        """The report's warnings, in the order the kind found them."""
        ...
