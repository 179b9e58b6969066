"""A JSON case file read for worker processes (`load.read_cases`): the parent finds where each case's text is, and
the worker that judges a case decodes it (`load.decode`). Each case must decode to what the whole file's decoding
gives it, and a file or a case the whole decoding refuses must be refused, whatever the shape, the spacing and the
nesting: the one-process path then says the problem."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagbot.core.text import Suggestions
from diagbot.kinds.agent.load import CaseFile, CaseText, RawCase, decode, file_cases, read_cases
from tests.test_agent_checks import case_data


def whole(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """What the one-process path reads from the file: each case merged with the defaults, and the problems."""
    problems: list[str] = []
    found = list(file_cases(path, path.name, None, problems, Suggestions(50)))
    return [item.data for item in found], problems


def by_case(path: Path) -> tuple[list[dict[str, Any]], bool] | None:
    """What the worker path reads from it: the cases as the workers decode them, and whether they were decoded
    from their own text (not read whole); None when a file or a case has a problem."""
    units = read_cases(path, path.name)
    if units is None:
        return None
    problems: list[str] = []
    decoded = [decode(unit, problems) for unit in units if not isinstance(unit, CaseFile)]
    if problems:
        return None
    return [item.data for item in decoded if item is not None], all(isinstance(u, CaseText) for u in units)


def agree(path: Path) -> bool:
    """Both readings agree; True when the file was read case by case."""
    cases, problems = whole(path)
    found = by_case(path)
    if problems:
        assert found is None, (problems, found)
        return False
    assert found is not None
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # to compare cases nested near the limit
    try:
        assert found[0] == cases
    finally:
        sys.setrecursionlimit(before)
    return found[1]


def test_a_list_and_an_object_of_cases_are_read_case_by_case(tmp_path: Path) -> None:
    cases = [case_data(case_id=f"c{i}", metadata={"owner": f"o{i}"}) for i in range(3)]
    listed = tmp_path / "list.json"
    listed.write_text(json.dumps(cases, indent=1), encoding="utf-8")
    assert agree(listed)
    shared = {"risk_level": "P3", "metadata": {"tags": ["shared"], "owner": "x"}}
    for order in (["defaults", "cases"], ["cases", "defaults"]):
        document = {key: {"defaults": shared, "cases": cases}[key] for key in order}
        target = tmp_path / f"{order[0]}.json"
        target.write_text(json.dumps(document, separators=(",", ":")), encoding="utf-8")
        assert agree(target)
        (read,) = [item for item in [by_case(target)] if item is not None]
        assert read[0][1]["metadata"] == {**cases[1]["metadata"], "tags": ["shared"]}  # merged one level deep


@pytest.mark.parametrize(
    "text",
    [
        "[]", "{}", '{"cases": []}', "[1, 2]", '{"cases": [{}], "cases": [{}]}', '{"cases": [{}], "other": 1}',
        '{"defaults": 5, "cases": [{}]}', '{"defaults": {"case_id": "x"}, "cases": [{}]}', '[{"a": 1}] x',
        '[{"a": 1},]', '[{"a": 1} {"b": 2}]', '[{"a": 1, "a": 2}]', '[{"n": NaN}]', '[{"n": ' + "9" * 60 + "}]",
        '{"defaults": {"owner": 1, "owner": 2}, "cases": [{}]}', '[{"s": "\\ud800"}]', '{"cases": [{}]', "[{}",
        '\ufeff[{"case_id": "bom"}]', ' \n\t[ {"case_id" : "spaced"} , {"case_id":"b"} ] \r\n', "",
    ],
)  # fmt: skip
def test_the_two_readings_agree_on_files_that_are_odd_or_wrong(tmp_path: Path, text: str) -> None:
    path = tmp_path / "cases.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    agree(path)


def test_a_case_nested_near_the_limit_is_refused_by_both_or_neither(tmp_path: Path) -> None:
    """The whole file's decoding goes one level deeper for a list of cases, two for `{cases}`: a case is decoded
    with that much less room, so that it is refused at the same nesting whichever way the suite is read."""
    verdicts = set()
    for shape in ("list", "object"):
        for levels in range(960, 990):
            case = json.dumps(case_data())[:-1] + ', "x": ' + "[" * levels + "]" * levels + "}"
            text = f"[{case}]" if shape == "list" else f'{{"cases": [{case}]}}'
            path = tmp_path / f"{shape}{levels}.json"
            path.write_text(text, encoding="utf-8")
            verdicts.add((shape, agree(path)))
    assert verdicts == {("list", True), ("list", False), ("object", True), ("object", False)}  # both sides met


@pytest.mark.parametrize("frames", [0, 80])
def test_where_the_reading_starts_does_not_move_the_limit(tmp_path: Path, frames: int) -> None:
    def deeper(count: int, path: Path) -> bool:
        return agree(path) if count == 0 else deeper(count - 1, path)

    outcomes = []
    for levels in (950, 1100):
        path = tmp_path / f"c{levels}.json"
        path.write_text("[" + json.dumps(case_data())[:-1] + ', "x": ' + "[" * levels + "]" * levels + "}]", "utf-8")
        outcomes.append(deeper(frames, path))
    assert sys.getrecursionlimit() == 1000 and outcomes == [True, False]


keys = st.sampled_from(["case_id", "title", "metadata", "owner", "tags", "input", "x", "é", "a:b", '"q"'])
leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**25), 10**25), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6), st.sampled_from(["\\", "\u2028", "\x00", "a\nb", "\ud83d\ude00"]),
)  # fmt: skip
json_values = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3), max_leaves=12
)
spacing = st.sampled_from([None, 0, 2, "\t"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    cases=st.lists(st.dictionaries(keys, json_values, max_size=4) | json_values, min_size=1, max_size=4),
    defaults=st.none() | st.dictionaries(keys, json_values, max_size=3),
    indent=spacing,
    ascii_only=st.booleans(),
    defaults_first=st.booleans(),
)
def test_any_json_case_file_is_read_alike_case_by_case(
    tmp_path: Path, cases: list[Any], defaults: dict[str, Any] | None, indent: Any, ascii_only: bool,
    defaults_first: bool,
) -> None:  # fmt: skip
    document: Any = cases
    if defaults is not None:
        document = {"defaults": defaults, "cases": cases} if defaults_first else {"cases": cases, "defaults": defaults}
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(document, indent=indent, ensure_ascii=ascii_only), "utf-8", "surrogatepass")
    agree(path)


def test_a_yaml_file_is_still_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(json.dumps([case_data()]), encoding="utf-8")
    units = read_cases(path, path.name)
    assert units is not None and [type(unit) for unit in units] == [RawCase]
