"""`mode: comment`: relaying a fork PR's downloaded (untrusted) report folder, against the loopback GitHub server."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diagbot.action import bot, relay
from diagbot.action.settings import Settings
from diagbot.core.report import dump_model
from diagbot.github.client import PyGithubPort, make_client
from diagbot.kinds.trace.diff import diff_trace
from diagbot.kinds.trace.report import CaseResult, build_report
from tests.github_server import GitHubTestServer

REPO = "octo/app"
HEAD, OTHER = "a" * 40, "d" * 40
TOKEN = "ghs_relaytoken0123456789"
MARKER = "<!-- diagbot:diagnosis -->"
HOSTILE = "@octocat <img src=x onerror=alert(1)> | fixes #12"


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer(token=TOKEN) as server:
        server.add_repo(REPO, id=1001)
        server.add_pull(REPO, 7, head_sha=HEAD, head_repo="fork/app", base_ref="main", base_sha="b" * 40)
        yield server


def result(case_id: str, passed: bool = True) -> CaseResult:
    return CaseResult(
        case_id=case_id,
        title=case_id,
        passed=passed,
        failed_checks=[] if passed else [f"keyword_coverage: {case_id}"],
        verdict="PASS",
        tool_call_count=5,
        duration_ms=900,
    )


def write_artifact(
    ws: Path, record: dict[str, Any] | None = None, before: bool = True, after: bool = True, case: str = "case-1"
) -> Path:
    """What the evaluating run leaves in the report folder (and download-artifact puts back)."""
    folder = ws / "diagbot-report"
    (folder / "reports").mkdir(parents=True)
    (folder / "diff").mkdir()
    current = build_report([result(case, after), result("case-2")])
    (folder / "reports" / "diagnosis.json").write_text(dump_model(current))
    diff = diff_trace(build_report([result(case, before), result("case-2")]), current)
    (folder / "diff" / "diagnosis.json").write_text(dump_model(diff))
    (folder / "comment.md").write_text("@everyone forged comment.md, must never be posted\n")
    pr = {"repository": REPO, "number": 7, "headSha": HEAD, "marker": MARKER, "commentMode": "update"}
    pr.update(record or {})
    (folder / "pr.json").write_text(json.dumps(pr))
    return folder


def settings(gh: GitHubTestServer, ws: Path, **inputs: str) -> Settings:
    values = {
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_MODE": "comment",
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": "workflow_run",
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(ws / "output"),
        "GITHUB_STEP_SUMMARY": str(ws / "summary"),
        **{f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()},
    }
    return Settings.from_env(values)


def relay_run(gh: GitHubTestServer, ws: Path, **inputs: str) -> tuple[int, str]:
    out = io.StringIO()
    github = make_client(gh.api_url, TOKEN, max_wait_seconds=1)
    try:
        code = bot.run(
            settings(gh, ws, **inputs), PyGithubPort(github, REPO), out=out
        )  # through the dispatch, as entrypoint does
    finally:
        github.close()
    return code, out.getvalue()


def test_happy_path_posts_one_comment_and_a_check_run_then_updates_it(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path)
    first, log = relay_run(gh, tmp_path)
    assert first == 0, log
    second, log = relay_run(gh, tmp_path)
    assert second == 0, log
    [comment] = gh.comments.values()
    assert comment.body.startswith(MARKER) and "forged" not in comment.body
    assert "no regressions" in comment.body and "the evaluating run" in comment.body
    assert [(c.head_sha, c.conclusion, c.name) for c in gh.check_runs.values()] == [
        (HEAD, "success", "diagbot (diagnosis)")
    ] * 2
    assert "has-regression<<" in (tmp_path / "output").read_text()
    assert "::error::" not in log
    gh.assert_no_violations()


def test_regression_fails_the_check_run(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path, before=True, after=False)
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure"
    [comment] = gh.comments.values()
    assert "regression" in comment.body
    gh.assert_no_violations()


def test_no_reports_is_neutral(gh: GitHubTestServer, tmp_path: Path) -> None:
    folder = tmp_path / "diagbot-report"
    folder.mkdir()
    (folder / "pr.json").write_text(json.dumps({"number": 7, "headSha": HEAD, "marker": MARKER}))
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    assert [c.conclusion for c in gh.check_runs.values()] == ["neutral"]
    assert "no baseline" in next(iter(gh.comments.values())).body
    gh.assert_no_violations()


def test_head_sha_mismatch_posts_nothing(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path, {"headSha": OTHER})
    code, log = relay_run(gh, tmp_path)
    assert code == 2
    assert "::error::" in log and "stale or forged" in log and OTHER in log
    assert not gh.comments and not gh.check_runs
    gh.assert_no_violations()


def test_workflow_run_head_sha_must_match_the_artifact(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path)
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"workflow_run": {"id": 99, "head_sha": OTHER}}))
    out = io.StringIO()
    with make_client(gh.api_url, TOKEN, max_wait_seconds=1) as github:
        code = relay.run(
            settings(gh, tmp_path).model_copy(update={"event_path": event}), PyGithubPort(github, REPO), out
        )
    assert code == 2 and "forged" in out.getvalue()
    assert not gh.comments and not gh.check_runs and not gh.api_requests()
    gh.assert_no_violations()


FORK_RUN = {"head_branch": "feature", "head_repository": {"full_name": "fork/app"}, "pull_requests": []}


def _relay_for(gh: GitHubTestServer, ws: Path, workflow_run: dict[str, Any], **inputs: str) -> tuple[int, str]:
    """The relay, on the `workflow_run` event of run 5555 at HEAD (`workflow_run`'s fields beside), with `inputs`."""
    event = ws / "event.json"
    event.write_text(
        json.dumps({"action": "completed", "workflow_run": {"id": 5555, "head_sha": HEAD, **workflow_run}})
    )
    out = io.StringIO()
    with make_client(gh.api_url, TOKEN, max_wait_seconds=1) as github:
        given = settings(gh, ws, **inputs).model_copy(update={"event_path": event})
        code = relay.run(given, PyGithubPort(github, REPO), out)
    return code, out.getvalue()


def test_another_forks_run_at_the_same_commit_cannot_post_on_this_pull_request(
    gh: GitHubTestServer, tmp_path: Path
) -> None:
    """The relay checked only the head sha: an attacker who pushed the victim's commit to their own fork, opened
    #9 and had its run upload a passing pr.json naming #7 got a success check and comment on #7."""
    gh.add_pull(REPO, 9, head_sha=HEAD, head_ref="evil", head_repo="attacker/app", base_ref="main")
    write_artifact(tmp_path)  # names #7, whose head is fork/app's `feature`
    code, log = _relay_for(gh, tmp_path, {"head_branch": "evil", "head_repository": {"full_name": "attacker/app"},
                                          "pull_requests": []})  # fmt: skip
    assert code == 2
    assert (
        "the artifact names pull request #7, but the run that uploaded it is not that pull request's (it ran in "
        "attacker/app, but #7's head is in fork/app; it ran on branch evil, but #7's head is feature): a forged "
        "artifact; nothing was posted"
    ) in log
    assert not gh.comments and not gh.check_runs
    code, log = _relay_for(gh, tmp_path, {"head_branch": "feature", "head_repository": {"full_name": "fork/app"},
                                          "pull_requests": [{"number": 9}]})  # fmt: skip
    assert code == 2 and "its pull requests are #9" in log
    code, log = _relay_for(gh, tmp_path, {"head_branch": "feature", "head_repository": {"full_name": "Fork/App"},
                                          "pull_requests": []})  # fmt: skip
    assert code == 0, log
    assert [c.issue_number for c in gh.comments.values()] == [7]
    gh.assert_no_violations()


@pytest.mark.parametrize("conclusion", ["failure", "cancelled", "timed_out"])
def test_a_passing_artifact_of_a_run_that_did_not_succeed_fails_the_check(
    gh: GitHubTestServer, tmp_path: Path, conclusion: str
) -> None:
    """A fork's run stopped early (exit 2 on a broken diagbot.yml) and uploaded the passing pr.json and reports
    the pull request had committed; the relay, told by GitHub that the run failed, posted a success."""
    write_artifact(tmp_path)
    code, log = _relay_for(gh, tmp_path, {**FORK_RUN, "conclusion": conclusion})
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure"
    assert (
        f"the evaluating workflow run (run 5555) ended as {conclusion}, though its artifact passes the gate that run "
        "recorded: another job or step of it failed, or it stopped before writing what its artifact holds, so the "
        "artifact is not taken as passing; look at that run, and rerun it"
    ) in next(iter(gh.comments.values())).body.replace("\\_", "_")


def test_a_regression_of_a_failed_run_is_still_told_as_a_regression(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path, before=True, after=False)
    code, log = _relay_for(gh, tmp_path, {**FORK_RUN, "conclusion": "failure"})
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure" and "regression" in (check.output_title or "")
    assert "ended as failure" not in next(iter(gh.comments.values())).body


def test_the_relay_s_own_gate_inputs_still_win_over_a_run_that_failed_on_a_regression(
    gh: GitHubTestServer, tmp_path: Path
) -> None:
    """The evaluating run failed on its regression (its recorded gate fails on one), and the relay step sets
    fail-on-regression: false, which wins as the README says: no "did not succeed" problem is made of that."""
    write_artifact(tmp_path, before=True, after=False)
    code, log = _relay_for(gh, tmp_path, {**FORK_RUN, "conclusion": "failure"}, fail_on_regression="false")
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "success"
    assert "ended as failure" not in next(iter(gh.comments.values())).body


def test_a_report_dir_with_a_part_too_long_for_a_file_name_is_named(gh: GitHubTestServer, tmp_path: Path) -> None:
    code, log = relay_run(gh, tmp_path, report_dir="a" * 300)
    assert code == 2 and "cannot be looked at (File name too long); set report-dir to a plain path" in log
    assert "failed unexpectedly" not in log and not gh.comments


def test_closed_pull_request_gets_nothing(gh: GitHubTestServer, tmp_path: Path) -> None:
    gh.add_pull(REPO, 8, head_sha=HEAD, state="closed")
    write_artifact(tmp_path, {"number": 8})
    code, log = relay_run(gh, tmp_path)
    assert code == 0 and "::notice::" in log
    assert not gh.comments and not gh.check_runs
    gh.assert_no_violations()


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        ({"marker": "<!-- diagbot:x --><img src=x>"}, "field 'marker'"),
        ({"marker": "<!-- other:diagnosis -->"}, "field 'marker'"),
        ({"number": "7"}, "field 'number'"),
        ({"number": 0}, "field 'number'"),
        ({"headSha": "HEAD"}, "field 'headSha'"),
        ({"number": None}, "field 'number'"),
        ({"repository": "evil/app"}, "names repository evil/app"),
        ({"baseline": {"source": "artifact", "runId": "1"}}, "field 'baseline.runId'"),
        # the comment's bound on a baseline's age, which the record lacked: "failed unexpectedly"
        ({"baseline": {"source": "artifact", "ageDays": 2e6}}, "field 'baseline.ageDays'"),
    ],
)
def test_forged_pr_json_is_refused_with_a_clear_message(
    gh: GitHubTestServer, tmp_path: Path, record: dict[str, Any], expected: str
) -> None:
    write_artifact(tmp_path, record)
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and expected in log, log
    assert "pr.json" in log and "Traceback" not in log
    assert not gh.comments and not gh.check_runs and not gh.api_requests()
    gh.assert_no_violations()


def test_huge_or_odd_files_are_refused(gh: GitHubTestServer, tmp_path: Path) -> None:
    folder = write_artifact(tmp_path)
    (folder / "pr.json").write_bytes(b" " * (relay.PR_JSON_BYTES + 1))
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and "over the 1,048,576-byte limit" in log
    (folder / "pr.json").unlink()
    (folder / "pr.json").symlink_to("/etc/hostname")
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and "symbolic link" in log
    (folder / "pr.json").unlink()
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and "pr.json not found" in log
    assert not gh.comments and not gh.check_runs
    gh.assert_no_violations()


def test_reports_over_the_artifact_budget_are_refused_before_they_are_parsed(
    gh: GitHubTestServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget was checked after each report and its diff were parsed: a fork's artifact could make the relay
    build objects from 256 MiB and more of JSON, ten times that in memory, before refusing it."""
    folder = write_artifact(tmp_path)
    size = len((folder / "reports" / "diagnosis.json").read_bytes())
    monkeypatch.setattr(relay, "TOTAL_BYTES", size - 1)
    parsed: list[str] = []
    monkeypatch.setattr(relay, "parse_any_report", lambda text, where: parsed.append(where))
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and f"the reports are larger than the {size - 1:,} bytes allowed" in log
    assert parsed == []
    assert not gh.comments and not gh.check_runs


def test_forged_report_is_refused(gh: GitHubTestServer, tmp_path: Path) -> None:
    folder = write_artifact(tmp_path)
    (folder / "reports" / "diagnosis.json").write_text(json.dumps({"kind": "x" * 100_000}))
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and "not a diagbot report" in log and len(log) < 5_000
    (folder / "reports" / "diagnosis.json").write_text(json.dumps({"totalCases": "many", "results": []}))
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and "diagnosis.json" in log
    assert not gh.comments and not gh.check_runs
    gh.assert_no_violations()


def test_hostile_case_text_is_escaped_in_the_comment(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(
        tmp_path,
        {"baseline": {"source": "artifact", "branch": "@octocat <b>", "runId": 5, "sha": "c" * 40}},
        after=False,
        case=HOSTILE,
    )
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    [comment] = gh.comments.values()
    assert "@octocat" not in comment.body and "<img" not in comment.body and "#12" not in comment.body
    assert "<b>" not in comment.body and "\\|" in comment.body
    assert f"https://github.com/{REPO}/actions/runs/5" in comment.body  # rebuilt from runId, never taken as a URL
    gh.assert_no_violations()


def test_403_on_comment_is_a_warning(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path)
    gh.inject("POST", r"/issues/7/comments$", 403)
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    assert "::warning::" in log and "::error::" not in log
    assert not gh.comments and [c.conclusion for c in gh.check_runs.values()] == ["success"]
    assert "diagbot" in (tmp_path / "summary").read_text()  # the comment is in the job summary instead
    gh.assert_no_violations()


def test_the_relay_gates_with_the_evaluating_runs_settings(gh: GitHubTestServer, tmp_path: Path) -> None:
    """Fault 6: a fork PR whose diagbot.yml says fail-on-regression: false got a failing check from the relay."""
    write_artifact(tmp_path, {"gate": {"failOnRegression": False, "requireBaseline": False}}, before=True, after=False)
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert (check.conclusion, check.output_title) == ("success", "2 regressions (not gating)")
    gh.assert_no_violations()


def test_the_relay_inputs_override_the_recorded_gate(gh: GitHubTestServer, tmp_path: Path) -> None:
    write_artifact(tmp_path, {"gate": {"failOnRegression": False}}, before=True, after=False)
    code, log = relay_run(gh, tmp_path, fail_on_regression="true")
    assert code == 0, log
    assert [c.conclusion for c in gh.check_runs.values()] == ["failure"]
    gh.assert_no_violations()


def test_the_relay_fails_a_missing_required_baseline(gh: GitHubTestServer, tmp_path: Path) -> None:
    folder = write_artifact(tmp_path, {"gate": {"requireBaseline": True}})
    (folder / "diff" / "diagnosis.json").unlink()
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert (check.conclusion, check.output_title) == (
        "failure",
        "no baseline for diagnosis, and require-baseline is set",
    )
    gh.assert_no_violations()


@pytest.mark.parametrize("recorded", [{"baselines": {"diagnosis": {"cases": 2, "gating": 2}}}, {}],
                         ids=["counts-in-pr-json", "counts-from-the-diff"])  # fmt: skip
def test_the_relay_fails_a_suite_emptied_of_its_baseline(
    gh: GitHubTestServer, tmp_path: Path, recorded: dict[str, Any]
) -> None:
    """The relay saw no baseline report, so a suite emptied of its cases was neutral ("✅ diagbot: no regressions")
    there and failed in the evaluating run."""
    folder = write_artifact(tmp_path, recorded)
    empty = build_report([])
    (folder / "reports" / "diagnosis.json").write_text(dump_model(empty))
    diff = diff_trace(build_report([result("case-1"), result("case-2")]), empty)
    (folder / "diff" / "diagnosis.json").write_text(dump_model(diff))
    code, log = relay_run(gh, tmp_path)
    assert code == 0, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure"
    assert check.output_title.startswith("suite diagnosis has no cases, and its baseline had 2"), check.output_title
    [comment] = gh.comments.values()
    assert "### ❌ diagbot: suite diagnosis has no cases, and its baseline had 2" in comment.body
    gh.assert_no_violations()
