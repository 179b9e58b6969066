"""The command line end to end on the bundled example: exit codes, files written, golden report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from diagbot.cli import main
from tests.conftest import ROOT, bundled_workspace, check_golden, write_json


def _normalise_run(text: str) -> str:
    data = json.loads(text)
    data["run"] = None  # the one non-deterministic part
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def test_eval_bundled_suite_golden(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report.json"
    code = main(["eval", "--cases", str(ROOT / "cases/diagnosis-cases.json"), "--fixtures", str(ROOT / "fixtures"),
                 "--output", str(out)])  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.startswith(
        "diagnosis: 14/30 cases passed (46.7%)\n  FAIL jvm-gc-pause-misdiagnosed: keyword_coverage"
    )
    check_golden("report-diagnosis.json", _normalise_run(out.read_text(encoding="utf-8")))


def test_eval_is_byte_identical_apart_from_run(tmp_path: Path) -> None:
    args = ["eval", "--cases", str(ROOT / "cases/diagnosis-cases.json"), "--fixtures", str(ROOT / "fixtures")]
    main([*args, "--output", str(tmp_path / "a.json")])
    main([*args, "--output", str(tmp_path / "b.json")])
    a, b = (_normalise_run((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a == b


def test_every_check_code_occurs_in_the_bundled_suite() -> None:
    from diagbot.kinds.trace.checks import Code

    report = json.loads((ROOT / "tests/golden/report-diagnosis.json").read_text(encoding="utf-8"))
    seen = {entry.split(":")[0] for r in report["results"] for entry in r["failedChecks"]}
    assert seen == {c.value for c in Code}
    assert any(r["passed"] for r in report["results"])


def test_unusable_case_file_exits_2_listing_every_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = write_json(
        tmp_path / "cases.json", [{"id": "a", "traceFixture": "a.json", "alowedVerdicts": []}, {"id": "a"}]
    )
    code = main(["eval", "--cases", str(cases), "--fixtures", str(tmp_path), "--output", str(tmp_path / "r.json")])
    assert code == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"error: {cases}: case 'a' (#1): unknown field 'alowedVerdicts' (did you mean allowedVerdicts?)",
        f"error: {cases}: case 'a' (#2): duplicate id 'a' (first used by case #1)",
        f"error: {cases}: case 'a' (#2): missing required field 'traceFixture'",
    ]
    assert not (tmp_path / "r.json").exists()


def test_run_example_shows_regression_improvement_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.chdir(ROOT)
    out = tmp_path / "out"
    base = ["run", "--config", str(ROOT / "diagbot.yml"), "--baseline", "examples/baseline", "--out", str(out)]
    assert main(base) == 1
    comment = capsys.readouterr().out
    assert "#### Regressions (" in comment and "#### Improvements (" in comment and "Other changes (" in comment
    for name in ("reports/diagnosis.json", "diff/diagnosis.json", "comment.md", "summary.md"):
        assert (out / name).is_file(), name
    diff = json.loads((out / "diff/diagnosis.json").read_text())
    assert diff["hasRegression"] is True and diff["improvementCount"] > 0 and diff["changedCount"] > 0
    assert main([*base, "--no-fail"]) == 0


def test_run_without_baseline_passes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = bundled_workspace(tmp_path)
    monkeypatch.chdir(ws)
    assert main(["run", "--out", str(tmp_path / "out")]) == 0
    assert "No baseline" in (tmp_path / "out" / "comment.md").read_text()


def test_the_bundled_agent_suite_fails_the_gate_on_its_p0_case_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """No baseline, so nothing can regress; the failing gating P0 case still fails the run, and --no-fail reports
    it without failing (what `make run` does)."""
    monkeypatch.chdir(ROOT)
    assert main(["run", "--out", str(tmp_path / "a")]) == 1
    last = capsys.readouterr().err.splitlines()[-1]  # the one line a --quiet CI log has names the case
    assert last.startswith("diagbot: 1 gating P0 case failed (failing P0: agent/refund_submit_confirmed_011); "), last
    assert main(["run", "--out", str(tmp_path / "b"), "--no-fail"]) == 0
    assert "diagbot: 1 gating P0 case failed (not failing: --no-fail);" in capsys.readouterr().err
    assert "### ❌ diagbot: 1 gating P0 case failed" in (tmp_path / "b" / "comment.md").read_text()


def test_run_one_broken_suite_keeps_the_other(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures", ignore=shutil.ignore_patterns("workspace"))
    shutil.copy(ROOT / "cases/diagnosis-cases.json", tmp_path / "good.json")
    write_json(tmp_path / "bad.json", [{"id": "x", "traceFixture": "../x.json"}])
    (tmp_path / "diagbot.yml").write_text(
        "suites:\n"
        "  - {name: good, kind: trace, cases: good.json, fixtures: fixtures}\n"
        "  - {name: bad, kind: trace, cases: bad.json, fixtures: fixtures}\n"
    )
    code = main(["run", "--config", str(tmp_path / "diagbot.yml"), "--out", str(tmp_path / "out")])
    assert code == 2
    assert (tmp_path / "out/reports/good.json").is_file() and not (tmp_path / "out/reports/bad.json").exists()
    comment = (tmp_path / "out/comment.md").read_text()
    assert "input could not be used" in comment and "leaves the fixtures folder" in comment
    assert "<!-- diagbot:good+bad -->" in comment


def test_diff_command_and_bad_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = ROOT / "examples/baseline/reports/diagnosis.json"
    assert (
        main(["diff", "--baseline", str(report), "--current", str(report), "--output", str(tmp_path / "d.json")]) == 0
    )
    assert json.loads((tmp_path / "d.json").read_text())["items"] == []
    broken = write_json(tmp_path / "broken.json", {"totalCases": 1, "results": [{"title": "no id"}]})
    code = main(["diff", "--baseline", str(broken), "--current", str(report), "--output", str(tmp_path / "x.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert f"error: {broken}: not a readable trace report: passedCases: field required" in err
    assert f"error: {broken}: not a readable trace report: results.0.caseId: field required" in err


def test_render_command(tmp_path: Path) -> None:
    report = ROOT / "examples/baseline/reports/diagnosis.json"
    assert main(["render", "--current", str(report), "--output", str(tmp_path / "c.md")]) == 0
    body = (tmp_path / "c.md").read_text()
    assert body.startswith("<!-- diagbot:diagnosis -->") and "No baseline" in body


def test_a_suite_name_given_on_the_command_line_is_held_to_the_configs_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--suite` names the comment's marker (render) and is recorded in the report (eval): `a -->` would close the
    marker and let the rest of the line be read as the comment's text."""
    report = ROOT / "examples/baseline/reports/diagnosis.json"
    out = str(tmp_path / "c.md")
    for args in (
        ["render", "--current", str(report), "--suite", "a -->\n# x", "--output", out],
        ["eval", "--cases", str(ROOT / "cases/diagnosis-cases.json"), "--suite", "", "--out", out],
    ):
        with pytest.raises(SystemExit) as info:
            main(args)
        assert info.value.code == 2
    err = capsys.readouterr().err
    assert "argument --suite: 'a -->\\n# x' is not a suite name: use letters, digits" in err
    assert "argument --suite: '' is not a suite name" in err
    assert not (tmp_path / "c.md").exists()


def test_a_suite_pointed_at_other_runs_than_the_baselines_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A red-team pull request pointed the agent suite's fixtures at a committed copy of the baseline's runs, and
    its own bad runs were never judged: every kind's report now records the suite's cases and fixtures as
    diagbot.yml names them, and the diff has a change for each that moved (the agent suite's headline names it)."""
    monkeypatch.chdir(tmp_path)
    for name in ("cases", "fixtures"):
        shutil.copytree(ROOT / name, tmp_path / name)
    config = (ROOT / "diagbot.yml").read_text(encoding="utf-8")
    (tmp_path / "diagbot.yml").write_text(config, encoding="utf-8")
    assert main(["run", "--out", "base", "--no-fail", "--quiet"]) == 0
    stored = json.loads((tmp_path / "base/reports/agent.json").read_text(encoding="utf-8"))["run"]
    assert (stored["cases"], stored["fixtures"]) == ("cases/agent", "fixtures/agent")
    shutil.copytree(tmp_path / "fixtures/agent", tmp_path / "fixtures/.recorded")
    moved = config.replace("fixtures: fixtures/agent", "fixtures: fixtures/.recorded")
    (tmp_path / "diagbot.yml").write_text(moved.replace("fixtures: fixtures\n", "fixtures: ./fixtures\n"))
    assert main(["run", "--baseline", "base", "--out", "pr", "--no-fail", "--quiet"]) == 0
    for suite, was, now in (("agent", "fixtures/agent", "fixtures/.recorded"), ("diagnosis", "fixtures", "./fixtures")):
        diff = json.loads((tmp_path / f"pr/diff/{suite}.json").read_text(encoding="utf-8"))
        [item] = [i for i in diff["items"] if i["metric"] == "options.fixtures"]
        assert (item["type"], item["baselineValue"], item["currentValue"]) == ("CHANGED", was, now)
        assert not [i for i in diff["items"] if i["metric"] == "options.cases"]
    comment = (tmp_path / "pr/comment.md").read_text(encoding="utf-8")
    assert "- Suite options that decide verdicts changed since the baseline (fixtures)" in comment
    capsys.readouterr()


def test_diagbot_diff_names_a_suite_input_that_moved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The change for moved fixtures was made by `run` only; `diff` said "0 changes" (a review)."""
    data = json.loads((ROOT / "examples/baseline/reports/diagnosis.json").read_text(encoding="utf-8"))
    for name, fixtures in (("b.json", "fixtures"), ("c.json", "fixtures/.copy")):
        data["run"] = {"cases": "cases/diagnosis-cases.json", "fixtures": fixtures}
        (tmp_path / name).write_text(json.dumps(data), encoding="utf-8")
    args = ["diff", "--baseline", str(tmp_path / "b.json"), "--current", str(tmp_path / "c.json")]
    assert main([*args, "--output", str(tmp_path / "d.json"), "--no-fail"]) == 0
    items = json.loads((tmp_path / "d.json").read_text(encoding="utf-8"))["items"]
    assert [(i["type"], i["metric"], i["currentValue"]) for i in items] == [
        ("CHANGED", "options.fixtures", "fixtures/.copy")
    ]
    capsys.readouterr()


def test_a_corrupt_baseline_fails_the_run_but_keeps_the_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)
    baseline = tmp_path / "baseline"
    (baseline / "reports").mkdir(parents=True)
    (baseline / "reports" / "diagnosis.json").write_text('{"schemaVersion": "2"}')
    (baseline / "reports" / "workspace.json").write_text("[]")
    out = tmp_path / "out"
    assert main(["run", "--config", str(ROOT / "diagbot.yml"), "--baseline", str(baseline), "--out", str(out)]) == 2
    assert (out / "reports/diagnosis.json").is_file() and (out / "reports/workspace.json").is_file()
    comment = (out / "comment.md").read_text()
    assert "schemaVersion must be a whole number" in comment and "expected a JSON object" in comment


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schemaVersion": null}', "schemaVersion must be a whole number"),
        ('{"schemaVersion": 99}', "newer than this diagbot understands"),
        ('{"kind": ["trace"]}', "not a diagbot report (kind"),
        ("[1, 2]", "expected a JSON object"),
        ("[" * 100_000, "nested too deeply"),
        # an agent report without its kind was read as a trace report, and told to upgrade diagbot
        (
            '{"schemaVersion": 2, "results": []}',
            "bad.json: has a schemaVersion but no kind, which every report diagbot writes has (one of trace, "
            "workspace, agent), so it was not written by diagbot or was edited; give a report a diagbot run wrote",
        ),
        # an agent report edited to another kind was told to upgrade diagbot
        (
            '{"kind": "trace", "schemaVersion": 2, "results": []}',
            "bad.json: a trace report of schemaVersion 2, which this diagbot writes only for other kinds (trace "
            "reports are version 1): it was edited (its kind?), or a newer diagbot wrote it (then upgrade diagbot); "
            "give a report a diagbot run wrote",
        ),
    ],
    ids=["null-version", "future-version", "list-kind", "array", "deep", "no-kind", "other-kinds-version"],
)
def test_hostile_reports_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str,
                                           message: str) -> None:  # fmt: skip
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    good = ROOT / "examples/baseline/reports/diagnosis.json"
    assert main(["diff", "--baseline", str(bad), "--current", str(good), "--output", str(tmp_path / "d.json")]) == 2
    assert message in capsys.readouterr().err


def test_config_can_turn_the_gate_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    config = tmp_path / "diagbot.yml"
    config.write_text(
        f"suites:\n  - {{name: diagnosis, cases: {ROOT}/cases/diagnosis-cases.json, fixtures: {ROOT}/fixtures}}\n"
        "gate: {fail-on-regression: false}\n"
    )
    baseline = "examples/baseline/reports/diagnosis.json"
    code = main(["run", "--config", str(config), "--baseline", baseline, "--out", str(tmp_path / "o")])
    assert code == 0
    comment = (tmp_path / "o/comment.md").read_text()
    assert "Regressions (" in comment
    # a red headline over a green check says why (a red-team pass saw nothing in the comment say the gate was off)
    headline, waived = comment.splitlines()[1:3]
    assert headline.startswith("### ❌ diagbot: ") and headline.endswith(" regressions")
    assert waived == (
        "*The check passes all the same, as the gate settings say: "
        f"{headline.removeprefix('### ❌ diagbot: ')} (not gating).*"
    )


def test_thresholds_other_than_the_defaults_are_said_in_the_comment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A red-team pull request raised tool-calls-pct to 5000 in diagbot.yml, and an agent looping through thirty
    more calls passed with nothing in the comment saying the bar had moved."""
    monkeypatch.chdir(ROOT)
    config = tmp_path / "diagbot.yml"
    suite = f"suites:\n  - {{name: diagnosis, cases: {ROOT}/cases/diagnosis-cases.json, fixtures: {ROOT}/fixtures}}\n"
    config.write_text(suite + "thresholds: {tool-calls-pct: 5000, duration-min-ms: 500}\n")
    baseline = "examples/baseline/reports/diagnosis.json"
    main(["run", "--config", str(config), "--baseline", baseline, "--out", str(tmp_path / "o"), "--no-fail"])
    said = "compared with thresholds other than the defaults: tool-calls-pct 5000% (default 20%)"
    assert said in (tmp_path / "o/comment.md").read_text()
    config.write_text(suite)
    main(["run", "--config", str(config), "--baseline", baseline, "--out", str(tmp_path / "d"), "--no-fail"])
    assert "thresholds other than the defaults" not in (tmp_path / "d/comment.md").read_text()


def test_thresholds_put_back_to_the_defaults_since_the_baseline_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A red-team pull request deleted the stricter thresholds a repository set: the defaults note vanished with
    them, and a duration rise the baseline's bar caught passed in silence. Each report now records its thresholds,
    and the next run names a change."""
    monkeypatch.chdir(ROOT)
    config = tmp_path / "diagbot.yml"
    suite = f"suites:\n  - {{name: diagnosis, cases: {ROOT}/cases/diagnosis-cases.json, fixtures: {ROOT}/fixtures}}\n"
    config.write_text(suite + "thresholds: {duration-pct: 5, duration-min-ms: 100}\n")
    assert main(["run", "--config", str(config), "--out", str(tmp_path / "base"), "--no-fail"]) == 0
    report = json.loads((tmp_path / "base/reports/diagnosis.json").read_text())
    assert report["run"]["thresholds"] == {
        "tool-calls-pct": 20.0, "tool-calls-min": 1.0, "duration-pct": 5.0, "duration-min-ms": 100.0,
        "score-points": 5.0,
    }  # fmt: skip
    config.write_text(suite)  # back to the defaults
    main(["run", "--config", str(config), "--baseline", str(tmp_path / "base"), "--out", str(tmp_path / "pr")])
    comment = (tmp_path / "pr/comment.md").read_text()
    assert (
        "### ✅ diagbot: no regressions\n*The thresholds changed since the baseline's run (diagnosis): duration-pct 5% "
        "→ 20%, duration-min-ms "
        "100 ms → 500 ms; a rise is now judged against another bar than the baseline's was"
    ) in comment, comment
    assert "thresholds other than the defaults" not in comment
    config.write_text(suite + "thresholds: {duration-pct: 5, duration-min-ms: 100}\n")  # unchanged: nothing said
    main(["run", "--config", str(config), "--baseline", str(tmp_path / "base"), "--out", str(tmp_path / "same")])
    assert "thresholds changed" not in (tmp_path / "same/comment.md").read_text()


def _two_reports(tmp_path: Path, before_calls: int, after_calls: int) -> tuple[Path, Path]:
    from diagbot.core.report import dump_model
    from diagbot.kinds.trace.report import CaseResult, build_report

    def report(calls: int) -> str:
        return dump_model(build_report([CaseResult(case_id="a", passed=True, tool_call_count=calls)], suite="s"))

    (tmp_path / "b.json").write_text(report(before_calls))
    (tmp_path / "c.json").write_text(report(after_calls))
    return tmp_path / "b.json", tmp_path / "c.json"


def test_diff_uses_the_thresholds_and_gate_of_diagbot_yml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Fault 6: `diagbot diff` ignored diagbot.yml's thresholds."""
    baseline, current = _two_reports(tmp_path, 10, 13)  # +30%, +3 calls
    lenient = tmp_path / "lenient.yml"
    lenient.write_text("suites: [{name: s, cases: c.json, fixtures: f}]\nthresholds: {tool-calls-pct: 50}\n")
    args = ["diff", "--baseline", str(baseline), "--current", str(current), "--output", str(tmp_path / "d.json")]
    capsys.readouterr()
    assert main(args) == 1  # the built-in 20% counts it
    assert capsys.readouterr().err == "diagbot: 2 regressions\n"  # why it fails, as `run` says it
    assert main([*args, "--config", str(lenient)]) == 0
    assert main([*args, "--config", str(lenient), "--tool-calls-pct", "10"]) == 1  # a flag still wins
    off = tmp_path / "off.yml"
    off.write_text("suites: [{name: s, cases: c.json, fixtures: f}]\ngate: {fail-on-regression: false}\n")
    assert main([*args, "--config", str(off)]) == 0


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--tool-calls-pct", "-5", "--tool-calls-pct: Input should be greater than or equal to 0"),
        ("--duration-min-ms", "nan", "--duration-min-ms: Input should be a finite number"),
        ("--score-points", "inf", "--score-points: Input should be a finite number"),
    ],
    ids=["negative", "nan", "inf"],
)
def test_bad_threshold_flags_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str,
                                              value: str, message: str) -> None:  # fmt: skip
    """Fault 11: a negative --tool-calls-pct reached "failed unexpectedly ... please report it"."""
    baseline, current = _two_reports(tmp_path, 1, 1)
    code = main(["diff", "--baseline", str(baseline), "--current", str(current), "--output", str(tmp_path / "d"),
                 flag, value])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and message in err and "unexpectedly" not in err


def test_an_unknown_threshold_name_is_an_error() -> None:
    from diagbot.core.errors import ConfigError
    from diagbot.io.config import ThresholdConfig

    with pytest.raises(ConfigError, match="input 'tool-call-pct': unknown threshold; use one of tool-calls-pct"):
        ThresholdConfig().override({"tool-call-pct": 5.0}, "input '{name}'")


def test_a_closed_stdout_keeps_the_gates_exit_code(tmp_path: Path) -> None:
    """Fault 11: `diagbot run | head` turned a regression (1) into "failed unexpectedly" (2)."""
    import subprocess
    import sys

    command = [sys.executable, "-m", "diagbot", "run", "--config", str(ROOT / "diagbot.yml"),
               "--baseline", str(ROOT / "examples/baseline"), "--out", str(tmp_path / "o")]  # fmt: skip
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as child:
        assert child.stdout is not None and child.stderr is not None
        child.stdout.read(10)
        child.stdout.close()  # the reader leaves early, as `head` does
        err = child.stderr.read().decode()
        code = child.wait(timeout=120)
    assert code == 1, err
    assert "unexpectedly" not in err and "Traceback" not in err


def test_an_empty_case_list_is_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases.json").write_text("[]")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "diagbot.yml").write_text("suites: [{name: empty, cases: cases.json, fixtures: fixtures}]\n")
    code = main(["run", "--config", str(tmp_path / "diagbot.yml"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 0 and "warning: suite empty has no cases, so nothing was evaluated" in err
    assert "suite empty has no cases" in (tmp_path / "o" / "comment.md").read_text()


def test_reports_of_every_kind_carry_run_and_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import re

    monkeypatch.chdir(ROOT)
    assert main(["run", "--config", str(ROOT / "diagbot.yml"), "--out", str(tmp_path), "--no-fail"]) == 0
    for name in ("diagnosis", "workspace", "agent"):
        report = json.loads((tmp_path / "reports" / f"{name}.json").read_text())
        assert report["suite"] == name
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", report["run"]["time"])


def test_emptying_a_suite_that_had_cases_fails_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Deleting every case left nothing to regress: the run passed (exit 0) under a "no regressions" headline."""
    config = ROOT / "diagbot.yml"
    baseline = tmp_path / "base"
    assert main(["run", "--config", str(config), "--out", str(baseline), "--no-fail"]) == 0
    suite = tmp_path / "repo"
    (suite / "fixtures").mkdir(parents=True)
    (suite / "cases.json").write_text("[]")
    (suite / "diagbot.yml").write_text("suites: [{name: diagnosis, cases: cases.json, fixtures: fixtures}]\n")
    only = tmp_path / "only"
    (only / "reports").mkdir(parents=True)
    (only / "reports" / "diagnosis.json").write_bytes((baseline / "reports" / "diagnosis.json").read_bytes())
    capsys.readouterr()
    code = main(["run", "--config", str(suite / "diagbot.yml"), "--baseline", str(only), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "suite diagnosis has no cases, and its baseline had " in err
    headline = (tmp_path / "o" / "comment.md").read_text().split("### ", 1)[1].splitlines()[0]
    assert headline.startswith("❌ diagbot: suite diagnosis has no cases"), headline


def test_a_failed_write_leaves_no_mix_of_two_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each file was written whole, but the folder was not: a new report beside an earlier run's comment."""
    out = tmp_path / "o"
    args = ["run", "--config", str(ROOT / "diagbot.yml"), "--baseline", str(ROOT / "examples/baseline"), "--out"]
    assert main([*args, str(out), "--no-fail"]) == 0
    (out / "diff" / "agent.json").unlink()
    (out / "diff" / "agent.json").mkdir()  # the place of one output is taken
    capsys.readouterr()
    assert main([*args, str(out)]) == 2
    assert "diff/agent.json: cannot be written" in capsys.readouterr().err
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert left == [], left  # neither this run's reports nor the earlier run's comment and summary


def test_a_run_leaves_only_its_own_outputs(tmp_path: Path) -> None:
    """A suite dropped from the config kept its report from an earlier run in the folder (so the folder, read as
    the next baseline, named a suite the config lost), and a pull-request run's pr.json outlived it."""
    out = tmp_path / "o"
    assert main(["run", "--config", str(ROOT / "diagbot.yml"), "--out", str(out), "--no-fail"]) == 0
    (out / "pr.json").write_text("{}")
    (out / "reports" / "important.json").write_text('{"mine": true}')  # the user's own files: never diagbot's
    (out / "diff").mkdir()
    (out / "diff" / "keep.json").write_text("[]")
    (tmp_path / "diagbot.yml").write_text(
        f"suites: [{{name: diagnosis, cases: {ROOT}/cases/diagnosis-cases.json, fixtures: {ROOT}/fixtures}}]\n"
    )
    assert main(["run", "--config", str(tmp_path / "diagbot.yml"), "--out", str(out), "--no-fail"]) == 0
    left = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert left == ["comment.md", "diff/keep.json", "reports/diagnosis.json", "reports/important.json", "summary.md"]


def test_a_config_that_demotes_every_agent_case_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gate.roles: [] (or usage-rights: []) turned the failing P0 case informational and the run passed."""
    config = (ROOT / "diagbot.yml").read_text()
    suites = config.split("suites:\n", 1)[1].split("  - name: agent\n", 1)[1].split("thresholds:", 1)[0]
    agent_only = "suites:\n  - name: agent\n" + suites.replace("cases/agent", str(ROOT / "cases" / "agent"))
    agent_only = agent_only.replace("fixtures/agent", str(ROOT / "fixtures" / "agent"))
    (tmp_path / "before.yml").write_text(agent_only)
    assert main(["run", "--config", str(tmp_path / "before.yml"), "--out", str(tmp_path / "base"), "--no-fail"]) == 0
    base = json.loads((tmp_path / "base" / "reports" / "agent.json").read_text())
    assert base["gatingCases"] > 0
    for gate in ("gate: {roles: []}", "gate: {usage-rights: []}"):
        (tmp_path / "after.yml").write_text(agent_only + gate + "\n")
        capsys.readouterr()
        out = tmp_path / "o"
        code = main(["run", "--config", str(tmp_path / "after.yml"), "--baseline", str(tmp_path / "base"),
                     "--out", str(out)])  # fmt: skip
        err = capsys.readouterr().err
        reason = f"no case of suite agent gates, and {base['gatingCases']} did in its baseline"
        assert code == 1 and reason in err, (gate, err)
        assert (out / "comment.md").read_text().split("### ", 1)[1].startswith(f"❌ diagbot: {reason}")
        args = ["diff", "--baseline", str(tmp_path / "base" / "reports" / "agent.json"),
                "--current", str(out / "reports" / "agent.json"), "--output", str(tmp_path / "d.json")]  # fmt: skip
        assert main([*args, "--config", str(tmp_path / "after.yml")]) == 1


def test_a_case_moved_into_another_suite_where_it_fails_fails_the_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A passing trace case moved, under its own id, from one suite's case file into a new suite's, where its run
    no longer names the cause: the first suite showed a removal, the second (with no baseline) an addition, and the
    gate passed."""
    from diagbot.scaffold import starter, write_starter

    write_starter(tmp_path, starter("trace"))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--out", "base", "--quiet"]) == 0
    cases_file = tmp_path / "cases/diagnosis-cases.json"
    written = json.loads(cases_file.read_text(encoding="utf-8"))
    moved = [case for case in written["cases"] if case["id"] == "payment-timeout"]
    written["cases"] = [case for case in written["cases"] if case["id"] != "payment-timeout"]
    cases_file.write_text(json.dumps(written), encoding="utf-8")
    (tmp_path / "cases/moved.json").write_text(json.dumps({**written, "cases": moved}), encoding="utf-8")
    run = tmp_path / "fixtures/payment-timeout.json"
    run.write_text(run.read_text(encoding="utf-8").replace("connection pool", "pool"), encoding="utf-8")
    config = tmp_path / "diagbot.yml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "thresholds:", "  - {name: moved, kind: trace, cases: cases/moved.json, fixtures: fixtures}\nthresholds:", 1
        ),
        encoding="utf-8",
    )
    capsys.readouterr()
    assert main(["run", "--baseline", "base", "--out", "out", "--quiet"]) == 1
    comment = (tmp_path / "out/comment.md").read_text(encoding="utf-8")
    assert "moved to suite moved (as 'payment-timeout'), where it fails" in comment.replace("\\", "")
    assert "1 regression (regressed: diagnosis/payment-timeout)" in capsys.readouterr().err
