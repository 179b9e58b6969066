"""Hostile trace fixtures (issue 11, class 2): a file's cost is bounded by its size whatever its shape.

Each fixture is small on disk but expensive to naive code: millions of empty objects, a list past the item
cap, an answer NFKC blows up 18 times, deep nesting. Each must fail its own case with the exact message, in
bounded memory (peak RSS of this process while the suite is evaluated, the kernel's high-water mark reset first)
and under a hang guard, while the other case of the same suite still passes.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from diagbot.core import values
from diagbot.core.text import MAX_FOLDED_CHARS, MAX_TEXT_CHARS, Folded, fold, normalize
from diagbot.kinds.trace.cases import parse_case_file
from diagbot.kinds.trace.evaluate import evaluate_suite
from diagbot.kinds.trace.fixture import (
    MAX_JSON_VALUES,
    MAX_LABEL_CHARS,
    MAX_LIST_ITEMS,
    Trace,
    count_values,
    parse_trace,
)
from diagbot.kinds.trace.report import CaseResult
from tests.conftest import VERIFIER, case_dict, hang_guard, trace_dict, write_json

MIB = 1024 * 1024
CUT = (
    f"the answer was cut: diagbot searches only its first {MAX_TEXT_CHARS:,} characters, "
    f"{MAX_FOLDED_CHARS:,} once normalised"
)


def _status(key: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(f"{key}:"))


def _reset_peak() -> bool:
    """Hand freed heap back (reusing it would hide growth from the high-water mark), then reset VmHWM to the
    current RSS. False where that cannot be done (not Linux): memory is then not checked."""
    with contextlib.suppress(AttributeError, OSError):  # not glibc: the measure is a lower bound
        ctypes.CDLL(None).malloc_trim(0)
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _evaluate(tmp_path: Path, name: str, data: bytes, **case: Any) -> tuple[CaseResult, int]:
    """Evaluate a suite of the hostile fixture plus a good one, under a hang guard: (the hostile case's result,
    the peak RSS growth in bytes). Asserts that the good case, evaluated after the hostile one, still passes."""
    (tmp_path / name).write_bytes(data)
    write_json(tmp_path / "good.json", trace_dict())
    cases = [case_dict(id="hostile", traceFixture=name, **case), case_dict(id="good", traceFixture="good.json")]
    suite = parse_case_file(json.dumps(cases), "cases.json")
    gc.collect()
    measured = _reset_peak()
    before = _status("VmRSS") if measured else 0
    with hang_guard():
        report = evaluate_suite(suite, tmp_path)
    peak = _status("VmHWM") - before if measured else 0
    hostile, good = report.results
    assert (good.case_id, good.passed, good.failed_checks) == ("good", True, [])
    return hostile, peak


def _bounded(peak: int, size: int) -> None:
    assert peak < 3 * size + 200 * MIB, f"peak RSS grew by {peak / MIB:.0f} MiB for a {size / MIB:.0f} MiB file"


def test_millions_of_empty_tool_invocations(tmp_path: Path) -> None:
    """21 million `{}` took 10 GB: the values are counted in the bytes, and the file is refused unparsed."""
    n = 3_000_000
    data = b'{"session":{"answer":"x"},"toolInvocations":[' + b"{}," * n + b"{}]}"
    result, peak = _evaluate(tmp_path, "empties.json", data)
    assert not result.passed
    assert result.failed_checks == [
        f"fixture_invalid: fixture 'empties.json': holds {n + 5:,} JSON values (objects, arrays, strings, "
        f"numbers...); diagbot reads at most {MAX_JSON_VALUES:,} per fixture"
    ]
    assert result.tool_call_count is None  # no capped count reaches the averages and the diff
    _bounded(peak, len(data))


def test_tool_invocations_over_the_item_cap(tmp_path: Path) -> None:
    """Under the value limit, a list the checks read still stops at MAX_LIST_ITEMS, and says so."""
    data = b'{"session":{"answer":"x"},"toolInvocations":[' + b"{}," * 300_000 + b"{}]}"
    result, peak = _evaluate(tmp_path, "many.json", data)
    assert result.failed_checks == [
        "fixture_invalid: fixture 'many.json': $.toolInvocations has more than 10,000 items; "
        "diagbot reads at most 10,000"
    ]
    _bounded(peak, len(data))


def test_a_wrong_type_holding_many_values(tmp_path: Path) -> None:
    """A type error on a big value copies it into the error: under the value limit that stays small."""
    data = b'{"session":{"answer":[' + b"[]," * (MAX_JSON_VALUES - 10) + b"[]]}}"
    result, peak = _evaluate(tmp_path, "typed.json", data)
    assert result.failed_checks == [
        "fixture_invalid: fixture 'typed.json': $.session.answer should be a string, found an array"
    ]
    _bounded(peak, len(data))


@pytest.mark.parametrize(
    ("dotted", "path"),
    [
        ("toolInvocations", "$.toolInvocations"),
        (f"{VERIFIER}.tool_trace_summary", "$.session.selfEvaluation.verifier_evaluation.tool_trace_summary"),
        (f"{VERIFIER}.claim_checks", "$.session.selfEvaluation.verifier_evaluation.claim_checks"),
        (
            f"{VERIFIER}.executor_structured_output.claims",
            "$.session.selfEvaluation.verifier_evaluation.executor_structured_output.claims",
        ),
    ],
    ids=["toolInvocations", "tool_trace_summary", "claim_checks", "claims"],
)
def test_every_list_the_checks_read_is_capped(dotted: str, path: str) -> None:
    at_cap = json.dumps(trace_dict(**{dotted: [{}] * MAX_LIST_ITEMS})).encode()
    assert isinstance(parse_trace(at_cap, "f.json"), Trace)
    over = json.dumps(trace_dict(**{dotted: [{}] * (MAX_LIST_ITEMS + 1)})).encode()
    problem = parse_trace(over, "f.json")
    assert getattr(problem, "message", None) == (
        f"f.json: {path} has more than {MAX_LIST_ITEMS:,} items; diagbot reads at most {MAX_LIST_ITEMS:,}"
    )


LABELS = {
    f"{VERIFIER}.verdict": "$.session.selfEvaluation.verifier_evaluation.verdict",
    f"{VERIFIER}.gatekeeper_result.status": "$.session.selfEvaluation.verifier_evaluation.gatekeeper_result.status",
    f"{VERIFIER}.gatekeeper_result.rule_set_version": (
        "$.session.selfEvaluation.verifier_evaluation.gatekeeper_result.rule_set_version"
    ),
    f"{VERIFIER}.composer_output.status": "$.session.selfEvaluation.verifier_evaluation.composer_output.status",
}


@pytest.mark.parametrize(("dotted", "path"), LABELS.items(), ids=[p.rsplit(".", 2)[-2] for p in LABELS])
def test_every_label_the_report_keeps_is_capped(dotted: str, path: str) -> None:
    """The report keeps a verdict or a status whole: one the size of the fixture made a report the next run could
    not read as its baseline (over its 64 MiB cap)."""
    assert isinstance(parse_trace(json.dumps(trace_dict(**{dotted: "V" * MAX_LABEL_CHARS})).encode(), "f.json"), Trace)
    problem = parse_trace(json.dumps(trace_dict(**{dotted: "V" * (MAX_LABEL_CHARS + 1)})).encode(), "f.json")
    assert getattr(problem, "message", None) == (
        f"f.json: {path} is 1,001 characters long; diagbot reads a verdict or a status of at most 1,000"
    )


def test_labels_in_messages_are_cut(tmp_path: Path) -> None:
    label = "V" * MAX_LABEL_CHARS
    trace = trace_dict(
        **{
            f"{VERIFIER}.verdict": label,
            f"{VERIFIER}.gatekeeper_result.status": label,
            f"{VERIFIER}.claim_checks": [{"claim_id": "c1", "verification": label, "detail": "d"}],
        }
    )
    result, _ = _evaluate(tmp_path, "long.json", json.dumps(trace).encode(), expectedGatekeeperStatuses=["pass"],
                          requireV2AuditClosure=True)  # fmt: skip
    shown = "V" * 99 + "…"
    assert f"verdict_not_allowed: verdict '{shown}' is not one of 'PASS', 'LOW_CONFID'" in result.failed_checks
    assert f"gatekeeper_status: gatekeeper status is '{shown}', expected 'pass'" in result.failed_checks
    assert any(f"has verification '{shown}'," in failure for failure in result.failed_checks)
    assert result.verdict == label  # kept whole in the report, as the diff compares it


def test_evidence_bindings_are_capped() -> None:
    claims = [{"claim_id": "c1", "status": "confirmed", "evidence_bindings": [0] * (MAX_LIST_ITEMS + 1)}]
    problem = parse_trace(
        json.dumps(trace_dict(**{f"{VERIFIER}.executor_structured_output.claims": claims})).encode(), "f.json"
    )
    assert getattr(problem, "message", None) == (
        "f.json: $.session.selfEvaluation.verifier_evaluation.executor_structured_output.claims[0].evidence_bindings"
        " has more than 10,000 items; diagbot reads at most 10,000"
    )


def test_an_answer_nfkc_expands_eighteen_times(tmp_path: Path) -> None:
    """U+FDFA is 3 bytes and 18 characters once normalised: 22 million of them took 147 s. Only the first
    MAX_TEXT_CHARS are read and the normal form stops at MAX_FOLDED_CHARS; the checks that fail say so, and
    one that must find a phrase absent cannot pass on a text it did not read in full."""
    answer = "\ufdfa" * (8 * MIB)  # 24 MiB on disk, under the 64 MiB fixture cap
    data = json.dumps(trace_dict(**{"session.answer": answer}), ensure_ascii=False).encode()
    result, peak = _evaluate(tmp_path, "fdfa.json", data)
    assert result.failed_checks == [
        f"keyword_coverage: answer matches 0 of the root-cause keywords, needs 2; missing 'timeout', "
        f"'connection pool' ({CUT})",
        f"forbidden_answer_keyword: {CUT}; the rest may hold 'certainly caused by'",
    ]
    _bounded(peak, len(data))


def test_a_cut_answer_still_matches_what_it_read(tmp_path: Path) -> None:
    answer = "timeout: the connection pool is exhausted. " + "x" * MAX_TEXT_CHARS
    data = json.dumps(trace_dict(**{"session.answer": answer})).encode()
    result, _ = _evaluate(tmp_path, "long.json", data, forbiddenAnswerKeywords=[], requireV2AuditClosure=True)
    markers = "'executor_evidence_v2', 'answer_version', 'evidence_bindings', 'claim_id'"
    assert result.failed_checks == [f"raw_json_leak: {CUT}; the rest may hold {markers}"]
    assert result.matched_keyword_count == 2


def test_an_answer_at_the_cap_is_read_whole(tmp_path: Path) -> None:
    answer = "x" * (MAX_TEXT_CHARS - 40) + " timeout in the connection pool"
    data = json.dumps(trace_dict(**{"session.answer": answer})).encode()
    result, _ = _evaluate(tmp_path, "whole.json", data)
    assert (result.passed, result.failed_checks) == (True, [])


@pytest.mark.parametrize("depth", [100_000, 1_500_000], ids=["under-the-value-limit", "over-it"])
def test_deeply_nested(tmp_path: Path, depth: int) -> None:
    """The parser stops at depth 200; a file too big to be under the value limit is refused before parsing."""
    data = b'{"session":{"answer":' + b"[" * depth + b"]" * depth + b"}}"
    result, peak = _evaluate(tmp_path, "deep.json", data)
    if depth < MAX_JSON_VALUES:
        expected = "not valid JSON (recursion limit exceeded at line 1 column 221)"
    else:
        expected = f"holds {depth + 2:,} JSON values (objects, arrays, strings, numbers...); diagbot reads at most "
        expected += f"{MAX_JSON_VALUES:,} per fixture"
    assert result.failed_checks == [f"fixture_invalid: fixture 'deep.json': {expected}"]
    _bounded(peak, len(data))


def test_a_big_fixture_of_ordinary_shape_is_read(tmp_path: Path) -> None:
    """Over 2 MB the values are counted; strings full of commas and brackets do not count, nor do escapes."""
    line = 'WARN pool-1 - Connection is not available, [request] {timed out} \\"quoted\\" \\\\' + ", ..." * 40
    invocations = [{"toolName": "query_metrics", "result": {"lines": [line] * 400}} for _ in range(100)]
    data = json.dumps(trace_dict(toolInvocations=[*trace_dict()["toolInvocations"], *invocations])).encode()
    assert len(data) > 2 * MAX_JSON_VALUES and data.count(b",") > MAX_JSON_VALUES
    result, peak = _evaluate(tmp_path, "big.json", data)
    assert (result.passed, result.failed_checks, result.tool_call_count) == (True, [], 102)
    _bounded(peak, len(data))


COUNTED = [
    {},
    [],
    "a,[{",
    {"a": [1, {"b": [], "c": {}}, "\\", '"', 'x\\"y', "]", '\\\\\\"'], "": None},
    [[[]], [{}], [0, 1.5, True, None, "", "[]{}"], {"k": [{}, []]}],
]


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 1024 * 1024])
@pytest.mark.parametrize("indent", [None, 1], ids=["compact", "indented"])
def test_count_values_is_exact(chunk: int, indent: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exact for valid JSON, however the pieces it is read in fall (inside strings, between `[` and `]`)."""

    def count(value: Any) -> int:
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
        return 1 + sum(map(count, children))

    monkeypatch.setattr(values, "_COUNT_CHUNK", chunk)
    for value in COUNTED:
        assert count_values(json.dumps(value, indent=indent).encode()) == count(value), value


@pytest.mark.parametrize(
    "unit",
    ["a\u0301 ", "\u1100\u1161\u11a8", "\u1100\u314f", "\u00a8\u0301", "\ufdfa", "ＴＩＭＥＯＵＴ ß\u0390 ", "\u0301"],
    ids=["combining", "jamo", "compat-jamo", "spacing-diaeresis", "fdfa", "mixed", "marks-only"],
)
def test_fold_in_pieces_equals_normalize(unit: str) -> None:
    """Long texts are normalised piece by piece, split where nothing can combine across: same result."""
    text = unit * (200_000 // len(unit))
    folded = fold(text, max_folded=sys.maxsize)
    assert (folded.text, folded.cut) == (normalize(text), False)


def test_a_needle_of_invisible_characters_alone_is_found_only_where_the_text_holds_them() -> None:
    from diagbot.core.text import contains, matches

    assert fold("evil \u202etxt").matches(["\u202e", "\u200b", "", "evil"]) == ["\u202e", "evil"]
    assert fold("plain").matches(["\u202e"]) == [] and fold("a\u200b\u202eb").hidden == "\u200b\u202e"
    assert contains("x\u2066y", "\u2066") and not contains("xy", "\u2066") and not contains("x", "")
    assert contains("a\u3164b", "\uffa0")  # two Hangul fillers with one NFKC form
    assert matches("re\u00adfund", ["refund", "\u00ad", "\u200b"]) == ["refund", "\u00ad"]


def test_fold_caps_its_input_and_its_output() -> None:
    assert fold("x" * (MAX_TEXT_CHARS + 1)) == Folded("x" * MAX_TEXT_CHARS, cut=True)
    assert fold("x" * MAX_TEXT_CHARS) == Folded("x" * MAX_TEXT_CHARS, cut=False)
    folded = fold("\ufdfa" * MAX_TEXT_CHARS)
    assert (len(folded.text), folded.cut) == (MAX_FOLDED_CHARS, True)
    assert folded.matches(["صلى"]) == ["صلى"] and folded.matches(["", "timeout"]) == []


def test_a_thousand_phrases_never_found_in_the_longest_answer(tmp_path: Path) -> None:
    """The hostile review's case: lists of 1,000 phrases, none in a 1 MiB answer, took seconds a case. Each check
    now stops at its budget, one step per phrase per 1,000 characters: 953 phrases of 1,049 steps each."""
    answer = "a" * MAX_TEXT_CHARS
    data = json.dumps(trace_dict(**{"session.answer": answer})).encode()
    lists = {name: [f"{name[0]}{i:04d}zq" for i in range(1_000)] for name in ("forbiddenAnswerKeywords", "keywords")}
    result, _ = _evaluate(
        tmp_path,
        "long.json",
        data,
        expectedRootCauseKeywords=lists["keywords"],
        forbiddenAnswerKeywords=lists["forbiddenAnswerKeywords"],
    )
    note = (
        "one check may spend 1,000,000 steps, one per phrase per 1,000 characters of the answer (1,048,576 once "
        "normalised); list fewer phrases in the case"
    )
    assert result.failed_checks == [
        f"keyword_coverage: stopped after looking for 953 of the 1,000 expectedRootCauseKeywords: {note}",
        f"forbidden_answer_keyword: stopped after looking for 953 of the 1,000 forbiddenAnswerKeywords: {note}",
    ]
    assert result.matched_keyword_count == 0
