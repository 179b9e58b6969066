"""Work that must not grow with the product of two things a pull request controls (trace and workspace kinds).

A case may list thousands of keywords, tools or checks, and a run may hold thousands of tools or files; each test
here counts the work done (comparisons, normalisations, glob tests, parses) or bounds what a message says, rather
than timing it, and checks the results are still the right ones.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from diagbot.core import text
from diagbot.core.errors import CaseFileError
from diagbot.core.query import query_steps
from diagbot.kinds.trace import checks as trace_checks
from diagbot.kinds.trace import search
from diagbot.kinds.trace.cases import TraceCase, parse_case_file
from diagbot.kinds.trace.evaluate import evaluate_suite
from diagbot.kinds.trace.fixture import Trace, parse_trace
from diagbot.kinds.workspace import checks as workspace_checks
from diagbot.kinds.workspace.checks import CheckSpec, ContainsSpec, Outcome, Workspace, run_check
from tests.conftest import VERIFIER, case_dict, trace_dict


class Counted(str):
    """A string that counts the equality tests made on it: a list membership test makes one per item."""

    __slots__ = ()
    compared: ClassVar[int] = 0

    def __eq__(self, other: object) -> bool:
        Counted.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


@pytest.fixture
def counted() -> Iterator[type[Counted]]:
    text._fold_short_needle.cache_clear()  # a needle found in the cache would be compared with its equal
    Counted.compared = 0
    yield Counted
    text._fold_short_needle.cache_clear()


def calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[Any]:
    """Replace `owner.name` with a wrapper that records each call's first argument, and return the record."""
    seen: list[Any] = []
    real: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[0] if args else None)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, wrapper)
    return seen


def write(root: Path, files: dict[str, Any]) -> Path:
    """Create files under root: str as given, anything else as JSON."""
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


def trace_of(**overrides: Any) -> Trace:
    trace = parse_trace(json.dumps(trace_dict(**overrides)).encode(), "f.json")
    assert isinstance(trace, Trace)
    return trace


def using(tools: list[str]) -> Trace:
    """A trace whose only tools seen are `tools`."""
    invocations = [{"toolName": tool} for tool in tools]
    return trace_of(**{"toolInvocations": invocations, f"{VERIFIER}.tool_trace_summary": []})


# ---- trace ---------------------------------------------------------------------------------------------


def test_keyword_coverage_compares_each_keyword_once(counted: type[Counted]) -> None:
    """Half of 2,000 keywords in the answer: the missing ones are found with a set, not by scanning the found
    list for each keyword (which made about a million comparisons), and listed in the case's order."""
    n = 2_000
    keywords = [counted(f"k{i:05d}") for i in range(n)]
    case = TraceCase.model_validate(case_dict()).model_copy(update={"expected_root_cause_keywords": keywords})
    trace = trace_of(**{"session.answer": " ".join(keywords[::2])})
    counted.compared = 0

    messages = trace_checks.keyword_coverage(case, trace)

    assert counted.compared < n
    missing = ", ".join(f"'k{i:05d}'" for i in range(1, 24, 2))
    assert messages == [f"answer matches 1000 of the root-cause keywords, needs 2000; missing {missing}, … 988 more"]


def test_thousands_of_missing_tools_make_short_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 required tools (the most a case may list) never used, in a trace that used 3,000 others: one message
    per missing tool, as before, but the tools seen are sorted and quoted once and each message names only the
    first dozen (each message listed all 3,000, and the report grew with the product)."""
    quoted = calls(monkeypatch, trace_checks, "_quote")
    required = [f"missing_{i:05d}" for i in range(1_000)]
    case = TraceCase.model_validate(case_dict(requiredEvidenceTools=required))
    trace = using([f"tool_{i:05d}" for i in range(3_000)])

    messages = trace_checks.missing_evidence_tool(case, trace)

    assert len(quoted) == 1
    seen = ", ".join(f"'tool_{i:05d}'" for i in range(12)) + ", … 2,988 more"
    assert messages == [f"required tool '{tool}' was never used (tools seen: {seen})" for tool in required]
    assert max(map(len, messages)) < 300


def test_a_long_tool_name_is_cut_in_every_message() -> None:
    """A tool name of a megabyte, repeated in each of 100 messages, would make a 100 MB report from a 1 MB trace."""
    case = TraceCase.model_validate(case_dict(requiredEvidenceTools=[f"missing_{i}" for i in range(100)]))
    trace = using(["x" * 1_000_000])

    messages = trace_checks.missing_evidence_tool(case, trace)

    assert len(messages) == 100
    assert messages[0] == f"required tool 'missing_0' was never used (tools seen: '{'x' * 99}…')"


def test_up_to_a_dozen_names_are_listed_as_before() -> None:
    """Up to a dozen names read exactly as before the cap; past it, the first dozen and how many more."""
    case = TraceCase.model_validate(case_dict(requiredEvidenceTools=["needed"]))
    dozen = ", ".join(f"'t{i:02d}'" for i in range(12))
    for count, said in [(0, "none"), (1, "'t00'"), (12, dozen), (13, dozen + ", … 1 more")]:
        messages = trace_checks.missing_evidence_tool(case, using([f"t{i:02d}" for i in range(count)]))
        assert messages == [f"required tool 'needed' was never used (tools seen: {said})"], count


def test_cases_that_share_an_answer_search_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hostile review's suite, scaled down: defaults with lists of phrases never found, ten cases on one fixture.
    The answer was normalised, and each phrase searched for, in every case; now once per run of cases with the same
    answer (a case on another fixture in between starts a new run). Remembered phrases are charged to the budget
    all the same, so every case on the fixture stops at the same phrase."""
    monkeypatch.setattr(search, "MAX_SEARCH_STEPS", 60)  # an answer under 1,000 characters costs 1 step a phrase
    lists = {"forbiddenAnswerKeywords": "f", "forbiddenConfirmedClaimKeywords": "c", "expectedRootCauseKeywords": "k"}
    defaults: dict[str, Any] = {name: [f"{p}{i:03d}zq" for i in range(100)] for name, p in lists.items()}
    fixtures = write(tmp_path, {"a.json": trace_dict(**{"session.answer": "a" * 40}), "b.json": trace_dict()})
    names = ["a.json"] * 5 + ["b.json"] + ["a.json"] * 4
    cases = [{"id": f"c{i}", "traceFixture": name} for i, name in enumerate(names)]
    suite = parse_case_file(json.dumps({"defaults": {**defaults, "minKeywordMatches": 0}, "cases": cases}), "c.json")
    folded = calls(monkeypatch, search, "fold")

    report = evaluate_suite(suite, fixtures)

    answers = [text for text in folded if not text.endswith("zq")]
    assert answers == ["a" * 40, trace_dict()["session"]["answer"], "a" * 40]
    assert len(folded) == 3 + 3 * 3 * 60  # each list looked for up to the budget, once per run of cases
    note = "one check may spend 60 steps, one per phrase per 1,000 characters of the answer"
    a = [
        f"forbidden_answer_keyword: stopped after looking for 60 of the 100 forbiddenAnswerKeywords: {note} (40 once "
        "normalised); list fewer phrases in the case",
        f"forbidden_confirmed_claim: stopped after looking for 60 of the 100 forbiddenConfirmedClaimKeywords: {note} "
        "(40 once normalised); list fewer phrases in the case",
    ]
    assert [r.failed_checks for r in report.results] == [a] * 5 + [report.results[5].failed_checks] + [a] * 4
    assert report.results[5].failed_checks[0].endswith("(87 once normalised); list fewer phrases in the case")


# ---- workspace -----------------------------------------------------------------------------------------


def test_contains_compares_each_needle_once(tmp_path: Path, counted: type[Counted]) -> None:
    """`all` of 2,000 strings, half of them in the file: missing ones found with a set, named a dozen at a time."""
    n = 2_000
    needles = [counted(f"k{i:05d}") for i in range(n)]
    root = write(tmp_path, {"a.txt": " ".join(needles[::2])})
    spec = ContainsSpec.model_validate({"file": "a.txt", "all": ["x"]}).model_copy(update={"all_of": needles})
    counted.compared = 0

    passed, detail = workspace_checks._contains_file(Workspace(str(root)), "a.txt", spec)

    assert counted.compared < n
    assert not passed
    found = ", ".join(f"k{i:05d}" for i in range(0, 24, 2))
    missing = ", ".join(f"k{i:05d}" for i in range(1, 24, 2))
    assert detail == f"found {found}, ...and 988 more; missing {missing}, ...and 988 more"


def test_contains_names_up_to_a_dozen_needles_as_before(tmp_path: Path) -> None:
    """A detail names a dozen needles as it did before the cap; past it, the first dozen and how many more."""
    ws = Workspace(str(write(tmp_path, {"a.txt": "n01 is here"})))
    dozen = ", ".join(f"n{i:02d}" for i in [0, *range(2, 13)])  # n01 is found
    for count, said in [(2, "missing n00"), (13, f"missing {dozen}"), (14, f"missing {dozen}, ...and 1 more")]:
        needles = [f"n{i:02d}" for i in range(count)]
        result = run_check(ws, CheckSpec.model_validate({"id": "c", "contains": {"file": "a.txt", "all": needles}}))
        assert result == Outcome(False, f"a.txt: found n01; {said}"), count


def specs(count: int, **kind: Any) -> list[CheckSpec]:
    return [CheckSpec.model_validate({"id": f"c{i}", **kind}) for i in range(count)]


def test_a_file_is_normalised_once_however_many_checks_search_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 contains checks on two non-ASCII files: NFKC runs once per file (it ran once per check per file)."""
    root = write(tmp_path, {"a.txt": "ｌｏｒｅｍ ①" * 100, "b.txt": "ｉｐｓｕｍ ﬂ ﬁ" * 100})
    folded = calls(monkeypatch, workspace_checks, "fold")
    ws = Workspace(str(root))

    outcomes = [run_check(ws, check) for check in specs(200, contains={"file": "*.txt", "any": ["needle", "fi"]})]

    assert len(folded) == 2
    assert outcomes == [Outcome(True, "b.txt: found fi; missing needle")] * 200


def test_a_file_is_checked_as_json_once_however_many_checks_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """200 json_valid checks on one file parse it once (each check parsed the whole file again)."""
    root = write(tmp_path, {"a.json": {"k": list(range(1_000))}})
    parsed = calls(monkeypatch, workspace_checks, "_parse")
    ws = Workspace(str(root))

    outcomes = [run_check(ws, check) for check in specs(200, json_valid="a.json")]

    assert len(parsed) == 1
    assert outcomes == [Outcome(True, "a.json: valid JSON")] * 200


class CountingRegex:
    """A compiled glob that counts the paths tested against it."""

    tested = 0

    def __init__(self, regex: re.Pattern[str]) -> None:
        self.regex = regex

    def fullmatch(self, path: str) -> re.Match[str] | None:
        CountingRegex.tested += 1
        return self.regex.fullmatch(path)


@pytest.fixture
def counting_globs(monkeypatch: pytest.MonkeyPatch) -> type[CountingRegex]:
    real = workspace_checks._glob
    CountingRegex.tested = 0

    def glob(pattern: str) -> tuple[str | None, str | None, Any]:
        literal, folder, regex = real(pattern)
        return literal, folder, CountingRegex(regex)

    monkeypatch.setattr(workspace_checks, "_glob", glob)
    return CountingRegex


def test_a_glob_is_matched_once_however_many_checks_use_it(tmp_path: Path, counting_globs: type[CountingRegex]) -> None:
    """300 checks of one `**` glob and 300 of one folder's glob over 500 files: each path is tested once per
    distinct glob (each check tested the whole listing again: 300,000 tests)."""
    files = 500
    root = write(tmp_path, {f"sub/f{i:04d}.txt": "" for i in range(files)} | {"sub/zz.md": "# hit"})
    ws = Workspace(str(root))
    checks = specs(300, file_exists="**/zz*.md") + specs(300, file_absent="sub/f0*.txt")

    outcomes = [run_check(ws, check) for check in checks]

    assert counting_globs.tested == 2 * (files + 1)
    assert outcomes[:300] == [Outcome(True, "found sub/zz.md")] * 300
    assert outcomes[300:] == [Outcome(False, "present: sub/f0000.txt, sub/f0001.txt, sub/f0002.txt")] * 300


def test_the_memo_of_glob_matches_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting_globs: type[CountingRegex]
) -> None:
    """Distinct globs that each match much are forgotten oldest first past MAX_MATCHES_KEPT paths, so the memo
    cannot hold the product of globs and files; a forgotten glob is matched again, with the same result."""
    monkeypatch.setattr(workspace_checks, "MAX_MATCHES_KEPT", 25)
    root = write(tmp_path, {f"f{i:02d}.txt": "" for i in range(10)})
    ws = Workspace(str(root))
    first = ws.match("**/f0*.txt")
    for n in range(1, 4):  # each matches all ten: the third one over pushes out the first
        ws.match("**/" + "*" * n + ".txt")
    assert counting_globs.tested == 4 * 10

    assert ws.match("**/f0*.txt") == first == ([f"f{i:02d}.txt" for i in range(10)], [])
    assert counting_globs.tested == 5 * 10
    assert ws.match("**/***.txt") == first  # still kept: not matched again
    assert counting_globs.tested == 5 * 10


def test_refused_entries_are_named_a_few_at_a_time(tmp_path: Path) -> None:
    """A glob matching 500 links that lead outside the workspace: each of 100 checks' details names three and
    counts the rest (each detail named all 500, and the report grew with checks times links)."""
    outside = write(tmp_path / "outside", {"secret.md": "x"}) / "secret.md"
    root = write(tmp_path / "run", {"keep.txt": ""})
    (root / "sub").mkdir()
    for i in range(500):
        os.symlink(outside, root / "sub" / f"l{i:03d}.md")
    ws = Workspace(str(root))

    outcomes = [run_check(ws, check) for check in specs(100, file_exists="**/*.md")]

    link = "is a link that resolves outside the workspace (treated as absent)"
    shown = "; ".join(f"sub/l{i:03d}.md {link}" for i in range(3))
    detail = f"no file matches '**/*.md'; {shown}; ...and 497 more matching entries that are not read as files"
    assert outcomes == [Outcome(False, detail)] * 100


def test_the_root_is_resolved_once_however_many_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each link is resolved to see where it leads; the workspace root itself only once (it was once per link)."""
    root = write(tmp_path / "run", {"a.txt": "x"})
    for i in range(200):
        os.symlink(root / "a.txt", root / f"l{i:03d}.txt")
    resolved = calls(monkeypatch, workspace_checks.os.path, "realpath")

    ws = Workspace(str(root))

    assert len(resolved) == 200 + 1
    assert ws.match("l00*.txt") == ([f"l{i:03d}.txt" for i in range(10)], [])


def test_a_case_lists_at_most_a_thousand_keywords_or_needles(tmp_path: Path) -> None:
    """Each keyword or needle is searched for in the whole answer or file, so a list's length multiplies the work
    of its check: the lists are held to 1,000 items when the case loads."""
    many = [f"k{i}" for i in range(1_001)]
    with pytest.raises(CaseFileError) as caught:
        parse_case_file(json.dumps([case_dict(expectedRootCauseKeywords=many)]), "cases.json")
    assert "expectedRootCauseKeywords': list should have at most 1000 items" in caught.value.problems[0]
    assert TraceCase.model_validate(case_dict(expectedRootCauseKeywords=many[:1_000]))
    with pytest.raises(ValueError, match="at most 1000 items"):
        ContainsSpec.model_validate({"file": "a.txt", "all": many})


# ---- one work budget per workspace case ----------------------------------------------------------------

BUDGET_FILES = {"a.txt": "ab" * 5_000, "b.json": {"k": list(range(1_000))}, "u.txt": "é" * 1_000}


@pytest.mark.parametrize(
    ("kind", "spent"),
    [
        pytest.param({"file_exists": "a.txt"}, 1 + 1, id="check+path"),
        # a glob of the root folder: a step, one per path tested (3), one per 100 characters of them (16: none)
        # file_absent then looks for entries that are not files: a step, the 3 paths again, the 1 folder listed
        pytest.param({"file_absent": "*.md"}, 1 + (1 + 3 + 0) + (1 + 3 + 1), id="check+glob"),
        # read 10,000 bytes: 1 + 10; normalise 10,000 ASCII characters: 1 + 100; 7 phrases in them: 7 x (1 + 10)
        pytest.param(
            {"contains": {"file": "a.txt", "all": [f"n{i}" for i in range(7)]}},
            1 + 1 + 1 + 11 + 101 + 7 * 11,
            id="contains-ascii",
        ),
        # 2,000 bytes read: 1 + 2; 1,000 characters that are not ASCII: 1 + 500; one phrase: 1 + 1
        pytest.param({"contains": {"file": "u.txt", "any": ["É"]}}, 1 + 1 + 1 + 3 + 501 + 2, id="contains-nfkc"),
        # 57 instructions over 10,000 bytes: 1 + 570,000 / 200
        pytest.param(
            {"regex": {"file": "a.txt", "pattern": "[ab]*a[ab]{50}c"}}, 1 + 1 + 1 + 11 + 2_851, id="regex-slow-path"
        ),
        # 8 instructions; the glob tests the root's 3 paths; a.txt matches, so u.txt is never read
        pytest.param({"regex": {"file": "*.txt", "pattern": "ba+b"}}, 1 + 4 + 1 + 11 + 401, id="regex-first-file"),
        # 4,897 bytes read (1 + 4), and parsed (1 + 4,897 / 4)
        pytest.param({"json_valid": "b.json"}, 1 + 1 + 1 + 5 + 1_225, id="json_valid"),
    ],
)
def test_the_case_budget_is_charged_for_the_work_each_check_does(
    tmp_path: Path, kind: dict[str, Any], spent: int
) -> None:
    """A step is roughly a microsecond of work: each check's step, then what it does, at the rates of `checks`."""
    ws = Workspace(str(write(tmp_path, BUDGET_FILES)))
    run_check(ws, CheckSpec.model_validate({"id": "c", **kind}))
    assert ws.spent == spent


def test_a_query_is_charged_the_steps_it_took(tmp_path: Path) -> None:
    ws = Workspace(str(write(tmp_path, BUDGET_FILES)))
    expr = "k[?@ > `998`]"
    assert run_check(ws, CheckSpec.model_validate({"id": "q", "json_query": {"file": "b.json", "expr": expr}})) == (
        Outcome(True, "b.json: k[?@ > `998`] -> [999]")
    )
    steps = query_steps()
    assert steps > 1_000  # a step per item filtered, at least
    assert ws.spent == 1 + 1 + 1 + 5 + 1_225 + 1 + steps


def test_what_is_done_once_per_case_is_charged_once(tmp_path: Path) -> None:
    """The second check on the same file and glob pays for its own search only: the file was read, normalised
    and listed for the first."""
    ws = Workspace(str(write(tmp_path, BUDGET_FILES)))
    check = CheckSpec.model_validate({"id": "c", "contains": {"file": "a.txt", "any": ["n0"]}})
    run_check(ws, check)
    first = ws.spent
    run_check(ws, check)
    assert (first, ws.spent - first) == (1 + 1 + 1 + 11 + 101 + 11, 1 + 1 + 11)


def stopped_at(budget: int) -> Outcome:
    return Outcome(
        False,
        f"stopped: the case's checks reached its work budget of {budget:,} steps before this one was decided; "
        "use fewer or narrower checks (narrower globs, fewer phrases, simpler patterns)",
    )


def test_many_phrase_checks_stop_at_the_case_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`contains` checks of 1,000 phrases each on a 100,000-character file: each is charged 1,000 x 101 steps,
    and the checks past the budget search nothing."""
    searched = calls(monkeypatch, text.Folded, "matches")
    budget = 350_000  # the first: 1 + 1 + 1 + 101 (read) + 1,001 (normalised) + 101,000; the next 101,002 each
    monkeypatch.setattr(workspace_checks, "MAX_CASE_STEPS", budget)
    ws = Workspace(str(write(tmp_path, {"a.txt": "x" * 100_000})))
    phrases = [f"p{i:04d}" for i in range(1_000)]

    outcomes = [run_check(ws, check) for check in specs(20, contains={"file": "a.txt", "any": phrases})]

    assert len(searched) == 3
    missing = ", ".join(phrases[:12])
    assert outcomes[:3] == [Outcome(False, f"a.txt: missing {missing}, ...and 988 more")] * 3
    assert outcomes[3:] == [stopped_at(budget)] * 17


def test_distinct_globs_over_many_files_stop_at_the_case_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counting_globs: type[CountingRegex]
) -> None:
    """Distinct `**` globs each test every path (the memo cannot help): each is charged a step per path and per
    100 characters of them, and those past the budget test none."""
    root = write(tmp_path, {f"sub/f{i:04d}.txt": "" for i in range(1_000)})  # 1,000 paths of 13 characters
    per_glob = 1 + (1 + 1_000 + 13_000 // 100)  # the check, then the glob
    monkeypatch.setattr(workspace_checks, "MAX_CASE_STEPS", 5 * per_glob)
    ws = Workspace(str(root))

    outcomes = [run_check(ws, CheckSpec(id=f"g{i}", file_exists=f"**/x{i}*.txt")) for i in range(50)]

    assert counting_globs.tested == 5 * 1_000
    assert outcomes[:5] == [Outcome(False, f"no file matches '**/x{i}*.txt'") for i in range(5)]
    assert outcomes[5:] == [stopped_at(5 * per_glob)] * 45
