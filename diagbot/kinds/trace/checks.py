"""The registry of trace checks. Each check has one job and a stable code; adding a check is adding a function.

A check takes the case and the parsed trace and returns one message per failure, saying what was expected
and what was found. The codes are public API: they appear in reports as `"<code>: <message>"`.

The answer is searched through `trace.search` (`search.py`): normalised once and capped, each phrase counted once
per normal form, and each check held to a work budget. When the answer was cut, or a check's budget ran out, a
failing message says so, and a check that looks for something that must be absent cannot pass: what it looks
for may be in the part that was not read, or among the phrases not looked for.

A message lists at most `_SHOWN_NAMES` names, each cut to `_SHOWN_NAME_CHARS`, then how many more there were:
one message per missing tool must not repeat every tool the trace used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from diagbot.core.text import MAX_FOLDED_CHARS, MAX_TEXT_CHARS
from diagbot.core.values import one_line
from diagbot.kinds.trace.cases import TraceCase
from diagbot.kinds.trace.codes import Code
from diagbot.kinds.trace.fixture import Trace
from diagbot.kinds.trace.search import Found

REJECT = "REJECT"
PASS = "PASS"
RAW_JSON_MARKERS = ("executor_evidence_v2", "answer_version", "evidence_bindings", "claim_id")
CLAIM_VERIFICATIONS = (
    "direct_observation",
    "reasonable_inference",
    "overstated",
    "unsupported",
    "external_unknown",
    "contradicted",
)

_SHOWN_NAMES = 12  # names one message lists before "… N more"
_SHOWN_NAME_CHARS = 100  # characters of one listed name before it is cut with "…"

CheckFn = Callable[[TraceCase, Trace], list[str]]
REGISTRY: dict[Code, CheckFn] = {}


def check(code: Code) -> Callable[[CheckFn], CheckFn]:
    """Register a check under its code; registration order is the order failures are listed in."""

    def register(fn: CheckFn) -> CheckFn:
        assert code not in REGISTRY, f"check {code} registered twice"
        REGISTRY[code] = fn
        return fn

    return register


def run_checks(case: TraceCase, trace: Trace) -> list[str]:
    """Every failed check as `"<code>: <message>"`, in registry order."""
    return [f"{code}: {message}" for code, fn in REGISTRY.items() for message in fn(case, trace)]


def _quote(items: Sequence[str]) -> str:
    """The items quoted, at most `_SHOWN_NAMES` of them and each escaped to one line and cut to `_SHOWN_NAME_CHARS`:
    a message stays short however many names, or however long a name, the case or the trace holds."""
    shown = ", ".join(f"'{one_line(item, _SHOWN_NAME_CHARS)}'" for item in items[:_SHOWN_NAMES])
    more = f", … {len(items) - _SHOWN_NAMES:,} more" if len(items) > _SHOWN_NAMES else ""
    return shown + more or "none"


def _found(value: str | None) -> str:
    return f"'{one_line(value, _SHOWN_NAME_CHARS)}'" if value else "absent"


CUT_NOTE = (
    f"the answer was cut: diagbot searches only its first {MAX_TEXT_CHARS:,} characters, "
    f"{MAX_FOLDED_CHARS:,} once normalised"
)


def _noted(trace: Trace, message: str) -> str:
    """`message`, plus a note when the answer searched was cut."""
    return f"{message} ({CUT_NOTE})" if trace.folded_answer.cut else message


def _absent(trace: Trace, phrases: Sequence[str], field_name: str, say: Callable[[str], str]) -> list[str]:
    """For phrases that must not be in the answer: `say(the phrases found)` if some were; if the answer was cut and
    none was found, or the budget ran out before every phrase was looked for, a failure all the same, since the
    part not read, or a phrase not looked for, may be there."""
    search = trace.search.find(phrases)
    failures = [_noted(trace, say(_quote(search.found)))] if search.found else []
    if search.stopped:
        failures.append(trace.search.budget_note(search, field_name))
    elif not search.found and phrases and trace.folded_answer.cut:
        failures.append(f"{CUT_NOTE}; the rest may hold {_quote(phrases)}")
    return failures


def keyword_search(case: TraceCase, trace: Trace) -> Found:
    """The root-cause keywords the answer holds (shared by the check and the report's matchedKeywordCount)."""
    return trace.search.find(case.expected_root_cause_keywords)


@check(Code.KEYWORD_COVERAGE)
def keyword_coverage(case: TraceCase, trace: Trace) -> list[str]:
    search = keyword_search(case, trace)
    need = case.required_keyword_matches
    if len(search.found) >= need:
        return []
    if search.stopped:
        return [trace.search.budget_note(search, "expectedRootCauseKeywords")]
    missing = _quote(search.missed)
    message = f"answer matches {len(search.found)} of the root-cause keywords, needs {need}; missing {missing}"
    return [_noted(trace, message)]


@check(Code.MISSING_EVIDENCE_TOOL)
def missing_evidence_tool(case: TraceCase, trace: Trace) -> list[str]:
    seen = trace.tools_seen
    missing = [tool for tool in case.required_evidence_tools if tool not in seen]
    if not missing:
        return []
    shown = _quote(sorted(seen))  # the same list in every message: built once
    return [f"required tool '{tool}' was never used (tools seen: {shown})" for tool in missing]


@check(Code.VERDICT_MISSING)
def verdict_missing(case: TraceCase, trace: Trace) -> list[str]:
    if trace.verdict:
        return []
    return ["the trace has no verifier verdict (session.selfEvaluation.verifier_evaluation.verdict)"]


@check(Code.VERDICT_NOT_ALLOWED)
def verdict_not_allowed(case: TraceCase, trace: Trace) -> list[str]:
    if not trace.verdict or not case.allowed_verdicts or trace.verdict in case.allowed_verdicts:
        return []
    return [f"verdict '{one_line(trace.verdict, _SHOWN_NAME_CHARS)}' is not one of {_quote(case.allowed_verdicts)}"]


@check(Code.FORBIDDEN_ANSWER_KEYWORD)
def forbidden_answer_keyword(case: TraceCase, trace: Trace) -> list[str]:
    phrases = case.forbidden_answer_keywords
    return _absent(trace, phrases, "forbiddenAnswerKeywords", lambda found: f"answer contains forbidden phrase {found}")


@check(Code.REJECT_WITHOUT_DEGRADATION)
def reject_without_degradation(case: TraceCase, trace: Trace) -> list[str]:
    if trace.verdict != REJECT:
        return []
    if not case.degradation_keywords:
        return ["verdict is REJECT but the case sets no degradationKeywords, so degradation cannot be shown"]
    search = trace.search.find(case.degradation_keywords)
    if search.found:
        return []
    if search.stopped:
        return [trace.search.budget_note(search, "degradationKeywords")]
    markers = _quote(case.degradation_keywords)
    return [_noted(trace, f"verdict is REJECT but the answer has none of the degradation markers {markers}")]


@check(Code.CLAIM_UNBOUND)
def claim_unbound(case: TraceCase, trace: Trace) -> list[str]:
    executor = trace.verifier.executor_structured_output if trace.verifier else None
    if executor is None or executor.claims is None:
        return []
    return [
        f"confirmed claim claims[{index}] has no evidence_bindings"
        for index, claim in enumerate(executor.claims)
        if (claim.status or "confirmed").strip().casefold() == "confirmed" and not _bound(claim.evidence_bindings)
    ]


def _bound(bindings: list[Any] | None) -> bool:
    """Whether a claim names some evidence: a binding that is null or empty (`[null]`, `[{}]`) binds nothing."""
    return any(binding not in (None, "", [], {}) for binding in bindings or [])


@check(Code.V2_MISSING)
def v2_missing(case: TraceCase, trace: Trace) -> list[str]:
    if not case.require_v2_audit_closure:
        return []
    verifier = trace.verifier
    parts = {
        "gatekeeper_result": verifier.gatekeeper_result if verifier else None,
        "claim_checks": verifier.claim_checks if verifier else None,
        "composer_output": verifier.composer_output if verifier else None,
    }
    return [
        f"V2 audit closure needs verifier_evaluation.{name}, which is absent" for name, v in parts.items() if v is None
    ]


@check(Code.RAW_JSON_LEAK)
def raw_json_leak(case: TraceCase, trace: Trace) -> list[str]:
    if not case.require_v2_audit_closure:
        return []
    return _absent(
        trace,
        RAW_JSON_MARKERS,
        "internal field names",
        lambda leaked: f"answer leaks internal structured-output field(s) {leaked}",
    )


@check(Code.CLAIM_CHECKS_EMPTY)
def claim_checks_empty(case: TraceCase, trace: Trace) -> list[str]:
    if not case.require_claim_checks:
        return []
    if trace.verifier and trace.verifier.claim_checks:
        return []
    return ["requireClaimChecks is set but verifier_evaluation.claim_checks is absent or empty"]


@check(Code.CLAIM_CHECK_INVALID)
def claim_check_invalid(case: TraceCase, trace: Trace) -> list[str]:
    if not (case.require_v2_audit_closure or case.require_claim_checks) or not trace.verifier:
        return []
    problems = []
    for index, item in enumerate(trace.verifier.claim_checks or []):
        if not isinstance(item, dict):
            problems.append(f"claim_checks[{index}] is not an object")
            continue
        lacking = [key for key in ("claim_id", "verification", "detail") if item.get(key) in (None, "")]
        if lacking:
            problems.append(f"claim_checks[{index}] lacks {_quote(lacking)}")
        elif item["verification"] not in CLAIM_VERIFICATIONS:
            problems.append(
                f"claim_checks[{index}] has verification '{one_line(str(item['verification']), _SHOWN_NAME_CHARS)}', "
                f"expected one of {_quote(CLAIM_VERIFICATIONS)}"
            )
    return problems


@check(Code.GATEKEEPER_FAIL_WITH_PASS)
def gatekeeper_fail_with_pass(case: TraceCase, trace: Trace) -> list[str]:
    gatekeeper = trace.verifier.gatekeeper_result if trace.verifier else None
    if gatekeeper and gatekeeper.status == "fail" and trace.verdict == PASS:
        return ["gatekeeper failed the answer but the verifier still says PASS"]
    return []


def _gatekeeper_field(trace: Trace, name: str) -> str | None:
    gatekeeper = trace.verifier.gatekeeper_result if trace.verifier else None
    return getattr(gatekeeper, name) if gatekeeper else None


@check(Code.GATEKEEPER_STATUS)
def gatekeeper_status(case: TraceCase, trace: Trace) -> list[str]:
    status = _gatekeeper_field(trace, "status")
    if not case.expected_gatekeeper_statuses or status in case.expected_gatekeeper_statuses:
        return []
    return [f"gatekeeper status is {_found(status)}, expected {_quote(case.expected_gatekeeper_statuses)}"]


@check(Code.GATEKEEPER_RULE_SET_VERSION)
def gatekeeper_rule_set_version(case: TraceCase, trace: Trace) -> list[str]:
    version = _gatekeeper_field(trace, "rule_set_version")
    expected = case.expected_gatekeeper_rule_set_version
    if expected is None or version == expected:
        return []
    return [f"gatekeeper rule set is {_found(version)}, expected '{expected}'"]


def _composer_status(trace: Trace) -> str | None:
    composer = trace.verifier.composer_output if trace.verifier else None
    return composer.status if composer else None


@check(Code.COMPOSER_OUTPUT_MISSING)
def composer_output_missing(case: TraceCase, trace: Trace) -> list[str]:
    if case.require_composer_output and not _composer_status(trace):
        return ["requireComposerOutput is set but verifier_evaluation.composer_output.status is absent"]
    return []


@check(Code.COMPOSER_STATUS)
def composer_status(case: TraceCase, trace: Trace) -> list[str]:
    status = _composer_status(trace)
    if not case.expected_composer_statuses or status in case.expected_composer_statuses:
        return []
    return [f"composer status is {_found(status)}, expected {_quote(case.expected_composer_statuses)}"]


@check(Code.FORBIDDEN_CONFIRMED_CLAIM)
def forbidden_confirmed_claim(case: TraceCase, trace: Trace) -> list[str]:
    return _absent(
        trace,
        case.forbidden_confirmed_claim_keywords,
        "forbiddenConfirmedClaimKeywords",
        lambda found: f"answer states the unsupported claim {found} as if confirmed",
    )
