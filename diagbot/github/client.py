"""The one module that talks to GitHub: small functions over a PyGithub client and plain values.

Every GitHub or network failure leaves this module as one of our own exceptions, with what happened, the likely
cause and what to do. Writes (POST/PATCH/DELETE) are never blindly repeated after a 5xx or a broken connection,
so a flaky API cannot duplicate a comment: what they would have made is read back, and the write is made once
more only if it is absent. Reads are retried with backoff and jitter, honouring Retry-After and rate-limit resets.
"""

from __future__ import annotations

import heapq
import io
import itertools
import json
import re
import secrets
import signal
import stat
import threading
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException, GithubRetry, RateLimitExceededException, UnknownObjectException
from github.Artifact import Artifact
from github.CheckRun import CheckRun
from github.Issue import Issue
from github.IssueComment import IssueComment
from github.PaginatedList import PaginatedList
from github.Repository import Repository
from github.Requester import Requester
from github.WorkflowRun import WorkflowRun
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import ProtocolError, ReadTimeoutError
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from diagbot.core.errors import DiagbotError
from diagbot.core.values import cut_utf8, one_line
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
MAX_WAIT_SECONDS = 120.0  # max-wait-seconds' default: all of a run's waits on rate limits and retries
MAX_COMMENT_CHARS = 65_536  # GitHub rejects longer issue-comment bodies
HEAD_LINE = "<!-- diagbot-head: {sha} -->"  # the second line of our comment: the commit its results are for
_HEAD_RE = re.compile(r"<!-- diagbot-head: ([0-9a-fA-F]{7,64}) -->")
TRUNCATED = "\n\n*(comment truncated)*\n"
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


class WaitExceeded(GitHubUnavailable):
    """Raised from inside urllib3's retry, so it says what was being done only once `_mapped` names it."""


@dataclass
class WaitBudget:
    """How long one run may spend waiting on GitHub (retries and rate limits together): max-wait-seconds."""

    remaining: float

    def spend(self, seconds: float) -> None:
        if seconds > self.remaining:
            raise WaitExceeded(
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


def make_client(api_url: str, token: str, max_wait_seconds: float = MAX_WAIT_SECONDS, timeout: int = 30) -> Github:
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


def _rate_limited(exc: GithubException) -> bool:
    """A 403 or 429 that is GitHub's rate limit (PyGithub's class, or GitHub's own words), not a permission."""
    message = exc.data.get("message") if isinstance(exc.data, dict) else None
    said = isinstance(message, str) and "rate limit" in message.lower()
    return isinstance(exc, RateLimitExceededException) or (exc.status in (403, 429) and said)


def _explain(exc: Exception, doing: str) -> GitHubError:
    """Our exception for a PyGithub or network failure while `doing` something."""
    if isinstance(exc, WaitExceeded):
        return GitHubUnavailable(*(f"{doing}: {problem}" for problem in exc.problems))
    if isinstance(exc, DiagbotError) and isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, GithubException):
        message = exc.data.get("message") if isinstance(exc.data, dict) else None
        detail = f"GitHub answered {exc.status}" + (f": {message}" if message else "")
        if _rate_limited(exc):
            return GitHubUnavailable(
                f"{doing}: {detail}; the token's rate limit is spent and its reset is past max-wait-seconds; rerun "
                "the job after the reset, or raise max-wait-seconds"
            )
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
    if isinstance(exc, requests.RequestException | OSError | Urllib3Error):
        return GitHubUnavailable(f"{doing}: network error ({type(exc).__name__}); check connectivity and rerun")
    raise exc


@contextmanager
def _mapped(doing: str, forbidden: GitHubError | None = None) -> Iterator[None]:
    """Map failures to our exceptions; a 403 becomes `forbidden` when given (a permission the bot can live without)."""
    try:
        yield
    except GithubException as exc:
        if exc.status == 403 and forbidden is not None and not _rate_limited(exc):
            raise forbidden from None
        raise _explain(exc, doing) from None
    except (requests.RequestException, OSError, WaitExceeded) as exc:
        raise _explain(exc, doing) from None


# --- baseline artifacts ------------------------------------------------------------------------------------


BASELINE_EVENTS = ("push", "workflow_dispatch")  # the base branch's own runs; a pull request's run never is one
MAX_CANDIDATES = 10
MAX_RUNS_SCANNED = 200  # two pages of each runs list; each run costs one more request for its artifacts
MAX_SEARCH_SECONDS = 30.0


def search_baselines(
    repo: Repository,
    name: str,
    base_branch: str,
    base_sha: str | None,
    *,
    workflow: str | None = None,
    only: bool = False,
    max_candidates: int = MAX_CANDIDATES,
    max_runs: int = MAX_RUNS_SCANNED,
    max_seconds: float = MAX_SEARCH_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> BaselineSearch:
    """Unexpired `name` artifacts of this repository's own push and workflow_dispatch runs of `base_branch` (a
    workflow_dispatch run only when it succeeded, counted in `unsuccessful` when not): the base commit's runs first,
    then the branch's runs newest first.

    Only the branch's runs are listed, never the repository-wide artifact list (where every pull request run's
    upload crowds the baselines out). The search looks at no more than `max_runs` runs and `max_seconds` of
    `clock`, and ends once it has `max_candidates`. A fork's run can have the same branch name; it is never trusted
    (its head repository must be this repository). With `workflow` (a workflow file's path in the repository),
    that workflow's runs come first: another workflow's newer `diagbot-report` is not this one's baseline. Other
    workflows' candidates are kept in case it has none (pushes may run another workflow than pull requests),
    unless `only`, when their runs are passed over and counted.
    """
    found: list[ArtifactCandidate] = []
    elsewhere: list[ArtifactCandidate] = []
    passed_over = unsuccessful = 0
    scanned = 0
    stopped: str | None = None
    started = clock()
    with _mapped(f"listing the runs of {base_branch} for their '{name}' artifacts"):
        runs = _baseline_runs(repo, base_branch, base_sha)
        while True:
            if scanned >= max_runs:
                stopped = f"the {max_runs}-run limit was reached, older runs were not searched"
                break
            if clock() - started >= max_seconds:
                stopped = f"the {max_seconds:g} s time limit was reached, older runs were not searched"
                break
            run = next(runs, None)
            if run is None:
                break
            scanned += 1
            if run.event == "workflow_dispatch" and run.conclusion != "success":
                # a dispatched evaluation of a pull request that stopped before writing pr.json (its report folder a
                # link the pull request committed, say) would upload the pull request's files as a run of the branch
                unsuccessful += 1
                continue
            if workflow is None or run.path == workflow:
                found.extend(_run_candidates(run, name, base_branch, base_sha))
            elif only:
                passed_over += 1
            elif not found and len(elsewhere) < max_candidates:  # listed only while this workflow's runs gave none
                elsewhere.extend(_run_candidates(run, name, base_branch, base_sha))
            if len(found) >= max_candidates:  # fallbacks are kept even after an exact match: it may be unusable
                stopped = f"{len(found)} candidates found"
                break
    other = not found and bool(elsewhere)
    chosen = elsewhere if other else found
    # the newest run first, as the runs were pushed (an older commit's run rerun later uploads a newer artifact, yet
    # is no newer baseline than the run of a commit pushed after it); within a run, its newest upload
    chosen.sort(key=lambda c: (not c.exact, -c.run_time.timestamp(), -c.created_at.timestamp(), -c.id))
    return BaselineSearch(
        chosen[:max_candidates], scanned, stopped, other_workflows=other, passed_over=passed_over,
        unsuccessful=unsuccessful,
    )  # fmt: skip


def _baseline_runs(repo: Repository, base_branch: str, base_sha: str | None) -> Iterator[WorkflowRun]:
    """Each run once, lazily (a page at a time): the base commit's runs of the branch, then its push and
    workflow_dispatch runs, the two lists merged newest first."""
    exact: Iterable[WorkflowRun] = _list_runs(repo, branch=base_branch, head_sha=base_sha) if base_sha else ()
    lists = [_list_runs(repo, branch=base_branch, event=event) for event in BASELINE_EVENTS]
    newest = heapq.merge(*lists, key=lambda run: (run.created_at, run.id), reverse=True)
    seen: set[int] = set()
    for run in itertools.chain(exact, newest):
        if run.id not in seen:
            seen.add(run.id)
            yield run


def _list_runs(repo: Repository, **query: str) -> PaginatedList[WorkflowRun]:
    """`GET /repos/{owner}/{repo}/actions/runs?...`, newest first: Repository.get_workflow_runs, whose `branch`
    is typed as a Branch object although a name is what the endpoint takes."""
    url = f"{repo.url}/actions/runs"
    return PaginatedList(WorkflowRun, repo.requester, url, dict(query), list_item="workflow_runs")


def _run_candidates(run: WorkflowRun, name: str, base_branch: str, base_sha: str | None) -> list[ArtifactCandidate]:
    """The unexpired `name` artifacts of `run`, if it is a baseline run of this repository's own `base_branch`."""
    head = run.head_repository
    if run.event not in BASELINE_EVENTS or run.head_branch != base_branch or head is None:
        return []
    if head.id != run.repository.id:  # a fork's run
        return []
    # PyGithub's WorkflowRun.get_artifacts() has no `name` filter; the endpoint has.
    listed = PaginatedList(Artifact, run.requester, run.artifacts_url, {"name": name}, list_item="artifacts")
    return [
        ArtifactCandidate(
            id=artifact.id,
            name=artifact.name,
            archive_download_url=artifact.archive_download_url,
            created_at=artifact.created_at,
            size=artifact.size_in_bytes,
            run_id=run.id,
            head_branch=run.head_branch,
            head_sha=run.head_sha,
            exact=base_sha is not None and run.head_sha == base_sha,
            workflow=run.path,
            run_created_at=run.created_at,
            run_conclusion=run.conclusion,
        )
        for artifact in listed
        if artifact.name == name and not artifact.expired
    ]


BLOB_ATTEMPTS = 3  # the blob store is asked this often, a new signed URL each time, when it does not answer
BLOB_SECONDS = 120.0  # how long one download may take: a store that trickles the bytes must not hold the job
BLOB_READ_SECONDS = 60.0  # the longest wait for the store to connect or send the next piece


def download_artifact(requester: Requester, candidate: ArtifactCandidate, max_bytes: int = MAX_ARCHIVE_BYTES) -> bytes:
    """The archive's bytes: ask GitHub for the signed URL (302), then fetch it without our token. A blob store that
    answers 429 or 5xx, or not at all, is asked again (after 1 s, then 2 s): one hiccup on the newest baseline
    would otherwise fail a pull request's gate. All the attempts together take at most BLOB_SECONDS from the blob
    store's first request (GitHub's own answers wait as every API call does): a store that sends a little and then
    stalls is not waited for three times over."""
    deadline: list[float] = []  # set at the first request to the blob store
    for attempt in range(1, BLOB_ATTEMPTS + 1):
        try:
            return _download_once(requester, candidate, max_bytes, deadline)
        except _BlobUnavailable as exc:
            pause = 2 ** (attempt - 1)
            if attempt == BLOB_ATTEMPTS or (deadline and time.monotonic() + pause >= deadline[0]):
                said = str(exc).replace(_TIMES, f" {attempt} time{'' if attempt == 1 else 's'}")
                raise GitHubUnavailable(said) from None
            time.sleep(pause)
    raise AssertionError("unreachable")  # pragma: no cover


_TIMES = " {times}"  # in a blob store's answer, replaced by how often it was asked


class _BlobUnavailable(Exception):
    """The blob store did not hand over the archive, in a way a retry may mend."""


def _download_once(requester: Requester, candidate: ArtifactCandidate, max_bytes: int, deadline: list[float]) -> bytes:
    doing = f"downloading artifact {candidate.id} ('{candidate.name}')"
    if candidate.size > max_bytes:
        raise UnsafeArtifact(
            f"{doing}: {candidate.size} bytes is over the {max_bytes}-byte cap; upload a smaller report"
        )
    with _mapped(doing):
        status, headers, body = requester.requestJson("GET", candidate.archive_download_url)
    if status == 410:
        raise ArtifactGone(f"{doing}: GitHub answered 410, the artifact has expired; trying an older one")
    if status == 404:  # listed a moment ago, with the same token: deleted since
        raise ArtifactGone(
            f"{doing}: GitHub answered 404, the artifact was deleted since it was listed; trying an older one"
        )
    if status != 302 or "location" not in headers:
        raise _explain(GithubException(status, _json_or_none(body), headers), doing)
    session = requests.Session()
    session.trust_env = False  # no .netrc credentials for the blob store
    try:
        if not deadline:
            deadline.append(time.monotonic() + BLOB_SECONDS)
        wait = max(1.0, min(BLOB_READ_SECONDS, deadline[0] - time.monotonic()))  # each wait for it ends by then
        with session.get(headers["location"], stream=True, timeout=wait, allow_redirects=True) as response:
            if response.status_code != 200:
                answered = (
                    f"{doing}: the blob store answered {response.status_code}"
                    + (_TIMES if response.status_code == 429 or response.status_code >= 500 else "")
                    + "; rerun the job (signed URLs expire in 1 minute)"
                )
                if response.status_code == 429 or response.status_code >= 500:
                    raise _BlobUnavailable(answered)
                raise GitHubUnavailable(answered)
            return _body(response, doing, max_bytes, deadline[0])
    except (requests.ConnectionError, requests.Timeout, Urllib3Error) as exc:  # urllib3's: read as they arrive
        raise _BlobUnavailable(str(_explain(exc, doing))) from None  # a broken connection, before or mid-body
    except requests.RequestException as exc:
        raise _explain(exc, doing) from None
    finally:
        session.close()


def _body(response: requests.Response, doing: str, max_bytes: int, deadline: float) -> bytes:
    """The archive's bytes, read as they arrive (`read1`, not a fixed-size read that waits for the whole chunk), so
    that both the cap and the deadline are looked at after every piece the store sends."""
    data = bytearray()
    while piece := response.raw.read1(64 * 1024, decode_content=True):
        data += piece
        if len(data) > max_bytes:
            raise UnsafeArtifact(f"{doing}: the archive is over the {max_bytes}-byte cap; upload a smaller report")
        if time.monotonic() > deadline:
            raise GitHubUnavailable(
                f"{doing}: the blob store sent {len(data):,} bytes in {BLOB_SECONDS:.0f} s and was still sending; "
                "rerun the job"
            )
    return bytes(data)


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
    except MemoryError:  # the runner's, not the archive's: the caps below keep what one archive may take
        raise
    except Exception as exc:  # any fault of hostile bytes (a version zipfile refuses, ...) is one
        raise UnsafeArtifact(f"{where}: not a readable zip ({_fault(exc)}); re-upload the artifact") from None
    if len(members) > MAX_MEMBERS:
        raise UnsafeArtifact(f"{where}: {len(members)} files, over the cap of {MAX_MEMBERS}")
    files: dict[str, bytes] = {}
    total = 0
    for member in members:
        path = _safe_member_path(member, where)
        if path is None:
            continue
        if path in files:  # the same file twice, maybe spelt differently (a//b, or a backslash for a slash)
            raise UnsafeArtifact(f"{where}: holds {member.filename} twice; which one is the report is unknown")
        if member.compress_type not in _READ_METHODS:
            raise UnsafeArtifact(
                f"{where}: {member.filename} is compressed with zip method {member.compress_type}, which "
                "upload-artifact never writes (it stores or deflates); refusing to unpack"
            )
        total += member.file_size
        if total > max_total:
            raise UnsafeArtifact(f"{where}: unpacks to over {max_total} bytes (a zip bomb?); refusing to unpack")
        try:
            with archive.open(member) as stream:
                content = stream.read(member.file_size + 1)
        except MemoryError:
            raise
        except Exception as exc:  # a broken stream, an encrypted member, a bad CRC: unreadable
            raise UnsafeArtifact(f"{where}: cannot read {member.filename} ({_fault(exc)})") from None
        if len(content) > member.file_size:
            raise UnsafeArtifact(f"{where}: {member.filename} is larger than its header says; refusing to unpack")
        files[path] = content
    return files


_READ_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
"""How a member may be compressed: what upload-artifact writes. zipfile inflates bzip2 and LZMA members whole,
whatever size their header claims, so a few kilobytes could fill the runner's memory."""


def _fault(exc: Exception) -> str:
    return one_line(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, 200)


def _safe_member_path(member: zipfile.ZipInfo, where: str) -> str | None:
    name = member.filename.replace("\\", "/")
    if not name:  # zipfile ends a name at its first NUL: one that starts with it is no name at all
        raise UnsafeArtifact(f"{where}: holds a file without a name; refusing to unpack")
    if member.is_dir():
        return None
    mode = member.external_attr >> 16
    if stat.S_ISLNK(mode):
        raise UnsafeArtifact(f"{where}: {member.filename} is a symbolic link; refusing to unpack")
    path = PurePosixPath(name)
    if path.is_absolute() or name.startswith("/") or (len(name) > 1 and name[1] == ":") or ".." in path.parts:
        raise UnsafeArtifact(f"{where}: {member.filename} would be written outside the report folder; refusing")
    return str(path)


# --- writes -------------------------------------------------------------------------------------------------------


def _effect_unknown(exc: Exception) -> bool:
    """Whether a failed write may have been applied all the same: GitHub answered 5xx, or the connection broke or
    timed out once the request was out. A 4xx is a refusal: nothing happened."""
    if isinstance(exc, GithubException):
        return exc.status >= 500
    return isinstance(exc, requests.RequestException | OSError)


def _write_once(write: Callable[[], T], written: Callable[[], T | None]) -> T:
    """`write()`; if it fails with an unknown effect, `written()` reads back what it would have made. Found, that is
    the result; absent, the write is made once more, and never a third time. When the read-back fails too, the
    write's own error stands: nothing is sent that could duplicate what may already be there."""
    try:
        return write()
    except (GithubException, requests.RequestException, OSError) as exc:
        if not _effect_unknown(exc):
            raise
        failure = exc
    try:
        found = written()
    except (GithubException, requests.RequestException, OSError):
        raise failure from None
    return write() if found is None else found


# --- comments -------------------------------------------------------------------------------------------------


def with_head_line(body: str, marker: str, head_sha: str) -> str:
    """`body` with `<!-- diagbot-head: <sha> -->` right after its first line, the marker (which stays first), cut to
    GitHub's comment limit if the line pushed it over. A body whose first line is not the marker is left as it is."""
    first, _, rest = body.partition("\n")
    if marker not in first:
        return body
    text = f"{first}\n{HEAD_LINE.format(sha=head_sha)}\n{rest}"
    if len(text) > MAX_COMMENT_CHARS:
        text = text[: MAX_COMMENT_CHARS - len(TRUNCATED)] + TRUNCATED
    return text


def _marked(body: str, marker: str) -> bool:
    """Whether a comment's first line is the marker: only such a comment is ours (one quoting it is not)."""
    return body.split("\n", 1)[0].strip() == marker


def recorded_head(body: str, marker: str) -> str | None:
    """The head sha a comment records on the line after its marker (None for a comment without one)."""
    lines = body.split("\n", 2)
    match = _HEAD_RE.fullmatch(lines[1].strip()) if len(lines) > 1 and _marked(body, marker) else None
    return match[1].lower() if match else None


def upsert_comment(
    issue: Issue,
    marker: str,
    body: str,
    mode: str,
    author: str = DEFAULT_AUTHOR,
    head_sha: str | None = None,
    warnings: list[str] | None = None,
    current_head: Callable[[], str] | None = None,
) -> str | None:
    """Post or update the one comment carrying `marker`; return its URL (None when mode is `off`, or when the
    comment was left to a newer commit's results).

    `update` scans every page of comments, edits the newest of ours and deletes older duplicates; `new` always
    posts. With `head_sha` the comment records it on a hidden second line, and a comment recording another commit
    is edited only while the pull request's head (`current_head()`, by default read from GitHub) is still
    `head_sha`: a run that a newer push overtook leaves the newer results alone, with a warning. A write that fails
    with an unknown effect (5xx, a broken connection) is read back and made again only if it did not happen.
    A 403 on writing becomes CannotComment, which the bot reports as a warning; an older duplicate that cannot be
    deleted is only a warning (in `warnings`), since the update itself stands.
    """
    if mode == "off":
        return None
    doing = f"commenting on #{issue.number}"
    denied = CannotComment(
        f"{doing}: GitHub answered 403; the token may not comment here (a fork's pull request, or the "
        "workflow lacks `permissions: pull-requests: write`); the comment is in the job summary instead"
    )
    notes = [] if warnings is None else warnings
    text = body if head_sha is None else with_head_line(body, marker, head_sha)

    def ours() -> list[IssueComment]:
        found = [
            c for c in issue.get_comments()
            if _marked(c.body or "", marker) and c.user is not None and c.user.login == author
        ]  # fmt: skip  # a deleted account's comment has no user; another bot's comment quoting the marker is not ours
        return sorted(found, key=lambda c: (c.created_at, c.id))

    seen: list[IssueComment] = []

    def posted() -> IssueComment | None:
        seen[:] = ours()
        if mode == "new":  # earlier runs' comments stay: only one with this very text is this run's
            return next((c for c in reversed(seen) if c.body == text), None)
        return seen[-1] if seen else None

    with _mapped(doing, denied):
        existing = ours() if mode == "update" else []
        if not existing:
            comment = _write_once(lambda: issue.create_comment(text), posted)
            if mode == "update" and not seen:  # another run may have posted while this one did: one comment stays
                seen[:] = ours()
            poster = comment.user.login if comment.user is not None else None
            if mode == "update" and poster is not None and poster != author:
                notes.append(
                    f"{doing}: the comment was posted as {poster}, but comment-author is {author}, so the next run "
                    f"will not find it and will post another; set the comment-author input to {poster}"
                )
            if mode == "new" or (len(seen) <= 1 and comment.body == text):
                return str(comment.html_url)
            if any(c.id == comment.id for c in seen):  # another run posted meanwhile: one of the two stays
                return _one_of_two(issue, comment, seen, marker, head_sha, current_head, doing, notes)
            existing = seen  # the write's effect was unknown and another run's comment is there: update that one
        newest = existing[-1]
        left = (
            "are already posted or on their way, so the comment was left as it is; this run's results are in its job "
            "summary"
        )
        if (
            head_sha is not None
            and recorded_head(newest.body or "", marker) != head_sha.lower()
            and _overtaken(issue, head_sha, current_head, doing, notes, left)
        ):
            return None
        if newest.body != text:
            _write_once(lambda: _edited(newest, text), lambda: _if_body(issue, newest.id, text))
        for older in existing[:-1]:
            _delete_duplicate(issue, older, doing, notes)
        return str(newest.html_url)


def _overtaken(
    issue: Issue, head_sha: str, current_head: Callable[[], str] | None, doing: str, notes: list[str], done: str
) -> bool:
    """Whether the pull request's head (by default read from GitHub) is no longer `head_sha`; if so, a note says a
    newer commit's results `done`."""
    now = _head(issue, current_head)
    if now == head_sha.lower():
        return False
    notes.append(
        f"{doing}: the pull request is now at {now[:12]}, but this run is for {head_sha[:12]}: a newer commit's "
        f"results {done}"
    )
    return True


def _head(issue: Issue, current_head: Callable[[], str] | None) -> str:
    return (current_head or (lambda: issue.as_pull_request().head.sha))().lower()


def _one_of_two(
    issue: Issue,
    mine: IssueComment,
    ours: list[IssueComment],
    marker: str,
    head_sha: str | None,
    current_head: Callable[[], str] | None,
    doing: str,
    notes: list[str],
) -> str | None:
    """This run posted while another did. Every run that lists both keeps the same one, so that one stays however
    the runs interleave: the newest of those recording the commit the pull request is now at, when they record
    different commits, else the newest. The others go."""
    keeper = ours[-1]
    if head_sha is not None and len({recorded_head(c.body or "", marker) for c in ours}) > 1:
        now = _head(issue, current_head)
        keeper = next((c for c in reversed(ours) if recorded_head(c.body or "", marker) == now), keeper)
    for other in ours:
        if other.id != keeper.id:
            _delete_duplicate(issue, other, doing, notes)
    kept = recorded_head(keeper.body or "", marker)
    if keeper.id == mine.id or head_sha is None or kept == head_sha.lower():
        return str(keeper.html_url)  # this run's, or an overlapping run's of the same commit
    notes.append(
        f"{doing}: this run is for {head_sha[:12]}, and a newer commit's results were posted meanwhile "
        f"({(kept or 'another commit')[:12]}), so this run's comment was removed; its results are in its job summary"
    )
    return None


def _edited(comment: IssueComment, text: str) -> IssueComment:
    comment.edit(text)
    return comment


def _if_body(issue: Issue, comment_id: int, text: str) -> IssueComment | None:
    comment = issue.get_comment(comment_id)
    return comment if comment.body == text else None


def _delete_duplicate(issue: Issue, older: IssueComment, doing: str, notes: list[str]) -> None:
    """Delete an older copy of our comment; failing that, a warning: the newest one is already up to date."""

    def deleted() -> IssueComment:
        older.delete()
        return older

    def gone() -> IssueComment | None:
        try:
            issue.get_comment(older.id).body  # noqa: B018 - the lazy object is fetched by reading it
        except UnknownObjectException:
            return older
        return None

    try:
        _write_once(deleted, gone)
    except UnknownObjectException:
        return  # someone deleted it first
    except (GithubException, requests.RequestException, OSError, GitHubError) as exc:
        if isinstance(exc, GithubException) and exc.status == 403:
            reason = "GitHub answered 403; the token may not delete it"
        else:
            reason = "; ".join(_explain(exc, "deleting it").problems)
        notes.append(
            f"{doing}: the comment was updated, but an older duplicate of it (comment {older.id}) could not be "
            f"removed ({reason}); delete it by hand"
        )


# --- check runs ---------------------------------------------------------------------------------------------------


def create_check_run(
    repo: Repository,
    head_sha: str,
    name: str,
    conclusion: str,
    title: str,
    summary: str,
    annotations: list[dict[str, Any]],
    external_id: str | None = None,
) -> str:
    """A completed check run on `head_sha`; annotations go 50 per request (create, then edits). Returns its URL.

    `external_id` (a random one when not given) tells this check run from every other run's: a create that fails
    with an unknown effect is looked for among the commit's check runs of that name and made again only if absent.
    A batch of annotations is likewise sent again only if the check run's annotation count did not grow.
    """
    doing = f"creating check run '{name}'"
    chunks = [annotations[i : i + MAX_ANNOTATIONS] for i in range(0, len(annotations), MAX_ANNOTATIONS)] or [[]]
    title = title[:255]
    summary = cut_utf8(summary, 65_535)  # GitHub counts its bytes, not its characters
    ident = external_id or f"diagbot:{secrets.token_hex(8)}"

    def output(chunk: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"title": title, "summary": summary}
        if chunk:
            out["annotations"] = chunk
        return out

    def create() -> CheckRun:
        return repo.create_check_run(
            name=name, head_sha=head_sha, conclusion=conclusion, output=output(chunks[0]), external_id=ident
        )

    def created() -> CheckRun | None:
        # filter=all: the default, latest, shows only the newest check run of each name
        runs = repo.get_commit(head_sha).get_check_runs(check_name=name, filter="all")
        return next((c for c in runs if c.external_id == ident), None)

    denied = CannotCheck(
        f"{doing}: GitHub answered 403; the token may not create check runs (a fork's pull request, or "
        "the workflow lacks `permissions: checks: write`); the exit code still gates the job"
    )
    with _mapped(doing, denied):
        check = _write_once(create, created)
        count = len(chunks[0])
        for chunk in chunks[1:]:
            count += len(chunk)
            _write_once(_annotate(check, output(chunk)), _counted(repo, check, count))
        return str(check.html_url)


def _annotate(check: CheckRun, output: dict[str, Any]) -> Callable[[], CheckRun]:
    def write() -> CheckRun:
        check.edit(output=output)
        return check

    return write


def _counted(repo: Repository, check: CheckRun, count: int) -> Callable[[], CheckRun | None]:
    def written() -> CheckRun | None:
        return check if repo.get_check_run(check.id).output.annotations_count >= count else None

    return written


EXCHANGE_SECONDS = 180.0
"""What all of a run's GitHub requests may take beyond the waits max-wait-seconds allows: a connection that stalls
or trickles its answer (a byte now and then never lets a read time out) must not hold the job until its timeout."""


class TimeLimit:
    """One deadline over all of a run's GitHub work (`PyGithubPort`), set at its first request. A stalled or
    trickling answer is cut off by a timer signal (SIGALRM interrupts the blocking read); where there is none (not
    the main thread, no SIGALRM), the socket timeouts and the search's own limits are all there is."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.deadline: float | None = None

    @contextmanager
    def held(self, doing: str) -> Iterator[None]:
        """Run the block under what is left of the deadline; past it, GitHubUnavailable says what was being done.
        A timer already set to go off sooner (a test's hang guard) is left alone; a later one is set again after."""
        if self.deadline is None:
            self.deadline = time.monotonic() + self.seconds
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise self._expired(doing)
        if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
            yield
            return
        outer = signal.getitimer(signal.ITIMER_REAL)[0]
        if 0 < outer <= left:
            yield
            return
        started = time.monotonic()

        def expire(signum: int, frame: Any) -> None:
            raise self._expired(doing)

        previous = signal.signal(signal.SIGALRM, expire)
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
            if outer > 0:  # the later timer, less the time spent here (at least a moment: 0 would clear it)
                signal.setitimer(signal.ITIMER_REAL, max(0.001, outer - (time.monotonic() - started)))

    def _expired(self, doing: str) -> GitHubUnavailable:
        return GitHubUnavailable(
            f"{doing}: GitHub's answers took longer than the {self.seconds:.0f} s this run allows for all of its "
            f"GitHub requests (max-wait-seconds plus {EXCHANGE_SECONDS:.0f} s): a connection stalled or sent its "
            "answer slowly; rerun the job later"
        )


def call(doing: str, fn: Callable[[], T]) -> T:
    """Run one PyGithub call with our error mapping (for reads the bot makes directly, e.g. a pull request)."""
    with _mapped(doing):
        return fn()


class PyGithubPort:
    """The GitHub port over a PyGithub client, for one repository. Objects are lazy: no request until needed. All
    of its GitHub work together ends within `seconds` (`TimeLimit`): max-wait-seconds plus EXCHANGE_SECONDS."""

    def __init__(self, github: Github, repository: str, seconds: float = MAX_WAIT_SECONDS + EXCHANGE_SECONDS) -> None:
        self.github = github
        self.repository = repository
        self._repo = github.get_repo(repository)
        self.limit = TimeLimit(seconds)

    def pull(self, number: int) -> PullInfo:
        doing = f"reading pull request #{number}"
        with self.limit.held(doing), _mapped(doing):
            pull = self._repo.get_pull(number)
            head_repo = pull.head.repo.full_name if pull.head.repo is not None else None
            return PullInfo(number, pull.head.sha, pull.head.ref, pull.base.ref, pull.base.sha, pull.state, head_repo)

    def find_baselines(
        self, name: str, base_branch: str, base_sha: str | None, workflow: str | None = None, only: bool = False
    ) -> BaselineSearch:
        with self.limit.held(f"listing the runs of {base_branch} for their '{name}' artifacts"):
            return search_baselines(self._repo, name, base_branch, base_sha, workflow=workflow, only=only)

    def download(self, candidate: ArtifactCandidate) -> bytes:
        with self.limit.held(f"downloading artifact {candidate.id}"):
            return download_artifact(self.github.requester, candidate)

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
        if mode == "off":
            return None
        with self.limit.held(f"commenting on #{number}"):
            issue = call(f"reading issue #{number}", lambda: self._repo.get_issue(number))
            return upsert_comment(
                issue, marker, body, mode, author, head_sha, warnings, current_head=lambda: self.pull(number).head_sha
            )

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
        with self.limit.held(f"creating check run {name!r}"):
            return create_check_run(self._repo, head_sha, name, conclusion, title, summary, annotations, external_id)
