"""A bounded fuzz campaign over every loader of untrusted input: case files, trace fixtures, diagbot.yml and
reports. Whatever the bytes, a loader returns a value or raises our own error with a message: never another
exception, never a hang. Hypothesis keeps it to a fixed number of examples, so CI time stays bounded."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from diagbot.core import values as value_readers
from diagbot.core.errors import DiagbotError, ReportFormatError
from diagbot.core.values import loads_written, may_repeat
from diagbot.io.config import parse_config
from diagbot.kinds.registry import parse_any_report
from diagbot.kinds.trace.cases import parse_case_file
from diagbot.kinds.trace.fixture import FixtureProblem, Trace, parse_trace
from tests.conftest import ROOT, case_dict, trace_dict

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# JSON-ish values with the tricky parts: lone surrogates, NUL, huge and odd numbers, deep nesting.
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(alphabet=st.characters(codec=None), max_size=20),
    st.sampled_from(["\ud800", "\x00", "../../etc/passwd", "/proc/self/environ", "﷽" * 50]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


def mutate(base: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid documents with keys replaced, dropped or added: closer to the loaders' real paths than noise."""
    return st.builds(
        lambda drop, extra, swap: {**{k: v for k, v in base.items() if k not in drop}, **extra, **swap},
        st.sets(st.sampled_from(sorted(base))),
        st.dictionaries(st.text(max_size=12), values, max_size=3),
        st.dictionaries(st.sampled_from(sorted(base)), values, max_size=3),
    )


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, default=str)  # ensure_ascii keeps lone surrogates as escapes


@FUZZ
@given(st.one_of(st.lists(mutate(case_dict()), max_size=3).map(dumps), values.map(dumps), st.text(max_size=200)))
def test_case_files(text: str) -> None:
    try:
        parse_case_file(text, "cases.json")
    except DiagbotError as exc:
        assert exc.problems and all(isinstance(p, str) and p.startswith("cases.json") for p in exc.problems)


@FUZZ
@given(st.one_of(mutate(trace_dict()).map(dumps), values.map(dumps), st.binary(max_size=200).map(bytes.hex)))
def test_trace_fixtures(text: str) -> None:
    result = parse_trace(text.encode("utf-8", "surrogatepass"), "fixture 'x.json'")
    assert isinstance(result, Trace | FixtureProblem)


CONFIG = {"suites": [{"name": "s", "cases": "c.json", "fixtures": "f"}], "thresholds": {"duration-pct": 5}}


@FUZZ
@given(st.one_of(mutate(CONFIG).map(dumps), values.map(dumps), st.text(max_size=200)))
def test_configs(text: str) -> None:
    try:
        parse_config(text, "diagbot.yml", Path("."))
    except DiagbotError as exc:
        assert exc.problems and all(p.startswith("diagbot.yml") for p in exc.problems)


REPORT = {"schemaVersion": 1, "kind": "trace", "totalCases": 1, "passedCases": 1, "passRate": 1.0,
          "results": [{"caseId": "a", "passed": True}]}  # fmt: skip


@FUZZ
@given(st.one_of(mutate(REPORT).map(dumps), values.map(dumps), st.text(max_size=200)))
def test_reports(text: str) -> None:
    try:
        parse_any_report(text, "report.json")
    except DiagbotError as exc:
        assert exc.problems and all(p.startswith("report.json") for p in exc.problems)


_KEY_TEXT = st.text(alphabet=st.sampled_from(["a", ":", '"', "\\", "é", " "]), max_size=4)
_PIECES = st.recursive(
    st.one_of(st.integers(-5, 5), _KEY_TEXT),
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(_KEY_TEXT, inner), max_size=3),
    max_leaves=12,
)


def _written(piece: Any, escape_colons: bool) -> str:
    """JSON text for `piece`, a list of (key, value) pairs standing for an object that may repeat a key."""
    if isinstance(piece, str):
        text = json.dumps(piece, ensure_ascii=False)
        return text.replace(":", "\\u003a") if escape_colons else text
    if isinstance(piece, list) and piece and all(isinstance(p, tuple) for p in piece):
        return "{" + ", ".join(f"{_written(k, escape_colons)}: {_written(v, escape_colons)}" for k, v in piece) + "}"
    if isinstance(piece, list):
        return "[" + ", ".join(_written(p, escape_colons) for p in piece) + "]"
    return json.dumps(piece)


@FUZZ
@given(_PIECES, st.booleans())
def test_the_cheap_repeat_test_never_misses_a_repeated_key(piece: Any, escape_colons: bool) -> None:
    """`may_repeat` lets a document through without the slow reading only when it repeats no key: whatever the
    colons in keys and texts, escaped or not."""
    source = _written(piece, escape_colons)
    try:
        loads_written(source)
    except json.JSONDecodeError:
        assert may_repeat(source, json.loads(source)) and may_repeat(source.encode(), json.loads(source))


@FUZZ
@given(st.recursive(
    st.one_of(st.integers(min_value=-(10**50) + 1, max_value=10**50 - 1), st.floats(allow_nan=False,
              allow_infinity=False), st.text(alphabet="0123456789e+:.", max_size=30)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
))  # fmt: skip
def test_every_reader_of_json_gives_each_number_exactly(value: Any) -> None:
    """orjson reads an integer past 64 bits as a float; the readers built on it give the exact integer, as
    `json` does, whatever else the document holds (texts of digits, exponents and colons included)."""
    for source in (json.dumps(value), json.dumps(value, indent=1)):
        expected = json.loads(source)
        for read in (value_readers.loads, value_readers.loads_unique):
            for given_as in (source, source.encode()):
                found = read(given_as)
                assert found == expected and json.dumps(found) == json.dumps(expected)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("score", -5, "results.0.score: input should be greater than or equal to 0"),
        ("score", 150, "results.0.score: input should be less than or equal to 100"),
        ("bucket", 1e308, "results[0].packet.diagnosis.score is 1e+308, larger than any number diagbot writes"),
    ],
)
def test_a_workspace_baseline_of_scores_no_run_gives_is_refused(
    tmp_path: Path, field: str, value: float, said: str
) -> None:
    """Two scores of 1e308 averaged to infinity ("failed unexpectedly"); a score of -5 or 150 was compared."""
    report = json.loads((ROOT / "examples" / "baseline" / "reports" / "workspace.json").read_text())
    if field == "score":
        report["results"][0]["score"] = value
    else:
        report["results"][0]["packet"]["diagnosis"]["score"] = value
    with pytest.raises(ReportFormatError, match=re.escape(said)):
        parse_any_report(json.dumps(report), "report.json")


@settings(max_examples=500, deadline=None)
@given(
    st.integers(0, 10**20), st.none() | st.integers(0, 999), st.none() | st.integers(-30, 30),
    st.sampled_from(["e", "E", "e+", "E+"]), st.integers(0, 2), st.booleans(),
)  # fmt: skip
@example(99, None, 14, "e", 0, False)  # 9.9e15, written without a fraction: it had passed the prefilter
@example(1_000_000_000_000_001, None, None, "e", 0, False)  # 16 digits, no exponent
@example(1, None, 16, "e+", 1, False)  # `1e+016`: a zero before the exponent
@example(1_000_000_000_000_000, None, None, "e", 0, False)  # 10^15 itself holds
def test_a_number_larger_than_a_report_holds_is_found_however_it_is_written(
    whole: int, fraction: int | None, exponent: int | None, mark: str, zeros: int, negative: bool
) -> None:
    """The text prefilter let `99e14` (9.9e15) through: a number is found exactly when its size passes 10^15,
    with or without a fraction, an exponent, or zeros before the exponent."""
    written = f"{'-' if negative else ''}{whole}" + ("" if fraction is None else f".{fraction}")
    if exponent is not None:
        sign = mark if exponent >= 0 else mark[0] + "-"
        written += f"{sign}{'0' * zeros}{abs(exponent)}"
    text = '{"results": [{"caseId": "Case1", "durationMs": ' + written + "}]}"
    number = value_readers.loads(text)["results"][0]["durationMs"]
    found = value_readers.oversized_number(value_readers.loads(text), text)
    assert (found is not None) == (abs(number) > value_readers.MAX_REPORT_NUMBER), (written, number)
