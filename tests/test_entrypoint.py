"""End to end: `python entrypoint.py` as the runner starts it, against the loopback GitHub test server.

The environment is the one a container action gets (`INPUT_GITHUB-TOKEN` with its hyphen, GITHUB_EVENT_PATH to
a real-shaped payload, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY files); assertions are on the server's state.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, made_at
from tests.github_server import GitHubTestServer

REPO = "octo/app"
EVENTS = Path(__file__).resolve().parent / "events"
HEAD, BASE = "a" * 40, "b" * 40
TOKEN = "ghs_testtoken0123456789"


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer(token=TOKEN) as server:
        server.add_repo(REPO, id=1001)
        server.add_pull(REPO, 7, head_sha=HEAD, head_ref="feature", base_ref="main", base_sha=BASE)
        yield server
        server.assert_no_violations()


def run_action(gh: GitHubTestServer, ws: Path, event: str, **inputs: str) -> Result:
    files = ws.parent / "runner"
    files.mkdir(exist_ok=True)
    output, summary = files / "set_output", files / "step_summary"
    output.write_text("")
    summary.write_text("")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(files),
        "GITHUB_ACTIONS": "true",
        "CI": "true",
        "INPUT_GITHUB-TOKEN": TOKEN,
        "INPUT_CONFIG": "",
        "INPUT_BASELINE-ARTIFACT": "",
        "INPUT_COMMENT": "",
        "INPUT_PR-NUMBER": "",
        "INPUT_FAIL-ON-REGRESSION": "",
        "INPUT_MAX-WAIT-SECONDS": "5",
        "GITHUB_API_URL": gh.api_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(EVENTS / f"{event}.json"),
        "GITHUB_SHA": BASE if event == "push" else "c" * 40,
        "GITHUB_REF": "refs/pull/7/merge" if event == "pull_request" else "refs/heads/main",
        "GITHUB_RUN_ID": "4242",
        "GITHUB_WORKSPACE": str(ws),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    env.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    proc = subprocess.run(
        [sys.executable, str(ROOT / "entrypoint.py")], cwd=ws, env=env, capture_output=True, text=True, timeout=120
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert TOKEN not in proc.stdout.replace(f"::add-mask::{TOKEN}", "") + proc.stderr
    return Result(proc.returncode, proc.stdout, proc.stderr, parse_outputs(output.read_text()), summary.read_text())


def parse_outputs(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for match in re.finditer(r"^([\w-]+)<<(\S+)\n(.*?)\n?\2$", text, re.S | re.M):
        values[match[1]] = match[3]
    return values


def upload_baseline(gh: GitHubTestServer, report_dir: Path, sha: str = BASE) -> int:
    """What actions/upload-artifact does with the push run's report folder; a run of another commit than the
    folder's reports were made at has them say that commit, as its own run's would."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(report_dir.rglob("*")):
            if path.is_file():
                name = path.relative_to(report_dir).as_posix()
                data = path.read_bytes()
                archive.writestr(name, made_at(data, sha) if name.startswith("reports/") else data)
    run = gh.add_run(REPO, head_branch="main", head_sha=sha, event="push")
    gh.add_artifact(run.id, "diagbot-report", buffer.getvalue())
    return run.id


def make_baseline(gh: GitHubTestServer, ws: Path, sha: str = BASE) -> int:
    pushed = run_action(gh, ws, "push")
    assert pushed.code == 0, pushed.stdout + pushed.stderr
    run_id = upload_baseline(gh, ws / "diagbot-report", sha)
    shutil.rmtree(ws / "diagbot-report")
    return run_id


def test_push_writes_the_next_baseline_and_never_comments(gh: GitHubTestServer, workspace: Path) -> None:
    result = run_action(gh, workspace, "push")
    assert result.code == 0, result.stdout
    assert (workspace / "diagbot-report" / "reports" / "diagnosis.json").is_file()
    assert not gh.comments and not gh.check_runs
    assert result.outputs["has-regression"] == "false" and result.outputs["baseline-sha"] == ""
    assert "diagbot" in result.summary
    # the previous baseline: the pushed-from commit's runs of main, then main's push and workflow_dispatch runs
    assert [(r.path, r.query.get("head_sha") or r.query["event"]) for r in gh.api_requests()] == [
        (f"/repos/{REPO}/actions/runs", "9" * 40),
        (f"/repos/{REPO}/actions/runs", "push"),
        (f"/repos/{REPO}/actions/runs", "workflow_dispatch"),
    ]


def test_pull_request_twice_leaves_one_comment_and_a_check_run(gh: GitHubTestServer, workspace: Path) -> None:
    run_id = make_baseline(gh, workspace)
    before = len(gh.api_requests())
    first = run_action(gh, workspace, "pull_request")
    between = len(gh.api_requests())
    second = run_action(gh, workspace, "pull_request")
    assert (first.code, second.code) == (0, 0), second.stdout
    [comment] = gh.comments.values()
    assert comment.body.startswith("<!-- diagbot:diagnosis -->")
    assert f"actions/runs/{run_id}" in comment.body  # provenance link
    assert [(c.head_sha, c.conclusion) for c in gh.check_runs.values()] == [(HEAD, "success")] * 2
    assert second.outputs["comment-url"].endswith(str(comment.id))
    assert second.outputs["baseline-sha"] == BASE
    assert second.outputs["has-regression"] == "false" and second.outputs["regression-count"] == "0"
    assert second.outputs["report-dir"] == "diagbot-report"
    assert 0 < float(second.outputs["pass-rate"]) < 1
    pr = json.loads((workspace / "diagbot-report" / "pr.json").read_text())
    assert (pr["number"], pr["headSha"]) == (7, HEAD)
    per_run = [between - before, len(gh.api_requests()) - between]
    print(f"API requests per pull_request run: {per_run}")
    assert max(per_run) <= 9  # the first run lists the comments again after posting, in case another run posted
    assert not any("authorization" in r.headers for r in gh.requests if r.server == "blob")


def test_regression_fails_the_pull_request(gh: GitHubTestServer, workspace: Path) -> None:
    pushed = run_action(gh, workspace, "push")
    assert pushed.code == 0
    report = workspace / "diagbot-report" / "reports" / "diagnosis.json"
    data = json.loads(report.read_text())
    flipped = next(r for r in data["results"] if not r["passed"])
    flipped.update(passed=True, failedChecks=[])
    data["passedCases"] += 1
    data["passRate"] = data["passedCases"] / data["totalCases"]
    report.write_text(json.dumps(data))
    upload_baseline(gh, workspace / "diagbot-report")
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 1, result.stdout
    assert result.outputs["has-regression"] == "true" and int(result.outputs["regression-count"]) >= 1
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure" and check.annotations
    paths = {a["path"] for a in check.annotations}
    assert "cases/diagnosis-cases.json" in paths and "cases/workspace/eo-stage-boundary-001/case.yaml" in paths
    assert all(p == "cases/diagnosis-cases.json" or p.startswith("cases/workspace/") for p in paths)
    trace_lines = {a["start_line"] for a in check.annotations if a["path"] == "cases/diagnosis-cases.json"}
    assert len(trace_lines) > 1  # each failing case points at its own line
    assert run_action(gh, workspace, "pull_request", fail_on_regression="false").code == 0


def test_no_baseline_passes_with_a_note(gh: GitHubTestServer, workspace: Path) -> None:
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 0, result.stdout
    assert len(gh.comments) == 1 and result.outputs["baseline-sha"] == ""
    assert run_action(gh, workspace, "pull_request", require_baseline="true").code == 1


def test_fork_token_cannot_comment_or_check(gh: GitHubTestServer, workspace: Path) -> None:
    denied = {"message": "Resource not accessible by integration"}
    gh.inject("POST", r"/comments$", 403, denied)
    gh.inject("POST", r"/check-runs$", 403, denied)
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 0, result.stdout
    assert result.stdout.count("::warning::") >= 2 and "pull-requests: write" in result.stdout
    assert "<!-- diagbot:diagnosis -->" in result.summary  # the comment is kept for a privileged follow-up
    assert (workspace / "diagbot-report" / "comment.md").is_file()
    assert (workspace / "diagbot-report" / "pr.json").is_file()


def test_workflow_dispatch_with_pr_number_updates_that_pull_request(gh: GitHubTestServer, workspace: Path) -> None:
    make_baseline(gh, workspace)
    assert run_action(gh, workspace, "pull_request").code == 0
    # The dispatch checked out the default branch (GITHUB_SHA), not the PR: refuse, say how, post nothing.
    refused = run_action(gh, workspace, "workflow_dispatch", pr_number="7")
    assert refused.code == 2, refused.stdout
    assert (
        "ref: refs/pull/7/head" in refused.stdout and "posts only results of the commit it evaluated" in refused.stdout
    )
    assert len(gh.comments) == 1 and len(gh.check_runs) == 1
    (workspace / ".git").mkdir()
    (workspace / ".git" / "HEAD").write_text(HEAD + "\n")  # actions/checkout of the PR's head: a detached HEAD
    result = run_action(gh, workspace, "workflow_dispatch", pr_number="7")
    assert result.code == 0, result.stdout
    assert len(gh.comments) == 1
    assert [c.head_sha for c in gh.check_runs.values()] == [HEAD, HEAD]


def test_other_events_and_bad_inputs_exit_2_without_traceback(gh: GitHubTestServer, workspace: Path) -> None:
    result = run_action(gh, workspace, "issues")
    assert result.code == 2 and "::error::" in result.stdout and "'issues' event" in result.stdout
    result = run_action(gh, workspace, "pull_request", comment="sometimes", max_wait_seconds="soon")
    assert result.code == 2
    assert "input 'comment'" in result.stdout and "input 'max-wait-seconds'" in result.stdout
    assert not gh.api_requests()


def test_a_config_problem_quoting_the_pull_requests_text_reaches_the_job_summary_escaped(
    gh: GitHubTestServer, workspace: Path
) -> None:
    """A config key is the pull request's text: quoted in a problem, it must not add a heading, an image, a ping
    or an HTML comment hiding the rest to the job summary."""
    key = (
        '"x\\n\\n### ✅ diagbot: no regressions\\n\\n<img src=\\"https://evil.example/p.png\\"> @octo/security #1'
        '\\n<!--"'
    )
    config = workspace / "diagbot.yml"
    config.write_text(config.read_text() + f"{key}: 1\n", encoding="utf-8")
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 2 and "unknown key" in result.stdout
    heading, *problems = result.summary.strip().split("\n\n")
    assert heading == "### ⛔ diagbot could not run"
    assert all(line.startswith("- ") for line in "\n\n".join(problems).splitlines()), result.summary
    assert "<img" not in result.summary and "<!--" not in result.summary and "@octo" not in result.summary
    assert "\n###" not in result.summary.replace("### ⛔ diagbot could not run", "")
    assert "@&#8203;octo/security #&#8203;1" in result.summary


def test_expired_download_falls_back_to_the_next_candidate(gh: GitHubTestServer, workspace: Path) -> None:
    make_baseline(gh, workspace)  # exact: made from the PR's base sha
    fallback_sha = "e" * 40
    pushed = run_action(gh, workspace, "push")
    assert pushed.code == 0
    upload_baseline(gh, workspace / "diagbot-report", sha=fallback_sha)
    exact = next(a for a in gh.artifacts.values() if gh.runs[a.run_id].head_sha == BASE)
    gh.inject("GET", rf"/artifacts/{exact.id}/zip$", 410, {"message": "Artifact has expired"})
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 0, result.stdout
    assert result.outputs["baseline-sha"] == fallback_sha
    assert "410" in result.stdout and "::warning::" in result.stdout


def zipped(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_hostile_and_broken_baseline_artifacts_are_skipped_with_reasons(gh: GitHubTestServer, workspace: Path) -> None:
    make_baseline(gh, workspace, "c" * 40)  # the older, usable one (not the base sha)
    hostile = {
        "escape": zipped({"../../etc/cron.d/x": b"boom"}),
        "garbage": b"\x00not a zip at all",
        "broken report": zipped({"reports/diagnosis.json": b'{"totalCases": 1}'}),
    }
    for data in hostile.values():
        run = gh.add_run(REPO, head_branch="main", head_sha=BASE, event="push")
        gh.add_artifact(run.id, "diagbot-report", data)
    flaky = gh.inject("GET", r"/actions/runs$", 502)  # a flaky listing is retried
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 0, result.stdout
    assert flaky.hits == 1
    assert result.outputs["baseline-sha"] == "c" * 40
    warnings = [line for line in result.stdout.splitlines() if line.startswith("::warning::")]
    assert any("outside the report folder" in w for w in warnings)
    assert any("neither a zip archive nor a JSON report" in w for w in warnings)
    assert any("passedCases: field required" in w for w in warnings)
    assert not (workspace.parent / "etc").exists()


def test_a_huge_suite_still_posts_one_comment_under_the_limit(gh: GitHubTestServer, workspace: Path) -> None:
    fixture = json.loads((workspace / "fixtures" / "payment-timeout-pool-exhaustion-pass.json").read_text())
    cases = []
    for i in range(3000):
        (workspace / "fixtures" / f"gen-{i}.json").write_text(json.dumps(fixture))
        cases.append(
            {
                "id": f"generated-case-{i:04d}-with-a-long-name",
                "traceFixture": f"gen-{i}.json",
                "expectedRootCauseKeywords": ["connection pool", "absent-keyword"] if i % 2 else ["pool"],
            }
        )
    (workspace / "cases" / "diagnosis-cases.json").write_text(json.dumps(cases))
    (workspace / "diagbot.yml").write_text(
        "suites:\n  - {name: diagnosis, cases: cases/diagnosis-cases.json, fixtures: fixtures}\n"
    )
    result = run_action(gh, workspace, "pull_request")
    assert result.code == 0, result.stdout
    [comment] = gh.comments.values()  # the server refuses bodies over 65,536 characters
    assert len(comment.body) <= 65_536
    assert "left out to fit" in comment.body or "not shown here" in comment.body
    assert len(result.summary.encode()) < 1024 * 1024


def _from_a_fork(gh: GitHubTestServer) -> None:
    """Pull request #7 comes from forker/app, as tests/events/workflow_run.json's evaluating run does."""
    gh.add_pull(REPO, 7, head_sha=HEAD, head_ref="feature", head_repo="forker/app", base_ref="main", base_sha=BASE)


def test_fork_pull_request_then_the_relay_posts_from_its_report_folder(gh: GitHubTestServer, workspace: Path) -> None:
    _from_a_fork(gh)
    run_id = make_baseline(gh, workspace)
    denied = {"message": "Resource not accessible by integration"}
    gh.inject("POST", r"/comments$", 403, denied)
    gh.inject("POST", r"/check-runs$", 403, denied)
    evaluated = run_action(gh, workspace, "pull_request")
    assert evaluated.code == 0 and not gh.comments and not gh.check_runs
    # The companion workflow: a fresh workspace holding only the downloaded artifact, never the PR's code.
    relay_ws = workspace.parent / "relay"
    shutil.copytree(workspace / "diagbot-report", relay_ws / "diagbot-report")
    relayed = run_action(gh, relay_ws, "workflow_run", mode="comment")
    assert relayed.code == 0, relayed.stdout
    [comment] = gh.comments.values()
    assert comment.body.startswith("<!-- diagbot:diagnosis -->") and f"actions/runs/{run_id}" in comment.body
    assert [(c.head_sha, c.conclusion) for c in gh.check_runs.values()] == [(HEAD, "success")]
    again = run_action(gh, relay_ws, "workflow_run", mode="comment")
    assert again.code == 0 and len(gh.comments) == 1


def test_relay_posts_even_when_the_evaluating_run_failed_on_input(gh: GitHubTestServer, workspace: Path) -> None:
    _from_a_fork(gh)
    (workspace / "cases" / "diagnosis-cases.json").write_text('[{"id": "x", "traceFixture": "../escape.json"}]')
    gh.inject("POST", r"/comments$", 403, {"message": "Resource not accessible by integration"})
    evaluated = run_action(gh, workspace, "pull_request")
    assert evaluated.code == 2 and "leaves the fixtures folder" in evaluated.stdout
    relay_ws = workspace.parent / "relay"
    shutil.copytree(workspace / "diagbot-report", relay_ws / "diagbot-report")
    relayed = run_action(gh, relay_ws, "workflow_run", mode="comment")
    assert relayed.code == 0, relayed.stdout
    [comment] = gh.comments.values()
    assert "input could not be used" in comment.body and "leaves the fixtures folder" in comment.body
    assert "**workspace**" in comment.body  # the suite that did run is still shown
    assert [c.conclusion for c in gh.check_runs.values()] == ["failure", "failure"]


def test_hand_back_never_follows_a_link_the_pull_request_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The container is root: a report folder committed as a link to /var/run handed the host's docker.sock to the
    workspace owner. Only real folders are walked, and a link is handed back itself."""
    monkeypatch.syspath_prepend(str(ROOT))
    import entrypoint

    owned: list[str] = []
    monkeypatch.setattr(os, "chown", lambda path, uid, gid, follow_symlinks=True: owned.append(
        os.path.relpath(path, tmp_path) + ("" if not follow_symlinks else " (followed)")))  # fmt: skip
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "sub").mkdir(parents=True)
    (elsewhere / "docker.sock").write_text("")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "diagbot-report").symlink_to(elsewhere)
    entrypoint.hand_back(ws, ws / "diagbot-report")
    assert owned == []
    (ws / "diagbot-report").unlink()
    (ws / "diagbot-report" / "reports").mkdir(parents=True)
    (ws / "diagbot-report" / "reports" / "a.json").write_text("{}")
    (ws / "diagbot-report" / "linked").symlink_to(elsewhere)
    entrypoint.hand_back(ws, ws / "diagbot-report")
    assert sorted(owned) == ["ws/diagbot-report", "ws/diagbot-report/linked", "ws/diagbot-report/reports",
                             "ws/diagbot-report/reports/a.json"]  # fmt: skip
