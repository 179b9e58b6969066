"""The trace suite's failure codes: public API (they appear in reports as `"<code>: <message>"`), defined once."""

from __future__ import annotations

from enum import StrEnum


class Code(StrEnum):
    KEYWORD_COVERAGE = "keyword_coverage"
    MISSING_EVIDENCE_TOOL = "missing_evidence_tool"
    VERDICT_MISSING = "verdict_missing"
    VERDICT_NOT_ALLOWED = "verdict_not_allowed"
    FORBIDDEN_ANSWER_KEYWORD = "forbidden_answer_keyword"
    REJECT_WITHOUT_DEGRADATION = "reject_without_degradation"
    CLAIM_UNBOUND = "claim_unbound"
    V2_MISSING = "v2_missing"
    RAW_JSON_LEAK = "raw_json_leak"
    CLAIM_CHECKS_EMPTY = "claim_checks_empty"
    CLAIM_CHECK_INVALID = "claim_check_invalid"
    GATEKEEPER_FAIL_WITH_PASS = "gatekeeper_fail_with_pass"
    GATEKEEPER_STATUS = "gatekeeper_status"
    GATEKEEPER_RULE_SET_VERSION = "gatekeeper_rule_set_version"
    COMPOSER_OUTPUT_MISSING = "composer_output_missing"
    COMPOSER_STATUS = "composer_status"
    FORBIDDEN_CONFIRMED_CLAIM = "forbidden_confirmed_claim"
    FIXTURE_MISSING = "fixture_missing"
    FIXTURE_INVALID = "fixture_invalid"
