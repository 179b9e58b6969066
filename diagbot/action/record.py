"""`<report-dir>/pr.json`: what a pull request run leaves for the fork relay. One model, for writer and reader.

The relay reads it from an untrusted artifact, so every field is typed, bounded and strict; the writer builds the
same model, so what it writes is what the relay accepts.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from diagbot.io.config import MAX_SUITES
from diagbot.render.markdown import MAX_AGE_DAYS

MARKER = r"^<!-- diagbot:([A-Za-z0-9._+-]{1,100}) -->$"
SUITE_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # io.config.SuiteConfig's pattern
SHA = r"^[0-9a-f]{40}$"
MAX_PROBLEMS = 50
MAX_WARNINGS = 20
SHORT = 500
PR_RECORD = "pr.json"  # the record's name in the report folder

SuiteName = Annotated[str, Field(pattern=SUITE_NAME)]
Short = Annotated[str, Field(max_length=SHORT)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True, populate_by_name=True)


def short(text: str, limit: int = SHORT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class RecordBaseline(_Strict):
    """Baseline provenance; rendered escaped, and its run link rebuilt from `runId`, never taken from here."""

    source: Literal["artifact", "file", "none"]
    label: str | None = Field(default=None, max_length=200)
    branch: str | None = Field(default=None, max_length=255)
    sha: str | None = Field(default=None, pattern=SHA)
    run_id: int | None = Field(default=None, alias="runId", gt=0)
    age_days: float | None = Field(default=None, alias="ageDays", ge=0, le=MAX_AGE_DAYS)  # as the comment shows it
    exact: bool | None = None
    missing_reason: str | None = Field(default=None, alias="missingReason", max_length=SHORT)
    warnings: list[Short] = Field(default_factory=list, max_length=MAX_WARNINGS)


class RecordGate(_Strict):
    """The gate settings the evaluating run decided with, so the relay's check run decides the same way."""

    fail_on_regression: bool = Field(default=True, alias="failOnRegression")
    require_baseline: bool = Field(default=False, alias="requireBaseline")


class RecordCounts(_Strict):
    """A suite's baseline as the evaluating run saw it, so the relay's gate knows a suite emptied or demoted."""

    cases: int = Field(ge=0)
    gating: int = Field(ge=0)


class PrRecord(_Strict):
    """Unknown keys are ignored, known ones typed; the optional ones let an older diagbot's artifact relay."""

    repository: str | None = Field(default=None, pattern=r"^[^/\s]+/[^/\s]+$", max_length=200)
    number: int = Field(gt=0)
    head_sha: str = Field(alias="headSha", pattern=SHA)
    base_ref: str | None = Field(default=None, alias="baseRef", max_length=255)
    base_sha: str | None = Field(default=None, alias="baseSha", pattern=SHA)
    marker: str = Field(pattern=MARKER)
    suites: list[SuiteName] | None = Field(default=None, max_length=MAX_SUITES)
    baseline: RecordBaseline | None = None
    problems: list[Short] = Field(default_factory=list, max_length=MAX_PROBLEMS)
    gate: RecordGate | None = None
    baselines: dict[SuiteName, RecordCounts] | None = Field(default=None, max_length=MAX_SUITES)

    @property
    def marker_id(self) -> str:
        match = re.match(MARKER, self.marker)
        return match[1] if match else ""

    def dump(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2, exclude_none=True) + "\n"
