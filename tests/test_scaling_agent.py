"""Agent checks on inputs sized to stall them: the work is bounded by the check budget, not by the product of what
a case asks and what a run holds. No test here times anything: each counts the work done, or shows that the budget
now stops what used to run for tens of seconds (measured with the CLI when these were found: a 1,000-item
unordered sequence 21 s, 1,000 forbidden transitions over 1,000 changes 12 s, 40 queries over a 400,000-item
state 37 s per trial, a baseline claiming 4,000 trials 54 s)."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagbot.core.errors import ReportFormatError
from diagbot.core.regex import compile_regex
from diagbot.kinds.agent import checks
from diagbot.kinds.agent.kind import AgentKind
from diagbot.kinds.agent.match import args_fit, args_mismatch, max_matching
from diagbot.kinds.agent.schema_check import first_error, unknown_keywords
from diagbot.kinds.registry import parse_any_report
from tests.conftest import write_json
from tests.test_agent_checks import NO_AUDIT, change, evaluate, failures, make_case, native, say, sequence_case
from tests.test_agent_checks import call as step

STOPPED = (
    "stopped after 2,000,000 comparisons, the limit for one check on one run; the case asks for more than "
    "diagbot compares (fewer expected items, policies or criteria would do)"
)


def _brute_force(adjacent: list[list[bool]]) -> int:
    """The size of a maximum matching, by trying every choice (small graphs only)."""

    def best(i: int, used: frozenset[int]) -> int:
        if i == len(adjacent):
            return 0
        found = best(i + 1, used)
        for j, fits in enumerate(adjacent[i]):
            if fits and j not in used:
                found = max(found, 1 + best(i + 1, used | {j}))
        return found

    return best(0, frozenset())


def test_max_matching_is_maximum_one_to_one_and_only_uses_fitting_pairs() -> None:
    rng = random.Random(7)
    for _ in range(2_000):
        rows, cols = rng.randint(0, 6), rng.randint(0, 6)
        adjacent = [[rng.random() < 0.4 for _ in range(cols)] for _ in range(rows)]
        pairing = max_matching(range(rows), range(cols), lambda i, j, a=adjacent: a[i][j])
        taken = [j for j in pairing if j is not None]
        assert len(taken) == len(set(taken))
        assert all(adjacent[i][j] for i, j in enumerate(pairing) if j is not None)
        assert len(taken) == _brute_force(adjacent)


def test_max_matching_visits_each_edge_a_bounded_number_of_times() -> None:
    """1,000 items that all fit 500 calls: Kuhn's search restarted from scratch for each of the 500 that cannot be
    paired walked the whole graph each time (O(V * E)); failed searches now share their marks."""
    steps: list[int] = []
    pairing = max_matching(range(1_000), range(500), lambda i, j: True, steps.append)
    assert sum(j is not None for j in pairing) == 500
    assert sum(steps) <= 2 * 1_000 * 500  # each edge at most about twice, not once per search (250 million)


def test_a_long_superset_sequence_is_decided_within_the_budget() -> None:
    """1,000 expected calls (the most a case may list) against 500 calls of the tool: 500 items cannot be paired,
    and each of their searches used to walk all 500,000 edges again (17 s); now they are decided together."""
    found = failures(sequence_case(["t"] * 1_000, "superset"), native(*(step("t") for _ in range(500))))
    assert found == [
        "tool_sequence_mismatch: expected [t, t, t, t, t, t, t, t, t, t, t, t, … 988 more] (superset), calls in "
        "scope [t, t, t, t, t, t, t, t, t, t, t, t, … 488 more]: no distinct call matches t, t, t, t, t, t, t, t, "
        "t, t, t, t, … 488 more"
    ]


def test_loose_items_do_not_spend_the_budget_taking_the_calls_strict_ones_need() -> None:
    """200 loose items (any call of `a`) and 200 strict ones (`a` with k=1), against 200 calls with k=1 and 200
    with k=2: the greedy pass gave the loose items the k=1 calls, and each repair walked the whole dense block
    again, 9.4 million edge visits, so a case that holds failed on the budget. Items with the fewest choices now
    take their calls first."""
    expected = ["a"] * 200 + [{"tool": "a", "args": {"k": 1}}] * 200
    doc = native(*(step("a", {"k": 1}) for _ in range(200)), *(step("a", {"k": 2}) for _ in range(200)))
    assert failures(sequence_case(expected, "superset"), doc) == []
    assert failures(sequence_case(expected, "unordered"), doc) == []
    sets = make_case(expected_args={"a": [{}] * 150 + [{"k": 1}] * 150})
    doc = native(*(step("a", {"k": 1}) for _ in range(150)), *(step("a", {"k": 2}) for _ in range(150)))
    assert failures(sets, doc) == []


def test_transition_comparisons_are_charged_by_the_values_compared() -> None:
    """300 forbidden items whose `from` is a 100-item list, over 200 changes: 60,000 pairings were charged, but
    each compared up to 100 values, and none of it stopped."""
    listed = list(range(100))
    policy = {
        "tool": "t",
        "forbidden_state_transition": [{"key": "k", "from": [*listed[:-1], -n], "to": "x"} for n in range(300)],
    }
    case = make_case(side_effect_policy=policy)
    doc = native(*(change("k", listed, "x") for _ in range(200)))
    assert failures(case, doc) == [f"state_transition_forbidden: {STOPPED}"]


def test_the_queries_of_one_case_share_one_budget_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each query had its own 2,000,000 steps, so a case could list as many as its file holds (40 queries over a
    400,000-item state: 37 s per trial). The queries of one run now share MAX_RUN_QUERY_STEPS (made smaller here to
    keep the test quick); past it a query is not run and says so, and a query's own limit still speaks for itself."""
    default = checks.MAX_RUN_QUERY_STEPS
    monkeypatch.setattr(checks, "MAX_RUN_QUERY_STEPS", 1_500_000)
    state = {"items": [{"a": n % 3} for n in range(100_000)], "status": "open"}
    query = {"expr": "length(items[?a == `1`])", "equals": 33_333}  # 333,336 steps
    done = native(say("assistant", "done"), final_state=state)
    many = make_case(final_state_check=[{**query, "id": f"q{n}"} for n in range(6)])
    not_run = (
        "not run: this case's queries on this run took 1,666,680 steps, the most for one run is 1,500,000; fewer "
        "or narrower queries would do"
    )
    assert failures(many, done) == [f"final_state_mismatch: q5: {not_run}"]
    monkeypatch.setattr(checks, "MAX_RUN_QUERY_STEPS", default)
    heavy = {"id": "heavy", "expr": "length(items[*].a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a.a)"}
    status = {"id": "status_done", "expr": "status", "equals": "done"}
    assert failures(make_case(final_state_check=[{**heavy, "equals": 0}, status]), done) == [
        "final_state_mismatch: heavy: stopped after 2,000,000 evaluation steps, the limit for one query on one "
        "file; narrow the query",
        'final_state_mismatch: status_done: expected "done", got "open"',
    ]


def test_a_rule_named_many_times_is_judged_once_and_failed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    judged: list[Any] = []
    original = checks.RULES["answer_contains"]
    monkeypatch.setitem(checks.RULES, "answer_contains", lambda spec, t: judged.append(spec) or original(spec, t))
    rules = {"mentions_refund": checks.Check.model_validate({"answer_contains": {"all": ["refund"]}})}
    case = make_case(evaluator_config={"rule_checks": ["mentions_refund"] * 500})
    assert failures(case, native(say("assistant", "No.")), rules) == [
        'rule_failed: mentions_refund: the answer lacks ["refund"]'
    ]
    assert len(judged) == 1


def test_many_needles_on_a_long_answer_stop_at_the_budget() -> None:
    """A needle is looked for in the whole folded answer: three criteria of 1,000 needles on a 1 MB answer are
    three billion characters searched, now charged a step per needle per 1,000 characters."""
    criteria = [{"answer_contains": {"all": [f"word{k}-{n}" for n in range(1_000)]}} for k in range(3)]
    case = make_case(success_criteria=criteria)
    # the first criterion is judged (1,001,000 steps), the second would pass the budget: it and the third are not
    first, stopped = failures(case, native(say("assistant", "x" * 1_000_000)))
    assert first.startswith('rule_failed: success_criteria[0]: the answer lacks ["word0-0", "word0-1", ')
    assert stopped == f"rule_failed: success_criteria[1]: {STOPPED} (2 criteria from this one on not judged)"
    # on a short answer the same criteria are decided, each listing what it lacks
    found = failures(case, native(say("assistant", "word0-1 word1-1")))
    assert len(found) == 3
    for k, failure in enumerate(found):
        assert failure.startswith(f'rule_failed: success_criteria[{k}]: the answer lacks ["word{k}-0", "word{k}-')


def test_policy_failures_past_those_listed_are_counted_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    labels: list[Any] = []
    original = checks._call_label
    monkeypatch.setattr(checks, "_call_label", lambda run, c: labels.append(c) or original(run, c))
    policies = [{"tool": "submit", "precondition": [{"called": "lookup"}], "audit_requirement": ["operator"]}]
    case = make_case(side_effect_policy=policies)
    found = failures(case, native(*(step("submit") for _ in range(2_000))))
    assert found == [
        *(f"precondition_unmet: submit (call {n}): lookup was not successfully called before it" for n in range(1, 6)),
        "precondition_unmet: and 1995 more like these",
        *(f"audit_missing: submit (call {n}): the audit record lacks operator{NO_AUDIT}" for n in range(1, 6)),
        "audit_missing: and 1995 more like these",
    ]
    assert len(labels) == 10  # 4,000 messages were written before, 3,990 of them thrown away


def test_policies_look_up_their_own_tool_calls() -> None:
    """1,000 policies on distinct tools, each of which used to walk all of a run's calls: grouped by tool once,
    each policy still judges exactly its own tool's calls, in order."""
    policies = [{"tool": f"tool{n}", "audit_requirement": ["operator"]} for n in range(1_000)]
    doc = native(*(step(f"tool{n % 1_000}", audit={"operator": "me"} if n % 7 else {}) for n in range(5_000)))
    found = failures(make_case(side_effect_policy=policies), doc)
    assert found[0] == "audit_missing: tool0 (call 1): the audit record lacks operator"
    assert found[-1] == f"audit_missing: and {sum(1 for n in range(5_000) if n % 7 == 0) - 5} more like these"


FAILED = 'rule_failed: r: the answer lacks ["x"]'


def _stored(trials: int, passed: int) -> dict[str, Any]:
    result = {
        "caseId": "c1", "caseVersion": "v1", "title": "t", "scenario": "s", "riskLevel": "P2", "difficulty": "Easy",
        "abilityTags": [], "datasetId": "d", "datasetVersion": "v1", "datasetRole": "golden", "gating": True,
        "status": "passed", "passed": True, "trials": trials, "trialsPassed": passed,
        "trialResults": [
            {"trial": f"trial-{i}.json", "passed": i <= passed, "failedChecks": [] if i <= passed else [FAILED]}
            for i in range(1, min(trials, 100) + 1)
        ],
        "failedChecks": [FAILED] if passed < trials else [],
    }  # fmt: skip
    return {
        "schemaVersion": 1, "kind": "agent", "totalCases": 1, "passedCases": 1, "uncheckedCases": 0, "passRate": 1.0,
        "passHatK": {}, "gatingCases": 1, "gating": {}, "informational": {}, "datasetVersions": {}, "slices": {},
        "results": [result],
    }  # fmt: skip


def test_a_stored_report_is_held_to_the_trial_bound() -> None:
    """pass^k is computed for every k up to the smallest trial count, so a forged baseline claiming 4,000 trials
    took 54 s to read; a report claims at most the 100 trials diagbot reads, and no more passes than trials."""
    assert AgentKind().parse(_stored(3, 2), "baseline").pass_hat_k == {"1": 0.666667, "2": 0.333333, "3": 0.0}
    refused = {
        (4_000, 4_000): [
            "baseline: not a readable agent report: results.0.trials: input should be less than or equal to 100",
            "baseline: not a readable agent report: results.0.trialsPassed: input should be less than or equal to 100",
        ],
        (0, 0): ["baseline: not a readable agent report: results.0.trials: input should be greater than or equal to 1"],
        (3, 4): ["baseline: not a readable agent report: results.0: trialsPassed 4 is more than trials 3"],
    }
    for (trials, passed), problems in refused.items():
        with pytest.raises(ReportFormatError) as info:
            AgentKind().parse(_stored(trials, passed), "baseline")
        assert info.value.problems == problems


def _edited(**fields: Any) -> dict[str, Any]:
    stored = _stored(1, 1)
    stored["results"][0].update(fields)
    return stored


@pytest.mark.parametrize(
    ("stored", "problem"),
    [
        # the hidden regression: a baseline calling a case failed over its passing trial made today's failure no
        # regression at all (exit 0)
        (_edited(status="failed", passed=False), "status is failed with no failedChecks"),
        (_edited(status="failed", passed=False, trialsPassed=0), "trialsPassed 0 disagrees with the trialResults"),
        (_edited(status="failed"), "passed is true while status is failed"),
        (_edited(passed=False), "passed is false while status is passed"),
        (_edited(trials=5, trialsPassed=1), "trials is 5, but 1 trialResults are listed"),
        (_edited(trialResults=[]), "trials is 1, but 0 trialResults are listed"),
        (_edited(trialResults=[{"trial": "c1.json", "passed": False}]), "a trial's passed disagrees with its"),
        (_edited(status="unchecked", passed=False, trialsPassed=0), "trialsPassed 0 disagrees with the trialResults"),
        # a baseline whose gating cases were all set informational would take away the failure of a suite that no
        # longer gates any case, and show a real regression as informational
        (_edited(gating=False), "gating is false with no notGatingBecause"),
        (_edited(notGatingBecause="review_status is draft"), "gating is true beside a notGatingBecause"),
    ],
    ids=["failed-over-a-pass", "no-pass-counted", "passed-but-failed", "failed-but-passed", "more-trials",
         "no-trials", "trial-verdict", "unchecked-over-a-pass", "informational-unsaid", "gating-said-not-to"],
)  # fmt: skip
def test_a_stored_result_whose_verdict_disagrees_with_its_trials_is_refused(stored: Any, problem: str) -> None:
    with pytest.raises(ReportFormatError) as info:
        AgentKind().parse(stored, "baseline")
    [message] = info.value.problems
    assert message.startswith(f"baseline: not a readable agent report: results.0: {problem}")


@pytest.mark.parametrize(
    ("counts", "said"),
    [
        ({}, "totalCases 1, passedCases 1, uncheckedCases 0, gatingCases 1 disagree with its results (0, 0, 0, 0)"),
        ({"totalCases": 2}, "totalCases 2, passedCases 1, uncheckedCases 0, gatingCases 1 disagree with its results "
                            "(1, 1, 0, 1)"),
        ({"gatingCases": 0}, "totalCases 1, passedCases 1, uncheckedCases 0, gatingCases 0 disagree with its results "
                             "(1, 1, 0, 1)"),
    ],
    ids=["results-cut-out", "total", "gating"],
)  # fmt: skip
def test_a_stored_report_whose_counts_are_not_its_results_is_refused(counts: dict[str, int], said: str) -> None:
    """Its aggregates are remade from its results, but counts that are not theirs say results were cut out: a
    baseline without a case that passed showed that case's failure today as a new case, with exit 0."""
    stored = {**_stored(1, 1), **counts}
    if not counts:
        stored["results"] = []
    with pytest.raises(ReportFormatError) as info:
        AgentKind().parse(stored, "baseline")
    assert info.value.problems == [
        f"baseline: {said}; a report's counts are its results' (this one was not written by diagbot, or was edited)"
    ]


def test_a_stored_report_that_repeats_a_case_is_refused() -> None:
    """With two entries for one case the diff kept the last: a baseline whose first entry passed and whose repeat
    failed turned the case's real regression into nothing."""
    stored = _stored(1, 1)
    failed = [{"trial": "c1.json", "passed": False, "failedChecks": [FAILED]}]
    again = {"passed": False, "status": "failed", "trialsPassed": 0, "trialResults": failed, "failedChecks": [FAILED]}
    stored["results"] += [{**stored["results"][0], **again}]
    with pytest.raises(ReportFormatError) as info:
        AgentKind().parse(stored, "base/reports/a.json")
    assert info.value.problems == [
        "base/reports/a.json: results[1] repeats the caseId 'c1' of results[0]; a report holds each case once (this "
        "one was not written by diagbot, or was edited)"
    ]


def test_a_stored_report_names_a_forged_key_on_one_line() -> None:
    stored = _stored(1, 1)
    stored["results"][0]["metrics"] = {"evil\n\x1b[31mkey": "high"}
    with pytest.raises(ReportFormatError) as info:
        AgentKind().parse(stored, "baseline")
    assert info.value.problems == [
        "baseline: not a readable agent report: results.0.metrics.evil\\n\\u001b[31mkey: input should be a valid number"
    ]


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [("passed", "yes", "input should be a valid boolean"), ("trials", True, "input should be a valid integer"),
     ("durationMs", "5", "input should be a valid number"), ("gating", 1, "input should be a valid boolean")],
)  # fmt: skip
def test_a_stored_report_is_read_without_coercing_a_value(field: str, value: Any, said: str) -> None:
    """A baseline's `"passed": "yes"`, `"trials": true` or `"durationMs": "5"` was read as true, 1 and 5.0: values
    diagbot never writes, taken as if it had. Every kind's stored report is now read strictly."""
    stored = _stored(1, 1)
    stored["results"][0][field] = value
    with pytest.raises(ReportFormatError) as info:
        AgentKind().parse(stored, "baseline")
    assert info.value.problems == [f"baseline: not a readable agent report: results.0.{field}: {said}"]
    trace = {"schemaVersion": 1, "kind": "trace", "totalCases": 1, "passedCases": 1, "passRate": 1.0,
             "results": [{"caseId": "c1", "passed": "true", "failedChecks": []}]}  # fmt: skip
    with pytest.raises(ReportFormatError) as info:
        parse_any_report(json.dumps(trace), "baseline")
    assert "baseline: not a readable trace report: results.0.passed: input should be a valid boolean" in (
        info.value.problems
    )


def test_a_case_spends_one_budget_over_all_its_trials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each check had its own budget on each trial, so a case of many costly checks and 100 trials could take an
    hour (a reviewer's case of every check at its budget: 39 s a trial). The case's checks now share one budget
    over its trials: the check running when it is spent stops, and what is left does not run, each saying so."""
    monkeypatch.setattr(checks, "MAX_CASE_STEPS", 2_000)
    tools = [f"t{n}" for n in range(30)]
    case = sequence_case(tools, "unordered", ignore_failed=False)
    case = case.model_copy(update={"evaluator_config": case.evaluator_config.model_copy(update={"rule_checks": [
        checks.Check.model_validate({"id": "short", "max_tool_calls": 100})]})})  # fmt: skip
    run = native(*(step(t) for t in reversed(tools)))
    for n in range(1, 5):
        write_json(tmp_path / "c1" / f"trial-{n}.json", run)
    found = evaluate(case, tmp_path)
    stopped = f"tool_sequence_mismatch: {checks.CASE_LIMIT}"
    assert [t.failed_checks for t in found.trial_results] == [
        [],
        [],
        [stopped, f"rule_failed: {checks.CASE_LIMIT}"],
        [stopped, f"rule_failed: {checks.CASE_LIMIT}"],
    ]
    assert found.status == "failed"


def test_a_schema_keyword_pays_for_the_subschemas_and_items_it_walks() -> None:
    """An empty subschema has no keyword to charge, so `allOf` of 100,000 of them behind 1,000 references was 40
    steps a reference for 0.3 s of work (a reviewer's extrapolation: 45 hours a trial)."""
    spent: list[int] = []
    assert first_error({"allOf": [{}] * 1_000}, {}, spent.append) is None
    assert spent == [20 + 3 * 1_000]
    spent.clear()
    assert first_error({"items": {}}, list(range(500)), spent.append) is None
    assert spent == [20 + 3 * 500]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.sampled_from("ab"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner, max_size=3),
    max_leaves=12,
)


def _matches(expected: Any, actual: Any, exact: bool) -> bool:
    """The issue's matching rule, written here on its own: objects by expected keys (all keys when exact), arrays
    element by element, numbers by value, booleans only booleans, the rest by equality."""
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and (not exact or actual.keys() == expected.keys())
                and all(k in actual and _matches(v, actual[k], exact) for k, v in expected.items()))  # fmt: skip
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(_matches(e, a, exact) for e, a in zip(expected, actual, strict=True)))  # fmt: skip
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    if isinstance(expected, int | float):
        return isinstance(actual, int | float) and expected == actual
    return type(expected) is type(actual) and expected == actual


@given(JSON, JSON, st.booleans())
def test_pairing_decides_as_the_message_does(expected: Any, actual: Any, exact: bool) -> None:
    """Pairing asks `args_fit`, which writes no message; it must agree with `args_mismatch`, which does, and both
    with the matching rule written independently above (they share their walk, so agreeing alone proves little)."""
    fits = args_fit(expected, actual, exact, lambda n: None)
    assert fits == (args_mismatch(expected, actual, exact) is None) == _matches(expected, actual, exact)


def test_a_schema_keyword_pays_for_its_own_list_too() -> None:
    """`required` of 100,000 names yields an error for each missing one: charged 63 steps for half a second of
    work, so 46,000 references to it fitted one check's budget (a reviewer's figure: about 7 hours)."""
    spent: list[int] = []
    names = [f"n{i}" for i in range(1_000)]
    assert first_error({"required": names}, {}, spent.append) is not None
    assert spent == [20 + 3 * 1_000]
    spent.clear()
    assert first_error({"dependentRequired": {"a": names[:10], "b": names[:5]}}, {"a": 1}, spent.append) is not None
    assert spent == [20 + 3 * (2 + 15 + 1)]


def test_unknown_keywords_are_listed_up_to_twenty_and_siblings_are_known() -> None:
    schema = {"if": {"type": "object"}, "then": {"maximun": 1}, "else": {}, "contains": {}, "minContains": 1,
              **{f"x{i}": 1 for i in range(5_000)}}  # fmt: skip
    found = unknown_keywords(schema)
    assert len(found) == 20 and all(f.startswith("top level: unknown keyword 'x") for f in found)
    assert unknown_keywords({"then": {"maximun": 1}, "minContains": 1}) == [
        "then: unknown keyword 'maximun' (did you mean maximum?)"
    ]
    assert unknown_keywords({"$schema": "http://json-schema.org/draft-04/schema#", "exclusiveMaximum": True}) == []


def test_a_schema_pattern_and_unique_items_pay_for_what_they_read() -> None:
    """`pattern` was charged a step per 1,000 characters for RE2's slow path over them (200 such patterns on a 1 MB
    argument: 30 s); `uniqueItems` a step per pair, however big the items it compares member by member."""
    spent: list[int] = []
    first_error({"pattern": "[ab]*a[ab]{20}c"}, "ab" * 5_000, spent.append)
    program = compile_regex("[ab]*a[ab]{20}c").program
    assert spent == [20, 1 + 10_000 * program // 50]
    spent.clear()
    items = [{"a": 1, "b": 2, "c": 3, "k": n} for n in range(100)]
    assert first_error({"uniqueItems": True}, items, spent.append) is None
    assert spent == [20 + 100 * 100 // 2 * (1 + 501 // 100)]


def test_a_subschema_path_is_cut_however_long_the_keys_above_it() -> None:
    """Each path is its parent's plus a key: under a megabyte-long property name, every subschema below copied it."""
    wide = {f"p{i}": {"maximun": 1} for i in range(3)}
    found = unknown_keywords({"properties": {"k" * 1_000_000: {"properties": wide}}})
    assert len(found) == 3 and all(len(f) < 300 for f in found)
    assert found[0].startswith("properties." + "k" * 180)


@pytest.mark.parametrize("case_id", ["c1\u200b", "c1/../c2", "", "-c1", "c" * 201])
def test_a_stored_case_id_no_case_could_have_is_refused(case_id: str) -> None:
    """A baseline entry `c1` + a zero-width space was read, compared with no case (so its case's regression went
    unseen) and shown as a case that vanished."""
    with pytest.raises(ReportFormatError) as info:
        AgentKind().parse(_edited(caseId=case_id), "baseline")
    [message] = info.value.problems
    assert message.startswith("baseline: not a readable agent report: results.0.caseId: string should match pattern")
