"""Tests of the workspace suite: check kinds, loading, verdict precedence, hostile workspaces, report, diff.

Golden packets of the bundled suite live in tests/golden/workspace/<case-id>.json. After a deliberate change,
regenerate them and read the diff before committing:

    UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_workspace.py -q -k golden
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from diagbot.core.diff import ItemType, Scope, Thresholds
from diagbot.core.errors import ReportFormatError
from diagbot.kinds.workspace import checks as workspace_checks
from diagbot.kinds.workspace.checks import (
    CHECKS,
    MAX_WEIGHT,
    READ_CAP,
    CheckKind,
    CheckSpec,
    Outcome,
    Workspace,
    _Blob,
    _parse,
    run_check,
)
from diagbot.kinds.workspace.diff import diff_workspace
from diagbot.kinds.workspace.judge import (
    Bucket,
    BucketResult,
    Reason,
    Status,
    Verdict,
    WorkspaceCase,
    WorkspaceReport,
    WorkspaceResult,
    _band,
    _bucket,
    build_workspace_report,
    judge_case,
    judge_suite,
    load_workspace_suite,
)
from diagbot.kinds.workspace.kind import WorkspaceKind
from tests.test_scaling_trace_workspace import calls

ROOT = Path(__file__).resolve().parent.parent
CASES, FIXTURES = ROOT / "cases" / "workspace", ROOT / "fixtures" / "workspace"
GOLDEN = ROOT / "tests" / "golden" / "workspace"

# ---- helpers -------------------------------------------------------------------------------------------


def write(root: Path, files: dict[str, str | bytes | Any]) -> Path:
    """Create files under root: str and bytes as given, anything else as JSON."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


def outcome(root: Path, **kind: Any) -> Outcome:
    return run_check(Workspace(str(root)), CheckSpec.model_validate({"id": "c", **kind}))


CONTRACT = {
    "workspace_evidence_report.json": {"stage": "evidence"},
    "evidences/agent-runs/evidence-agent.json": {"agent": "evidence-agent"},
    "evidences/evidence_summary.md": "# summary",
}
EVIDENCE = {
    "evidences/metrics.json": {"series": [{"name": "jvm_gc_pause_seconds"}]},
    "evidences/logs.json": {"entries": ["Pause Young (G1)"]},
}
DIAGNOSIS_RUN = {
    "evidences/agent-runs/orchestrator.json": {},
    "evidences/agent-runs/evidence-agent.json": {},
    "evidences/agent-runs/diagnosis-analyst.json": {"evidence_refs": ["evidences/metrics.json", "evidences/logs.json"]},
    "diagnosis/report.md": "Root cause: long GC pauses.",
    **EVIDENCE,
}


def make_case(**overrides: Any) -> WorkspaceCase:
    """An evidence-only case with two checks per bucket; override any top-level key."""
    raw: dict[str, Any] = {
        "id": "case-1",
        "title": "GC pause",
        "evaluation": {"mode": "evidence_only"},
        "judge": {
            "evidence_collection": [
                {"id": "metrics_bundle", "file_exists": "evidences/metrics.json"},
                {
                    "id": "logs_observed",
                    "json_query": {"file": "evidences/logs.json", "expr": "length(entries)"},
                },
            ],
            "critical_evidence": [
                {"id": "gc_pause", "contains": {"file": "evidences/metrics.json", "any": ["jvm_gc_pause"]}},
                {"id": "pause_lines", "regex": {"file": "evidences/*.json", "pattern": "Pause Young"}},
            ],
        },
    }
    raw.update(overrides)
    return WorkspaceCase.model_validate(raw)


def diagnosis_judge() -> dict[str, list[dict[str, Any]]]:
    return {
        "workflow": [{"id": "analyst_ran", "json_valid": "evidences/agent-runs/diagnosis-analyst.json"}],
        "evidence_collection": [
            {"id": "metrics_bundle", "file_exists": "evidences/metrics.json"},
            {"id": "logs_bundle", "file_exists": "evidences/logs.json"},
        ],
        "critical_evidence": [
            {"id": "gc_pause", "contains": {"file": "evidences/metrics.json", "any": ["gc_pause"]}},
            {"id": "g1", "contains": {"file": "evidences/logs.json", "any": ["G1"]}},
        ],
        "evidence_routing": [
            {
                "id": "metrics_cited",
                "contains": {"file": "evidences/agent-runs/diagnosis-analyst.json", "any": ["metrics.json"]},
            },
            {
                "id": "logs_cited",
                "contains": {"file": "evidences/agent-runs/diagnosis-analyst.json", "any": ["logs"]},
            },
        ],
        "diagnosis": [{"id": "names_gc", "contains": {"file": "diagnosis/report.md", "any": ["GC pause"]}}],
    }


def diagnosis_case(**overrides: Any) -> WorkspaceCase:
    return make_case(**{"evaluation": {"mode": "diagnosis"}, "judge": diagnosis_judge(), **overrides})


def judge_files(tmp_path: Path, files: dict[str, Any], case: WorkspaceCase | None = None) -> WorkspaceResult:
    case = case or make_case()
    write(tmp_path / "fixtures" / case.id, files)
    return judge_case(case, tmp_path / "fixtures")


def load(tmp_path: Path, yaml_by_case: dict[str, str]) -> tuple[list[WorkspaceCase], list[str]]:
    for case_id, text in yaml_by_case.items():
        write(tmp_path / "cases" / case_id, {"case.yaml": text})
    (tmp_path / "fixtures").mkdir(exist_ok=True)
    return load_workspace_suite(tmp_path / "cases", tmp_path / "fixtures")


# ---- check kinds ---------------------------------------------------------------------------------------


def test_registry_has_one_function_per_kind() -> None:
    assert set(CHECKS) == set(CheckKind)


FILES = {
    "evidences/metrics.json": {"series": [{"name": "jvm_gc_pause_seconds", "max": 0}], "empty": []},
    "evidences/broken.json": '{"a": ',
    "other/twice.json": '{"rollback": true, "rollback": false}',  # which one the agent meant is not known
    "evidences/logs/a.log": "INFO started\n",
    "evidences/logs/b.log": "panic: ＮＩＬ map\n",
    "notes.txt": "Heap_Used 91%",
}

KIND_CASES = [
    ("exists", {"file_exists": "evidences/metrics.json"}, True, "found evidences/metrics.json"),
    (
        "exists-missing",
        {"file_exists": "evidences/events.json"},
        False,
        "no file matches 'evidences/events.json'",
    ),
    ("exists-glob", {"file_exists": "evidences/logs/*.log"}, True, "found evidences/logs/a.log"),
    ("star-stays-in-folder", {"file_exists": "*.log"}, False, "no file matches"),
    ("double-star", {"file_exists": "**/b.log"}, True, "evidences/logs/b.log"),
    ("char-class", {"file_exists": "evidences/logs/[b-c].log"}, True, "b.log"),
    ("char-range-holding-slash-stays-in-folder", {"file_exists": "evidences[.-0]logs/a.log"}, False, "no file"),
    ("trailing-double-star-reaches-down", {"file_exists": "evidences/**"}, True, "evidences/logs/a.log"),
    ("absent", {"file_absent": "evidences/agent-runs/diagnosis-analyst.json"}, True, "no file matches"),
    ("absent-present", {"file_absent": "notes.txt"}, False, "present: notes.txt"),
    ("json-valid", {"json_valid": "evidences/metrics.json"}, True, "valid JSON"),
    ("json-invalid", {"json_valid": "evidences/broken.json"}, False, "not valid JSON"),
    ("json-glob-any-passes", {"json_valid": "evidences/*.json"}, True, "evidences/metrics.json: valid JSON"),
    ("json-not-json", {"json_valid": "notes.txt"}, False, "notes.txt: not valid JSON"),
    (
        "contains-any",
        {"contains": {"file": "evidences/*.json", "any": ["nope", "JVM_GC"]}},
        True,
        "found JVM_GC",
    ),
    ("contains-nfkc", {"contains": {"file": "evidences/logs/*.log", "any": ["nil map"]}}, True, "b.log"),
    (
        "contains-all-missing",
        {"contains": {"file": "notes.txt", "all": ["heap_used", "gc"]}},
        False,
        "notes.txt: found heap_used; missing gc",
    ),
    ("contains-all", {"contains": {"file": "notes.txt", "all": ["heap_used", "91%"]}}, True, "notes.txt"),
    ("contains-no-file", {"contains": {"file": "x.txt", "any": ["a"]}}, False, "no file matches 'x.txt'"),
    ("regex", {"regex": {"file": "evidences/logs/*.log", "pattern": "panic: "}}, True, "matched 'panic: '"),
    ("regex-case-sensitive", {"regex": {"file": "notes.txt", "pattern": "heap_used"}}, False, "no match"),
    ("regex-flags-inline", {"regex": {"file": "notes.txt", "pattern": "(?i)heap_used"}}, True, "Heap_Used"),
    (
        "query-true",
        {"json_query": {"file": "evidences/metrics.json", "expr": "length(series) > `0`"}},
        True,
        "true",
    ),
    (
        "query-zero-is-truthy",
        {"json_query": {"file": "evidences/metrics.json", "expr": "series[0].max"}},
        True,
        "0",
    ),
    ("query-empty-list", {"json_query": {"file": "evidences/metrics.json", "expr": "empty"}}, False, "-> []"),
    ("query-null", {"json_query": {"file": "evidences/metrics.json", "expr": "nothing"}}, False, "-> null"),
    (
        "query-type-error",
        {"json_query": {"file": "evidences/metrics.json", "expr": "length(`1`)"}},
        False,
        "failed",
    ),
    (
        "query-bad-json",
        {"json_query": {"file": "evidences/broken.json", "expr": "a"}},
        False,
        "not valid JSON",
    ),
    (
        "query-repeated-key",  # the last value was read: `rollback == false` passed on a file that also says true
        {"json_query": {"file": "other/twice.json", "expr": "rollback == `false`"}},
        False,
        "other/twice.json: not valid JSON (duplicate key 'rollback' in the object that starts here; keep one, "
        "line 1 column 1)",
    ),
]


@pytest.mark.parametrize(("kind", "passed", "detail"), [c[1:] for c in KIND_CASES], ids=[c[0] for c in KIND_CASES])
def test_check_kind(tmp_path: Path, kind: dict[str, Any], passed: bool, detail: str) -> None:
    result = outcome(write(tmp_path, FILES), **kind)
    assert result.passed is passed
    assert detail in result.detail


def test_failing_glob_names_each_file_it_looked_at(tmp_path: Path) -> None:
    result = outcome(write(tmp_path, FILES), regex={"file": "evidences/logs/*.log", "pattern": "OOM"})
    assert result.detail == "evidences/logs/a.log: no match for /OOM/; evidences/logs/b.log: no match for /OOM/"


def test_each_file_is_read_once_per_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace, opened = Workspace(str(write(tmp_path, FILES))), []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, *a: opened.append(path) or real_open(path, *a))
    for expr in ("series", "empty", "series[0].name"):
        run_check(
            workspace,
            CheckSpec.model_validate({"id": "q", "json_query": {"file": "evidences/*.json", "expr": expr}}),
        )
    assert sorted(opened) == sorted(str(tmp_path / rel) for rel in ("evidences/metrics.json", "evidences/broken.json"))


# ---- hostile workspaces --------------------------------------------------------------------------------


def test_link_outside_the_workspace_is_never_read_nor_absent(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"evidences/ok.json": "{}"})
    (root / "evidences" / "passwd.json").symlink_to("/etc/passwd")
    (tmp_path / "secret.txt").write_text("root:x:0:0")
    (root / "evidences" / "secret.txt").symlink_to(tmp_path / "secret.txt")
    exists = outcome(root, file_exists="evidences/passwd.json")
    assert not exists.passed
    assert "evidences/passwd.json is a link that resolves outside the workspace (treated as absent)" in exists.detail
    leaked = outcome(root, contains={"file": "evidences/*", "any": ["root:"]})
    assert not leaked.passed and "found" not in leaked.detail
    assert outcome(root, file_exists="evidences/p*.json") == Outcome(
        False,
        "no file matches 'evidences/p*.json'; "
        "evidences/passwd.json is a link that resolves outside the workspace (treated as absent)",
    )
    assert outcome(root, file_absent="evidences/secret.txt") == Outcome(  # something is there: not absent
        False, "present, but not as a regular file: evidences/secret.txt"
    )
    assert outcome(root, json_valid="evidences/*.json").detail == "evidences/ok.json: valid JSON"


def test_link_inside_the_workspace_is_followed_but_folder_links_are_not(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"real/metrics.json": '{"gc": 1}'})
    (root / "alias.json").symlink_to(root / "real" / "metrics.json")
    (root / "loop").symlink_to(root)
    assert outcome(root, json_query={"file": "alias.json", "expr": "gc"}).passed
    assert not outcome(root, file_exists="loop/real/metrics.json").passed


def test_sparse_gigabyte_file_is_read_only_up_to_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write(tmp_path / "ws", {})
    with open(root / "huge.log", "wb") as handle:
        handle.write(b"needle at the start\n")
        handle.truncate(1 << 30)
    read_sizes: list[int] = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: read_sizes.append(n) or real_read(fd, n))
    workspace = Workspace(str(root))
    found = run_check(
        workspace, CheckSpec.model_validate({"id": "c", "contains": {"file": "huge.log", "any": ["needle"]}})
    )
    as_json = run_check(workspace, CheckSpec(id="j", json_valid="huge.log"))
    assert found.passed and "read only the first 8 MiB of 1 GiB (1,073,741,824 bytes)" in found.detail
    assert not as_json.passed and "1 GiB (1,073,741,824 bytes) is over the 8 MiB read cap; not parsed" in as_json.detail
    assert sum(read_sizes) <= READ_CAP


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)


@given(JSON_VALUES, st.integers(0, 200), st.binary(max_size=3), st.booleans())
def test_json_valid_says_what_json_query_says_in_either_order(value: Any, at: int, junk: bytes, first: bool) -> None:
    """A file's JSON validity does not depend on which check read it first. A syntax-only shortcut had passed
    `json_valid` on a file that repeats a key, which `json_query` refuses, unless a query had read it before."""
    text = json.dumps(value).encode()
    invalid = (b'{"a": [1, NaN]}', b'{"a": {"b": Infinity}}', b"[" * 300, b'{"k": 1, "k": 2}', b'[{"k": 1, "k": 1}]')
    for data in (text, text[:at] + junk + text[at:], *invalid):
        ok, _, problem = _parse(_Blob(data, len(data)))
        if data in invalid:  # NaN, Infinity, too deep, a repeated key (with another value, or the same)
            assert ok is False, data
        query = CheckSpec(id="q", json_query={"file": "f.json", "expr": "`true`"})
        with tempfile.TemporaryDirectory() as tmp:
            write(Path(tmp), {"f.json": data})
            workspace = Workspace(tmp)
            queried = run_check(workspace, query) if first else None
            assert run_check(workspace, CheckSpec(id="v", json_valid="f.json")) == Outcome(ok, f"f.json: {problem}")
            queried = queried or run_check(workspace, query)
        assert queried.passed is ok  # the query reads the file exactly when json_valid finds it valid


def test_json_over_the_read_cap_is_not_valid_even_when_it_would_parse(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"padded.json": b"{}" + b" " * READ_CAP})
    assert outcome(root, json_valid="padded.json") == Outcome(
        False, "padded.json: 8 MiB (8,388,610 bytes) is over the 8 MiB read cap; not parsed"
    )


def test_listing_stops_at_the_entry_cap_and_nothing_unlisted_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(workspace_checks, "MAX_ENTRIES", 5)
    root = write(tmp_path / "ws", {f"many/{n:02d}.log": "x" for n in range(20)})
    workspace = Workspace(str(root))
    assert len(workspace.files) == 4  # the folder `many` is the first of the five entries
    cut = "the listing stopped after 5 entries, so an unlisted file may match"
    listed = next(iter(workspace.files))
    assert run_check(workspace, CheckSpec(id="a", file_exists=listed)).passed
    assert run_check(workspace, CheckSpec(id="b", file_exists="many/99.log")) == Outcome(
        False, f"no file matches 'many/99.log'; {cut}"
    )
    assert run_check(workspace, CheckSpec(id="c", file_absent="many/*.txt")) == Outcome(
        False, f"no file matches 'many/*.txt'; {cut}"
    )


def test_invalid_utf8_fails_json_checks_and_is_replaced_for_text(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"a.json": b'{"k": "\xff\xfe"}', "b.log": b"\xffgc_pause seen"})
    assert outcome(root, json_valid="a.json") == Outcome(False, "a.json: not valid UTF-8 (first bad byte at offset 7)")
    text = outcome(root, contains={"file": "b.log", "any": ["gc_pause"]})
    assert text.passed and "not valid UTF-8 (bad byte at offset 0; bad bytes replaced)" in text.detail


def test_fifo_and_folders_are_not_files(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"evidences/x/keep.txt": ""})
    os.mkfifo(root / "pipe.json")
    result = outcome(root, json_valid="pipe.json")
    assert result == Outcome(False, "no file matches 'pipe.json'; pipe.json is not a regular file (ignored)")
    assert not outcome(root, file_exists="evidences/x").passed


def test_hostile_workspace_is_judged_with_clear_failures(tmp_path: Path) -> None:
    root = write(tmp_path / "fixtures" / "case-1", CONTRACT | {"workspace_evidence_report.json": b"\xff{}"})
    (root / "evidences" / "metrics.json").symlink_to("/etc/passwd")
    with open(root / "evidences" / "logs.json", "wb") as handle:
        handle.truncate(1 << 30)
    result = judge_case(make_case(), tmp_path / "fixtures")
    assert (result.verdict, result.reason) == (Verdict.INVALID, Reason.EVIDENCE_ONLY_ARTIFACTS_MISSING)
    details = {check.id: check.detail for bucket in result.packet.buckets.values() for check in bucket.checks}
    assert details["workspace_evidence_report_valid"].endswith("not valid UTF-8 (first bad byte at offset 0)")
    outside = "evidences/metrics.json is a link that resolves outside the workspace (treated as absent)"
    assert details["metrics_bundle"] == f"no file matches 'evidences/metrics.json'; {outside}"
    assert details["gc_pause"] == f"no file matches 'evidences/metrics.json'; {outside}"
    assert (
        details["logs_observed"]
        == "evidences/logs.json: 1 GiB (1,073,741,824 bytes) is over the 8 MiB read cap; not parsed"
    )


def test_escaping_globs_are_validation_errors(tmp_path: Path) -> None:
    cases, problems = load(
        tmp_path,
        {
            "hostile": """
id: hostile
title: hostile
evaluation: {mode: evidence_only}
workspace: ../elsewhere
judge:
  evidence_collection:
    - {id: up, file_exists: ../../etc/passwd}
    - {id: abs, contains: {file: /etc/passwd, any: [root]}}
  critical_evidence:
    - {id: sneaky, regex: {file: "evidences/../../x", pattern: a}}
"""
        },
    )
    assert cases == []
    assert problems == [
        f"{tmp_path}/cases/hostile/case.yaml: case hostile: field workspace: "
        "path '../elsewhere' contains '..'; paths must stay inside the workspace",
        f"{tmp_path}/cases/hostile/case.yaml: case hostile: bucket evidence_collection: check 'up': "
        "field file_exists: path '../../etc/passwd' contains '..'; paths must stay inside the workspace",
        f"{tmp_path}/cases/hostile/case.yaml: case hostile: bucket evidence_collection: check 'abs': "
        "field contains.file: absolute path '/etc/passwd'; paths are relative to the workspace root",
        f"{tmp_path}/cases/hostile/case.yaml: case hostile: bucket critical_evidence: check 'sneaky': "
        "field regex.file: path 'evidences/../../x' contains '..'; paths must stay inside the workspace",
    ]


@pytest.mark.parametrize(
    ("glob", "problem"),
    [
        (
            "diagnosis/{report,summary}.md",
            "glob 'diagnosis/{report,summary}.md' has a brace; diagbot's globs have no {a,b} alternatives (only *, ?, "
            "** and [...]), so it would name no file: write one check per name",
        ),
        (
            "diagnosis\\rollback-plan.md",
            "path 'diagnosis\\\\rollback-plan.md' has a backslash; separate folders with '/' (a backslash is no "
            "separator and no escape here, so the path would name no file)",
        ),
        (
            "diagnosis/rollback-plan.md ",
            "path 'diagnosis/rollback-plan.md ' has a space at the start or end of a part; remove it (no file is "
            "named so)",
        ),
        (
            "diagnosis /rollback-plan.md",
            "path 'diagnosis /rollback-plan.md' has a space at the start or end of a part; remove it (no file is "
            "named so)",
        ),
    ],
    ids=["brace", "backslash", "trailing-space", "space-in-a-folder"],
)
def test_globs_that_name_no_file_are_validation_errors(tmp_path: Path, glob: str, problem: str) -> None:
    """Each of these matched nothing, so a file_absent check of the file it meant passed whatever the run left."""
    write(tmp_path / "ws", {"diagnosis/rollback-plan.md": "roll back"})
    with pytest.raises(ValidationError) as raised:
        CheckSpec.model_validate({"id": "c", "file_absent": glob})
    assert raised.value.errors()[0]["msg"] == f"Value error, {problem}"
    assert not outcome(tmp_path / "ws", file_absent="diagnosis/rollback-plan.md").passed


def test_workspace_folder_linked_outside_the_fixtures_is_invalid(tmp_path: Path) -> None:
    write(tmp_path / "outside", CONTRACT | EVIDENCE)
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "case-1").symlink_to(tmp_path / "outside")
    result = judge_case(make_case(), tmp_path / "fixtures")
    assert (result.verdict, result.reason, result.score) == (
        Verdict.INVALID,
        Reason.ARTIFACT_RESOLUTION_FAILED,
        0,
    )
    check = result.packet.buckets["mode_contract"].checks[0]
    assert check.detail == "not run: workspace 'case-1' resolves outside the fixtures folder"


def test_workspace_link_inside_the_fixtures_is_followed_and_a_file_is_not_a_workspace(tmp_path: Path) -> None:
    write(tmp_path / "fixtures" / "runs" / "r1", CONTRACT | EVIDENCE)
    (tmp_path / "fixtures" / "alias").symlink_to(tmp_path / "fixtures" / "runs" / "r1")
    (tmp_path / "fixtures" / "plain").write_text("not a folder")
    assert judge_case(make_case(workspace="alias"), tmp_path / "fixtures").verdict is Verdict.PASS
    as_file = judge_case(make_case(workspace="plain"), tmp_path / "fixtures")
    detail = as_file.packet.buckets["mode_contract"].checks[0].detail
    assert (as_file.reason, detail) == (
        Reason.ARTIFACT_RESOLUTION_FAILED,
        "not run: workspace folder 'plain' not found in the fixtures folder",
    )


NOBODY = 65534


def judged_as_nobody(case: WorkspaceCase, fixtures: Path) -> WorkspaceResult:
    """Permissions do not stop root, so when the tests run as root the judge runs in a forked child as nobody
    (forked, not executed: nobody may not be allowed to run this interpreter)."""
    if os.geteuid() != 0:
        return judge_case(case, fixtures)
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns on a fork while threads run; the child only judges
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            os.setgid(NOBODY)
            os.setgroups([])
            os.setuid(NOBODY)
            with os.fdopen(write_end, "wb") as out:
                out.write(judge_case(case, fixtures).model_dump_json().encode())
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    assert os.waitpid(pid, 0)[1] == 0, "the unprivileged judge failed"
    return WorkspaceResult.model_validate_json(data)


def test_permissions_are_honoured_for_the_run_folder_and_its_subfolders() -> None:
    fixtures = Path(tempfile.mkdtemp())  # not under pytest's tmp_path, which nobody cannot enter
    try:
        fixtures.chmod(0o755)
        for name in ("listable-only", "private-subfolder"):
            write(fixtures / name, CONTRACT | EVIDENCE | {"evidences/private/key.json": "{}"})
        (fixtures / "listable-only").chmod(0o444)
        (fixtures / "private-subfolder" / "evidences" / "private").chmod(0o000)
        shut_out = judged_as_nobody(make_case(id="listable-only"), fixtures)
        assert (shut_out.verdict, shut_out.reason) == (Verdict.INVALID, Reason.ARTIFACT_RESOLUTION_FAILED)
        detail = shut_out.packet.buckets["mode_contract"].checks[0].detail
        assert detail == "not run: workspace folder 'listable-only' cannot be read (permission denied)"
        judge = {
            "evidence_collection": [{"id": "m", "file_exists": "evidences/metrics.json"}],
            "critical_evidence": [{"id": "k", "file_exists": "evidences/private/*.json"}],
        }
        partly = judged_as_nobody(make_case(id="private-subfolder", judge=judge), fixtures)
        assert (partly.verdict, partly.reason) == (Verdict.FAIL, Reason.CRITICAL_EVIDENCE_MISSING)
        checks = partly.packet.buckets["critical_evidence"].checks
        unseen = "folder evidences/private/ cannot be listed (Permission denied), so a file in it may match"
        assert checks[0].detail == f"no file matches 'evidences/private/*.json'; {unseen}"
        # what cannot be listed is not absent: a forbidden file may be in it (this passed)
        forbid = {"evidence_collection": [{"id": "m", "file_exists": "evidences/metrics.json"}],
                  "critical_evidence": [{"id": "no_key", "file_absent": "evidences/private/*.json"},
                                        {"id": "no_draft", "file_absent": "evidences/drafts/*.md"},
                                        # the same globs written another way passed: ./ and // were not read past
                                        {"id": "dot", "file_absent": "./evidences/private/*.json"},
                                        {"id": "twice", "file_absent": "evidences//private/key.json"},
                                        {"id": "here", "file_absent": "evidences/./private/key.json"},
                                        {"id": "beside", "file_absent": "evidences/pri"}]}  # fmt: skip
        absent = judged_as_nobody(make_case(id="private-subfolder", judge=forbid), fixtures)
        checks = absent.packet.buckets["critical_evidence"].checks
        assert [(c.passed, c.detail) for c in checks] == [
            (False, f"no file matches 'evidences/private/*.json'; {unseen}"),
            (True, "no file matches 'evidences/drafts/*.md'"),  # a folder listed whole: absence is known
            (False, f"no file matches './evidences/private/*.json'; {unseen}"),
            (False, f"no file matches 'evidences//private/key.json'; {unseen}"),
            (False, f"no file matches 'evidences/./private/key.json'; {unseen}"),
            (True, "no file matches 'evidences/pri'"),  # a name beside the folder, not in it
        ]
    finally:
        for folder, _, _ in os.walk(fixtures):
            os.chmod(folder, 0o755)
        shutil.rmtree(fixtures)


def test_unlistable_workspace_folder_is_invalid_not_empty(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run folder passed the access check but listing it still fails (a race, or a filesystem that says no)."""
    root = write(tmp_path / "fixtures" / "case-1", CONTRACT | EVIDENCE)
    real_scandir = os.scandir

    def scandir(path: str) -> Any:
        if path == str(root):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    result = judge_case(make_case(), tmp_path / "fixtures")
    assert (result.verdict, result.reason) == (Verdict.INVALID, Reason.ARTIFACT_RESOLUTION_FAILED)
    detail = result.packet.buckets["critical_evidence"].checks[0].detail
    assert detail == "not run: workspace folder 'case-1' cannot be read (Permission denied)"


def test_judging_leaves_no_reference_cycles() -> None:
    """judge_suite pauses the cycle collector, which is only safe while judging makes no cycles."""
    cases, problems = load_workspace_suite(CASES, FIXTURES)
    assert problems == []
    judge_suite(cases, FIXTURES)  # warm caches and lazily built schemas first
    gc.collect()
    gc.disable()
    try:
        judge_suite(cases, FIXTURES)
        assert gc.collect() == 0
    finally:
        gc.enable()


@pytest.mark.parametrize("collecting", [True, False])
def test_judge_suite_restores_the_cycle_collector(tmp_path: Path, collecting: bool) -> None:
    write(tmp_path / "case-1", CONTRACT | EVIDENCE)
    (gc.enable if collecting else gc.disable)()
    try:
        report = judge_suite([make_case()], tmp_path)
        assert (report.passed_cases, gc.isenabled()) == (1, collecting)
    finally:
        gc.enable()


def test_workspace_key_resolves_inside_the_fixtures(tmp_path: Path) -> None:
    write(tmp_path / "fixtures" / "runs" / "r1", CONTRACT | EVIDENCE)
    assert judge_case(make_case(workspace="runs/r1"), tmp_path / "fixtures").verdict is Verdict.PASS
    missing = judge_case(make_case(workspace="runs/r2"), tmp_path / "fixtures")
    assert missing.reason is Reason.ARTIFACT_RESOLUTION_FAILED
    assert (
        "workspace folder 'runs/r2' not found in the fixtures folder"
        in missing.packet.buckets["mode_contract"].checks[0].detail
    )


# ---- loading -------------------------------------------------------------------------------------------


def test_bad_checks_are_all_reported_with_case_bucket_check_and_field(tmp_path: Path) -> None:
    _, problems = load(
        tmp_path,
        {
            "c1": """
id: c1
title: t
evaluation: {mode: evidence_only}
judge:
  evidence_collection:
    - {id: two, file_exists: a, file_absent: b}
    - {id: typo, fle_exists: a}
    - {id: bad, regex: {file: a, pattern: "("}, weight: -1}
  critical_evidence:
    - {id: q, json_query: {file: a, expr: "length("}}
    - {file_exists: a}
"""
        },
    )
    where = f"{tmp_path}/cases/c1/case.yaml: case c1: bucket"
    assert problems[0] == (
        f"{where} evidence_collection: check 'two': needs exactly one kind key of file_exists, file_absent, "
        "json_valid, contains, regex, json_query; found file_exists, file_absent"
    )
    assert problems[1].startswith(f"{where} evidence_collection: check 'typo': field fle_exists: unknown key;")
    assert (
        f"{where} evidence_collection: check 'bad': field weight: Input should be greater than or equal to 0"
        in problems[2]
    )
    assert problems[3].startswith(f"{where} evidence_collection: check 'bad': field regex.pattern: invalid regular")
    assert problems[4].startswith(f"{where} critical_evidence: check 'q': field json_query.expr: invalid JMESPath")
    assert problems[5] == f"{where} critical_evidence: check #2: field id: is required; add it"
    assert len(problems) == 6


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "evaluation: {mode: evidence_only}\njudge: {evidence_collection: [{id: a, file_exists: a}]}",
            "bucket critical_evidence: evidence_only mode needs at least one check here; add one",
        ),
        (
            "evaluation: {mode: evidence_only, weights: {diagnosis: 40}}\njudge: {}",
            "field evaluation: weights apply only in diagnosis mode",
        ),
        (
            "evaluation: {weights: {diagnosis: 40}}\njudge: {}",
            "field evaluation: bucket points total 110, not 100",
        ),
        (
            "evaluation: {weights: {mode_contract: 0}}\njudge: {}",
            "field evaluation: weights take points >= 0 for",
        ),
        (
            "evaluation: {mode: diagnosis}\njudge: {workflow: [{id: a, file_exists: a}]}",
            "bucket evidence_collection: diagnosis mode needs at least one check here; add one or give it 0",
        ),
        (
            "judge: {workflow: [{id: a, file_exists: a}, {id: a, file_exists: b}]}",
            "bucket workflow: check id 'a' is used twice",
        ),
        ("judge: {critical_evidences: []}", "bucket critical_evidences: unknown key"),
        ("judge: {}\nowner: me", "field owner: unknown key"),
        (
            "evaluation: {mode: evidence_only, summary_glob: '../s'}\njudge: {}",
            "field evaluation.summary_glob: path",
        ),
    ],
    ids=[
        "eo-bucket-empty",
        "eo-weights",
        "weights-total",
        "weights-bucket",
        "dx-bucket-empty",
        "duplicate-id",
        "unknown-bucket",
        "unknown-top-key",
        "summary-glob",
    ],
)
def test_case_rules(tmp_path: Path, body: str, message: str) -> None:
    cases, problems = load(tmp_path, {"c": f"id: c\ntitle: t\n{body}\n"})
    assert cases == []
    assert any(message in problem for problem in problems), problems


def test_one_broken_case_does_not_stop_the_others(tmp_path: Path) -> None:
    good = """
id: good
title: t
evaluation: {mode: evidence_only}
judge: {evidence_collection: [{id: a, file_exists: a}], critical_evidence: [{id: b, file_exists: b}]}
"""
    (tmp_path / "cases" / "empty").mkdir(parents=True)
    cases, problems = load(tmp_path, {"a-broken": "id: a-broken\ntitle: [\n", "good": good, "wrong-id": good})
    assert [case.id for case in cases] == ["good"]
    assert problems == [
        f"{tmp_path}/cases/a-broken/case.yaml: case a-broken: not valid YAML "
        "(line 3: expected the node content, but found '<stream end>'); fix the syntax",
        f"{tmp_path}/cases/empty/case.yaml: case empty: no case.yaml; add one or remove the folder",
        f"{tmp_path}/cases/wrong-id/case.yaml: case good: field id: "
        "'good' differs from its folder name 'wrong-id'; make them the same",
    ]


def test_missing_folders_are_reported(tmp_path: Path) -> None:
    assert load_workspace_suite(tmp_path / "nope", tmp_path)[1] == [
        f"{tmp_path}/nope: cases folder not found; pass the folder that holds <case-id>/case.yaml"
    ]
    (tmp_path / "case.yaml").write_text("id: a\n")  # a case file given for the folder: not "not found"
    assert load_workspace_suite(tmp_path / "case.yaml", tmp_path)[1] == [
        f"{tmp_path}/case.yaml: is a file, not a folder; pass the folder that holds <case-id>/case.yaml"
    ]
    (tmp_path / "cases").mkdir()
    assert load_workspace_suite(tmp_path / "cases", tmp_path / "nofix")[1] == [
        f"{tmp_path}/nofix: fixtures folder not found; every run is invalid"
    ]


# ---- buckets, precedence, bands ------------------------------------------------------------------------


def test_bucket_status_and_weighted_score(tmp_path: Path) -> None:
    checks = [
        {"id": "a", "file_exists": "a"},
        {"id": "b", "file_exists": "b"},
        {"id": "opt", "required": False, "weight": 2, "file_exists": "c"},
    ]
    judge = {"evidence_collection": [{"id": "m", "file_exists": "m"}], "critical_evidence": checks}
    case = make_case(judge=judge)
    scores = {}
    for present in ["a,b,c", "a,b", "a,c", "c", ""]:
        files = CONTRACT | {"m": ""} | {name: "" for name in present.split(",") if name}
        bucket = judge_files(tmp_path / present.replace(",", "") / "x", files, case).packet.buckets["critical_evidence"]
        scores[present] = (bucket.status, bucket.score)
    assert scores == {
        "a,b,c": (Status.PASS, 60.0),
        "a,b": (Status.PASS, 30.0),  # optional check missed: pass, but a lower score
        "a,c": (Status.PARTIAL, 45.0),
        "c": (Status.FAIL, 30.0),
        "": (Status.FAIL, 0.0),
    }


def test_bucket_without_required_checks_passes(tmp_path: Path) -> None:
    judge = {
        "evidence_collection": [{"id": "m", "file_exists": "m"}],
        "critical_evidence": [{"id": "opt", "required": False, "file_exists": "nope"}],
    }
    result = judge_files(tmp_path, CONTRACT | {"m": ""}, make_case(judge=judge))
    assert result.packet.buckets["critical_evidence"].status is Status.PASS
    assert (result.verdict, result.score, result.packet.scoring.raw) == (Verdict.PASS, 70.0, 40.0)


EVIDENCE_ONLY_STEPS = [
    ("pass", CONTRACT | EVIDENCE, Verdict.PASS, None, 100.0),
    (
        "boundary-beats-artifacts",
        {"evidences/agent-runs/diagnosis-analyst.json": "{}", **EVIDENCE},
        Verdict.INVALID,
        Reason.EVIDENCE_ONLY_STAGE_BOUNDARY_FAILED,
        0.0,
    ),
    (
        "artifacts-missing",
        {k: v for k, v in CONTRACT.items() if "summary" not in k} | EVIDENCE,
        Verdict.INVALID,
        Reason.EVIDENCE_ONLY_ARTIFACTS_MISSING,
        0.0,
    ),
    (
        "report-not-json",
        CONTRACT | {"workspace_evidence_report.json": "{"} | EVIDENCE,
        Verdict.INVALID,
        Reason.EVIDENCE_ONLY_ARTIFACTS_MISSING,
        0.0,
    ),
    ("collection-incomplete", CONTRACT, Verdict.INVALID, Reason.EVIDENCE_COLLECTION_INCOMPLETE, 0.0),
    (
        "collection-partial",
        CONTRACT | {"evidences/metrics.json": EVIDENCE["evidences/metrics.json"]},
        Verdict.FAIL,
        Reason.EVIDENCE_COLLECTION_PARTIAL,
        55.0,
    ),
    (
        "critical-missing",
        CONTRACT | {"evidences/metrics.json": {}, "evidences/logs.json": {"entries": [1]}},
        Verdict.FAIL,
        Reason.CRITICAL_EVIDENCE_MISSING,
        40.0,
    ),
    (
        "critical-partial",
        CONTRACT | EVIDENCE | {"evidences/logs.json": {"entries": ["x"]}},
        Verdict.FAIL,
        Reason.CRITICAL_EVIDENCE_PARTIAL,
        69.0,
    ),
]


@pytest.mark.parametrize(
    ("files", "verdict", "reason", "score"),
    [s[1:] for s in EVIDENCE_ONLY_STEPS],
    ids=[s[0] for s in EVIDENCE_ONLY_STEPS],
)
def test_evidence_only_precedence(
    tmp_path: Path, files: dict[str, Any], verdict: Verdict, reason: Reason | None, score: float
) -> None:
    result = judge_files(tmp_path, files)
    assert (result.verdict, result.reason, result.score) == (verdict, reason, score)
    assert result.packet.scoring.verdict is verdict and result.packet.scoring.final == score
    assert list(result.packet.buckets) == ["mode_contract", "evidence_collection", "critical_evidence"]


def test_evidence_only_missing_workspace_is_invalid(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    result = judge_case(make_case(), tmp_path / "fixtures")
    assert (result.verdict, result.reason, result.score) == (
        Verdict.INVALID,
        Reason.ARTIFACT_RESOLUTION_FAILED,
        0.0,
    )
    assert all(not check.passed for bucket in result.packet.buckets.values() for check in bucket.checks)


def without(files: dict[str, Any], *names: str) -> dict[str, Any]:
    return {rel: content for rel, content in files.items() if rel not in names}


DIAGNOSIS_STEPS = [
    ("pass", DIAGNOSIS_RUN, Verdict.PASS, None, 100.0),
    ("missing", None, Verdict.INVALID, Reason.ARTIFACT_RESOLUTION_FAILED, 0.0),
    (
        "workflow",
        without(DIAGNOSIS_RUN, "evidences/agent-runs/diagnosis-analyst.json"),
        Verdict.INVALID,
        Reason.WORKFLOW_INCOMPLETE,
        0.0,
    ),
    (
        "collection-incomplete",
        without(DIAGNOSIS_RUN, "evidences/metrics.json", "evidences/logs.json"),
        Verdict.INVALID,
        Reason.EVIDENCE_COLLECTION_INCOMPLETE,
        0.0,
    ),
    (
        "collection-partial",
        without(DIAGNOSIS_RUN, "evidences/logs.json"),
        Verdict.FAIL,
        Reason.EVIDENCE_COLLECTION_PARTIAL,
        69.0,
    ),
    (
        "critical-missing",
        DIAGNOSIS_RUN | {"evidences/metrics.json": {}, "evidences/logs.json": {}},
        Verdict.FAIL,
        Reason.CRITICAL_EVIDENCE_MISSING,
        69.0,
    ),
    (
        "routing-partial",
        DIAGNOSIS_RUN | {"evidences/agent-runs/diagnosis-analyst.json": ["metrics.json"]},
        Verdict.FAIL,
        Reason.EVIDENCE_ROUTING_PARTIAL,
        69.0,
    ),
    (
        "routing-missing",
        DIAGNOSIS_RUN | {"evidences/agent-runs/diagnosis-analyst.json": {}},
        Verdict.FAIL,
        Reason.EVIDENCE_ROUTING_MISSING,
        69.0,
    ),
    (
        "diagnosis-missing",
        without(DIAGNOSIS_RUN, "diagnosis/report.md"),
        Verdict.FAIL,
        Reason.DIAGNOSIS_MISSING,
        69.0,
    ),
]


@pytest.mark.parametrize(
    ("files", "verdict", "reason", "score"),
    [s[1:] for s in DIAGNOSIS_STEPS],
    ids=[s[0] for s in DIAGNOSIS_STEPS],
)
def test_diagnosis_precedence(
    tmp_path: Path, files: dict[str, Any] | None, verdict: Verdict, reason: Reason | None, score: float
) -> None:
    case = diagnosis_case()
    if files is None:
        (tmp_path / "fixtures").mkdir()
        result = judge_case(case, tmp_path / "fixtures")
    else:
        result = judge_files(tmp_path, files, case)
    assert (result.verdict, result.reason, result.score) == (verdict, reason, score)
    assert list(result.packet.buckets) == [b.value for b in Bucket if b is not Bucket.MODE_CONTRACT]


def test_diagnosis_weights_override_points_and_partial_diagnosis(tmp_path: Path) -> None:
    weights = {
        "workflow": 0,
        "evidence_collection": 10,
        "critical_evidence": 10,
        "evidence_routing": 10,
        "diagnosis": 70,
    }
    judge = diagnosis_judge()
    judge["diagnosis"].append({"id": "names_heap", "contains": {"file": "diagnosis/report.md", "any": ["heap"]}})
    case = diagnosis_case(evaluation={"mode": "diagnosis", "weights": weights}, judge=judge)
    result = judge_files(tmp_path, DIAGNOSIS_RUN, case)
    points = {name: bucket.points for name, bucket in result.packet.buckets.items()}
    assert points == {
        "workflow": 0,
        "evidence_collection": 10,
        "critical_evidence": 10,
        "evidence_routing": 10,
        "diagnosis": 70,
    }
    assert (result.verdict, result.reason, result.packet.scoring.raw, result.score) == (
        Verdict.FAIL,
        Reason.DIAGNOSIS_PARTIAL,
        65.0,
        65.0,
    )


def test_weights_of_100_whose_rounded_bucket_scores_sum_past_it_score_100(tmp_path: Path) -> None:
    """Each bucket's score is rounded: these weights, all checks passing, summed to 100.01, which the report's bound
    on a score refused ("failed unexpectedly", no report)."""
    weights = {"workflow": 13.907, "evidence_collection": 39.767, "critical_evidence": 2.341,
               "evidence_routing": 38.089, "diagnosis": 5.896}  # fmt: skip
    case = diagnosis_case(evaluation={"mode": "diagnosis", "weights": weights})
    result = judge_files(tmp_path, DIAGNOSIS_RUN, case)
    assert sum(bucket.score for bucket in result.packet.buckets.values()) > 100
    assert (result.verdict, result.packet.scoring.raw, result.score) == (Verdict.PASS, 100.0, 100.0)


@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.integers(0, 5)), min_size=1, max_size=6))
def test_bucket_score_stays_within_points(checks: list[tuple[bool, bool, int]]) -> None:
    specs = tuple(CheckSpec(id=str(i), required=r, weight=w, file_exists="x") for i, (_, r, w) in enumerate(checks))
    bucket = BucketResult(**_bucket(30.0, specs, [Outcome(p, "") for p, _, _ in checks]))
    assert 0 <= bucket.score <= 30.0
    if all(p for p, r, _ in checks if r):
        assert bucket.status is Status.PASS


@given(st.sampled_from(list(Verdict)), st.floats(0, 100))
def test_score_bands(verdict: Verdict, raw: float) -> None:
    final = _band(verdict, raw)
    assert {Verdict.INVALID: final == 0, Verdict.PASS: 70 <= final <= 100, Verdict.FAIL: 1 <= final <= 69}[verdict]


# ---- bundled suite and golden packets ------------------------------------------------------------------


def bundled() -> list[WorkspaceResult]:
    cases, problems = load_workspace_suite(CASES, FIXTURES)
    assert problems == []
    return [judge_case(case, FIXTURES) for case in cases]


def test_bundled_suite_exercises_every_verdict_and_reason() -> None:
    results = bundled()
    assert len(results) >= 6
    assert {result.reason for result in results} == set(Reason) | {None}
    for mode in ("evidence_only", "diagnosis"):
        assert {r.verdict for r in results if r.mode == mode} == set(Verdict)


@pytest.mark.parametrize("result", bundled(), ids=lambda result: result.case_id)
def test_golden_packet(result: WorkspaceResult) -> None:
    path = GOLDEN / f"{result.case_id}.json"
    produced = json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(produced, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with UPDATE_GOLDEN=1 and review it"
    assert produced == path.read_text(encoding="utf-8")
    assert WorkspaceResult.model_validate_json(produced) == result


def test_golden_files_match_bundled_cases() -> None:
    assert sorted(p.stem for p in GOLDEN.glob("*.json")) == sorted(r.case_id for r in bundled())


STARTER = ROOT / "diagbot" / "templates" / "init" / "workspace"


@pytest.mark.parametrize(
    ("cases", "fixtures"),
    [(CASES, FIXTURES), (STARTER / "cases" / "workspace", STARTER / "fixtures" / "workspace")],
    ids=["bundled", "starter"],
)
def test_real_cases_spend_a_thousandth_of_the_work_budget(
    cases: Path, fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget bounds hostile cases only: the bundled suite and `diagbot init`'s starter take at most a few
    hundred of its 10,000,000 steps a case."""
    made: list[Workspace] = calls(monkeypatch, Workspace, "__init__")  # each case's workspace, as it is made
    loaded, problems = load_workspace_suite(cases, fixtures)
    assert not problems
    judge_suite(loaded, fixtures)
    assert len(made) >= 2
    assert min(ws.spent for ws in made) > 0  # the checks are charged at all
    assert max(ws.spent for ws in made) < workspace_checks.MAX_CASE_STEPS // 1_000


# ---- report --------------------------------------------------------------------------------------------


def test_report_aggregates_and_wire_shape() -> None:
    report = build_workspace_report(bundled())
    wire = report.model_dump(mode="json")
    assert list(wire)[:2] == ["schemaVersion", "kind"] and (wire["schemaVersion"], wire["kind"]) == (
        1,
        "workspace",
    )
    assert wire["totalCases"] == 14 and wire["passedCases"] == 2 and wire["passRate"] == round(2 / 14, 6)
    assert wire["verdictDistribution"] == {"pass": 2, "fail": 7, "invalid": 5}
    assert wire["averageScore"] == round(sum(r.score for r in report.results) / 14, 2)
    assert list(wire["averageBucketScores"]) == [b.value for b in Bucket]
    packet = wire["results"][0]["packet"]
    assert list(packet)[-1] == "scoring" and set(packet["scoring"]) == {"raw", "final", "verdict", "reason"}
    assert set(packet["workflow"]) == {"status", "points", "score", "checks"}
    assert WorkspaceReport.model_validate_json(report.model_dump_json()) == report


def test_empty_report() -> None:
    report = build_workspace_report([])
    assert (report.total_cases, report.pass_rate, report.average_score, report.average_bucket_scores) == (
        0,
        0.0,
        0.0,
        {},
    )
    assert report.verdict_distribution == {Verdict.PASS: 0, Verdict.FAIL: 0, Verdict.INVALID: 0}


def test_weights_are_bounded_so_every_report_reads_back(tmp_path: Path) -> None:
    """Two weights of 1e308 made the bucket's total infinite and its share NaN, written as null: diagbot could not
    read its own report as a baseline. Weights stop at MAX_WEIGHT, and two of them still make a readable report."""
    checks = "[{id: a, weight: 1.0e+308, file_exists: a}, {id: b, weight: 1000.5, file_exists: b}]"
    body = f"evaluation: {{mode: evidence_only}}\njudge: {{evidence_collection: {checks}, critical_evidence: {checks}}}"
    _, problems = load(tmp_path, {"c": f"id: c\ntitle: t\n{body}\n"})
    where = f"{tmp_path}/cases/c/case.yaml: case c: bucket"
    over = "is over the largest weight, 1000; weights are shares of their bucket, so scale the bucket's weights down"
    assert problems == [
        f"{where} {bucket}: check '{check}': field weight: {weight} {over} together"
        for bucket in ("evidence_collection", "critical_evidence")
        for check, weight in (("a", "1e+308"), ("b", "1000.5"))
    ]
    heaviest = [{"id": c, "weight": MAX_WEIGHT, "file_exists": c} for c in ("a", "b")]
    case = make_case(judge={"evidence_collection": heaviest, "critical_evidence": heaviest})
    report = build_workspace_report([judge_files(tmp_path, CONTRACT | {"a": "x"}, case)])
    assert report.results[0].packet.buckets["critical_evidence"].score == 30.0  # half of 60 points
    assert WorkspaceKind().parse(json.loads(report.model_dump_json()), "base.json") == report


def test_an_unreadable_baseline_lists_its_first_problems() -> None:
    """It said only "(3 problems)"; now each of the first ten with its field path, then how many more."""
    data = build_workspace_report(bundled()).model_dump(mode="json")
    data["averageBucketScores"]["critical_evidence"] = None
    data["results"][1]["packet"]["scoring"]["raw"] = None
    for result in data["results"]:
        result["score"] = "high"
    with pytest.raises(ReportFormatError) as caught:
        WorkspaceKind().parse(data, "base.json")
    unreadable = "base.json: not a readable workspace report"
    assert caught.value.problems == [
        f"{unreadable}: averageBucketScores.critical_evidence: input should be a valid number",
        f"{unreadable}: results.0.score: input should be a valid number",
        f"{unreadable}: results.1.score: input should be a valid number",
        f"{unreadable}: results.1.packet.scoring.raw: input should be a valid number",
        *[f"{unreadable}: results.{i}.score: input should be a valid number" for i in range(2, 8)],
        "base.json: ... and 6 more problems",
    ]


def test_a_baseline_that_repeats_a_case_id_is_refused() -> None:
    """The diff keys results by caseId: with a repeat, the last entry won and a regression in the first vanished."""
    data = build_workspace_report(bundled()).model_dump(mode="json")
    data["results"][3]["caseId"] = data["results"][1]["caseId"]
    with pytest.raises(ReportFormatError) as caught:
        WorkspaceKind().parse(data, "base.json")
    assert caught.value.problems == [
        f"base.json: results[3] repeats the caseId {data['results'][1]['caseId']!r} of results[1]; a report holds "
        "each case once (this one was not written by diagbot, or was edited)"
    ]


def test_a_baseline_whose_passed_count_disagrees_with_its_verdicts_is_refused() -> None:
    data = build_workspace_report(bundled()).model_dump(mode="json")
    total, passed = data["totalCases"], data["passedCases"]
    with pytest.raises(ReportFormatError) as caught:
        WorkspaceKind().parse({**data, "passedCases": passed + 1}, "base.json")
    assert caught.value.problems == [
        f"base.json: totalCases {total} and passedCases {passed + 1} disagree with its results ({total} cases, "
        f"{passed} passed); a report's counts are its results' (this one was not written by diagbot, or was edited)"
    ]


# ---- diff ----------------------------------------------------------------------------------------------


def run_suite(tmp_path: Path, runs: dict[str, dict[str, Any] | None]) -> WorkspaceReport:
    results = []
    for case_id, files in runs.items():
        if files is not None:
            write(tmp_path / case_id, files)
        results.append(judge_case(make_case(id=case_id), tmp_path))
    return build_workspace_report(results)


def test_diff_rules_and_order(tmp_path: Path) -> None:
    good = CONTRACT | EVIDENCE
    partial = CONTRACT | EVIDENCE | {"evidences/logs.json": {"entries": ["x"]}}  # critical_evidence partial
    baseline = run_suite(
        tmp_path / "b", {"steady": good, "worse": good, "broken": partial, "gone": good, "fixed": partial}
    )
    current = run_suite(tmp_path / "c", {"new": good, "steady": good, "worse": partial, "broken": None, "fixed": good})
    items = diff_workspace(baseline, current).items
    got = [(i.type.value, i.scope.value, i.case_id, i.metric) for i in items]
    assert got == [
        ("REGRESSION", "aggregate", None, "averageScore"),
        ("REGRESSION", "case", "worse", "score"),
        ("REGRESSION", "case", "worse", "passed"),
        ("REGRESSION", "case", "worse", "bucket.critical_evidence"),
        ("REGRESSION", "case", "worse", "check.critical_evidence.pause_lines"),
        ("REGRESSION", "case", "broken", "score"),
        *[
            ("REGRESSION", "case", "broken", metric)
            for metric in [
                "bucket.mode_contract",
                "check.mode_contract.workspace_evidence_report_valid",
                "check.mode_contract.evidence_agent_artifact_present",
                "check.mode_contract.summary_artifact_present",
                "check.mode_contract.diagnosis_agent_not_invoked",
                "bucket.evidence_collection",
                "check.evidence_collection.metrics_bundle",
                "check.evidence_collection.logs_observed",
                "bucket.critical_evidence",
                "check.critical_evidence.gc_pause",
            ]
        ],
        ("IMPROVEMENT", "case", "fixed", "score"),
        ("IMPROVEMENT", "case", "fixed", "passed"),
        ("IMPROVEMENT", "case", "fixed", "bucket.critical_evidence"),
        ("IMPROVEMENT", "case", "fixed", "check.critical_evidence.pause_lines"),
        ("CHANGED", "case", "new", "case"),
        ("CHANGED", "case", "broken", "verdict"),
        ("CHANGED", "case", "gone", "case"),
    ]
    by_metric = {(i.case_id, i.metric): i for i in items}
    assert by_metric["worse", "passed"].message == "verdict pass → fail (critical_evidence_partial)"
    assert (by_metric["worse", "passed"].baseline_value, by_metric["worse", "passed"].current_value) == (
        True,
        False,
    )
    assert by_metric["worse", "score"].delta == -31.0
    assert (by_metric["new", "case"].message, by_metric["gone", "case"].message) == (
        "case added (only in the current run)",
        "case removed (only in the baseline)",
    )
    assert (by_metric["broken", "verdict"].baseline_value, by_metric["broken", "verdict"].current_value) == (
        "fail",
        "invalid",
    )
    assert by_metric["worse", "check.critical_evidence.pause_lines"].message.startswith("evidences/")


def test_diff_thresholds_and_pass_rate(tmp_path: Path) -> None:
    baseline = build_workspace_report(bundled())
    assert diff_workspace(baseline, baseline).items == []
    first_pass = next(i for i, r in enumerate(baseline.results) if r.verdict == "pass")
    results = list(baseline.results)
    results[first_pass] = results[first_pass].model_copy(update={"verdict": "fail"})
    lower = build_workspace_report(results)
    aggregate = [(i.type, i.metric) for i in diff_workspace(baseline, lower).items if i.case_id is None]
    assert aggregate == [(ItemType.REGRESSION, "passRate")]
    higher = build_workspace_report([r.model_copy(update={"score": r.score + 5.5}) for r in baseline.results])
    item = diff_workspace(baseline, higher).items[0]
    assert (item.type, item.scope, item.metric, item.delta) == (
        ItemType.IMPROVEMENT,
        Scope.AGGREGATE,
        "averageScore",
        5.5,
    )
    assert diff_workspace(baseline, higher, Thresholds(score_points=6)).items == []


def test_a_failing_look_alike_of_a_removed_passing_case_regresses(tmp_path: Path) -> None:
    good = CONTRACT | EVIDENCE
    partial = CONTRACT | EVIDENCE | {"evidences/logs.json": {"entries": ["x"]}}  # critical_evidence partial
    baseline = run_suite(tmp_path / "b", {"oom-steady": good})
    current = run_suite(tmp_path / "c", {"oom_steady": partial})
    got = [(i.type.value, i.case_id, i.metric) for i in diff_workspace(baseline, current).items]
    assert ("REGRESSION", "oom_steady", "passed") in got, got
    assert ("CHANGED", "oom-steady", "case") in got and ("CHANGED", "oom_steady", "case") in got


def test_validate_warns_of_a_quoted_text_in_a_query_and_a_bucket_of_optional_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`status != "failed"` compares with a field named failed (null), so it passed on `{"status": "failed"}`; a
    critical_evidence bucket whose checks are all optional passed whatever they found. validate said nothing."""
    from diagbot.cli import main
    from diagbot.scaffold import starter, write_starter

    write_starter(tmp_path, starter("workspace"))
    case = tmp_path / "cases/workspace/latency-evidence-002/case.yaml"
    text = case.read_text(encoding="utf-8")
    text = text.replace('expr: "length(entries) > `0`"', "expr: 'status != \"failed\"'")
    text = text.replace("{id: gc_pause_metric, contains:", "{id: gc_pause_metric, required: false, contains:")
    text = text.replace("{id: gc_log_lines, contains:", "{id: gc_log_lines, required: false, contains:")
    case.write_text(text, encoding="utf-8")
    assert main(["validate", "--config", str(tmp_path / "diagbot.yml")]) == 0
    err = capsys.readouterr().err
    where = "warning: case latency-evidence-002: judge."
    assert (
        f'{where}evidence_collection.logs_collected: "failed" is a field name in JMESPath, not a text, so this '
        "compares with the field failed (null when there is none); write the text 'failed'"
    ) in err, err
    assert (
        f"{where}critical_evidence: every check is required: false, so the bucket passes whatever they find (its "
        "score still counts them); make the ones it cannot do without required"
    ) in err, err


def test_reweighted_buckets_are_a_change_not_a_regression(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New weights, every check still passing: each bucket's points moved, and their scores with them, which the
    diff called gating regressions (a hostile pass)."""
    from diagbot.cli import main
    from diagbot.scaffold import starter, write_starter

    write_starter(tmp_path, starter("workspace"))
    monkeypatch.chdir(tmp_path)
    case = tmp_path / "cases/workspace/latency-evidence-001/case.yaml"
    weights = (
        "weights: {workflow: 0, evidence_collection: 30, critical_evidence: 60, evidence_routing: 0, diagnosis: 10}"
    )
    text = case.read_text(encoding="utf-8")
    assert "mode: evidence_only" in text
    text = text.replace("mode: evidence_only", f"mode: diagnosis\n  {weights}", 1)
    case.write_text(text + "  diagnosis:\n    - {id: summary, file_exists: evidences/evidence_summary.md}\n")
    assert main(["run", "--out", "base", "--quiet"]) == 0
    case.write_text(case.read_text().replace(weights, weights.replace("30", "20").replace("60", "50").replace(
        "diagnosis: 10", "diagnosis: 30")))  # fmt: skip
    assert main(["run", "--baseline", "base", "--out", "out", "--quiet"]) == 0
    diff = json.loads((tmp_path / "out/diff/workspace.json").read_text(encoding="utf-8"))
    assert not [i for i in diff["items"] if i["type"] == "REGRESSION"], diff["items"]
