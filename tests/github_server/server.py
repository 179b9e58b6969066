"""A loopback HTTP test double of the parts of api.github.com that diagbot uses.

Two real HTTP servers run in background threads:

- the API host (``api_url``), which authenticates, validates each request and
  response against GitHub's OpenAPI description, and serves the JSON endpoints;
- a blob host (``blob_url``), standing in for the Azure blob store that artifact
  downloads are redirected to. Like the real store it serves only URLs with a
  valid, unexpired signature and answers 403 to any request carrying an
  ``Authorization`` header, so a client that leaks its token there fails.

Requests are handled one at a time under a lock, so tests may read and change the
state between calls without racing the server.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import itertools
import json
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

from . import shapes
from .endpoints import HANDLERS, Call, HttpError, Reply
from .openapi_check import (
    NotDescribed,
    SpecRequest,
    encode,
    operations,
    request_problems,
    response_problems,
    spec_response,
)
from .state import (
    Artifact,
    CheckRun,
    Comment,
    CommitStatus,
    Fault,
    Pull,
    RecordedRequest,
    Repo,
    Run,
    fake_sha,
    utcnow,
)

JSON_TYPE = "application/json; charset=utf-8"
BLOB_PREFIX = "/actions-results/artifacts/"


@dataclass
class Incoming:
    """A raw HTTP request, before any interpretation."""

    method: str
    path: str
    query_pairs: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes


@dataclass
class Outgoing:
    """A raw HTTP response."""

    status: int
    headers: dict[str, str]
    body: bytes = b""
    drop: bool = False  # close the connection without sending anything
    pace: float = 0.0  # seconds between 1 KiB pieces of the body: a store that trickles it


App = Callable[[Incoming], Outgoing]


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that hands every request to one ``app`` callable."""

    def __init__(self, app: App):
        self.app = app
        super().__init__(("127.0.0.1", 0), _RequestHandler)


class _RequestHandler(BaseHTTPRequestHandler):
    """Translate HTTP to ``Incoming``/``Outgoing``.

    It keeps the default HTTP/1.0 protocol, so every connection closes after one
    response: no keep-alive threads linger after ``stop()`` and clients simply
    reconnect, which costs nothing on loopback.
    """

    server: _HTTPServer

    def _handle(self) -> None:
        url = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        incoming = Incoming(
            method=self.command,
            path=url.path,
            query_pairs=parse_qsl(url.query, keep_blank_values=True),
            headers=dict(self.headers.items()),
            body=self.rfile.read(length) if length else b"",
        )
        out = self.server.app(incoming)
        if out.drop:
            self.close_connection = True
            return
        self.send_response(out.status)
        for name, value in out.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(out.body)))
        self.end_headers()
        if self.command == "HEAD":
            return
        if not out.pace:
            self.wfile.write(out.body)
            return
        try:
            for start in range(0, len(out.body), 1024):
                self.wfile.write(out.body[start : start + 1024])
                self.wfile.flush()
                time.sleep(out.pace)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up on the trickle

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _handle

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request stderr line; ``gh.requests`` is the log."""


@functools.cache
def _routes() -> list[tuple[str, re.Pattern[str], str]]:
    """(method, path regex, operationId) built from the OpenAPI path templates."""
    routes = []
    for method, template, op_id in operations():
        parts = re.split(r"(\{\w+\})", template)
        regex = "".join(f"(?P<{p[1:-1]}>[^/]+)" if p.startswith("{") else re.escape(p) for p in parts)
        routes.append((method, re.compile(regex), op_id))
    return routes


def _blob_error(status: int, code: str, message: str) -> Outgoing:
    """Azure Storage's XML error body."""
    body = f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{code}</Code><Message>{message}</Message></Error>'
    return Outgoing(status, {"Content-Type": "application/xml"}, body.encode())


class GitHubTestServer:
    """Fake api.github.com plus blob host on 127.0.0.1; use ``with GitHubTestServer() as gh:``.

    ``token_user`` is the login of whoever owns the token (default the Actions
    bot), so comments and statuses created through the API carry it. ``token``,
    if given, is the only credential accepted. ``validate=False`` turns the
    OpenAPI checks off (for tests that need GitHub's own error replies instead).
    """

    def __init__(
        self,
        *,
        token_user: str = "github-actions[bot]",
        token: str | None = None,
        validate: bool = True,
        blob_host: str = "localhost",
        blob_url_ttl: float = 60.0,
        rate_limit: int = 1000,
    ) -> None:
        self.token_user = token_user
        self.token = token
        self.validate = validate
        self.blob_host = blob_host
        self.blob_url_ttl = blob_url_ttl  # GitHub: "This URL expires after 1 minute."
        self.blob_pace = 0.0  # seconds between 1 KiB pieces of an artifact's bytes (0: all at once)
        self.rate_limit = rate_limit  # GITHUB_TOKEN: 1000 requests/hour per repository
        self.now: Callable[[], datetime] = utcnow

        self.repos: dict[str, Repo] = {}  # key: full_name.lower(); GitHub names are case-insensitive
        self.pulls: dict[tuple[str, int], Pull] = {}
        self.runs: dict[int, Run] = {}
        self.artifacts: dict[int, Artifact] = {}
        self.comments: dict[int, Comment] = {}
        self.check_runs: dict[int, CheckRun] = {}
        self.statuses: list[CommitStatus] = []

        self.requests: list[RecordedRequest] = []
        self.violations: list[str] = []
        self.faults: list[Fault] = []

        self._ids = itertools.count(1001)
        self._lock = threading.RLock()
        self._key = secrets.token_bytes(32)
        self._api_calls = 0
        self._reset_at = int(time.time()) + 3600
        self._servers: list[tuple[_HTTPServer, threading.Thread]] = []

    # --- lifecycle --------------------------------------------------------------------

    def start(self) -> GitHubTestServer:
        if not self._servers:
            for app in (self._serve_api, self._serve_blob):
                server = _HTTPServer(app)
                thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
                thread.start()
                self._servers.append((server, thread))
        return self

    def stop(self) -> None:
        for server, thread in self._servers:
            server.shutdown()
            server.server_close()
            thread.join()
        self._servers.clear()

    def __enter__(self) -> GitHubTestServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _port(self, index: int) -> int:
        if not self._servers:
            raise RuntimeError("GitHubTestServer is not running; call start() or use it as a context manager")
        return self._servers[index][0].server_address[1]

    @property
    def api_url(self) -> str:
        """Base URL for ``Github(base_url=...)``, e.g. ``http://127.0.0.1:40123``."""
        return f"http://127.0.0.1:{self._port(0)}"

    @property
    def blob_url(self) -> str:
        """Base URL of the blob host; a different host name than the API, as on GitHub."""
        return f"http://{self.blob_host}:{self._port(1)}"

    # --- state builders -----------------------------------------------------------------

    def next_id(self) -> int:
        return next(self._ids)

    def repo(self, full_name: str) -> Repo:
        """The registered repository (case-insensitive), or KeyError."""
        try:
            return self.repos[full_name.lower()]
        except KeyError:
            raise KeyError(f"unknown repository {full_name!r}; call add_repo() first") from None

    def _head_repo(self, base: str, head: str | None) -> str:
        """A head repository other than the base is a fork; register it on first use."""
        if head is None:
            return self.repo(base).full_name
        if head.lower() not in self.repos:
            self.add_repo(head, default_branch=self.repo(base).default_branch, fork=True)
        return self.repo(head).full_name

    def add_repo(
        self,
        full_name: str,
        *,
        default_branch: str = "main",
        id: int | None = None,
        private: bool = False,
        fork: bool = False,
    ) -> Repo:
        with self._lock:
            repo = Repo(full_name, id or self.next_id(), default_branch, private, fork)
            self.repos[full_name.lower()] = repo
            return repo

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        head_sha: str | None = None,
        head_ref: str = "feature",
        head_repo: str | None = None,
        base_ref: str | None = None,
        base_sha: str | None = None,
        state: str = "open",
        title: str = "Test pull request",
        user: str = "octocat",
        id: int | None = None,
    ) -> Pull:
        """A pull request (also the issue that comments hang on). ``head_repo``
        other than ``repo`` makes it a fork pull request."""
        with self._lock:
            base = self.repo(repo)
            pull = Pull(
                repo=base.full_name,
                number=number,
                id=id or self.next_id(),
                head_sha=head_sha or fake_sha(f"{repo}#{number}-head"),
                head_ref=head_ref,
                head_repo=self._head_repo(repo, head_repo),
                base_ref=base_ref or base.default_branch,
                base_sha=base_sha or fake_sha(f"{repo}#{number}-base"),
                state=state,
                title=title,
                user=user,
            )
            self.pulls[(base.full_name, number)] = pull
            return pull

    def add_run(
        self,
        repo: str,
        *,
        id: int | None = None,
        name: str = "CI",
        head_branch: str | None = "main",
        head_sha: str | None = None,
        event: str = "push",
        status: str = "completed",
        conclusion: str | None = "success",
        head_repo: str | None = None,
        created_at: datetime | None = None,
        workflow: str = "ci.yml",
        workflow_id: int | None = None,
        run_number: int | None = None,
        actor: str = "octocat",
        pull_numbers: Iterable[int] = (),
    ) -> Run:
        """A workflow run of ``.github/workflows/<workflow>``."""
        with self._lock:
            base = self.repo(repo)
            run_id = id or self.next_id()
            run = Run(
                repo=base.full_name,
                id=run_id,
                name=name,
                head_branch=head_branch,
                head_sha=head_sha or fake_sha(f"run-{run_id}"),
                event=event,
                status=status,
                conclusion=conclusion,
                head_repo=self._head_repo(repo, head_repo),
                created_at=created_at or self.now(),
                workflow_path=f".github/workflows/{workflow}",
                workflow_id=workflow_id or shapes.stable_id(f"{base.full_name}/{workflow}"),
                run_number=run_number or 1 + sum(1 for r in self.runs.values() if r.repo == base.full_name),
                actor=actor,
                pull_numbers=list(pull_numbers),
            )
            self.runs[run.id] = run
            return run

    def add_artifact(
        self,
        run_id: int,
        name: str,
        data: bytes,
        *,
        expired: bool = False,
        id: int | None = None,
        created_at: datetime | None = None,
        expires_at: datetime | None = None,
        size: int | None = None,
    ) -> Artifact:
        """An artifact of run ``run_id`` whose archive is ``data`` (any bytes).
        ``size`` defaults to ``len(data)``; give another value to test a lying size."""
        with self._lock:
            run = self.runs[run_id]
            created = created_at or self.now()
            default_expiry = created - timedelta(days=1) if expired else created + timedelta(days=90)
            art = Artifact(
                repo=run.repo,
                id=id or self.next_id(),
                run_id=run_id,
                name=name,
                data=data,
                expired=expired,
                created_at=created,
                expires_at=expires_at or default_expiry,
                size=len(data) if size is None else size,
            )
            self.artifacts[art.id] = art
            return art

    def add_comment(
        self,
        repo: str,
        issue_number: int,
        body: str,
        *,
        user: str | None = None,
        id: int | None = None,
        created_at: datetime | None = None,
        updated_at: datetime | None = None,
        deleted_user: bool = False,
    ) -> Comment:
        """A comment on pull request ``issue_number`` (add the pull first).
        ``user`` defaults to ``token_user``, i.e. a comment an earlier bot run left; ``deleted_user`` makes it
        a deleted account's, which GitHub serves with ``user: null`` (``nullable-simple-user``)."""
        with self._lock:
            key = (self.repo(repo).full_name, issue_number)
            if key not in self.pulls:
                raise KeyError(f"no pull request {key}; call add_pull() first")
            created = created_at or self.now()
            comment = Comment(
                repo=key[0],
                issue_number=issue_number,
                id=id or self.next_id(),
                body=body,
                user=None if deleted_user else user or self.token_user,
                created_at=created,
                updated_at=updated_at or created,
            )
            self.comments[comment.id] = comment
            return comment

    def add_check_run(
        self, repo: str, name: str, head_sha: str, *, status: str = "in_progress", conclusion: str | None = None
    ) -> CheckRun:
        """An existing check run, e.g. one a previous step created."""
        with self._lock:
            check = CheckRun(self.repo(repo).full_name, self.next_id(), name, head_sha, status, conclusion)
            check.started_at = self.now()
            self.check_runs[check.id] = check
            return check

    # --- test helpers --------------------------------------------------------------------

    def inject(
        self,
        method: str,
        path_regex: str,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int = 1,
        apply: bool = False,
        drop: bool = False,
        pace: float = 0.0,
    ) -> Fault:
        """Answer the next ``times`` requests whose method matches (``"*"`` for any)
        and whose path matches ``path_regex`` (``re.search``) with ``status``.

        ``body`` may be JSON-able data, str or bytes; None gives GitHub's error
        body with the status phrase. ``headers`` override the usual ones (e.g.
        ``Retry-After``, ``X-RateLimit-Remaining``). Applies to both hosts; on the
        API host only to requests that passed OpenAPI validation and auth.

        ``apply=True`` (API host only) serves the request first, so a write takes
        effect, and then answers ``status`` anyway: a write whose effect the client
        cannot know. ``drop=True`` closes the connection without an answer (after
        applying the request if ``apply`` is also given); ``status`` is then unused.
        ``pace`` (seconds) sends the usual answer, its body 1 KiB at a time that many seconds apart: a connection
        that trickles, whose every read gets a piece before it times out; ``status`` is then unused.
        """
        fault = Fault(
            method.upper(), path_regex, status, body, dict(headers or {}), times, apply=apply, drop=drop, pace=pace
        )
        with self._lock:
            self.faults.append(fault)
        return fault

    def assert_no_violations(self) -> None:
        """Fail the test if any request or response broke the OpenAPI description."""
        if self.violations:
            raise AssertionError("OpenAPI violations:\n" + "\n".join(f"- {v}" for v in self.violations))

    def api_requests(self, method: str | None = None, path_regex: str | None = None) -> list[RecordedRequest]:
        """Requests the API host received, optionally filtered, e.g. to count calls."""
        return [
            r
            for r in self.requests
            if r.server == "api"
            and (method is None or r.method == method.upper())
            and (path_regex is None or re.search(path_regex, r.path))
        ]

    def signed_blob_url(self, artifact_id: int) -> str:
        """A blob-host URL for the artifact, valid for ``blob_url_ttl`` seconds."""
        path = f"{BLOB_PREFIX}{artifact_id}.zip"
        expiry = datetime.fromtimestamp(int(time.time() + self.blob_url_ttl), UTC)
        se = shapes.ts(expiry) or ""
        query = urlencode({"sp": "r", "se": se, "sig": self._signature(path, se)})
        return f"{self.blob_url}{path}?{query}"

    def _signature(self, path: str, se: str) -> str:
        mac = hmac.new(self._key, f"{path}\n{se}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode()

    # --- request handling ------------------------------------------------------------------

    def _record(self, server: str, req: Incoming) -> RecordedRequest:
        try:
            parsed = json.loads(req.body) if req.body else None
        except ValueError:
            parsed = None
        record = RecordedRequest(
            server=server,
            method=req.method,
            path=req.path,
            query=dict(req.query_pairs),
            headers={k.lower(): v for k, v in req.headers.items()},
            json=parsed,
            body=req.body,
        )
        self.requests.append(record)
        return record

    def _take_fault(self, req: Incoming) -> Fault | None:
        for fault in self.faults:
            if fault.remaining > 0 and fault.method in ("*", req.method) and re.search(fault.path_regex, req.path):
                fault.remaining -= 1
                fault.hits += 1
                return fault
        return None

    def _fault_reply(self, fault: Fault) -> Outgoing:
        body = fault.body
        if body is None and fault.status not in (204, 304):
            body = shapes.error(HTTPStatus(fault.status).phrase, fault.status)
        if isinstance(body, (str, bytes)):
            data = body.encode() if isinstance(body, str) else body
            headers = {"Content-Type": "text/plain; charset=utf-8"}
        else:
            data = b"" if body is None else encode(body)
            headers = {"Content-Type": JSON_TYPE} if data else {}
        return Outgoing(fault.status, headers, data)

    def _canonical(self, path: str) -> str | None:
        """Map ``/repositories/{id}/...`` (used in GitHub's Link headers) to
        ``/repos/{owner}/{repo}/...``; None for an unknown repository id."""
        match = re.fullmatch(r"/repositories/(\d+)(/.*)?", path)
        if not match:
            return path
        repo = next((r for r in self.repos.values() if r.id == int(match[1])), None)
        return None if repo is None else f"/repos/{repo.full_name}{match[2] or ''}"

    def _authorized(self, headers: dict[str, str]) -> str | None:
        """None when the token is acceptable, else the 401 message GitHub gives."""
        value = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        scheme, _, credential = value.partition(" ")
        if scheme.lower() not in ("token", "bearer") or not credential.strip():
            return "Requires authentication"
        if self.token is not None and credential.strip() != self.token:
            return "Bad credentials"
        return None

    def _violation(self, message: str) -> None:
        self.violations.append(message)

    def _serve_api(self, req: Incoming) -> Outgoing:
        with self._lock:
            self._record("api", req)
            self._api_calls += 1
            path = self._canonical(req.path)
            spec_req = SpecRequest(
                method=req.method.lower(),
                path=path or req.path,
                query=req.query_pairs,
                headers=req.headers,
                body=req.body or None,
                content_type=next((v for k, v in req.headers.items() if k.lower() == "content-type"), "").lower(),
            )
            label = f"{req.method} {req.path}"
            try:
                out, check_response = self._answer(req, path, spec_req, label)
            except Exception as exc:  # a bug in the fake itself: make the test fail loudly
                self._violation(f"{label}: test server error {exc!r}")
                out, check_response = self._json(Reply(500, shapes.error(f"test server error: {exc!r}", 500))), False
            out.headers.update(self._rate_headers(out.headers))
            if check_response and self.validate:
                self._check_response(spec_req, out, label)
            return out

    def _answer(self, req: Incoming, path: str | None, spec_req: SpecRequest, label: str) -> tuple[Outgoing, bool]:
        """The response, and whether to validate it. Injected faults, 401s and
        404s for undescribed paths are not validated: the description either does
        not list them or the test chose them on purpose."""
        if path is None:
            return self._json(Reply(404, shapes.error("Not Found", 404))), False
        if self.validate:
            try:
                problems = request_problems(spec_req)
            except NotDescribed as exc:
                self._violation(f"{label}: not in the OpenAPI description ({exc})")
                return self._json(Reply(404, shapes.error("Not Found", 404))), False
            if problems:
                self.violations.extend(f"{label}: request: {p}" for p in problems)
                message = "Invalid request.\n\n" + "\n".join(problems)
                return self._json(Reply(422, shapes.error(message, 422))), True
        denied = self._authorized(req.headers)
        if denied:
            return self._json(Reply(401, shapes.error(denied, 401))), False
        fault = self._take_fault(req)
        if fault and fault.pace:
            out, valid = self._route(req, path, spec_req)
            out.pace = fault.pace
            return out, valid
        if fault and fault.apply:
            self._route(req, path, spec_req)  # the write happens; its answer is lost
        if fault:
            out = self._fault_reply(fault)
            out.headers.update(fault.headers)
            out.drop = fault.drop
            return out, False
        return self._route(req, path, spec_req)

    def _route(self, req: Incoming, path: str, spec_req: SpecRequest) -> tuple[Outgoing, bool]:
        for method, regex, op_id in _routes():
            match = regex.fullmatch(path)
            if match and method == req.method:
                return self._json(self._dispatch(op_id, match, req, spec_req)), True
        return self._json(Reply(404, shapes.error("Not Found", 404))), False

    def _dispatch(self, op_id: str, match: re.Match[str], req: Incoming, spec_req: SpecRequest) -> Reply:
        params = {k: unquote(v) for k, v in match.groupdict().items()}
        repo = self.repos.get(f"{params['owner']}/{params['repo']}".lower())
        if repo is None:
            return Reply(404, shapes.error("Not Found", 404))
        body = json.loads(req.body) if req.body else None
        call = Call(req.method, spec_req.path, params, req.query_pairs, body, repo)
        try:
            return HANDLERS[op_id](self, call)
        except HttpError as exc:
            return Reply(exc.status, exc.body)

    def _json(self, reply: Reply) -> Outgoing:
        data = b"" if reply.body is None else encode(reply.body)
        headers = {"Content-Type": JSON_TYPE} if data else {}
        headers.update(reply.headers)
        return Outgoing(reply.status, headers, data)

    def _rate_headers(self, present: dict[str, str]) -> dict[str, str]:
        """GitHub's rate-limit and media-type headers, minus any a fault overrides."""
        used = min(self._api_calls, self.rate_limit)
        headers = {
            "X-RateLimit-Limit": str(self.rate_limit),
            "X-RateLimit-Remaining": str(self.rate_limit - used),
            "X-RateLimit-Used": str(used),
            "X-RateLimit-Reset": str(self._reset_at),
            "X-RateLimit-Resource": "core",
            "X-GitHub-Media-Type": "github.v3; format=json",
        }
        taken = {k.lower() for k in present}
        return {k: v for k, v in headers.items() if k.lower() not in taken}

    def _check_response(self, spec_req: SpecRequest, out: Outgoing, label: str) -> None:
        problems = response_problems(spec_req, spec_response(out.status, out.headers, out.body))
        if problems is None:
            # The description lists no response for this status (e.g. 404 on
            # get-artifact). Error statuses are then skipped; a success status
            # the description does not know is a bug in the fake.
            if out.status < 400:
                self._violation(f"{label}: response status {out.status} is not in the OpenAPI description")
            return
        self.violations.extend(f"{label}: response {out.status}: {p}" for p in problems)

    def _serve_blob(self, req: Incoming) -> Outgoing:
        """The signed-URL blob store. Not checked against the OpenAPI description,
        which covers api.github.com only."""
        with self._lock:
            self._record("blob", req)
            return self._blob_answer(req)

    def _blob_answer(self, req: Incoming) -> Outgoing:
        fault = self._take_fault(req)
        if fault:
            out = self._fault_reply(fault)
            out.headers.update(fault.headers)
            out.drop = fault.drop
            return out
        if any(k.lower() == "authorization" for k in req.headers):
            return _blob_error(
                403,
                "AuthenticationFailed",
                "Server failed to authenticate the request. Make sure the value of "
                "Authorization header is formed correctly including the signature.",
            )
        query = dict(req.query_pairs)
        se, sig = query.get("se", ""), query.get("sig", "")
        if not hmac.compare_digest(sig, self._signature(req.path, se)):
            return _blob_error(403, "AuthenticationFailed", "Signature did not match.")
        expiry = datetime.fromisoformat(se.replace("Z", "+00:00"))
        if time.time() >= expiry.timestamp():
            return _blob_error(
                403, "AuthenticationFailed", f"Signature not valid in the specified time frame: Expiry [{se}]"
            )
        art_id = int(req.path[len(BLOB_PREFIX) : -len(".zip")])
        art = self.artifacts.get(art_id)
        if art is None or art.expired:
            return _blob_error(404, "BlobNotFound", "The specified blob does not exist.")
        headers = {
            "Content-Type": "application/zip",
            "Content-Disposition": f'attachment; filename="{art.name}.zip"',
        }
        return Outgoing(200, headers, art.data, pace=self.blob_pace)
