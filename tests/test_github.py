"""The GitHub client against the loopback test server: baseline selection, safe download, comments, checks."""

from __future__ import annotations

import io
import itertools
import random
import signal
import stat
import threading
import time
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from github import Github

from diagbot.github import client as dg
from diagbot.github.port import BaselineSearch
from tests.conftest import hang_guard
from tests.github_server import GitHubTestServer

REPO = "octo/app"
BASE = "b" * 40
NOW = datetime.now(UTC).replace(microsecond=0)
MARKER = "<!-- diagbot:diagnosis -->"


def zip_of(files: dict[str, bytes], symlink: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo(symlink)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


REPORT = zip_of({"reports/diagnosis.json": b'{"kind": "trace"}'})


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer() as server:
        server.add_repo(REPO)
        server.add_pull(REPO, 7, base_sha=BASE)
        yield server
        server.assert_no_violations()


@pytest.fixture
def g(gh: GitHubTestServer) -> Iterator[Github]:
    client = dg.make_client(gh.api_url, "t", max_wait_seconds=5)
    yield client
    client.close()


def artifact(gh: GitHubTestServer, data: bytes = REPORT, age_days: float = 1, **run: object) -> int:
    created = NOW - timedelta(days=age_days)
    expired = bool(run.pop("expired", False))
    r = gh.add_run(REPO, created_at=created, **run)  # type: ignore[arg-type]
    return gh.add_artifact(r.id, "diagbot-report", data, created_at=created, expired=expired).id


def search(g: Github, **limits: Any) -> BaselineSearch:
    if not limits:  # the port, as the action calls it
        return dg.PyGithubPort(g, REPO).find_baselines("diagbot-report", "main", BASE)
    return dg.search_baselines(g.get_repo(REPO), "diagbot-report", "main", BASE, **limits)


def candidates(g: Github, **limits: Any) -> list[int]:
    return [c.id for c in search(g, **limits).candidates]


def test_selection_skips_forks_other_branches_and_expired_and_prefers_the_base_sha(
    g: Github, gh: GitHubTestServer
) -> None:
    older_exact = artifact(gh, age_days=5, head_sha=BASE)
    newest = artifact(gh, age_days=1)
    artifact(gh, age_days=0.5, head_repo="evil/app", event="pull_request")  # a fork's run on "main"
    artifact(gh, age_days=0.4, head_branch="feature")
    artifact(gh, age_days=0.3, expired=True)
    gh.add_artifact(gh.add_run(REPO).id, "other-name", REPORT)
    assert candidates(g) == [older_exact, newest]  # exact first, the newest as a fallback
    gh.artifacts[older_exact].expired = True
    assert candidates(g) == [newest]
    assert not gh.api_requests("GET", r"/actions/artifacts$")  # never the repository-wide list
    assert all(r.query["name"] == "diagbot-report" for r in gh.api_requests("GET", r"/runs/\d+/artifacts$"))


@pytest.mark.parametrize("from_main", [False, True], ids=["feature-branches", "pull-requests-from-main"])
def test_a_baseline_behind_hundreds_of_newer_pull_request_artifacts_is_found(
    g: Github, gh: GitHubTestServer, from_main: bool
) -> None:
    baseline = artifact(gh, age_days=3)  # the last push to main; not the base commit's own run
    for i in range(350):  # every pull request run uploads one, newer than the baseline
        artifact(gh, age_days=2 - i / 1000, head_branch="main" if from_main else f"feature-{i}", event="pull_request")
    found = search(g)
    assert [c.id for c in found.candidates] == [baseline] and not found.candidates[0].exact
    assert (found.runs_scanned, found.stopped_because) == (1, None)
    assert len(gh.api_requests("GET", r"/artifacts$")) == 1  # only the push run's own artifacts were listed


def test_a_forks_runs_on_a_branch_named_main_are_never_used(g: Github, gh: GitHubTestServer) -> None:
    ours = artifact(gh, age_days=3)
    forks = [
        artifact(gh, age_days=1, head_repo="evil/app", head_sha=BASE, event=e) for e in ("push", "workflow_dispatch")
    ]
    for i in range(320):  # a fork pushing to its own "main" again and again
        artifact(gh, age_days=2 - i / 1000, head_repo="evil/app", event="pull_request")
    assert candidates(g) == [ours]
    fork_runs = {gh.artifacts[a].run_id for a in forks}
    listed = {int(r.path.split("/")[-2]) for r in gh.api_requests("GET", r"/runs/\d+/artifacts$")}
    assert listed and not listed & fork_runs


def test_the_run_limit_and_the_time_limit_stop_the_search_and_say_which(g: Github, gh: GitHubTestServer) -> None:
    for i in range(150):  # push runs of other workflows, without the artifact: two pages of runs
        gh.add_run(REPO, created_at=NOW - timedelta(hours=i), workflow="lint.yml")
    baseline = artifact(gh, age_days=10)
    by_count = search(g, max_runs=12)
    assert (by_count.candidates, by_count.runs_scanned) == ([], 12)
    assert by_count.stopped_because == "the 12-run limit was reached, older runs were not searched"
    assert len(gh.api_requests("GET", r"/runs/\d+/artifacts$")) == 12
    ticks = itertools.count(0.0, 10.0)  # every look at the clock is 10 s later
    by_time = search(g, max_seconds=45, clock=lambda: next(ticks))
    assert (by_time.candidates, by_time.runs_scanned) == ([], 4)
    assert by_time.stopped_because == "the 45 s time limit was reached, older runs were not searched"
    unbounded = search(g)
    assert [c.id for c in unbounded.candidates] == [baseline]
    assert (unbounded.runs_scanned, unbounded.stopped_because) == (151, None)


def test_the_base_commits_own_run_comes_first_even_behind_the_candidate_limit(g: Github, gh: GitHubTestServer) -> None:
    exact = artifact(gh, age_days=20, head_sha=BASE)  # an old base commit: the branch moved on since
    newer = [artifact(gh, age_days=10 - i / 10) for i in range(15)]
    found = search(g)
    assert [c.id for c in found.candidates] == [exact, *newer[::-1][:9]]
    assert [c.exact for c in found.candidates] == [True] + [False] * 9
    assert (found.runs_scanned, found.stopped_because) == (10, "10 candidates found")


def test_without_the_base_commits_run_the_newest_run_comes_first_not_the_newest_upload(
    g: Github, gh: GitHubTestServer
) -> None:
    """An older commit's run rerun an hour ago uploaded a newer artifact than the run of the commit pushed after it,
    and was taken as the baseline: a fix made in between was not in it, so a pull request that undid it passed."""
    rerun = gh.add_run(REPO, head_sha="1" * 40, created_at=NOW - timedelta(days=2))
    late = gh.add_artifact(rerun.id, "diagbot-report", REPORT, created_at=NOW - timedelta(hours=1)).id
    pushed = gh.add_run(REPO, head_sha="2" * 40, created_at=NOW - timedelta(days=1))
    newer = gh.add_artifact(pushed.id, "diagbot-report", REPORT, created_at=NOW - timedelta(days=1)).id
    again = gh.add_artifact(pushed.id, "diagbot-report", REPORT, created_at=NOW - timedelta(hours=20)).id
    assert [c.id for c in search(g).candidates] == [again, newer, late]  # within a run, its newest upload first


def test_this_workflows_runs_hold_the_baseline_before_any_others(g: Github, gh: GitHubTestServer) -> None:
    """Runs were filtered by event and branch only: a nightly workflow's newer `diagbot-report` on main became
    the pull request's baseline. Another workflow's artifact serves only when this one's runs have none (pushes
    may run another workflow than pull requests), and never when baseline-workflow names the one to use."""
    ours = artifact(gh, age_days=2, workflow="diagbot.yml")
    nightly = artifact(gh, age_days=1, workflow="nightly.yml")
    found = search(g, workflow=".github/workflows/diagbot.yml")
    assert ([c.id for c in found.candidates], found.other_workflows) == ([ours], False)
    assert found.candidates[0].workflow == ".github/workflows/diagbot.yml"
    found = search(g, workflow=".github/workflows/pr.yml")  # no run of its own: the others', flagged
    assert ([c.id for c in found.candidates], found.other_workflows) == ([nightly, ours], True)
    found = search(g, workflow=".github/workflows/pr.yml", only=True)
    assert (found.candidates, found.passed_over) == ([], 2)
    assert len(candidates(g)) == 2  # no workflow known: every workflow's runs count, as before


def test_workflow_dispatch_runs_of_the_base_branch_are_baselines_too(g: Github, gh: GitHubTestServer) -> None:
    pushed_old = artifact(gh, age_days=3)
    dispatched = artifact(gh, age_days=1, event="workflow_dispatch")
    pushed = artifact(gh, age_days=2)
    artifact(gh, age_days=0.5, event="pull_request")  # a pull request from main into another branch
    artifact(gh, age_days=0.4, event="schedule")
    assert candidates(g) == [dispatched, pushed, pushed_old]  # both lists, merged newest first
    assert candidates(g, max_candidates=1) == [dispatched]

    # a dispatched evaluation of a pull request that stopped before writing pr.json (an audit: its report folder a
    # link the pull request committed) uploaded the pull request's files as a run of main; a run that has not
    # finished is none either
    for conclusion, status in (("failure", "completed"), ("cancelled", "completed"), (None, "in_progress")):
        artifact(gh, age_days=0.2, event="workflow_dispatch", conclusion=conclusion, status=status)
    found = search(g, max_candidates=10)
    assert ([c.id for c in found.candidates], found.unsuccessful) == ([dispatched, pushed, pushed_old], 3)


def test_download_goes_to_the_blob_host_without_authorization(g: Github, gh: GitHubTestServer) -> None:
    artifact(gh, head_sha=BASE)
    [candidate] = search(g).candidates
    data = dg.download_artifact(g.requester, candidate)
    assert dg.unpack_artifact(data, "a") == {"reports/diagnosis.json": b'{"kind": "trace"}'}
    blob = [r for r in gh.requests if r.server == "blob"]
    assert len(blob) == 1 and "authorization" not in blob[0].headers


def test_a_blob_store_that_trickles_the_archive_is_given_up_on(
    g: Github, gh: GitHubTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store sending a piece now and then never let a read time out, and a fixed-size read waited for the whole
    chunk: the job hung until GitHub's 6-hour limit. Each piece is now looked at as it comes, against a deadline."""
    noise = random.Random(0).randbytes(40_000)  # stays about 40 KB zipped
    artifact(gh, data=zip_of({"reports/diagnosis.json": noise}), head_sha=BASE)
    [candidate] = search(g).candidates
    gh.blob_pace = 0.05  # 1 KiB every 50 ms: about 2 s for the archive
    monkeypatch.setattr(dg, "BLOB_SECONDS", 0.3)
    with pytest.raises(dg.GitHubUnavailable, match=r"the blob store sent [\d,]+ bytes in 0 s and was still sending"):
        dg.download_artifact(g.requester, candidate)
    assert len([r for r in gh.requests if r.server == "blob"]) == 1  # a slow store is not asked again
    monkeypatch.setattr(dg, "BLOB_SECONDS", 60.0)
    gh.blob_pace = 0.001
    assert dg.unpack_artifact(dg.download_artifact(g.requester, candidate), "a") == {"reports/diagnosis.json": noise}


def test_a_blob_store_that_stalls_is_given_up_on_at_the_deadline_not_after_each_read_timeout(
    g: Github, gh: GitHubTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that sent a piece and then stalled was waited for a 60 s read timeout, three times over: past the
    job's own timeout, with no comment and no check run. Every wait now ends at the download's one deadline."""
    artifact(gh, data=zip_of({"reports/diagnosis.json": random.Random(1).randbytes(8_000)}), head_sha=BASE)
    [candidate] = search(g).candidates
    gh.blob_pace = 30.0  # a piece, then nothing for 30 s
    monkeypatch.setattr(dg, "BLOB_SECONDS", 0.5)
    with hang_guard(10), pytest.raises(dg.GitHubUnavailable, match="downloading artifact"):
        dg.download_artifact(g.requester, candidate)
    assert len([r for r in gh.requests if r.server == "blob"]) == 1  # the deadline passed: not asked again


def test_an_api_answer_that_trickles_is_cut_off_at_the_runs_github_deadline(g: Github, gh: GitHubTestServer) -> None:
    """An API host that sent a piece of its answer every 20 s never let a 30 s read time out: a trickle held the job
    until its timeout, with no comment and no check run. All of a run's GitHub work now ends by one deadline, and
    what came after it (the check run) fails at once, saying so, instead of waiting again."""
    gh.inject("GET", r"/pulls/7$", 0, pace=20.0)
    port = dg.PyGithubPort(g, REPO, seconds=1.0)
    with hang_guard(10):
        started = time.monotonic()
        with pytest.raises(dg.GitHubUnavailable) as caught:
            port.pull(7)
        assert time.monotonic() - started < 5
        assert signal.getitimer(signal.ITIMER_REAL)[0] > 5  # the guard's own timer is set again, not cleared
        assert caught.value.problems == [
            "reading pull request #7: GitHub's answers took longer than the 1 s this run allows for all of its "
            "GitHub requests (max-wait-seconds plus 180 s): a connection stalled or sent its answer slowly; rerun "
            "the job later"
        ]
        with pytest.raises(dg.GitHubUnavailable, match=r"^creating check run 'c': GitHub's answers took longer"):
            port.create_check_run("a" * 40, "c", "success", "t", "s", [])
    assert not gh.check_runs


def test_the_github_deadline_leaves_work_that_ends_in_time_alone(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("GET", r"/pulls/7$", 0, pace=0.01)  # a slow answer that still ends well within the limit
    port = dg.PyGithubPort(g, REPO, seconds=30.0)
    assert port.pull(7).base_sha == BASE
    assert signal.getitimer(signal.ITIMER_REAL)[0] == 0  # no timer left behind to go off later
    port.create_check_run("a" * 40, "c", "success", "t", "s", [])
    assert len(gh.check_runs) == 1


def test_a_retry_past_the_deadline_is_not_waited_for_and_the_count_is_true(
    g: Github, gh: GitHubTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Retries end at the download's deadline; the message said "3 times" when the store was asked once."""
    artifact(gh, head_sha=BASE)
    [candidate] = search(g).candidates
    gh.inject("GET", r"/\d+\.zip$", 503, times=5)
    monkeypatch.setattr(dg, "BLOB_SECONDS", 0.5)  # the 1 s pause before a second try would pass it
    with pytest.raises(dg.GitHubUnavailable, match="the blob store answered 503 1 time; rerun the job"):
        dg.download_artifact(g.requester, candidate)
    assert len([r for r in gh.requests if r.server == "blob"]) == 1


def test_expired_between_listing_and_download_is_gone(g: Github, gh: GitHubTestServer) -> None:
    aid = artifact(gh, head_sha=BASE)
    [candidate] = search(g).candidates
    gh.artifacts[aid].expired = True
    with pytest.raises(dg.ArtifactGone):
        dg.download_artifact(g.requester, candidate)


def test_deleted_between_listing_and_download_is_gone_not_unknown(g: Github, gh: GitHubTestServer) -> None:
    """A 404 for an artifact just listed is a deletion: the next candidate serves, and a pull request's gate does
    not fail on it as on a baseline GitHub would not hand over."""
    artifact(gh, head_sha=BASE)
    [candidate] = search(g).candidates
    gh.inject("GET", r"/artifacts/\d+/zip$", 404)
    with pytest.raises(dg.ArtifactGone, match="404, the artifact was deleted since it was listed"):
        dg.download_artifact(g.requester, candidate)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(zip_of({"../evil.json": b"{}"}), id="dot-dot"),
        pytest.param(zip_of({"/etc/evil.json": b"{}"}), id="absolute"),
        pytest.param(zip_of({}, symlink="reports/diagnosis.json"), id="symlink"),
        pytest.param(zip_of({"bomb.json": b"0" * (3 * 1024 * 1024)}), id="zip-bomb"),
        pytest.param(b"\x00\x01 not a report", id="garbage"),
    ],
)
def test_unsafe_archives_are_refused(data: bytes) -> None:
    with pytest.raises(dg.UnsafeArtifact):
        dg.unpack_artifact(data, "artifact 1", max_total=1024 * 1024)


def _damaged(method: int, flip: int = 0) -> bytes:
    """A one-member archive whose member cannot be read back: its compressed bytes scrambled, or (flip) a header
    flag set."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("reports/diagnosis.json", b'{"kind": "trace"}' * 50)
    data = bytearray(buffer.getvalue())
    if flip:  # general purpose bit 0, in the local header and in the central directory: "encrypted"
        data[6] |= flip
        data[data.rfind(b"PK\x01\x02") + 8] |= flip
    else:
        start = 30 + len("reports/diagnosis.json") + (9 if method == zipfile.ZIP_LZMA else 0)
        for i in range(start, start + 8):
            data[i] ^= 0xFF
    return bytes(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(_damaged(zipfile.ZIP_DEFLATED), id="corrupt-deflate"),
        pytest.param(_damaged(zipfile.ZIP_DEFLATED, flip=1), id="encrypted"),
    ],
)
def test_an_archive_whose_member_cannot_be_decompressed_is_refused_not_raised(data: bytes) -> None:
    """zlib.error, lzma.LZMAError and RuntimeError (an encrypted member) escaped as a bug: no check run, and the
    older good artifact behind it was never tried."""
    with pytest.raises(dg.UnsafeArtifact, match=r"^artifact 1: cannot read reports/diagnosis.json \("):
        dg.unpack_artifact(data, "artifact 1")


def one_byte_off(fault: str) -> bytes:
    """A good one-member archive with one byte of its central directory changed: the version needed to extract it
    (6.4, which zipfile will not open), or the name's first byte a NUL (zipfile ends the name there: "")."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("reports/diagnosis.json", b'{"kind": "trace"}')
    data = bytearray(buffer.getvalue())
    directory = data.index(b"PK\x01\x02")
    data[directory + (6 if fault == "version" else 46)] = 64 if fault == "version" else 0
    return bytes(data)


@pytest.mark.parametrize(
    ("fault", "said"),
    [("version", r"not a readable zip \(NotImplementedError: zip file version 6\.4\)"), ("nul", "without a name")],
)
def test_an_archive_one_byte_off_is_refused_not_raised(fault: str, said: str) -> None:
    """NotImplementedError (from zipfile.ZipFile) and IndexError (a member named "") escaped as a bug: every pull
    request's run stopped with "failed unexpectedly", no comment and no check run, and so did the push runs that
    would have uploaded a newer baseline."""
    with pytest.raises(dg.UnsafeArtifact, match=f"^artifact 1: .*{said}"):
        dg.unpack_artifact(one_byte_off(fault), "artifact 1")


def lying(method: int, unpacked: int, claimed: int) -> bytes:
    """A one-member archive compressed with `method` whose headers say the member unpacks to `claimed` bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("reports/diagnosis.json", b"0" * unpacked)
    data = bytearray(buffer.getvalue())
    data[22:26] = claimed.to_bytes(4, "little")  # the local header's uncompressed size
    directory = data.index(b"PK\x01\x02")
    data[directory + 24 : directory + 28] = claimed.to_bytes(4, "little")  # and the central directory's
    return bytes(data)


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA], ids=["bzip2", "lzma"])
def test_a_member_compressed_as_upload_artifact_never_does_is_refused_before_it_is_unpacked(method: int) -> None:
    """zipfile inflates a bzip2 or LZMA member whole in one call, whatever size its header claims: a 2 KB artifact
    claiming 100 bytes took 1.6 GiB of memory, then a MemoryError escaped. upload-artifact stores or deflates."""
    with pytest.raises(dg.UnsafeArtifact, match=f"compressed with zip method {method}, which upload-artifact never"):
        dg.unpack_artifact(lying(method, 4 * 1024 * 1024, 100), "artifact 1")
    honest = lying(method, 100, 100)  # even an honest one: the method alone decides
    with pytest.raises(dg.UnsafeArtifact, match="upload-artifact never writes"):
        dg.unpack_artifact(honest, "artifact 1")
    deflated = lying(zipfile.ZIP_DEFLATED, 4 * 1024 * 1024, 100)  # deflate is read in bounded pieces
    with pytest.raises(dg.UnsafeArtifact, match=r"^artifact 1: cannot read reports/diagnosis.json .*Bad CRC-32"):
        dg.unpack_artifact(deflated, "artifact 1")  # 101 bytes read, never 4 MiB


def test_an_archive_that_holds_one_file_twice_is_refused() -> None:
    """The last copy won silently: which report was the baseline depended on the writer's order."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("reports/diagnosis.json", b'{"kind": "trace"}')
        archive.writestr("reports\\diagnosis.json", b'{"kind": "other"}')
    with pytest.raises(dg.UnsafeArtifact, match=r"holds reports\\diagnosis\.json twice"):
        dg.unpack_artifact(buffer.getvalue(), "artifact 1")


def test_bare_json_artifact_is_accepted() -> None:
    assert dg.unpack_artifact(b' {"kind": "trace"}', "a") == {"report.json": b' {"kind": "trace"}'}


def test_comment_is_found_beyond_the_first_page_and_duplicates_deleted(g: Github, gh: GitHubTestServer) -> None:
    old = gh.add_comment(REPO, 7, f"{MARKER}\nold", created_at=NOW - timedelta(hours=2))
    for i in range(150):
        gh.add_comment(REPO, 7, f"chatter {i}", user="someone", created_at=NOW - timedelta(hours=1))
    gh.add_comment(REPO, 7, f"{MARKER}\nquoted by a human", user="someone")
    newer = gh.add_comment(REPO, 7, f"{MARKER}\nnewer", created_at=NOW - timedelta(minutes=1))
    url = dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, f"{MARKER}\nfresh", "update")
    assert url is not None and url.endswith(str(newer.id))
    assert old.id not in gh.comments and gh.comments[newer.id].body.endswith("fresh")
    assert sum(MARKER in c.body for c in gh.comments.values()) == 2  # ours + the human's quote
    assert len(gh.api_requests("GET", r"/comments$")) == 2
    assert [r.method for r in gh.api_requests() if r.method != "GET"] == ["PATCH", "DELETE"]


def test_comment_modes(g: Github, gh: GitHubTestServer) -> None:
    issue = g.get_repo(REPO).get_issue(7)
    assert dg.upsert_comment(issue, MARKER, f"{MARKER}\na", "off") is None
    dg.upsert_comment(issue, MARKER, f"{MARKER}\na", "update")
    dg.upsert_comment(issue, MARKER, f"{MARKER}\nb", "update")
    assert [c.body for c in gh.comments.values()] == [f"{MARKER}\nb"]
    dg.upsert_comment(issue, MARKER, f"{MARKER}\nc", "new")
    assert len(gh.comments) == 2


def test_a_comment_that_only_quotes_the_marker_is_not_ours(g: Github, gh: GitHubTestServer) -> None:
    """Another bot posting as the same login quoted the marker inside its text: it was deleted as an older
    duplicate, or overwritten with diagbot's results. Ours is the comment whose first line is the marker."""
    issue = g.get_repo(REPO).get_issue(7)
    quoting = issue.create_comment(f"Triage bot: the PR description says\n> {MARKER}\n> please look")
    dg.upsert_comment(issue, MARKER, f"{MARKER}\na", "update")
    dg.upsert_comment(issue, MARKER, f"{MARKER}\nb", "update")
    assert sorted(c.body for c in gh.comments.values()) == sorted([quoting.body, f"{MARKER}\nb"])


@pytest.mark.parametrize("heads", [("a" * 40, "a" * 40), ("a" * 40, "e" * 40)], ids=["same-commit", "newer-commit"])
def test_two_overlapping_runs_leave_one_comment(g: Github, gh: GitHubTestServer, heads: tuple[str, str]) -> None:
    """Two runs both found no comment, both posted, then both listed again before either deleted: each kept its
    own and deleted the other's, and the pull request was left with none. Both now keep the same one (the newest
    at the pull request's head)."""
    both = threading.Barrier(2)
    urls: dict[str, str | None] = {}

    def run(name: str, head: str) -> None:
        issue = g.get_repo(REPO).get_issue(7)
        listed, create, comments = [0], issue.create_comment, issue.get_comments

        def listing() -> Any:
            found = list(comments())
            listed[0] += 1
            both.wait(timeout=10)  # both list before either posts, and again before either deletes
            return found

        def posting(body: str) -> Any:
            made = create(body)
            both.wait(timeout=10)
            return made

        issue.get_comments, issue.create_comment = listing, posting  # type: ignore[method-assign]
        urls[name] = dg.upsert_comment(issue, MARKER, f"{MARKER}\n{name}", "update", head_sha=head,
                                       current_head=lambda: heads[1])  # fmt: skip

    threads = [threading.Thread(target=run, args=pair) for pair in zip(("A", "B"), heads, strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    [kept] = gh.comments.values()
    if heads[0] == heads[1]:  # either may be the newest: both runs point at the one that stays
        assert urls["A"] == urls["B"] is not None and urls["A"].endswith(str(kept.id))
    else:  # the older commit's run leaves the newer commit's results alone
        assert kept.body.endswith("\nB") and urls["A"] is None and urls["B"] is not None


def test_a_run_overtaken_while_posting_leaves_the_newer_commit_s_comment_alone(g: Github, gh: GitHubTestServer) -> None:
    """A run for an older commit posted while the run for the newer one did: it left the newer results alone, but
    its own new comment stayed beside them."""
    issue = g.get_repo(REPO).get_issue(7)
    real_create = issue.create_comment
    newer = "e" * 40

    def overtaken(body: str) -> Any:
        real_create(f"{MARKER}\n<!-- diagbot-head: {newer} -->\nthe newer commit's results")
        return real_create(body)

    issue.create_comment = overtaken  # type: ignore[method-assign]
    warnings: list[str] = []
    url = dg.upsert_comment(issue, MARKER, f"{MARKER}\nolder results", "update", head_sha="a" * 40,
                            warnings=warnings, current_head=lambda: newer)  # fmt: skip
    assert url is None and any("a newer commit's results were posted meanwhile" in w for w in warnings)
    assert [c.body for c in gh.comments.values()] == [
        f"{MARKER}\n<!-- diagbot-head: {newer} -->\nthe newer commit's results"
    ]


def test_403_on_comment_is_cannot_comment(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("POST", r"/comments$", 403, {"message": "Resource not accessible by integration"})
    with pytest.raises(dg.CannotComment, match="pull-requests: write"):
        dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, "x", "new")


def test_5xx_on_posting_a_comment_is_not_retried_blindly(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("POST", r"/comments$", 502, times=2)
    with pytest.raises(dg.GitHubUnavailable, match="502"):
        dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, "x", "new")
    # read back (not there), posted once more, never a third time (tests/test_github_writes.py has the rest)
    assert [r.method for r in gh.api_requests()] == ["POST", "GET", "POST"]


def test_5xx_on_a_read_is_retried(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("GET", r"/comments$", 503, headers={"Retry-After": "0"})
    dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, f"{MARKER}\nx", "update")
    # the listing, its retry, and the listing after posting
    assert len(gh.api_requests("GET", r"/comments$")) == 3 and len(gh.comments) == 1


def test_retry_after_beyond_the_max_wait_fails_cleanly(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("GET", r"/comments$", 429, headers={"Retry-After": "3600"})
    with pytest.raises(dg.GitHubUnavailable, match="max-wait-seconds"):
        dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, "x", "update")


def test_waits_add_up_to_the_cap_across_retries(gh: GitHubTestServer) -> None:
    # Each Retry-After (1 s) fits under the 2.5 s cap, but the third would take the total past it.
    gh.inject("GET", r"/comments$", 503, headers={"Retry-After": "1"}, times=5)
    client = dg.make_client(gh.api_url, "t", max_wait_seconds=2.5)
    try:
        with pytest.raises(dg.GitHubUnavailable, match="max-wait-seconds"):
            dg.upsert_comment(client.get_repo(REPO).get_issue(7), MARKER, "x", "update")
    finally:
        client.close()
    assert len(gh.api_requests("GET", r"/comments$")) == 3


def test_the_rate_limit_is_named_as_such_not_as_a_missing_permission(g: Github, gh: GitHubTestServer) -> None:
    """A 403 whose reset is past max-wait-seconds said "the token lacks a permission ... grant it", and on the
    comments list became "the token may not comment here"."""
    limited = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW.timestamp()) + 7200)}
    body = {"message": "API rate limit exceeded for installation ID 1."}
    gh.inject("GET", r"/comments$", 403, body=body, headers=limited)
    with pytest.raises(dg.GitHubUnavailable) as caught:
        dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, "x", "update")
    assert caught.value.problems == [
        "commenting on #7: GitHub answered 403: API rate limit exceeded for installation ID 1.; the token's rate "
        "limit is spent and its reset is past max-wait-seconds; rerun the job after the reset, or raise "
        "max-wait-seconds"
    ]


def test_a_wait_past_the_budget_says_what_was_being_done(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("GET", r"/comments$", 429, headers={"Retry-After": "3600"})
    with pytest.raises(dg.GitHubUnavailable) as caught:
        dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, "x", "update")
    assert caught.value.problems[0].startswith("commenting on #7: GitHub asked us to wait 3600s more")


def test_a_deleted_accounts_comment_with_the_marker_is_not_ours(g: Github, gh: GitHubTestServer) -> None:
    """GitHub sends `user: null` for a deleted account: reading its login raised AttributeError, so no comment
    and no check run were made."""
    ghost = gh.add_comment(REPO, 7, f"{MARKER}\nquoted by someone since deleted", deleted_user=True)
    dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, f"{MARKER}\nours", "update")
    assert gh.comments[ghost.id].body.endswith("since deleted")
    assert sorted(c.body for c in gh.comments.values()) == [
        f"{MARKER}\nours",
        f"{MARKER}\nquoted by someone since deleted",
    ]


def test_a_comment_posted_as_another_login_than_comment_author_says_so() -> None:
    """With a GitHub App's token every run posted a new comment, silently: its own is never found by the default
    comment-author. The warning names the login to set."""
    with GitHubTestServer(token_user="my-app[bot]") as app:
        app.add_repo(REPO)
        app.add_pull(REPO, 7, base_sha=BASE)
        client = dg.make_client(app.api_url, "t", max_wait_seconds=5)
        try:
            warnings: list[str] = []
            dg.upsert_comment(client.get_repo(REPO).get_issue(7), MARKER, f"{MARKER}\nx", "update", warnings=warnings)
        finally:
            client.close()
    assert warnings == [
        "commenting on #7: the comment was posted as my-app[bot], but comment-author is github-actions[bot], so the "
        "next run will not find it and will post another; set the comment-author input to my-app[bot]"
    ]


def test_other_authors_comments_are_never_taken_over(g: Github, gh: GitHubTestServer) -> None:
    theirs = gh.add_comment(REPO, 7, f"{MARKER}\nposted with a PAT", user="release-bot")
    issue = g.get_repo(REPO).get_issue(7)
    dg.upsert_comment(issue, MARKER, f"{MARKER}\nours", "update")
    assert gh.comments[theirs.id].body.endswith("posted with a PAT") and len(gh.comments) == 2
    dg.upsert_comment(issue, MARKER, f"{MARKER}\nagain", "update", author="release-bot")
    assert gh.comments[theirs.id].body.endswith("again")


def test_a_comment_over_githubs_limit_is_a_clear_error(g: Github, gh: GitHubTestServer) -> None:
    with pytest.raises(dg.GitHubError, match="422"):
        dg.upsert_comment(g.get_repo(REPO).get_issue(7), MARKER, MARKER + "x" * 65_600, "new")


def test_check_run_annotations_are_chunked(g: Github, gh: GitHubTestServer) -> None:
    notes = [
        {"path": "cases/c.json", "start_line": i + 1, "end_line": i + 1, "annotation_level": "failure", "message": "m"}
        for i in range(120)
    ]
    dg.create_check_run(g.get_repo(REPO), "a" * 40, "diagbot (diagnosis)", "failure", "1 regression", "sum", notes)
    [check] = gh.check_runs.values()
    assert (check.conclusion, check.head_sha, len(check.annotations)) == ("failure", "a" * 40, 120)
    assert [len(r.json["output"].get("annotations", [])) for r in gh.api_requests() if r.method != "GET"] == [
        50,
        50,
        20,
    ]


def test_403_on_check_run_is_cannot_check(g: Github, gh: GitHubTestServer) -> None:
    gh.inject("POST", r"/check-runs$", 403, {"message": "Resource not accessible by integration"})
    with pytest.raises(dg.CannotCheck, match="checks: write"):
        dg.create_check_run(g.get_repo(REPO), "a" * 40, "diagbot", "success", "t", "s", [])
