"""Agent-kind behaviour a mutation pass over match.py, checks.py, evaluate.py, diff.py and report.py found that no
test pinned: each test here fails with one of the surviving mutants (named in its docstring) put back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from diagbot.core.diff import ItemType, Thresholds
from diagbot.core.report import RunInfo
from diagbot.kinds.agent.diff import diff_agent
from diagbot.kinds.agent.evaluate import not_gating_because, today_of, unjudged_warning
from diagbot.kinds.agent.match import args_mismatch, max_matching, show
from diagbot.kinds.agent.report import build_report
from diagbot.kinds.base import Governance
from tests.conftest import write_json
from tests.test_agent_checks import (
    TODAY,
    call,
    calls,
    change,
    evaluate,
    failures,
    make_case,
    native,
    result,
    say,
    sequence_case,
)

# --- argument matching and pairing (match.py) ----------------------------------------------------------------------


def test_one_call_meets_one_item_of_a_subsequence() -> None:
    """`j += 1` dropped: one get_order call met both items."""
    case = sequence_case(["get_order", "get_order"])
    assert failures(case, calls("get_order", "refund"))[0].startswith("tool_sequence_mismatch: ")
    assert failures(case, calls("get_order", "refund", "get_order")) == []


def test_the_pairing_is_maximum_when_it_needs_more_than_one_augmenting_pass() -> None:
    """Only one augmenting pass left set 4 unpaired though every set has a call of its own."""
    fits = [{1, 2, 3}, {2, 3, 5}, {1, 2, 3}, {1, 2, 3}, {3, 4}]
    pairing = max_matching(range(5), range(1, 6), lambda left, right: right in fits[left])
    assert None not in pairing and len(set(pairing)) == 5


def test_the_first_differing_path_is_named_and_strings_are_not_arrays() -> None:
    assert args_mismatch({"a": 1, "b": 2}, {"a": 9, "b": 9}) == "a: expected 1, got 9"  # the first, not the last
    assert args_mismatch({"a": 1}, {"a": 1, "c": 3, "b": 2}, exact=True) == "b: not expected (args_match is exact)"
    assert args_mismatch(["a", "b"], "ab") == 'arguments: expected an array, got "ab"'


def test_show_marks_what_it_leaves_out() -> None:
    assert show({"a": 1, "b": 2, "c": 3}) == '{"a": 1, "b": 2, "c": 3}'
    assert show({f"key{i}": i for i in range(20)}).endswith("…")
    exactly = "x" * 58  # with its quotes, 60 characters: shown whole
    assert show(exactly) == f'"{exactly}"'
    assert show(exactly + "x").endswith("…")


# --- checks (checks.py) ----------------------------------------------------------------------------------------------


def test_a_state_query_without_equals_must_be_true() -> None:
    """`truthy` made `is not None`: false, "", [] and {} passed."""
    case = make_case(final_state_check={"expr": "refunded"})
    for value in (False, "", [], {}):
        assert failures(case, native(final_state={"refunded": value})) != [], value
    assert failures(case, native(final_state={"refunded": True})) == []


def test_max_turns_counts_assistant_messages_not_calls() -> None:
    case = make_case(evaluator_config={"rule_checks": [{"max_turns": 2}]})
    three = native(say("assistant", "a"), say("assistant", "b"), call("t"), say("assistant", "c"))
    assert failures(case, three) == ["rule_failed: rule_checks[0]: assistant turns 3 > 2"]
    assert failures(case, native(say("assistant", "a"), call("t"), call("t"), call("t"), say("assistant", "b"))) == []


def test_an_answer_of_exactly_max_chars_passes() -> None:
    case = make_case(constraints={"max_chars": 5})
    assert failures(case, native(say("assistant", "12345"))) == []
    assert failures(case, native(say("assistant", "123456"))) == [
        "constraint_failed: constraints.max_chars: the answer has 6 characters > 5"
    ]


def test_only_a_user_message_confirms() -> None:
    case = make_case(side_effect_policy={"tool": "refund", "confirmation_required": True})
    for role in ("system", "developer"):
        run = native(say("assistant", "Shall I refund?"), say(role, "yes"), call("refund"))
        assert failures(case, run)[0].startswith("confirmation_missing: "), role


def test_calls_lacking_one_key_of_a_compound_idempotency_key_repeat_it_absent() -> None:
    """Two refunds of order A, neither with a request id, repeated the spec's own `order_id + item_id +
    refund_request_id` and passed: a key a call lacks is a value (absent) like any other, and only a call that
    lacks them all repeats nothing."""
    case = make_case(side_effect_policy={"tool": "refund", "idempotency_key": "order_id + amount"})
    assert failures(case, native(call("refund", {"order_id": "A"}), call("refund", {"order_id": "A"}))) == [
        'duplicate_side_effect: refund (call 1) and call 2 repeat order_id="A", amount=(absent)'
    ]
    assert (
        failures(case, native(call("refund", {"order_id": "A"}), call("refund", {"order_id": "A", "amount": 1}))) == []
    )
    assert failures(case, native(call("refund", {}), call("refund", {}))) == []


def test_a_call_whose_arguments_are_unread_may_repeat_another() -> None:
    """Arguments that repeat a key (or do not parse) were skipped, so two such refunds repeated nothing."""
    case = make_case(side_effect_policy={"tool": "refund", "idempotency_key": "order_id"})
    twice = '{"order_id": "A", "order_id": "A"}'
    found = failures(case, native(call("refund", {"order_id": "A"}), call("refund", twice)))
    assert len(found) == 1 and found[0].startswith(
        "duplicate_side_effect: refund (call 1) and call 2 may repeat order_id: call 2's arguments are not valid JSON"
    ), found
    assert failures(case, native(call("refund", twice))) == []  # one call repeats nothing


def test_a_keyed_transition_governs_only_its_key() -> None:
    policy = {"tool": "t", "forbidden_state_transition": [{"key": "status", "from": "a", "to": "b"}]}
    case = make_case(initial_state={"status": "a", "stage": "a"}, side_effect_policy=policy)
    assert failures(case, native(change("stage", "a", "b"))) == []
    assert failures(case, native(change("status", "a", "b"))) == [
        'state_transition_forbidden: status: "a" → "b" is a forbidden transition (t policy)'
    ]


def test_a_case_that_declares_only_state_starts_absent_keys_as_null() -> None:
    """Declaring `state` (no initial_state) is declaring the start: a key absent from it did not exist yet."""
    policy = {"tool": "t", "forbidden_state_transition": [{"key": "refund", "from": None, "to": "sent"}]}
    case = make_case(state={"order": "A"}, side_effect_policy=policy)
    assert failures(case, native(final_state={"order": "A", "refund": "sent"})) == [
        'state_transition_forbidden: refund: (absent at the start) → "sent" is a forbidden transition (t policy)'
    ]


def test_tool_calls_alone_are_actions() -> None:
    case = make_case(trace_requirement={"required_fields": ["action"]})
    assert failures(case, calls("lookup")) == []
    assert failures(case, native(change("k", 1, 2))) == ["trace_requirement_missing: the run records no action"]


# --- judging a case (evaluate.py) -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reviews", "reason"),
    [
        ([{"reviewer": "ann", "review_result": "needs_revision"}], "the latest review (ann) is needs_revision"),
        ([{"reviewer": "ann", "review_result": "approved"}], None),  # approved for no role in particular: all
    ],
)
def test_the_latest_review_gates_only_when_it_approves(reviews: list[dict[str, Any]], reason: str | None) -> None:
    assert not_gating_because(make_case(reviews=reviews), Governance(), TODAY) == reason


def test_usage_rights_that_gate_nothing_are_said_plainly() -> None:
    """`gate: {usage-rights: []}` read "not )", and a blank right vanished from the message."""
    case = make_case()
    assert not_gating_because(case, Governance(usage_rights=()), TODAY) == (
        "usage rights are approved_for_evaluation, and gate.usage-rights allows none"
    )
    assert not_gating_because(case, Governance(usage_rights=(" ",)), TODAY) == (
        "usage rights are approved_for_evaluation, not ' '"
    )


def test_a_case_with_nothing_checked_and_no_run_stays_unchecked(tmp_path: Path) -> None:
    """A case that checks nothing is neither passed nor failed (issue 12), its run missing or not: it failed, and
    a gating P0 one failed the gate for a run it could not have judged. The trial still says the run is missing
    (and the suite's runs warning names the case)."""
    found = evaluate(make_case(risk_level="P0", negative_behavior=["promise a refund"]), tmp_path)
    assert (found.status, found.passed, found.failed_checks) == ("unchecked", False, [])
    assert found.trial_results[0].failed_checks == [
        "trace_missing: no run recorded: expected c1.json or a folder c1/ in the fixtures folder"
    ]


def test_too_few_trials_of_a_checked_case_fail_saying_so(tmp_path: Path) -> None:
    write_json(tmp_path / "c1.json", native(call("t")))
    found = evaluate(sequence_case(["t"]), tmp_path, {"trials": 3})
    assert (found.status, found.trials, found.trials_passed, found.failed_checks) == (
        "failed", 1, 1, ["trace_missing: the suite's trials: 3 needs 3 passing trials; 1 is recorded"]
    )  # fmt: skip


def test_too_few_trials_come_after_the_first_failing_trials_checks_and_are_no_missing_run(tmp_path: Path) -> None:
    """`trials: 3` over two recorded trials, the second failing: failedChecks opened with the case's own shortfall,
    which belongs to no trial, before the first failing trial's checks (issue 12: "those of the first failing
    trial"); and the suite's runs warning called every such case one with a run missing."""
    write_json(tmp_path / "c1" / "trial-1.json", native(call("t")))
    write_json(tmp_path / "c1" / "trial-2.json", native(call("u")))
    found = evaluate(sequence_case(["t"], match="strict"), tmp_path, {"trials": 3})
    [failing] = [t for t in found.trial_results if not t.passed]
    assert failing.trial == "trial-2.json"
    assert found.failed_checks == [
        *failing.failed_checks,
        "trace_missing: the suite's trials: 3 needs 3 passing trials; 2 are recorded",
    ]
    assert unjudged_warning([found]) == [
        "runs: 1 of 1 cases could not be judged on every trial (0 with a run missing, 0 with a run that could not "
        "be read, 1 with fewer trials than the suite's trials: n needs): c1; such a trial fails unjudged, and a "
        "baseline where a case fails cannot show it regress: record the runs; c1: trace_missing: the suite's "
        "trials: 3 needs 3 passing trials; 2 are recorded"
    ]


def test_exactly_the_most_trials_are_read(tmp_path: Path) -> None:
    for i in range(100):
        write_json(tmp_path / "c1" / f"trial-{i:03d}.json", native(call("t")))
    assert evaluate(sequence_case(["t"]), tmp_path).trials == 100
    write_json(tmp_path / "c1" / "trial-100.json", native(call("t")))
    assert evaluate(sequence_case(["t"]), tmp_path).failed_checks == [
        "trace_invalid: c1/ holds more than 100 trials; diagbot reads at most 100"
    ]


def test_a_file_named_as_a_case_folder_is_no_folder(tmp_path: Path) -> None:
    (tmp_path / "c1").write_text("not a folder", encoding="utf-8")
    assert evaluate(sequence_case(["t"]), tmp_path).failed_checks == [
        "trace_missing: no run recorded: expected c1.json or a folder c1/ in the fixtures folder"
    ]


def test_check_objects_in_expected_behavior_are_not_listed_as_prose(tmp_path: Path) -> None:
    case = make_case(expected_behavior=["refunds A", {"tool_called": "refund"}], evaluator_config={"judge": {}})
    write_json(tmp_path / "c1.json", calls("refund"))
    assert evaluate(case, tmp_path).unchecked_expectations == [
        "expected_behavior: refunds A",
        "rubric: tool_call_correctness_v1",
        "evaluator_config.judge: a judge run elsewhere",
    ]


def test_retention_is_judged_on_the_run_s_day() -> None:
    assert str(today_of(RunInfo(git_sha="x", ref="main", time="2025-06-01T23:59:59Z"))) == "2025-06-01"


# --- the diff (diff.py) and the report (report.py) ------------------------------------------------------------------


def test_a_case_that_stops_gating_in_the_pull_request_does_not_gate_its_failure() -> None:
    """Its items follow the current side: the change shows as gating yes -> no (the known cost: a reviewer sees a
    case made informational in the same pull request that breaks it, and the comment says so)."""
    was, now = result(1, 1), result(1, 0, gating=False)
    now = now.model_copy(update={"case_id": was.case_id, "not_gating_because": "review_status is draft"})
    diff = diff_agent(build_report([was]), build_report([now]))
    mine = [(i.type, i.metric, i.gating) for i in diff.items if i.case_id == was.case_id]
    # the demotion itself is listed with the gating rows (the case gated before); a change never fails the check
    assert (ItemType.REGRESSION, "status", False) in mine and (ItemType.CHANGED, "gating", True) in mine
    assert not diff.has_regression
    [gating] = [i.message for i in diff.items if i.metric == "gating"]
    assert gating == "informational (this case does not gate): gating yes → no (review_status is draft)"
    assert not diff.has_regression


def test_a_passing_case_whose_run_costs_far_more_regresses_past_the_thresholds() -> None:
    """A newcomer's agent looped through six calls instead of two and took 60 s instead of 5 s, passing every
    check: the diff said nothing, though the README's threshold rules hold for every kind."""
    was = result(1, 1).model_copy(update={"tool_call_count": 2, "duration_ms": 5200.0})
    looped = was.model_copy(update={"tool_call_count": 6, "duration_ms": 60000.0})
    diff = diff_agent(build_report([was]), build_report([looped]))
    assert [(i.type, i.metric, i.message) for i in diff.items] == [
        (ItemType.REGRESSION, "toolCallCount", "toolCallCount rose from 2 to 6 (+200%)"),
        (ItemType.REGRESSION, "durationMs", "durationMs rose from 5200 ms to 60000 ms (+1054%)"),
    ]
    assert diff.has_regression
    loose = Thresholds(tool_call_pct=300, duration_pct=2000)  # the suite's own thresholds decide
    assert not diff_agent(build_report([was]), build_report([looped]), loose).items
    quicker = was.model_copy(update={"tool_call_count": 1, "duration_ms": 4000.0})
    faster = diff_agent(build_report([was]), build_report([quicker]))
    assert [(i.type, i.metric) for i in faster.items] == [(ItemType.IMPROVEMENT, "toolCallCount"),
                                                         (ItemType.IMPROVEMENT, "durationMs")]  # fmt: skip
    informational = looped.model_copy(update={"gating": False, "not_gating_because": "review_status is draft"})
    shown = diff_agent(build_report([was]), build_report([informational]))
    assert not shown.has_regression and {i.metric for i in shown.items if i.type is ItemType.REGRESSION} == {
        "toolCallCount",
        "durationMs",
    }


def test_a_case_that_fails_now_gets_no_improvement_for_costing_less() -> None:
    """A newcomer's weather agent stopped calling its tool: the case regressed, and the same comment listed two
    improvements, its calls falling from 1 to 0 and its duration halving. A cheaper run that fails is no better."""
    was = result(1, 1).model_copy(update={"tool_call_count": 1, "duration_ms": 1800.0})
    skipped = result(1, 0).model_copy(update={"case_id": was.case_id, "tool_call_count": 0, "duration_ms": 900.0})
    diff = diff_agent(build_report([was]), build_report([skipped]))
    costs = [(i.type, i.message) for i in diff.items if i.metric in ("toolCallCount", "durationMs")]
    assert costs == [
        (ItemType.CHANGED, "toolCallCount fell from 1 to 0 (-100%); no improvement: it fails now"),
        (ItemType.CHANGED, "durationMs fell from 1800 ms to 900 ms (-50%); no improvement: it fails now"),
    ]
    assert not any(i.type is ItemType.IMPROVEMENT for i in diff.items) and diff.has_regression
    still = diff_agent(build_report([skipped]), build_report([skipped.model_copy(update={"tool_call_count": 3})]))
    assert [(i.type, i.metric) for i in still.items] == [(ItemType.REGRESSION, "toolCallCount")]  # a rise still is


def test_a_later_trial_that_loops_counts_as_the_cases_cost(tmp_path: Path) -> None:
    """A red-team pass added twenty calls and 160 s to a case's third trial: only the first trial's calls and
    duration were the case's, so nothing showed. The costliest readable trial is the case's now."""
    (tmp_path / "c1").mkdir()
    write_json(tmp_path / "c1/trial-1.json", native(call("t"), call("t"), duration_ms=5000))
    write_json(tmp_path / "c1/trial-2.json", native(*[call("t")] * 22, say("assistant", "done"), duration_ms=160000))
    write_json(tmp_path / "c1/trial-3.json", native(call("t"), say("assistant", "ok"), say("assistant", "ok")))
    result = evaluate(sequence_case(["t"]), tmp_path)
    assert (result.tool_call_count, result.turn_count, result.duration_ms) == (22, 2, 160000.0)
    (tmp_path / "c1/trial-2.json").unlink()
    calm = evaluate(sequence_case(["t"]), tmp_path)
    assert (calm.tool_call_count, calm.turn_count, calm.duration_ms) == (2, 2, 5000.0)
    items = diff_agent(build_report([calm]), build_report([result])).items
    assert [(i.type, i.metric) for i in items if i.metric in ("toolCallCount", "durationMs")] == [
        (ItemType.REGRESSION, "toolCallCount"),
        (ItemType.REGRESSION, "durationMs"),
    ]


def test_a_version_1_baseline_compares_no_cost_of_a_case_of_several_trials() -> None:
    """Version 1 recorded a case's first trial, version 2 its costliest: upgrading alone made cases of several trials
    regress (a review); a case of one trial is the same either way, and is compared."""
    many = result(3, 3).model_copy(update={"tool_call_count": 3, "duration_ms": 1000.0})
    one = result(1, 1).model_copy(update={"tool_call_count": 3, "duration_ms": 1000.0})
    old = build_report([many, one], schema_version=1)
    now = build_report([r.model_copy(update={"tool_call_count": 6, "duration_ms": 9000.0}) for r in (many, one)])
    moved = {(i.case_id, i.metric) for i in diff_agent(old, now).items if i.type is ItemType.REGRESSION}
    assert moved == {(one.case_id, "toolCallCount"), (one.case_id, "durationMs")}
    both = {(i.case_id, i.metric) for i in diff_agent(build_report([many, one]), now).items}
    assert {(many.case_id, "toolCallCount"), (many.case_id, "durationMs")} <= both


def test_the_headline_notes_name_each_way_a_gating_case_left_the_comparison() -> None:
    """A red-team pass got past the gate with only folded rows to show for it: a new case_version, checks rewritten
    under the same one (a suite rule made harmless), a run split into more trials. Each is a change, never a
    regression, so the notes under the headline name the cases, as they name removed and demoted ones."""
    from diagbot.kinds.agent.kind import AgentKind

    base = [result(1, 1).model_copy(update={"case_id": f"c{n}", "checks_digest": "0" * 16}) for n in range(4)]
    base[3] = result(3, 1).model_copy(update={"case_id": "c3", "checks_digest": "0" * 16})  # failed 1 of 3 trials
    now = [
        base[0].model_copy(update={"case_version": "v2"}),
        base[1].model_copy(update={"checks_digest": "1" * 16}),
        result(2, 2).model_copy(update={"case_id": "c2", "checks_digest": "0" * 16}),
        result(1, 1).model_copy(update={"case_id": "c3", "checks_digest": "0" * 16}),  # cut to one passing trial
    ]
    diff = diff_agent(build_report(base), build_report(now))
    notes = AgentKind().view("agent", build_report(now), diff).notes
    assert [n for n in notes if n[:1].isdigit() and " gating case" in n] == [
        "1 gating case with a new case\\_version since the baseline, so not compared with it: c0 (P2)",
        "1 gating case whose checks changed under the same case\\_version since the baseline: c1 (P2)",
        "2 gating cases recorded with another number of trials than in the baseline: c2 (P2), c3 (P2)",
    ]
    assert not diff.has_regression


def test_added_and_removed_cases_are_changes_of_their_own() -> None:
    kept, gone, new = result(1, 1), result(2, 2), result(3, 3)
    diff = diff_agent(build_report([kept, gone]), build_report([kept, new]))
    shown = {(i.case_id, i.type, i.message) for i in diff.items if i.case_id in (gone.case_id, new.case_id)}
    assert {(c, t) for c, t, _ in shown} == {(gone.case_id, ItemType.CHANGED), (new.case_id, ItemType.CHANGED)}
    messages = {c: m for c, _, m in shown}
    assert "removed" in messages[gone.case_id] and "added" in messages[new.case_id]


def test_failing_checks_that_change_are_named() -> None:
    was, now = result(1, 0), result(1, 0)
    now = now.model_copy(update={"failed_checks": ["tool_sequence_mismatch: x"], "trial_results": [
        now.trial_results[0].model_copy(update={"failed_checks": ["tool_sequence_mismatch: x"]})]})  # fmt: skip
    [item] = [i for i in diff_agent(build_report([was]), build_report([now])).items if i.metric == "failedChecks"]
    assert item.message == "failing checks changed: now tool_sequence_mismatch; no longer rule_failed"


def test_two_failed_checks_are_both_shown_without_a_count() -> None:
    was, now = result(1, 1), result(1, 0)
    two = ["rule_failed: a", "rule_failed: b"]
    now = now.model_copy(update={"case_id": was.case_id, "failed_checks": two, "trial_results": [
        now.trial_results[0].model_copy(update={"failed_checks": two})]})  # fmt: skip
    [item] = [i for i in diff_agent(build_report([was]), build_report([now])).items if i.metric == "status"]
    assert item.message == "passed → failed (rule_failed: a; rule_failed: b)"


def test_a_slice_value_or_dataset_on_one_side_only_is_shown() -> None:
    """A case moved to another scenario under the same case_version: the slice it left and the one it joined were
    never shown (only slices on both sides were compared), nor a dataset only the baseline had."""
    was, now = result(1, 1), result(1, 1)
    now = now.model_copy(update={"scenario": "brand new", "dataset_id": "fresh"})
    diff = diff_agent(build_report([was]), build_report([now]))
    said = {i.metric: (i.baseline_value, i.current_value, i.message) for i in diff.items}
    assert said["slice.scenario.refund"] == (1.0, None, "scenario = refund: pass rate 100.0% → no checked case")
    assert said["slice.scenario.brand new"] == (None, 1.0, "scenario = brand new: pass rate no checked case → 100.0%")
    assert said["datasetVersion.fresh"] == (None, "v1", "dataset fresh: version new → v1")
    assert said["datasetVersion.d"] == ("v1", None, "dataset d: version v1 → no case of it now")
    assert not any(m.startswith("slice.risk_level") for m in said)  # unmoved slices say nothing
    unchecked = result(1, 0, status="unchecked")
    assert not [i for i in diff_agent(build_report([unchecked]), build_report([unchecked])).items if i.metric]


def test_a_tag_written_twice_counts_its_case_once_in_the_slice() -> None:
    """`ability_tags: [tool, tool]` on a passing case beside a failing one: the slice said 3 cases, 2 passing
    (66.7%), for 2 cases, 1 passing; against a baseline without the repeat it showed a pass-rate change of nothing."""
    twice = result(1, 1).model_copy(update={"case_id": "twice", "ability_tags": ["tool", "tool"]})
    once = result(1, 0).model_copy(update={"case_id": "once", "ability_tags": ["tool"]})
    tool = build_report([twice, once]).slices["ability_tags"]["tool"]
    assert (tool.total_cases, tool.passed_cases, tool.pass_rate) == (2, 1, 0.5)
    plain = twice.model_copy(update={"ability_tags": ["tool"]})
    assert not [i for i in diff_agent(build_report([plain, once]), build_report([twice, once])).items if i.metric]


def test_dataset_versions_list_every_version_sorted() -> None:
    results = [result(1, 1).model_copy(update={"case_id": f"c{v}", "dataset_version": v}) for v in ("v2", "v1")]
    assert build_report(results).dataset_versions == {"d": ["v1", "v2"]}


def test_a_case_whose_one_trial_has_no_metric_takes_the_mean_of_the_others(tmp_path: Path) -> None:
    from tests.test_agent_rag import FOUND_AT_3, rag_case

    write_json(tmp_path / "c1" / "trial-1.json", native(FOUND_AT_3))
    (tmp_path / "c1" / "trial-2.json").write_text("{broken", encoding="utf-8")
    found = evaluate(rag_case(["evidence_recall_at_5"]), tmp_path, {"trials": "any"})
    assert (found.trials, found.metrics, found.status) == (2, {"evidence_recall_at_5": 1.0}, "passed")


def test_a_removed_case_says_what_it_was_and_a_lowered_risk_level_shows() -> None:
    """A failing gating P0 case deleted, or relabelled P1 under the same case_version, passed with nothing to
    say it had been one: the items now say so (they stay changes: cases are retired too)."""
    p0 = result(1, 0).model_copy(update={"risk_level": "P0"})
    diff = diff_agent(build_report([p0]), build_report([]))
    [removed] = [i for i in diff.items if i.case_id]
    assert removed.message == "case removed (only in the baseline): it was a gating P0 case that failed"
    assert removed.severity == "P0" and removed.type is ItemType.CHANGED
    lowered = p0.model_copy(update={"risk_level": "P1"})
    [risk] = [i for i in diff_agent(build_report([p0]), build_report([lowered])).items if i.metric == "riskLevel"]
    assert (risk.type, risk.message) == (ItemType.CHANGED, "risk level P0 → P1")
    unchecked = result(1, 0, status="unchecked", gating=False)
    [gone] = [i for i in diff_agent(build_report([unchecked]), build_report([])).items if i.case_id]
    assert gone.message.endswith("it was an informational P2 case that nothing machine-checks")
