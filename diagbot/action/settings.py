"""The action's settings: every `INPUT_*` and `GITHUB_*` variable diagbot reads, validated once.

The runner sets every declared input, to "" when the workflow gives none, so an empty value means "use the
default". Input names keep their hyphens (`INPUT_GITHUB-TOKEN`). Built only by `entrypoint.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from diagbot.core.errors import ConfigError
from diagbot.io.config import given_thresholds


class CommentMode(StrEnum):
    UPDATE = "update"
    NEW = "new"
    OFF = "off"


class RunMode(StrEnum):
    """What the run is for: `auto` decides by event; `pull-request` / `push` force a role; `comment` relays a fork
    PR's downloaded report folder to the PR (see `diagbot.action.relay`)."""

    AUTO = "auto"
    PULL_REQUEST = "pull-request"
    PUSH = "push"
    COMMENT = "comment"


class SettingsError(ConfigError):
    """An action input or runner variable is missing or malformed."""


class Settings(BaseModel):
    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="ignore")

    github_token: SecretStr = Field(alias="INPUT_GITHUB-TOKEN", min_length=1)
    config: str | None = Field(default=None, alias="INPUT_CONFIG")
    baseline_artifact: str = Field(default="diagbot-report", alias="INPUT_BASELINE-ARTIFACT", min_length=1)
    baseline_workflow: str | None = Field(
        default=None, alias="INPUT_BASELINE-WORKFLOW", pattern=r"^[^\s@]+\.ya?ml$", max_length=300
    )
    baseline_max_age_days: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, alias="INPUT_BASELINE-MAX-AGE-DAYS"
    )
    require_baseline: bool | None = Field(default=None, alias="INPUT_REQUIRE-BASELINE")
    fail_on_regression: bool | None = Field(default=None, alias="INPUT_FAIL-ON-REGRESSION")
    comment: CommentMode = Field(default=CommentMode.UPDATE, alias="INPUT_COMMENT")
    comment_author: str = Field(default="github-actions[bot]", alias="INPUT_COMMENT-AUTHOR", min_length=1)
    pr_number: int | None = Field(default=None, gt=0, alias="INPUT_PR-NUMBER")
    mode: RunMode = Field(default=RunMode.AUTO, alias="INPUT_MODE")
    report_dir: str = Field(default="diagbot-report", alias="INPUT_REPORT-DIR", min_length=1)
    max_wait_seconds: float = Field(  # at most a job's longest run (6 hours): more is a typo, never a plan
        default=120.0, ge=0, le=21_600, allow_inf_nan=False, alias="INPUT_MAX-WAIT-SECONDS"
    )
    tool_calls_pct: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="INPUT_TOOL-CALLS-PCT")
    tool_calls_min: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="INPUT_TOOL-CALLS-MIN")
    duration_pct: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="INPUT_DURATION-PCT")
    duration_min_ms: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="INPUT_DURATION-MIN-MS")
    score_points: float | None = Field(default=None, ge=0, allow_inf_nan=False, alias="INPUT_SCORE-POINTS")

    api_url: str = Field(default="https://api.github.com", alias="GITHUB_API_URL")
    server_url: str = Field(default="https://github.com", alias="GITHUB_SERVER_URL")
    repository: str = Field(alias="GITHUB_REPOSITORY", pattern=r"^[^/\s]+/[^/\s]+$")
    event_name: str = Field(alias="GITHUB_EVENT_NAME", min_length=1)
    event_path: Path | None = Field(default=None, alias="GITHUB_EVENT_PATH")
    sha: str | None = Field(default=None, alias="GITHUB_SHA")
    ref: str | None = Field(default=None, alias="GITHUB_REF")
    run_id: int | None = Field(default=None, alias="GITHUB_RUN_ID")
    workflow_ref: str | None = Field(default=None, alias="GITHUB_WORKFLOW_REF")
    workspace: Path = Field(default=Path("."), alias="GITHUB_WORKSPACE")
    output: Path | None = Field(default=None, alias="GITHUB_OUTPUT")
    step_summary: Path | None = Field(default=None, alias="GITHUB_STEP_SUMMARY")

    @field_validator("github_token")
    @classmethod
    def _one_word(cls, token: SecretStr) -> SecretStr:
        """The runner masks a secret line by line and diagbot masks the whole token: a token holding a line break
        would show its other lines in the log."""
        if any(c.isspace() or not c.isprintable() for c in token.get_secret_value()):
            raise ValueError("the token holds a line break, a space or a control character; pass the token alone")
        if not token.get_secret_value().isascii():  # an HTTP header carries no other: the first request would fail
            raise ValueError("the token holds a character that is not ASCII, which no GitHub token has; pass the token")
        return token

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        """Validate the environment; every bad value is listed with the input to fix."""
        names = {f.alias for f in cls.model_fields.values() if f.alias}
        data: dict[str, Any] = {k: v.strip() for k, v in env.items() if k in names and v.strip() != ""}
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise SettingsError(*[_problem(error) for error in exc.errors()]) from None

    @property
    def run_url(self) -> str | None:
        return self.run_link(self.run_id)

    def run_link(self, run_id: int | None) -> str | None:
        return None if run_id is None else f"{self.server_url}/{self.repository}/actions/runs/{run_id}"

    @property
    def baseline_workflow_path(self) -> str | None:
        """The workflow whose runs hold the baseline, as a path in the repository: the baseline-workflow input (a
        file name under .github/workflows/, or a path), else this run's own workflow (from GITHUB_WORKFLOW_REF,
        `owner/repo/.github/workflows/x.yml@ref`); None when neither is known, and then any workflow's runs count."""
        if self.baseline_workflow is not None:
            given = self.baseline_workflow
            return given if "/" in given else f".github/workflows/{given}"
        ref = (self.workflow_ref or "").partition("@")[0]
        prefix = f"{self.repository}/"
        return ref[len(prefix) :] if ref.lower().startswith(prefix.lower()) and len(ref) > len(prefix) else None

    @property
    def thresholds(self) -> dict[str, float]:
        """The threshold inputs that were given, keyed like diagbot.yml's `thresholds:`."""
        return given_thresholds(self)


def _problem(error: Any) -> str:
    name = str(error["loc"][0]) if error["loc"] else "settings"
    if name.startswith("INPUT_"):
        where = f"input '{name[len('INPUT_') :].lower()}' ({name})"
        fix = "set it in the workflow step's `with:`"
    else:
        where = f"runner variable {name}"
        fix = "run diagbot as a GitHub Action step, or export it"
    if error["type"] == "missing":
        return f"{where} is required but empty; {fix}"
    got = "" if "TOKEN" in name else f" (got {str(error.get('input'))[:60]!r})"
    return f"{where}: {error['msg']}{got}; {fix}"
