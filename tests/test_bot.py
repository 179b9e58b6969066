"""The bot's shell pieces without HTTP: settings from the environment, event targets, runner files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from diagbot.action import events, runner
from diagbot.action.settings import CommentMode, Settings, SettingsError

EVENTS = Path(__file__).resolve().parent / "events"


def env(**overrides: str) -> dict[str, str]:
    values = {
        "INPUT_GITHUB-TOKEN": "secret-token",
        "INPUT_COMMENT": "",
        "INPUT_REPORT-DIR": "",
        "INPUT_MAX-WAIT-SECONDS": "",
        "GITHUB_REPOSITORY": "octo/app",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(EVENTS / "pull_request.json"),
    }
    values.update(overrides)
    return values


def test_empty_inputs_mean_defaults() -> None:
    settings = Settings.from_env(env())
    assert settings.comment is CommentMode.UPDATE
    assert (settings.report_dir, settings.max_wait_seconds, settings.baseline_artifact) == (
        "diagbot-report",
        120.0,
        "diagbot-report",
    )
    assert settings.fail_on_regression is None and settings.thresholds == {}
    assert "secret-token" not in repr(settings)


def test_every_bad_input_is_listed_and_the_token_never_echoed() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(
            env(**{"INPUT_GITHUB-TOKEN": "", "INPUT_COMMENT": "loud", "INPUT_FAIL-ON-REGRESSION": "maybe"})
        )
    text = "\n".join(caught.value.problems)
    assert "input 'github-token'" in text and "input 'comment'" in text and "input 'fail-on-regression'" in text
    assert len(caught.value.problems) == 3


def test_thresholds_inputs() -> None:
    settings = Settings.from_env(env(**{"INPUT_TOOL-CALLS-PCT": "35", "INPUT_SCORE-POINTS": ""}))
    assert settings.thresholds == {"tool-calls-pct": 35.0}


def test_the_baseline_workflow_is_this_runs_own_unless_an_input_names_another() -> None:
    ref = "octo/app/.github/workflows/diagbot.yml@refs/pull/7/merge"
    assert Settings.from_env(env(GITHUB_WORKFLOW_REF=ref)).baseline_workflow_path == ".github/workflows/diagbot.yml"
    named = env(GITHUB_WORKFLOW_REF=ref, **{"INPUT_BASELINE-WORKFLOW": "diagbot-main.yml"})
    assert Settings.from_env(named).baseline_workflow_path == ".github/workflows/diagbot-main.yml"
    assert Settings.from_env(env()).baseline_workflow_path is None  # outside Actions: any workflow's runs
    other = env(GITHUB_WORKFLOW_REF="elsewhere/tools/.github/workflows/shared.yml@refs/heads/main")
    assert Settings.from_env(other).baseline_workflow_path is None
    with pytest.raises(SettingsError, match="input 'baseline-workflow'"):
        Settings.from_env(env(**{"INPUT_BASELINE-WORKFLOW": "diagbot"}))


def test_pull_request_target_is_the_head_not_the_merge_commit() -> None:
    target = events.resolve_target(Settings.from_env(env(GITHUB_SHA="c" * 40)), port=None)  # type: ignore[arg-type]
    assert (target.role, target.pr_number, target.head_sha) == (events.Role.PULL_REQUEST, 7, "a" * 40)
    assert (target.base_branch, target.base_sha) == ("main", "b" * 40)


def test_pull_request_target_must_have_checked_out_the_head_it_posts_on(tmp_path: Path) -> None:
    """pull_request_target checks out the base branch by default: diagbot evaluated the base and posted success on
    the pull request's head. It now requires the head, as a rerun naming pr-number does."""
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    (workspace / ".git" / "HEAD").write_text("b" * 40 + "\n")  # the base commit
    settings = Settings.from_env(env(GITHUB_EVENT_NAME="pull_request_target", GITHUB_WORKSPACE=str(workspace),
                                     GITHUB_SHA="b" * 40))  # fmt: skip
    with pytest.raises(events.EventError, match=r"^pull request #7 is at aaaaaaaaaaaa, but the workspace holds bbbb"):
        events.resolve_target(settings, port=None)  # type: ignore[arg-type]
    (workspace / ".git" / "HEAD").write_text("a" * 40 + "\n")
    assert events.resolve_target(settings, port=None).head_sha == "a" * 40  # type: ignore[arg-type]


BASE_SHA = ": pull_request.base.sha is not a 40-digit commit sha"
BASE_REF = ": pull_request.base.ref is not a branch name (1 to 255 characters of text)"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p.pop("pull_request"), " lacks pull_request; was the workflow triggered by this event?"),
        (
            lambda p: p["pull_request"].update(head=None),
            " lacks pull_request.head.sha; was the workflow triggered by this event?",
        ),
        (lambda p: p["pull_request"].update(number=True), ": pull_request.number is bool, expected int"),
        (lambda p: p["pull_request"]["head"].update(sha={"x": 1}), ": pull_request.head.sha is dict, expected str"),
        (lambda p: p["pull_request"]["head"].update(sha="abc"), ": pull_request.head.sha is not a 40-digit commit sha"),
        (lambda p: p["pull_request"].update(number=0), ": pull_request.number is not a pull request's number"),
        # the base: written into pr.json under the relay reader's bounds, and asked of GitHub ("this is a bug" before)
        (lambda p: p["pull_request"]["base"].update(sha=""), BASE_SHA),
        (lambda p: p["pull_request"]["base"].update(sha="f" * 64), BASE_SHA),
        (lambda p: p["pull_request"]["base"].update(ref="b" * 256), BASE_REF),
        (lambda p: p["pull_request"]["base"].update(ref="\ud800"), BASE_REF),
    ],
    ids=["no-pull", "null-head", "bool-number", "dict-sha", "short-sha", "zero", "empty-base-sha", "long-base-sha",
         "long-base-ref", "surrogate-base-ref"],
)  # fmt: skip
def test_a_malformed_pull_request_payload_names_its_field(tmp_path: Path, change: Any, message: str) -> None:
    """`head: null` said "lacks 'NoneType' object is not subscriptable"; `number: true` was pull request 1."""
    payload = json.loads((EVENTS / "pull_request.json").read_text())
    change(payload)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload))
    with pytest.raises(events.EventError) as caught:
        events.resolve_target(Settings.from_env(env(GITHUB_EVENT_PATH=str(path))), port=None)  # type: ignore[arg-type]
    assert caught.value.problems == [f"{path}: the pull_request payload{message}"]


def test_a_pull_request_run_without_an_event_payload_says_so() -> None:
    environment = env()
    del environment["GITHUB_EVENT_PATH"]
    with pytest.raises(events.EventError, match=r"^GITHUB_EVENT_PATH is not set, so the pull_request payload"):
        events.resolve_target(Settings.from_env(environment), port=None)  # type: ignore[arg-type]


def test_push_target_compares_with_the_previous_baseline_of_its_branch() -> None:
    settings = Settings.from_env(env(GITHUB_EVENT_NAME="push", GITHUB_EVENT_PATH=str(EVENTS / "push.json")))
    target = events.resolve_target(settings, port=None)  # type: ignore[arg-type]
    assert (target.role, target.base_branch, target.base_sha, target.head_sha) == (
        events.Role.PUSH,
        "main",
        "9" * 40,
        "b" * 40,
    )


def test_unsupported_event() -> None:
    with pytest.raises(events.UnsupportedEvent, match="'schedule'"):
        events.resolve_target(Settings.from_env(env(GITHUB_EVENT_NAME="schedule")), port=None)  # type: ignore[arg-type]


def test_outputs_are_heredoc_blocks_that_survive_multiline_values(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runner.write_outputs(out, {"comment-url": "a\nb", "pass-rate": "0.5"})
    lines = out.read_text().splitlines()
    assert lines[0].startswith("comment-url<<ghadelimiter_") and lines[1:3] == ["a", "b"]
    assert lines[3] == lines[0].split("<<")[1]
    assert lines[5] == "0.5"


def test_annotation_messages_are_escaped() -> None:
    assert runner.escape("50% done\r\nnext") == "50%25 done%0D%0Anext"


def test_job_summary_is_cut_under_one_mebibyte(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    runner.write_summary(summary, "é" * 700_000)  # 1.4 MB of UTF-8
    text = summary.read_text(encoding="utf-8")
    assert len(text.encode()) < 1024 * 1024 and "cut to fit the job summary's 1 MiB limit" in text


def test_checked_out_commit_reads_git_without_git(tmp_path: Path) -> None:
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    assert events.checked_out_commit(tmp_path) is None  # no HEAD
    (git / "HEAD").write_text("b" * 40 + "\n")
    assert events.checked_out_commit(tmp_path) == "b" * 40
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(f"# pack-refs with: peeled\n{'d' * 40} refs/heads/main\n")
    assert events.checked_out_commit(tmp_path) == "d" * 40
    (git / "refs" / "heads" / "main").write_text("e" * 40)
    assert events.checked_out_commit(tmp_path) == "e" * 40
    (git / "HEAD").write_text("ref: ../../etc/passwd\n")
    assert events.checked_out_commit(tmp_path) is None


def test_annotation_messages_are_cut_by_utf8_bytes_not_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GitHub's limit is 64 KB: 60,000 CJK characters (180,000 bytes) made it refuse the check run itself. The
    annotations the check run is created with are cut by bytes, between characters."""
    from types import SimpleNamespace

    from diagbot.action import bot
    from diagbot.kinds.base import Annotation

    said = {"long": "退款" * 40_000, "edge": "x" * (bot.MAX_ANNOTATION_BYTES - 1) + "退", "short": "short"}
    found = [Annotation(tmp_path / "cases.yaml", 3, name, message) for name, message in said.items()]
    monkeypatch.setattr(bot.registry, "annotate", lambda suite, report: found)
    outcome = SimpleNamespace(suites=[SimpleNamespace(report=object(), input=object())])
    settings = Settings.from_env(env(GITHUB_WORKSPACE=str(tmp_path)))
    made = {a["title"]: a["message"] for a in bot.case_annotations(settings, outcome)[0]}  # type: ignore[arg-type]
    assert made["long"] == "退款" * 10_000 and len(made["long"].encode()) == bot.MAX_ANNOTATION_BYTES
    assert made["edge"] == "x" * (bot.MAX_ANNOTATION_BYTES - 1)  # never half a character
    assert made["short"] == "short"


def test_a_check_run_gets_a_bounded_number_of_annotations_gating_failures_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pull request decides how many cases fail: 5,000 failing cases were 100 requests of up to 3 MB each."""
    from types import SimpleNamespace

    from diagbot.action import bot
    from diagbot.kinds.base import Annotation

    found = [Annotation(tmp_path / "c.yaml", i + 1, f"w{i}", "informational", "warning") for i in range(100)]
    found += [Annotation(tmp_path / "c.yaml", i + 1, f"f{i}", "gating", "failure") for i in range(160)]
    # a later suite's blocking P0 failures: a trace suite's 200 failures had pushed them out
    found += [Annotation(tmp_path / "a.yaml", i + 1, f"p{i}", "P0", "failure", blocking=True) for i in range(2)]
    monkeypatch.setattr(bot.registry, "annotate", lambda suite, report: found)
    outcome = SimpleNamespace(suites=[SimpleNamespace(report=object(), input=object())])
    settings = Settings.from_env(env(GITHUB_WORKSPACE=str(tmp_path)))
    made, left_out = bot.case_annotations(settings, outcome)  # type: ignore[arg-type]
    assert (len(made), left_out) == (bot.MAX_CHECK_ANNOTATIONS, 62)
    assert [a["title"] for a in made] == ["p0", "p1"] + [f"f{i}" for i in range(160)] + [f"w{i}" for i in range(38)]
    assert bot._annotations_left_out(left_out) == (
        "\n\n62 more failing cases are not annotated here (a check run gets at most 200 annotations, of at most "
        "1,000,000 bytes of text together, blocking failures first, then gating ones); the comment and the report "
        "list every case."
    )
    assert bot._annotations_left_out(0) == ""
    big = [Annotation(tmp_path / "c.yaml", 1, f"b{i}", "m" * 70_000, "failure") for i in range(30)]
    monkeypatch.setattr(bot.registry, "annotate", lambda suite, report: big)
    made, left_out = bot.case_annotations(settings, outcome)  # type: ignore[arg-type]
    assert (len(made), left_out) == (16, 14)  # 16 messages of 60,000 bytes fit in 1,000,000


@pytest.mark.parametrize(
    ("token", "why", "secret"),
    [
        # the runner masks a secret line by line, and diagbot masked the whole token: its second line showed
        ("ghp_firstHalf\nSECONDHALF", "holds a line break, a space or a control character; pass the token alone",
         "SECONDHALF"),
        # `ghs_€...` passed the settings and failed the first request: "diagbot failed unexpectedly"
        ("ghs_€secretpart", "holds a character that is not ASCII, which no GitHub token has; pass the token",
         "secretpart"),
    ],
    ids=["line-break", "not-ascii"],
)  # fmt: skip
def test_a_token_no_header_can_carry_whole_is_refused_unechoed(token: str, why: str, secret: str) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(env(**{"INPUT_GITHUB-TOKEN": token}))
    assert caught.value.problems == [
        f"input 'github-token' (INPUT_GITHUB-TOKEN): Value error, the token {why}; set it in the workflow step's "
        "`with:`"
    ]
    assert secret not in str(caught.value) and token[:8] not in str(caught.value)
