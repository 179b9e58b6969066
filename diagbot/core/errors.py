"""diagbot's own failure modes. Each carries a message a user can act on; none is shown as a traceback."""

from __future__ import annotations


class DiagbotError(Exception):
    """Bad input or an unusable environment: the run stops with exit code 2 and these problems listed."""

    exit_code = 2

    def __init__(self, *problems: str) -> None:
        super().__init__("\n".join(problems))
        self.problems = list(problems)


class CaseFileError(DiagbotError):
    """The case file (or a suite's cases) cannot be used: every problem found is listed."""

    def __init__(self, *problems: str, warnings: list[str] | None = None) -> None:
        super().__init__(*problems)
        self.warnings = warnings or []  # of the suite's usable cases, found beside the problems (validate prints both)


class ReportFormatError(DiagbotError):
    """A report or diff file is not one diagbot can read."""


class ConfigError(DiagbotError):
    """diagbot.yml or the action's inputs are invalid."""


class OutputError(DiagbotError):
    """An output file cannot be written where it was asked for (a folder that is a file, a link, read-only...)."""
