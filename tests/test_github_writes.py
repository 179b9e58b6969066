"""Writes under faults: a comment or check run whose write failed with an unknown effect is read back, never doubled.

GitHub may apply a POST and still answer 502, or the connection may break after the request went out. Writes are
never blindly resent; instead the client looks for what it wrote (the comment by its hidden marker and our login,
the check run by its `external_id`) and writes once more only if it is absent. The test server's
`inject(..., apply=True)` serves the request and then fails it anyway; `drop=True` hangs up without an answer.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.test_relay as relay_case
from diagbot.action import bot
from diagbot.action.settings import Settings
from diagbot.github.client import CannotComment, GitHubUnavailable, PyGithubPort, make_client
from tests.github_server import GitHubTestServer

REPO = "octo/app"
HEAD, BASE, NEWER, OLDER = "a" * 40, "b" * 40, "e" * 40, "1" * 40  # HEAD is what tests/events/pull_request.json names
TOKEN = "ghs_writestoken0123456789"
AUTHOR = "github-actions[bot]"
MARKER = "<!-- diagbot:diagnosis -->"
CHECK = "diagbot (diagnosis)"
COMMENTS = r"/issues/7/comments$"
EVENTS = Path(__file__).resolve().parent / "events"


def head_line(sha: str) -> str:
    return f"<!-- diagbot-head: {sha} -->"


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer(token=TOKEN) as server:
        server.add_repo(REPO, id=1001)
        server.add_pull(REPO, 7, head_sha=HEAD, head_ref="feature", base_ref="main", base_sha=BASE)
        yield server


@pytest.fixture
def port(gh: GitHubTestServer) -> Iterator[PyGithubPort]:
    github = make_client(gh.api_url, TOKEN, max_wait_seconds=2)
    yield PyGithubPort(github, REPO)
    github.close()


# --- the comment, through the port ----------------------------------------------------------------------------------


def test_a_comment_posted_despite_a_502_is_found_not_posted_again(gh: GitHubTestServer, port: PyGithubPort) -> None:
    gh.inject("POST", COMMENTS, 502, apply=True)
    url = port.upsert_comment(7, MARKER, f"{MARKER}\nfresh", "update", AUTHOR)
    [comment] = gh.comments.values()
    assert url is not None and url.endswith(str(comment.id)) and comment.body.endswith("fresh")
    assert len(gh.api_requests("POST")) == 1
    gh.assert_no_violations()


def test_a_comment_lost_to_a_502_is_posted_once_more(gh: GitHubTestServer, port: PyGithubPort) -> None:
    gh.inject("POST", COMMENTS, 502)
    url = port.upsert_comment(7, MARKER, f"{MARKER}\nfresh", "update", AUTHOR)
    [comment] = gh.comments.values()
    assert url is not None and url.endswith(str(comment.id))
    assert len(gh.api_requests("POST")) == 2
    gh.assert_no_violations()


def test_a_connection_dropped_after_posting_leaves_one_comment(gh: GitHubTestServer, port: PyGithubPort) -> None:
    gh.inject("POST", COMMENTS, 502, apply=True, drop=True)
    port.upsert_comment(7, MARKER, f"{MARKER}\nfresh", "update", AUTHOR)
    assert len(gh.comments) == 1 and len(gh.api_requests("POST")) == 1
    gh.assert_no_violations()


def test_mode_new_reads_back_only_its_own_comment(gh: GitHubTestServer, port: PyGithubPort) -> None:
    gh.add_comment(REPO, 7, f"{MARKER}\nan earlier run")
    gh.inject("POST", COMMENTS, 502, apply=True)
    port.upsert_comment(7, MARKER, f"{MARKER}\nthis run", "new", AUTHOR)
    assert sorted(c.body for c in gh.comments.values()) == [f"{MARKER}\nan earlier run", f"{MARKER}\nthis run"]
    gh.inject("POST", COMMENTS, 502)  # not applied: the earlier comments are not taken for this one
    port.upsert_comment(7, MARKER, f"{MARKER}\nthe next run", "new", AUTHOR)
    assert len(gh.comments) == 3 and len(gh.api_requests("POST")) == 3
    gh.assert_no_violations()


def test_a_write_that_fails_twice_is_an_error_and_leaves_nothing_doubled(
    gh: GitHubTestServer, port: PyGithubPort
) -> None:
    gh.inject("POST", COMMENTS, 502, times=2)
    with pytest.raises(GitHubUnavailable, match="502"):
        port.upsert_comment(7, MARKER, f"{MARKER}\nfresh", "update", AUTHOR)
    assert not gh.comments and len(gh.api_requests("POST")) == 2  # read back, retried once, never more
    gh.assert_no_violations()


def test_an_edit_applied_despite_a_502_is_not_an_error(gh: GitHubTestServer, port: PyGithubPort) -> None:
    old = gh.add_comment(REPO, 7, f"{MARKER}\nold")
    gh.inject("PATCH", r"/issues/comments/\d+$", 502, apply=True)
    url = port.upsert_comment(7, MARKER, f"{MARKER}\nfresh", "update", AUTHOR)
    assert url is not None and url.endswith(str(old.id))
    assert [c.body for c in gh.comments.values()] == [f"{MARKER}\nfresh"]
    assert len(gh.api_requests("PATCH")) == 1
    gh.assert_no_violations()


def test_the_head_line_fits_a_comment_at_githubs_limit(gh: GitHubTestServer, port: PyGithubPort) -> None:
    body = f"{MARKER}\n" + "x" * (65_536 - len(MARKER) - 1)
    port.upsert_comment(7, MARKER, body, "update", AUTHOR, head_sha=HEAD)
    [comment] = gh.comments.values()
    assert len(comment.body) <= 65_536 and comment.body.splitlines()[:2] == [MARKER, head_line(HEAD)]
    gh.assert_no_violations()


# --- the check run, through the port --------------------------------------------------------------------------------


def test_a_check_run_created_despite_a_502_is_found_by_external_id(gh: GitHubTestServer, port: PyGithubPort) -> None:
    gh.inject("POST", r"/check-runs$", 502, apply=True)
    url = port.create_check_run(HEAD, CHECK, "failure", "1 regression", "sum", [])
    [check] = gh.check_runs.values()
    assert url.endswith(f"/runs/{check.id}") and check.conclusion == "failure" and check.external_id
    assert len(gh.api_requests("POST")) == 1
    [lookup] = gh.api_requests("GET", rf"/commits/{HEAD}/check-runs$")
    assert lookup.query.get("filter") == "all"  # `latest` would hide all but one run of each name
    gh.assert_no_violations()


def test_a_check_run_lost_to_a_502_is_created_once_more(gh: GitHubTestServer, port: PyGithubPort) -> None:
    earlier = gh.add_check_run(REPO, CHECK, HEAD, status="completed", conclusion="success")  # a previous run's
    earlier.external_id = "diagbot:diagnosis:" + HEAD + ":41:0000"
    gh.inject("POST", r"/check-runs$", 502)
    port.create_check_run(HEAD, CHECK, "failure", "1 regression", "sum", [])
    assert sorted(c.conclusion or "" for c in gh.check_runs.values()) == ["failure", "success"]
    assert len(gh.api_requests("POST")) == 2
    gh.assert_no_violations()


def test_an_annotation_batch_applied_despite_a_502_is_not_sent_again(gh: GitHubTestServer, port: PyGithubPort) -> None:
    notes = [
        {"path": "cases/c.json", "start_line": i + 1, "end_line": i + 1, "annotation_level": "failure", "message": "m"}
        for i in range(120)
    ]
    gh.inject("PATCH", r"/check-runs/\d+$", 502, apply=True)
    port.create_check_run(HEAD, CHECK, "failure", "1 regression", "sum", notes)
    [check] = gh.check_runs.values()
    assert len(check.annotations) == 120
    gh.assert_no_violations()


# --- through the bot: the exit code stays the gate's ----------------------------------------------------------------


def bot_run(gh: GitHubTestServer, ws: Path, **inputs: str) -> tuple[int, str]:
    """One pull_request run for HEAD, in process; no baseline exists, so `require_baseline=true` gates with 1."""
    env = {
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_MAX-WAIT-SECONDS": "2",
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(EVENTS / "pull_request.json"),
        "GITHUB_SHA": "c" * 40,
        "GITHUB_REF": "refs/pull/7/merge",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(ws.parent / "output"),
        "GITHUB_STEP_SUMMARY": str(ws.parent / "summary"),
        **{f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()},
    }
    out = io.StringIO()
    github = make_client(gh.api_url, TOKEN, max_wait_seconds=2)
    try:
        code = bot.run(Settings.from_env(env), PyGithubPort(github, REPO), out=out)
    finally:
        github.close()
    return code, out.getvalue()


def annotations(log: str, level: str) -> list[str]:
    return [line for line in log.splitlines() if line.startswith(f"::{level}")]


@pytest.mark.parametrize("applied", [True, False], ids=["applied", "lost"])
def test_a_502_on_the_comment_keeps_the_gates_exit_code_and_leaves_one_comment(
    gh: GitHubTestServer, workspace: Path, applied: bool
) -> None:
    gh.inject("POST", COMMENTS, 502, apply=applied)
    code, log = bot_run(gh, workspace, require_baseline="true")
    assert code == 1, log
    [comment] = gh.comments.values()
    assert comment.body.splitlines()[:2] == [MARKER, head_line(HEAD)]
    assert not any("commenting on" in line for line in annotations(log, "error")), log
    assert len(gh.check_runs) == 1
    gh.assert_no_violations()


def test_a_comment_that_truly_fails_is_an_error_annotation_and_the_exit_code_stays(
    gh: GitHubTestServer, workspace: Path
) -> None:
    gh.inject("POST", COMMENTS, 502, times=2)
    code, log = bot_run(gh, workspace, require_baseline="true")
    assert code == 1, log
    assert not gh.comments and len(gh.api_requests("POST", COMMENTS)) == 2
    assert any("commenting on #7" in line and "502" in line for line in annotations(log, "error")), log
    assert MARKER in (workspace.parent / "summary").read_text()  # the comment went to the job summary instead
    gh.assert_no_violations()


def test_a_403_on_deleting_a_duplicate_is_a_warning_and_the_update_stands(
    gh: GitHubTestServer, workspace: Path
) -> None:
    older = gh.add_comment(REPO, 7, f"{MARKER}\n{head_line(HEAD)}\nolder duplicate", user=AUTHOR)
    newest = gh.add_comment(REPO, 7, f"{MARKER}\n{head_line(HEAD)}\nnewest", user=AUTHOR)
    gh.inject("DELETE", r"/issues/comments/\d+$", 403, {"message": "Resource not accessible by integration"})
    code, log = bot_run(gh, workspace)
    assert code == 0, log
    assert older.id in gh.comments and "newest" not in gh.comments[newest.id].body  # updated
    warnings = annotations(log, "warning")
    assert any("duplicate" in w and str(older.id) in w for w in warnings), log
    assert not any("may not comment" in w for w in warnings), log
    assert not annotations(log, "error"), log
    assert f"#issuecomment-{newest.id}\n" in (workspace.parent / "output").read_text()  # comment-url: the update
    gh.assert_no_violations()


def test_a_stale_run_does_not_overwrite_a_newer_commits_comment(gh: GitHubTestServer, workspace: Path) -> None:
    gh.pulls[(REPO, 7)].head_sha = NEWER  # pushed while this run (for HEAD) was evaluating
    newer = gh.add_comment(REPO, 7, f"{MARKER}\n{head_line(NEWER)}\nresults for the newer commit")
    code, log = bot_run(gh, workspace, require_baseline="true")
    assert code == 1, log
    assert gh.comments[newer.id].body.endswith("results for the newer commit") and len(gh.comments) == 1
    assert any("a newer commit's results are already posted" in w for w in annotations(log, "warning")), log
    assert [(c.head_sha, c.conclusion) for c in gh.check_runs.values()] == [(HEAD, "failure")]  # its own commit
    assert not gh.api_requests("PATCH", r"/issues/comments/")
    gh.assert_no_violations()


def test_a_comment_of_an_older_commit_is_updated_and_records_the_new_head(
    gh: GitHubTestServer, workspace: Path
) -> None:
    old = gh.add_comment(REPO, 7, f"{MARKER}\n{head_line(OLDER)}\nresults for an older commit")
    code, log = bot_run(gh, workspace)
    assert code == 0, log
    [comment] = gh.comments.values()
    assert comment.id == old.id and comment.body.splitlines()[:2] == [MARKER, head_line(HEAD)]
    assert "older commit" not in comment.body and not annotations(log, "warning"), log
    gh.assert_no_violations()


def test_the_relay_reads_back_a_check_run_created_despite_a_502(tmp_path: Path) -> None:
    with GitHubTestServer(token=relay_case.TOKEN) as gh:
        gh.add_repo(REPO, id=1001)
        gh.add_pull(REPO, 7, head_sha=relay_case.HEAD, head_repo="fork/app", base_ref="main", base_sha=BASE)
        relay_case.write_artifact(tmp_path)
        gh.inject("POST", r"/check-runs$", 502, apply=True)
        gh.inject("POST", COMMENTS, 502, apply=True)
        code, log = relay_case.relay_run(gh, tmp_path)
        assert code == 0, log
        assert len(gh.check_runs) == 1 and len(gh.comments) == 1 and len(gh.api_requests("POST")) == 2
        [comment] = gh.comments.values()
        assert comment.body.splitlines()[:2] == [MARKER, head_line(relay_case.HEAD)]
        gh.assert_no_violations()


def test_cannot_comment_is_still_raised_for_a_403_on_posting(gh: GitHubTestServer, port: PyGithubPort) -> None:
    gh.inject("POST", COMMENTS, 403, {"message": "Resource not accessible by integration"})
    with pytest.raises(CannotComment):
        port.upsert_comment(7, MARKER, f"{MARKER}\nx", "update", AUTHOR, head_sha=HEAD)
    assert len(gh.api_requests("POST")) == 1  # a refusal is known not to have been applied: no read-back, no retry
    gh.assert_no_violations()
