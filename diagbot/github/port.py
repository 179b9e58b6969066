"""What diagbot asks of GitHub, as one narrow protocol over plain values, and the errors it may answer with.

The action talks to GitHub only through a `GitHubPort`; `diagbot.github.client.PyGithubPort` is the real one.
Every GitHub or network failure arrives as one of the exceptions below, saying what happened and what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from diagbot.core.errors import DiagbotError


class GitHubError(DiagbotError):
    """A GitHub request failed in a way the run cannot work around."""


class GitHubUnavailable(GitHubError):
    """GitHub answered 5xx, timed out, or kept rate-limiting us beyond the allowed wait."""


class CannotComment(GitHubError):
    """The token may not comment on the pull request (fork PR, or no `pull-requests: write`)."""


class CannotCheck(GitHubError):
    """The token may not create check runs (fork PR, or no `checks: write`)."""


class ArtifactGone(GitHubError):
    """The artifact expired or was deleted between listing and download (410)."""


class UnsafeArtifact(GitHubError):
    """The artifact archive is too big, malformed, or holds paths that would escape its folder."""


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_sha: str
    head_ref: str
    base_ref: str
    base_sha: str
    state: str
    head_repo: str | None = None  # owner/name of the head's repository (a fork's); None once the fork is deleted


@dataclass(frozen=True)
class ArtifactCandidate:
    """A baseline artifact worth trying, with where it came from."""

    id: int
    name: str
    archive_download_url: str
    created_at: datetime
    size: int
    run_id: int
    head_branch: str
    head_sha: str
    exact: bool  # made from the base commit itself
    workflow: str = ""  # the path of the workflow whose run uploaded it
    run_created_at: datetime | None = None  # when its run was created: a rerun keeps it, so pushes keep their order
    run_conclusion: str | None = None  # how its run ended (a push run that could not judge a suite fails)

    @property
    def run_time(self) -> datetime:
        """When its run was created (its upload's time where that is not known): the order pushes came in."""
        return self.run_created_at or self.created_at


@dataclass(frozen=True)
class BaselineSearch:
    """The candidates found, newest first (the base commit's own first), and how far the search looked."""

    candidates: list[ArtifactCandidate]
    runs_scanned: int
    stopped_because: str | None = None  # why the search ended before running out of runs, if it did
    other_workflows: bool = False  # the candidates are other workflows' runs': the asked-for one's hold none
    passed_over: int = 0  # runs of other workflows not searched (the asked-for workflow was given explicitly)
    unsuccessful: int = 0  # workflow_dispatch runs passed over because they did not succeed


class GitHubPort(Protocol):
    """The GitHub calls the action makes, for one repository."""

    repository: str

    def pull(self, number: int) -> PullInfo: ...

    def find_baselines(
        self, name: str, base_branch: str, base_sha: str | None, workflow: str | None = None, only: bool = False
    ) -> BaselineSearch: ...

    def download(self, candidate: ArtifactCandidate) -> bytes: ...

    def upsert_comment(
        self,
        number: int,
        marker: str,
        body: str,
        mode: str,
        author: str,
        head_sha: str | None = None,
        warnings: list[str] | None = None,
    ) -> str | None:
        """Post or update the one comment carrying `marker` (see `diagbot.github.client.upsert_comment`): with
        `head_sha` it records that commit on a hidden second line, and leaves a comment of another commit alone
        when the pull request's head is no longer `head_sha`. Returns its URL, None if nothing was written; what
        went wrong without failing the post (a stale run, an undeletable duplicate) is added to `warnings`."""
        ...

    def create_check_run(
        self,
        head_sha: str,
        name: str,
        conclusion: str,
        title: str,
        summary: str,
        annotations: list[dict[str, Any]],
        external_id: str | None = None,
    ) -> str:
        """A completed check run on `head_sha`; `external_id` tells it from other runs' check runs of that name,
        so a create whose effect is unknown can be looked for before it is made again."""
        ...
