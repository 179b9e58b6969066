"""The per-kind docs stay true: their complete examples are written out and evaluated, and every field, code and
required file they must list is there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from diagbot.core.report import dump_model
from diagbot.io.config import load_config
from diagbot.kinds import registry
from diagbot.kinds.schemas import SCHEMAS
from diagbot.kinds.trace.codes import Code
from diagbot.kinds.trace.fields import FIELDS
from diagbot.kinds.trace.report import TraceReport
from diagbot.kinds.workspace.judge import WorkspaceReport, _mode_contract, load_workspace_suite
from tests.conftest import ROOT
from tests.test_agent_checks import make_case

DOCS = ROOT / "docs"
_FILE = re.compile(r"<!-- file: (?P<path>[^ ]+) -->\n```[a-z]*\n(?P<body>.*?)```\n", re.S)


def example(doc: str, where: Path) -> dict[str, str]:
    """Write every `<!-- file: PATH -->` block of the doc under `where`; the files by path."""
    files = {m["path"]: m["body"] for m in _FILE.finditer((DOCS / doc).read_text(encoding="utf-8"))}
    for path, body in files.items():
        (where / path).parent.mkdir(parents=True, exist_ok=True)
        (where / path).write_text(body, encoding="utf-8")
    return files


def evaluate(where: Path) -> list[object]:
    config = load_config(where / "diagbot.yml")
    return [registry.evaluate(suite.kind, config.suite_input(suite)) for suite in config.suites]


def schema(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(SCHEMAS[name]())


def test_the_trace_example_runs_as_the_doc_says(tmp_path: Path) -> None:
    files = example("trace.md", tmp_path)
    assert sorted(files) == [
        "cases/diagnosis-cases.json",
        "diagbot.yml",
        "fixtures/disk-full.json",
        "fixtures/pool-exhaustion.json",
    ]
    [report] = evaluate(tmp_path)
    assert isinstance(report, TraceReport)
    said = (DOCS / "trace.md").read_text(encoding="utf-8").split("failing twice:\n\n```text\n")[1].split("```")[0]
    assert {r.case_id: (r.passed, r.failed_checks) for r in report.results} == {
        "pool-exhaustion": (True, []),
        "disk-full": (False, said.splitlines()),
    }
    assert report.warnings == []
    fixture = schema("trace-fixture")
    for name in ("fixtures/disk-full.json", "fixtures/pool-exhaustion.json"):
        assert not list(fixture.iter_errors(json.loads(files[name]))), name
    assert not list(schema("trace-report").iter_errors(json.loads(dump_model(report))))


def test_the_workspace_example_runs_as_the_doc_says(tmp_path: Path) -> None:
    files = example("workspace.md", tmp_path)
    assert "cases/gc-pause/case.yaml" in files and len(files) == 6
    [report] = evaluate(tmp_path)
    assert isinstance(report, WorkspaceReport)
    [result] = report.results
    assert (result.case_id, result.verdict, result.score) == ("gc-pause", "pass", 100.0)
    assert not list(schema("workspace-case").iter_errors(yaml.safe_load(files["cases/gc-pause/case.yaml"])))
    (tmp_path / "runs/gc-pause/workspace_evidence_report.json").unlink()
    [report] = evaluate(tmp_path)
    [result] = report.results
    said = "`evidence_only_artifacts_missing: no\nfile matches 'workspace_evidence_report.json'`"
    assert said in (DOCS / "workspace.md").read_text(encoding="utf-8")
    assert (result.verdict, result.score) == ("invalid", 0.0)
    line = registry.console(report).splitlines()[1]
    assert line == (
        "  INVALID gc-pause: evidence_only_artifacts_missing: no file matches 'workspace_evidence_report.json', score 0"
    )


def test_the_workspace_doc_s_typo_messages_are_the_real_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = example("workspace.md", tmp_path)
    text = (DOCS / "workspace.md").read_text(encoding="utf-8")
    said = text.split("gets the closest real name:\n\n```text\n")[1].split("```")[0].splitlines()
    case = files["cases/gc-pause/case.yaml"].replace("critical_evidence:", "critical_evidnce:")
    (tmp_path / "cases/workspace/gc-pause").mkdir(parents=True)
    (tmp_path / "cases/workspace/gc-pause/case.yaml").write_text(case.replace("file_exists:", "file_exist:", 1))
    monkeypatch.chdir(tmp_path)
    problems = load_workspace_suite(Path("cases/workspace"), Path("runs"))[1]
    assert len(said) == 2 and all(line in problems for line in said), problems


def test_the_trace_doc_lists_every_field_and_code() -> None:
    text = (DOCS / "trace.md").read_text(encoding="utf-8")
    verifier = "session.selfEvaluation.verifier_evaluation"
    for field in FIELDS:
        shown = field.path.replace(verifier, "V")
        if field.path not in ("session", "session.selfEvaluation", verifier) and "." in field.path:
            assert f"`{shown}" in text, shown
    for code in Code:
        assert f"`{code}`" in text, code
    published = SCHEMAS["trace-fixture"]()
    for part in [published, *published["$defs"].values()]:
        for key in part["properties"]:
            assert re.search(rf"[`.]{re.escape(key)}[`.\[]", text), key  # a part of a path the doc shows


def test_the_workspace_doc_lists_the_evidence_only_files() -> None:
    text = (DOCS / "workspace.md").read_text(encoding="utf-8")
    for check in _mode_contract("evidences/*summary*"):
        assert f"`{check.payload}`" in text or f"`evaluation.summary_glob` (`{check.payload}`)" in text, check.id
    for key in ("file_exists", "file_absent", "json_valid", "contains", "regex", "json_query"):
        assert f"`{key}" in text, key


@pytest.mark.parametrize("kind", ["agent", "trace", "workspace"])
def test_the_readme_links_each_kind_s_page(kind: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"[`{kind}`](docs/{kind}.md)" in readme
    assert (DOCS / f"{kind}.md").is_file()


def test_the_agent_doc_s_side_effect_policy_example_is_a_valid_policy() -> None:
    """The one YAML example of a whole policy: a newcomer copies it into a P0 case."""
    text = (ROOT / "docs/agent.md").read_text(encoding="utf-8")
    start = text.index("```yaml\nside_effect_policy:") + len("```yaml\n")
    example = yaml.safe_load(text[start : text.index("```", start)])
    case = make_case(**example)
    (policy,) = case.policies
    assert policy.tool == "refund_submit" and len(policy.preconditions) == 2 and policy.confirmation_required
    assert policy.idempotency_paths == ["order_id", "item_id"] and policy.audit_fields == ["operator_id", "reason"]
