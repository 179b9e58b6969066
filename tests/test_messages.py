"""The exact words users see for issue 14: trace fixtures whose fields no fixture held, near-miss keys, workspace
case.yaml typos, evidence-only requirements, paths with what they are relative to, empty files and empty suites,
and limits refused with diagbot.yml's own message."""

from __future__ import annotations

import dataclasses
import json
import tracemalloc
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from diagbot.action.settings import Settings, SettingsError
from diagbot.cli import main
from diagbot.core import values
from diagbot.core.diff import parse_diff
from diagbot.core.errors import ConfigError, ReportFormatError
from diagbot.core.report import dump_model, dump_model_bytes, load_json_object
from diagbot.core.text import closest
from diagbot.io.baselines import baselines_in_archive, read_report_file
from diagbot.io.config import ThresholdConfig, checked_fixture_bytes, load_config, parse_config
from diagbot.kinds.agent.kind import AgentKind
from diagbot.kinds.base import SuiteInput
from diagbot.kinds.schemas import SCHEMAS
from diagbot.kinds.trace import fields
from diagbot.kinds.trace.cases import parse_case_file
from diagbot.kinds.trace.evaluate import evaluate_suite
from diagbot.kinds.trace.fixture import Trace, parse_trace
from diagbot.kinds.trace.kind import TraceKind
from diagbot.kinds.trace.report import TraceReport, parse_report
from diagbot.kinds.workspace.checks import CheckSpec, Workspace, run_check
from diagbot.kinds.workspace.judge import load_workspace_suite
from diagbot.kinds.workspace.kind import WorkspaceKind
from diagbot.render.markdown import BaselineInfo, CurrentInfo, render_markdown
from tests.conftest import DELETE, VERIFIER, case_dict, trace_dict, write_json
from tests.test_cases import problems_of

# ---- trace fixtures: fields no fixture held, near-miss keys -----------------------------------------------------


def trace_suite(tmp_path: Path, traces: list[dict[str, Any]], **case: Any) -> TraceReport:
    """One case per trace, each with `case_dict(**case)` but its own id and fixture."""
    cases = []
    for index, trace in enumerate(traces):
        write_json(tmp_path / "fixtures" / f"run-{index:02d}.json", trace)
        cases.append(case_dict(**{**case, "id": f"case-{index:02d}", "traceFixture": f"run-{index:02d}.json"}))
    return evaluate_suite(parse_case_file(json.dumps(cases), "cases.json"), tmp_path / "fixtures", "diagnosis")


def renamed(trace: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The trace with the key at dotted path `old` renamed to `new` (same parent)."""
    *parents, leaf = old.split(".")
    node = trace
    for key in parents:
        node = node[key]
    node[new] = node.pop(leaf)
    return trace


def test_a_misspelt_duration_is_reported_absent_with_the_near_miss(tmp_path: Path) -> None:
    traces = [renamed(trace_dict(), "session.totalDurationMs", "totalDurationMS") for _ in range(30)]
    report = trace_suite(tmp_path, traces)
    assert report.warnings == [
        "session.totalDurationMs absent in 30/30 fixtures: duration is not compared",
        "session.totalDurationMS -> did you mean totalDurationMs? (in fixture 'run-00.json' and 19 more)",
        "near-miss keys were looked for in the first 20 fixtures that lack a field no earlier fixture held; 10 more "
        "such fixtures were not examined",
    ]
    assert report.passed_cases == 30  # warnings only: no verdict changes


def test_a_guessed_tool_key_is_a_near_miss_of_tool_name(tmp_path: Path) -> None:
    trace = trace_dict(toolInvocations=[{"tool": "query_logs", "success": True}])
    report = trace_suite(tmp_path, [trace, json.loads(json.dumps(trace))])
    assert report.warnings == [
        "toolInvocations[].toolName absent in 2/2 fixtures: only the verifier's tool summary can show which tools "
        "were used",
        "toolInvocations[].tool -> did you mean toolName? (in fixture 'run-00.json' and 1 more)",
    ]
    assert [r.failed_checks for r in report.results] == [
        ["missing_evidence_tool: required tool 'query_logs' was never used (tools seen: 'query_metrics')"]
    ] * 2


def test_case_and_separator_variants_are_near_misses(tmp_path: Path) -> None:
    trace = renamed(trace_dict(), f"{VERIFIER}.verdict", "Verdict")
    trace = renamed(trace, "toolInvocations", "ToolInvocations")
    report = trace_suite(tmp_path, [trace])
    assert report.warnings == [
        f"{VERIFIER}.verdict absent in 1/1 fixtures: no case has a verdict",
        "toolInvocations absent in 1/1 fixtures: tool calls are not counted or compared",
        "ToolInvocations -> did you mean toolInvocations? (in fixture 'run-00.json')",
        f"{VERIFIER}.Verdict -> did you mean verdict? (in fixture 'run-00.json')",
    ]


def test_a_field_some_fixture_held_is_not_reported(tmp_path: Path) -> None:
    traces = [trace_dict(**{"session.totalDurationMs": DELETE}), trace_dict()]
    assert trace_suite(tmp_path, traces).warnings == []


def test_an_absent_parent_stands_for_its_fields(tmp_path: Path) -> None:
    report = trace_suite(tmp_path, [trace_dict(session=DELETE)] * 2)
    assert report.warnings == ["session absent in 2/2 fixtures: no answer, duration or verdict is read"]


def test_fields_of_a_check_no_case_asks_for_are_not_reported(tmp_path: Path) -> None:
    bare = trace_dict(**{f"{VERIFIER}.gatekeeper_result": DELETE, f"{VERIFIER}.composer_output": DELETE})
    assert trace_suite(tmp_path, [bare]).warnings == []
    report = trace_suite(tmp_path, [bare], requireComposerOutput=True)
    assert report.warnings == [
        f"{VERIFIER}.composer_output absent in 1/1 fixtures: no composer status is read",
    ]


def test_fields_some_cases_rely_on_are_counted_over_those_cases(tmp_path: Path) -> None:
    bare = trace_dict(**{f"{VERIFIER}.gatekeeper_result": {"state": "pass"}})
    write_json(tmp_path / "fixtures/plain.json", bare)
    cases = [case_dict(id="plain", traceFixture="plain.json")]
    for index in range(3):
        write_json(tmp_path / f"fixtures/gk-{index}.json", bare)
        cases.append(case_dict(id=f"gk-{index}", traceFixture=f"gk-{index}.json", expectedGatekeeperStatuses=["pass"]))
    report = evaluate_suite(parse_case_file(json.dumps(cases), "c.json"), tmp_path / "fixtures")
    assert report.warnings == [
        f"{VERIFIER}.gatekeeper_result.status absent in 3/3 fixtures of the cases that check it: no gatekeeper "
        "status is read",
        f"{VERIFIER}.gatekeeper_result.state -> did you mean status? (in fixture 'gk-0.json' and 2 more)",
    ]


def test_broken_and_missing_fixtures_are_not_counted(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures/run-00.json").write_text("{", encoding="utf-8")
    cases = [case_dict(id="a", traceFixture="run-00.json"), case_dict(id="b", traceFixture="gone.json")]
    report = evaluate_suite(parse_case_file(json.dumps(cases), "c.json"), tmp_path / "fixtures")
    assert report.warnings == []


def test_the_key_comparison_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    decoded = []
    loads = values.loads
    monkeypatch.setattr(fields.values, "loads", lambda data: decoded.append(isinstance(data, bytes)) or loads(data))
    wide = {f"key{i}": i for i in range(5 * fields.MAX_KEYS)}
    traces = [{**renamed(trace_dict(), "session.answer", "answr"), **wide} for _ in range(40)]
    report = trace_suite(tmp_path, traces)
    assert decoded.count(True) == fields.MAX_EXAMINED  # the fixtures decoded again; the case file is text
    assert report.warnings[1:] == [
        "session.answr -> did you mean answer? (in fixture 'run-00.json' and 19 more)",
        "near-miss keys were looked for in the first 20 fixtures that lack a field no earlier fixture held; 20 more "
        "such fixtures were not examined",
    ]


def test_once_every_field_was_seen_a_fixture_costs_no_more_work(monkeypatch: pytest.MonkeyPatch) -> None:
    census = fields.FieldCensus()
    case = parse_case_file(json.dumps([case_dict()]), "c.json").cases[0]
    trace = parse_trace(json.dumps(trace_dict()).encode(), "f.json")
    assert isinstance(trace, Trace)
    census.observe(case, trace, b"{}", "a.json")
    assert {f.need for f in census.open} == {fields.Need.CLAIMS, fields.Need.GATEKEEPER, fields.Need.RULE_SET,
                                             fields.Need.COMPOSER}  # fmt: skip
    monkeypatch.setattr(fields, "_objects", lambda *_: pytest.fail("walked a fixture"))
    census.observe(case, trace, b"{}", "b.json")
    assert census.read == 2 and census.warnings() == []


def test_warnings_reach_the_console_the_comment_and_the_report(tmp_path: Path) -> None:
    report = trace_suite(tmp_path, [renamed(trace_dict(), "session.totalDurationMs", "duration_ms")])
    assert TraceKind().console(report).splitlines()[1:] == [
        "  warning: session.totalDurationMs absent in 1/1 fixtures: duration is not compared",
        "  warning: session.duration_ms -> did you mean totalDurationMs? (in fixture 'run-00.json')",
    ]
    view = TraceKind().view("diagnosis", report, None)
    assert view.notes == (
        "Warning: session.totalDurationMs absent in 1/1 fixtures: duration is not compared",
        "Warning: session.duration\\_ms -&gt; did you mean totalDurationMs? (in fixture 'run-00.json')",
    )
    info = BaselineInfo(source="none", missing_reason="no baseline was given")
    for template in ("comment.md.j2", "summary.md.j2"):
        body = render_markdown(template, [view], info, CurrentInfo(), "diagbot:diagnosis", 60_000)
        assert f"\n- {view.notes[0]}\n- {view.notes[1]}\n" in body
    data = json.loads(dump_model(report))
    assert data["warnings"] == report.warnings and data["schemaVersion"] == 1
    assert not list(jsonschema.Draft202012Validator(SCHEMAS["trace-report"]()).iter_errors(data))
    del data["warnings"]  # a report written before warnings existed
    assert parse_report(data, "old.json").warnings == []


def test_a_report_naming_an_undecodable_file_is_one_the_next_run_reads() -> None:
    """A name with a byte that is not UTF-8 reaches Python as a lone surrogate; written as its escape, the next run
    refused the report as its baseline. It is written as U+FFFD, by both writers."""
    report = TraceReport(total_cases=0, passed_cases=0, pass_rate=0.0, results=[], warnings=["run-\udcff.json"])
    for written in (dump_model(report), dump_model_bytes(report).decode("utf-8")):
        assert load_json_object(written, "report.json")["warnings"] == ["run-\ufffd.json"]


def test_warnings_from_a_report_are_capped_and_escaped() -> None:
    report = TraceReport(total_cases=0, passed_cases=0, pass_rate=0.0, results=[], warnings=["@team <b>"] * 30)
    notes = TraceKind().view("s", report, None).notes
    assert notes[0] == "Warning: @&#8203;team &lt;b&gt;"
    assert len(notes) == 26 and notes[-1] == "... and 5 more warnings in the report"


# ---- empty files and empty suites --------------------------------------------------------------------------------


def test_an_empty_fixture_says_empty(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures/a.json").write_bytes(b"")
    report = evaluate_suite(
        parse_case_file(json.dumps([case_dict(traceFixture="a.json")]), "c.json"), tmp_path / "fixtures"
    )
    assert report.results[0].failed_checks == [
        "fixture_invalid: fixture 'a.json' is empty (no JSON in it); record the trace again"
    ]


def test_an_empty_trace_case_file_says_empty() -> None:
    assert problems_of("\n", "cases/diagnosis-cases.json") == [
        "cases/diagnosis-cases.json: the case file is empty; write a JSON array of cases (see the README)"
    ]


@pytest.mark.parametrize("text", ["", "\n  \n"])
def test_an_empty_report_says_empty(tmp_path: Path, text: str) -> None:
    path = tmp_path / "report.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReportFormatError) as info:
        read_report_file(path)
    assert info.value.problems == [f"{path}: the report is empty; give a report a diagbot run or eval wrote"]
    found = baselines_in_archive({"reports/diagnosis.json": text.encode()}, ["diagnosis"])
    assert found.problems == [
        "baseline of suite diagnosis: reports/diagnosis.json: the report is empty; give a report a diagbot run or "
        "eval wrote"
    ]


@pytest.mark.parametrize("text", ["", " \n\t\n"], ids=["zero-bytes", "whitespace"])
def test_an_empty_diff_says_empty_not_invalid_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    with pytest.raises(ReportFormatError) as info:
        load_json_object(text, "r.json")
    assert info.value.problems == ["r.json: the file is empty; give one diagbot wrote"]
    with pytest.raises(ReportFormatError) as info:
        parse_diff(text, "d.json")
    assert info.value.problems == ["d.json: the file is empty; give one diagbot wrote"]
    monkeypatch.chdir(tmp_path)
    Path("report.json").write_text(dump_model(trace_suite(tmp_path, [trace_dict()])), encoding="utf-8")
    Path("diff.json").write_text(text, encoding="utf-8")
    assert main(["render", "--current", "report.json", "--diff", "diff.json", "--output", "comment.md"]) == 2
    assert capsys.readouterr().err == "error: diff.json: the file is empty; give one diagbot wrote\n"
    assert not Path("comment.md").exists()


@pytest.mark.parametrize("text", ["", "\n  \n"], ids=["zero-bytes", "whitespace"])
def test_an_empty_baseline_info_says_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("report.json").write_text(dump_model(trace_suite(tmp_path, [trace_dict()])), encoding="utf-8")
    Path("info.json").write_text(text, encoding="utf-8")
    assert main(["render", "--current", "report.json", "--baseline-info", "info.json", "--output", "c.md"]) == 2
    assert capsys.readouterr().err == (
        "error: info.json: the file is empty; give the baseline info as a JSON object (source, branch, sha, runUrl, "
        "...)\n"
    )
    Path("info.json").write_text('{"source": "file", "branch": "main"}', encoding="utf-8")
    assert main(["render", "--current", "report.json", "--baseline-info", "info.json", "--output", "c.md"]) == 0


def test_an_empty_config_says_empty(tmp_path: Path) -> None:
    (tmp_path / "diagbot.yml").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path / "diagbot.yml")
    assert info.value.problems == [
        f"{tmp_path}/diagbot.yml: the config file is empty; list the suites under 'suites:' (see the README), or "
        "remove the file to run the built-in default suite"
    ]
    with pytest.raises(ConfigError) as info:
        parse_config("# nothing yet\n", "diagbot.yml", Path("."))
    assert info.value.problems == ["diagbot.yml: the config file holds only comments; list the suites under 'suites:'"]


def test_an_empty_case_yaml_says_empty(tmp_path: Path) -> None:
    (tmp_path / "cases/c1").mkdir(parents=True)
    (tmp_path / "cases/c1/case.yaml").write_text("\n", encoding="utf-8")
    (tmp_path / "fixtures").mkdir()
    assert load_workspace_suite(tmp_path / "cases", tmp_path / "fixtures")[1] == [
        f"{tmp_path}/cases/c1/case.yaml: case c1: case.yaml is empty; write its id, title, evaluation and judge"
    ]


def test_an_empty_json_file_fails_json_valid_saying_empty(tmp_path: Path) -> None:
    (tmp_path / "evidences").mkdir()
    (tmp_path / "evidences/logs.json").write_bytes(b"")
    check = CheckSpec(id="logs", json_valid="evidences/logs.json")
    assert run_check(Workspace(str(tmp_path)), check) == (False, "evidences/logs.json: empty: no JSON in it")


def suite_input(tmp_path: Path, cases: str, label: str) -> SuiteInput:
    (tmp_path / "fixtures").mkdir(exist_ok=True)
    return SuiteInput("s", tmp_path / cases, tmp_path / "fixtures", label, "fixtures", 1024)


def test_an_empty_case_list_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "cases.json").write_text("[]", encoding="utf-8")
    trace = suite_input(tmp_path, "cases.json", "cases.json")
    assert TraceKind().validate(trace) == [
        "cases.json: holds no cases, so the suite evaluates nothing; add cases to it"
    ]
    assert TraceKind().console(TraceKind().evaluate(trace)).splitlines() == [
        "s: 0/0 cases passed (0.0%)",
        "  warning: the case file holds no cases, so nothing was evaluated",
    ]
    (tmp_path / "cases").mkdir()
    workspace = suite_input(tmp_path, "cases", "cases")
    assert WorkspaceKind().validate(workspace) == [
        "cases: holds no <case-id>/case.yaml, so the suite evaluates nothing"
    ]
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent-cases.yaml").write_text("[]\n", encoding="utf-8")
    for cases in ("agent", "agent-cases.yaml"):  # an empty folder, and a file holding an empty list
        assert AgentKind().validate(suite_input(tmp_path, cases, cases)) == [
            f"{cases}: holds no cases, so the suite evaluates nothing; add cases to it"
        ]


def test_files_named_like_cases_but_not_read_as_cases_are_named(tmp_path: Path) -> None:
    """A case file renamed `x.yaml.txt` (or runs kept as `.jsonl`) would leave the suite without a word: both
    validate and run name them; a README or a hidden editor file is not mentioned."""
    folder = tmp_path / "agent"
    (folder / "sub").mkdir(parents=True)
    for name in ("refund.yaml.txt", "sub/old.JSON.bak", "runs.jsonl", "README.md", ".refund.yaml.swp"):
        (folder / name).write_text("[]\n", encoding="utf-8")
    suite = suite_input(tmp_path, "agent", "agent")
    said = (
        "agent/refund.yaml.txt, agent/runs.jsonl, agent/sub/old.JSON.bak are not read: only files ending in .yaml, "
        ".yml or .json hold cases; rename them so, or move them out of the cases folder"
    )
    assert AgentKind().validate(suite) == [
        said,
        "agent: holds no cases, so the suite evaluates nothing; add cases to it",
    ]
    assert AgentKind().evaluate(suite).warnings == [said]
    assert AgentKind().evaluate(dataclasses.replace(suite, workers=2)).warnings == [said]  # read by read_cases
    (folder / "refund.yaml.txt").rename(folder / "refund.yaml")
    (folder / "runs.jsonl").unlink()
    assert AgentKind().evaluate(suite).warnings == [
        "agent/sub/old.JSON.bak is not read: only files ending in .yaml, .yml or .json hold cases; rename it so, or "
        "move it out of the cases folder"
    ]


def test_a_linked_folder_in_the_cases_folder_is_named_not_skipped_in_silence(tmp_path: Path) -> None:
    """A link to a folder is not followed, so its case files (broken ones included) had left the suite without a
    word: validate said 0 errors, 0 warnings. validate and run name it; a hidden linked folder stays unmentioned."""
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared/s.yaml").write_text("case_id: x\nrisk_level: P5\n", encoding="utf-8")
    (tmp_path / "agent/sub").mkdir(parents=True)
    for link in ("agent/shared", "agent/sub/again", "agent/.hidden"):
        (tmp_path / link).symlink_to(tmp_path / "shared", target_is_directory=True)
    suite = suite_input(tmp_path, "agent", "agent")
    said = (
        "agent/shared/, agent/sub/again/ are links to folders, which diagbot does not follow: no case file in them "
        "is read; move their case files into the cases folder, or make them plain folders"
    )
    empty = "agent: holds no cases, so the suite evaluates nothing; add cases to it"
    assert AgentKind().validate(suite) == [said, empty]
    assert AgentKind().evaluate(suite).warnings == [said]
    assert AgentKind().evaluate(dataclasses.replace(suite, workers=2)).warnings == [said]


def test_a_run_over_an_empty_suite_names_its_cases_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub/fixtures").mkdir(parents=True)
    (tmp_path / "sub/cases.json").write_text("[]", encoding="utf-8")
    (tmp_path / "sub/diagbot.yml").write_text("suites: [{name: empty, cases: cases.json, fixtures: fixtures}]\n")
    assert main(["run", "--config", "sub/diagbot.yml", "--out", "o", "--quiet"]) == 0
    assert capsys.readouterr() == (
        "",
        "warning: suite empty has no cases, so nothing was evaluated; add cases to cases.json (relative to "
        "sub/diagbot.yml)\n",
    )


# ---- workspace case.yaml: the closest name, the evidence-only files --------------------------------------------

_CASE = """id: c1
title: t
evaluation: {mode: evidence_only}
judge:
  evidence_collection: [{id: metrics, file_exists: evidences/metrics.json}]
  critical_evidence: [{id: gc, contains: {file: evidences/metrics.json, any: [gc]}}]
"""


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("critical_evidence:", "critical_evidnce:",
         "bucket critical_evidnce: unknown key; did you mean critical_evidence?"),
        ("evaluation:", "evalution:", "field evalution: unknown key; did you mean evaluation?"),
        ("mode: evidence_only", "mode: evidence_only, summary_glb: x",
         "field evaluation.summary_glb: unknown key; did you mean summary_glob?"),
        ("file_exists:", "file_exist:",
         "bucket evidence_collection: check 'metrics': field file_exist: unknown key; did you mean file_exists?"),
        ("any: [gc]", "any: [gc], fil: x",
         "bucket critical_evidence: check 'gc': field contains.fil: unknown key; did you mean file?"),
        ("title: t", "title: t\nowner: me",
         "field owner: unknown key; remove it or fix its spelling"),
    ],
    ids=["bucket", "top-level", "evaluation", "check-kind", "check-spec", "no-close-name"],
)  # fmt: skip
def test_case_yaml_typos_suggest_the_closest_name(tmp_path: Path, old: str, new: str, message: str) -> None:
    (tmp_path / "cases/c1").mkdir(parents=True)
    (tmp_path / "cases/c1/case.yaml").write_text(_CASE.replace(old, new, 1), encoding="utf-8")
    (tmp_path / "fixtures").mkdir()
    problems = load_workspace_suite(tmp_path / "cases", tmp_path / "fixtures")[1]
    assert f"{tmp_path}/cases/c1/case.yaml: case c1: {message}" in problems, problems


def workspace_run(tmp_path: Path, files: dict[str, str]) -> Any:
    (tmp_path / "cases/c1").mkdir(parents=True)
    (tmp_path / "cases/c1/case.yaml").write_text(_CASE, encoding="utf-8")
    for name, text in {"evidences/metrics.json": '{"gc": 1}', **files}.items():
        (tmp_path / "runs/c1" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "runs/c1" / name).write_text(text, encoding="utf-8")
    spec = SuiteInput("ws", tmp_path / "cases", tmp_path / "runs", "cases", "runs", 1024)
    return WorkspaceKind().evaluate(spec)


NEEDS = (
    "Evidence-only mode needs workspace\\_evidence\\_report.json (valid JSON), "
    "evidences/agent-runs/evidence-agent.json (valid JSON), "
    "a file matching evaluation.summary\\_glob (evidences/\\*summary\\* by default), "
    "and no evidences/agent-runs/diagnosis-analyst.json (the diagnosis agent must not have run)"
)


def test_missing_evidence_only_files_are_listed_in_the_comment(tmp_path: Path) -> None:
    report = workspace_run(tmp_path, {"evidences/agent-runs/evidence-agent.json": "{"})
    view = WorkspaceKind().view("ws", report, None)
    assert view.notes == (NEEDS,)
    assert view.result_rows[0][3] == (
        "evidence\\_only\\_artifacts\\_missing: no file matches 'workspace\\_evidence\\_report.json'; "
        "evidences/agent-runs/evidence-agent.json: not valid JSON (EOF while parsing an object at line 1 column 1); "
        "no file matches 'evidences/\\*summary\\*'"
    )
    assert WorkspaceKind().console(report).splitlines()[1:] == [
        "  INVALID c1: evidence_only_artifacts_missing: no file matches 'workspace_evidence_report.json'; "
        "evidences/agent-runs/evidence-agent.json: not valid JSON (EOF while parsing an object at line 1 column 1); "
        "no file matches 'evidences/*summary*', score 0",
        "  note: " + NEEDS.replace("\\", "").replace("Evidence-only", "evidence-only"),
    ]


def test_a_stage_boundary_failure_names_the_file_that_is_there(tmp_path: Path) -> None:
    contract = {
        "workspace_evidence_report.json": "{}",
        "evidences/agent-runs/evidence-agent.json": "{}",
        "evidences/summary.md": "s",
        "evidences/agent-runs/diagnosis-analyst.json": "{}",
    }
    view = WorkspaceKind().view("ws", workspace_run(tmp_path, contract), None)
    assert view.result_rows[0][3] == (
        "evidence\\_only\\_stage\\_boundary\\_failed: present: evidences/agent-runs/diagnosis-analyst.json"
    )
    assert view.notes == (NEEDS,)


def test_a_passing_evidence_only_run_has_no_note(tmp_path: Path) -> None:
    contract = {"workspace_evidence_report.json": "{}", "evidences/agent-runs/evidence-agent.json": "{}",
                "evidences/summary.md": "s"}  # fmt: skip
    view = WorkspaceKind().view("ws", workspace_run(tmp_path, contract), None)
    assert view.notes == () and view.result_rows[0][3] == ""


# ---- paths with what they are relative to -----------------------------------------------------------------------


def config_problems(tmp_path: Path, config: str, name: str = "diagbot.yml") -> list[str]:
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(config, encoding="utf-8")
    loaded = load_config(Path(name))
    with pytest.raises(ConfigError) as info:
        loaded.suite_input(loaded.suites[0])
    return info.value.problems


def test_missing_suite_paths_are_named_as_written_with_their_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    assert config_problems(tmp_path, "suites:\n  - {name: d, cases: cases/d.json, fixtures: fx}\n") == [
        "cases/d.json (relative to ./diagbot.yml): case file not found; fix suites.0.cases in diagbot.yml",
        "fx (relative to ./diagbot.yml): fixtures folder not found, so no case could be judged; fix suites.0.fixtures "
        "in diagbot.yml",
    ]
    config = "suites:\n  - {name: w, kind: workspace, cases: cases, fixtures: .}\n"
    assert config_problems(tmp_path, config, "sub/diagbot.yml") == [
        "cases (relative to sub/diagbot.yml): cases folder not found; fix suites.0.cases in sub/diagbot.yml"
    ]


def test_the_default_suites_missing_paths_say_what_to_do(tmp_path: Path) -> None:
    """That the built-in suite is in use is the command line's note (test_cli_ux), said once; not repeated here."""
    config = load_config(tmp_path / "diagbot.yml")
    with pytest.raises(ConfigError) as info:
        config.suite_input(config.suites[0])
    default = "write a diagbot.yml that names your suites"
    assert info.value.problems == [
        f"cases/diagnosis-cases.json (relative to {tmp_path}): case file not found; {default}",
        f"fixtures (relative to {tmp_path}): fixtures folder not found, so no case could be judged; {default}",
    ]


def test_a_path_leaving_the_workspace_says_what_it_is_relative_to(tmp_path: Path) -> None:
    (tmp_path / "diagbot.yml").write_text("suites:\n  - {name: d, cases: ../c.json, fixtures: f}\n", encoding="utf-8")
    config = load_config(tmp_path / "diagbot.yml").model_copy(update={"boundary": tmp_path})
    with pytest.raises(ConfigError) as info:
        config.suite_input(config.suites[0])
    [problem] = info.value.problems
    assert problem.startswith(f"{tmp_path}/diagbot.yml: suites.0.cases: '../c.json' resolves outside the workspace (")
    assert problem.endswith(f"); give a path inside the repository (relative to {tmp_path}/diagbot.yml)")


# ---- limits refused with diagbot.yml's message -----------------------------------------------------------------


def test_a_bad_fixture_size_is_refused_as_diagbot_yml_refuses_it() -> None:
    config = "suites:\n  - {name: d, cases: c.json, fixtures: f, max-fixture-bytes: -1}\n"
    with pytest.raises(ConfigError) as info:
        parse_config(config, "diagbot.yml", Path("."))
    assert info.value.problems == ["diagbot.yml: suites.0.max-fixture-bytes: Input should be greater than 0"]
    for value, shown in [(-1, "-1"), (0, "0")]:
        with pytest.raises(ConfigError) as info:
            checked_fixture_bytes(value)
        assert info.value.problems == [f"--max-fixture-bytes: Input should be greater than 0 (got {shown})"]
    assert checked_fixture_bytes(1024) == 1024


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1.0, "Input should be greater than or equal to 0 (got -1.0)"),
        (float("nan"), "Input should be a finite number (got nan)"),
        (float("inf"), "Input should be a finite number (got inf)"),
    ],
    ids=["negative", "nan", "inf"],
)
def test_bad_threshold_flags_are_refused_as_diagbot_yml_refuses_them(value: float, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        ThresholdConfig().override({"duration-pct": value}, "--{name}")
    assert info.value.problems == [f"--duration-pct: {message}"]
    with pytest.raises(ConfigError) as info:
        parse_config(
            "suites: [{name: d, cases: c, fixtures: f}]\nthresholds: {duration-pct: -1}\n", "diagbot.yml", Path(".")
        )
    assert info.value.problems == ["diagbot.yml: thresholds.duration-pct: Input should be greater than or equal to 0"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("nan", "Input should be a finite number (got 'nan')"),
        ("inf", "Input should be a finite number (got 'inf')"),
        ("-Infinity", "Input should be a finite number (got '-Infinity')"),
        ("-1", "Input should be greater than or equal to 0 (got '-1')"),
    ],
    ids=["nan", "inf", "minus-infinity", "negative"],
)
def test_bad_threshold_inputs_are_refused_as_diagbot_yml_refuses_them(value: str, message: str) -> None:
    env = {"INPUT_GITHUB-TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "push"}
    for name in ("tool-calls-pct", "tool-calls-min", "duration-pct", "duration-min-ms", "score-points"):
        variable = f"INPUT_{name.upper()}"
        with pytest.raises(SettingsError) as info:
            Settings.from_env({**env, variable: value})
        assert info.value.problems == [f"input '{name}' ({variable}): {message}; set it in the workflow step's `with:`"]
    assert Settings.from_env({**env, "INPUT_DURATION-PCT": "12.5"}).thresholds == {"duration-pct": 12.5}


@pytest.mark.parametrize("value", ["inf", "nan", "Infinity"])
def test_an_endless_wait_or_age_input_is_refused(value: str) -> None:
    """`max-wait-seconds: inf` would wait for the baseline forever, and an infinite or NaN age would let any
    baseline through: both are refused before anything runs."""
    env = {"INPUT_GITHUB-TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "push"}
    for name in ("max-wait-seconds", "baseline-max-age-days"):
        variable = f"INPUT_{name.upper()}"
        with pytest.raises(SettingsError) as info:
            Settings.from_env({**env, variable: value})
        expected = f"input '{name}' ({variable}): Input should be a finite number (got '{value}'); set it in"
        assert info.value.problems[0].startswith(expected)


# ---- the published schemas -----------------------------------------------------------------------------------


def test_the_bundled_fixtures_and_cases_validate_against_the_new_schemas(repo_root: Path) -> None:
    fixture = jsonschema.Draft202012Validator(SCHEMAS["trace-fixture"]())
    usable = [
        p
        for p in sorted((repo_root / "fixtures").glob("*.json"))
        if "bad-types" not in p.name and "array" not in p.name
    ]
    assert len(usable) >= 25
    for path in usable:
        assert not list(fixture.iter_errors(json.loads(path.read_text(encoding="utf-8")))), path
    assert list(fixture.iter_errors({"toolInvocations": "oops"}))
    case = jsonschema.Draft202012Validator(SCHEMAS["workspace-case"]())
    for path in sorted((repo_root / "cases/workspace").glob("*/case.yaml")):
        assert not list(case.iter_errors(yaml.safe_load(path.read_text(encoding="utf-8")))), path
    good = yaml.safe_load(_CASE)
    assert not list(case.iter_errors(good))
    two_kinds = {**good, "judge": {"evidence_collection": [{"id": "a", "file_exists": "x", "json_valid": "x"}]}}
    assert list(case.iter_errors(two_kinds))
    assert list(case.iter_errors({**good, "judge": {"critical_evidnce": []}}))


# ---- suggestions for misspelt names -------------------------------------------------------------------------------


def test_closest_suggests_a_near_name_and_never_compares_a_name_too_long_to_be_close() -> None:
    """difflib's ratio is 2 * matches / total length: with the longest known name 8 long, a name of more than
    8 * (2 / 0.6 - 1) = 18.67 characters can reach 0.6 with none of them, so it is not compared at all."""
    known = ["toolName", "verdict"]
    assert closest("toolNme", known) == "toolName"
    assert closest("toolNameXXXXXXXXXXX", known) is None  # 19 characters: past the bound
    assert closest("toolNameXXXXXXXXXX", known, cutoff=0.5) == "toolName"  # 18 <= 8 * 3 is compared: 16/26
    assert closest("x" * 10_000_000, known) is None
    assert closest("anything", []) is None
    assert closest("CASE_ID", ["case_id", "title"]) == "case_id"  # difflib's ratio is case-sensitive: 0 here
    assert closest("TOOLNAME", known) == "toolName"
    modes = ["subsequence", "strict", "unordered", "superset", "subset"]
    assert closest("subseq", modes) == "subsequence"  # cut short: the one it begins (by ratio it was subset)
    assert closest("sub", modes) is None  # it begins three of them
    assert closest("subet", modes) == "subset"
    long_name = "toolNam" * 2_000_000
    tracemalloc.start()
    try:
        closest(long_name, known)
        assert tracemalloc.get_traced_memory()[1] < 1_000_000  # difflib would build tables of the 14 MB name
    finally:
        tracemalloc.stop()


def test_console_lines_cannot_start_a_workflow_command() -> None:
    """A trace case id with a newline printed a line `::error::injected` that the runner reads as a command; a
    bidi override made an id read as another."""
    from diagbot.kinds.trace.kind import TraceKind
    from diagbot.kinds.trace.report import build_report
    from tests.test_diff import result

    hostile = result("x\n::error::injected\u202e", passed=False, failed_checks=["keyword_coverage: a\r\n::warning::b"])
    printed = TraceKind().console(build_report([hostile], suite="diagnosis"))
    assert not any(line.startswith("::") for line in printed.splitlines()), printed
    assert "FAIL x\\n::error::injected\\u202e: keyword_coverage: a\\r\\n::warning::b" in printed
    assert "\u202e" not in printed
