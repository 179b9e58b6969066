"""diagbot.yml and agent case files sized to stall the messages about them: the suggestions for typos and the
lists in a message are bounded per suite and per config, not multiplied by what else the input holds. No test here
times anything: each counts the work done (difflib lookups, sorts) or bounds what a message says. Measured with the
CLI when these were found: 1,000 unknown rule names against 1,000 rules 16.8 s, against 10,000 rules 19 s and
413 MB; 29,000 suites each missing `fixtures` and carrying an unknown key 16.7 s."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from diagbot.core import text
from diagbot.core.errors import CaseFileError
from diagbot.io import config
from diagbot.kinds.agent import load
from diagbot.kinds.agent.cases import Check
from tests.test_agent_checks import case_data, make_case
from tests.test_config import problems as config_problems

DEFINE = "; define it under the suite's rules in diagbot.yml"


def agent_case(case_id: str, **overrides: Any) -> dict[str, Any]:
    """The smallest valid agent case (P2, so negative_behavior is not required), with `overrides`."""
    return case_data(case_id=case_id, **overrides)


def rules(names: Iterable[str]) -> dict[str, Check]:
    check = Check.model_validate({"max_turns": 1})
    return dict.fromkeys(names, check)


def load_problems(tmp_path: Path, data: Any, suite_rules: dict[str, Check] | None = None) -> list[str]:
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "cases.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(CaseFileError) as info:
        load.load_cases(folder, "cases", suite_rules or {})
    return info.value.problems


def counting(monkeypatch: pytest.MonkeyPatch, module: Any) -> Counter[str]:
    """Count the `closest` lookups `module` makes, by name looked up: its own calls, and those of the shared
    `text.Suggestions` it uses."""
    calls: Counter[str] = Counter()
    real: Callable[..., str | None] = text.closest

    def closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
        calls[name] += 1
        return real(name, known, cutoff)

    monkeypatch.setattr(text, "closest", closest)
    if hasattr(module, "closest"):
        monkeypatch.setattr(module, "closest", closest)
    return calls


def unknown_rule_cases(refs: list[str], per_case: int = 1_000) -> list[dict[str, Any]]:
    return [
        agent_case(f"c{i}", evaluator_config={"rule_checks": refs[start : start + per_case]})
        for i, start in enumerate(range(0, len(refs), per_case))
    ]


# --- rule names ----------------------------------------------------------------------------------------------------


def test_unknown_rule_names_against_many_rules_are_compared_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 unknown rule names (2,000 distinct, near misses) in a suite of 5,000 rules: each lookup is a difflib
    pass over every rule, and all of them were looked up, one per reference (the listing of all 5,000 rules was
    also joined into every message)."""
    calls = counting(monkeypatch, load)
    defined = rules(f"rule_{i:05d}" for i in range(5_000))
    refs = [f"rulx_{i:05d}" for i in range(1_000)] * 2 + [f"rulx_{i:05d}" for i in range(1_000, 2_000)]
    problems = load_problems(tmp_path, unknown_rule_cases(refs), defined)

    assert len(problems) == 3_000
    assert max(calls.values()) == 1  # no name looked up twice
    assert 1 <= sum(calls.values()) <= load.MAX_RULE_COMPARISONS // 5_000
    listed = ", ".join(f"rule_{i:05d}" for i in range(12)) + ", … 4988 more"
    assert problems[0] == (
        f"cases/cases.json:1: case c0: evaluator_config.rule_checks[0]: unknown rule 'rulx_00000' "
        f"(did you mean rule_00000?){DEFINE}"
    )
    assert problems[-1] == (
        "cases/cases.json:1: case c2: evaluator_config.rule_checks[999]: unknown rule 'rulx_01999' (not compared "
        "with the suite's rules: its case files name too many unknown ones); the suite defines "
        f"{listed}{DEFINE}"
    )
    # a repeated name gets the answer its first lookup gave
    first = {p.split("unknown rule ")[1] for p in problems if "case c0:" in p}
    again = {p.split("unknown rule ")[1] for p in problems if "case c1:" in p}
    assert first == again
    for problem in problems:
        assert len(problem) < 500
        assert problem.endswith(DEFINE)
        assert "(did you mean" in problem or problem.endswith(f"the suite defines {listed}{DEFINE}")


def test_a_small_rule_set_still_suggests_for_every_distinct_name_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With three rules a lookup is cheap, so every distinct unknown name gets one; a name repeated in 1,000 cases
    is looked up once, not once per case."""
    calls = counting(monkeypatch, load)
    defined = rules(["no_privacy_leak", "max_turns_ok", "polite"])
    cases = [agent_case(f"c{i}", evaluator_config={"rule_checks": ["no_privacy_lek", f"zz{i}"]}) for i in range(1_000)]
    problems = load_problems(tmp_path, cases, defined)

    assert calls["no_privacy_lek"] == 1
    assert len(calls) == 1_001 and max(calls.values()) == 1
    assert problems[0] == (
        "cases/cases.json:1: case c0: evaluator_config.rule_checks[0]: unknown rule 'no_privacy_lek' "
        f"(did you mean no_privacy_leak?){DEFINE}"
    )
    assert problems[-1] == (
        "cases/cases.json:1: case c999: evaluator_config.rule_checks[1]: unknown rule 'zz999'; the suite defines "
        f"max_turns_ok, no_privacy_leak, polite{DEFINE}"
    )


def test_the_rules_a_suite_defines_are_listed_up_to_twelve(tmp_path: Path) -> None:
    """Twelve rules are listed whole, as before; from thirteen on, the first twelve and how many more."""
    first = ", ".join(f"r{i:05d}" for i in range(12))
    for count, listed in [(12, first), (13, f"{first}, … 1 more"), (10_000, f"{first}, … 9988 more")]:
        defined = rules(f"r{i:05d}" for i in range(count))
        case = agent_case("c0", evaluator_config={"rule_checks": ["QQQQQQQQQQ"]})
        assert load_problems(tmp_path, [case], defined) == [
            "cases/cases.json:1: case c0: evaluator_config.rule_checks[0]: unknown rule 'QQQQQQQQQQ'; the suite "
            f"defines {listed}{DEFINE}"
        ]


def test_the_rule_listing_is_built_once_per_suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 cases each naming an unknown rule in a suite of 2,000 rules: the rules were sorted and joined for each
    reference; now once when the suite's cases are read."""
    listings: list[int] = []
    real = load.listing

    def listing(names: Any, most: int = 12) -> str:
        listings.append(len(names))
        return real(names, most)

    monkeypatch.setattr(load, "listing", listing)
    defined = rules(f"rule_{i:04d}" for i in range(2_000))
    cases = [agent_case(f"c{i}", evaluator_config={"rule_checks": [f"Q{i:09d}"]}) for i in range(1_000)]
    problems = load_problems(tmp_path, cases, defined)
    assert len(problems) == 1_000
    assert listings.count(2_000) == 1


# --- misspelt fields -----------------------------------------------------------------------------------------------


def test_misspelt_fields_are_given_suggestions_within_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5,000 unknown fields in one case and 5,000 in the file's defaults: each was a difflib pass over the known
    field names (80,000 took 18 s); now the first FIELD_SUGGESTIONS distinct ones of the suite are."""
    calls = counting(monkeypatch, load)
    case = agent_case("c0", **{f"titel{i}": 1 for i in range(5_000)})
    problems = load_problems(tmp_path, {"defaults": {f"rubrik{i}": 1 for i in range(5_000)}, "cases": [case]})

    assert len(problems) == 202  # each side's first 100 after its count (800,000 keys were as many lines)
    assert sum(calls.values()) == load.FIELD_SUGGESTIONS
    assert problems[:2] == [
        "cases/cases.json: defaults: 5,000 problems; the first 100 follow, fix them and run diagbot validate again "
        "for the rest",
        "cases/cases.json:1: defaults: unknown field 'rubrik0' (did you mean rubric?)",
    ]
    assert problems[-1] == "cases/cases.json:1: case c0: unknown field 'titel99'"


def test_the_same_misspelt_field_in_many_cases_is_looked_up_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counting(monkeypatch, load)
    problems = load_problems(tmp_path, [agent_case(f"c{i}", titel="x") for i in range(2_000)])
    assert calls == {"titel": 1}
    assert problems == [
        f"cases/cases.json:1: case c{i}: unknown field 'titel' (did you mean title?)" for i in range(2_000)
    ]


def test_unknown_top_level_keys_are_listed_up_to_twelve(tmp_path: Path) -> None:
    data: dict[str, Any] = {"cases": [agent_case("c0")], **{f"k{i:05d}": 1 for i in range(10_000)}}
    listed = ", ".join(f"k{i:05d}" for i in range(12))
    assert load_problems(tmp_path, data) == [
        f"cases/cases.json: unknown top-level key(s) {listed}, … 9988 more; a file with 'cases' may also have "
        "'defaults'"
    ]
    assert load_problems(tmp_path, {"cases": [agent_case("c0")], "case": 1}) == [
        "cases/cases.json: unknown top-level key(s) case; a file with 'cases' may also have 'defaults'"
    ]
    # a misspelt wrapper key is named with the key it misspells, not read as a case with 17 problems
    assert load_problems(tmp_path, {"cases": [agent_case("c0")], "default": {}}) == [
        "cases/cases.json: unknown top-level key(s) default ('default': did you mean defaults?); a file with 'cases' "
        "may also have 'defaults'"
    ]
    assert load_problems(tmp_path, {"defaults": {}, "case": [agent_case("c0")]}) == [
        "cases/cases.json: has 'defaults' but no 'cases' ('case': did you mean cases?); a file of {defaults, cases} "
        "lists its cases under 'cases'"
    ]


# --- diagbot.yml ---------------------------------------------------------------------------------------------------


def many_suites(count: int, line: Callable[[int], str], tail: str = "") -> str:
    return "suites:\n" + "".join(f"- {line(i)}\n" for i in range(count)) + tail


def broken_suite(i: int) -> str:
    """Every third suite lacks `fixtures` and has an unknown key, every third only the unknown key, the rest are
    fine."""
    if i % 3 == 0:
        return f"{{name: s{i}, cases: c, zz: 1}}"
    if i % 3 == 1:
        return f"{{name: s{i}, cases: c, fixtures: f, zz: 1}}"
    return f"{{name: s{i}, cases: c, fixtures: f}}"


def expected_config_problems(count: int, tail: list[str]) -> list[str]:
    """Each suite's own problems after the previous suite's and before the next one's, its unknown keys after its
    other problems; a problem outside `suites` after all of them."""
    problems = []
    for i in range(count):
        if i % 3 == 0:
            problems.append(f"diagbot.yml: suites.{i}.fixtures: Field required")
        if i % 3 != 2:
            problems.append(f"diagbot.yml: unknown key 'suites.{i}.zz'")
    return problems + tail


def test_thousands_of_broken_suites_keep_the_order_with_one_sort(monkeypatch: pytest.MonkeyPatch) -> None:
    """48 suites (6,000 before a run was held to 50), 32 of them with an unknown key and 16 of those also missing
    `fixtures`: the suites with unknown keys were sorted again (all the remaining ones) for each error; now they
    are sorted once and merged into the errors in the same order."""
    sorts: list[int] = []

    def counted_sorted(items: Iterable[Any], **kwargs: Any) -> list[Any]:
        found = sorted(items, **kwargs)
        sorts.append(len(found))
        return found

    tail = "thresholds: {duration-pc: 3}\n"
    # the order the messages had before, pinned on a small config
    assert config_problems(many_suites(4, broken_suite, tail)) == [
        "diagbot.yml: suites.0.fixtures: Field required",
        "diagbot.yml: unknown key 'suites.0.zz'",
        "diagbot.yml: unknown key 'suites.1.zz'",
        "diagbot.yml: suites.3.fixtures: Field required",
        "diagbot.yml: unknown key 'suites.3.zz'",
        "diagbot.yml: unknown key 'thresholds.duration-pc' (did you mean duration-pct?)",
    ]
    assert config_problems(many_suites(4, broken_suite)) == expected_config_problems(4, [])

    monkeypatch.setattr(config, "sorted", counted_sorted, raising=False)
    problems = config_problems(many_suites(48, broken_suite, tail))
    assert problems == expected_config_problems(
        48, ["diagbot.yml: unknown key 'thresholds.duration-pc' (did you mean duration-pct?)"]
    )
    assert sorts == [32]  # the 32 suites with unknown keys, sorted once (and nothing per error)


def test_unknown_kind_keys_of_many_suites_are_given_suggestions_within_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """50 agent suites, each with one misspelt key of its own and the same misspelt `trace-formt`: one lookup
    for the key they share, and at most MAX_SUGGESTIONS (20 here) for the others."""
    monkeypatch.setattr(config, "MAX_SUGGESTIONS", 20)
    calls = counting(monkeypatch, config)
    line = "{{name: s{0}, kind: agent, cases: c, fixtures: f, trace-formt: auto, trace-formt{0}: auto}}".format
    problems = config_problems(many_suites(50, line))
    assert len(problems) == 100
    assert calls["trace-formt"] == 1
    assert sum(calls.values()) <= 20
    assert problems[:2] == [
        "diagbot.yml: unknown key 'suites.0.trace-formt' (did you mean trace-format?)",
        "diagbot.yml: unknown key 'suites.0.trace-formt0' (did you mean trace-format?)",
    ]
    assert problems[-2:] == [
        "diagbot.yml: unknown key 'suites.49.trace-formt' (did you mean trace-format?)",
        "diagbot.yml: unknown key 'suites.49.trace-formt49'",
    ]


def test_repeated_suite_names_are_listed_up_to_twelve() -> None:
    text = many_suites(50, lambda i: f"{{name: s{i // 2:04d}, cases: c, fixtures: f}}")
    listed = ", ".join(f"s{i:04d}" for i in range(12))
    assert config_problems(text) == [f"diagbot.yml: suites: suite names must be unique; repeated: {listed}, … 13 more"]


def test_a_config_of_more_suites_than_a_run_may_have_is_refused() -> None:
    """51 suites ran for minutes, then the pull-request record for the fork relay (50 suites at most) failed."""
    fifty = many_suites(50, lambda i: f"{{name: s{i}, cases: c, fixtures: f}}")
    assert len(config.parse_config(fifty, "diagbot.yml", Path(".")).suites) == 50
    assert config_problems(many_suites(4_000, lambda i: f"{{name: s{i}, cases: c, fixtures: f}}")) == [
        "diagbot.yml: suites: 4000 suites, more than the 50 a run may have; merge suites, or split the config and "
        "run diagbot once for each part"
    ]


def test_an_unknown_rule_name_is_escaped_to_one_line_and_cut() -> None:
    """The name comes from a case file: a newline in it started a new log line (`::error::` is a workflow
    command), and a 50,000-character name filled the problem."""
    for ref, shown in (("x\n::error::y", "x\\n::error::y"), ("r" * 50_000, "r" * 199 + "…")):
        case = make_case(evaluator_config={"rule_checks": [ref]})
        assert load.case_problems(case, {}) == [
            f"evaluator_config.rule_checks[0]: unknown rule '{shown}'; define it under the suite's rules in diagbot.yml"
        ]
