"""The one module that talks to GitHub: small functions over a PyGithub client and plain values.

Every GitHub or network failure leaves this module as one of our own exceptions, with what happened, the likely
cause and what to do. Writes (POST/PATCH/DELETE) are never repeated after a 5xx, so a flaky API cannot
duplicate a comment; reads are retried with backoff and jitter, honouring Retry-After and rate-limit resets.
"""

from __future__ import annotations

import io
import json
import stat
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, GithubRetry
from github.Artifact import Artifact
from github.Issue import Issue
from github.Repository import Repository
from github.Requester import Requester
from urllib3.exceptions import ProtocolError, ReadTimeoutError
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from diagbot.core.errors import DiagbotError
from diagbot.github.port import (
    ArtifactCandidate,
    ArtifactGone,
    BaselineSearch,
    CannotCheck,
    CannotComment,
    GitHubError,
    GitHubUnavailable,
    PullInfo,
    UnsafeArtifact,
)

WRITES = frozenset({"POST", "PATCH", "PUT", "DELETE"})
MAX_ANNOTATIONS = 50
MAX_ARCHIVE_BYTES = 50 * 1024 * 1024
MAX_UNPACKED_BYTES = 200 * 1024 * 1024
MAX_MEMBERS = 10_000
DEFAULT_AUTHOR = "github-actions[bot]"  # the login behind the workflow's GITHUB_TOKEN
ZIP_MAGIC = b"PK\x03\x04"
EMPTY_ZIP = b"PK\x05\x06"

T = TypeVar("T")


class DiagbotRetry(GithubRetry):
    """GithubRetry, but a write is retried only on a rate-limit answer (403/429), when GitHub did not act on it."""

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if method.upper() in WRITES and status_code not in (403, 429):
            return False
        return bool(super().is_retry(method, status_code, has_retry_after))

    def increment(  # type: ignore[override]
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> Retry:
        # A write whose connection broke after sending may have been applied: never send it again.
        if (
            error is not None
            and (method or "").upper() in WRITES
            and isinstance(error, ReadTimeoutError | ProtocolError)
        ):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)  # type: ignore[arg-type]

    def __init__(self, budget: WaitBudget | None = None, **kwargs: Any) -> None:
        self.budget = budget or WaitBudget(120.0)
        super().__init__(**kwargs)

    def new(self, **kw: Any) -> DiagbotRetry:
        # urllib3 makes a new Retry per attempt; the budget is shared so the cap is on the run's total wait.
        return super().new(budget=self.budget, **kw)

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        wait = self.get_retry_after(response) if response is not None and self.respect_retry_after_header else None
        self.budget.spend(self.get_backoff_time() if wait is None else wait)
        super().sleep(response)


@dataclass
class WaitBudget:
    """How long one run may spend waiting on GitHub (retries and rate limits together): max-wait-seconds."""

    remaining: float

    def spend(self, seconds: float) -> None:
        if seconds > self.remaining:
            raise GitHubUnavailable(
                f"GitHub asked us to wait {seconds:.0f}s more, past the {self.remaining:.0f}s left of max-wait-seconds "
                "(rate limit or repeated failures); rerun the job later or raise max-wait-seconds"
            )
        self.remaining -= seconds


def make_retry(max_wait_seconds: float) -> DiagbotRetry:
    """Up to 5 retries of reads with exponential backoff (1 s, 2 s, 4 s ... capped) plus jitter; all the waiting
    of one run, Retry-After and rate-limit resets included, is capped at `max_wait_seconds`."""
    return DiagbotRetry(
        budget=WaitBudget(max_wait_seconds),
        total=5,
        backoff_factor=1.0,
        backoff_jitter=1.0,
        backoff_max=min(30.0, max(max_wait_seconds, 0.0)),
        max_rate_limit_wait=max_wait_seconds,
        secondary_rate_wait=min(60.0, max_wait_seconds),
        status_forcelist=[*range(500, 600), 429],
        allowed_methods=frozenset({"GET", "HEAD", "POST", "PATCH", "DELETE"}),
        respect_retry_after_header=True,
        raise_on_status=False,
    )


def make_client(api_url: str, token: str, max_wait_seconds: float = 120.0, timeout: int = 30) -> Github:
    """The PyGithub client diagbot uses: lazy objects, 100 items a page, no throttling sleeps, safe retries."""
    return Github(
        base_url=api_url.rstrip("/"),
        auth=Auth.Token(token),
        lazy=True,
        per_page=100,
        timeout=timeout,
        retry=make_retry(max_wait_seconds),
        seconds_between_requests=0,
        seconds_between_writes=0,
    )


def _explain(exc: Exception, doing: str) -> GitHubError:
    """Our exception for a PyGithub or network failure while `doing` something."""
    if isinstance(exc, DiagbotError) and isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, GithubException):
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        detail = f"GitHub answered {exc.status}" + (f": {message}" if message else "")
        if exc.status == 401:
            return GitHubError(f"{doing}: {detail}; the token is invalid or expired; pass a valid github-token")
        if exc.status in (403, 404):
            return GitHubError(
                f"{doing}: {detail}; the token lacks a permission (actions: read, pull-requests: write, "
                "checks: write) or the resource does not exist; grant it in the workflow's `permissions:`"
            )
        if exc.status == 429 or exc.status >= 500:
            return GitHubUnavailable(f"{doing}: {detail}; GitHub is unavailable or rate-limiting; rerun the job later")
        return GitHubError(f"{doing}: {detail}")
    if isinstance(exc, requests.RequestException | OSError):
        return GitHubUnavailable(f"{doing}: network error ({type(exc).__name__}); check connectivity and rerun")
    raise exc


@contextmanager
def _mapped(doing: str, forbidden: GitHubError | None = None) -> Iterator[None]:
    """Map failures to our exceptions; a 403 becomes `forbidden` when given (a permission the bot can live without)."""
    try:
        yield
    except GithubException as exc:
        if exc.status == 403 and forbidden is not None:
            raise forbidden from None
        raise _explain(exc, doing) from None
    except (requests.RequestException, OSError) as exc:
        raise _explain(exc, doing) from None


# --- baseline artifacts ------------------------------------------------------------------------------------


def find_baseline_artifact(
    repo: Repository,
    name: str,
    base_branch: str,
    base_sha: str | None,
    max_candidates: int = 10,
    max_scanned: int = 300,
) -> list[ArtifactCandidate]:
    """Unexpired `name` artifacts from this repository's own runs on `base_branch`: exact base sha first, then newest.

    A fork's run can have the same branch name; it is never trusted (head repository must be this repository).
    """
    found: list[ArtifactCandidate] = []
    with _mapped(f"listing the '{name}' artifacts of {repo.full_name}"):
        for scanned, artifact in enumerate(repo.get_artifacts(name=name)):
            if scanned >= max_scanned:
                break
            candidate = _candidate(artifact, base_branch, base_sha)
            if candidate is None:
                continue
            found.append(candidate)
            if len(found) >= max_candidates:  # keep fallbacks even after an exact match: it may be unusable
                break
    found.sort(key=lambda c: (not c.exact, -c.created_at.timestamp(), -c.id))
    return found[:max_candidates]


def _candidate(artifact: Artifact, base_branch: str, base_sha: str | None) -> ArtifactCandidate | None:
    run = artifact.workflow_run
    if artifact.expired or run is None:
        return None
    if run.head_repository_id != run.repository_id or run.head_branch != base_branch:
        return None
    return ArtifactCandidate(
        id=artifact.id,
        name=artifact.name,
        archive_download_url=artifact.archive_download_url,
        created_at=artifact.created_at,
        size=artifact.size_in_bytes,
        run_id=run.id,
        head_branch=run.head_branch,
        head_sha=run.head_sha,
        exact=base_sha is not None and run.head_sha == base_sha,
    )


def download_artifact(requester: Requester, candidate: ArtifactCandidate, max_bytes: int = MAX_ARCHIVE_BYTES) -> bytes:
    """The archive's bytes: ask GitHub for the signed URL (302), then fetch it without our token."""
    doing = f"downloading artifact {candidate.id} ('{candidate.name}')"
    if candidate.size > max_bytes:
        raise UnsafeArtifact(
            f"{doing}: {candidate.size} bytes is over the {max_bytes}-byte cap; upload a smaller report"
        )
    with _mapped(doing):
        status, headers, body = requester.requestJson("GET", candidate.archive_download_url)
    if status == 410:
        raise ArtifactGone(f"{doing}: GitHub answered 410, the artifact has expired; trying an older one")
    if status != 302 or "location" not in headers:
        raise _explain(GithubException(status, _json_or_none(body), headers), doing)
    session = requests.Session()
    session.trust_env = False  # no .netrc credentials for the blob store
    try:
        with session.get(headers["location"], stream=True, timeout=60, allow_redirects=True) as response:
            if response.status_code != 200:
                raise GitHubUnavailable(
                    f"{doing}: the blob store answered {response.status_code}; "
                    "rerun the job (signed URLs expire in 1 minute)"
                )
            data = bytearray()
            for chunk in response.iter_content(64 * 1024):
                data += chunk
                if len(data) > max_bytes:
                    raise UnsafeArtifact(
                        f"{doing}: the archive is over the {max_bytes}-byte cap; upload a smaller report"
                    )
            return bytes(data)
    except requests.RequestException as exc:
        raise _explain(exc, doing) from None
    finally:
        session.close()


def _json_or_none(body: str) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def unpack_artifact(data: bytes, where: str, max_total: int = MAX_UNPACKED_BYTES) -> dict[str, bytes]:
    """Files of an artifact by relative path. A bare JSON body (upload-artifact `archive: false`) is one file."""
    if not data.startswith((ZIP_MAGIC, EMPTY_ZIP)):
        if data.lstrip()[:1] in (b"{", b"["):
            return {"report.json": data}
        raise UnsafeArtifact(f"{where}: neither a zip archive nor a JSON report; upload the diagbot report folder")
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnsafeArtifact(f"{where}: not a readable zip ({exc}); re-upload the artifact") from None
    if len(members) > MAX_MEMBERS:
        raise UnsafeArtifact(f"{where}: {len(members)} files, over the cap of {MAX_MEMBERS}")
    files: dict[str, bytes] = {}
    total = 0
    for member in members:
        path = _safe_member_path(member, where)
        if path is None:
            continue
        total += member.file_size
        if total > max_total:
            raise UnsafeArtifact(f"{where}: unpacks to over {max_total} bytes (a zip bomb?); refusing to unpack")
        try:
            with archive.open(member) as stream:
                content = stream.read(member.file_size + 1)
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
            raise UnsafeArtifact(f"{where}: cannot read {member.filename} ({exc})") from None
        if len(content) > member.file_size:
            raise UnsafeArtifact(f"{where}: {member.filename} is larger than its header says; refusing to unpack")
        files[path] = content
    return files


def _safe_member_path(member: zipfile.ZipInfo, where: str) -> str | None:
    name = member.filename.replace("\\", "/")
    if member.is_dir():
        return None
    mode = member.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise UnsafeArtifact(f"{where}: {member.filename} is a symbolic link; refusing to unpack")
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith("/") or (len(name) > 1 and name[1] == ":") or ".." in path.parts:
        raise UnsafeArtifact(f"{where}: {member.filename} would be written outside the report folder; refusing")
    return str(path)


# --- comments -------------------------------------------------------------------------------------------------


def upsert_comment(issue: Issue, marker: str, body: str, mode: str, author: str = DEFAULT_AUTHOR) -> str | None:
    """Post or update the one comment carrying `marker`; return its URL (None when mode is `off`).

    `update` scans every page of comments, edits the newest of ours and deletes older duplicates; `new` always
    posts. A 403 on writing becomes CannotComment, which the bot reports as a warning.
    """
    if mode == "off":
        return None
    doing = f"commenting on #{issue.number}"
    denied = CannotComment(
        f"{doing}: GitHub answered 403; the token may not comment here (a fork's pull request, or the "
        "workflow lacks `permissions: pull-requests: write`); the comment is in the job summary instead"
    )
    with _mapped(doing, denied):
        ours = []
        if mode == "update":
            ours = [c for c in issue.get_comments() if marker in (c.body or "") and c.user.login == author]
        if not ours:
            return str(issue.create_comment(body).html_url)
        ours.sort(key=lambda c: (c.created_at, c.id))
        newest = ours[-1]
        newest.edit(body)
        for older in ours[:-1]:
            older.delete()
        return str(newest.html_url)


# --- check runs ---------------------------------------------------------------------------------------------------


def create_check_run(
    repo: Repository,
    head_sha: str,
    name: str,
    conclusion: str,
    title: str,
    summary: str,
    annotations: list[dict[str, Any]],
) -> str:
    """A completed check run on `head_sha`; annotations go 50 per request (create, then edits). Returns its URL."""
    doing = f"creating check run '{name}'"
    chunks = [annotations[i : i + MAX_ANNOTATIONS] for i in range(0, len(annotations), MAX_ANNOTATIONS)] or [[]]
    title = title[:255]
    summary = summary[:65535]

    def output(chunk: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"title": title, "summary": summary}
        if chunk:
            out["annotations"] = chunk
        return out

    denied = CannotCheck(
        f"{doing}: GitHub answered 403; the token may not create check runs (a fork's pull request, or "
        "the workflow lacks `permissions: checks: write`); the exit code still gates the job"
    )
    with _mapped(doing, denied):
        check = repo.create_check_run(name=name, head_sha=head_sha, conclusion=conclusion, output=output(chunks[0]))
        for chunk in chunks[1:]:
            check.edit(output=output(chunk))
        return str(check.html_url)


def call(doing: str, fn: Callable[[], T]) -> T:
    """Run one PyGithub call with our error mapping (for reads the bot makes directly, e.g. a pull request)."""
    with _mapped(doing):
        return fn()


class PyGithubPort:
    """The GitHub port over a PyGithub client, for one repository. Objects are lazy: no request until needed."""

    def __init__(self, github: Github, repository: str) -> None:
        self.github = github
        self.repository = repository
        self._repo = github.get_repo(repository)

    def pull(self, number: int) -> PullInfo:
        doing = f"reading pull request #{number}"
        with _mapped(doing):
            pull = self._repo.get_pull(number)
            return PullInfo(number, pull.head.sha, pull.head.ref, pull.base.ref, pull.base.sha, pull.state)

    def find_baselines(self, name: str, base_branch: str, base_sha: str | None) -> BaselineSearch:
        found = find_baseline_artifact(self._repo, name, base_branch, base_sha)
        return BaselineSearch(found, runs_scanned=0)

    def download(self, candidate: ArtifactCandidate) -> bytes:
        return download_artifact(self.github.requester, candidate)

    def upsert_comment(self, number: int, marker: str, body: str, mode: str, author: str) -> str | None:
        if mode == "off":
            return None
        issue = call(f"reading issue #{number}", lambda: self._repo.get_issue(number))
        return upsert_comment(issue, marker, body, mode, author)

    def create_check_run(
        self, head_sha: str, name: str, conclusion: str, title: str, summary: str, annotations: list[dict[str, Any]]
    ) -> str:
        return create_check_run(self._repo, head_sha, name, conclusion, title, summary, annotations)
