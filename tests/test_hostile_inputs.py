"""Hostile inputs, by class (issue 11: reads without caps, one value that kills everything, secrets, the relay's
folders). Each case asserts the exact outcome: exit code, message, the other suites still run, no empty files,
and a generous bound on time so a hang shows up as a failure rather than a stuck CI job."""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from diagbot.cli import main
from diagbot.core.errors import OutputError, ReportFormatError
from diagbot.core.fs import FileProblem, in_git_folder, read_bounded
from diagbot.core.report import load_json_object
from diagbot.core.values import count_containers
from diagbot.io import files
from tests.conftest import HANG_SECONDS, ROOT, case_dict, trace_dict, write_json
from tests.github_server import GitHubTestServer
from tests.test_relay import HEAD, REPO, TOKEN, relay_run, write_artifact

SECONDS = HANG_SECONDS  # a hang guard, not a speed test: only a hang takes this long


def timed(fn: Callable[[], Any]) -> Any:
    """Run `fn` in a thread; fail as hung (instead of hanging the suite) if it is still running after SECONDS."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed back to the test
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(SECONDS)
    assert not thread.is_alive(), f"still running after {SECONDS} s: hung"
    if "error" in box:
        raise box["error"]
    return box.get("value")


def two_suites(tmp_path: Path, cases_text: str | None = None) -> Path:
    """A config with a broken suite `bad` (its case file is what the test makes it) and a good suite `good`."""
    write_json(tmp_path / "fixtures" / "payment-timeout.json", trace_dict())
    write_json(tmp_path / "good.json", [case_dict()])
    if cases_text is not None:
        (tmp_path / "bad.json").write_text(cases_text, encoding="utf-8", errors="surrogatepass")
    config = tmp_path / "diagbot.yml"
    config.write_text(
        "suites:\n  - {name: bad, cases: bad.json, fixtures: fixtures}\n"
        "  - {name: good, cases: good.json, fixtures: fixtures}\n"
    )
    return config


def run(config: Path, out: Path, *extra: str) -> int:
    code: int = timed(lambda: main(["run", "--config", str(config), "--out", str(out), *extra]))
    return code


def assert_good_suite_ran(out: Path) -> None:
    report = json.loads((out / "reports" / "good.json").read_text())
    assert (report["totalCases"], report["passedCases"]) == (1, 1)
    for path in out.rglob("*"):
        assert not path.is_file() or path.stat().st_size > 0, f"{path} left empty"
    assert not [p for p in out.rglob(".*.tmp")], "a temporary file was left behind"


# --- reads without caps ------------------------------------------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: os.mkfifo(p), "is not a regular file (it is a FIFO)"),
        (lambda p: p.symlink_to("/dev/zero"), "resolves to /dev/zero, which diagbot never reads"),
        (lambda p: p.symlink_to(p), "cannot be resolved (a symbolic link loop?)"),
        (lambda p: p.mkdir(), "is not a regular file (it is a folder)"),
        (lambda p: os.truncate(p.touch() or p, 200 * 1024 * 1024), "over the 16,777,216-byte limit"),
        (lambda p: p.write_bytes(b"\xff\xfe[]"), "is not UTF-8 text"),
        (lambda p: p.write_bytes(b""), "the case file is empty"),
    ],
    ids=["fifo", "dev-zero", "symlink-loop", "folder", "200-MB-sparse", "not-utf8", "empty"],
)
def test_a_case_file_that_is_not_a_plain_small_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    make: Callable[[Path], Any], message: str) -> None:  # fmt: skip
    config = two_suites(tmp_path)
    make(tmp_path / "bad.json")
    assert run(config, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert message in err and "unexpectedly" not in err
    assert_good_suite_ran(tmp_path / "out")


def test_a_config_or_case_yaml_that_is_a_fifo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "diagbot.yml")
    assert timed(lambda: main(["run", "--config", str(tmp_path / "diagbot.yml"), "--out", str(tmp_path / "o")])) == 2
    assert "the config file is not a regular file (it is a FIFO)" in capsys.readouterr().err
    cases = tmp_path / "ws-cases"
    (cases / "c1").mkdir(parents=True)
    os.mkfifo(cases / "c1" / "case.yaml")
    (tmp_path / "ws-fixtures").mkdir()
    config = tmp_path / "ws.yml"
    config.write_text("suites: [{name: w, kind: workspace, cases: ws-cases, fixtures: ws-fixtures}]\n")
    assert run(config, tmp_path / "o2") == 2
    assert "case c1: case.yaml is not a regular file (it is a FIFO)" in capsys.readouterr().err


def test_read_bounded_never_reads_past_its_cap(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    assert read_bounded(path, 1000) == b"x" * 1000
    with pytest.raises(FileProblem, match="1,000 bytes, over the 999-byte limit"):
        read_bounded(path, 999)
    with pytest.raises(FileProblem, match="NUL"):
        read_bounded(Path("a\0b"), 10)


# --- one value kills everything ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[{"id": "a", "title": "\\ud800", "traceFixture": "x.json"}]', "title holds a lone surrogate"),
        ('[{"id": "\\udfff", "traceFixture": "x.json"}]', "id holds a lone surrogate"),
        ('[{"id": "a", "traceFixture": "a\\u0000b.json"}]', "holds a control character or a lone surrogate"),
        ('[{"id": "a", "traceFixture": "x.json", "minKeywordMatches": ' + "9" * 5000 + "}]",
         "a number with 5000 digits (at most 50)"),
        ('[{"id": "a", "traceFixture": "x.json", "minKeywordMatches": NaN}]', "NaN, which is not a JSON number"),
        ("[" * 100_000, "nested too deeply"),
    ],
    ids=["surrogate-title", "surrogate-id", "nul-in-path", "5000-digit-int", "nan", "deep"],
)  # fmt: skip
def test_one_bad_value_is_one_clear_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                            message: str) -> None:  # fmt: skip
    config = two_suites(tmp_path, text)
    assert run(config, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert message in err and "unexpectedly" not in err
    assert_good_suite_ran(tmp_path / "out")


@pytest.mark.parametrize(
    ("report", "message"),
    [
        ({"totalCases": 1, "passedCases": 1, "results": [{"caseId": "\ud800", "passed": True}]},
         "caseId holds a lone surrogate"),
        ('{"totalCases": ' + "1" * 5000 + ', "passedCases": 0, "results": []}', "a number with 5000 digits"),
        ("[" * 3_000_000, "more than the 2,000,000 a report may have"),
    ],
    ids=["surrogate-case-id", "huge-int", "millions-of-arrays"],
)  # fmt: skip
def test_a_hostile_baseline_report_is_named_and_the_run_goes_on(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 report: Any, message: str) -> None:  # fmt: skip
    config = two_suites(tmp_path)
    (tmp_path / "bad.json").write_text(json.dumps([case_dict()]))
    baseline = tmp_path / "baseline" / "reports"
    baseline.mkdir(parents=True)
    text = report if isinstance(report, str) else json.dumps(report)
    (baseline / "good.json").write_text(text)
    assert run(config, tmp_path / "out", "--baseline", str(tmp_path / "baseline")) == 2
    err = capsys.readouterr().err
    assert message in err and "unexpectedly" not in err
    assert_good_suite_ran(tmp_path / "out")
    assert message in (tmp_path / "out" / "comment.md").read_text()


def test_brackets_inside_strings_do_not_count_towards_the_report_cap() -> None:
    """A merged case titled with two million `[` and `{` made every later run refuse its report as a baseline
    (the cap counted the brackets of every string): one pull request could leave a suite without a baseline."""
    title = "[" * 1_100_000 + '\\"{' * 1_000_000  # escaped backslashes and quotes too: still inside the string
    text = json.dumps({"kind": "agent", "results": [{"caseId": "c1", "title": title, "tags": [[], {}]}]})
    assert text.count("[") + text.count("{") > 2_000_000
    assert load_json_object(text, "r.json")["results"][0]["title"] == title
    assert count_containers(text.encode()) == 6  # the object, results, the result, tags and the two inside it
    with pytest.raises(ReportFormatError, match="2,000,001 arrays and objects, more than the 2,000,000"):
        load_json_object('{"a": "' + "[" * 10 + '", "b": ' + "[" * 2_000_000 + "]" * 2_000_000 + "}", "r.json")


def test_a_workspace_case_folder_whose_name_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    os.mkdir(os.path.join(os.fsencode(cases), b"bad-\xff-name"))
    (tmp_path / "fixtures").mkdir()
    config = tmp_path / "diagbot.yml"
    config.write_text("suites: [{name: w, kind: workspace, cases: cases, fixtures: fixtures}]\n")
    assert run(config, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "case folder 'bad-\\xff-name' is not a UTF-8 name" in err and "unexpectedly" not in err
    assert (tmp_path / "out" / "comment.md").stat().st_size > 0


def test_a_config_with_a_huge_number_or_a_surrogate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = two_suites(tmp_path)
    config.write_text(config.read_text() + "thresholds: {tool-calls-min: " + "7" * 5000 + "}\n")
    assert run(config, tmp_path / "o") == 2
    assert "holds a value diagbot cannot read" in capsys.readouterr().err
    config.write_text('id: "\\ud800"\nsuites: [{name: s, cases: c.json, fixtures: f}]\n')
    assert run(config, tmp_path / "o") == 2
    assert "id holds a lone surrogate" in capsys.readouterr().err


def yaml_bomb(indent: str = "") -> str:
    """Twelve lines that alias their way to 9**11 (31 billion) values; the cheap surrogate test is defeated by a
    comment, so without a refusal the surrogate walk (or a message's repr) visits all of them."""
    lines = ['a0: &a0 ["x"]'] + [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 12)]
    return "# \\ud800\n" + "".join(f"{indent}{line}\n" for line in lines)


def test_yaml_aliases_are_refused_in_config_and_case_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = two_suites(tmp_path)
    config.write_text(config.read_text() + "x:\n" + yaml_bomb("  "))
    assert run(config, tmp_path / "o") == 2
    assert "not valid YAML (aliases (*a0) are not allowed here; write the value out)" in capsys.readouterr().err
    cases = tmp_path / "ws-cases"
    (cases / "c1").mkdir(parents=True)
    (cases / "c1" / "case.yaml").write_text("id: c1\ntitle: t\n" + yaml_bomb())
    (tmp_path / "ws-fixtures").mkdir()
    ws = tmp_path / "ws.yml"
    ws.write_text("suites: [{name: w, kind: workspace, cases: ws-cases, fixtures: ws-fixtures}]\n")
    assert run(ws, tmp_path / "o2") == 2
    assert "aliases (*a0) are not allowed here" in capsys.readouterr().err


@pytest.mark.parametrize("tagged", ["!!bool x", "!!float x", "!!timestamp x", "!!int 12abc", "!!binary ---x"])
def test_a_yaml_tag_its_value_cannot_be_is_a_clear_problem_in_every_yaml_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tagged: str
) -> None:
    """`id: !!bool x` in diagbot.yml stopped diagbot with "failed unexpectedly (KeyError: 'x')"; in an agent case
    file or a workspace case.yaml it stopped every suite of the run. The value is the text, or a YAML problem
    naming the line; never a crash."""
    config = tmp_path / "diagbot.yml"
    config.write_text(f"id: {tagged}\nsuites: [{{name: w, kind: workspace, cases: ws-cases, fixtures: ws-fixtures}}]\n")
    (tmp_path / "ws-cases" / "c1").mkdir(parents=True)
    (tmp_path / "ws-cases" / "c1" / "case.yaml").write_text(f"id: c1\ntitle: {tagged}\n")
    (tmp_path / "ws-fixtures").mkdir()
    code = run(config, tmp_path / "o")
    err = capsys.readouterr().err
    assert "unexpectedly" not in err and "Traceback" not in err, err
    if tagged == "!!timestamp x":  # the text: a valid id, and the run goes on to the case (which lacks a judge)
        assert code == 2 and "diagbot.yml" not in err and "case c1: field judge: is required" in err, err
    else:
        assert code == 2 and "diagbot.yml:1:5: not valid YAML (" in err, err
    config.write_text("suites: [{name: w, kind: workspace, cases: ws-cases, fixtures: ws-fixtures}]\n")
    code = run(config, tmp_path / "o")
    err = capsys.readouterr().err
    assert "unexpectedly" not in err and "Traceback" not in err, err
    assert code == 2 and ("case c1: not valid YAML (line 2: " in err) != (tagged == "!!timestamp x"), err


def test_an_output_that_cannot_be_utf8_is_still_written_whole(tmp_path: Path) -> None:
    files.write_file(tmp_path / "x.txt", "ok \ud800 still")
    assert (tmp_path / "x.txt").read_text() == "ok \\ud800 still"
    assert [p.name for p in tmp_path.iterdir()] == ["x.txt"]


# --- secrets -------------------------------------------------------------------------------------------------


GIT_SAID = "is inside a .git folder, which diagbot never reads (a checkout keeps its credentials there); give a path in"


@pytest.mark.parametrize(
    ("where", "said"),
    [("/proc/self", "resolves to"), ("/dev", "resolves to"), ("/sys/kernel", "resolves to"), (".git", GIT_SAID),
     ("linked", GIT_SAID), ("linked/sub", GIT_SAID)],
)  # fmt: skip
def test_a_config_may_not_point_at_the_kernels_trees_or_the_checkouts_git_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, said: str
) -> None:
    """`fixtures: .git` (or a link to it) let a workspace suite's checks read .git/config, where a checkout keeps
    the job's token when it keeps its credentials."""
    (tmp_path / ".git" / "sub").mkdir(parents=True)
    (tmp_path / "linked").symlink_to(".git")
    write_json(tmp_path / "good.json", [case_dict()])
    write_json(tmp_path / "fixtures" / "payment-timeout.json", trace_dict())
    config = tmp_path / "diagbot.yml"
    config.write_text(
        f"suites:\n  - {{name: env, kind: workspace, cases: cases, fixtures: {where}}}\n"
        "  - {name: good, cases: good.json, fixtures: fixtures}\n"
    )
    assert run(config, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert f"suites.0.fixtures: '{where}' {said}" in err and "never reads" in err
    assert_good_suite_ran(tmp_path / "out")


def test_registered_secrets_never_reach_an_output_file(tmp_path: Path) -> None:
    secret = "ghs_" + "s3cr3t" * 6
    as_git_keeps_it = base64.b64encode(f"x-access-token:{secret}".encode()).decode()  # checkout's extraheader
    files.register_secret(secret)
    try:
        files.write_file(tmp_path / "r.json", json.dumps({"title": f"leak {secret} here, {as_git_keeps_it} too"}))
        assert (tmp_path / "r.json").read_text() == '{"title": "leak *** here, *** too"}'
    finally:
        files._SECRETS.difference_update({secret, files.escape_inline(secret), as_git_keeps_it})


def test_telling_a_report_from_another_file_never_decodes_an_array_bomb() -> None:
    """A reports/ file of a baseline artifact that no suite configures is looked at only to tell whether it is a
    report (a suite that vanished) or another tool's file; five million nested arrays, a few KB zipped, were
    decoded whole for that (433 MB). Past the report container cap it is taken for a report unread."""
    from diagbot.io.baselines import reads_as_report

    bomb = b'{"x": [' + b"[]," * 5_000_000 + b"[]]}"
    assert reads_as_report(bomb) is True
    assert reads_as_report(b'{"lines": 91}') is False and reads_as_report(b'{"schemaVersion": 1}') is True
    assert reads_as_report(b"not JSON") is False
    assert reads_as_report(b"[" + b"0.0," * 1_000_000 + b"0.0]") is False  # no object: not decoded at all


def test_no_input_file_is_read_from_a_git_folder_even_through_a_link(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "run.json").symlink_to(".git/config")
    for path in (tmp_path / ".git" / "config", tmp_path / "run.json"):
        with pytest.raises(FileProblem) as caught:
            read_bounded(path, 1024)
        assert caught.value.message == (
            "is inside a .git folder, which diagbot never reads (a checkout keeps its credentials there)"
        )
    assert read_bounded(tmp_path / ".git" / "config", 1024, git=True) == b"[core]\n"  # the checked-out commit
    # on a disk that ignores case (macOS), `.GIT/config` opens `.git/config`
    assert in_git_folder(".GIT/config") and in_git_folder("/w/a/.Git") and not in_git_folder("/w/a.git/x")


def test_excerpts_are_short_and_scrubbed() -> None:
    from diagbot.core.values import excerpt

    assert excerpt("GITHUB_TOKEN=ghs_abcdefghijklmnopqrstuvwxyz0123") == "[redacted]"
    assert excerpt("key 0123456789abcdef0123456789abcdef01 end") == "key [redacted] end"
    assert excerpt("evidences/metrics_summary.json") == "evidences/metrics_summary.json"
    assert len(excerpt("plain words " * 50)) <= 40
    # forms a hostile pass found shown: a JSON pair, a bearer token, AWS, a URL's password, a JWT, a split token
    for secret, kept in (
        ('{"password": "Spring2024!prod"}', '{"'), ('"api_key": "abc123def"', '"'),
        ("Authorization: Bearer 9fKq2LmX7vRt", ""), ("id AKIAIOSFODNN7EXAMPLE", "id "),
        ("https://app:hunter2@db.internal/x", "https://"), ("eyJhbGciOiJI.eyJzdWIiOiIx.c2ln", ""),
        ("gh\u200bp_A1b2C3d4E5f6G7h8", ""), ("xoxb-1234-5678-abcdefgh", ""),
    ):  # fmt: skip
        shown = excerpt(secret, 80)
        assert shown.startswith(kept + "[redacted]"), (secret, shown)
        assert not any(part in shown for part in ("Spring", "abc123", "9fKq", "AKIA", "hunter2", "eyJ", "A1b2", "xoxb"))
    assert excerpt("the token was rotated; retries: 3") == "the token was rotated; retries: 3"
    # from its review: a quoted value to its closing quote, any key naming a secret; not words that only hold one
    for secret in ('{"password": "p,ss;word"}', "secret_key=abc123", "SECRET_KEY: xyz789", "db_passwd=hunter2"):
        assert not any(part in excerpt(secret, 80) for part in ("ss;word", "abc123", "xyz789", "hunter2")), secret
    for plain in (
        "OAuth: enabled",
        "auth: required",
        "credentials: see vault",
        "pwd: /home/user",
        "author: me",
        "max_tokens: 1024",
        "used 1,200 tokens: over budget",
        "Secrets: none found",
        "passwordless: true",
    ):
        assert excerpt(plain, 80) == plain
    # from the review of those fixes: JSON inside JSON, PHP's =>, an escaped quote inside the value, smart quotes
    for secret in ('{\\"password\\": \\"hunter2\\"}', "'password' => 'hunter2'", '"password": "ab\\"cd efg"',
                   "password: \u201chunter2 x\u201d"):  # fmt: skip
        assert not any(part in excerpt(secret, 80) for part in ("hunter2", "cd efg", " x")), excerpt(secret, 80)


def test_a_query_type_error_quotes_the_value_scrubbed() -> None:
    """JMESPath's type error quoted the value it was given, unscrubbed, into the check's detail and the comment."""
    from jmespath.exceptions import JMESPathTypeError

    from diagbot.core.query import run_query
    from diagbot.kinds.workspace.checks import _type_problem

    with pytest.raises(JMESPathTypeError) as caught:
        run_query("abs(retries)", {"retries": {"GITHUB_TOKEN": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"}})
    said = _type_problem(caught.value)
    assert "[redacted]" in said and "ghp_" not in said and "A1b2" not in said, said


def test_eval_reads_no_device_either(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.json").symlink_to("/dev/zero")
    args = ["eval", "--cases", str(tmp_path / "cases.json"), "--fixtures", str(ROOT / "fixtures"), "--output", "x"]
    assert timed(lambda: main(args)) == 2
    assert "the case file is not a regular file (it is a device)" in capsys.readouterr().err


# --- the relay trusts no folder ------------------------------------------------------------------------------


@pytest.fixture
def gh() -> Iterator[GitHubTestServer]:
    with GitHubTestServer(token=TOKEN) as server:
        server.add_repo(REPO, id=1001)
        server.add_pull(REPO, 7, head_sha=HEAD, head_repo="fork/app", base_ref="main", base_sha="b" * 40)
        yield server
        server.assert_no_violations()


@pytest.mark.parametrize("link", ["reports", "diff", "diagbot-report"])
def test_the_relay_refuses_a_symlinked_folder(gh: GitHubTestServer, tmp_path: Path, link: str) -> None:
    folder = write_artifact(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    target = folder if link == "diagbot-report" else folder / link
    target.rename(elsewhere)
    target.symlink_to(elsewhere, target_is_directory=True)
    code, log = relay_run(gh, tmp_path)
    assert code == 2 and "a symbolic link on the way to" in log
    assert not gh.comments and not gh.check_runs


def test_the_relay_refuses_a_report_of_millions_of_arrays_before_building_it(
    gh: GitHubTestServer, tmp_path: Path
) -> None:
    import tracemalloc

    folder = write_artifact(tmp_path)
    (folder / "reports" / "diagnosis.json").write_text("[" + "[]," * 5_000_000 + "[]]")  # 15 MB
    tracemalloc.start()
    try:
        code, log = timed(lambda: relay_run(gh, tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2 and "more than the 2,000,000 a report may have" in log
    assert peak < 200 * 1024 * 1024  # the file's text and little else; parsing it took about 1.6 GB
    assert not gh.comments and not gh.check_runs


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.symlink_to(p), "cannot be resolved (a symbolic link loop?)"),
        (lambda p: os.mkfifo(p), "is not a regular file (it is a FIFO)"),
    ],
    ids=["symlink-loop", "fifo"],
)
def test_a_fixture_that_is_a_loop_or_a_fifo_fails_only_its_case(tmp_path: Path, make: Callable[[Path], Any],
                                                                 message: str) -> None:  # fmt: skip
    config = two_suites(tmp_path)
    write_json(tmp_path / "bad.json", [case_dict(traceFixture="odd.json")])
    make(tmp_path / "fixtures" / "odd.json")
    assert run(config, tmp_path / "out") == 0
    [result] = json.loads((tmp_path / "out" / "reports" / "bad.json").read_text())["results"]
    assert result["failedChecks"] == [f"fixture_invalid: fixture 'odd.json' {message}"]
    assert_good_suite_ran(tmp_path / "out")


def test_outputs_are_never_written_through_a_link_from_the_working_folder_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the action runs: the working folder is the pull request's checkout, the report folder an absolute path
    inside it, and `build` a link the pull request committed. Outside the working folder only the report folder
    itself and what is below it are checked."""
    repo, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    repo.mkdir()
    elsewhere.mkdir()
    (repo / "build").symlink_to(elsewhere, target_is_directory=True)
    monkeypatch.chdir(repo)
    for root in (repo / "build" / "diagbot", Path("build/diagbot")):
        with pytest.raises(OutputError, match=r"build: is a symbolic link; diagbot writes its outputs only"):
            files.write_file(root / "reports" / "s.json", "{}", root)
    assert list(elsewhere.iterdir()) == []
    outside = elsewhere / "out"  # not below the working folder: the path above it is the user's to choose
    files.write_file(outside / "reports" / "s.json", "{}", outside)
    assert (outside / "reports" / "s.json").read_text() == "{}"
    (outside / "diff").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(OutputError, match=r"out/diff: is a symbolic link"):
        files.write_file(outside / "diff" / "s.json", "{}", outside)


def test_a_byte_order_mark_and_a_lone_surrogate_in_run_files_are_named(tmp_path: Path) -> None:
    """A workspace JSON file that opens with a byte-order mark was "not valid JSON (expected value at line 1
    column 1)" (the other kinds skip the mark); a lone surrogate escape, in a workspace file or a trace, was
    "unexpected end of hex escape", which names no fault (a hostile pass)."""
    (tmp_path / "fixtures/w1/evidences").mkdir(parents=True)
    (tmp_path / "cases/w1").mkdir(parents=True)
    (tmp_path / "diagbot.yml").write_text(
        "suites:\n  - {name: t, kind: trace, cases: c.json, fixtures: fixtures}\n"
        "  - {name: w, kind: workspace, cases: cases, fixtures: fixtures}\n"
    )
    (tmp_path / "c.json").write_text('[{"id": "s", "traceFixture": "s.json"}]')
    (tmp_path / "fixtures/s.json").write_text(
        '{"session": {"answer": "pool exhausted \\ud83d", "selfEvaluation": {"verifier_evaluation": {"verdict": '
        '"PASS"}}}}'
    )
    checks = "[" + ", ".join(f"{{id: {n}, json_valid: evidences/{n}.json}}" for n in "abc") + "]"
    others = "".join(f"  {b}: [{{id: {b[0]}, file_exists: evidences/a.json}}]\n" for b in (
        "evidence_collection", "critical_evidence", "evidence_routing", "diagnosis"))  # fmt: skip
    (tmp_path / "cases/w1/case.yaml").write_text(f"id: w1\ntitle: t\njudge:\n  workflow: {checks}\n{others}")
    (tmp_path / "fixtures/w1/evidences/a.json").write_bytes(b'\xef\xbb\xbf{"a": 1}')
    (tmp_path / "fixtures/w1/evidences/b.json").write_text('{"a": "\\ud83d"}')
    (tmp_path / "fixtures/w1/evidences/c.json").write_text("[" * 300 + "]" * 300)
    out = tmp_path / "out"
    main(["run", "--config", str(tmp_path / "diagbot.yml"), "--out", str(out), "--quiet", "--no-fail"])
    half = "holds \\ud83d, half of a character (a lone surrogate) and no text: a string cut in the middle of an emoji?"
    trace = json.loads((out / "reports/t.json").read_text())["results"][0]["failedChecks"]
    assert trace == [f"fixture_invalid: fixture 's.json': {half} write the whole character"]
    rows = json.loads((out / "reports/w.json").read_text())["results"][0]["packet"]["workflow"]["checks"]
    assert [r["detail"] for r in rows] == [
        "evidences/a.json: valid JSON", f"evidences/b.json: {half} write the whole character",
        "evidences/c.json: nested too deeply to read (arrays and objects inside one another, about 200 levels)",
    ]  # fmt: skip
