"""Broken and hostile fixtures fail their own case with a message that says where; nothing crashes the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from diagbot.core.errors import ReportFormatError
from diagbot.kinds.trace.cases import parse_case_file
from diagbot.kinds.trace.evaluate import evaluate_suite
from diagbot.kinds.trace.fixture import FixtureProblem, load_trace, parse_trace
from diagbot.kinds.trace.report import parse_report
from tests.conftest import case_dict, trace_dict, write_json


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"[1, 2]", "f.json: expected a JSON object at the top level"),
        (b'{"toolInvocations": "oops"}', "f.json: $.toolInvocations should be an array, found a string"),
        (
            b'{"session": {"selfEvaluation": {"verifier_evaluation": {"claim_checks": {}}}}}',
            "f.json: $.session.selfEvaluation.verifier_evaluation.claim_checks should be an array, found an object",
        ),
        (b'{"session": {"answer": 42}}', "f.json: $.session.answer should be a string, found a number"),
        (
            b'{"toolInvocations": [{"success": "yes"}]}',
            "f.json: $.toolInvocations[0].success should be a boolean, found a string",
        ),
        (b'{"session": {\n "answer": "x",\n}', "f.json: not valid JSON (trailing comma at line 3 column 1)"),
        (b"\xff\xfe{}", "f.json: not UTF-8 (bad byte at offset 0); re-save as UTF-8"),
        (b"[" * 50_000, "f.json: not valid JSON (recursion limit exceeded at line 1 column 202)"),
        (b"", "f.json is empty (no JSON in it); record the trace again"),
        (b" \n\t\n", "f.json is empty (no JSON in it); record the trace again"),
        (
            b'{"session": {"answer": "rollback"},\n "session": {"answer": "x"}}',
            "f.json: not valid JSON (duplicate key 'session' in the object that starts here; keep one, line 1 "
            "column 1)",
        ),
        (  # kept as a 51-digit integer, which no report may hold: the next run refused the report as its baseline
            b'{"session": {"answer": "x", "totalDurationMs": 1e51}}',
            "f.json: $.session.totalDurationMs should be less than or equal to 1000000000000, found a number",
        ),
        (  # a NaN (or a 60-digit number) before it stopped the repeated key from being looked for
            b'{"meta": {"score": NaN}, "session": {"answer": "restart the database", "answer": "disk is full"}}',
            "f.json: not valid JSON (duplicate key 'answer'; keep one)",
        ),
    ],
    ids=[
        "array",
        "wrong-list",
        "object-for-list",
        "number-answer",
        "string-bool",
        "syntax",
        "utf8",
        "deep",
        "empty",
        "whitespace",
        "repeated-key",  # pydantic's parser kept the last one, hiding the first from every check
        "huge-duration",
        "repeated-key-after-nan",
    ],
)
def test_parse_problems(data: bytes, message: str) -> None:
    assert parse_trace(data, "f.json") == FixtureProblem(code="fixture_invalid", message=message)


def test_a_fixture_with_nan_is_still_read() -> None:
    """The repeated-key check reads the fixture a second time, with a reader that refuses NaN: that must not
    refuse a fixture the fixture's own parser reads."""
    trace = parse_trace(b'{"session": {"answer": "x", "score": NaN}}', "f.json")
    assert not isinstance(trace, FixtureProblem)


def test_unknown_fields_are_ignored() -> None:
    trace = parse_trace(json.dumps(trace_dict(extra={"big": list(range(100))})).encode(), "f.json")
    assert not isinstance(trace, FixtureProblem)


def test_missing_fixture(tmp_path: Path) -> None:
    problem = load_trace(tmp_path, "nope.json")
    assert isinstance(problem, FixtureProblem)
    assert problem.code == "fixture_missing"
    assert (
        problem.message == "fixture 'nope.json' not found in the fixtures folder; record the trace or fix traceFixture"
    )
    long = load_trace(tmp_path, "x" * 5000 + ".json")  # a case may name any length: echoed cut (a hostile pass)
    assert isinstance(long, FixtureProblem) and len(long.message) < 400, len(long.message)


def test_size_limit(tmp_path: Path) -> None:
    write_json(tmp_path / "big.json", trace_dict())
    size = (tmp_path / "big.json").stat().st_size
    problem = load_trace(tmp_path, "big.json", max_bytes=100)
    assert problem == FixtureProblem(
        code="fixture_invalid",
        message=f"fixture 'big.json' is {size:,} bytes, over the 100-byte limit (raise max-fixture-bytes)",
    )


def test_symlink_out_of_fixtures_is_refused(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    write_json(tmp_path / "outside.json", trace_dict())
    (fixtures / "link.json").symlink_to(tmp_path / "outside.json")
    assert load_trace(fixtures, "link.json") == FixtureProblem(
        code="fixture_invalid", message="fixture 'link.json' resolves outside the fixtures folder"
    )


def test_directory_is_not_a_fixture(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    problem = load_trace(tmp_path, "dir.json")
    assert isinstance(problem, FixtureProblem)
    assert problem.message == "fixture 'dir.json' is not a regular file (it is a folder)"


def test_one_bad_fixture_fails_only_its_case(tmp_path: Path) -> None:
    write_json(tmp_path / "good.json", trace_dict())
    (tmp_path / "bad.json").write_bytes(b"{not json")
    suite = parse_case_file(
        json.dumps(
            [
                case_dict(id="good", traceFixture="good.json", requiredEvidenceTools=["query_logs"]),
                case_dict(id="bad", traceFixture="bad.json", requiredEvidenceTools=["query_logs"]),
                case_dict(id="gone", traceFixture="gone.json"),
            ]
        ),
        "c.json",
    )
    report = evaluate_suite(suite, tmp_path)
    assert [(r.case_id, r.passed) for r in report.results] == [("good", True), ("bad", False), ("gone", False)]
    bad = report.results[1]
    assert bad.failed_checks == [
        "fixture_invalid: fixture 'bad.json': not valid JSON (key must be a string at line 1 column 2)"
    ]
    assert bad.evidence_coverage == {"query_logs": False}
    assert report.results[2].failed_checks[0].startswith("fixture_missing: fixture 'gone.json' not found")


def test_a_fixture_may_start_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Some editors start UTF-8 with one; the JSON parser refused it ("expected value at line 1 column 1")."""
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(trace_dict()).encode())
    (tmp_path / "only.json").write_bytes(b"\xef\xbb\xbf")
    suite = parse_case_file(
        json.dumps([case_dict(id="bom", traceFixture="bom.json"), case_dict(id="only", traceFixture="only.json")]),
        "c.json",
    )
    bom, only = evaluate_suite(suite, tmp_path).results
    assert (bom.passed, bom.failed_checks) == (True, [])
    assert only.failed_checks == [
        "fixture_invalid: fixture 'only.json' is empty (no JSON in it); record the trace again"
    ]


def test_a_baseline_that_repeats_a_case_id_is_refused(tmp_path: Path) -> None:
    """The diff keys results by caseId: with a repeat, the last entry won and a regression in the first vanished."""
    write_json(tmp_path / "payment-timeout.json", trace_dict())
    suite = parse_case_file(json.dumps([case_dict(id="a"), case_dict(id="b"), case_dict(id="c")]), "c.json")
    data = evaluate_suite(suite, tmp_path).model_dump(mode="json", by_alias=True)
    assert parse_report(data, "base.json").total_cases == 3
    data["results"][2]["caseId"] = "a"
    with pytest.raises(ReportFormatError) as caught:
        parse_report(data, "base.json")
    assert caught.value.problems == [
        "base.json: results[2] repeats the caseId 'a' of results[0]; a report holds each case once (this one was not "
        "written by diagbot, or was edited)"
    ]


def test_a_baseline_whose_counts_disagree_with_its_results_is_refused(tmp_path: Path) -> None:
    """`totalCases: 999, passedCases: 1` over three results was read as stored: a 0.1% baseline rate, so any rate
    today was an improvement."""
    write_json(tmp_path / "payment-timeout.json", trace_dict())
    suite = parse_case_file(json.dumps([case_dict(id="a"), case_dict(id="b"), case_dict(id="c")]), "c.json")
    data = evaluate_suite(suite, tmp_path).model_dump(mode="json", by_alias=True)
    passed = data["passedCases"]
    for field, value in (("totalCases", 999), ("passedCases", passed - 1)):
        with pytest.raises(ReportFormatError) as caught:
            parse_report({**data, field: value}, "base.json")
        total, said = (999, passed) if field == "totalCases" else (3, passed - 1)
        assert caught.value.problems == [
            f"base.json: totalCases {total} and passedCases {said} disagree with its results (3 cases, {passed} "
            "passed); a report's counts are its results' (this one was not written by diagbot, or was edited)"
        ]


def test_an_unreadable_baseline_names_its_fields_on_one_line() -> None:
    """A forged report names its own keys: one holding a newline could start a line of its own in the log."""
    data = {"schemaVersion": 1, "totalCases": 1, "passedCases": 1, "passRate": 1.0, "results": [{}, {}]}
    data["results"][0] = {"caseId": "a", "passed": True, "evidenceCoverage": {"t\n::error::forged": [1]}}
    with pytest.raises(ReportFormatError) as caught:
        parse_report(data, "base.json")
    assert caught.value.problems == [
        "base.json: not a readable trace report: results.0.evidenceCoverage.t\\n::error::forged: input should be a "
        "valid boolean",
        "base.json: not a readable trace report: results.1.caseId: field required",
        "base.json: not a readable trace report: results.1.passed: field required",
    ]


def test_a_baseline_result_whose_verdict_disagrees_with_its_checks_is_refused(tmp_path: Path) -> None:
    """A stored `passed: false` with no failed check (or `passed: true` beside one) made today's real failure
    "failed → failed": no regression, exit 0. diagbot writes neither, so such a baseline was edited."""
    write_json(tmp_path / "payment-timeout.json", trace_dict())
    suite = parse_case_file(json.dumps([case_dict(id="a")]), "c.json")
    data = evaluate_suite(suite, tmp_path).model_dump(mode="json", by_alias=True)
    assert data["results"][0]["passed"] is True
    data["results"][0]["passed"], data["passedCases"] = False, 0
    with pytest.raises(ReportFormatError) as caught:
        parse_report(data, "base.json")
    assert caught.value.problems == [
        "base.json: results[0] ('a') fails with no failed check; diagbot fails a case exactly when one of its checks "
        "failed (this report was not written by diagbot, or was edited)"
    ]
    java = {key: value for key, value in data.items() if key not in ("schemaVersion", "kind")}
    assert parse_report(java, "java.json").results[0].passed is False  # the Java evaluator's reports are read as before
