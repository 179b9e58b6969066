"""The command line people expect: --version, help on every option, `run --format json` against its published
schema, --quiet, the default-suite note, `eval` pointing other kinds to `run`, colour only on a terminal and
never with NO_COLOR, and a progress bar on a terminal's stderr (a pseudo-terminal here) but never on a pipe."""

from __future__ import annotations

import argparse
import io
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from diagbot.cli import build_parser, main
from diagbot.core.errors import ConfigError
from diagbot.core.gate import GateSettings
from diagbot.io.baselines import find_baselines
from diagbot.io.config import load_config, parse_config
from diagbot.kinds.schemas import SCHEMAS
from diagbot.pipeline import run_config
from diagbot.render.markdown import BaselineInfo, CurrentInfo
from diagbot.scaffold import starter, write_starter
from diagbot.terminal import GREEN, Painter, ProgressBar, colour_allowed, progress_bar
from tests.conftest import ROOT, case_dict, trace_dict, write_json

NOTE = (
    "note: there is no diagbot.yml here, so the built-in default suite was used: one trace suite, diagnosis, from "
    "cases/diagnosis-cases.json and fixtures/ (diagbot init writes a diagbot.yml to start from)\n"
)


def _started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str = "agent") -> Path:
    """A folder where `diagbot init --kind KIND` ran (quietly), made the working folder."""
    monkeypatch.chdir(tmp_path)
    write_starter(tmp_path, starter(kind))
    return tmp_path


def _outcome_schema() -> dict[str, Any]:
    committed = json.loads((ROOT / "schemas/run-outcome.schema.json").read_text(encoding="utf-8"))
    assert committed == SCHEMAS["run-outcome"]()
    return committed


def _validated(text: str) -> dict[str, Any]:
    outcome: dict[str, Any] = json.loads(text)
    jsonschema.Draft202012Validator(_outcome_schema()).validate(outcome)
    return outcome


# --- version and help ------------------------------------------------------------------------------------------


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == "diagbot 0.1.0\n"


def _parsers(parser: argparse.ArgumentParser, name: str = "diagbot") -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(name, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                found += _parsers(sub, f"{name} {command}")
    return found


def test_every_option_of_every_command_has_help() -> None:
    parsers = _parsers(build_parser())
    assert {name for name, _ in parsers} == {
        "diagbot",
        *(f"diagbot {c}" for c in ("init", "eval", "diff", "render", "run", "validate", "schema")),
    }
    missing = [
        f"{name}: {action.dest}"
        for name, parser in parsers
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()
    ]
    assert missing == []


def test_run_help_states_the_default_report_folder_and_the_new_options() -> None:
    (run,) = [p for name, p in _parsers(build_parser()) if name == "diagbot run"]
    text = " ".join(run.format_help().split())
    assert "--out OUT the report folder to write (default: build/diagbot)" in text
    assert "--format {text,json} what stdout gets: the PR comment (text, the default) or the outcome as JSON" in text
    assert "--quiet, -q print only warnings, errors and why a failed gate failed" in text


# --- run --format json and --quiet ------------------------------------------------------------------------------


def test_run_format_json_is_the_outcome_and_matches_its_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _started(tmp_path, monkeypatch)
    assert main(["run", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert (
        captured.err
        == "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/diagbot\n"
    )
    assert _validated(captured.out) == {
        "schemaVersion": 1,
        "conclusion": "success",
        "exitCode": 0,
        "reason": "no regression",
        "hasRegression": False,
        "config": "diagbot.yml",
        "baseline": None,
        "reportDir": "build/diagbot",
        "comment": "build/diagbot/comment.md",
        "summary": "build/diagbot/summary.md",
        "suites": [
            {
                "name": "agent", "kind": "agent", "evaluated": True, "totalCases": 2, "passedCases": 1,
                "failedCases": 1, "uncheckedCases": 0, "passRate": 0.5, "blockingCases": 0, "compared": False,
                "regressions": 0, "gatingRegressions": 0, "improvements": 0, "changes": 0, "blockingCaseIds": [],
                "regressedCaseIds": [], "report": "build/diagbot/reports/agent.json", "diff": None, "problems": [],
                "warnings": [],
            }
        ],
        "problems": [],
        "warnings": [],
    }  # fmt: skip
    assert (tmp_path / "build/diagbot/comment.md").is_file()


def test_run_format_json_with_an_unusable_config_still_prints_the_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A script reading stdout gets JSON whatever went wrong: here diagbot.yml cannot be used at all."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "diagbot.yml").write_text("suites: [{name: a, kind: agent, cases: c, fixtures: f, trials: 0}]\n")
    assert main(["run", "--format", "json"]) == 2
    captured = capsys.readouterr()
    problem = "diagbot.yml: suites.0.trials: expected all, any or a number of trials from 1 to 1000, not 0"
    assert captured.err == f"error: {problem}\n"
    assert _validated(captured.out) == {
        "schemaVersion": 1, "conclusion": "failure", "exitCode": 2,
        "reason": "input could not be used: nothing was evaluated", "hasRegression": False, "config": "diagbot.yml",
        "baseline": None, "reportDir": "build/diagbot", "comment": None, "summary": None, "suites": [],
        "problems": [problem], "warnings": [],
    }  # fmt: skip
    assert not (tmp_path / "build").exists()


def test_run_format_json_with_regressions_and_a_blocking_case(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    assert main(["run", "--baseline", "examples/baseline", "--out", str(out), "--format", "json"]) == 1
    outcome = _validated(capsys.readouterr().out)
    assert (outcome["conclusion"], outcome["exitCode"], outcome["reason"]) == ("failure", 1, "1 gating P0 case failed")
    assert outcome["hasRegression"] is True and outcome["baseline"] == "examples/baseline"
    by_name = {s["name"]: s for s in outcome["suites"]}
    assert list(by_name) == ["diagnosis", "workspace", "agent"]
    assert (by_name["diagnosis"]["regressions"], by_name["diagnosis"]["improvements"]) == (4, 3)
    assert by_name["agent"]["blockingCases"] == 1 and by_name["agent"]["uncheckedCases"] == 1
    # which cases, for a script (a newcomer's: the counts alone sent them to the diff files)
    assert by_name["agent"]["blockingCaseIds"] == ["refund_submit_confirmed_011"]
    assert by_name["agent"]["regressedCaseIds"] == ["refund_tool_partial_amount_003"]
    assert by_name["diagnosis"]["regressedCaseIds"] == ["oomkilled-restart-loop", "slow-sql-missing-index"]
    assert by_name["diagnosis"]["diff"] == str(out / "diff/diagnosis.json")
    assert all(Path(s["report"]).is_file() and Path(s["diff"]).is_file() for s in outcome["suites"])


def test_run_format_json_on_unusable_input_names_the_problem_and_the_default_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--format", "json"]) == 2
    captured = capsys.readouterr()
    outcome = _validated(captured.out)
    assert (outcome["conclusion"], outcome["exitCode"], outcome["config"]) == ("failure", 2, None)
    assert outcome["reason"] == "input could not be used: diagnosis"
    assert outcome["problems"] and outcome["problems"][0].startswith("cases/diagnosis-cases.json")
    (suite,) = outcome["suites"]
    assert (suite["evaluated"], suite["passRate"], suite["report"]) == (False, None, None)
    assert suite["problems"] == outcome["problems"]
    assert captured.err.startswith(NOTE)  # the problems' own wording belongs to the config, tested there


def test_quiet_prints_nothing_but_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _started(tmp_path, monkeypatch)
    assert main(["run", "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert (tmp_path / "build/diagbot/comment.md").is_file()
    assert main(["run", "-q", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and _validated(captured.out)["exitCode"] == 0
    (tmp_path / "fixtures/agent").rename(tmp_path / "elsewhere")
    assert main(["run", "-q"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("error: fixtures/agent")
    assert "fixtures folder not found" in captured.err
    assert all(line.startswith("error: ") for line in captured.err.splitlines())


def test_quiet_still_says_why_a_failed_gate_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing gate under --quiet exited 1 with nothing on stdout or stderr: a CI log had no reason."""
    _started(tmp_path, monkeypatch)
    assert main(["run", "--quiet", "--out", "base"]) == 0
    capsys.readouterr()
    for run_file in (tmp_path / "fixtures/agent").rglob("*.json"):
        run_file.write_text('[{"role": "user", "content": "hi"}]')
    assert main(["run", "--quiet", "--baseline", "base"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.splitlines()[-1].startswith("diagbot: ")
    assert "regression" in captured.err.splitlines()[-1] and captured.err.rstrip().endswith(
        "report folder build/diagbot"
    )
    # and in which cases: "3 regressions" alone hid that two of them were the suite's aggregates of one case
    assert " (regressed: agent/order_status_001); report folder" in captured.err.splitlines()[-1], captured.err


def test_a_run_writing_over_its_own_baseline_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--baseline base --out base` replaced the baseline with a regressed run without a word: the next run
    compared with it showed nothing."""
    _started(tmp_path, monkeypatch)
    assert main(["run", "--quiet", "--out", "base"]) == 0
    assert main(["run", "--quiet", "--baseline", "base", "--out", "other"]) == 0
    assert "is also the baseline" not in capsys.readouterr().err
    said = (
        "the report folder base is also the baseline: this run's reports replaced the ones it was compared with, so "
        "a later run compared with it will not show what regressed here; keep the baseline in a folder of its own "
        "(unless accepting this run as the new baseline was the point)"
    )
    (tmp_path / "link.json").symlink_to(tmp_path / "base/reports/agent.json")
    for given in ("base", "./base/", "base/reports/agent.json", "link.json"):
        assert main(["run", "--quiet", "--baseline", given, "--out", "base"]) == 0
        assert capsys.readouterr().err.splitlines()[-1] == f"warning: {said}"
        assert f"> {said}" in (tmp_path / "base/comment.md").read_text()  # the comment says it too
    assert main(["run", "--format", "json", "--baseline", "base", "--out", "base"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == [said]
    assert main(["run", "--quiet", "--baseline", "none", "--out", "none"]) == 2  # nothing compared, nothing replaced
    assert "also the baseline" not in capsys.readouterr().err
    # a baseline folder that merely sits in a folder named reports/ is not the report folder above it
    assert main(["run", "--quiet", "--out", "reports/main"]) == 0
    assert main(["run", "--quiet", "--baseline", "reports/main", "--out", "."]) == 0
    assert "also the baseline" not in capsys.readouterr().err
    # a config that cannot be read clears an earlier run's outputs, but never the reports of the baseline it names
    (tmp_path / "diagbot.yml").write_text((tmp_path / "diagbot.yml").read_text() + "bogus: 1\n")
    assert main(["run", "--quiet", "--baseline", "base", "--out", "base"]) == 2
    assert (tmp_path / "base/reports/agent.json").is_file() and not (tmp_path / "base/comment.md").exists()


# --- what the CLI says about its input --------------------------------------------------------------------------


def test_no_diagbot_yml_says_the_built_in_suite_was_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    missing = (
        "error: cases/diagnosis-cases.json (relative to the current folder): case file not found; write a "
        "diagbot.yml that names your suites\n"
        "error: fixtures (relative to the current folder): fixtures folder not found, so no case could be judged; "
        "write a diagbot.yml that names your suites\n"
    )
    assert main(["validate"]) == 2
    assert capsys.readouterr().err == NOTE + missing  # said once: the errors only say what to do
    assert main(["run", "--out", "o"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(NOTE + missing) and err.count("built-in default suite") == 1
    (tmp_path / "diagbot.yml").write_text("suites: [{name: s, cases: c.json, fixtures: f}]\n")
    main(["run", "--out", "o"])
    assert "built-in default suite" not in capsys.readouterr().err
    # run from a subfolder of the one that holds diagbot.yml: the built-in suite ran, advising the wrong fix
    (tmp_path / "cases" / "agent").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "cases" / "agent")
    assert main(["validate"]) == 2
    assert capsys.readouterr().err.startswith(NOTE.rstrip("\n") + "; ../../diagbot.yml exists: run diagbot from its "
                                              "folder, or give --config ../../diagbot.yml\n")  # fmt: skip


@pytest.mark.parametrize(
    ("cases", "what", "kind"),
    [
        ("cases/workspace", "a folder of <case-id>/case.yaml", "workspace"),
        ("cases/workspace/eo-gc-pause-001/case.yaml", "a workspace case.yaml", "workspace"),
        ("cases/agent", "a folder of YAML case files", "agent"),
        ("cases/agent/refund_eligibility_001.yaml", "a YAML case file", "agent"),
        ("cases/agent/refund_account_cases.json", "a JSON case file of agent cases (case_id)", "agent"),
    ],
    ids=["workspace-folder", "workspace-case", "agent-folder", "agent-file", "agent-json"],
)
def test_eval_on_another_kind_says_to_use_run(
    cases: str, what: str, kind: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:  # fmt: skip
    monkeypatch.chdir(ROOT)
    assert main(["eval", "--cases", cases, "--fixtures", "fixtures", "--output", str(tmp_path / "r.json")]) == 2
    assert capsys.readouterr().err == (
        f"error: {cases}: {what} is {'an' if kind == 'agent' else 'a'} {kind} suite, and diagbot eval reads only a "
        "trace case file (JSON); add the "
        f"suite to diagbot.yml with kind: {kind} and use diagbot run (diagbot init --kind {kind} writes an "
        "example)\n"
    )
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "Input should be greater than 0 (got 0)"),
        ("-5", "Input should be greater than 0 (got -5)"),
        ("nan", "Input should be a finite number (got nan)"),
        ("1.5", "Input should be a valid integer, got a number with a fractional part (got 1.5)"),
        ("lots", "Input should be a valid integer, unable to parse string as an integer (got 'lots')"),
    ],
    ids=["zero", "negative", "nan", "fraction", "text"],
)
def test_eval_refuses_a_fixture_size_as_diagbot_yml_does(
    value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["eval", "--cases", str(ROOT / "cases/diagnosis-cases.json"), "--fixtures", str(ROOT / "fixtures")]
    assert main([*args, "--output", str(tmp_path / "r.json"), "--max-fixture-bytes", value]) == 2
    assert capsys.readouterr().err == f"error: --max-fixture-bytes: {message}\n"
    assert not (tmp_path / "r.json").exists()
    if value != "nan":  # diagbot.yml refuses a NaN earlier, as a value that is no JSON number
        config = f"suites: [{{name: d, cases: c.json, fixtures: f, max-fixture-bytes: {value}}}]\n"
        with pytest.raises(ConfigError) as info:
            parse_config(config, "diagbot.yml", Path("."))
        assert info.value.problems == [f"diagbot.yml: suites.0.max-fixture-bytes: {message.split(' (got ')[0]}"]


def test_run_prints_a_trace_suites_warnings_on_stderr_even_when_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    trace = trace_dict()
    trace["session"]["duration_ms"] = trace["session"].pop("totalDurationMs")
    write_json(tmp_path / "fixtures/payment-timeout.json", trace)
    write_json(tmp_path / "cases.json", [case_dict()])
    (tmp_path / "diagbot.yml").write_text("suites: [{name: diagnosis, cases: cases.json, fixtures: fixtures}]\n")
    warnings = (
        "warning: diagnosis: session.totalDurationMs absent in 1/1 fixtures: duration is not compared\n"
        "warning: diagnosis: session.duration_ms -> did you mean totalDurationMs? (in fixture "
        "'payment-timeout.json')\n"
    )
    assert main(["run", "--quiet"]) == 0
    assert capsys.readouterr() == ("", warnings)
    assert main(["run"]) == 0
    assert (
        capsys.readouterr().err
        == warnings + "diagbot: no regression; report folder build/diagbot\n"  # its one case passes: nothing to say
    )
    assert main(["run", "--format", "json"]) == 0  # and in the machine-readable outcome, under the suite
    suite = json.loads(capsys.readouterr().out)["suites"][0]
    assert suite["warnings"] == [line.removeprefix("warning: diagnosis: ") for line in warnings.splitlines()]


# --- colour ------------------------------------------------------------------------------------------------------


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "environ", "allowed"),
    [
        (_Terminal(), {}, True),
        (_Terminal(), {"NO_COLOR": "1"}, False),
        (_Terminal(), {"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value turns colour off
        (_Terminal(), {"TERM": "dumb"}, False),
        (io.StringIO(), {}, False),
    ],
    ids=["terminal", "no-color", "empty-no-color", "dumb", "pipe"],
)
def test_colour_only_on_a_terminal_and_never_with_no_color(
    stream: io.StringIO, environ: dict[str, str], allowed: bool
) -> None:
    assert colour_allowed(stream, environ) is allowed


def test_painter_colours_the_pass_and_fail_marks_only_when_enabled() -> None:
    console = "diagnosis: 1/2 cases passed (50.0%)\n  FAIL disk-full: keyword_coverage: ..."
    assert Painter(False).console(console) == console
    assert Painter(True).console(console) == (
        "diagnosis: 1/2 cases passed (50.0%)\n  \x1b[31mFAIL\x1b[0m disk-full: keyword_coverage: ..."
    )
    assert Painter(True)("ok", GREEN) == "\x1b[32mok\x1b[0m" and Painter(False)("ok", GREEN) == "ok"


# --- the progress bar ----------------------------------------------------------------------------------------------


def test_the_bar_waits_a_second_redraws_at_most_every_tenth_and_clears_itself() -> None:
    stream, times = _Terminal(), iter([0.0, 0.5, 1.2, 1.25, 1.26])
    bar = ProgressBar(stream, clock=lambda: next(times))
    tell = bar.suite("diagnosis")  # t=0
    tell(1, 3)  # 0.5 s: too early
    assert stream.getvalue() == ""
    tell(2, 3)  # 1.2 s: drawn
    assert stream.getvalue() == "\rdiagnosis [################--------] 2/3 cases 1.2 s\x1b[K"
    tell(2, 3)  # 1.25 s: within a tenth of the last redraw, not the last case
    tell(3, 3)  # 1.26 s: the last case is always drawn
    assert stream.getvalue().endswith("\rdiagnosis [########################] 3/3 cases 1.3 s\x1b[K")
    bar.close()
    bar.close()
    assert stream.getvalue().endswith("3/3 cases 1.3 s\x1b[K\r\x1b[K")


def test_a_stream_of_unknown_length_counts_cases() -> None:
    stream, times = _Terminal(), iter([0.0, 2.0])
    bar = ProgressBar(stream, clock=lambda: next(times))
    bar.suite("agent")(1, None)
    assert stream.getvalue() == "\ragent 1 case 2.0 s\x1b[K"


def test_no_bar_at_all_on_a_pipe() -> None:
    assert progress_bar(io.StringIO()) is None
    assert isinstance(progress_bar(_Terminal()), ProgressBar)


@pytest.mark.parametrize(("kind", "suite", "total"), [("agent", "agent", None), ("trace", "diagnosis", 2),
                                                      ("workspace", "workspace", 2)])  # fmt: skip
def test_each_kind_reports_progress_case_by_case(
    kind: str, suite: str, total: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _started(tmp_path, monkeypatch, kind)
    calls: list[tuple[str, int, int | None]] = []
    config = load_config(None)
    baselines = find_baselines(None, [s.name for s in config.suites])
    outcome = run_config(config, baselines, BaselineInfo(source="none"), CurrentInfo(), None, GateSettings(),
                         progress=lambda name: lambda done, total: calls.append((name, done, total)))  # fmt: skip
    assert outcome.exit_code == 0
    assert calls == [(suite, 1, total), (suite, 2, total)]


def read_terminal(primary: int, child: subprocess.Popen[bytes], timeout: float) -> bytes:
    """What a child wrote to the pseudo-terminal whose other end is `primary`, until it closed its end (killing
    it after `timeout` seconds of silence)."""
    received = b""
    while True:
        ready, _, _ = select.select([primary], [], [], timeout)
        if not ready:
            child.kill()
            raise AssertionError(f"no output for {timeout} s: {received!r}")
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child closed its end
            return received
        if not chunk:
            return received
        received += chunk


def _run_on_terminal(folder: Path, *args: str, env: dict[str, str] | None = None) -> tuple[str, str, int]:
    """`diagbot run` in a child whose stderr is a pseudo-terminal (stdout a pipe), with the bar's one-second wait
    taken away; what the terminal received, what stdout received, and the exit code."""
    code = "import sys, diagbot.terminal as t; t.PROGRESS_DELAY = 0; from diagbot.cli import main; sys.exit(main())"
    primary, secondary = os.openpty()
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | (env or {})
    with subprocess.Popen([sys.executable, "-c", code, "run", *args], cwd=folder, env=environ, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=secondary) as child:  # fmt: skip
        os.close(secondary)
        received = read_terminal(primary, child, 60)
        assert child.stdout is not None
        out = child.stdout.read().decode()
        status = child.wait(timeout=60)
    os.close(primary)
    return received.decode().replace("\r\n", "\n"), out, status


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_on_a_terminal_the_bar_is_shown_and_the_verdict_coloured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _started(tmp_path, monkeypatch, "trace")
    terminal, out, status = _run_on_terminal(folder)
    assert status == 0 and out.startswith("<!-- diagbot:diagnosis -->")
    assert "\rdiagnosis [############------------] 1/2 cases " in terminal
    assert "\rdiagnosis [########################] 2/2 cases " in terminal
    assert terminal.endswith(
        "\r\x1b[K\x1b[33mdiagbot: no regression\x1b[0m (nothing compared: no baseline; 1 of 2 cases fail); "
        "report folder build/diagbot\n"  # yellow, not green: a case fails
    )


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_no_color_on_a_terminal_keeps_the_bar_and_drops_the_colour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _started(tmp_path, monkeypatch, "agent")
    terminal, _, status = _run_on_terminal(folder, env={"NO_COLOR": "1"})
    assert status == 0 and "\ragent 1 case " in terminal and "\x1b[3" not in terminal
    assert terminal.endswith(
        "\r\x1b[Kdiagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); "
        "report folder build/diagbot\n"
    )
    quiet, _, status = _run_on_terminal(folder, "--quiet")
    assert (quiet, status) == ("", 0)


def test_on_a_pipe_there_is_no_bar_and_no_colour(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _started(tmp_path, monkeypatch, "trace")
    code = "import sys, diagbot.terminal as t; t.PROGRESS_DELAY = 0; from diagbot.cli import main; sys.exit(main())"
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    done = subprocess.run([sys.executable, "-c", code, "run"], cwd=folder, env=environ, capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0
    assert (
        done.stderr
        == "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/diagbot\n"
    )


def test_a_report_too_large_to_read_back_as_a_baseline_is_warned_of_when_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A suite whose report passed the 64 MiB a baseline may have was written without a word: the push that made the
    baseline succeeded, and every pull request after it failed on reading it."""
    from diagbot import pipeline

    _started(tmp_path, monkeypatch)
    monkeypatch.setattr(pipeline, "REPORT_BYTES", 1_000)
    assert main(["run", "--quiet"]) == 0
    size = (tmp_path / "build/diagbot/reports/agent.json").stat().st_size
    assert capsys.readouterr().err == (
        f"warning: build/diagbot/reports/agent.json: {size:,} bytes, over the 1,000 bytes diagbot reads of a baseline "
        "report, so no run can be compared with it: split the suite so that each suite's report stays under it\n"
    )
