"""Every check code, failing and passing, driven through the real parse -> evaluate path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from diagbot.kinds.trace import search
from diagbot.kinds.trace.cases import TraceCase
from diagbot.kinds.trace.checks import REGISTRY, Code
from diagbot.kinds.trace.evaluate import evaluate_case
from diagbot.kinds.trace.fixture import Trace, parse_trace
from tests.conftest import DELETE, VERIFIER, case_dict, trace_dict

V2 = {"requireV2AuditClosure": True}

# (id, case overrides, trace overrides, expected failed codes)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[str]]] = [
    ("baseline-passes", {}, {}, []),
    ("v2-complete-passes", {**V2, "requireClaimChecks": True, "requireComposerOutput": True}, {}, []),
    ("keyword-coverage-fails", {}, {"session.answer": "It timed out."}, ["keyword_coverage"]),
    ("keyword-min-matches-passes", {"minKeywordMatches": 1}, {"session.answer": "a timeout"}, []),
    ("keyword-fullwidth-matches", {}, {"session.answer": "ＴＩＭＥＯＵＴ from the CONNECTION POOL"}, []),
    ("keyword-zero-required", {"expectedRootCauseKeywords": []}, {"session.answer": ""}, []),
    ("missing-tool-fails", {"requiredEvidenceTools": ["query_traces"]}, {}, ["missing_evidence_tool"]),
    ("tool-in-summary-only-passes", {"requiredEvidenceTools": ["query_metrics"]}, {"toolInvocations": []}, []),
    (
        "failed-invocation-still-counts",
        {"requiredEvidenceTools": ["query_logs"]},
        {"toolInvocations": [{"toolName": "query_logs", "success": False}]},
        [],
    ),
    ("verdict-missing-fails", {}, {f"{VERIFIER}.verdict": DELETE}, ["verdict_missing"]),
    (
        "verdict-missing-no-verifier",
        {"requiredEvidenceTools": []},
        {"session.selfEvaluation": DELETE},
        ["verdict_missing"],
    ),
    (
        "verdict-not-allowed-fails",
        {},
        {f"{VERIFIER}.verdict": "REJECT", "session.answer": "timeout connection pool insufficient evidence"},
        ["verdict_not_allowed"],
    ),
    ("empty-allowed-allows-any", {"allowedVerdicts": []}, {f"{VERIFIER}.verdict": "WHATEVER"}, []),
    (
        "forbidden-keyword-fails",
        {},
        {"session.answer": "timeout, Certainly Caused By the connection pool"},
        ["forbidden_answer_keyword"],
    ),
    (
        "reject-with-degradation-passes",
        {"allowedVerdicts": ["REJECT"]},
        {f"{VERIFIER}.verdict": "REJECT", "session.answer": "timeout? connection pool? Insufficient evidence."},
        [],
    ),
    (
        "reject-without-degradation-fails",
        {"allowedVerdicts": ["REJECT"]},
        {f"{VERIFIER}.verdict": "REJECT"},
        ["reject_without_degradation"],
    ),
    (
        "reject-no-markers-configured-fails-closed",
        {"allowedVerdicts": ["REJECT"], "degradationKeywords": []},
        {f"{VERIFIER}.verdict": "REJECT", "session.answer": "timeout connection pool insufficient evidence"},
        ["reject_without_degradation"],
    ),
    (
        "claim-unbound-fails",
        {},
        {f"{VERIFIER}.executor_structured_output": {"claims": [{"claim_id": "c1", "evidence_bindings": []}]}},
        ["claim_unbound"],
    ),
    (  # a hostile pass: an empty binding bound the claim, and `Confirmed` needed none
        "claim-bound-to-nothing-fails",
        {},
        {
            f"{VERIFIER}.executor_structured_output": {
                "claims": [{"evidence_bindings": [None, {}]}, {"status": "Confirmed ", "evidence_bindings": []}]
            }
        },
        ["claim_unbound", "claim_unbound"],
    ),
    (
        "unconfirmed-claim-may-be-unbound",
        {},
        {f"{VERIFIER}.executor_structured_output": {"claims": [{"status": "unsupported"}]}},
        [],
    ),
    (
        "v2-missing-each-part",
        V2,
        {f"{VERIFIER}.gatekeeper_result": DELETE, f"{VERIFIER}.composer_output": DELETE},
        ["v2_missing", "v2_missing"],
    ),
    ("v2-not-required-not-checked", {}, {f"{VERIFIER}.claim_checks": DELETE}, []),
    ("raw-json-leak-fails", V2, {"session.answer": 'timeout connection pool {"claim_id": "c1"}'}, ["raw_json_leak"]),
    ("raw-json-leak-needs-v2", {}, {"session.answer": "timeout connection pool claim_id"}, []),
    (
        "claim-checks-empty-fails",
        {"requireClaimChecks": True},
        {f"{VERIFIER}.claim_checks": []},
        ["claim_checks_empty"],
    ),
    (
        "claim-check-invalid-verification",
        V2,
        {f"{VERIFIER}.claim_checks": [{"claim_id": "c1", "verification": "vibes", "detail": "x"}]},
        ["claim_check_invalid"],
    ),
    (
        "claim-check-invalid-lacks-fields",
        {"requireClaimChecks": True},
        {f"{VERIFIER}.claim_checks": [{"claim_id": "c1"}, "not-an-object"]},
        ["claim_check_invalid", "claim_check_invalid"],
    ),
    (
        "gatekeeper-fail-with-pass",
        {},
        {f"{VERIFIER}.gatekeeper_result": {"status": "fail"}},
        ["gatekeeper_fail_with_pass"],
    ),
    (
        "gatekeeper-fail-with-low-confid-ok",
        {},
        {f"{VERIFIER}.gatekeeper_result": {"status": "fail"}, f"{VERIFIER}.verdict": "LOW_CONFID"},
        [],
    ),
    (
        "gatekeeper-status-fails",
        {"expectedGatekeeperStatuses": ["pass"]},
        {f"{VERIFIER}.gatekeeper_result": {"status": "warn"}},
        ["gatekeeper_status"],
    ),
    ("gatekeeper-status-passes", {"expectedGatekeeperStatuses": ["pass", "warn"]}, {}, []),
    (
        "rule-set-version-fails",
        {"expectedGatekeeperRuleSetVersion": "gatekeeper-rules-v2"},
        {},
        ["gatekeeper_rule_set_version"],
    ),
    ("rule-set-version-passes", {"expectedGatekeeperRuleSetVersion": "gatekeeper-rules-v1"}, {}, []),
    (
        "composer-output-missing",
        {"requireComposerOutput": True},
        {f"{VERIFIER}.composer_output": {}},
        ["composer_output_missing"],
    ),
    (
        "composer-status-fails",
        {"expectedComposerStatuses": ["valid"]},
        {f"{VERIFIER}.composer_output": {"status": "composer_malformed"}},
        ["composer_status"],
    ),
    (
        "forbidden-confirmed-claim",
        {"forbiddenConfirmedClaimKeywords": ["primary database failure"]},
        {"session.answer": "timeout connection pool; Primary Database Failure"},
        ["forbidden_confirmed_claim"],
    ),
]


def _codes(failed: list[str]) -> list[str]:
    return [entry.split(":", 1)[0] for entry in failed]


@pytest.mark.parametrize(("case_over", "trace_over", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_check(case_over: dict[str, Any], trace_over: dict[str, Any], expected: list[str]) -> None:
    case = TraceCase.model_validate(case_dict(**case_over))
    trace = parse_trace(json.dumps(trace_dict(**trace_over)).encode(), "t.json")
    assert isinstance(trace, Trace)
    result = evaluate_case(case, trace)
    assert _codes(result.failed_checks) == expected
    assert result.passed is (not expected)


def test_every_registered_check_has_a_failing_row() -> None:
    failing = {code for *_, expected in CASES for code in expected}
    assert {c.value for c in REGISTRY} <= failing


def test_every_code_is_registered_or_a_fixture_code() -> None:
    assert set(Code) - set(REGISTRY) == {Code.FIXTURE_MISSING, Code.FIXTURE_INVALID}


def test_messages_say_expected_and_found() -> None:
    case = TraceCase.model_validate(case_dict(requiredEvidenceTools=["query_traces"], allowedVerdicts=["PASS"]))
    trace = parse_trace(json.dumps(trace_dict(**{f"{VERIFIER}.verdict": "LOW_CONFID"})).encode(), "t.json")
    assert isinstance(trace, Trace)
    assert evaluate_case(case, trace).failed_checks == [
        "missing_evidence_tool: required tool 'query_traces' was never used "
        "(tools seen: 'lookup_knowledge', 'query_logs', 'query_metrics')",
        "verdict_not_allowed: verdict 'LOW_CONFID' is not one of 'PASS'",
    ]


def test_result_fields_from_trace() -> None:
    case = TraceCase.model_validate(case_dict(requiredEvidenceTools=["query_logs", "query_traces"]))
    trace = parse_trace(json.dumps(trace_dict()).encode(), "t.json")
    assert isinstance(trace, Trace)
    result = evaluate_case(case, trace)
    assert result.model_dump(by_alias=True) == {
        "caseId": "payment-timeout",
        "title": "Payment API timeout",
        "passed": False,
        "failedChecks": result.failed_checks,
        "verdict": "PASS",
        "matchedKeywordCount": 2,
        "requiredKeywordCount": 2,
        "evidenceCoverage": {"query_logs": True, "query_traces": False},
        "gatekeeperStatus": "pass",
        "gatekeeperRuleSetVersion": "gatekeeper-rules-v1",
        "composerStatus": "valid",
        "claimCheckCount": 1,
        "toolCallCount": 2,
        "durationMs": 8000,
    }


def test_absent_values_are_null() -> None:
    case = TraceCase.model_validate(case_dict())
    trace = parse_trace(b'{"session": {"answer": "timeout connection pool"}}', "t.json")
    assert isinstance(trace, Trace)
    result = evaluate_case(case, trace)
    assert (result.verdict, result.tool_call_count, result.duration_ms, result.claim_check_count) == (
        None,
        None,
        None,
        None,
    )
    assert result.gatekeeper_status is None and result.composer_status is None


def test_keywords_equal_once_normalised_count_once() -> None:
    """The loader refuses such a list; a case built around it still cannot reach minKeywordMatches with repeats."""
    keywords = ["connection pool", "Connection Pool", "ｃｏｎｎｅｃｔｉｏｎ ｐｏｏｌ", "timeout"]
    case = TraceCase.model_validate(case_dict(expectedRootCauseKeywords=keywords, minKeywordMatches=3))
    trace = parse_trace(json.dumps(trace_dict(**{"session.answer": "the connection pool is exhausted"})).encode(), "t")
    assert isinstance(trace, Trace)
    result = evaluate_case(case, trace)
    assert result.failed_checks == [
        "keyword_coverage: answer matches 1 of the root-cause keywords, needs 3; missing 'timeout'"
    ]
    assert result.matched_keyword_count == 1


# An answer of 3,000 characters: each phrase costs 1 + 3 steps, so a budget of 10 looks for two phrases.
BUDGET_ANSWER = "timeout in the connection pool; insufficient evidence. " + "x" * (3_000 - 55)


def budgeted(monkeypatch: pytest.MonkeyPatch, steps: int, **case_over: Any) -> list[str]:
    monkeypatch.setattr(search, "MAX_SEARCH_STEPS", steps)
    case = TraceCase.model_validate(case_dict(**case_over))
    trace = parse_trace(json.dumps(trace_dict(**{"session.answer": BUDGET_ANSWER})).encode(), "t.json")
    assert isinstance(trace, Trace) and len(trace.folded_answer.text) == 3_000
    return evaluate_case(case, trace).failed_checks


def stopped(looked: int, listed: int, field: str, steps: int = 10) -> str:
    return (
        f"stopped after looking for {looked} of the {listed} {field}: one check may spend {steps} steps, one per "
        "phrase per 1,000 characters of the answer (3,000 once normalised); list fewer phrases in the case"
    )


def test_a_check_past_its_search_budget_fails_saying_so_and_the_others_run(monkeypatch: pytest.MonkeyPatch) -> None:
    failed = budgeted(
        monkeypatch,
        10,
        expectedRootCauseKeywords=["absent one", "absent two", "timeout"],
        forbiddenAnswerKeywords=["absent one", "absent two", "certainly caused by"],
        forbiddenConfirmedClaimKeywords=["timeout", "absent", "certainly caused by"],
        requiredEvidenceTools=["query_traces"],
    )
    assert failed == [
        f"keyword_coverage: {stopped(2, 3, 'expectedRootCauseKeywords')}",
        "missing_evidence_tool: required tool 'query_traces' was never used "
        "(tools seen: 'lookup_knowledge', 'query_logs', 'query_metrics')",
        f"forbidden_answer_keyword: {stopped(2, 3, 'forbiddenAnswerKeywords')}",
        "forbidden_confirmed_claim: answer states the unsupported claim 'timeout' as if confirmed",
        f"forbidden_confirmed_claim: {stopped(2, 3, 'forbiddenConfirmedClaimKeywords')}",
    ]


def test_what_was_found_before_the_budget_ran_out_can_decide_a_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Enough keywords, or one degradation phrase, settle their checks however many phrases were not looked for."""
    assert (
        budgeted(
            monkeypatch,
            10,
            expectedRootCauseKeywords=["timeout", "connection pool", "absent"],
            minKeywordMatches=2,
            degradationKeywords=["insufficient evidence", "absent one", "absent two"],
        )
        == []
    )


def test_the_budget_is_a_bound_not_a_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three phrases cost exactly 12 steps: a budget of 12 looks for all of them, one of 11 does not."""
    keywords = {"expectedRootCauseKeywords": ["timeout", "connection pool", "absent"], "minKeywordMatches": 3}
    assert budgeted(monkeypatch, 12, **keywords) == [
        "keyword_coverage: answer matches 2 of the root-cause keywords, needs 3; missing 'absent'"
    ]
    assert budgeted(monkeypatch, 11, **keywords) == [
        f"keyword_coverage: {stopped(2, 3, 'expectedRootCauseKeywords', 11)}"
    ]


def test_a_long_phrase_costs_its_length_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A phrase of 5,000 characters costs 4 + 5 steps: with 10, only one phrase is looked for."""
    phrases = ["y" * 5_000, "certainly caused by"]
    assert budgeted(monkeypatch, 10, forbiddenAnswerKeywords=phrases) == [
        f"forbidden_answer_keyword: {stopped(1, 2, 'forbiddenAnswerKeywords')}"
    ]
