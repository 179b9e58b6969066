"""The bot's decisions in process, through the GitHub port (PyGithub against the loopback server): baseline
choice and its problems, vanished suites, the gate settings, what is posted. Subprocess runs are test_entrypoint."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from diagbot import pipeline
from diagbot.action import bot
from diagbot.action.record import PrRecord
from diagbot.action.settings import Settings
from diagbot.core.errors import ConfigError, OutputError
from diagbot.github.client import PyGithubPort, make_client
from diagbot.pipeline import clear_outputs
from tests.conftest import hang_guard, made_at
from tests.github_server import GitHubTestServer
from tests.test_github import one_byte_off

REPO = "octo/app"
EVENTS = Path(__file__).resolve().parent / "events"
HEAD, BASE = "a" * 40, "b" * 40
TOKEN = "ghs_inprocesstoken0123456789"
NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer(token=TOKEN) as server:
        server.add_repo(REPO, id=1001)
        server.add_pull(REPO, 7, head_sha=HEAD, head_ref="feature", base_ref="main", base_sha=BASE)
        yield server
        server.assert_no_violations()


@pytest.fixture
def ws(workspace: Path) -> Path:
    return workspace


def settings(
    gh: GitHubTestServer, ws: Path, event: str = "pull_request", env: dict[str, str] | None = None, **inputs: str
) -> Settings:
    return Settings.from_env(
        {
            **(env or {}),
            "INPUT_GITHUB-TOKEN": TOKEN,
            "INPUT_MAX-WAIT-SECONDS": "1",
            "GITHUB_API_URL": gh.api_url,
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(EVENTS / f"{event}.json"),
            "GITHUB_SHA": BASE if event == "push" else "c" * 40,
            "GITHUB_REF": "refs/heads/main" if event == "push" else "refs/pull/7/merge",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_WORKSPACE": str(ws),
            "GITHUB_OUTPUT": str(ws.parent / "output"),
            "GITHUB_STEP_SUMMARY": str(ws.parent / "summary"),
            **{f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()},
        }
    )


def run(
    gh: GitHubTestServer, ws: Path, event: str = "pull_request", env: dict[str, str] | None = None, **inputs: str
) -> tuple[int, str]:
    out = io.StringIO()
    client = make_client(gh.api_url, TOKEN, max_wait_seconds=1)
    try:
        code = bot.run(settings(gh, ws, event, env, **inputs), PyGithubPort(client, REPO), now=NOW, out=out)
    finally:
        client.close()
    return code, out.getvalue()


def upload(
    gh: GitHubTestServer,
    files: dict[str, bytes],
    sha: str = BASE,
    event: str = "push",
    made: str | None = None,
    conclusion: str = "success",
    created: datetime = NOW,
) -> int:
    """A run of `sha` on main, created at `created` and ending in `conclusion`, uploading `files`; its reports say
    they were made at `made` (by default `sha`, as the run's own reports do: one made from another commit is no
    baseline)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, made_at(data, made or sha) if name.startswith("reports/") else data)
    pushed = gh.add_run(REPO, head_branch="main", head_sha=sha, event=event, conclusion=conclusion, created_at=created)
    return gh.add_artifact(pushed.id, "diagbot-report", buffer.getvalue(), created_at=created).id


def baseline_files(gh: GitHubTestServer, ws: Path) -> dict[str, bytes]:
    """The report folder a push run of this workspace leaves behind."""
    code, log = run(gh, ws, "push")
    assert code == 0, log
    folder = ws / "diagbot-report"
    files = {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    shutil.rmtree(folder)
    return files


def comment_body(gh: GitHubTestServer) -> str:
    [comment] = gh.comments.values()
    return comment.body


def break_a_case(ws: Path) -> None:
    """Make the first passing trace case fail: its fixture loses the answer's keywords."""
    cases = json.loads((ws / "cases" / "diagnosis-cases.json").read_text())
    for case in cases if isinstance(cases, list) else cases["cases"]:
        fixture = ws / "fixtures" / case["traceFixture"]
        data = json.loads(fixture.read_text())
        data["session"]["answer"] = "no idea"
        fixture.write_text(json.dumps(data))
        return


def test_a_regression_fails_with_one_comment_and_a_failing_check_run(gh: GitHubTestServer, ws: Path) -> None:
    upload(gh, baseline_files(gh, ws))
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 1, log
    assert "regression" in comment_body(gh)
    [check] = gh.check_runs.values()
    assert (check.head_sha, check.conclusion) == (HEAD, "failure")
    record = PrRecord.model_validate_json((ws / "diagbot-report" / "pr.json").read_text())
    assert record.gate is not None and record.gate.fail_on_regression and record.suites == ["diagnosis", "workspace"]
    assert record.baselines is not None
    assert {n: (c.cases, c.gating) for n, c in record.baselines.items()} == {
        "diagnosis": (30, 30),
        "workspace": (14, 14),
    }


def test_a_github_that_trickles_its_answers_ends_the_run_by_its_deadline_with_the_gates_verdict(
    gh: GitHubTestServer, ws: Path
) -> None:
    """GitHub's answer to the comment's post trickling (a piece every 20 s) held the job until its timeout. The run's
    GitHub work ends by one deadline; the step exits with the gate's verdict (a regression: 1) and names what was
    cut off. The comment was made (its answer never came: the next run finds it by its marker); the check run,
    due after the deadline, is not tried."""
    upload(gh, baseline_files(gh, ws))
    break_a_case(ws)
    gh.inject("POST", r"/issues/7/comments$", 0, pace=20.0)
    out = io.StringIO()
    client = make_client(gh.api_url, TOKEN, max_wait_seconds=1)
    try:
        with hang_guard(30):
            port = PyGithubPort(client, REPO, seconds=3.0)
            code = bot.run(settings(gh, ws), port, now=NOW, out=out)
    finally:
        client.close()
    log = out.getvalue()
    assert code == 1, log
    errors = [line for line in log.splitlines() if line.startswith("::error::")]
    assert any(e.startswith("::error::commenting on #7: GitHub's answers took longer than the 3 s") for e in errors)
    assert len(gh.comments) == 1 and not gh.check_runs


def test_fail_on_regression_false_with_require_baseline_still_fails_a_suite_without_baseline(
    gh: GitHubTestServer, ws: Path
) -> None:
    """Fault 1 through the whole bot: the diagnosis suite regresses (not gating), workspace has no baseline."""
    files = baseline_files(gh, ws)
    upload(gh, {k: v for k, v in files.items() if k != "reports/workspace.json"})
    break_a_case(ws)
    code, log = run(gh, ws, fail_on_regression="false", require_baseline="true")
    assert code == 1, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure" and "no baseline for workspace" in (check.output_title or "")


def test_a_partly_unreadable_baseline_names_its_problem(gh: GitHubTestServer, ws: Path) -> None:
    """Fault 7: one report of the artifact is corrupt; the comment says so instead of "the baseline has none"."""
    files = baseline_files(gh, ws)
    files["reports/workspace.json"] = b'{"kind": "workspace", "schemaVersion": "one"}'
    upload(gh, files)
    code, log = run(gh, ws)
    assert code == 2, log
    body = comment_body(gh)
    assert "reports/workspace.json" in body and "schemaVersion must be a whole number" in body
    assert "the baseline has no report for" not in body
    assert "::error::" in log and "reports/workspace.json" in log


def test_a_suite_named_pr_never_reads_pr_json_as_its_report(gh: GitHubTestServer, ws: Path) -> None:
    (ws / "diagbot.yml").write_text(
        "suites:\n  - {name: pr, kind: trace, cases: cases/diagnosis-cases.json, fixtures: fixtures}\n"
    )
    files = baseline_files(gh, ws)
    files["pr.json"] = files.pop("reports/pr.json")  # a report where only pr.json would be found
    upload(gh, files)
    code, log = run(gh, ws)
    assert code == 0, log
    assert "No baseline" in comment_body(gh) or "no report" in comment_body(gh).lower()


def test_a_suite_that_vanished_from_the_config_is_unusable_input(gh: GitHubTestServer, ws: Path) -> None:
    """Fault 3: the PR drops (or renames) the workspace suite; its baseline report is still there."""
    upload(gh, baseline_files(gh, ws))
    config = ws / "diagbot.yml"
    config.write_text(config.read_text().replace("  - name: workspace\n", "  - name: workspace-renamed\n"))
    code, log = run(gh, ws)
    assert code == 2, log
    assert "suite workspace is in the baseline but not in this run's config" in comment_body(gh)
    config.write_text(config.read_text().replace("gate:\n", "gate:\n  retired-suites: [workspace]\n"))
    gh.comments.clear()
    code, log = run(gh, ws)
    assert code == 0, log
    assert "retired" in log
    # said under the headline, not only among the footer's warnings (a red-team pass retired a suite it broke)
    headline, note = comment_body(gh).split("\n")[2:4]
    assert headline.startswith("### ") and note == (
        "*Retired since the baseline (gate.retired-suites), not compared: workspace.*"
    ), comment_body(gh)[:400]


@pytest.mark.parametrize("newest", ["failure", "success"])
def test_a_suite_the_failed_newest_baseline_lacks_cannot_be_dropped_unseen(
    gh: GitHubTestServer, ws: Path, newest: str
) -> None:
    """The newest push run of main could not judge the workspace suite (it failed, and uploaded no report of it);
    an older artifact has one. A pull request that dropped the suite from diagbot.yml passed, green, with no word
    of it: the vanished-suite check saw only the newest artifact's reports. A newest run that succeeded without the
    suite is main dropping it, which a pull request need not repeat."""
    files = baseline_files(gh, ws)
    upload(gh, files, sha="d" * 40)
    upload(gh, {k: v for k, v in files.items() if not k.endswith("/workspace.json")}, conclusion=newest)
    config = ws / "diagbot.yml"
    config.write_text(config.read_text().replace("  - name: workspace\n", "  - name: workspace-renamed\n"))
    code, log = run(gh, ws)
    if newest == "success":
        assert code == 0, log
        return
    assert code == 2, log
    assert "suite workspace is in the baseline but not in this run's config" in comment_body(gh)


def test_a_failed_newest_baseline_looks_at_older_suites_without_failing_on_them(gh: GitHubTestServer, ws: Path) -> None:
    """Looking in older artifacts only for the suites a failed push run may have left unjudged: one that GitHub
    does not hand over is a warning, not a baseline that could not be fetched (main's gate fails often, so every
    pull request would have failed on an outage); and a suite that an older run which succeeded had already
    dropped was retired then, so it is not counted again once gate.retired-suites forgets it."""
    files = baseline_files(gh, ws)
    older = upload(gh, files, sha="c" * 40)
    upload(gh, files, sha="e" * 40, conclusion="failure")
    gh.inject("GET", rf"/{older}\.zip$", 503, times=3)
    code, log = run(gh, ws)
    assert code == 0, log
    assert "the blob store answered 503 3 times" in log and "could not be fetched" not in log
    gh.faults.clear()
    without = {k: v for k, v in files.items() if not k.endswith("/workspace.json")}
    upload(gh, without, sha="d" * 40)  # main retired the workspace suite, and its run succeeded
    upload(gh, without, conclusion="failure")  # a later run failed
    config = ws / "diagbot.yml"
    config.write_text(config.read_text().replace("  - name: workspace\n", "  - name: workspace-renamed\n"))
    code, log = run(gh, ws)
    assert code == 0, log
    assert "suite workspace is in the baseline" not in log


def test_older_suites_count_only_from_runs_before_the_failed_one_and_up_to_one_that_succeeded(
    gh: GitHubTestServer, ws: Path
) -> None:
    """A second review: the run that succeeded after main retired a suite ended the look at older suites only if
    its artifact could be read (a 503 on it let the suite come back as vanished); and when the base commit's own
    run failed, the next candidates were main's newest runs, created after it, whose suites the pull request's base
    never had."""
    files = baseline_files(gh, ws)
    without = {k: v for k, v in files.items() if not k.endswith("/workspace.json")}
    hour = timedelta(hours=1)
    upload(gh, files, sha="c" * 40, created=NOW - 3 * hour)  # had the workspace suite
    retired = upload(gh, without, sha="d" * 40, created=NOW - 2 * hour)  # main retired it, and its run succeeded
    upload(gh, without, conclusion="failure", created=NOW - hour)  # the base commit's own run failed
    gh.inject("GET", rf"/{retired}\.zip$", 503, times=3)
    config = ws / "diagbot.yml"
    dropped = "  - name: workspace\n    kind: workspace\n    cases: cases/workspace\n    fixtures: fixtures/workspace\n"
    assert dropped in config.read_text()
    config.write_text(config.read_text().replace(dropped, ""))  # as main's config after d has it
    code, log = run(gh, ws)
    assert code == 0 and "suite workspace is in the baseline" not in log, log
    gh.faults.clear()
    upload(gh, files, sha="e" * 40, created=NOW)  # a later commit of main, whose run has the suite
    code, log = run(gh, ws)
    assert code == 0 and "suite workspace is in the baseline" not in log, log


def test_a_missing_fixtures_folder_is_unusable_input_for_a_trace_suite(gh: GitHubTestServer, ws: Path) -> None:
    upload(gh, baseline_files(gh, ws))
    config = ws / "diagbot.yml"
    config.write_text(config.read_text().replace("    fixtures: fixtures\n", "    fixtures: fixtures-moved\n"))
    code, log = run(gh, ws)
    assert code == 2, log
    assert "fixtures folder not found" in comment_body(gh)


def test_no_baseline_says_how_far_it_looked(gh: GitHubTestServer, ws: Path) -> None:
    code, log = run(gh, ws)
    assert code == 0, log
    body = comment_body(gh)
    assert "No baseline" in body and "looked at" in body


def test_a_dispatched_run_that_did_not_succeed_is_passed_over_and_said(gh: GitHubTestServer, ws: Path) -> None:
    """A review: such runs were skipped without a word, and "no artifact" was said of a branch whose run had
    uploaded one."""
    upload(gh, baseline_files(gh, ws), event="workflow_dispatch", conclusion="failure")
    code, log = run(gh, ws)
    assert code == 0, log
    assert "1 workflow\\_dispatch run(s) that did not succeed were passed over" in comment_body(gh)  # escaped


def test_push_never_gates_and_posts_nothing(gh: GitHubTestServer, ws: Path) -> None:
    break_a_case(ws)
    code, _ = run(gh, ws, "push", require_baseline="true")
    assert code == 0
    assert not gh.comments and not gh.check_runs


def test_a_bare_json_baseline_artifact_serves_a_one_suite_config(gh: GitHubTestServer, ws: Path) -> None:
    """upload-artifact with `archive: false` uploads the report itself, not a zip of the folder."""
    (ws / "diagbot.yml").write_text(
        "suites:\n  - {name: diagnosis, kind: trace, cases: cases/diagnosis-cases.json, fixtures: fixtures}\n"
    )
    report = baseline_files(gh, ws)["reports/diagnosis.json"]
    pushed = gh.add_run(REPO, head_branch="main", head_sha=BASE, event="push", created_at=NOW)
    gh.add_artifact(pushed.id, "diagbot-report", report, created_at=NOW)
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 1, log
    assert "Compared against the baseline from `main`" in comment_body(gh)


def test_a_bare_json_baseline_artifact_serves_its_own_suite_when_the_config_has_more(
    gh: GitHubTestServer, ws: Path
) -> None:
    """Adding a suite to diagbot.yml made the bare report "no report for these suites", so no baseline at all, and
    the regression in the suite it holds passed: it is compared by the suite the report names."""
    report = baseline_files(gh, ws)["reports/diagnosis.json"]
    pushed = gh.add_run(REPO, head_branch="main", head_sha=BASE, event="push", created_at=NOW)
    gh.add_artifact(pushed.id, "diagbot-report", made_at(report, BASE), created_at=NOW)
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 1, log
    assert "Compared against the baseline from `main`" in comment_body(gh)


@pytest.mark.parametrize(
    ("method", "path", "status", "unknown"),
    [
        ("GET", r"/actions/runs$", 500, "listing the runs of main"),
        ("GET", r"/actions/runs$", 403, "the token lacks a permission"),
        ("GET", r"/artifacts/\d+/zip$", 503, "downloading artifact"),
    ],
    ids=["runs-500", "runs-403", "download-503"],
)
def test_a_baseline_github_would_not_hand_over_fails_the_gate_never_passes_it(
    gh: GitHubTestServer, ws: Path, method: str, path: str, status: int, unknown: str
) -> None:
    """Any failure to list or download the baseline read as "no baseline", so a regressing pull request passed
    (exit 0, a success check). Its baseline is unknown, which is a named problem; a push only warns of it."""
    upload(gh, baseline_files(gh, ws))
    break_a_case(ws)
    gh.inject(method, path, status, times=20)
    code, log = run(gh, ws)
    assert code == 2, log
    [check] = gh.check_runs.values()
    assert (check.conclusion, check.output_title) == ("failure", "input could not be used: (baseline)")
    errors = [line for line in log.splitlines() if line.startswith("::error::")]
    assert errors and all(e.startswith("::error::the baseline could not be fetched, so this pull request cannot be "
                                       "compared (a gate never passes on a baseline it could not read): ")
                          for e in errors)  # fmt: skip
    assert any(unknown in e for e in errors)
    gh.inject(method, path, status, times=20)
    code, log = run(gh, ws, "push")
    assert code == 0, log
    assert "::warning::" in log and "::error::" not in log


@pytest.mark.parametrize("expired", [True, False], ids=["expired", "unreadable"])
def test_an_unusable_newest_artifact_falls_back_to_the_next_one(gh: GitHubTestServer, ws: Path, expired: bool) -> None:
    """Expired artifacts are passed over, and unreadable ones skipped with a warning: no rerun mends them, so failing
    on them would fail every pull request until the base branch changes. The older artifact is the baseline, so the
    broken case is a regression (no baseline would pass it)."""
    files = baseline_files(gh, ws)
    upload(gh, files, sha="e" * 40)
    newest = upload(gh, {"reports/diagnosis.json": b"not json"})
    gh.artifacts[newest].expired = expired
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 1, log
    [check] = gh.check_runs.values()
    assert check.conclusion == "failure" and "regression" in (check.output_title or "")
    assert "No baseline" not in comment_body(gh)
    if not expired:  # an expired one is no candidate at all: the search lists only artifacts that can be fetched
        assert f"::warning::artifact {newest} ('diagbot-report', run {newest - 1}): baseline of suite diagnosis" in log


def test_a_newest_artifact_one_byte_off_is_skipped_for_the_older_one(gh: GitHubTestServer, ws: Path) -> None:
    """An artifact whose zip directory zipfile will not open (version 6.4) stopped every pull request's run with
    "failed unexpectedly" and no comment, until someone deleted it: the older good baseline was never tried."""
    upload(gh, baseline_files(gh, ws), sha="e" * 40, created=NOW - timedelta(hours=1))
    pushed = gh.add_run(REPO, head_branch="main", head_sha=BASE, event="push", created_at=NOW)
    newest = gh.add_artifact(pushed.id, "diagbot-report", one_byte_off("version"), created_at=NOW).id
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 1, log
    assert "No baseline" not in comment_body(gh) and len(gh.comments) == 1
    assert f"::warning::artifact {newest} ('diagbot-report', run {pushed.id}): not a readable zip" in log


def test_a_search_stopped_at_its_limit_fails_a_pull_request_rather_than_passing_it(
    gh: GitHubTestServer, ws: Path
) -> None:
    """Ten reruns of pull requests on main (each holding pr.json) filled the search's ten candidates, and the
    honest baseline behind them read as "no baseline": a regression passed. Whether an older run holds the
    baseline is unknown when the search stopped at a limit, which fails the pull request."""
    upload(gh, baseline_files(gh, ws), sha="e" * 40)
    break_a_case(ws)
    evaluated = {**baseline_files(gh, ws), "pr.json": b"{}"}
    for _ in range(10):
        upload(gh, evaluated, event="workflow_dispatch")
    code, log = run(gh, ws)
    assert code == 2, log
    assert (
        "the search of main's runs stopped before it found a usable 'diagbot-report' artifact (10 candidates found, "
        "after 10 unusable candidate(s)); push to main or rerun its workflow, so that its newest run uploads a "
        "baseline"
    ) in log


def test_an_older_artifact_that_cannot_be_fetched_for_a_missing_suite_fails_a_pull_request(
    gh: GitHubTestServer, ws: Path
) -> None:
    """The newest artifact lacked the workspace suite's report, and the older one holding it answered 503: the
    suite was not compared, and a regression in it passed with a warning."""
    files = baseline_files(gh, ws)
    older = upload(gh, files, sha="e" * 40)
    upload(gh, {k: v for k, v in files.items() if k != "reports/workspace.json"})
    gh.inject("GET", rf"/{older}\.zip$", 503, times=3)
    code, log = run(gh, ws)
    assert code == 2, log
    assert f"downloading artifact {older} ('diagbot-report'): the blob store answered 503 3 times" in log
    assert "(looked in for suites workspace)" in log


def test_a_pull_request_s_own_report_folder_is_emptied_before_anything_else(gh: GitHubTestServer, ws: Path) -> None:
    """A pull request committed diagbot-report/reports/*.json (every case failing) and broke diagbot.yml: the run
    stopped early, the committed reports stayed, and upload-artifact uploaded them as a rerun's report on main,
    the next pull requests' baseline. The folder is emptied first, whoever wrote what it holds."""
    planted = ws / "diagbot-report"
    (planted / "reports").mkdir(parents=True)
    (planted / "diff").mkdir()
    (planted / "reports" / "diagnosis.json").write_text('{"kind": "trace", "schemaVersion": 1}')
    (planted / "reports" / "workspace.json").write_text('{"\\u0073chemaVersion": 1, "kind": "workspace"}')
    (planted / "report.json").write_text('{"schemaVersion": 1}')  # an artifact of it alone is a bare report
    (planted / "reports" / "coverage.json").write_text('{"lines": 91}')  # another tool's: kept
    (planted / "pr.json").write_text("{}")
    (planted / "notes.txt").write_text("kept: no baseline reader reads it")
    (ws / "diagbot.yml").write_text("suites: [\n")
    with pytest.raises(ConfigError):
        run(gh, ws)
    left = sorted(p.relative_to(planted).as_posix() for p in planted.rglob("*"))
    assert left == ["diff", "notes.txt", "reports", "reports/coverage.json"]


@pytest.mark.parametrize("linked", ["diagbot-report", "diagbot-report/reports", "diagbot-report/diff"])
def test_a_report_folder_the_pull_request_committed_as_a_link_is_removed_not_followed(
    gh: GitHubTestServer, ws: Path, linked: str
) -> None:
    """An audit: the pull request committed diagbot-report/reports as a link to a folder of forged reports; the
    clearing passed the link by, the run stopped on it, and upload-artifact (which follows links) would have
    uploaded the forged reports. The link is removed, never what it points at, and the run goes on."""
    evil = ws / "evil"
    evil.mkdir()
    (evil / "diagnosis.json").write_text('{"kind": "trace", "schemaVersion": 1}')
    (ws / linked).parent.mkdir(exist_ok=True)
    (ws / linked).symlink_to(evil, target_is_directory=True)
    code, log = run(gh, ws)
    assert code in (0, 1), log  # judged as usual
    assert not (ws / linked).is_symlink() and (evil / "diagnosis.json").exists()
    written = json.loads((ws / "diagbot-report/reports/diagnosis.json").read_text(encoding="utf-8"))
    assert written["run"]["gitSha"] == HEAD  # this run's own report


def test_links_the_pull_request_committed_anywhere_in_the_report_folder_are_removed_not_followed(
    gh: GitHubTestServer, ws: Path
) -> None:
    """A hostile review: diagbot-report/env -> /proc/self/environ and deeper/gitconfig -> ../.git/config outlived the
    clearing, and upload-artifact, which follows links, would upload the upload step's environment (its runtime
    token) and a checkout's credentials, as a rerun with pr-number runs main's workflow on the pull request's files.
    Every link goes, never what it points at; other files stay."""
    planted = ws / "diagbot-report"
    (planted / "deeper" / "still").mkdir(parents=True)
    (ws / "secret.txt").write_text("credentials")
    (planted / "env").symlink_to("/proc/self/environ")
    (planted / "deeper" / "gitconfig").symlink_to(ws / "secret.txt")
    (planted / "deeper" / "still" / "dir").symlink_to(ws, target_is_directory=True)
    (planted / "deeper" / "dangling").symlink_to(ws / "nothing-here")
    (planted / "notes.txt").write_text("kept")
    code, log = run(gh, ws)
    assert code in (0, 1), log
    left = sorted(p.relative_to(planted).as_posix() for p in planted.rglob("*") if "reports" not in p.parts)
    assert not [p for p in planted.rglob("*") if p.is_symlink()]
    assert {"deeper", "deeper/still", "notes.txt"} <= set(left) and (ws / "secret.txt").read_text() == "credentials"


def test_a_report_folder_padded_past_the_walk_is_moved_aside_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A review: links were collected first and removed last, so a folder padded past the walk's cap raised with the
    link to /proc/self/environ still there, for the upload step (`if: always()`) to follow. Links are removed as
    they are found, and a folder past the cap is moved aside, so that the upload finds nothing, and the run stops
    saying so; nothing in it is deleted."""
    out = tmp_path / "diagbot-report"
    (out / "pad").mkdir(parents=True)
    for n in range(30):
        (out / "pad" / f"{n}.txt").write_text("x")
    (out / "env").symlink_to("/proc/self/environ")
    monkeypatch.setattr(pipeline, "MAX_LINK_WALK", 10)
    with pytest.raises(OutputError, match=r"holds more than 10 entries, too many to look through for links"):
        clear_outputs(out, tmp_path, everything=True)
    assert not out.exists()
    [aside] = tmp_path.glob("diagbot-report.unchecked-*")
    assert len(list((aside / "pad").iterdir())) == 30


def test_a_link_on_the_report_folder_s_way_is_removed_not_walked_through(tmp_path: Path) -> None:
    """A review: with report-dir build/diagbot, a pull request's `build` -> another folder had the walk (and a
    removal past its cap) act on that folder. The link on the way is removed; what it points at is not touched."""
    (tmp_path / "victim" / "diagbot").mkdir(parents=True)
    (tmp_path / "victim" / "diagbot" / "link").symlink_to(tmp_path)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "build").symlink_to(tmp_path / "victim", target_is_directory=True)
    clear_outputs(tmp_path / "ws" / "build" / "diagbot", tmp_path / "ws", everything=True)
    assert not (tmp_path / "ws" / "build").exists() and (tmp_path / "victim" / "diagbot" / "link").is_symlink()


def test_a_report_folder_that_is_the_workspace_keeps_the_repository_s_links(tmp_path: Path) -> None:
    """report-dir: . is the checkout itself: its links (a fixtures folder linked elsewhere) are the repository's."""
    (tmp_path / "traces").mkdir()
    (tmp_path / "runs").symlink_to(tmp_path / "traces", target_is_directory=True)
    clear_outputs(tmp_path / ".", tmp_path, everything=True)
    assert (tmp_path / "runs").is_symlink()


def test_another_tools_file_in_the_baseline_s_reports_folder_is_no_vanished_suite(
    gh: GitHubTestServer, ws: Path
) -> None:
    """A notes file merged into diagbot-report/reports/ on main outlived the push run's clearing (it is no
    report) and was uploaded with the baseline: every later pull request then failed, exit 2, for "suite notes is in
    the baseline but not in this run's config". Only what reads as a report names a suite of the baseline."""
    files = baseline_files(gh, ws)
    upload(gh, files | {"reports/notes.json": b"not JSON at all", "reports/coverage.json": b'{"lines": 91}'})
    code, log = run(gh, ws)
    assert code == 0, log
    assert "is in the baseline but not in this run's config" not in log
    upload(gh, files | {"reports/gone.json": files["reports/diagnosis.json"]})  # a report: it did
    code, log = run(gh, ws)
    assert code == 2 and "suite gone is in the baseline but not in this run's config" in log, log


def test_clearing_reads_a_bounded_amount_and_removes_what_it_could_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Telling another tool's JSON from a report reads the file; past the bytes a folder may take, a file is taken
    for a report unread (removed), never kept unknown."""
    reports = tmp_path / "out" / "reports"
    reports.mkdir(parents=True)
    (reports / "coverage.json").write_text('{"lines": 91}')
    clear_outputs(tmp_path / "out", tmp_path, everything=True)
    assert (reports / "coverage.json").exists()  # read, and not a report
    monkeypatch.setattr(pipeline, "MAX_LOOKED_AT_BYTES", 5)
    clear_outputs(tmp_path / "out", tmp_path, everything=True)
    assert not (reports / "coverage.json").exists()


def test_a_baseline_from_another_workflow_serves_with_a_warning_unless_baseline_workflow_names_one(
    gh: GitHubTestServer, ws: Path
) -> None:
    """Pull requests run pr.yml, pushes ci.yml (the upload's workflow here): the baseline must still be found,
    with a warning naming the input; with baseline-workflow: pr.yml, ci.yml's runs are passed over, and said so."""
    upload(gh, baseline_files(gh, ws))
    break_a_case(ws)
    own = {"GITHUB_WORKFLOW_REF": f"{REPO}/.github/workflows/pr.yml@refs/pull/7/merge"}
    code, log = run(gh, ws, env=own)
    assert code == 1, log
    assert "the baseline comes from .github/workflows/ci.yml, since this workflow" in comment_body(gh)
    code, log = run(gh, ws, env=own, baseline_workflow="pr.yml")
    assert code == 0, log
    assert "1 run(s) of other workflows than .github/workflows/pr.yml were passed over" in comment_body(gh)


@pytest.mark.parametrize("how", ["pr.json", "another commit", "no commit"])
def test_a_pull_request_s_evaluation_on_the_base_branch_is_never_its_baseline(
    gh: GitHubTestServer, ws: Path, how: str
) -> None:
    """A maintainer's workflow_dispatch rerun of PR 7 from main (pr-number given) uploads PR 7's reports on a run of
    main at main's tip: taken as the exact baseline, PR 7's regression passed every later pull request. Reports
    that record no commit (forged, as an audit found) were taken too."""
    upload(gh, baseline_files(gh, ws), sha="e" * 40)  # an older, honest baseline
    break_a_case(ws)
    broken = baseline_files(gh, ws)
    if how == "pr.json":
        upload(gh, {**broken, "pr.json": b"{}"}, event="workflow_dispatch")
    elif how == "another commit":  # the reports say they were made from the pull request's head, not the run's
        upload(gh, broken, event="workflow_dispatch", made=HEAD)
    else:
        unmade = {k: v if not k.startswith("reports/") else _without_run(v) for k, v in broken.items()}
        upload(gh, unmade, event="workflow_dispatch")
    code, log = run(gh, ws)
    assert code == 1, log  # the broken case is a regression against the honest baseline
    said = {
        "pr.json": "holds pr.json, so it is a pull request's evaluation",
        "another commit": f"reports/diagnosis.json was made from commit {HEAD[:12]}, not from its run's commit "
                          f"{BASE[:12]}",
        "no commit": "reports/diagnosis.json records no commit it was made from, which every report of diagbot's "
                     "action records, so it is not that branch's baseline; trying an older one",
    }[how]  # fmt: skip
    assert any(line.startswith("::warning::") and said in line for line in log.splitlines()), log


def _without_run(data: bytes) -> bytes:
    report = json.loads(data)
    report.pop("run", None)
    return json.dumps(report).encode()


def test_a_newer_baseline_that_cannot_be_downloaded_fails_the_gate_rather_than_an_older_one_passing_it(
    gh: GitHubTestServer, ws: Path
) -> None:
    """The base commit's own artifact answered 503 (three times), and the older one it fell back to was from before
    main fixed the case the pull request breaks again: the gate passed. Its baseline is unknown, which fails."""
    upload(gh, baseline_files(gh, ws), sha="e" * 40)
    exact = upload(gh, baseline_files(gh, ws))
    break_a_case(ws)
    gh.inject("GET", rf"/{exact}\.zip$", 503, times=3)
    code, log = run(gh, ws)
    assert code == 2, log
    assert "::error::the baseline could not be fetched, so this pull request cannot be compared" in log
    assert f"downloading artifact {exact} ('diagbot-report'): the blob store answered 503 3 times" in log
    gh.inject("GET", rf"/{exact}\.zip$", 503, times=3)
    code, log = run(gh, ws, "push")  # a push only warns, and uses the older one
    assert code == 0 and "::warning::" in log, log


def test_a_pull_request_stops_downloading_once_its_baseline_is_unknown(gh: GitHubTestServer, ws: Path) -> None:
    """Every older candidate was downloaded after the newest one failed, though the gate could only fail by then:
    ten slow ones took longer than the job's timeout, which then ended with no comment and no check run."""
    files = baseline_files(gh, ws)
    older = [upload(gh, files, sha=c * 40) for c in "def"]
    newest = upload(gh, files)
    gh.inject("GET", r"/\d+\.zip$", 503, times=30)
    code, log = run(gh, ws)
    assert code == 2, log
    asked = {r.path for r in gh.requests if r.server == "blob"}
    assert any(f"/{newest}." in path for path in asked) and not any(f"/{o}." in p for o in older for p in asked)


def test_one_blob_store_hiccup_is_retried(gh: GitHubTestServer, ws: Path) -> None:
    exact = upload(gh, baseline_files(gh, ws))
    break_a_case(ws)
    fault = gh.inject("GET", rf"/{exact}\.zip$", 503)
    code, log = run(gh, ws)
    assert (code, fault.hits) == (1, 1), log  # compared with the exact baseline: a regression
    assert "::warning::" not in log or "503" not in log


def test_a_suite_the_newest_baseline_lacks_is_compared_with_an_older_one(gh: GitHubTestServer, ws: Path) -> None:
    """A push run on main could not evaluate the trace suite (its case file was broken for a while), so its artifact
    held only the workspace report; the next pull requests' trace regressions passed as a suite with no baseline."""
    complete = baseline_files(gh, ws)
    older = upload(gh, complete, sha="e" * 40)
    upload(gh, {name: data for name, data in complete.items() if name != "reports/diagnosis.json"})  # the partial one
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 1, log  # the broken trace case is a regression against the older report
    said = (
        f"the baseline of suite diagnosis comes from the older artifact {older} ('diagbot-report', run "
        f"{gh.artifacts[older].run_id}) at eeeeeeeeeeee, since the newer one has no report for it"
    )
    assert said in comment_body(gh)


def test_a_baseline_artifact_whose_report_has_no_schema_version_is_refused(gh: GitHubTestServer, ws: Path) -> None:
    """Version 0 is the Java evaluator's format, read without the check that a stored result fails exactly when
    it lists a failed check: deleting schemaVersion from an artifact's report let "every case failed" stand, and
    a real regression passed. diagbot writes a version into every report, so an artifact's report needs one."""
    files = baseline_files(gh, ws)
    report = json.loads(files["reports/diagnosis.json"])
    for key in ("schemaVersion", "kind"):
        report.pop(key)
    for result in report["results"]:
        result.update(passed=False, failedChecks=[])
    report.update(passedCases=0, passRate=0.0)
    upload(gh, {**files, "reports/diagnosis.json": json.dumps(report).encode()})
    break_a_case(ws)
    code, log = run(gh, ws)
    assert code == 2, log
    assert "reports/diagnosis.json: has no schemaVersion, which every report diagbot writes has" in log, log


def test_an_annotation_names_the_file_where_it_really_is(tmp_path: Path) -> None:
    """A config that named its cases through a folder link (`x/../../cases/a.json`, with `x -> a/b`) resolved
    inside the workspace, but the annotation path was worked out from the spelling: `../cases/a.json`, outside the
    repository."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "a.json").write_text("[]")
    (tmp_path / "x").symlink_to("a/b")
    assert bot._relative(tmp_path / "x" / ".." / ".." / "cases" / "a.json", tmp_path) == "cases/a.json"
    assert bot._relative(tmp_path / "cases" / "a.json", tmp_path / "." / "a" / "..") == "cases/a.json"


def test_a_config_that_leaves_the_workspace_is_named_as_it_was_given(gh: GitHubTestServer, ws: Path) -> None:
    """The repository's diagbot.yml committed as a link out of the workspace was blamed on "input 'config'
    (None)", an input nobody set."""
    outside = ws.parent / "elsewhere.yml"
    outside.write_text((ws / "diagbot.yml").read_text())
    (ws / "diagbot.yml").unlink()
    (ws / "diagbot.yml").symlink_to(outside)
    with pytest.raises(ConfigError) as caught:
        run(gh, ws)
    assert caught.value.problems == ["diagbot.yml resolves outside the workspace (a link?); commit the file itself"]
    with pytest.raises(ConfigError) as caught:
        run(gh, ws, config="../elsewhere.yml")
    assert caught.value.problems == [
        "input 'config' (../elsewhere.yml) is outside the workspace; give a path inside it"
    ]
