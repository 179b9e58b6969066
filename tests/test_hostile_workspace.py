"""Workspace checks under hostile case.yaml files (issue 11, class 1, "unbounded work").

A case comes from the pull request, so each check must finish quickly whatever it asks for: a regex that
backtracks for minutes under Python's `re`, globs with many `*` or several `**` over a deep tree, a JMESPath
query that doubles a string 36 times or nests past the stack. Each one here either fails its own check with a
detail naming the bound it hit, or is refused when the case loads, and the other checks of the case still run.

Each of these took minutes or tens of GB before the bounds. What the tests hold them to is the outcome naming the
bound and a generous memory bound (`MEMORY_BOUND`); time is only a hang guard (`hang_guard`), since how fast
they run is for `bench/` to measure, not for a test on a noisy machine to assert.
"""

from __future__ import annotations

import fnmatch
import json
import os
import resource
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import jmespath
import pytest
import re2
from hypothesis import given
from hypothesis import strategies as st

from diagbot.core.query import (
    _INTERPRETER,
    _METER,
    MAX_QUERY_BUILT,
    MAX_QUERY_CHARS,
    MAX_QUERY_DEPTH,
    MAX_QUERY_STEPS,
    query_steps,
)
from diagbot.core.regex import _RE2_OPTIONS, Regex
from diagbot.core.regex import compile_regex as _compiled_regex
from diagbot.kinds.workspace import checks as workspace_checks
from diagbot.kinds.workspace.checks import (
    MAX_GLOB_CHARS,
    CheckSpec,
    Outcome,
    Workspace,
    _glob_regex,
    _preview,
    run_check,
)
from diagbot.kinds.workspace.judge import Reason, Status, Verdict, WorkspaceCase, judge_case, judge_suite
from diagbot.kinds.workspace.kind import WorkspaceKind
from tests.conftest import hang_guard
from tests.test_scaling_trace_workspace import calls, stopped_at
from tests.test_workspace import CONTRACT, EVIDENCE, load, write

MEMORY_BOUND = 512 * 1024 * 1024  # growth of the process's peak RSS per hostile instance, in bytes

NAME = "a" * 60  # a folder name that every `*a*a*...` part matches many ways
DEPTH = 30  # folders deep: paths of about 1,800 characters


@contextmanager
def bounded() -> Iterator[None]:
    """The block grows peak memory by less than MEMORY_BOUND (peak RSS covers what RE2 allocates in C++ too, which
    tracemalloc would not see), and is stopped as hung (`hang_guard`)."""
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with hang_guard():
        yield
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - peak_before
    assert grown < MEMORY_BOUND, f"peak memory grew by {grown >> 20} MiB"


def judged(tmp_path: Path, files: dict[str, Any], checks: list[dict[str, Any]]) -> dict[str, Outcome]:
    """Judge an evidence-only case whose critical bucket holds `checks` (its other bucket two plain checks that
    pass), bounded; every check's outcome by id, the mode contract's included."""
    case = WorkspaceCase.model_validate(
        {
            "id": "hostile",
            "title": "hostile",
            "evaluation": {"mode": "evidence_only"},
            "judge": {
                "evidence_collection": [
                    {"id": "metrics_bundle", "file_exists": "evidences/metrics.json"},
                    {"id": "gc_lines", "contains": {"file": "evidences/logs.json", "any": ["Pause Young"]}},
                ],
                "critical_evidence": checks,
            },
        }
    )
    write(tmp_path / "fixtures" / "hostile", CONTRACT | EVIDENCE | files)
    with bounded():
        result = judge_case(case, tmp_path / "fixtures")
    return {
        check.id: Outcome(check.passed, check.detail)
        for bucket in result.packet.buckets.values()
        for check in bucket.checks
    }


def assert_others_ran(outcomes: dict[str, Outcome]) -> None:
    """The checks around the hostile one ran and passed as usual."""
    assert outcomes["metrics_bundle"] == Outcome(True, "found evidences/metrics.json")
    assert outcomes["gc_lines"] == Outcome(True, "evidences/logs.json: found Pause Young")
    assert outcomes["evidence_agent_artifact_present"].passed
    assert outcomes["diagnosis_agent_not_invoked"].passed


def trees(tmp_path: Path) -> list[str]:
    """In the run folder `judged` uses: DEPTH folders named NAME under runs/ with 100 logs at the bottom, and a
    folder `flat` of 50 names of 240 `a`s; the logs, sorted."""
    bottom = "runs/" + "/".join([NAME] * DEPTH)
    logs = [f"{bottom}/{NAME}{n:03d}.log" for n in range(100)]
    write(
        tmp_path / "fixtures" / "hostile",
        dict.fromkeys(logs, "OutOfMemoryError\n") | {f"flat/{'a' * 240}{n}.log": "" for n in range(50)},
    )
    return logs


def problems_of(tmp_path: Path, check: str) -> list[str]:
    """Load a suite of a case with one extra check, and a good case: the problems (the good case loads, and the
    other only without problems)."""
    good = """
id: good
title: t
evaluation: {mode: evidence_only}
judge: {evidence_collection: [{id: a, file_exists: a}], critical_evidence: [{id: b, file_exists: b}]}
"""
    bad = f"""
id: bad
title: t
evaluation: {{mode: evidence_only}}
judge:
  evidence_collection: [{{id: a, file_exists: a}}]
  critical_evidence:
    - {{id: fine, regex: {{file: "*.log", pattern: "panic: "}}}}
    - {check}
"""
    with bounded():
        cases, problems = load(tmp_path, {"bad": bad, "good": good})
    assert [case.id for case in cases] == (["good"] if problems else ["bad", "good"])
    return problems


def where(tmp_path: Path, check_id: str, field: str) -> str:
    return f"{tmp_path}/cases/bad/case.yaml: case bad: bucket critical_evidence: check {check_id!r}: field {field}: "


# ---- regex ---------------------------------------------------------------------------------------------


def test_catastrophic_regex_fails_fast_and_the_rest_of_the_case_runs(tmp_path: Path) -> None:
    """`(a+)+$` on a run of `a`s that ends in a character it cannot match: 2^64 ways for Python's `re` to try."""
    files = {"evidences/logs/app.log": "a" * 64 + "!", "evidences/logs/gc.log": "GC pause 1.5s\n"}
    outcomes = judged(
        tmp_path,
        files,
        [
            {"id": "nested_plus", "regex": {"file": "evidences/logs/app.log", "pattern": "(a+)+$"}},
            {"id": "nested_star", "regex": {"file": "evidences/logs/*.log", "pattern": "(a|aa)*b"}},
            {"id": "gc_pause", "regex": {"file": "evidences/logs/*.log", "pattern": r"GC pause \d+(\.\d+)?s"}},
        ],
    )
    assert outcomes["nested_plus"] == Outcome(False, "evidences/logs/app.log: no match for /(a+)+$/")
    assert outcomes["nested_star"] == Outcome(
        False, "evidences/logs/app.log: no match for /(a|aa)*b/; evidences/logs/gc.log: no match for /(a|aa)*b/"
    )
    assert outcomes["gc_pause"] == Outcome(True, "evidences/logs/gc.log: matched 'GC pause 1.5s'")
    assert_others_ran(outcomes)


def test_regex_match_on_a_file_with_bad_bytes_shows_the_text_as_decoded(tmp_path: Path) -> None:
    root = write(tmp_path / "ws", {"a.log": b"\xff caf" + "é".encode() * 200})
    check = CheckSpec.model_validate({"id": "r", "regex": {"file": "a.log", "pattern": "café+"}})
    found = run_check(Workspace(str(root)), check)
    assert found == Outcome(
        True,
        f"a.log: matched {'caf' + 'é' * 77!r} (not valid UTF-8 (bad byte at offset 0; bad bytes replaced))",
    )


@pytest.mark.parametrize(
    ("pattern", "text", "detail"),
    [
        ("done$", "all done\n", "a.log: matched 'done'"),
        ("done$", "all done", "a.log: matched 'done'"),
        ("done$", "all done\n\n", "a.log: no match for /done$/"),
        ("(?m)^done$", "done\nnext\n", "a.log: matched 'done'"),
        ("done\\z", "all done\n", "a.log: no match for /done\\z/"),
        ("\\d ms", "took ٣ ms\n", "a.log: no match for /\\d ms/"),  # Python's `\\d` would take the Arabic-Indic 3
    ],
)
def test_regex_keeps_pythons_end_of_text(tmp_path: Path, pattern: str, text: str, detail: str) -> None:
    """RE2's `$` is the very end; Python's also just before a final newline, and a case written for `re` relies on
    it (RE2's own `\\z` is the very end only). `\\d` is ASCII digits in RE2 (Python's takes any script's)."""
    check = CheckSpec.model_validate({"id": "r", "regex": {"file": "a.log", "pattern": pattern}})
    result = run_check(Workspace(str(write(tmp_path / "ws", {"a.log": text}))), check)
    assert result == Outcome(detail.endswith("'"), detail)


REGEX_PIECES = ["a", "b", "ab", "é", "|", "(", ")", "(?:", "(?i)", "*", "+", "?", "{2}", ".", "^", "$", "[ab]", "[^a]"]
REGEX_PIECES += ["[]a]", "[[:alpha:]]", "\\|", "\\(", "\\b", "\\Q|\\E", "\\pL"]


@given(st.lists(st.sampled_from(REGEX_PIECES), min_size=1, max_size=7).map("".join), st.lists(st.text("abx|(é")))
def test_regex_shortcuts_find_what_re2_finds(pattern: str, texts: list[str]) -> None:
    """A pattern of plain text is found by a byte search, and one that starts with plain text runs RE2 only where
    that text occurs: each finds the first match RE2 itself finds."""
    try:
        plain = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error:
        return
    ours = _compiled_regex(pattern)
    for text in map(str.encode, texts):
        hit = plain.search(text)
        assert ours.search(text) == (hit.span() if hit else None), text


def test_pattern_is_compiled_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str | bytes] = []
    real_compile = re2.compile
    monkeypatch.setattr(
        re2, "compile", lambda pattern, options: compiled.append(pattern) or real_compile(pattern, options)
    )
    pattern = "compiled (once|twice) only"  # a pattern no other test uses, so not in the cache yet
    check = CheckSpec.model_validate({"id": "r", "regex": {"file": "*.log", "pattern": pattern}})
    workspace = Workspace(str(write(tmp_path / "ws", {f"{n}.log": "compiled once only" for n in range(3)})))
    assert [run_check(workspace, check).passed for _ in range(3)] == [True] * 3
    assert compiled == [pattern, pattern.encode()]  # to match, and over bytes once to measure it


BACKREFERENCE = (
    "uses a backreference (\\1, \\g<name> or (?P=name)), which regex checks do not support: they run on RE2, which "
    "matches in time linear in the text and so has no backtracking features; match the repeated text itself"
)


def test_backreference_is_refused_when_the_case_loads(tmp_path: Path) -> None:
    problems = problems_of(tmp_path, r"""{id: repeated, regex: {file: "*.log", pattern: '(\w+) \1'}}""")
    assert problems == [
        where(tmp_path, "repeated", "regex.pattern") + "invalid regular expression '(\\\\w+) \\\\1': " + BACKREFERENCE
    ]


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        ("(?P<word>x)(?P=word)", "a backreference (\\1, \\g<name> or (?P=name))"),
        ("error(?!: none)", "a lookahead or lookbehind ((?=, (?!, (?<= or (?<!)"),
        ("(?<=heap_)used", "a lookahead or lookbehind ((?=, (?!, (?<= or (?<!)"),
        ("(?>a+)b", "an atomic group or a possessive quantifier ((?>, *+, ++ or ?+)"),
        ("a++b", "an atomic group or a possessive quantifier ((?>, *+, ++ or ?+)"),
        ("(a)?(?(1)b|c)", "a conditional group ((?(1)...|...))"),
        ("done\\Z", "\\Z"),
        ("(?x) a b", "a comment or verbose mode ((?# or (?x)"),
    ],
)
def test_python_only_regex_features_are_refused_with_their_name(tmp_path: Path, pattern: str, named: str) -> None:
    problems = problems_of(tmp_path, f"{{id: r, regex: {{file: '*.log', pattern: '{pattern}'}}}}")
    assert len(problems) == 1
    assert problems[0].startswith(where(tmp_path, "r", "regex.pattern") + f"invalid regular expression {pattern!r}: ")
    assert f"uses {named}, which regex checks do not support: they run on RE2" in problems[0]


def test_escaped_backslash_is_not_a_backreference(tmp_path: Path) -> None:
    """`\\\\1` is a backslash and a 1, which RE2 runs; a pattern RE2 refuses otherwise says why in RE2's words."""
    assert problems_of(tmp_path, r"""{id: ok, regex: {file: "*.log", pattern: '\\1'}}""") == []
    (broken,) = problems_of(tmp_path, """{id: open, regex: {file: "*.log", pattern: '(\\\\1'}}""")
    assert broken == (
        where(tmp_path, "open", "regex.pattern")
        + "invalid regular expression '(\\\\\\\\1': missing ): (\\\\1 (regex checks use RE2 syntax)"
    )


def test_regex_too_large_to_run_quickly_is_refused(tmp_path: Path) -> None:
    """RE2 is linear in the text, but a pattern its fast automaton gives up on costs per instruction per byte."""
    (large,) = problems_of(tmp_path, """{id: big, regex: {file: "*.log", pattern: '[ab]*a[ab]{300}c'}}""")
    assert large.startswith(
        where(tmp_path, "big", "regex.pattern") + "invalid regular expression '[ab]*a[ab]{300}c': compiles to "
    )
    assert large.endswith(
        " RE2 instructions; the limit is 128 (shorten counted repetitions like .{0,100}, "
        "or split the pattern over several checks)"
    )
    (long,) = problems_of(tmp_path, f"{{id: long, regex: {{file: '*.log', pattern: '{'x' * 1001}'}}}}")
    assert long.endswith(": is 1,001 characters long; the limit is 1,000")


# ---- globs ---------------------------------------------------------------------------------------------

MANY_STARS = "*a" * 10 + "*b"  # no name ends in b, and each `a` can sit in 60 places


def test_many_star_glob_on_a_deep_tree_fails_fast(tmp_path: Path) -> None:
    logs = trees(tmp_path)
    outcomes = judged(
        tmp_path,
        {},
        [
            {"id": "deep_miss", "file_exists": f"**/{MANY_STARS}"},
            {"id": "deep_hit", "file_exists": "runs/**/" + "*a" * 10 + "*.log"},
            {"id": "deep_regex", "regex": {"file": f"runs/**/{'*a' * 10}*.log", "pattern": "OutOfMemory"}},
            {"id": "one_folder_miss", "file_absent": f"flat/{'*a' * 12}*b"},
        ],
    )
    assert outcomes["deep_miss"] == Outcome(False, f"no file matches '**/{MANY_STARS}'")
    assert outcomes["deep_hit"] == Outcome(True, f"found {', '.join(logs[:3])}")
    assert outcomes["deep_regex"] == Outcome(True, f"{logs[0]}: matched 'OutOfMemory'")
    assert outcomes["one_folder_miss"] == Outcome(True, f"no file matches 'flat/{'*a' * 12}*b'")
    assert_others_ran(outcomes)


def test_several_double_star_glob_on_a_deep_tree_fails_fast(tmp_path: Path) -> None:
    found = f"found {', '.join(trees(tmp_path)[:3])}"
    misses = "/".join(["**", "a*"] * 8) + "/b"  # two seconds a path for the plain translation to Python's `re`
    outcomes = judged(
        tmp_path,
        {},
        [
            {"id": "double_miss", "file_exists": misses},
            {"id": "double_hit", "file_exists": "/".join(["**", "a*"] * 8) + "/*.log"},
            {"id": "double_trailing", "file_exists": "runs/**/a*/**/a*/**/a*/**"},
            {"id": "double_absent", "file_absent": "**/**/**/**/**/**/**/x*/**"},
        ],
    )
    assert outcomes["double_miss"] == Outcome(False, f"no file matches {misses!r}")
    assert outcomes["double_hit"] == Outcome(True, found)
    assert outcomes["double_trailing"] == Outcome(True, found)
    assert outcomes["double_absent"] == Outcome(True, "no file matches '**/**/**/**/**/**/**/x*/**'")
    assert_others_ran(outcomes)


def test_glob_size_limits_are_checked_when_the_case_loads(tmp_path: Path) -> None:
    many_doubles = "/".join(["**", "x"] * 9)
    many_parts = "/".join(["x"] * 33)
    problems = problems_of(
        tmp_path,
        f"{{id: doubles, file_exists: '{many_doubles}'}}\n"
        f"    - {{id: parts, contains: {{file: '{many_parts}', any: [x]}}}}\n"
        f"    - {{id: long, json_valid: '{'x' * (MAX_GLOB_CHARS + 1)}'}}",
    )
    assert problems == [
        where(tmp_path, "doubles", "file_exists") + f"glob {many_doubles!r} has 9 '**' parts; the limit is 8",
        where(tmp_path, "parts", "contains.file") + f"glob {many_parts!r} has 33 parts between '/'; the limit is 32",
        where(tmp_path, "long", "json_valid") + f"glob {'x' * 40!r}... is 1,001 characters long; the limit is 1,000",
    ]


def test_bracket_glob_keeps_a_leading_close_bracket_literal(tmp_path: Path) -> None:
    """`[!]a]` is "neither `]` nor `a`", as in a shell; it used to read as "not `/`, then `a]`"."""
    root = write(tmp_path / "ws", {"x.log": "", "].log": "", "b.log": ""})
    workspace = Workspace(str(root))
    assert workspace.match("[!]a].log") == (["b.log", "x.log"], [])
    assert workspace.match("[]a].log") == (["].log"], [])


def reference_match(glob: str, path: str) -> bool:
    """The glob semantics spelled out: fnmatch per folder name, `**` any number of folders (and a trailing one at
    least one name), by dynamic programming over the parts."""
    parts = [part for part in glob.split("/") if part and part != "."]
    parts += ["*"] if parts and parts[-1] == "**" else []
    names = path.split("/")

    @cache
    def from_(i: int, j: int) -> bool:
        if i == len(parts):
            return j == len(names)
        if parts[i] == "**":
            return any(from_(i + 1, k) for k in range(j, len(names) + 1))
        return j < len(names) and fnmatch.fnmatchcase(names[j], parts[i]) and from_(i + 1, j + 1)

    return from_(0, 0)


GLOB_PARTS = st.lists(
    st.just("**")
    | st.lists(
        st.sampled_from(["a", "b", "*", "?", "[ab]", "[!a]", "[]a]", "[a-b]", "]", "!", "-", "[!-b]"]), min_size=1
    ).map("".join),
    min_size=1,
    max_size=5,
).map("/".join)
PATHS = st.lists(st.text("ab]!-1", min_size=1, max_size=4), min_size=1, max_size=6).map("/".join)


def test_a_negated_class_that_starts_with_a_dash_is_no_range() -> None:
    """`[!-z]` was built as `[^/-z]`, a range from `/` to `z`, so `run[!-z].json` did not match `run1.json` and a
    file_absent check of it passed with the file there (a hostile pass)."""
    regex = _glob_regex("evidences/run[!-z].json")
    assert regex.fullmatch("evidences/run1.json") and not regex.fullmatch("evidences/run-.json")
    assert not regex.fullmatch("evidences/runz.json") and not regex.fullmatch("evidences/run/.json")


@given(GLOB_PARTS, st.lists(PATHS, max_size=20))
def test_glob_translation_matches_the_reference_semantics(glob: str, paths: list[str]) -> None:
    """The non-backtracking translation accepts exactly what the plain definition does."""
    regex = _glob_regex(glob)
    assert [bool(regex.fullmatch(path)) for path in paths] == [reference_match(glob, path) for path in paths]


# ---- JMESPath ------------------------------------------------------------------------------------------

DOUBLED = "to_string(@)" + " | join('', [@, @])" * 36  # 2^36 copies of the document as text
SHARED = "[@, @]" + " | [@, @]" * 35  # 2^36 references to the document: small until written out
BUILT = (
    f"stopped: it would build more than {MAX_QUERY_BUILT:,} array items, object members and string characters, "
    "the limit for one query on one file; narrow the query"
)
SHOWN = "[" * 36 + '{"series": [{"name": "jvm_gc_pause_seconds"}'  # 80 characters
STEPS = f"stopped after {MAX_QUERY_STEPS:,} evaluation steps, the limit for one query on one file; narrow the query"


@pytest.mark.parametrize(
    ("expr", "passed", "detail"),
    [
        (DOUBLED, False, BUILT),
        (f"{SHARED} | to_string(@)", False, BUILT),
        (f"length({SHARED} | to_string(@)) > `0`", False, BUILT),
        ("[@, @][]" + " | [@, @][]" * 35, False, STEPS),
        (f"({SHARED[:213]}) == ({SHARED[:213]})", False, STEPS),
        (f"contains({SHARED}, `1`)", False, "-> false"),
        (SHARED, True, "-> " + SHOWN),  # the first 80 characters, written as far as needed
        (
            f"abs({SHARED})",
            False,
            f"failed: In function abs(), invalid type for value: {SHOWN}, expected one of: ['number'], "
            'received: "array"',
        ),
    ],
    ids=[
        "join-doubling",
        "shared-to-string",
        "shared-length",
        "flatten-doubling",
        "shared-equal",
        "shared-contains",
        "shared-shown",
        "shared-type-error",
    ],
)
def test_multiplying_query_fails_its_own_check_fast(tmp_path: Path, expr: str, passed: bool, detail: str) -> None:
    outcomes = judged(
        tmp_path,
        {},
        [
            {"id": "hostile_query", "json_query": {"file": "evidences/metrics.json", "expr": expr}},
            {"id": "series", "json_query": {"file": "evidences/metrics.json", "expr": "length(series) > `0`"}},
        ],
    )
    assert outcomes["hostile_query"] == Outcome(passed, f"evidences/metrics.json: {expr} {detail}")
    assert outcomes["series"] == Outcome(True, "evidences/metrics.json: length(series) > `0` -> true")
    assert_others_ran(outcomes)


DOCUMENT = {
    "entries": [
        {"level": "ERROR", "msg": "OOM killed", "tags": ["oom", "k8s"], "ms": 12, "n": {"a": [1, 2]}},
        {"level": "INFO", "msg": "started", "tags": [], "ms": 3.5, "n": {"a": [1, 2]}},
        {"level": "WARN", "msg": "slow ünïcode", "tags": ["k8s"], "ms": 0, "n": {"a": [2, 1]}},
    ],
    "meta": {"service": "orders", "flags": [True, False, 0, 1]},
}
QUERIES = [
    "entries[?level == 'ERROR'].msg",
    'entries[?tags == `["k8s"]`].level',
    'entries[?n == `{"a": [1, 2]}`] | length(@)',
    "entries[?n != entries[0].n]",
    "entries[?ms > `1`].ms",
    "entries[?msg < 'b'].msg",
    "entries[?ms >= tags]",
    "entries[1:].msg",
    "entries[::-1].level",
    "entries[*].{l: level, t: length(tags)}",
    "meta.*",
    "entries[].tags[]",
    "entries[*].tags[]",
    "contains(entries[0].tags, 'oom')",
    "contains(meta.flags, `false`)",
    "contains(meta.flags, `0`)",
    "contains(entries[0].msg, 'OOM')",
    "to_string(entries[2])",
    "join(', ', entries[*].level)",
    "sort_by(entries, &ms)[*].level",
    "max_by(entries, &ms).msg",
    "map(&length(tags), entries)",
    'merge(meta, `{"x": 1}`)',
    "keys(meta)",
    "reverse(entries[0].msg)",
    "sum(entries[*].ms) > `15`",
    "not_null(missing, meta.service)",
    "entries[0].n == entries[1].n && entries[0].n != entries[2].n",
    "[entries[0].tags, meta.flags] == [entries[0].tags, meta.flags]",
    "length(`[]`) == `0`",
]


@pytest.mark.parametrize("expr", QUERIES)
def test_bounded_queries_mean_what_jmespath_means(expr: str) -> None:
    """The metered interpreter and functions give JMESPath's own results, and the detail shows what it showed."""
    expected = jmespath.search(expr, DOCUMENT)
    _METER.reset()
    assert _INTERPRETER.visit(jmespath.compile(expr).parsed, DOCUMENT) == expected
    assert _preview(expected) == json.dumps(expected, ensure_ascii=False, default=str)[:80]


def test_query_work_is_counted_per_file(tmp_path: Path) -> None:
    """The budget is for one query on one file: after a file used it all, the next file starts afresh."""
    root = write(tmp_path / "ws", {"a.json": {"x": "y"}, "b.json": {"x": "y", "ok": True}})
    check = CheckSpec.model_validate({"id": "q", "json_query": {"file": "*.json", "expr": f"ok || ({DOUBLED})"}})
    with bounded():
        result = run_check(Workspace(str(root)), check)
    assert result == Outcome(True, f"b.json: ok || ({DOUBLED}) -> true")


NESTED = f"nests more than {MAX_QUERY_DEPTH} levels deep (pipes and brackets count); flatten it"


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("!" * (MAX_QUERY_CHARS - 1) + "@", NESTED),
        ("not_null(" * 70 + "@" + ")" * 70, NESTED),
        ("a" + " | a" * 64, NESTED),
        ("a" + ".b" * 500, "is 1,001 characters long; the limit is 1,000"),
    ],
    ids=["bangs", "calls", "pipes", "long"],
)
def test_deep_or_long_query_is_refused_when_the_case_loads(tmp_path: Path, expr: str, message: str) -> None:
    (problem,) = problems_of(tmp_path, f"{{id: q, json_query: {{file: a.json, expr: '{expr}'}}}}")
    shown = repr(expr[:80]) + "..."
    assert problem == where(tmp_path, "q", "json_query.expr") + f"JMESPath expression {shown} {message}"


def test_recursion_while_evaluating_fails_the_check_not_the_run(tmp_path: Path) -> None:
    """Evaluation nests one call per level of the expression: with the stack nearly used up (as deep inside a
    caller), running out fails that check only."""
    root = write(tmp_path / "ws", {"a.json": {"x": 1}})
    workspace = Workspace(str(root))
    deep = CheckSpec.model_validate({"id": "q", "json_query": {"file": "a.json", "expr": "[" * 60 + "x" + "]" * 60}})
    shallow = CheckSpec.model_validate({"id": "s", "json_query": {"file": "a.json", "expr": "x"}})
    run_check(workspace, shallow)  # the file read and parsed with the usual stack
    limit, depth = sys.getrecursionlimit(), len(traceback.extract_stack())
    sys.setrecursionlimit(depth + 120)
    try:
        result = run_check(workspace, deep)
    finally:
        sys.setrecursionlimit(limit)
    assert result == Outcome(False, f"a.json: {'[' * 60}x{']' * 60} stopped: nested too deeply to evaluate")
    assert run_check(workspace, shallow) == Outcome(True, "a.json: x -> 1")


def test_contains_on_text_that_nfkc_expands_is_bounded(tmp_path: Path) -> None:
    """U+FDFA expands 18x under NFKC: the file's text is normalised once, capped, and the detail says so."""
    outcomes = judged(
        tmp_path,
        {"evidences/expand.txt": "\ufdfa" * 4_000_000},
        [{"id": "wide", "contains": {"file": "evidences/expand.txt", "any": ["never there"]}}],
    )
    passed, detail = outcomes["wide"]
    assert not passed
    assert "only the start of the text was searched (the normalisation cap)" in detail
    assert_others_ran(outcomes)


def test_a_matched_secret_is_never_echoed(tmp_path: Path) -> None:
    token = "ghs_" + "Z9" * 20
    outcomes = judged(
        tmp_path,
        {"evidences/env.txt": f"GITHUB_TOKEN={token}\n"},
        [{"id": "leak", "regex": {"file": "evidences/env.txt", "pattern": "GITHUB_TOKEN=.*"}}],
    )
    passed, detail = outcomes["leak"]
    assert passed and token not in detail and "[redacted]" in detail
    assert_others_ran(outcomes)


# ---- the case's work budget ----------------------------------------------------------------------------

SLOW = "[ab]*a[ab]{50}c"  # passes the 128-instruction limit (57), but RE2's fast automaton gives up on it
AB = "".join("ab"[(n * 7_919) % 13 % 2] for n in range(20_000))  # 20,000 bytes of a and b, no c


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[Regex]:
    """One entry per search RE2 is asked to make, in order."""
    return calls(monkeypatch, Regex, "search")


def test_slow_regex_checks_stop_at_the_case_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, searches: list[Regex]
) -> None:
    """The reviewer's case, small: thousands of checks of a pattern on RE2's slow path, each charged 57
    instructions times the bytes it searches. Past the budget no search runs: the work is counted, not timed."""
    first, each = 1 + 1 + 1 + 21 + 5_701, 1 + 1 + 5_701  # the first also matches the path and reads the file
    budget = first + 3 * each
    monkeypatch.setattr(workspace_checks, "MAX_CASE_STEPS", budget)
    ws = Workspace(str(write(tmp_path / "ws", {"f.txt": AB})))
    checks = [
        CheckSpec.model_validate({"id": f"r{i}", "regex": {"file": "f.txt", "pattern": SLOW}}) for i in range(2_000)
    ]

    outcomes = [run_check(ws, check) for check in checks]

    assert len(searches) == 4
    assert outcomes[:4] == [Outcome(False, f"f.txt: no match for /{SLOW}/")] * 4
    assert outcomes[4:] == [stopped_at(budget)] * 1_996


CHEAP_CHECKS = [
    {"file_exists": "f.txt"},
    {"file_absent": "nothing/*.txt"},  # would pass: a stopped check never does
    {"json_valid": "a.json"},
    {"contains": {"file": "f.txt", "any": ["ab"]}},
    {"regex": {"file": "f.txt", "pattern": "ab"}},
    {"json_query": {"file": "a.json", "expr": "x"}},
]


@pytest.mark.parametrize("kind", CHEAP_CHECKS, ids=lambda kind: next(iter(kind)))
def test_a_check_past_the_case_budget_fails_whatever_its_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: dict[str, Any]
) -> None:
    """Once the case is past its budget every later check fails saying so, even one that would pass at once,
    and even one that passes when nothing is found (`file_absent`)."""
    monkeypatch.setattr(workspace_checks, "MAX_CASE_STEPS", 1_000)
    ws = Workspace(str(write(tmp_path / "ws", {"f.txt": AB, "a.json": {"x": 1}})))
    check = CheckSpec.model_validate({"id": "c", **kind})
    assert run_check(Workspace(ws.root), check).passed  # on its own, within the budget
    ws.spent = 1_000  # all of it spent by the checks before

    assert run_check(ws, check) == stopped_at(1_000)


def test_a_query_that_crosses_the_budget_keeps_its_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A query's steps are known once it has run: one started within the budget keeps its result, and the checks
    after it are stopped."""
    root = write(tmp_path / "ws", {"a.json": {"k": list(range(1_000))}})
    query = CheckSpec.model_validate({"id": "q", "json_query": {"file": "a.json", "expr": "length(k[?@ > `10`])"}})
    alone = Workspace(str(root))
    result = run_check(alone, query)
    assert result == Outcome(True, "a.json: length(k[?@ > `10`]) -> 989")
    budget = alone.spent - query_steps() // 2  # the query starts within it, and ends past it
    monkeypatch.setattr(workspace_checks, "MAX_CASE_STEPS", budget)
    ws = Workspace(str(root))

    assert [run_check(ws, query), run_check(ws, query)] == [result, stopped_at(budget)]


def budget_case(case_id: str, diagnosis: list[dict[str, Any]], workspace: str = "shared") -> WorkspaceCase:
    found = [{"id": "f", "file_exists": "f.txt"}]
    return WorkspaceCase.model_validate(
        {
            "id": case_id,
            "title": case_id,
            "workspace": workspace,
            "judge": {
                "workflow": found,
                "evidence_collection": found,
                "critical_evidence": found,
                "evidence_routing": found,
                "diagnosis": diagnosis,
            },
        }
    )


def test_each_case_has_its_own_budget_and_a_stopped_one_is_still_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, searches: list[Regex]
) -> None:
    """A case that spends its budget on one run folder leaves the next case's budget whole (the same folder, read
    again): that case's verdict is the same judged alone or after it. The stopped case keeps the results of the
    checks decided before the budget ran out, and its report is written as usual."""
    budget = 5 + (1 + 1 + 21 + 5_701) + 2 * (1 + 1 + 5_701) + 100  # four file_exists, then three slow searches
    monkeypatch.setattr(workspace_checks, "MAX_CASE_STEPS", budget)
    write(tmp_path / "fixtures" / "shared", {"f.txt": AB})
    slow = budget_case("slow", [{"id": f"r{i}", "regex": {"file": "f.txt", "pattern": SLOW}} for i in range(500)])
    quick = budget_case(
        "quick",
        [
            {"id": "slow_once", "regex": {"file": "f.txt", "pattern": SLOW}},
            {"id": "no_c", "file_absent": "c.txt"},
            {"id": "ab", "regex": {"file": "f.txt", "pattern": "ab"}},
        ],
    )

    both = judge_suite([slow, quick], tmp_path / "fixtures", "ws")
    alone = judge_suite([quick], tmp_path / "fixtures", "ws")

    assert both.results[1] == alone.results[0]
    assert [c.detail for c in alone.results[0].packet.buckets["diagnosis"].checks] == [
        f"f.txt: no match for /{SLOW}/",
        "no file matches 'c.txt'",
        "f.txt: matched 'ab'",
    ]
    assert len(searches) == 3 + 2 * 2  # the slow case's three, then the quick case's two, twice
    stopped = both.results[0]
    assert (stopped.verdict, stopped.reason, stopped.score) == (Verdict.FAIL, Reason.DIAGNOSIS_MISSING, 69.0)
    assert all(bucket.status is Status.PASS for name, bucket in stopped.packet.buckets.items() if name != "diagnosis")
    details = [c.detail for c in stopped.packet.buckets["diagnosis"].checks]
    assert details == [f"f.txt: no match for /{SLOW}/"] * 3 + [stopped_at(budget).detail] * 497
    assert WorkspaceKind().parse(both.model_dump(mode="json", by_alias=True), "report") == both


@pytest.mark.parametrize("entry", ["folder", "fifo", "dangling_link", "link_outside"])
def test_a_forbidden_path_held_by_something_other_than_a_file_is_not_absent(tmp_path: Path, entry: str) -> None:
    """`file_absent` passed when the forbidden path was a folder, a FIFO or a link diagbot does not read: the
    evidence-only gate `diagnosis_agent_not_invoked` went from failing to passing with the file swapped for one."""
    absent = [{"id": "no_x", "file_absent": "x.json"}, {"id": "no_y", "file_absent": "d/*.json"}]
    outcomes = judged(tmp_path, {}, absent)
    assert outcomes["no_x"].passed and outcomes["no_y"].passed  # nothing there yet: both absent
    run = tmp_path / "fixtures" / "hostile"
    for path in (run / "x.json", run / "d" / "y.json"):
        path.parent.mkdir(exist_ok=True)
        if entry == "folder":
            path.mkdir()
        elif entry == "fifo":
            os.mkfifo(path)
        else:
            path.symlink_to("/nonexistent" if entry == "dangling_link" else "/etc/hostname")
    case = WorkspaceCase.model_validate(
        {"id": "hostile", "title": "hostile", "evaluation": {"mode": "evidence_only"},
         "judge": {"critical_evidence": absent}}
    )  # fmt: skip
    with bounded():
        checks = {c.id: c for b in judge_case(case, tmp_path / "fixtures").packet.buckets.values() for c in b.checks}
    assert (checks["no_x"].passed, checks["no_x"].detail) == (False, "present, but not as a regular file: x.json")
    assert (checks["no_y"].passed, checks["no_y"].detail) == (False, "present, but not as a regular file: d/y.json")


def test_what_a_folder_link_hides_is_not_absent(tmp_path: Path) -> None:
    """`diagnosis -> real/diag` held `rollback-plan.md`, and `file_absent: diagnosis/rollback-plan.md` passed: a
    folder link is not followed, so what lies behind it is unknown, as in a folder that cannot be listed."""
    root = write(tmp_path / "ws", {"real/diag/rollback-plan.md": "roll back"})
    os.symlink("real/diag", root / "diagnosis")
    workspace = Workspace(str(root))
    said = "folder diagnosis/ cannot be listed (it is a link to a folder, which diagbot does not follow)"
    for pattern in ("diagnosis/rollback-plan.md", "diagnosis/*.md"):
        absent = run_check(workspace, CheckSpec.model_validate({"id": "a", "file_absent": pattern}))
        assert absent == Outcome(False, f"no file matches {pattern!r}; {said}, so a file in it may match"), absent
        exists = run_check(workspace, CheckSpec.model_validate({"id": "e", "file_exists": pattern}))
        assert not exists.passed and said in exists.detail
    assert run_check(workspace, CheckSpec.model_validate({"id": "r", "file_absent": "real/nothing.md"})).passed


# --- the checkout's .git folder: where actions/checkout keeps the job's token --------------------------------------

GIT_CONFIG = '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==\n'


def test_no_check_reads_a_git_folder_or_a_link_into_one(tmp_path: Path) -> None:
    """A workspace suite with `fixtures: .` and `workspace: .git` let a regex check quote and test `.git/config`,
    where a checkout that keeps its credentials holds the token: pass or fail, check by check, spelled it out.
    Neither a `.git` folder, nor one met in a listing, nor a link into one is read."""
    fixtures = write(tmp_path / "fixtures", {".git/config": GIT_CONFIG, "run/.git/config": GIT_CONFIG,
                                             "run/notes.md": "ok"})  # fmt: skip
    os.symlink(".git/config", fixtures / "run" / "config")
    os.symlink(".git", fixtures / "linked")
    probe = {"id": "p", "regex": {"file": "config", "pattern": "basic"}}
    judge = {"critical_evidence": [probe]}
    leak = {"id": "leak", "title": "t", "evaluation": {"mode": "evidence_only"}, "judge": judge}
    with pytest.raises(ValueError, match=r"path '\.git' enters a \.git folder"):  # refused as the case loads
        WorkspaceCase.model_validate(leak | {"workspace": ".git"})
    result = judge_case(WorkspaceCase.model_validate(leak | {"workspace": "linked"}), fixtures)
    assert (result.verdict, result.reason) == (Verdict.INVALID, Reason.ARTIFACT_RESOLUTION_FAILED)
    assert "'linked' is inside a .git folder, which diagbot never reads" in json.dumps(result.model_dump(mode="json"))
    workspace = Workspace(str(fixtures / "run"))
    assert set(workspace.files) == {"notes.md"}
    assert workspace.refused == {".git": "a .git folder or file, never read", "config": "a link into a .git folder, "
                                 "never read"}  # fmt: skip
    assert not run_check(workspace, CheckSpec.model_validate(probe)).passed
    # nothing in it is a run's output: absent to every check, as in a run folder committed without it (a folder
    # that could not be listed would make every wildcard file_absent unsure) ...
    for pattern in ("**/*.pem", "*.key", "*/config"):
        assert run_check(workspace, CheckSpec.model_validate({"id": "a", "file_absent": pattern})).passed, pattern
    # ... and a check that names a path in it is refused when the case loads: `file_absent: .git/hooks/x` would
    # pass whatever the run planted there
    for spec in ({"id": "q", "regex": {"file": ".git/config", "pattern": "basic"}}, {"id": "h", "file_absent":
                 ".Git/hooks/pre-commit"}):  # fmt: skip
        with pytest.raises(ValueError, match=r"enters a \.git folder, which diagbot never reads"):
            CheckSpec.model_validate(spec)
