"""Tests of the GitHub REST test double, driven through PyGithub over real HTTP.

They pin down both the double's behaviour and the PyGithub 2.10 behaviour diagbot
relies on (paging through Link headers, the artifact download redirect, retries).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import requests
from github import Auth, Github, GithubException, UnknownObjectException

from tests.github_server import GitHubTestServer
from tests.github_server.endpoints import HANDLERS
from tests.github_server.openapi_check import operations

REPO = "octo/app"
CheckOutput = dict[str, str | list[dict[str, str | int]]]  # PyGithub's type for check run output
BASE = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer() as server:
        server.add_repo(REPO, default_branch="main")
        server.add_pull(REPO, 7, head_repo="contrib/app", head_ref="fix", head_sha="a" * 40)
        yield server
        server.assert_no_violations()


def client(gh: GitHubTestServer, **kwargs: object) -> Github:
    """PyGithub pointed at the double, without its default 0.25 s/1 s throttling."""
    options: dict[str, object] = {"seconds_between_requests": 0, "seconds_between_writes": 0, "per_page": 100}
    options.update(kwargs)
    return Github(base_url=gh.api_url, auth=Auth.Token("t"), **options)  # type: ignore[arg-type]


@pytest.fixture
def g(gh: GitHubTestServer) -> Iterator[Github]:
    with client(gh) as github:
        yield github


def make_annotations(count: int) -> list[dict[str, str | int]]:
    return [
        {"path": "src/a.py", "start_line": i + 1, "end_line": i + 1, "annotation_level": "warning", "message": f"m{i}"}
        for i in range(count)
    ]


def test_every_described_operation_has_a_handler() -> None:
    assert {op for _, _, op in operations()} == set(HANDLERS)


def test_repo_and_fork_pull(g: Github, gh: GitHubTestServer) -> None:
    repo = g.get_repo(REPO)
    pull = repo.get_pull(7)
    assert (repo.default_branch, repo.id) == ("main", gh.repo(REPO).id)
    assert (pull.head.sha, pull.head.ref, pull.base.ref) == ("a" * 40, "fix", "main")
    assert pull.head.repo.full_name == "contrib/app" and pull.head.repo.fork
    assert pull.base.repo.full_name == REPO
    assert [r.path for r in gh.api_requests()] == ["/repos/octo/app", "/repos/octo/app/pulls/7"]


def test_comments_are_paged_through_link_headers(g: Github, gh: GitHubTestServer) -> None:
    for i in range(250):
        gh.add_comment(REPO, 7, f"comment {i}", user="someone")
    comments = list(g.get_repo(REPO).get_pull(7).get_issue_comments())
    assert [c.body for c in comments] == [f"comment {i}" for i in range(250)]
    pages = gh.api_requests("GET", r"/comments$")
    # PyGithub asks for per_page=100, then follows rel="next" verbatim: GitHub's
    # links address the repository by id.
    assert [r.path for r in pages] == ["/repos/octo/app/issues/7/comments"] + [
        f"/repositories/{gh.repo(REPO).id}/issues/7/comments"
    ] * 2
    assert [r.query.get("page") for r in pages] == [None, "2", "3"]


def test_link_header_is_formatted_like_github(gh: GitHubTestServer) -> None:
    for i in range(250):
        gh.add_comment(REPO, 7, f"c{i}")
    url = f"{gh.api_url}/repos/{REPO}/issues/7/comments?per_page=100&page=2"
    response = requests.get(url, headers={"Authorization": "token t"}, timeout=5)
    page = f"{gh.api_url}/repositories/{gh.repo(REPO).id}/issues/7/comments?per_page=100&page="
    assert response.headers["Link"] == (
        f'<{page}1>; rel="prev", <{page}3>; rel="next", <{page}3>; rel="last", <{page}1>; rel="first"'
    )
    assert len(response.json()) == 100
    assert response.headers["X-RateLimit-Limit"] == "1000"


def test_comment_create_get_edit_delete(g: Github, gh: GitHubTestServer) -> None:
    pull = g.get_repo(REPO).get_pull(7)
    created = pull.create_issue_comment("<!-- diagbot --> first")
    assert created.user.login == "github-actions[bot]" and created.user.type == "Bot"
    assert pull.get_issue_comment(created.id).body == "<!-- diagbot --> first"
    created.edit("<!-- diagbot --> second")
    assert gh.comments[created.id].body == "<!-- diagbot --> second"
    created.delete()
    assert created.id not in gh.comments


def test_comment_over_65536_characters_is_rejected(g: Github) -> None:
    with pytest.raises(GithubException) as caught:
        g.get_repo(REPO).get_pull(7).create_issue_comment("x" * 65537)
    assert caught.value.status == 422
    assert "Body is too long" in caught.value.data["errors"][0]["message"]


def test_check_run_annotations_accumulate(g: Github, gh: GitHubTestServer) -> None:
    repo = g.get_repo(REPO)
    output: CheckOutput = {"title": "diagbot", "summary": "3 regressions", "annotations": make_annotations(50)}
    check = repo.create_check_run("diagbot", head_sha="a" * 40, status="in_progress", output=output)
    assert check.conclusion is None
    check.edit(
        conclusion="failure", output={"title": "diagbot", "summary": "done", "annotations": make_annotations(20)}
    )
    fetched = repo.get_check_run(check.id)
    assert (fetched.status, fetched.conclusion, fetched.output.summary) == ("completed", "failure", "done")
    assert fetched.output.annotations_count == 70 == len(gh.check_runs[check.id].annotations)


def test_more_than_50_annotations_is_a_violation(g: Github, gh: GitHubTestServer) -> None:
    output: CheckOutput = {"title": "t", "summary": "s", "annotations": make_annotations(51)}
    with pytest.raises(GithubException) as caught:
        g.get_repo(REPO).create_check_run("diagbot", head_sha="a" * 40, output=output)
    assert caught.value.status == 422
    assert any("is too long" in v for v in gh.violations)
    gh.violations.clear()


def test_list_artifacts_by_name_and_download_through_redirect(g: Github, gh: GitHubTestServer) -> None:
    old = gh.add_run(REPO, created_at=BASE)
    new = gh.add_run(REPO, created_at=BASE + timedelta(hours=1))
    older = gh.add_artifact(old.id, "report", b"old", created_at=BASE)
    wanted = gh.add_artifact(new.id, "report", b"PK\x03\x04new", created_at=BASE + timedelta(hours=1))
    gh.add_artifact(new.id, "other", b"x")

    found = list(g.get_repo(REPO).get_artifacts(name="report"))
    assert [a.id for a in found] == [wanted.id, older.id]  # newest first
    # PyGithub 2.10 has no Artifact.download(): ask for the redirect, then fetch
    # the signed URL with a fresh, unauthenticated request.
    status, headers, _ = g.requester.requestJson("GET", found[0].archive_download_url)
    assert status == 302 and headers["location"].startswith(gh.blob_url + "/")
    assert requests.get(headers["location"], timeout=5).content == b"PK\x03\x04new"
    blob = [r for r in gh.requests if r.server == "blob"]
    assert len(blob) == 1 and "authorization" not in blob[0].headers

    leaked = requests.get(headers["location"], headers={"Authorization": "token t"}, timeout=5)
    assert leaked.status_code == 403 and b"AuthenticationFailed" in leaked.content
    # requests drops Authorization when a redirect changes host, so this works too.
    followed = requests.get(found[0].archive_download_url, headers={"Authorization": "token t"}, timeout=5)
    assert followed.content == b"PK\x03\x04new"


def test_expired_artifact_gives_410(g: Github, gh: GitHubTestServer) -> None:
    art = gh.add_artifact(gh.add_run(REPO).id, "report", b"gone", expired=True)
    assert g.get_repo(REPO).get_artifact(art.id).expired
    status, _, body = g.requester.requestJson("GET", f"/repos/{REPO}/actions/artifacts/{art.id}/zip")
    assert status == 410 and "Artifact has expired" in body


def test_signed_blob_url_expires_and_cannot_be_altered(gh: GitHubTestServer) -> None:
    art = gh.add_artifact(gh.add_run(REPO).id, "report", b"data")
    assert requests.get(gh.signed_blob_url(art.id), timeout=5).status_code == 200
    tampered = gh.signed_blob_url(art.id).replace(f"/{art.id}.zip", f"/{art.id + 1}.zip")
    assert requests.get(tampered, timeout=5).status_code == 403
    gh.blob_url_ttl = 0
    assert requests.get(gh.signed_blob_url(art.id), timeout=5).status_code == 403


def test_workflow_runs_filters_and_order(gh: GitHubTestServer) -> None:
    def run(hours: int, **kwargs: object) -> int:
        return gh.add_run(REPO, created_at=BASE + timedelta(hours=hours), **kwargs).id  # type: ignore[arg-type]

    ok_old, ok_new = run(0), run(2)
    run(3, conclusion="failure")
    run(4, event="pull_request", head_branch="fix")
    run(5, workflow="lint.yml")
    run(6, head_repo="contrib/app", event="pull_request")  # a fork's run on its own "main"
    # lazy=True: otherwise get_workflow() would GET /actions/workflows/ci.yml,
    # an endpoint outside the description.
    with client(gh, lazy=True) as g:
        repo = g.get_repo(REPO)
        runs = repo.get_workflow("ci.yml").get_runs(branch="main", event="push", status="success")
        assert [r.id for r in runs] == [ok_new, ok_old]
        assert runs[0].head_repository.full_name == REPO
        # PyGithub's annotation says Branch, but it accepts (and documents) a str.
        all_main = repo.get_workflow_runs(branch="main")  # type: ignore[arg-type]
        assert all_main.totalCount == 5
    assert gh.api_requests()[0].path == f"/repos/{REPO}/actions/workflows/ci.yml/runs"


def test_undescribed_endpoint_is_a_violation(g: Github, gh: GitHubTestServer) -> None:
    with pytest.raises(UnknownObjectException):
        g.get_repo(REPO).get_workflow("ci.yml")  # lazy=False fetches the workflow itself
    assert gh.violations and "not in the OpenAPI description" in gh.violations[0]
    gh.violations.clear()


def test_commit_status(gh: GitHubTestServer) -> None:
    with client(gh, lazy=True) as g:
        commit = g.get_repo(REPO).get_commit("a" * 40)  # lazy: no GET /commits/{sha}
        made = commit.create_status("failure", description="2 regressions", context="diagbot")
        assert made.creator.login == "github-actions[bot]"
        with pytest.raises(GithubException) as caught:
            commit.create_status("failure", description="x" * 141, context="diagbot")
    assert caught.value.status == 422
    assert [(s.sha, s.state, s.context) for s in gh.statuses] == [("a" * 40, "failure", "diagbot")]


def test_fault_injected_once_is_retried_then_cleared(g: Github, gh: GitHubTestServer) -> None:
    fault = gh.inject("GET", r"/pulls/7$", 502)
    repo = g.get_repo(REPO)
    assert repo.get_pull(7).number == 7  # PyGithub's GithubRetry retries 5xx at once
    assert (fault.remaining, fault.hits) == (0, 1)
    assert len(gh.api_requests("GET", r"/pulls/7$")) == 2
    repo.get_pull(7)
    assert len(gh.api_requests("GET", r"/pulls/7$")) == 3


def test_secondary_rate_limit_is_retried_after_retry_after(g: Github, gh: GitHubTestServer) -> None:
    message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
    gh.inject("POST", r"/comments$", 403, {"message": message}, {"Retry-After": "0"})
    g.get_repo(REPO).get_pull(7).create_issue_comment("hello")
    assert len(gh.api_requests("POST")) == 2 and len(gh.comments) == 1


def test_fork_token_cannot_comment(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("POST", r"/issues/\d+/comments$", 403, {"message": "Resource not accessible by integration"})
    pull = g.get_repo(REPO).get_pull(7)
    with pytest.raises(GithubException) as caught:
        pull.create_issue_comment("hello")
    assert caught.value.status == 403 and not gh.comments
    assert len(gh.api_requests("POST")) == 1  # this 403 is not retried
    pull.create_issue_comment("hello")
    assert len(gh.comments) == 1


def test_schema_violating_request_is_recorded(g: Github, gh: GitHubTestServer) -> None:
    with pytest.raises(GithubException) as caught:
        g.requester.requestJsonAndCheck("POST", f"/repos/{REPO}/check-runs", input={"head_sha": "a" * 40})
    assert caught.value.status == 422
    assert gh.violations == [
        f"POST /repos/{REPO}/check-runs: request: InvalidRequestBody; <root>: 'name' is a required property"
    ]
    with pytest.raises(AssertionError, match="'name' is a required property"):
        gh.assert_no_violations()
    gh.violations.clear()


def test_bad_response_shape_is_recorded(g: Github, gh: GitHubTestServer) -> None:
    art = gh.add_artifact(gh.add_run(REPO).id, "report", b"x")
    art.size = "12"  # type: ignore[assignment]  # wrong on purpose
    g.get_repo(REPO).get_artifact(art.id)
    assert any("size_in_bytes: '12' is not of type 'integer'" in v for v in gh.violations)
    gh.violations.clear()


def test_authentication_is_required(gh: GitHubTestServer) -> None:
    url = f"{gh.api_url}/repos/{REPO}"
    assert requests.get(url, timeout=5).status_code == 401
    assert requests.get(url, headers={"Authorization": "Bearer t"}, timeout=5).status_code == 200
