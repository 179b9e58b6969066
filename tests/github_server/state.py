"""Plain records of what the fake GitHub knows.

Tests build these through the ``GitHubTestServer.add_*`` helpers (or edit them in
place, e.g. ``gh.artifacts[aid].expired = True``); the HTTP handlers read and update
them. They hold facts only; the JSON shapes GitHub sends live in ``shapes.py``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def utcnow() -> datetime:
    """Current UTC time at whole seconds, the resolution GitHub timestamps have."""
    return datetime.now(UTC).replace(microsecond=0)


def fake_sha(seed: str) -> str:
    """A 40-hex commit id derived from ``seed``, so test data is repeatable."""
    return hashlib.sha1(seed.encode()).hexdigest()


@dataclass
class Repo:
    """A repository; ``full_name`` is ``owner/name``."""

    full_name: str
    id: int
    default_branch: str = "main"
    private: bool = False
    fork: bool = False
    created_at: datetime = datetime(2020, 1, 1, tzinfo=UTC)

    @property
    def owner(self) -> str:
        return self.full_name.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]


@dataclass
class Pull:
    """A pull request. ``head_repo`` differs from ``repo`` when it comes from a fork."""

    repo: str
    number: int
    id: int
    head_sha: str
    head_ref: str
    head_repo: str
    base_ref: str
    base_sha: str
    state: str = "open"
    title: str = "Test pull request"
    body: str | None = None
    user: str = "octocat"
    merged: bool = False
    created_at: datetime = field(default_factory=utcnow)
    updated_at: datetime = field(default_factory=utcnow)


@dataclass
class Run:
    """A workflow run. ``status`` and ``conclusion`` use GitHub's vocabularies."""

    repo: str
    id: int
    name: str
    head_branch: str | None
    head_sha: str
    event: str
    status: str
    conclusion: str | None
    head_repo: str
    created_at: datetime
    workflow_path: str
    workflow_id: int
    run_number: int
    actor: str = "octocat"
    pull_numbers: list[int] = field(default_factory=list)

    @property
    def workflow_file(self) -> str:
        """The file name, which GitHub also accepts in place of the workflow id."""
        return self.workflow_path.rsplit("/", 1)[-1]


@dataclass
class Artifact:
    """An uploaded artifact; ``data`` is exactly what the blob host serves."""

    repo: str
    id: int
    run_id: int
    name: str
    data: bytes
    expired: bool
    created_at: datetime
    expires_at: datetime
    size: int

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass
class Comment:
    """An issue (or pull request) comment."""

    repo: str
    issue_number: int
    id: int
    body: str
    user: str | None  # None: a deleted account's comment
    created_at: datetime
    updated_at: datetime


@dataclass
class CheckRun:
    """A check run; ``annotations`` accumulate over create and every update, as on GitHub."""

    repo: str
    id: int
    name: str
    head_sha: str
    status: str = "queued"
    conclusion: str | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None
    external_id: str | None = None
    details_url: str | None = None
    output_title: str | None = None
    output_summary: str | None = None
    output_text: str | None = None
    annotations: list[dict[str, Any]] = field(default_factory=list)
    check_suite_id: int = 1


@dataclass
class CommitStatus:
    """A commit status set with ``POST /repos/{o}/{r}/statuses/{sha}``."""

    repo: str
    sha: str
    id: int
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it (API or blob host).

    ``headers`` keys are lower-cased so ``"authorization" in r.headers`` works;
    ``query`` keeps the last value of a repeated parameter; ``json`` is the parsed
    body or None.
    """

    server: str  # "api" or "blob"
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    body: bytes = b""


@dataclass
class Fault:
    """A canned response that replaces the next ``remaining`` matching requests.

    ``apply`` first serves the request as usual (so a write takes effect) and then
    answers with the fault anyway; ``drop`` closes the connection without any
    answer. Either leaves the client not knowing whether its write happened.
    """

    method: str
    path_regex: str
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    remaining: int = 1
    hits: int = 0
    pace: float = 0.0  # with apply: the usual answer, its body sent 1 KiB at a time this many seconds apart
    apply: bool = False
    drop: bool = False
