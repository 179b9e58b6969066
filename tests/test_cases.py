"""Case-file validation: each bad input gives the exact message a user sees, all problems in one run."""

from __future__ import annotations

import json

import pytest

from diagbot.core.errors import CaseFileError
from diagbot.kinds.trace.cases import parse_case_file
from tests.conftest import case_dict


def problems(data: object) -> list[str]:
    return problems_of(json.dumps(data, indent=2), "cases.json")


def problems_of(text: str, path: str = "c.json") -> list[str]:
    """What parse_case_file refuses `text` for."""
    with pytest.raises(CaseFileError) as info:
        parse_case_file(text, path)
    return info.value.problems


def test_array_and_object_forms_are_equivalent() -> None:
    as_array = parse_case_file(json.dumps([case_dict()]), "c.json")
    as_object = parse_case_file(json.dumps({"cases": [case_dict()]}), "c.json")
    assert as_array.cases == as_object.cases


def test_defaults_fill_missing_fields_and_cases_override_them() -> None:
    data = {
        "defaults": {"degradationKeywords": ["manual check"], "allowedVerdicts": ["PASS"]},
        "cases": [case_dict(id="a", degradationKeywords=None) | {}, case_dict(id="b", allowedVerdicts=["REJECT"])],
    }
    del data["cases"][0]["degradationKeywords"]
    suite = parse_case_file(json.dumps(data), "c.json")
    assert suite.cases[0].degradation_keywords == ["manual check"]
    assert suite.cases[1].allowed_verdicts == ["REJECT"]


def test_min_keyword_matches_defaults_to_all() -> None:
    suite = parse_case_file(json.dumps([case_dict(expectedRootCauseKeywords=["a", "b", "c"])]), "c.json")
    assert suite.cases[0].required_keyword_matches == 3


def test_typo_names_file_case_field_and_suggestion() -> None:
    case = case_dict()
    case["requiredEvidenceTool"] = case.pop("requiredEvidenceTools")
    assert problems([case]) == [
        "cases.json: case 'payment-timeout' (#1): unknown field 'requiredEvidenceTool' "
        "(did you mean requiredEvidenceTools?)"
    ]


def test_all_problems_reported_in_one_run() -> None:
    no_id = case_dict()
    del no_id["id"]
    no_fixture = case_dict(id="b")
    del no_fixture["traceFixture"]
    assert problems(
        [no_id, no_fixture, case_dict(id="c", minKeywordMatches="2"), case_dict(id="c"), case_dict(id="c")]
    ) == [
        "cases.json: case #1: missing required field 'id'",
        "cases.json: case 'b' (#2): missing required field 'traceFixture'",
        "cases.json: case 'c' (#3): field 'minKeywordMatches': input should be a valid integer (found \"2\")",
        "cases.json: case 'c' (#4): duplicate id 'c' (first used by case #3)",
        "cases.json: case 'c' (#5): duplicate id 'c' (first used by case #3)",
    ]


def test_a_bad_default_is_reported_once_not_per_case() -> None:
    data = {"defaults": {"allowedVerdicts": "PASS"}, "cases": [case_dict(id="a"), case_dict(id="b")]}
    for case in data["cases"]:
        del case["allowedVerdicts"]
    assert problems(data) == [
        "cases.json: defaults: field 'allowedVerdicts': input should be a valid list (found \"PASS\")"
    ]


def test_deeply_nested_case_file_is_an_error_not_a_crash() -> None:
    with pytest.raises(CaseFileError, match="nested too deeply"):
        parse_case_file("[" * 100_000, "cases.json")


@pytest.mark.parametrize("fixture", ["../secrets.json", "/etc/passwd", "a/../../b.json", "..", "C:\\x.json"])
def test_trace_fixture_may_not_escape(fixture: str) -> None:
    assert problems([case_dict(traceFixture=fixture)]) == [
        f"cases.json: case 'payment-timeout' (#1): traceFixture '{fixture}' leaves the fixtures folder: "
        "give a path relative to it, without '..'"
    ]


def test_nested_fixture_path_inside_folder_is_fine() -> None:
    assert parse_case_file(json.dumps([case_dict(traceFixture="sub/../x.json")]), "c.json").cases


def test_defaults_are_checked_too() -> None:
    assert problems({"defaults": {"id": "x", "alowedVerdicts": []}, "cases": []}) == [
        "cases.json: defaults: 'id' cannot have a default; give each case its own id",
        "cases.json: defaults: unknown field 'alowedVerdicts' (did you mean allowedVerdicts?)",
    ]


def test_not_json_points_at_line_and_column() -> None:
    assert problems_of('[\n  {"id": "a",}\n]', "cases.json") == [
        "cases.json:2:14: not valid JSON (Expecting property name enclosed in double quotes); "
        "fix the syntax and run again"
    ]


def test_wrong_shapes() -> None:
    assert problems({"case": []}) == [
        "cases.json: unknown top-level key(s) ['case']; expected 'defaults' and 'cases'",
        "cases.json: expected an array of cases, or an object with a 'cases' array",
    ]
    assert problems(["x"]) == ["cases.json: case #1: expected an object, found str"]


def test_strict_types_no_coercion() -> None:
    assert problems([case_dict(requireV2AuditClosure="yes")]) == [
        "cases.json: case 'payment-timeout' (#1): field 'requireV2AuditClosure': input should be a valid boolean "
        '(found "yes")'
    ]


def test_case_lines_point_at_each_case() -> None:
    text = json.dumps({"cases": [case_dict(id="a"), case_dict(id="b")]}, indent=2)
    suite = parse_case_file(text, "c.json")
    lines = text.splitlines()
    assert '"id": "a"' in lines[suite.lines["a"] - 1]
    assert '"id": "b"' in lines[suite.lines["b"] - 1]


def test_keywords_that_repeat_once_normalised_are_an_error() -> None:
    """The hostile review's case: three spellings of one keyword made minKeywordMatches 3 reachable without
    'timeout'. Each list reports its first problem and how many more it has."""
    keywords = ["connection pool", "Connection Pool", "ｃｏｎｎｅｃｔｉｏｎ ｐｏｏｌ", "timeout"]
    assert problems([case_dict(expectedRootCauseKeywords=keywords, minKeywordMatches=3)]) == [
        "cases.json: case 'payment-timeout' (#1): field 'expectedRootCauseKeywords': item [1] 'Connection Pool' "
        "repeats item [0] 'connection pool' once normalised (NFKC, case folded, digits and hyphens as ASCII); list "
        "each phrase once (and 1 more problem in this list)"
    ]


@pytest.mark.parametrize(
    ("field", "items", "message"),
    [
        ("forbiddenAnswerKeywords", [""], "item [0] is empty or blank, so it matches nothing; remove it"),
        (
            "forbiddenConfirmedClaimKeywords",
            ["x", " \t"],
            "item [1] is empty or blank, so it matches nothing; remove it",
        ),
        ("degradationKeywords", ["\u3000"], "item [0] is empty or blank, so it matches nothing; remove it"),
        (
            "expectedRootCauseKeywords",
            ["pool", "", "", "POOL"],
            "item [1] is empty or blank, so it matches nothing; remove it (and 2 more problems in this list)",
        ),
        ("requiredEvidenceTools", [""], "item [0] is empty or blank, so it names nothing; remove it"),
        ("allowedVerdicts", ["PASS", "PASS"], "item [1] 'PASS' repeats item [0] 'PASS'; list each name once"),
    ],
    ids=["empty", "blank", "ideographic-space", "several", "empty-tool", "repeated-verdict"],
)
def test_items_that_say_nothing_are_errors(field: str, items: list[str], message: str) -> None:
    assert problems([case_dict(**{field: items})]) == [
        f"cases.json: case 'payment-timeout' (#1): field '{field}': {message}"
    ]


def test_names_are_compared_as_written() -> None:
    """Tool names are exact: `Query_Metrics` is another tool than `query_metrics`, not a repeat."""
    suite = parse_case_file(json.dumps([case_dict(requiredEvidenceTools=["query_metrics", "Query_Metrics"])]), "c.json")
    assert suite.cases[0].required_evidence_tools == ["query_metrics", "Query_Metrics"]


def test_min_keyword_matches_over_the_keywords_is_an_error() -> None:
    data = {
        "defaults": {"minKeywordMatches": 2},
        "cases": [case_dict(id="a", expectedRootCauseKeywords=["timeout"]), case_dict(id="b")],
    }
    assert problems(data) == [
        "cases.json: case 'a' (#1): field 'minKeywordMatches': 2 is more than the 1 expectedRootCauseKeywords, so "
        "the case can never pass; lower it or add keywords"
    ]


def test_a_default_list_is_checked_once_not_per_case() -> None:
    data = {
        "defaults": {"expectedRootCauseKeywords": ["pool", "Pool"], "minKeywordMatches": 3},
        "cases": [case_dict(id=f"c{i}") for i in range(3)],
    }
    for case in data["cases"]:
        del case["expectedRootCauseKeywords"]
    assert problems(data) == [
        "cases.json: defaults: field 'minKeywordMatches': 3 is more than the 2 expectedRootCauseKeywords, so the "
        "case can never pass; lower it or add keywords",
        "cases.json: defaults: field 'expectedRootCauseKeywords': item [1] 'Pool' repeats item [0] 'pool' once "
        "normalised (NFKC, case folded, digits and hyphens as ASCII); list each phrase once",
    ]


def test_a_case_file_may_start_with_a_byte_order_mark() -> None:
    text = "\ufeff" + json.dumps([case_dict(id="a"), case_dict(id="b")], indent=2)
    suite = parse_case_file(text, "c.json")
    assert [case.id for case in suite.cases] == ["a", "b"]
    assert text.splitlines()[suite.lines["b"] - 1].strip() == '"id": "b",'
    assert problems_of("\ufeff") == ["c.json: the case file is empty; write a JSON array of cases (see the README)"]
