"""One handler per OpenAPI operation that diagbot uses.

Each handler gets the server (for its state and URLs) and a parsed ``Call``, and
returns a ``Reply`` or raises ``HttpError``. The request has already passed auth
and OpenAPI validation, so handlers only model GitHub's behaviour (filters,
paging, limits the description does not encode such as the 65536-character
comment body).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from . import shapes
from .state import CheckRun, Comment, CommitStatus, Pull, Repo, Run

if TYPE_CHECKING:
    from .server import GitHubTestServer

MAX_PER_PAGE = 100
MAX_ANNOTATIONS = 50
MAX_COMMENT_CHARS = 65536
MAX_STATUS_DESCRIPTION = 140


class HttpError(Exception):
    """Abort a handler with GitHub's error body for ``status``."""

    def __init__(self, status: int, message: str, errors: list[shapes.Json] | None = None):
        super().__init__(message)
        self.status = status
        self.body = shapes.error(message, status, errors)


@dataclass
class Call:
    """A validated API request, routed to an operation."""

    method: str
    path: str  # canonical /repos/{owner}/{repo}/... form
    params: dict[str, str]  # path parameters
    query_pairs: list[tuple[str, str]]
    json: Any
    repo: Repo

    @property
    def query(self) -> dict[str, str]:
        return dict(self.query_pairs)

    def int_param(self, name: str) -> int:
        """A numeric path parameter; a malformed one is GitHub's plain 404."""
        try:
            return int(self.params[name])
        except ValueError:
            raise HttpError(404, "Not Found") from None


@dataclass
class Reply:
    """What a handler answers; ``body`` is JSON-able data, or None for no body."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[["GitHubTestServer", Call], Reply]


def not_found() -> HttpError:
    return HttpError(404, "Not Found")


def paginate(gh: GitHubTestServer, call: Call, items: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """Slice ``items`` by ``page``/``per_page`` and build GitHub's ``Link`` header.

    Like api.github.com, the links address the repository by id
    (``/repositories/{id}/...``), keep the caller's other query parameters, and
    list ``prev, next, last, first`` in that order, each as ``<url>; rel="x"``
    joined by ``", "``. PyGithub follows rel="next" verbatim.
    """
    query = call.query
    per_page = min(max(int(query.get("per_page", 30)), 1), MAX_PER_PAGE)
    page = max(int(query.get("page", 1)), 1)
    last = max((len(items) + per_page - 1) // per_page, 1)
    chunk = items[(page - 1) * per_page : page * per_page]

    prefix = f"/repos/{call.params['owner']}/{call.params['repo']}"
    rest = call.path[len(prefix) :]
    kept = [(k, v) for k, v in call.query_pairs if k != "page"]

    def url(number: int) -> str:
        return f"{gh.api_url}/repositories/{call.repo.id}{rest}?{urlencode([*kept, ('page', str(number))])}"

    rels: list[tuple[str, int]] = []
    if page > 1:
        rels.append(("prev", min(page - 1, last)))
    if page < last:
        rels += [("next", page + 1), ("last", last)]
    if page > 1:
        rels.append(("first", 1))
    headers = {"Link": ", ".join(f'<{url(n)}>; rel="{rel}"' for rel, n in rels)} if rels else {}
    return chunk, headers


def newest_first(items: list[Any]) -> list[Any]:
    """GitHub lists runs and artifacts newest first."""
    return sorted(items, key=lambda x: (x.created_at, x.id), reverse=True)


# --- repository and pull request -------------------------------------------------


def get_repo(gh: GitHubTestServer, call: Call) -> Reply:
    return Reply(200, shapes.repository_full(call.repo, gh.api_url))


def get_pull(gh: GitHubTestServer, call: Call) -> Reply:
    pull = gh.pulls.get((call.repo.full_name, call.int_param("pull_number")))
    if pull is None:
        raise not_found()
    comments = sum(1 for c in gh.comments.values() if (c.repo, c.issue_number) == (pull.repo, pull.number))
    head = gh.repo(pull.head_repo)
    return Reply(200, shapes.pull_request(pull, call.repo, head, comments, gh.api_url))


# --- workflow runs ------------------------------------------------------------------


def _run_json(gh: GitHubTestServer, run: Run, include_pulls: bool) -> shapes.Json:
    repo = gh.repo(run.repo)
    pulls = [gh.pulls[(run.repo, n)] for n in run.pull_numbers if (run.repo, n) in gh.pulls]
    minimal = [_pull_minimal(gh, p) for p in pulls] if include_pulls else []
    return shapes.workflow_run(run, repo, gh.repo(run.head_repo), minimal, gh.api_url)


def _pull_minimal(gh: GitHubTestServer, pull: Pull) -> shapes.Json:
    return shapes.pull_request_minimal(pull, gh.repo(pull.repo), gh.repo(pull.head_repo), gh.api_url)


def _list_runs(gh: GitHubTestServer, call: Call, runs: list[Run]) -> Reply:
    """Apply the documented filters. ``status`` matches a status or a conclusion,
    as on GitHub. ``actor``, ``created`` and ``check_suite_id`` are accepted but
    not modelled."""
    q = call.query
    if "branch" in q:
        runs = [r for r in runs if r.head_branch == q["branch"]]
    if "event" in q:
        runs = [r for r in runs if r.event == q["event"]]
    if "status" in q:
        runs = [r for r in runs if q["status"] in (r.status, r.conclusion)]
    if "head_sha" in q:
        runs = [r for r in runs if r.head_sha == q["head_sha"]]
    runs = newest_first(runs)
    chunk, headers = paginate(gh, call, runs)
    include_pulls = q.get("exclude_pull_requests", "false") != "true"
    body = {"total_count": len(runs), "workflow_runs": [_run_json(gh, r, include_pulls) for r in chunk]}
    return Reply(200, body, headers)


def list_repo_runs(gh: GitHubTestServer, call: Call) -> Reply:
    return _list_runs(gh, call, [r for r in gh.runs.values() if r.repo == call.repo.full_name])


def list_workflow_runs(gh: GitHubTestServer, call: Call) -> Reply:
    """``workflow_id`` is the numeric id or the file name (``ci.yml``). The fake
    knows a workflow once it has at least one run; otherwise 404, as for a
    missing workflow file."""
    wid = call.params["workflow_id"]
    runs = [r for r in gh.runs.values() if r.repo == call.repo.full_name]
    runs = [r for r in runs if wid in (str(r.workflow_id), r.workflow_file)]
    if not runs:
        raise not_found()
    return _list_runs(gh, call, runs)


# --- artifacts ----------------------------------------------------------------------


def _artifact_json(gh: GitHubTestServer, art_id: int) -> shapes.Json:
    art = gh.artifacts[art_id]
    run = gh.runs[art.run_id]
    return shapes.artifact(art, run, gh.repo(art.repo), gh.repo(run.head_repo), gh.api_url)


def _list_artifacts(gh: GitHubTestServer, call: Call, run_id: int | None) -> Reply:
    arts = [a for a in gh.artifacts.values() if a.repo == call.repo.full_name]
    if run_id is not None:
        arts = [a for a in arts if a.run_id == run_id]
    if "name" in call.query:
        arts = [a for a in arts if a.name == call.query["name"]]
    arts = newest_first(arts)
    if call.query.get("direction") == "asc":
        arts.reverse()
    chunk, headers = paginate(gh, call, arts)
    body = {"total_count": len(arts), "artifacts": [_artifact_json(gh, a.id) for a in chunk]}
    return Reply(200, body, headers)


def list_repo_artifacts(gh: GitHubTestServer, call: Call) -> Reply:
    return _list_artifacts(gh, call, None)


def list_run_artifacts(gh: GitHubTestServer, call: Call) -> Reply:
    run = gh.runs.get(call.int_param("run_id"))
    if run is None or run.repo != call.repo.full_name:
        raise not_found()
    return _list_artifacts(gh, call, run.id)


def _artifact_of(gh: GitHubTestServer, call: Call) -> int:
    art = gh.artifacts.get(call.int_param("artifact_id"))
    if art is None or art.repo != call.repo.full_name:
        raise not_found()
    return art.id


def get_artifact(gh: GitHubTestServer, call: Call) -> Reply:
    return Reply(200, _artifact_json(gh, _artifact_of(gh, call)))


def download_artifact(gh: GitHubTestServer, call: Call) -> Reply:
    """302 to a short-lived signed URL on the blob host, or 410 once expired."""
    art_id = _artifact_of(gh, call)
    if call.params["archive_format"] != "zip":
        raise not_found()
    if gh.artifacts[art_id].expired:
        raise HttpError(410, "Artifact has expired")
    return Reply(302, None, {"Location": gh.signed_blob_url(art_id)})


# --- issue comments -----------------------------------------------------------------


def _issue(gh: GitHubTestServer, call: Call) -> int:
    """Pull requests are the only issues the fake knows."""
    number = call.int_param("issue_number")
    if (call.repo.full_name, number) not in gh.pulls:
        raise not_found()
    return number


def _comment(gh: GitHubTestServer, call: Call) -> Comment:
    comment = gh.comments.get(call.int_param("comment_id"))
    if comment is None or comment.repo != call.repo.full_name:
        raise not_found()
    return comment


def _check_comment_body(body: str) -> None:
    """GitHub's limit, which the OpenAPI description does not state."""
    if len(body) > MAX_COMMENT_CHARS:
        message = f"Body is too long (maximum is {MAX_COMMENT_CHARS} characters)"
        error = {"resource": "IssueComment", "code": "unprocessable", "field": "data", "message": message}
        raise HttpError(422, "Validation Failed", [error])


def list_comments(gh: GitHubTestServer, call: Call) -> Reply:
    """Oldest first; ``since`` keeps comments updated at or after that time."""
    number = _issue(gh, call)
    comments = [c for c in gh.comments.values() if (c.repo, c.issue_number) == (call.repo.full_name, number)]
    if "since" in call.query:
        since = datetime.fromisoformat(call.query["since"].replace("Z", "+00:00"))
        comments = [c for c in comments if c.updated_at >= since]
    comments.sort(key=lambda c: (c.created_at, c.id))
    chunk, headers = paginate(gh, call, comments)
    return Reply(200, [shapes.issue_comment(c, gh.api_url) for c in chunk], headers)


def create_comment(gh: GitHubTestServer, call: Call) -> Reply:
    number = _issue(gh, call)
    _check_comment_body(call.json["body"])
    comment = gh.add_comment(call.repo.full_name, number, call.json["body"])
    body = shapes.issue_comment(comment, gh.api_url)
    return Reply(201, body, {"Location": body["url"]})


def get_comment(gh: GitHubTestServer, call: Call) -> Reply:
    return Reply(200, shapes.issue_comment(_comment(gh, call), gh.api_url))


def update_comment(gh: GitHubTestServer, call: Call) -> Reply:
    comment = _comment(gh, call)
    _check_comment_body(call.json["body"])
    comment.body = call.json["body"]
    comment.updated_at = gh.now()
    return Reply(200, shapes.issue_comment(comment, gh.api_url))


def delete_comment(gh: GitHubTestServer, call: Call) -> Reply:
    del gh.comments[_comment(gh, call).id]
    return Reply(204)


# --- check runs and statuses -----------------------------------------------------------


def _check_json(gh: GitHubTestServer, check: CheckRun) -> shapes.Json:
    """Pull requests of the same repository whose head is the checked commit
    (GitHub leaves fork pull requests out)."""
    pulls = [
        _pull_minimal(gh, p)
        for p in gh.pulls.values()
        if p.repo == check.repo and p.head_repo == p.repo and p.head_sha == check.head_sha
    ]
    return shapes.check_run(check, pulls, gh.api_url)


def _apply_check_fields(gh: GitHubTestServer, check: CheckRun, data: dict[str, Any]) -> None:
    """Shared by create and update: a conclusion forces ``completed``, and
    annotations are appended, at most 50 per request."""
    output = data.get("output") or {}
    annotations = output.get("annotations") or []
    if len(annotations) > MAX_ANNOTATIONS:
        raise HttpError(422, f"Invalid request.\n\nOnly {MAX_ANNOTATIONS} annotations are allowed per request.")
    status = data.get("status", check.status)
    conclusion = data.get("conclusion", check.conclusion)
    if status == "completed" and conclusion is None:
        raise HttpError(422, "Invalid request.\n\nconclusion is required when status is completed.")
    for key in ("name", "head_sha", "external_id", "details_url"):
        if key in data:
            setattr(check, key, data[key])
    for key in ("started_at", "completed_at"):
        if key in data:
            setattr(check, key, datetime.fromisoformat(data[key].replace("Z", "+00:00")))
    if conclusion is not None:
        status = "completed"
        check.completed_at = check.completed_at or gh.now()
    check.status, check.conclusion = status, conclusion
    if output:
        check.output_title = output.get("title", check.output_title)
        check.output_summary = output.get("summary", check.output_summary)
        check.output_text = output.get("text", check.output_text)
    check.annotations.extend(annotations)


def create_check_run(gh: GitHubTestServer, call: Call) -> Reply:
    data = call.json
    check = CheckRun(call.repo.full_name, gh.next_id(), data["name"], data["head_sha"], started_at=gh.now())
    _apply_check_fields(gh, check, data)
    gh.check_runs[check.id] = check
    return Reply(201, _check_json(gh, check))


def get_check_run(gh: GitHubTestServer, call: Call) -> Reply:
    check = gh.check_runs.get(call.int_param("check_run_id"))
    if check is None or check.repo != call.repo.full_name:
        raise not_found()
    return Reply(200, _check_json(gh, check))


def update_check_run(gh: GitHubTestServer, call: Call) -> Reply:
    check = gh.check_runs.get(call.int_param("check_run_id"))
    if check is None or check.repo != call.repo.full_name:
        raise not_found()
    _apply_check_fields(gh, check, call.json)
    return Reply(200, _check_json(gh, check))


def list_check_runs_for_ref(gh: GitHubTestServer, call: Call) -> Reply:
    """Check runs on a commit, newest first. ``ref`` must be a commit sha here
    (the fake has no branches or tags). ``filter=latest``, the default, keeps only
    the newest run of each name, as on GitHub; ``app_id`` is accepted but not
    modelled (every check run belongs to the Actions app)."""
    q = call.query
    checks = [c for c in gh.check_runs.values() if c.repo == call.repo.full_name and c.head_sha == call.params["ref"]]
    if "check_name" in q:
        checks = [c for c in checks if c.name == q["check_name"]]
    if "status" in q:
        checks = [c for c in checks if c.status == q["status"]]
    checks.sort(key=lambda c: (c.started_at or datetime.min.replace(tzinfo=UTC), c.id), reverse=True)
    if q.get("filter", "latest") == "latest":
        newest: dict[str, CheckRun] = {}
        for check in checks:
            newest.setdefault(check.name, check)
        checks = list(newest.values())
    chunk, headers = paginate(gh, call, checks)
    body = {"total_count": len(checks), "check_runs": [_check_json(gh, c) for c in chunk]}
    return Reply(200, body, headers)


def create_status(gh: GitHubTestServer, call: Call) -> Reply:
    """Enforces GitHub's 140-character description limit (not in the description)."""
    data = call.json
    description = data.get("description")
    if description is not None and len(description) > MAX_STATUS_DESCRIPTION:
        message = f"description is too long (maximum is {MAX_STATUS_DESCRIPTION} characters)"
        error = {"resource": "Status", "code": "custom", "field": "description", "message": message}
        raise HttpError(422, "Validation Failed", [error])
    now = gh.now()
    status = CommitStatus(
        repo=call.repo.full_name,
        sha=call.params["sha"],
        id=gh.next_id(),
        state=data["state"],
        context=data.get("context", "default"),
        description=description,
        target_url=data.get("target_url"),
        creator=gh.token_user,
        created_at=now,
        updated_at=now,
    )
    gh.statuses.append(status)
    body = shapes.commit_status(status, gh.api_url)
    return Reply(201, body, {"Location": body["url"]})


HANDLERS: dict[str, Handler] = {
    "repos/get": get_repo,
    "pulls/get": get_pull,
    "actions/list-workflow-runs-for-repo": list_repo_runs,
    "actions/list-workflow-runs": list_workflow_runs,
    "actions/list-artifacts-for-repo": list_repo_artifacts,
    "actions/list-workflow-run-artifacts": list_run_artifacts,
    "actions/get-artifact": get_artifact,
    "actions/download-artifact": download_artifact,
    "issues/list-comments": list_comments,
    "issues/create-comment": create_comment,
    "issues/get-comment": get_comment,
    "issues/update-comment": update_comment,
    "issues/delete-comment": delete_comment,
    "checks/create": create_check_run,
    "checks/get": get_check_run,
    "checks/update": update_check_run,
    "checks/list-for-ref": list_check_runs_for_ref,
    "repos/create-commit-status": create_status,
}
