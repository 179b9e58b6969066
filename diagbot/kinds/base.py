"""The protocol every suite kind implements, and the plain values that cross it.

A kind owns its case format, its report model and its diff rules. The layers above it (config, pipeline,
action, CLI) only ever call these methods, looked up by the kind's name in `diagbot.kinds.registry`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from diagbot.core.diff import DiffReport, Thresholds
from diagbot.core.report import RunInfo, SuiteReport
from diagbot.render.markdown import SuiteView

R = TypeVar("R", bound=SuiteReport)


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


@dataclass(frozen=True)
class Annotation:
    """A failing case, pinned to the file (and line) a reviewer would open to fix it."""

    path: Path
    line: int
    title: str
    message: str


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

    def blocking(self, report: R) -> list[str]:
        """Failures that fail the gate whatever the baseline says (the agent kind's gating P0 cases)."""
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
