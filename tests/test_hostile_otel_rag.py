"""Hostile input to the agent suite's OpenTelemetry run formats (OTLP/JSON, JSON Lines, GenAI and OpenInference
spans), OpenAI Responses items and the RAG checks (gold evidence, evidence recall at K, citation accuracy, the
required citation, `citation-pattern`, thresholds).

Exports start from the real OpenTelemetry SDK (tests/otel_recorder.py) with one value changed where the SDK could
not write it. Runs go through `python -m diagbot run` (tests/test_hostile_agent.py's harness: a hostile case next
to a good one, a timeout and an address-space limit) where the promise is about the whole run (the trial fails
alone, the report is written, no traceback), and through the adapters and checks in process where the promise is
about one message.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace

from diagbot.core.values import one_line
from diagbot.kinds.agent.load import case_problems
from diagbot.kinds.agent.run import Run
from tests.otel_recorder import START_NS, STEP_NS, Recorder, json_lines
from tests.test_agent_checks import judge_run, make_case
from tests.test_agent_otel import (
    SPAN,
    call_part,
    chat,
    parse,
    problem,
    replaced,
    response_part,
    say,
    steps,
    text,
    tool,
)
from tests.test_hostile_agent import Result, assert_clean, case, diagbot, evaluated, make_suite, refused

SPANS = ("resourceSpans", 0, "scopeSpans", 0, "spans")
PATTERN = r"\[(?P<doc_id>[^\]#]+)(?:#(?P<passage_id>[^\]]+))?\]"
CITING = f"    citation-pattern: '{PATTERN}'\n"
GOLD = [
    {"doc_id": "policy_audio", "passage_id": "p12", "required": True},
    {"doc_id": "policy_general", "required": False},
]
RAG: dict[str, Any] = {"gold_evidence": GOLD, "evaluation_metrics": ["evidence_recall_at_5", "citation_accuracy"]}
TRACE_ID = "5b8efff798038103d269b633813fc60c"

# --- factories --------------------------------------------------------------------------------------------------------


def exported(answer: str = "done", documents: Any = None, user: str = "Can I return opened earphones?") -> Any:
    """A GenAI export: a retrieval span when `documents` is given (as JSON text), then a model call answering."""
    rec = Recorder()
    if documents is not None:
        rec.span(
            "retrieval policies",
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "return opened earphones",
                "gen_ai.retrieval.documents": json.dumps(documents),
            },
        )
    chat(rec, [say("user", text(user))], [say("assistant", text(answer))])
    return rec.otlp()


def spans_of(export: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return found


def set_attribute(export: Any, index: int, key: str, value: dict[str, Any]) -> Any:
    """The export with span `index`'s attribute `key` set to the AnyValue `value` (added when absent)."""
    export = copy.deepcopy(export)
    attributes = spans_of(export)[index]["attributes"]
    for attribute in attributes:
        if attribute["key"] == key:
            attribute["value"] = value
            return export
    attributes.append({"key": key, "value": value})
    return export


def flat(prefix: str, role: str, content: str | None = None) -> dict[str, str]:
    """One OpenInference message, flattened under `prefix` (`llm.input_messages.0`)."""
    return {f"{prefix}.message.role": role, **({f"{prefix}.message.content": content} if content is not None else {})}


def suite_of(tmp_path: Path, runs: dict[str, tuple[Any, dict[str, Any]]], options: str = "") -> Result:
    """One run of a suite holding, for each name, a case of that id with `fields` and its run, beside the good
    case; the suite is evaluated (exit 0, clean, the good case passed)."""
    cases = {f"{name}.json": case(name, **fields) for name, (_, fields) in runs.items()}
    fixtures = {f"{name}.json": run for name, (run, _) in runs.items()}
    return evaluated(diagbot(make_suite(tmp_path, cases, fixtures, options)))


def failed(result: Result, case_id: str) -> list[str]:
    """The case's failed checks, the case having one trial and the same failures as that trial."""
    found = result.result(case_id)
    assert result.trials(case_id) == [found["failedChecks"]]
    assert found["status"] == ("failed" if found["failedChecks"] else "passed")
    failures: list[str] = found["failedChecks"]
    return failures


def failures_of(run: Run, pattern: str | None = None, **fields: Any) -> list[str]:
    """One trial's failures in process, as evaluate_case judges it."""
    return judge_run(make_case(**fields), run, citation_pattern=pattern)


NOT_CALLED = {"evaluator_config": {"rule_checks": [{"id": "no_refund", "tool_not_called": "refund_submit"}]}}


# --- the OTLP envelope: each bad value fails its own trial, naming the JSON path --------------------------------------

BASE = exported()
SPAN0 = (*SPANS, 0)
TWO_SPANS = replaced(
    BASE, SPANS, [*spans_of(BASE), copy.deepcopy(spans_of(BASE)[0])]
)  # the first moved to another trace


def _kvlist(levels: int) -> dict[str, Any]:
    """A string inside `levels` nested key-value lists (each one key, `k`)."""
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
    return value


ENVELOPE: dict[str, tuple[Any, str]] = {
    "trace-id-31": (
        replaced(BASE, (*SPAN0, "traceId"), "a" * 31),
        f"{SPAN}.traceId: expected 32 hex digits (OTLP/JSON writes ids in hex, not base64), found '{'a' * 31}'",
    ),
    "span-id-17": (
        replaced(BASE, (*SPAN0, "spanId"), "b" * 17),
        f"{SPAN}.spanId: expected 16 hex digits (OTLP/JSON writes ids in hex, not base64), found '{'b' * 17}'",
    ),
    "parent-id-number": (
        replaced(BASE, (*SPAN0, "parentSpanId"), 12),
        f"{SPAN}.parentSpanId: expected 16 hex digits (OTLP/JSON writes ids in hex, not base64), found a number",
    ),
    "start-plus-sign": (
        replaced(BASE, (*SPAN0, "startTimeUnixNano"), "+5"),
        f"{SPAN}.startTimeUnixNano: expected a 64-bit integer as a decimal string, found '+5'",
    ),
    "start-exponent": (
        replaced(BASE, (*SPAN0, "startTimeUnixNano"), "1e18"),
        f"{SPAN}.startTimeUnixNano: expected a 64-bit integer as a decimal string, found '1e18'",
    ),
    "start-below-int64": (
        replaced(BASE, (*SPAN0, "startTimeUnixNano"), "-9223372036854775809"),
        f"{SPAN}.startTimeUnixNano: -9223372036854775809 does not fit in 64 bits",
    ),
    "end-above-uint64": (
        replaced(BASE, (*SPAN0, "endTimeUnixNano"), "18446744073709551616"),
        f"{SPAN}.endTimeUnixNano: 18446744073709551616 does not fit in 64 bits",
    ),
    "end-float": (
        replaced(BASE, (*SPAN0, "endTimeUnixNano"), 1.5),
        f"{SPAN}.endTimeUnixNano: expected a 64-bit integer as a decimal string, found a number",
    ),
    "status-code-text": (
        replaced(BASE, (*SPAN0, "status"), {"code": "2"}),
        f"{SPAN}.status.code: expected an integer (OTLP/JSON writes enums as numbers; 2 is ERROR), found '2'",
    ),
    "status-null": (replaced(BASE, (*SPAN0, "status"), None), f"{SPAN}.status: expected an object, found null"),
    "attributes-object": (
        replaced(BASE, (*SPAN0, "attributes"), {"gen_ai.operation.name": "chat"}),
        f"{SPAN}.attributes: expected an array, found an object",
    ),
    "int-value-overflow": (
        set_attribute(BASE, 0, "gen_ai.operation.name", {"intValue": "9223372036854775808" + "0"}),
        f'{SPAN}.attributes["gen_ai.operation.name"].intValue: 92233720368547758080 does not fit in 64 bits',
    ),
    "bool-value-text": (
        set_attribute(BASE, 0, "gen_ai.operation.name", {"boolValue": "true"}),
        f'{SPAN}.attributes["gen_ai.operation.name"].boolValue: expected true or false, found a string',
    ),
    "kvlist-33-deep": (
        set_attribute(BASE, 0, "gen_ai.output.messages", _kvlist(33)),
        f'{SPAN}.attributes["gen_ai.output.messages"]'
        + ".kvlistValue.values[0].value" * 32
        + ": nested more than 32 levels deep",
    ),
    "spans-of-two-traces": (
        replaced(TWO_SPANS, (*SPAN0, "traceId"), TRACE_ID),
        f"$: holds spans of 2 traces ({TRACE_ID}, 00005eed000000000000000000000001); a file is one run: export "
        "each trace to a file",
    ),
}


def test_bad_envelope_values_fail_only_their_own_trial(tmp_path: Path) -> None:
    """Fifteen broken exports in one suite: each case fails with trace_invalid naming its file and JSON path, and
    the good case beside them still passes."""
    result = suite_of(tmp_path, {name: (run, {}) for name, (run, _) in ENVELOPE.items()})
    for name, (_, message) in ENVELOPE.items():
        assert failed(result, name) == [f"trace_invalid: {name}.json: {message}"], name


def test_thousands_of_traces_are_named_briefly() -> None:
    span = spans_of(BASE)[0]
    many = [{**span, "traceId": f"{i + 1:032x}"} for i in range(10_000)]
    shown = ", ".join(f"{i:032x}" for i in range(1, 6))
    assert problem({"resourceSpans": [{"scopeSpans": [{"spans": many}]}]}) == (
        f"$: holds spans of 10000 traces ({shown} and 9995 more); a file is one run: export each trace to a file"
    )


def test_int64_extremes_and_parent_cycles_are_read(tmp_path: Path) -> None:
    """The widest times OTLP allows give a duration, not an overflow; parents that form a cycle do not matter: the
    spans are ordered by start time, and a walk up the parent links stops within its bound."""
    rec = Recorder()
    rec.span("invoke_agent", {"gen_ai.operation.name": "invoke_agent"})
    chat(rec, [say("user", text("Refund A?"))], [say("assistant", call_part("c1", "order_lookup", {"id": "A"}))])
    tool(rec, "order_lookup", "c1", result="signed")
    chat(rec, [say("user", text("Refund A?"))], [say("assistant", text("done"))])
    export = rec.otlp()
    spans = spans_of(export)
    spans[0]["startTimeUnixNano"], spans[0]["endTimeUnixNano"] = "-9223372036854775808", "18446744073709551615"
    for n, span in enumerate(spans):
        span["spanId"] = f"{n + 1:016x}"
        span["parentSpanId"] = f"{(n + 1) % len(spans) + 1:016x}"  # each the next one's child, the last the first's
    spans.reverse()
    assert steps(parse(export)) == [
        ("user", "Refund A?"),
        ("call", "order_lookup", "c1", {"id": "A"}, "signed", False),  # its arguments from the model call's output
        ("assistant", "done"),
    ]  # the latest model call's conversation; the tool span of a call it does not record, placed by start time
    broken = replaced(replaced(export, (*SPANS, 3, "startTimeUnixNano"), "5"), (*SPANS, 3, "endTimeUnixNano"), "4")
    result = suite_of(
        tmp_path,
        {"wide": (export, {"service_level": {"max_duration_ms": 1000}}), "backwards": (broken, {})},
    )
    assert failed(result, "wide") == [
        "constraint_failed: service_level.max_duration_ms: duration ms 2.76701e+13 > 1000"
    ]
    assert result.result("wide")["durationMs"] == 27670116110564.33
    assert failed(result, "backwards") == [
        "trace_invalid: backwards.json: $.resourceSpans[0].scopeSpans[0].spans[3].endTimeUnixNano: the span ends "
        "before it starts"
    ]


# --- JSON text inside attributes, and JSON Lines ----------------------------------------------------------------------

DOCUMENTS = f'{SPAN}.attributes["gen_ai.retrieval.documents"]'


@pytest.mark.parametrize(
    ("documents", "message"),
    [
        ('[{"id": "a", "score": NaN}]', f"{DOCUMENTS}: cannot be read: NaN, which is not a JSON number"),
        ('[{"id": "a", "score": 1e999}]',
         f"{DOCUMENTS}: cannot be read: the number 1e999, which is too large to read (past 1.8e308)"),
        ("[" * 100_000 + "]" * 100_000, f"{DOCUMENTS}: nested too deeply to read"),
        ('\ufeff[{"id": "a"}]', f"{DOCUMENTS}: not valid JSON at line 1 column 1 (Unexpected UTF-8 BOM (decode using "
                                "utf-8-sig))"),
        ('[{"id": "a"}] []', f"{DOCUMENTS}: not valid JSON at line 1 column 15 (Extra data)"),
        ('{"id": "a"}', f"{DOCUMENTS}: expected an array, found an object"),
        ('[{"id": 1.5}]', f"{DOCUMENTS}[0].id: expected a string or a whole number, found a number"),
        (json.dumps([{"id": "a"}] * 10_001),
         f"{DOCUMENTS}: has 10,001 items; diagbot reads at most 10,000 per run"),
    ],
    ids=["NaN", "1e999", "nested-100k", "bom", "extra-data", "object", "float-id", "10001-documents"],
)  # fmt: skip
def test_hostile_json_text_in_an_attribute_names_the_attribute(documents: str, message: str) -> None:
    rec = Recorder()
    rec.span("retrieval", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": documents})
    assert problem(rec.otlp()) == message


def test_a_lone_surrogate_in_json_text_is_replaced_not_refused() -> None:
    run = parse(exported("done", documents=[{"id": "\ud800x"}]))
    assert [d.id for d in run.retrievals[0].documents] == ["\ufffdx"]


def test_structured_values_32_levels_deep_are_read() -> None:
    export = set_attribute(BASE, 0, "diagbot.final_state", _kvlist(32))
    export = set_attribute(export, 0, "gen_ai.operation.name", {"stringValue": "invoke_agent"})
    state = parse(export).final_state
    for _ in range(31):
        assert state is not None
        state = state["k"]
    assert state == {"k": "x"}


LINES = json_lines(*[{"resourceSpans": [{"scopeSpans": [{"spans": [s]}]}]} for s in spans_of(BASE)])


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (LINES + b'{"resourceSpans": NaN}\n', "line 2: cannot be read: NaN, which is not a JSON number"),
        (LINES + b"null\n", "line 2: $: expected an object, found null"),
        (LINES + b'[{"role": "user", "content": "x"}]\n', "line 2: $: expected an object, found an array"),
        (LINES + b"\xef\xbb\xbf{}\n", "line 2: not valid JSON at line 1 column 1 (Unexpected UTF-8 BOM (decode using "
                                      "utf-8-sig))"),
        (LINES + b"[" * 100_000 + b"]" * 100_000 + b"\n", "line 2: nested too deeply to be a run"),
        (LINES * 10_001, "line 10001: more than 10,000 JSON Lines; diagbot reads at most that many"),
        (LINES + b'{"resourceSpan": []}\n', "line 2: $: holds no resourceSpans, but 'resourceSpan', which OTLP/JSON "
                                             "does not have; the spans of a misspelt resourceSpans would go unseen"),
        (LINES + b'{"messages": []}\n', "line 2: $: holds no resourceSpans, but 'messages', which OTLP/JSON does not "
                                         "have; the spans of a misspelt resourceSpans would go unseen"),
        (LINES + b'{"resourceSpans": [{"resource": {}, "scopeSpan": []}]}\n',
         "line 2: $.resourceSpans[0]: holds no scopeSpans, but 'scopeSpan', which OTLP/JSON does not have; the spans "
         "of a misspelt scopeSpans would go unseen"),
        (LINES + b'{"resourceSpans": [{"scopeSpans": [{"scope": {}, "span": []}]}]}\n',
         "line 2: $.resourceSpans[0].scopeSpans[0]: holds no spans, but 'span', which OTLP/JSON does not have; the "
         "spans of a misspelt spans would go unseen"),
    ],
    ids=["NaN", "null", "chat-messages", "bom", "nested-100k", "10001-lines", "resource-span", "chat-line",
         "scope-span", "span"],
)  # fmt: skip
def test_a_bad_json_line_is_named_by_its_line(data: bytes, message: str) -> None:
    assert problem(data) == message


def test_empty_otlp_messages_and_the_old_instrumentation_library_name_are_read() -> None:
    """An empty request (proto3 reads a missing list as empty) adds nothing; spans under OTLP's name before 0.15,
    `instrumentationLibrarySpans`, are read as those under `scopeSpans` (old exporters still write it)."""
    (span,) = spans_of(BASE)
    old = {"resourceSpans": [{"instrumentationLibrarySpans": [{"instrumentationLibrary": {}, "spans": [span]}]}]}
    assert steps(parse(json_lines(old, {}, {"resourceSpans": [{"resource": {}}]}))) == steps(parse(BASE))


def test_json_lines_with_crlf_and_a_lone_surrogate_are_read() -> None:
    run = parse(LINES.replace(b"\n", b"\r\n") + b'{"resourceSpans": [{"schemaUrl": "\\ud800"}]}\r\n')
    assert steps(run) == [("user", "Can I return opened earphones?"), ("assistant", "done")]


# --- OpenInference flattened keys -------------------------------------------------------------------------------------


def test_openinference_indexes_with_gaps_are_read_in_order_and_huge_ones_refused() -> None:
    rec = Recorder()
    rec.span(
        "llm",
        {
            "openinference.span.kind": "LLM",
            **flat("llm.input_messages.7", "user", "second"),
            **flat("llm.input_messages.2", "user", "first"),
            **flat("llm.output_messages.9999", "assistant", "done"),
        },
    )
    assert steps(parse(rec.otlp())) == [("user", "first"), ("user", "second"), ("assistant", "done")]
    for index in ("10000", "99999999", "9" * 5_000):
        rec = Recorder()
        rec.span("llm", {"openinference.span.kind": "LLM", **flat(f"llm.output_messages.{index}", "assistant", "x")})
        where = one_line(f'{SPAN}.attributes["llm.output_messages.{index}"]')  # a 5,000-digit key cut to 2,000
        assert problem(rec.otlp()) == f"{where}: index {index[:20]}; diagbot reads at most 10,000"


@pytest.mark.parametrize("index", ["-1", "+1", " 1", "\u0663"], ids=["negative", "plus", "space", "arabic-digit"])
def test_a_call_under_a_malformed_openinference_index_is_not_silently_dropped(tmp_path: Path, index: str) -> None:
    rec = Recorder()
    calls = f"llm.output_messages.0.message.tool_calls.{index}.tool_call"
    rec.span(
        "llm",
        {
            "openinference.span.kind": "LLM",
            **flat("llm.input_messages.0", "user", "Refund order A"),
            **flat("llm.output_messages.0", "assistant", "done"),
            f"{calls}.id": "c1",
            f"{calls}.function.name": "refund_submit",
        },
    )
    result = suite_of(tmp_path, {"hostile": (rec.otlp(), NOT_CALLED)})
    assert failed(result, "hostile") == [
        f'trace_invalid: hostile.json: {SPAN}.attributes["{calls}.id"]: list index {index!r} after '
        "llm.output_messages.0.message.tool_calls; an index must be a whole number from 0 (ASCII digits)"
    ]


# --- one conversation from many spans ---------------------------------------------------------------------------------


def test_a_later_model_call_with_empty_message_lists_does_not_hide_the_answer(tmp_path: Path) -> None:
    rec = Recorder()
    chat(rec, [say("user", text("What is my card?"))], [say("assistant", text("done: 4111111111111111"))])
    rec.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]", "gen_ai.output.messages": "[]"})
    fields = {"evaluator_config": {"rule_checks": [{"id": "no_card", "answer_not_matches": r"\b\d{16}\b"}]}}
    result = suite_of(tmp_path, {"hostile": (rec.otlp(), fields)})
    assert failed(result, "hostile") == ["rule_failed: no_card: the answer matches /\\b\\d{16}\\b/"]


def test_a_tool_result_without_an_id_says_so_plainly() -> None:
    rec = Recorder()
    chat(rec, [say("user", text("hi")), say("tool", {"type": "tool_call_response", "response": "r"})], [])
    message = problem(rec.otlp())
    assert message.startswith(f'{SPAN}.attributes["gen_ai.input.messages"][1].parts[0]: ')
    assert "None" not in message


def _refund_of(amount: dict[str, Any]) -> Any:
    """A refund call whose arguments a tool span records as a structured value: {amount: `amount`}."""
    rec = Recorder()
    chat(rec, [say("user", text("Refund 50"))], [say("assistant", call_part("c1", "refund_submit"))])
    tool(rec, "refund_submit", "c1", arguments="{}", result="ok")
    chat(rec, [say("user", text("Refund 50"))], [say("assistant", text("done"))])
    arguments = {"kvlistValue": {"values": [{"key": "amount", "value": amount}]}}
    return set_attribute(rec.otlp(), 1, "gen_ai.tool.call.arguments", arguments)


AMOUNT = {"tool_schema": {"refund_submit": {"type": "object", "properties": {"amount": {"type": "number",
                                                                                        "maximum": 100}}}}}  # fmt: skip


def test_structured_arguments_are_validated_against_the_schema(tmp_path: Path) -> None:
    runs = {
        "infinity": (_refund_of({"doubleValue": "Infinity"}), AMOUNT),
        "too-big": (_refund_of({"doubleValue": 1e9}), AMOUNT),
        "int-in-range": (_refund_of({"intValue": "50"}), AMOUNT),
    }
    result = suite_of(tmp_path, runs)
    assert {name: failed(result, name) for name in runs} == {
        "infinity": ["tool_args_invalid: refund_submit (call 1): amount: inf is greater than the maximum of 100"],
        "too-big": ["tool_args_invalid: refund_submit (call 1): amount: 1000000000.0 is greater than the maximum of "
                    "100"],
        "int-in-range": [],
    }  # fmt: skip


def test_a_nan_argument_does_not_pass_a_schema_maximum(tmp_path: Path) -> None:
    result = suite_of(tmp_path, {"hostile": (_refund_of({"doubleValue": "NaN"}), AMOUNT)})
    assert failed(result, "hostile") == [
        f'trace_invalid: hostile.json: {SPAN.replace("spans[0]", "spans[1]")}.attributes["gen_ai.tool.call.arguments"]'
        ".kvlistValue.values[0].value.doubleValue: expected a number, found NaN, which no check can compare"
    ]


# --- OpenAI Responses items -------------------------------------------------------------------------------------------

CALL = {"type": "function_call", "call_id": "c1", "name": "refund_submit", "arguments": "{}"}
ANSWER = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}


NO_TYPE = "$.output[0]: an item with neither type nor role; expected a typed item (message, function_call, ...)"


@pytest.mark.parametrize(
    ("item", "problem"),
    [
        ({**CALL, "type": None}, NO_TYPE),
        ({**CALL, "type": ["function_call"]},
         "$.output[0].type: expected a string naming the item's type (message, function_call, ...), found an array"),
        ({k: v for k, v in CALL.items() if k != "type"}, NO_TYPE),
    ],
    ids=["type-null", "type-list", "no-type"],
)  # fmt: skip
def test_a_responses_item_of_no_type_is_not_silently_skipped(
    tmp_path: Path, item: dict[str, Any], problem: str
) -> None:
    run = {"input": "Refund order A", "output": [item, ANSWER]}
    result = suite_of(tmp_path, {"hostile": (run, NOT_CALLED)})
    assert failed(result, "hostile") == [f"trace_invalid: hostile.json: {problem}"]


def test_hostile_responses_items_name_the_item(tmp_path: Path) -> None:
    runs = {
        "unknown-call": {"output": [{"type": "function_call_output", "call_id": "zz", "output": "r"}]},
        "output-object": {"output": [CALL, {"type": "function_call_output", "call_id": "c1", "output": {"a": 1}}]},
        "call-id-number": {"output": [{**CALL, "call_id": 7}]},
        "input-number": {"input": 5, "output": [ANSWER]},
    }
    result = suite_of(tmp_path, {name: (run, {}) for name, run in runs.items()}, "    trace-format: openai-responses\n")
    assert {name: failed(result, name) for name in runs} == {
        "unknown-call": [
            "trace_invalid: unknown-call.json: $.output[0].call_id: an output for 'zz', which no earlier call made"
        ],
        "output-object": [
            "trace_invalid: output-object.json: $.output[1].output: expected text, null or a list of content parts, "
            "found an object"
        ],
        "call-id-number": [
            "trace_invalid: call-id-number.json: $.output[0].call_id: expected a string, found a number"
        ],
        "input-number": ["trace_invalid: input-number.json: $.input: expected an array, found a number"],
    }


def test_the_responses_tool_calls_besides_functions_are_calls() -> None:
    """custom_tool_call, mcp_call and the hosted tools' calls were skipped: a case forbidding refund_submit
    passed a run that called it as a custom or MCP tool."""
    run = parse(
        [
            {"type": "custom_tool_call", "call_id": "c1", "name": "refund_submit", "input": "order A"},
            {"type": "custom_tool_call_output", "call_id": "c1", "output": "ok"},
            {"type": "mcp_call", "id": "m1", "name": "refund_submit", "arguments": '{"order": "B"}', "output": "done",
             "server_label": "shop"},
            {"type": "mcp_call", "id": "m2", "name": "refund_submit", "arguments": "{}", "error": "denied"},
            {"type": "mcp_call", "id": "m3", "name": "refund_submit", "arguments": "{}", "status": "failed"},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"},
            {"type": "computer_call", "id": "cu_1", "call_id": "c2", "status": "failed", "action": {"type": "click"}},
            {"type": "computer_call_output", "call_id": "c2", "output": {"type": "computer_screenshot"}},
            {"type": "reasoning", "id": "r1", "summary": []},
            {"type": "local_shell_call", "id": "lsh_1", "call_id": "c3", "status": "completed"},
            {"type": "local_shell_call_output", "id": "c3", "output": "a.txt"},  # names its call by `id`
            {"type": "file_search_call_output", "id": "nobody", "output": "x"},  # pairs with nothing: left alone
            ANSWER,
        ],
        "openai-responses",
    )  # fmt: skip
    assert steps(run) == [  # each model output that only calls tools is a turn, as in a chat file
        ("assistant", ""),
        ("call", "refund_submit", "c1", {"input": "order A"}, "ok", False),
        ("assistant", ""),
        ("call", "refund_submit", "m1", {"order": "B"}, "done", False),
        ("call", "refund_submit", "m2", {}, "-", True),
        ("call", "refund_submit", "m3", {}, "-", True),
        ("call", "web_search", None, {}, "-", False),
        ("call", "computer", "c2", {"type": "click"}, {"type": "computer_screenshot"}, True),  # its action
        ("assistant", ""),
        ("call", "local_shell", "c3", {}, "a.txt", False),
        ("assistant", "done"),
    ]
    assert failures_of(run, **NOT_CALLED) == ["rule_failed: no_refund: refund_submit (call 1) was called"]
    assert problem([{"type": "_call", "id": "x"}, ANSWER], "openai-responses").startswith(  # typed as a call, no tool
        "$[0].type: '_call' is not an item type diagbot reads, but the item holds a call or text"
    )


@pytest.mark.parametrize(
    ("fmt", "run", "where"),
    [
        ("openai-chat", [{"role": "user", "content": "hi"}, {"role": "Assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "refund_submit", "arguments": "{}"}}]}],
         "$[1].role", ),
        ("diagbot", {"format": "diagbot-agent-trace", "version": 1, "steps": [
            {"kind": "message", "role": "ai", "content": "card 4111111111111111"}]}, "$.steps[0].role"),
        ("openai-responses", [{"type": "message", "role": "model", "content": "card 4111111111111111"}],
         "$[0].role"),
    ],
    ids=["chat", "native", "responses"],
)  # fmt: skip
def test_a_message_under_a_role_diagbot_does_not_read_is_refused(fmt: str, run: Any, where: str) -> None:
    """Its text was never the answer and its calls never counted: an `Assistant` or `ai` message hid what the
    checks look for."""
    results = {"openai-chat": "tool or function", "diagbot": "a tool_call step"}.get(fmt, "a function_call_output item")
    role = run[1]["role"] if fmt == "openai-chat" else (run["steps"][0] if fmt == "diagbot" else run[0])["role"]
    assert problem(run, fmt) == (
        f"{where}: role {role!r} is not one diagbot reads (system, developer, user, assistant, or {results} for a "
        "result); write the agent's messages as assistant"
    )


def test_a_genai_or_openinference_message_under_another_role_is_refused() -> None:
    rec = Recorder()
    chat(rec, [say("user", text("hi"))], [say("model", text("card 4111111111111111"))])
    assert problem(rec.otlp()) == (
        f"{SPAN}.attributes[\"gen_ai.output.messages\"][0].role: role 'model' is not one diagbot reads (system, "
        "developer, user, assistant, or tool for a result); write the agent's messages as assistant"
    )
    rec = Recorder()
    rec.span("llm", {"openinference.span.kind": "LLM", **flat("llm.output_messages.0", "ai", "card 4111111111111111")})
    assert problem(rec.otlp()) == (
        f"{SPAN}.attributes[\"llm.output_messages.0.message.role\"]: role 'ai' is not one diagbot reads (system, "
        "developer, user, assistant, or tool for a result); write the agent's messages as assistant"
    )


# --- RAG checks over OpenTelemetry runs -------------------------------------------------------------------------------


def test_rag_checks_over_otlp_runs(tmp_path: Path) -> None:
    """Duplicate citations count once, documents recorded without an id are never gold evidence, an id written
    as a number matches a gold id written as text, and the metrics land in the report."""
    found = [{"id": "policy_general", "score": 0.9}, {"id": "policy_audio", "score": 0.8}]
    runs = {
        "right": (exported("done [policy_audio#p12] [policy_general]", found), RAG),
        "duplicates": (exported("done [made_up] [made_up] [made_up] [policy_audio#p12]", found), RAG),
        "no-ids": (exported("done [policy_audio#p12]", [{"score": 0.9}, {"score": 0.8}]), RAG),
        "numeric-id": (
            exported("done [42#p1]", [{"id": 42}]),
            {"gold_evidence": [{"doc_id": "42", "passage_id": "p1"}], "evaluation_metrics": RAG["evaluation_metrics"]},
        ),
    }
    result = suite_of(tmp_path, runs, CITING)
    assert {name: failed(result, name) for name in runs} == {
        "right": [],
        "duplicates": ["citation_inaccurate: citation_accuracy 0.50 < 1 (not gold evidence: made_up)"],
        "no-ids": ["evidence_recall_low: evidence_recall_at_5 0.00 < 1 (not in the top 5: policy_audio#p12)"],
        "numeric-id": [],
    }
    assert result.result("right")["metrics"] == {"evidence_recall_at_5": 1.0, "citation_accuracy": 1.0}
    assert result.result("duplicates")["metrics"] == {"evidence_recall_at_5": 1.0, "citation_accuracy": 0.5}


def test_two_hundred_thousand_documents_and_a_thousand_metrics_are_bounded(tmp_path: Path) -> None:
    """19 OpenInference retrievers of 9,999 documents each (16 MB), a thousand required gold items and 999 values
    of K: one pass over the documents, the failures listed briefly."""

    def attribute(key: str, value: str) -> dict[str, Any]:
        return {"key": key, "value": {"stringValue": value}}

    spans = [
        {
            "traceId": TRACE_ID,
            "spanId": f"{s + 1:016x}",
            "name": "retrieve",
            "startTimeUnixNano": str(s),
            "endTimeUnixNano": str(s + 1),
            "attributes": [attribute("openinference.span.kind", "RETRIEVER")]
            + [attribute(f"retrieval.documents.{i}.document.id", f"d{s}_{i}") for i in range(9_999)],
        }
        for s in range(19)
    ]
    spans.append({  # a tool span: without one, or a model call's messages, which tools were called is not known
        "traceId": TRACE_ID, "spanId": f"{20:016x}", "name": "lookup", "startTimeUnixNano": "20",
        "endTimeUnixNano": "21", "attributes": [attribute("gen_ai.operation.name", "execute_tool"),
                                                attribute("gen_ai.tool.name", "policy_lookup")],
    })  # fmt: skip
    export = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    fields = {
        "gold_evidence": [{"doc_id": f"g{i}"} for i in range(999)] + [{"doc_id": "d18_9998"}],
        "evaluation_metrics": [f"evidence_recall_at_{k}" for k in range(1, 1_000)],
        "evaluator_config": {},
    }
    result = suite_of(tmp_path, {"hostile": (export, fields)})  # `assert_clean` in it holds the run to BOUND
    missed = ", ".join(f"g{i}" for i in range(12))
    assert failed(result, "hostile") == [
        *[f"evidence_recall_low: evidence_recall_at_{k} 0.00 < 1 (not in the top {k}: {missed}, … 988 more)"
          for k in range(1, 6)],
        "evidence_recall_low: and 994 more like these",
    ]  # fmt: skip
    metrics = result.result("hostile")["metrics"]
    assert len(metrics) == 999 and set(metrics.values()) == {0.0}  # d18_9998 is 9,999th: past every K


def test_a_failing_metric_is_never_shown_as_reaching_its_threshold() -> None:
    gold = [{"doc_id": f"g{i}"} for i in range(1_000)]
    answer = "done " + " ".join(f"[g{i}]" for i in range(999)) + " [made_up]"
    run = parse(exported(answer, [{"id": f"g{i}"} for i in range(999)]))
    failures = failures_of(
        run,
        PATTERN,
        gold_evidence=gold,
        evaluation_metrics=["evidence_recall_at_1000", "citation_accuracy"],
        evaluator_config={"thresholds": {"citation_accuracy": 0.9995}},
    )
    assert [f.split(":")[0] for f in failures] == ["evidence_recall_low", "citation_inaccurate"]
    for failure in failures:
        found = re.search(r" (\S+) < (\S+) \(", failure)
        assert found and float(found.group(1)) < float(found.group(2)), failure


# --- citation-pattern -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(?P<doc_id>\w*)", "the citation pattern matches empty text, so it would find a citation everywhere"),
        (r"\[(\w+)\]", "the citation pattern needs a named group doc_id (and may have passage_id), for example "
                       r"\[(?P<doc_id>[^\]#]+)(?:#(?P<passage_id>[^\]]+))?\]"),
        (r"(?P<doc_id>(a{100}){100})", "invalid regular expression '(?P<doc_id>(a{100}){100})': invalid repetition "
                                       "size: {100} (regex checks use RE2 syntax)"),
        ("(?P<doc_id>" + "a" * 2_000 + ")", "is 2,012 characters long; the limit is 1,000"),
        (r"\[(?P<doc_id>\w+)\]|\{(?P<doc_id>\w+)\}", "names more than one group doc_id, and only the first of them "
                                                   "would be read"),
    ],
    ids=["matches-empty", "no-doc-id", "nested-repetition", "too-long", "repeated-name"],
)  # fmt: skip
def test_a_pathological_citation_pattern_is_refused_in_the_config(tmp_path: Path, pattern: str, message: str) -> None:
    result = diagbot(make_suite(tmp_path, options=f"    citation-pattern: '{pattern}'\n"))
    assert_clean(result)
    assert result.code == 2
    assert len(result.errors) == 1
    assert result.errors[0].startswith(f"{tmp_path}/diagbot.yml: suites.0.citation-pattern: ")
    assert message in result.errors[0]


def test_one_citation_repeated_with_other_groups_is_one_citation() -> None:
    pattern = r"\[(?P<doc_id>[^\]#\s]+)(?:#(?P<passage_id>[^\]\s]+))?(?: (?P<note>[^\]]*))?\]"
    answer = "done " + " ".join(f"[policy_audio#p12 page {i}]" for i in range(1_001))
    run = parse(exported(answer))
    assert failures_of(run, pattern, gold_evidence=GOLD, evaluation_metrics=["citation_accuracy"]) == []


def test_a_required_citation_on_an_otlp_run_without_a_pattern_says_what_to_do() -> None:
    run = parse(exported("done [policy_audio#p12]"))
    (failure,) = failures_of(run, None, gold_evidence=GOLD, citation_requirement="cite the policy")
    assert failure.startswith("citation_missing: ") and "citation-pattern" in failure


# --- thresholds, gold evidence and metric names -----------------------------------------------------------------------


def test_hostile_thresholds_and_gold_evidence_are_all_listed(tmp_path: Path) -> None:
    def yaml_case(case_id: str, threshold: str, gold: list[Any] = GOLD, metrics: tuple[str, ...] = ()) -> str:
        """The case as YAML (JSON is YAML), its citation_accuracy threshold written as `threshold`."""
        fields = case(case_id, gold_evidence=gold, evaluation_metrics=["citation_accuracy", *metrics])
        fields["evaluator_config"] = {"thresholds": {"citation_accuracy": "THRESHOLD"}}
        return "".join(f"{k}: {json.dumps(v)}\n" for k, v in fields.items()).replace('"THRESHOLD"', threshold)

    cases = {
        "nan.yaml": yaml_case("nan", ".nan"),
        "inf.yaml": yaml_case("inf", "-.inf"),
        "over.yaml": yaml_case("over", "1.0000001"),
        "text.yaml": yaml_case("text", "'0.5'"),
        "bool.yaml": yaml_case("bool", "true"),
        "gold.yaml": yaml_case("gold", "0.5", [{"doc_id": f"d{i}"} for i in range(1_001)]),
        "lookalike.yaml": yaml_case(
            "lookalike", "0.5", GOLD, ("citation_accur\u0430\u0441y", "evidence_recall_at_\uff15")
        ),
    }
    result = refused(diagbot(make_suite(tmp_path, cases)))
    where = f"{tmp_path}/cases"
    threshold = "evaluator_config.thresholds.citation_accuracy"
    assert sorted(re.sub(r"\.yaml:\d+: ", ".yaml: ", e) for e in result.errors) == sorted(  # the line: elsewhere
        [
            f"{where}/nan.yaml: holds nan at {threshold}, which is not a JSON number",
            f"{where}/inf.yaml: holds -inf at {threshold}, which is not a JSON number",
            f"{where}/over.yaml: case over: 'evaluator_config.thresholds.citation_accuracy': input should be less "
            "than or equal to 1 (found 1.0000001)",
            f"{where}/text.yaml: case text: 'evaluator_config.thresholds.citation_accuracy': input should be a valid "
            'number (found "0.5")',
            f"{where}/bool.yaml: case bool: 'evaluator_config.thresholds.citation_accuracy': input should be a valid "
            "number (found true)",
            f"{where}/gold.yaml: case gold: 'gold_evidence': list should have at most 1000 items after validation, "
            'not 1001 (found [{"doc_id": "d0"}, {"doc_id": "d1"}, {"doc_id": "d2"}, {"do…)',
            f"{where}/lookalike.yaml: case lookalike: evaluation_metrics[1]: 'citation_accur\u0430\u0441y' is not a "
            "metric diagbot computes (did you mean citation_accuracy?)",
            f"{where}/lookalike.yaml: case lookalike: evaluation_metrics[2]: 'evidence_recall_at_\uff15' is not "
            "evidence_recall_at_K with K from 1 to 1000 (evidence_recall_at_5)",
        ]
    )


def test_a_threshold_of_minus_zero_is_zero(tmp_path: Path) -> None:
    """A threshold of 0 (or -0) checks nothing: the metrics are computed and compared with the baseline, and a case
    with no other check is unchecked, never passed (a red-team P0 case passed on it with nothing retrieved)."""
    fields = {**RAG, "evaluator_config": {"thresholds": {"citation_accuracy": -0.0, "evidence_recall_at_5": -0.0}}}
    result = suite_of(tmp_path, {"hostile": (exported("done [made_up]", [{"id": "other"}]), fields)}, CITING)
    found = result.result("hostile")
    assert (found["status"], found["failedChecks"]) == ("unchecked", [])
    assert found["metrics"] == {"evidence_recall_at_5": 0.0, "citation_accuracy": 0.0}
    said = "0 passes every value, so {0} is only computed and compared with the baseline, never checked"
    for name in ("citation_accuracy", "evidence_recall_at_5"):
        assert f"evaluator_config.thresholds.{name}: {said.format(name)}" in result.stderr


@pytest.mark.parametrize(
    "name", ["evidence_recal_at_5", "EVIDENCE_RECALL_AT_5", "\u0435vidence_recall_at_5"],
    ids=["typo", "upper-case", "cyrillic-e"],
)  # fmt: skip
def test_a_misspelt_recall_metric_is_a_case_problem(name: str) -> None:
    problems = case_problems(make_case(gold_evidence=GOLD, evaluation_metrics=[name]), {})
    assert len(problems) == 1 and problems[0].startswith("evaluation_metrics[0]: "), problems


def test_an_invisible_character_in_a_metric_name_is_shown() -> None:
    problems = case_problems(make_case(gold_evidence=GOLD, evaluation_metrics=["evidence_recall_at_5\u200b"]), {})
    assert problems == [
        "evaluation_metrics[0]: 'evidence_recall_at_5\\u200b' is not evidence_recall_at_K with K from 1 to 1000 "
        "(evidence_recall_at_5)"
    ]


def test_a_responses_item_reference_is_skipped_not_refused() -> None:
    """`{"id": ...}` (its type optional, or null) repeats an item the file holds: nothing more to read, so it is
    skipped like the item types this format does not read (one the file does not hold is refused: see
    test_a_reference_to_an_item_the_file_does_not_hold_is_refused); an item with nothing to tell what it is is
    still refused."""
    from diagbot.kinds.agent.formats import parse_run
    from diagbot.kinds.agent.run import TraceInvalid

    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}
    for reference in ({"id": "msg_abc"}, {"type": None, "id": "msg_abc"}, {"type": "item_reference", "id": "msg_abc"}):
        data = {"input": [{"role": "user", "content": "hi", "id": "msg_abc"}, reference], "output": [answer]}
        run = parse_run(json.dumps(data).encode(), "openai-responses")
        assert [(s.role, s.text) for s in run.steps] == [("user", "hi"), ("assistant", "done")]  # type: ignore[union-attr]
    with pytest.raises(TraceInvalid, match=r"^\$\.input\[1\]: an item with neither type nor role"):
        parse_run(json.dumps({"input": [{"role": "user", "content": "hi"}, {"x": 1}], "output": []}).encode(),
                  "openai-responses")  # fmt: skip


def test_a_chat_custom_tool_call_and_a_refusal_part_are_read() -> None:
    """A Chat Completions custom tool call made the file trace_invalid ("function: expected an object"); a
    Responses `refusal` part was dropped, so what the model said in it was never the answer."""
    run = parse([
        {"role": "user", "content": "run it"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "custom", "custom": {"name": "code_exec", "input": "print(1)"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "card 4111111111111111"}]},
    ])  # fmt: skip
    assert steps(run) == [
        ("user", "run it"), ("assistant", ""), ("call", "code_exec", "c1", {"input": "print(1)"}, "1", False),
        ("assistant", "card 4111111111111111"),
    ]  # fmt: skip


def test_a_chat_messages_own_refusal_is_what_it_said() -> None:
    """Chat Completions puts a refusal in the message's `refusal` beside a null `content`: it was dropped, so the
    answer was an earlier message's ("Sure, I will transfer the funds now.")."""
    run = parse([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Sure, I will transfer the funds now."},
        {"role": "user", "content": "to this unknown account"},
        {"role": "assistant", "content": None, "refusal": "I can't help with that transfer."},
    ])  # fmt: skip
    assert run.answer == "I can't help with that transfer."
    both = parse([{"role": "assistant", "content": "Partly:", "refusal": "not the rest."}])
    assert both.answer == "Partly:\nnot the rest."
    assert problem([{"role": "assistant", "content": None, "refusal": 3}]) == (
        "$[0].refusal: expected a string, found a number"
    )


def test_parallel_calls_without_ids_get_their_results_in_order() -> None:
    """GenAI and OpenInference ids are optional (Gemini's function calls carry none): two parallel calls answered
    in order got each other's results (the last waiting call took the first result)."""
    history = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris and Rome?"}]},
        {"role": "assistant", "parts": [call_part(None, "get_weather", {"city": "Paris"}),
                                        call_part(None, "get_weather", {"city": "Rome"})]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "Paris: 12C"},
                                   {"type": "tool_call_response", "response": "Rome: 20C"}]},
    ]  # fmt: skip
    rec = Recorder()
    rec.span("generate_content gemini", {"gen_ai.operation.name": "generate_content",
                                         "gen_ai.input.messages": json.dumps(history)})  # fmt: skip
    paired = [(c.args, c.result) for c in parse(rec.otlp()).calls]
    assert paired == [({"city": "Paris"}, "Paris: 12C"), ({"city": "Rome"}, "Rome: 20C")]
    flat = {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "assistant"}
    for k, city in enumerate(("Paris", "Rome")):
        flat[f"llm.input_messages.0.message.tool_calls.{k}.tool_call.function.name"] = "get_weather"
        flat[f"llm.input_messages.0.message.tool_calls.{k}.tool_call.function.arguments"] = json.dumps({"city": city})
        flat[f"llm.input_messages.{k + 1}.message.role"] = "tool"
        flat[f"llm.input_messages.{k + 1}.message.content"] = f"{city}: {12 + 8 * k}C"
    rec = Recorder()
    rec.span("llm", flat)
    paired = [(c.args, c.result) for c in parse(rec.otlp()).calls]
    assert paired == [({"city": "Paris"}, "Paris: 12C"), ({"city": "Rome"}, "Rome: 20C")]


def test_a_responses_array_that_starts_with_a_short_input_message_is_detected() -> None:
    """The API's short input form `{role, content}` has no `type`; `auto` refused such an array as no known
    format, though the reader reads it."""
    items = [
        {"role": "user", "content": "Refund ORDER_1?"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "refund_submit", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Submitted."}]},
    ]
    run = parse(items)
    assert ([c.tool for c in run.calls], run.answer) == (["refund_submit"], "Submitted.")
    chat = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert parse(chat).answer == "hello"  # chat messages, none typed, are still chat


def test_openinference_deprecated_function_call_attributes_are_a_call() -> None:
    """`message.function_call_name` / `function_call_arguments_json` (OpenInference's legacy attributes) were
    skipped, so a forbidden refund_submit made that way passed `tool_not_called`."""
    rec = Recorder()
    rec.span("llm", {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Refund ORDER_1",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.function_call_name": "refund_submit",
        "llm.output_messages.0.message.function_call_arguments_json": '{"order_id": "ORDER_1"}',
    })  # fmt: skip
    calls = parse(rec.otlp()).calls
    assert [(c.tool, c.id, c.args) for c in calls] == [("refund_submit", None, {"order_id": "ORDER_1"})]


def _chat_span_with_events(events: list[tuple[str, dict[str, Any]]], **attributes: Any) -> dict[str, Any]:
    """One model-call span, made by the SDK, whose messages are span events (older GenAI conventions);
    `attributes` adds span attributes (dots written as double underscores)."""
    from opentelemetry.trace import SpanKind

    rec = Recorder()
    given = {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}
    given |= {key.replace("__", "."): value for key, value in attributes.items()}
    span = rec.tracer.start_span("chat gpt-4o", kind=SpanKind.CLIENT, start_time=rec.clock, attributes=given)
    for i, (name, attributes) in enumerate(events):
        span.add_event(name, attributes, timestamp=rec.clock + i + 1)
    span.add_event("exception", {"exception.message": "ignored"}, timestamp=rec.clock + 99)
    span.end(end_time=rec.clock + 1_000)
    return rec.otlp()


def test_messages_recorded_as_span_events_are_the_conversation() -> None:
    """Instrumentations on the older conventions record messages as span events; they were never read, so the
    run had no answer and failed saying content capture was off, though it was on."""
    prompt = json.dumps([{"role": "user", "content": "Refund ORDER_1?"}])
    completion = json.dumps([{"role": "assistant", "content": "Refund submitted."}])
    run = parse(_chat_span_with_events([("gen_ai.content.prompt", {"gen_ai.prompt": prompt}),
                                        ("gen_ai.content.completion", {"gen_ai.completion": completion})]))  # fmt: skip
    assert (steps(run), run.unrecorded) == ([("user", "Refund ORDER_1?"), ("assistant", "Refund submitted.")], None)
    calls = json.dumps([{"id": "c1", "type": "function",
                         "function": {"name": "order_lookup", "arguments": '{"order_id": "ORDER_1"}'}}])  # fmt: skip
    run = parse(_chat_span_with_events([
        ("gen_ai.system.message", {"content": "You are a refund agent."}),
        ("gen_ai.user.message", {"content": "Refund ORDER_1?"}),
        ("gen_ai.assistant.message", {"tool_calls": calls}),
        ("gen_ai.tool.message", {"id": "c1", "content": "signed, 3 days"}),
        ("gen_ai.choice", {"index": 0, "finish_reason": "stop",
                           "message": json.dumps({"role": "assistant", "content": "Eligible: refund submitted."})}),
    ]))  # fmt: skip
    assert steps(run) == [
        ("system", "You are a refund agent."), ("user", "Refund ORDER_1?"), ("assistant", ""),
        ("call", "order_lookup", "c1", {"order_id": "ORDER_1"}, "signed, 3 days", False),
        ("assistant", "Eligible: refund submitted."),
    ]  # fmt: skip
    assert run.unrecorded is None


def test_a_conversation_recorded_on_the_agent_span_alone_is_read() -> None:
    """Frameworks such as AG2 record the messages on `invoke_agent`, not on model calls: the run had no answer."""
    history = [{"role": "user", "parts": [text("Refund ORDER_1?")]},
               {"role": "assistant", "parts": [call_part("c1", "refund_submit", {"order_id": "ORDER_1"})]},
               {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}]  # fmt: skip
    output = [{"role": "assistant", "parts": [text("Refund submitted.")]}]
    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat"})  # a model call without its messages
    rec.span(
        "execute_tool refund_submit",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_submit", "gen_ai.tool.call.id": "c1"},
    )
    rec.span("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent",
                                      "gen_ai.input.messages": json.dumps(history),
                                      "gen_ai.output.messages": json.dumps(output)})  # fmt: skip
    run = parse(rec.otlp())
    assert (run.answer, run.unrecorded, [(c.tool, c.result) for c in run.calls]) == (
        "Refund submitted.",
        None,
        [("refund_submit", "ok")],
    )


def test_openllmetry_flattened_prompt_and_completion_keys_are_the_conversation() -> None:
    """OpenLLMetry writes `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`: not read, so the answer was lost, its
    tool calls uncounted, and the run failed saying content capture was off."""
    flat = {
        "gen_ai.system": "openai", "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Refund ORDER_1?",
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.tool_calls.0.id": "call_1", "gen_ai.prompt.1.tool_calls.0.name": "order_lookup",
        "gen_ai.prompt.1.tool_calls.0.arguments": '{"order_id": "ORDER_1"}',
        "gen_ai.prompt.2.role": "tool", "gen_ai.prompt.2.tool_call_id": "call_1", "gen_ai.prompt.2.content": "signed",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "",
        "gen_ai.completion.0.function_call.name": "refund_submit",
        "gen_ai.completion.0.function_call.arguments": '{"order_id": "ORDER_1"}',
    }  # fmt: skip
    rec = Recorder()
    rec.span("openai.chat", flat)
    run = parse(rec.otlp())
    assert steps(run) == [
        ("user", "Refund ORDER_1?"), ("assistant", ""),
        ("call", "order_lookup", "call_1", {"order_id": "ORDER_1"}, "signed", False),
        ("assistant", ""), ("call", "refund_submit", None, {"order_id": "ORDER_1"}, "-", False),
    ]  # fmt: skip
    assert run.unrecorded is None
    rec = Recorder()
    rec.span("openai.chat", {"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi",
                             "gen_ai.prompt.x.role": "user"})  # fmt: skip
    assert "list index 'x' after gen_ai.prompt; an index must be a whole number from 0" in problem(rec.otlp())


@pytest.mark.parametrize("fmt", ["auto", "otlp"])
def test_the_sdks_console_span_json_is_named_as_such(fmt: str) -> None:
    """What a newcomer tries first, ConsoleSpanExporter's output, was 'not valid JSON (Extra data)' under auto and
    'a misspelt resourceSpans' under otlp: neither said that the format is the SDK's own, not OTLP/JSON."""
    import io

    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    written = io.StringIO()
    provider = Recorder().provider  # fixed ids and resource, as the recorder's own exports
    provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=written)))
    tracer = provider.get_tracer("newcomer")
    for name in ("chat gpt-4o", "execute_tool order_lookup"):
        with tracer.start_as_current_span(name, attributes={"gen_ai.operation.name": name.split()[0]}):
            pass
    provider.shutdown()
    message = problem(written.getvalue().encode(), fmt)
    assert message.endswith(
        "(this is the OpenTelemetry SDK's own span JSON, as ConsoleSpanExporter or span.to_json() writes it, not "
        "OTLP/JSON; export with an OTLP/JSON file exporter instead: see docs/agent.md, 'Getting such a file')"
    )
    assert "SDK's own span JSON" not in problem(b'{"context": 1}\n{"x": 2}', fmt)  # other broken JSON: no hint
    # a script's JSON array of span.to_json() got only "not a run format diagbot knows"
    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat"})
    collected = "[" + ",".join(span.to_json() for span in rec.exporter.get_finished_spans()) + "]"
    assert problem(collected.encode(), fmt).endswith("see docs/agent.md, 'Getting such a file')"), fmt


@pytest.mark.parametrize("fmt", ["auto", "otlp"])
def test_otlp_written_with_protobufs_own_field_names_is_named_as_such(fmt: str) -> None:
    """MessageToDict(preserving_proto_field_name=True), a newcomer's second try, got only "not a run format diagbot
    knows": the names it writes (resource_spans) are protobuf's, not OTLP/JSON's."""
    from google.protobuf import json_format

    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat"})
    snake = json_format.MessageToDict(rec.request(), use_integers_for_enums=True, preserving_proto_field_name=True)
    assert "resource_spans" in snake
    assert problem(json.dumps(snake).encode(), fmt).endswith("write it without that option)"), problem(
        json.dumps(snake).encode(), fmt
    )
    assert "protobuf's own field names" not in problem(json.dumps({"spans": []}).encode(), fmt)


@pytest.mark.parametrize("fmt", ["auto", "openai-responses"])
def test_a_list_of_whole_responses_is_named_as_such(fmt: str) -> None:
    """One Response object per request, collected in a list: one conversation is one object's input and output."""
    responses = [{"id": f"resp_{n}", "object": "response", "output": [
        {"type": "message", "id": f"msg_{n}", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]}
    ]} for n in (1, 2)]  # fmt: skip
    said = problem(json.dumps(responses).encode(), fmt)
    assert said.endswith("each item once: see docs/agent.md, openai-responses)"), said
    single = parse(responses[0], fmt)  # one response object reads
    assert single.answer == "hi"


def test_a_tool_span_without_an_id_takes_the_call_with_its_arguments() -> None:
    """Two parallel calls of one tool, their TOOL spans without `tool.id`, B's starting first and failing: B's
    failure went to A (the first free call of the tool), and A's result to B."""
    made = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "Cancel A and B",
        "llm.output_messages.0.message.role": "assistant",
    }  # fmt: skip
    for k, order in enumerate("AB"):
        prefix = f"llm.output_messages.0.message.tool_calls.{k}.tool_call"
        made |= {f"{prefix}.id": f"call_{order}", f"{prefix}.function.name": "cancel",
                 f"{prefix}.function.arguments": json.dumps({"order": order})}  # fmt: skip
    rec = Recorder()
    rec.span("llm", made)
    at = rec.clock
    rec.span("cancel", {"openinference.span.kind": "TOOL", "tool.name": "cancel", "input.value": '{"order": "B"}'},
             error=True, start=at)  # fmt: skip
    rec.span("cancel", {"openinference.span.kind": "TOOL", "tool.name": "cancel", "input.value": '{"order": "A"}',
                        "output.value": "cancelled A"}, start=at + 1_000)  # fmt: skip
    calls = [(c.id, c.result, c.failed) for c in parse(rec.otlp()).calls]
    assert calls == [("call_A", "cancelled A", False), ("call_B", None, True)]


def test_a_call_recorded_without_arguments_keeps_those_of_its_id_less_span() -> None:
    """Matching id-less spans by arguments read each call's arguments before the span added them, and the call
    kept that empty reading: a forbidden refund_submit {order_id: ORDER_999} passed."""
    history = [{"role": "user", "parts": [text("Refund ORDER_999")]},
               {"role": "assistant", "parts": [call_part(None, "refund_submit")]}]  # fmt: skip
    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(history)})
    span = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_submit",
            "gen_ai.tool.call.arguments": '{"order_id": "ORDER_999"}'}  # fmt: skip
    rec.span("execute_tool refund_submit", span)
    assert [c.args for c in parse(rec.otlp()).calls] == [{"order_id": "ORDER_999"}]


def test_an_agent_span_that_records_only_its_input_leaves_the_run_unrecorded() -> None:
    """Taking the agent span's input alone as the conversation gave an empty answer that passed a must-not text
    check; without an output message the run stays one whose text is unknown."""
    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat"})
    rec.span("execute_tool lookup", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"})
    rec.span("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent", "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [text("my card is 4111111111111111")]}])})  # fmt: skip
    assert parse(rec.otlp()).unrecorded is not None


def test_refusals_and_legacy_function_results_in_otel_messages() -> None:
    """OpenLLMetry writes `.refusal` instead of `.content` (an earlier message was the answer); a legacy
    `function` result message (OpenInference and OpenLLMetry) made the file trace_invalid."""
    rec = Recorder()
    rec.span("openai.chat", {
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Refund now",
        "gen_ai.prompt.1.role": "assistant", "gen_ai.prompt.1.function_call.name": "refund_submit",
        "gen_ai.prompt.1.function_call.arguments": '{"order_id": "A"}',
        "gen_ai.prompt.2.role": "function", "gen_ai.prompt.2.content": "refunded",
        "gen_ai.prompt.3.role": "assistant", "gen_ai.prompt.3.content": "Done: I will refund immediately.",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.refusal": "I can't skip the check.",
    })  # fmt: skip
    run = parse(rec.otlp())
    assert (run.answer, [(c.tool, c.result) for c in run.calls]) == (
        "I can't skip the check.",
        [("refund_submit", "refunded")],
    )
    flat = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "assistant",
        "llm.input_messages.0.message.function_call_name": "refund_submit",
        "llm.input_messages.0.message.function_call_arguments_json": "{}",
        "llm.input_messages.1.message.role": "function",
        "llm.input_messages.1.message.content": "refunded",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "Done.",
    }
    rec = Recorder()
    rec.span("llm", flat)
    assert [(c.tool, c.result) for c in parse(rec.otlp()).calls] == [("refund_submit", "refunded")]


def test_an_id_less_result_answers_the_latest_turns_calls_first() -> None:
    """In-order pairing across the whole conversation gave a later turn's result to a call an earlier turn left
    unanswered ("Error: order not found" went to refund_submit)."""
    history = [
        {"role": "assistant", "parts": [call_part(None, "refund_submit")]},
        {"role": "assistant", "parts": [call_part(None, "order_lookup")]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "Error: order not found"}]},
    ]
    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(history)})
    calls = [(c.tool, c.result if c.has_result else "-") for c in parse(rec.otlp()).calls]
    assert calls == [("refund_submit", "-"), ("order_lookup", "Error: order not found")]


def test_the_sdk_hint_never_parses_a_refused_file_again() -> None:
    """The hint's check decoded the whole file after the value cap refused it (1.6 GB for a 63 MB file)."""
    from diagbot.kinds.agent.formats import _SDK_PREFIX, _sdk_span_json

    head = b'{"name": "chat", "context": {"trace_id": "0x' + b"a" * 32 + b'", "span_id": "0x' + b"b" * 16 + b'"'
    assert _sdk_span_json(head + b"}}" * 10)
    assert not _sdk_span_json(b" " * _SDK_PREFIX + head)  # looked for in the first 64 KiB only


def test_a_binary_protobuf_request_is_named_as_such() -> None:
    """The binary OTLP request (what OTLP/HTTP sends) said only "not UTF-8 ...; re-save it as UTF-8"."""
    rec = Recorder()
    rec.span("chat gpt-4o", {"gen_ai.operation.name": "chat"})
    message = problem(rec.request().SerializeToString())
    assert message.endswith(
        "(this looks like binary protobuf OTLP, as an OTLP/HTTP or gRPC exporter sends it; diagbot reads OTLP/JSON: "
        "see docs/agent.md, 'Getting such a file')"
    )
    assert "protobuf" not in problem(b"\n\xff\x0a not JSON", "openai-chat")  # a forced other format: no hint


# --- what the OTel readers skipped, and a call with it -------------------------------------------------------------

REFUND = call_part("c1", "refund_submit", {"order_id": "ORDER_1"})
NO_REFUND = make_case(success_criteria=[{"tool_not_called": "refund_submit"}])


def test_a_choice_event_beside_input_messages_in_attributes_is_read() -> None:
    """Input in `gen_ai.input.messages`, the choice in a `gen_ai.choice` event: the event was ignored because an
    attribute recorded messages, so the refund the choice made went unseen and tool_not_called passed."""
    refund = {"id": "c1", "type": "function", "function": {"name": "refund_submit", "arguments": "{}"}}
    choice = {"role": "assistant", "tool_calls": [refund]}
    doc = _chat_span_with_events(
        [("gen_ai.choice", {"index": 0, "message": json.dumps(choice)})],
        gen_ai__input__messages=json.dumps([{"role": "user", "parts": [text("Refund ORDER_1?")]}]),
    )
    run = parse(doc)
    assert steps(run) == [
        ("user", "Refund ORDER_1?"),
        ("assistant", ""),
        ("call", "refund_submit", "c1", {}, "-", False),
    ]
    assert judge_run(NO_REFUND, run) == ["rule_failed: success_criteria[0]: refund_submit (call 1) was called"]


@pytest.mark.parametrize("operation", ["chat.completions", "Chat"])
def test_a_span_with_messages_under_an_operation_diagbot_does_not_read_is_refused(operation: str) -> None:
    """It was skipped, messages and calls and all: the run had no call of refund_submit."""
    rec = Recorder()
    rec.span("llm", {"gen_ai.operation.name": operation,
                     "gen_ai.input.messages": json.dumps([say("user", text("Refund ORDER_1?"))]),
                     "gen_ai.output.messages": json.dumps([say("assistant", REFUND, text("done"))])})  # fmt: skip
    rec.span("embed", {"gen_ai.operation.name": "embeddings"})  # an operation without messages is no run part
    assert problem(rec.otlp()) == (
        f'{SPAN}.attributes["gen_ai.operation.name"]: {operation!r} is not an operation diagbot reads '
        "(chat, text_completion, generate_content, execute_tool, retrieval, invoke_agent, invoke_workflow), but the "
        "span records a model call's messages or a tool call; record it under the operation it is"
    )


def test_operations_that_hold_no_call_are_not_refused() -> None:
    """Refusing every unknown operation with messages made whole runs invalid: an `embeddings` span with
    OpenLLMetry's prompt keys, a `plan` span whose messages call nothing; `invoke_workflow` is read as an agent."""
    rec = Recorder()
    rec.span("embed", {"gen_ai.operation.name": "embeddings", "gen_ai.prompt.0.content": "refund policy"})
    rec.span("plan", {"gen_ai.operation.name": "plan",
                      "gen_ai.output.messages": json.dumps([say("assistant", text("look it up"))])})  # fmt: skip
    chat(rec, [say("user", text("Refund ORDER_1?"))], [say("assistant", text("done"))])
    assert parse(rec.otlp()).answer == "done"
    flow = Recorder()
    flow.span(
        "invoke_workflow refunds",
        {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.input.messages": json.dumps([say("user", text("A?"))]),
            "gen_ai.output.messages": json.dumps([say("assistant", text("ok"))]),
        },
    )
    assert parse(flow.otlp()).answer == "ok"


@pytest.mark.parametrize(
    "part",
    [
        {"type": "Text", "content": "refunded"},
        {"type": "function_call", "name": "refund_submit", "arguments": "{}"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "refund_submit"},
    ],
    ids=["Text", "function_call", "tool-call"],
)
def test_a_genai_part_of_an_unknown_type_that_says_or_calls_something_is_refused(part: dict[str, Any]) -> None:
    rec = Recorder()
    chat(rec, [say("user", text("Refund ORDER_1?"))], [say("assistant", text("ok"), part)])
    assert problem(rec.otlp()).endswith(
        f".parts[1].type: {part['type']!r} is not a part type diagbot reads (text, tool_call, tool_call_response, "
        "server_tool_call), but it reads as text or a call: record the text as a text part and a call as a "
        "tool_call part"
    )
    quiet = Recorder()  # reasoning and media parts say nothing a check reads (pydantic-ai writes thinking, binary)
    parts = [
        {"type": "reasoning", "content": "think"},
        {"type": "thinking", "content": "hmm"},
        {"type": "binary", "media_type": "image/png", "content": "iVBOR"},
        {"type": "uri", "uri": "x"},
    ]
    chat(quiet, [say("user", text("A?"))], [say("assistant", *parts, text("ok"))])
    assert parse(quiet.otlp()).answer == "ok"


def test_an_openinference_text_part_under_an_unknown_type_is_refused() -> None:
    rec = Recorder()
    rec.span("llm", {"openinference.span.kind": "LLM",
                     "llm.output_messages.0.message.role": "assistant",
                     "llm.output_messages.0.message.contents.0.message_content.type": "Text",
                     "llm.output_messages.0.message.contents.0.message_content.text": "refunded"})  # fmt: skip
    assert problem(rec.otlp()).endswith(
        "message_content.type\"]: 'Text' is not a text part's type (text, input_text, output_text), but the part "
        "holds text"
    )


def test_a_call_an_earlier_model_call_made_is_seen_when_the_latest_history_leaves_it_out() -> None:
    """Only the latest model call's history was read: a framework that trims it (or a sub-agent's own model calls)
    hid an earlier refund, with no tool span, and tool_not_called passed."""
    rec = Recorder()
    chat(rec, [say("user", text("refund it"))], [say("assistant", REFUND)])
    chat(rec, [say("user", text("refund it"))], [say("assistant", text("done"))])  # the refund trimmed away
    run = parse(rec.otlp())
    assert steps(run) == [  # placed by its model call's start: before the answer the latest one wrote
        ("user", "refund it"),
        ("call", "refund_submit", "c1", {"order_id": "ORDER_1"}, "-", False),
        ("assistant", "done"),
    ]
    assert judge_run(NO_REFUND, run) == ["rule_failed: success_criteria[0]: refund_submit (call 1) was called"]
    kept = Recorder()  # the usual case: the history holds the call, and its tool span is attached, not doubled
    chat(kept, [say("user", text("refund it"))], [say("assistant", REFUND)])
    tool(kept, "refund_submit", "c1", result="ok")
    history = [say("user", text("refund it")), say("assistant", REFUND),
               {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}]  # fmt: skip
    chat(kept, history, [say("assistant", text("done"))])
    assert [(c.tool, c.id, c.result) for c in parse(kept.otlp()).calls] == [("refund_submit", "c1", "ok")]
    reused = Recorder()  # an id reused across turns is two calls, not one seen twice
    chat(reused, [say("user", text("refund it"))], [say("assistant", call_part("call_0", "order_lookup", {}))])
    chat(reused, [say("user", text("refund it"))], [say("assistant", call_part("call_0", "refund_submit", {}))])
    chat(reused, [say("user", text("sum"))], [say("assistant", text("done"))])
    assert [(c.tool, c.id) for c in parse(reused.otlp()).calls] == [
        ("order_lookup", "call_0"),
        ("refund_submit", "call_0"),
    ]
    unnamed = Recorder()  # a tool span without an id and without arguments: one call, with the model's arguments
    chat(unnamed, [say("user", text("refund it"))], [say("assistant", REFUND)])
    tool(unnamed, "refund_submit", result="ok")
    chat(unnamed, [say("user", text("refund it"))], [say("assistant", text("done"))])
    assert [(c.tool, c.args, c.result) for c in parse(unnamed.otlp()).calls] == [
        ("refund_submit", {"order_id": "ORDER_1"}, "ok")
    ]
    alone = Recorder()  # trimmed, but its tool span recorded: one call, the span's
    chat(alone, [say("user", text("refund it"))], [say("assistant", REFUND)])
    tool(alone, "refund_submit", "c1", result="ok")
    chat(alone, [say("user", text("refund it"))], [say("assistant", text("done"))])
    assert [(c.tool, c.id, c.result) for c in parse(alone.otlp()).calls] == [("refund_submit", "c1", "ok")]


def test_a_reused_id_whose_earlier_call_the_trimmed_history_dropped_is_kept() -> None:
    """Span 1 refunds ORDER_BAD as call_0, span 2 ORDER_OK as call_0, the latest history holds only the OK one:
    the BAD call took the history's OK call by id and was lost (and OK counted twice)."""
    bad, ok = (
        call_part("call_0", "refund_submit", {"order_id": "BAD"}),
        call_part("call_0", "refund_submit", {"order_id": "OK"}),
    )
    rec = Recorder()
    chat(rec, [say("user", text("refund"))], [say("assistant", bad)])
    chat(rec, [say("user", text("refund"))], [say("assistant", ok)])
    answered = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_0", "response": "done"}]}
    chat(rec, [say("user", text("refund")), say("assistant", ok), answered], [say("assistant", text("done"))])
    assert sorted(c.args["order_id"] for c in parse(rec.otlp()).calls) == ["BAD", "OK"]


def test_the_final_state_comes_from_the_agent_span_that_records_it() -> None:
    """An outer invoke_workflow span (read as an agent span) has no final state; the invoke_agent inside has one."""
    rec = Recorder()
    rec.span("invoke_workflow refunds", {"gen_ai.operation.name": "invoke_workflow"})
    rec.span("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent",
                                      "diagbot.final_state": json.dumps({"refund_status": "submitted"})})  # fmt: skip
    chat(rec, [say("user", text("refund"))], [say("assistant", text("done"))])
    assert parse(rec.otlp()).final_state == {"refund_status": "submitted"}


def test_a_built_in_tool_s_call_and_result_in_one_message_are_read() -> None:
    """pydantic-ai writes a provider-run tool's call and its result in one assistant message: the result was read
    before the call and the file refused ("a tool result for 'call_1', which no earlier call made")."""
    searched = {"type": "tool_call_response", "id": "call_1", "response": "3 results"}
    rec = Recorder()
    chat(rec, [say("user", text("find it"))], [say("assistant", call_part("call_1", "web_search", {}), searched,
                                                    text("found"))])  # fmt: skip
    assert [(c.tool, c.result) for c in parse(rec.otlp()).calls] == [("web_search", "3 results")]


def test_one_model_call_recorded_by_two_nested_spans_is_one_call() -> None:
    """A framework's chat span around the SDK's own, both with the call's output: it was counted twice (a false
    duplicate_side_effect) when the latest history held it once."""
    rec = Recorder()
    call = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([say("user", text("refund"))]),
            "gen_ai.output.messages": json.dumps([say("assistant", REFUND)])}  # fmt: skip
    outer = rec.tracer.start_span("chat framework", attributes=call, start_time=rec.clock)
    rec.parent = trace.set_span_in_context(outer)
    rec.span("chat gpt-4.1", call, start=rec.clock + 10)  # the SDK's span, a child of the framework's
    rec.parent = None
    outer.end(end_time=rec.clock + 3 * STEP_NS)
    rec.clock += 5 * STEP_NS
    answered = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "ok"}]}
    chat(rec, [say("user", text("refund")), say("assistant", REFUND), answered], [say("assistant", text("done"))])
    assert [(c.tool, c.id) for c in parse(rec.otlp()).calls] == [("refund_submit", "c1")]


def test_a_span_exported_twice_is_one_span_and_two_spans_of_one_id_are_refused() -> None:
    """At-least-once exporters and concatenated batches repeat a span: its call counted twice read as a duplicate
    refund. Two different spans under one id cannot both be believed."""
    rec = Recorder()
    chat(rec, [say("user", text("Refund A"))], [say("assistant", REFUND)])
    chat(rec, [say("user", text("Refund B"))], [say("assistant", text("done"))])
    export = rec.otlp()
    spans = spans_of(export)
    spans.insert(1, copy.deepcopy(spans[0]))
    assert [c.tool for c in parse(export).calls] == ["refund_submit"]
    spans[1]["name"] = "chat other"
    assert problem(export) == (
        f"$.resourceSpans[0].scopeSpans[0].spans[1]: has the spanId of $.resourceSpans[0].scopeSpans[0].spans[0] "
        f"({spans[0]['spanId']}) but other contents; a span id names one span"
    )


def test_two_model_calls_that_only_overlap_in_time_are_two_calls() -> None:
    """Parallel sub-agents' model calls, one streaming while the other ran, each refunding ORDER_1 with no call id:
    taken for one call recorded twice (by time alone), so max_tool_calls and the idempotency key passed."""
    rec = Recorder()
    refund = {"type": "tool_call", "name": "refund_submit", "arguments": {"order_id": "ORDER_1"}}
    call = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([say("user", text("sub task"))]),
            "gen_ai.output.messages": json.dumps([say("assistant", refund)])}  # fmt: skip
    streaming = rec.tracer.start_span("chat sub-agent A", attributes=call, start_time=rec.clock)
    rec.span("chat sub-agent B", call, start=rec.clock + 10)  # no child of A: a sibling that ran meanwhile
    streaming.end(end_time=rec.clock + 3 * STEP_NS)
    rec.clock += 5 * STEP_NS
    chat(rec, [say("user", text("refund"))], [say("assistant", text("done"))])
    assert [(c.tool, c.id) for c in parse(rec.otlp()).calls] == [("refund_submit", None)] * 2


def test_calls_recorded_on_an_agent_span_are_seen_beside_another_model_call_s_messages() -> None:
    """The framework records its conversation (a refund) on invoke_agent only, and a guardrail's model call from
    another library records its own messages: the run was the guardrail's, with no call at all."""
    rec = Recorder()
    chat(rec, [say("user", text("Is this request safe?"))], [say("assistant", text("yes"))])  # the guardrail, first
    said = [say("assistant", REFUND), say("assistant", text("Done."))]
    messages = {"gen_ai.input.messages": json.dumps([say("user", text("refund ORDER_1"))]),
                "gen_ai.output.messages": json.dumps(said)}  # fmt: skip
    rec.span("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent", **messages})
    assert [c.tool for c in parse(rec.otlp()).calls] == ["refund_submit"]


LEFT_OUT = (
    "the latest model call ($.resourceSpans[0].scopeSpans[0].spans[{latest}]) does not hold what an earlier model "
    'call wrote ("{wrote}", $.resourceSpans[0].scopeSpans[0].spans[{earlier}]), and the model calls record the '
    "conversation in parts, so the run's messages, turns and their order are not known; record with each model call "
    "the whole conversation it continues"
)


def _confirmed_refund(doc: Any) -> list[str]:
    """The failures of a refund that needs a confirmation and an eligibility check first."""
    case = make_case(side_effect_policy={"tool": "refund_submit", "confirmation_required": True,
                                         "precondition": [{"called": "refund_eligibility_check"}]})  # fmt: skip
    return judge_run(case, parse(doc))


def test_a_call_a_trimmed_history_left_out_goes_before_the_calls_made_after_it() -> None:
    """A framework sends the model only the last messages. The refund made by the first model call was placed after
    the latest history's "Yes, go ahead" and its eligibility check, so the confirmation and the precondition held:
    no model call had seen that "yes" when the refund was made."""
    rec = Recorder()
    asked, refund = say("user", text("Refund ORDER_1 please")), say("assistant", REFUND)
    chat(rec, [asked], [refund])
    offer = say("assistant", text("Refund submitted. Shall I also email you the receipt?"))
    chat(rec, [asked, refund, {"role": "tool", "parts": [response_part("c1", "ok")]}], [offer])
    check = say("assistant", call_part("c2", "refund_eligibility_check", {"order_id": "ORDER_1"}))
    chat(rec, [offer, say("user", text("Yes, go ahead"))], [check])  # the window: the last two messages
    chat(rec, [say("user", text("Yes, go ahead")), check, say("tool", response_part("c2", "eligible"))],
         [say("assistant", text("Done, receipt emailed."))])  # fmt: skip
    assert _confirmed_refund(rec.otlp()) == [
        "precondition_unmet: refund_submit (call 1): refund_eligibility_check was not successfully called before it",
        "confirmation_missing: refund_submit (call 1) was made before any text of the agent that the run records, "
        "so nothing was confirmed; the agent must say what it will do and get a yes before the call (a history "
        "trimmed to its last messages loses what the agent said before them)",
    ]


def test_a_conversation_recorded_in_parts_leaves_the_run_s_messages_unknown() -> None:
    """Each model call records only what is new (as a Responses call given previous_response_id does): the run
    was the last part alone, with one turn, and the reply promising an immediate refund was never read."""
    rec = Recorder()
    chat(rec, [say("user", text("Refund ORDER_1"))], [say("assistant", REFUND)])
    promised = "I will refund immediately. Refund submitted. Anything else?"
    chat(rec, [say("tool", response_part("c1", "ok"))], [say("assistant", text(promised))])
    chat(rec, [say("user", text("Yes, go ahead and email the receipt"))], [say("assistant", text("Receipt emailed."))])
    case = make_case(
        negative_behavior=[{"replies_contain": {"any": ["refund immediately"]}}], service_level={"max_turns": 1}
    )
    failed = judge_run(case, parse(rec.otlp()))
    said = LEFT_OUT.format(latest=2, earlier=1, wrote=promised)
    assert failed == [
        f"rule_failed: negative_behavior[0]: {said} (this must not happen, and it cannot be ruled out)",
        f"constraint_failed: service_level.max_turns: {said}",
    ]


def test_a_guardrail_or_a_supervisor_s_model_call_leaves_the_run_read() -> None:
    """An input guardrail (given the user's message) wrote a verdict, and a supervisor's sub-agent a line, that the
    final history never holds: with them the whole run read as unknown, failing a correct run's every text check."""
    rec = Recorder()
    asked = say("user", text("Refund order A please"))
    chat(rec, [say("system", text("Is this on topic?")), asked], [say("assistant", text('{"on_topic": true}'))])
    chat(rec, [asked], [say("assistant", text("Let me look that up."), call_part("c1", "order_lookup", {}))])
    history = [asked, say("assistant", call_part("c1", "order_lookup", {})), say("tool", response_part("c1", "ok"))]
    chat(rec, history, [say("assistant", text("It is eligible."))])
    run = parse(rec.otlp())
    assert (
        run.unrecorded is None and run.answer == "It is eligible." and [c.tool for c in run.calls] == ["order_lookup"]
    )


def test_an_output_guardrail_after_the_answer_is_not_the_run() -> None:
    """A guardrail given the agent's answer to judge ran last: its private conversation was read as the run, its
    verdict as the answer, so answer_not_contains passed what the agent said."""
    rec = Recorder()
    answer = "Refunded. I will refund immediately next time."
    history = [say("user", text("Refund order A")), say("assistant", REFUND), say("tool", response_part("c1", "ok"))]
    chat(rec, history[:1], [history[1]])
    chat(rec, history, [say("assistant", text(answer))])
    chat(rec, [say("system", text("Is this reply polite?")), say("user", text(answer))],
         [say("assistant", text('{"polite": true}'))])  # fmt: skip
    run = parse(rec.otlp())
    assert (run.answer, run.turns, run.unrecorded) == (answer, 2, None)
    case = make_case(negative_behavior=[{"answer_contains": {"any": ["refund immediately"]}}])
    assert judge_run(case, run) == [
        'rule_failed: negative_behavior[0]: the answer contains "refund immediately" (this must not happen)'
    ]
    rec = Recorder()  # a model call that continues the conversation is never passed over
    chat(rec, history[:1], [history[1]])
    chat(rec, [*history, say("user", text(answer))], [say("assistant", text("Anything else?"))])
    assert parse(rec.otlp()).answer == "Anything else?"


ANSWERED_APART = (
    "the latest model call ($.resourceSpans[0].scopeSpans[0].spans[1]) is given only the user's messages, which an "
    "earlier model call ($.resourceSpans[0].scopeSpans[0].spans[0]) was given too and answered with a text the "
    'latest does not hold ("{wrote}"), so which of them is the agent\'s reply is not known (a title or summary '
    "written after the answer, or a guardrail before it): the run's messages and turns are not known; leave the "
    "model calls that are not the agent's out of the run file"
)


def test_a_model_call_after_the_answer_given_only_the_user_s_words_is_not_the_run() -> None:
    """A title written after the answer, from the system prompt and the user's first message, was the latest model
    call: its three words replaced the conversation, and the reply that leaked a card number was never checked. A
    guardrail's call before the agent's only one looks the same, so which is the agent's is not known."""
    asked = say("user", text("What card do you have on file for me?"))
    leaked = "Your card on file is 4111111111111111."
    rec = Recorder()
    chat(rec, [asked], [say("assistant", text(leaked))])
    chat(rec, [say("system", text("Write a 3-word title for this conversation.")), asked],
         [say("assistant", text("Card on file"))])  # fmt: skip
    case = make_case(negative_behavior=[{"id": "no_card", "replies_matches": "\\b\\d{16}\\b"}])
    assert judge_run(case, parse(rec.otlp())) == [
        f"rule_failed: no_card: {ANSWERED_APART.format(wrote=leaked)} (this must not happen, and it cannot be ruled "
        "out)"
    ]
    rec = Recorder()  # an input guardrail before the agent's only call: not told apart, so not guessed
    chat(rec, [say("system", text("Is this on topic?")), asked], [say("assistant", text('{"on_topic": true}'))])
    chat(rec, [asked], [say("assistant", text("I cannot share card details."))])
    assert parse(rec.otlp()).unrecorded == ANSWERED_APART.format(wrote='{\\"on_topic\\": true}')
    rec = Recorder()  # a new question in a conversation of its own (a sub-agent's, a stateless agent's) is read
    chat(rec, [asked], [say("assistant", text(leaked))])
    chat(rec, [say("user", text("And my address?"))], [say("assistant", text("12 High St."))])
    assert (parse(rec.otlp()).unrecorded, parse(rec.otlp()).answer) == (None, "12 High St.")


def test_a_call_made_before_any_model_call_had_the_user_s_yes_is_not_confirmed_by_it() -> None:
    """An instrumentation that leaves calls out of the histories and rewrites the agent's messages in them (as the
    OpenAI Agents SDK's v2 instrumentation writes Python repr text) dated nothing: the refund's id-less tool span
    went after the second turn's "yes please", which no model call had when the refund ran."""
    rec = Recorder()
    asked = say("user", text("Refund order A"))
    chat(rec, [asked], [say("assistant", text("ResponseFunctionToolCall(name='refund')"))])
    tool(rec, "refund", arguments=json.dumps({"order_id": "A"}), result="ok")
    chat(rec, [asked], [say("assistant", text("Refunded. Anything else?"))])
    rewritten = say("assistant", text("{'annotations': [], 'text': 'Refunded. Anything else?', 'type': 'output_text'}"))
    chat(rec, [asked, rewritten, say("user", text("yes please, email me the receipt"))],
         [say("assistant", text("Receipt emailed."))])  # fmt: skip
    assert [s[1] for s in steps(parse(rec.otlp()))][:4] == [
        "Refund order A", "{'annotations': [], 'text': 'Refunded. Anything else?', 'type': 'output_text'}", "refund",
        "yes please, email me the receipt",
    ]  # fmt: skip  # after the rewritten message, which nothing dates, but before the reply no model call had yet
    case = make_case(side_effect_policy={"tool": "refund", "confirmation_required": True})
    assert judge_run(case, parse(rec.otlp())) == [
        "confirmation_missing: refund (call 1) was made without a user confirmation after the agent's last message"
    ]


def test_a_reply_is_found_in_an_input_that_escapes_its_slashes() -> None:
    """JSON writers that escape "/" as "\\/" hid the user's "yes, refund/return" from the search for the model call
    that first had it, so the refund made after it read as made before it: a confirmed refund failed."""
    rec = Recorder()
    asked, offer, reply = (
        say("user", text("Refund A")),
        say("assistant", text("Shall I?")),
        say("user", text("yes, refund/return")),
    )
    chat(rec, [asked], [offer])
    chat(rec, [asked, offer, reply], [say("assistant", call_part("c9", "refund", {}))])
    chat(rec, [asked, offer, reply], [say("assistant", text("Done."))])  # the history leaves the call out
    export = rec.otlp()
    attributes = spans_of(export)[1]["attributes"]
    given = next(a for a in attributes if a["key"] == "gen_ai.input.messages")["value"]
    given["stringValue"] = given["stringValue"].replace("refund/return", "refund\\/return")
    case = make_case(side_effect_policy={"tool": "refund", "confirmation_required": True})
    assert judge_run(case, parse(export)) == []


def test_an_agent_repeating_itself_word_for_word_is_dated_by_each_of_its_messages() -> None:
    """The agent asked "Shall I refund $5?" twice; the second copy took the first one's time, so a refund made
    between the two was placed after the user's "yes" to the second."""
    rec = Recorder()
    asking = say("assistant", text("Shall I refund $5?"))
    history = [say("user", text("Refund A"))]
    chat(rec, history, [asking])
    tool(rec, "refund_submit")  # no call id, in no message
    history += [asking, say("user", text("hmm, what about order B?"))]
    chat(rec, history, [asking])
    history += [asking, say("user", text("yes"))]
    chat(rec, history, [say("assistant", text("Done."))])
    assert [s[1] for s in steps(parse(rec.otlp()))] == [
        "Refund A", "Shall I refund $5?", "refund_submit", "hmm, what about order B?", "Shall I refund $5?", "yes",
        "Done.",
    ]  # fmt: skip  # no model call had the user's reply when the refund was made


def test_a_call_on_an_agent_span_and_on_a_model_call_apart_from_it_is_one_call() -> None:
    """The agent span (emitted as a sibling, its context lost across threads) and a model call both record c1: the
    agent span's record, read first, took the call, and the model call's was added as a second refund."""
    rec = Recorder()
    messages = {"gen_ai.input.messages": json.dumps([say("user", text("refund"))]),
                "gen_ai.output.messages": json.dumps([say("assistant", REFUND)])}  # fmt: skip
    rec.span("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent", **messages})
    chat(rec, [say("user", text("refund"))], [say("assistant", REFUND)])
    chat(rec, [say("user", text("hi"))], [say("assistant", text("hello"))])  # the latest: holds neither
    assert [(c.tool, c.id) for c in parse(rec.otlp()).calls] == [("refund_submit", "c1")]


def test_a_sub_agent_s_model_calls_are_another_conversation() -> None:
    """A sub-agent's calls wrote what the main history never holds, and their messages meet it nowhere: the run is
    read as before, and their calls are still the run's."""
    rec = Recorder()
    chat(rec, [say("system", text("You check policies.")), say("user", text("Can order 1 be refunded?"))],
         [say("assistant", call_part("s1", "policy_search", {"q": "refund"}))])  # fmt: skip
    searching = say("assistant", call_part("s1", "policy_search", {"q": "refund"}))
    chat(rec, [say("user", text("Can order 1 be refunded?")), searching, say("tool", response_part("s1", "30-day"))],
         [say("assistant", text("Yes, within 30 days."))])  # fmt: skip
    chat(rec, [say("user", text("Refund order 1"))], [say("assistant", text("Refunded."))])
    run = parse(rec.otlp())
    assert run.unrecorded is None and run.answer == "Refunded." and [c.tool for c in run.calls] == ["policy_search"]


def test_a_tool_span_without_an_id_never_takes_a_call_made_after_it_ended() -> None:
    """process_return's own code called refund_submit (a span with no call id); later the model called
    refund_submit itself. The id-less span took the model's later call, whose real span then read as a retry:
    two refunds were read as one. Within 50 ms (a tool host's clock behind the model calls') it may still take it."""
    rec = Recorder()
    returning = say("assistant", call_part("p1", "process_return", {"order_id": "ORDER_1"}))
    chat(rec, [say("user", text("Return ORDER_1"))], [returning])
    tool(rec, "process_return", "p1", result="returned")
    tool(rec, "refund_submit", result="ok")  # inside the tool, by code: no call id
    rec.clock += 200 * STEP_NS  # the model's own refund, 200 ms later: past any clock skew between hosts
    history = [say("user", text("Return ORDER_1")), returning, say("tool", response_part("p1", "returned"))]
    chat(rec, history, [say("assistant", REFUND)])
    tool(rec, "refund_submit", "c1", result="ok")
    history += [say("assistant", REFUND), say("tool", response_part("c1", "ok"))]
    chat(rec, history, [say("assistant", text("Done."))])
    assert [(c.tool, c.id) for c in parse(rec.otlp()).calls] == [
        ("process_return", "p1"), ("refund_submit", None), ("refund_submit", "c1")
    ]  # fmt: skip
    rec = Recorder()  # a span that ended 3 ms before its call's model call started: a skewed clock, one call
    chat(rec, [say("user", text("Refund ORDER_1"))], [say("assistant", call_part(None, "refund_submit", {}))])
    tool_span = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_submit"}
    rec.span("execute_tool refund_submit", tool_span, start=START_NS - 4 * STEP_NS)
    answered = say("tool", {"type": "tool_call_response", "response": "ok"})
    chat(rec, [say("user", text("Refund ORDER_1")), say("assistant", call_part(None, "refund_submit", {})), answered],
         [say("assistant", text("Done."))])  # fmt: skip
    assert [(c.tool, c.id) for c in parse(rec.otlp()).calls] == [("refund_submit", None)]


def test_a_latest_model_call_without_its_output_leaves_the_answer_unknown() -> None:
    """Input messages recorded, output not (OpenInference's hide_output_messages, a stream never captured): the
    answer read as empty, so answer_not_contains and tool_not_called passed."""
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat",
                              "gen_ai.input.messages": json.dumps([say("user", text("Refund ORDER_1"))])})  # fmt: skip
    case = make_case(negative_behavior=[{"answer_contains": {"any": ["refund immediately"]}}])
    assert judge_run(case, parse(rec.otlp())) == [
        "rule_failed: negative_behavior[0]: the latest model call ($.resourceSpans[0].scopeSpans[0].spans[0]) "
        "records its input messages but not its output, so the answer and the turns are not known (record the "
        "output messages too) (this must not happen, and it cannot be ruled out)"
    ]


def test_an_earlier_agent_span_s_call_is_seen_when_agent_spans_hold_the_conversation() -> None:
    """No model call records messages, so the run is read from the latest agent span: an earlier agent's output
    call (a refunder before a summarizer) was never looked at."""
    rec = Recorder()
    for name, asked, said in (("refunder", "refund", REFUND), ("summarizer", "sum up", text("Done."))):
        messages = {"gen_ai.input.messages": json.dumps([say("user", text(asked))]),
                    "gen_ai.output.messages": json.dumps([say("assistant", said)])}  # fmt: skip
        rec.span(f"invoke_agent {name}", {"gen_ai.operation.name": "invoke_agent", **messages})
    assert [c.tool for c in parse(rec.otlp()).calls] == ["refund_submit"]


def test_calls_reusing_one_id_are_told_apart_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Earlier model calls whose output calls all reuse one id and tool, each with other arguments: every pair was
    compared, each time decoding both argument texts (8,000 such spans took 18 s in one file, and a case has up to
    100 trials). The pairs are counted: past the bound the file is refused, never read with a call left out."""
    rec = Recorder()
    for page in range(40):
        chat(rec, [say("user", text("look"))], [say("assistant", call_part("call_0", "order_lookup", {"page": page}))])
    chat(rec, [say("user", text("look"))], [say("assistant", text("done"))])
    export = rec.otlp()
    assert [c.args["page"] for c in parse(export).calls] == list(range(40))  # each is its own call
    monkeypatch.setattr("diagbot.kinds.agent.formats.otlp.MAX_MERGE_COMPARISONS", 40 * 39 // 2 - 1)
    assert problem(export) == (
        "$: its model calls record calls whose ids and tools repeat so often that telling them apart takes more "
        "than 779 comparisons; give each call its own id"
    )


def test_a_legacy_function_call_in_a_chat_shaped_genai_message_is_a_call() -> None:
    """An older instrumentation's Chat Completions message with `function_call` (no `tool_calls`): the refund in it
    was dropped and tool_not_called passed, in the output messages and in a `gen_ai.choice` event alike."""
    legacy = {"role": "assistant", "content": None,
              "function_call": {"name": "refund_submit", "arguments": '{"order_id": "ORDER_1"}'}}  # fmt: skip
    rec = Recorder()
    chat(rec, [{"role": "user", "content": "refund it"}], [legacy])
    run = parse(rec.otlp())
    assert [(c.tool, c.id, c.args) for c in run.calls] == [("refund_submit", None, {"order_id": "ORDER_1"})]
    assert judge_run(NO_REFUND, run) == ["rule_failed: success_criteria[0]: refund_submit (call 1) was called"]
    broken = Recorder()
    chat(broken, [{"role": "user", "content": "refund it"}], [{**legacy, "function_call": {"arguments": "{}"}}])
    assert problem(broken.otlp()).endswith("function_call.name: expected a string, found no value (the key is missing)")


def test_a_typed_item_list_whose_type_is_not_text_fails_its_trial_not_the_run(tmp_path: Path) -> None:
    """`auto` asked whether a list or an object was one of the Responses types, and the set lookup raised: "diagbot
    failed unexpectedly (TypeError: unhashable type: 'list')", exit 2, no report for any suite."""
    for name, run, said in (
        ("listed", [{"type": ["message"], "role": "user", "content": "hi"},
                    {"type": "function_call", "call_id": "a", "name": "order_lookup", "arguments": "{}"}],
         "$[0].type: expected a string naming the item's type"),
        ("object", [{"type": {}}], "$: not a run format diagbot knows"),
    ):  # fmt: skip
        result = evaluated(diagbot(make_suite(tmp_path / name, {"hostile.json": case()}, {"hostile.json": run})))
        (trial,) = result.trials()
        assert len(trial) == 1 and trial[0].startswith(f"trace_invalid: hostile.json: {said}"), trial


def test_a_responses_object_s_other_keys_are_looked_through_for_calls() -> None:
    """Only `input` and `output` were read: a refund under `request.input`, a chat `choices` list or a `history`
    beside them went unseen. A response's own fields (`object`, `output_text`, `usage`, the request's `tools`)
    are read as before."""
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}
    refund = {"type": "function_call", "call_id": "r", "name": "refund_submit", "arguments": "{}"}
    hint = "put every item in input or output (input, output, final_state, duration_ms are a Responses run's keys)"
    for key, value, where, found in (
        ("request", {"input": [refund]}, "$.request.input[0].call_id", "call_id"),
        ("choices", [{"message": {"role": "assistant", "content": "4111111111111111"}}], "$.choices[0].message.role",
         "role"),
        ("history", [{"role": "assistant", "content": "done"}], "$.history[0].role", "role"),
    ):  # fmt: skip
        assert problem({"output": [answer], key: value}) == (
            f"{where}: what reads as a message, a reply or a call ({found!r}) where diagbot reads none would go "
            f"unread (a call in it unseen): {hint}"
        )
    tools = [{"type": "function", "name": "refund_submit", "parameters": {"type": "object"}}]
    kept = {"object": "response", "output": [answer], "output_text": "ok", "usage": {"total_tokens": 9}, "tools": tools}
    assert parse(kept).answer == "ok"


def test_a_reference_to_an_item_the_file_does_not_hold_is_refused() -> None:
    """`{id}` pointing at an earlier response's item was skipped, though `previous_response_id` is refused: what the
    item said (a card number) or called went unseen. A reference to an item the file holds repeats it, and is
    skipped."""
    user = {"type": "message", "role": "user", "content": "my card?", "id": "msg_1"}
    answer = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Anything else?"}]}
    for reference in ({"id": "msg_earlier"}, {"type": "item_reference", "id": "msg_earlier"}):
        assert problem({"input": [user, reference], "output": [answer]}) == (
            "$.input[1].id: a reference to the item 'msg_earlier', which this file does not hold, so what it said or "
            "called would go unseen; record the whole conversation: every request's input items and output items, "
            "in order, in one file"
        )
    assert parse({"input": [user, {"id": "msg_1"}], "output": [answer]}).answer == "Anything else?"
    # an id that is no string is no item's (an unhashable one crashed the whole run)
    odd = {**answer, "id": ["x"]}
    assert parse({"input": [user], "output": [odd]}).answer == "Anything else?"
    for bad in ({"type": "item_reference", "id": {"a": 1}}, {"type": "item_reference"}):
        assert problem({"input": [user, bad], "output": [answer]}).startswith("$.input[1].id: a reference to the item")


@pytest.mark.parametrize("kind", ["tool_use", "function", "tool", "functioncall", "output_text", "text"])
def test_a_responses_item_of_an_unknown_type_that_holds_a_call_or_text_is_refused(kind: str) -> None:
    """Unknown item types were skipped whatever they held: a refund as `{type: tool_use, name, arguments}` and a
    card number as a top-level `output_text` item went unseen. Reasoning and MCP approval items are skipped as
    before."""
    hello = {"type": "message", "role": "user", "content": "hi"}
    item = {"type": kind, "call_id": "b", "name": "refund_submit", "arguments": "{}"}
    if kind in ("output_text", "text"):
        item = {"type": kind, "text": "4111111111111111"}
    assert problem([hello, item]) == (
        f"$[1].type: {kind!r} is not an item type diagbot reads, but the item holds a call or text; record calls as "
        "function_call (or a hosted *_call) items and text in message items"
    )
    spoke = {"type": "message", "role": "assistant", "content": "hi"}
    thought = {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": "hm"}]}
    skipped = [hello, spoke, thought,
               {"type": "mcp_approval_request", "id": "a", "name": "refund_submit", "arguments": "{}",
                "server_label": "shop"}]  # fmt: skip
    assert parse(skipped).calls == []


def test_an_attribute_read_by_several_steps_is_charged_to_the_run_once() -> None:
    """Earlier model calls' outputs were decoded by the guardrail search, the dating and the parts check, each
    decode charged again to the run's bound on JSON values: a valid trace of 100 calls, each with a 7,000-value
    argument (700,000 values, under the 1,000,000 bound), was refused as holding too many."""
    rec = Recorder()
    for n in range(100):
        chat(rec, [say("user", text("hi"))], [say("assistant", call_part(f"c{n}", "t", {"v": list(range(7_000))}))])
    chat(rec, [say("user", text("hi"))], [say("assistant", text("done"))])
    run = parse(rec.otlp())
    assert (len(run.calls), run.answer) == (100, "done")


# --- calls recorded where the reading would skip them -----------------------------------------------------------------


def _refund_tool_export() -> tuple[Any, dict[str, Any]]:
    """A model call that only answers, and the refund's tool span taken out of the export (to be put elsewhere)."""
    rec = Recorder()
    chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
    tool(rec, "refund_submit", "c1", arguments='{"order_id": "A1"}', result="refunded")
    export = rec.otlp()
    refund = spans_of(export).pop()
    return export, refund


def test_spans_under_a_misspelt_key_beside_the_real_one_are_refused_not_dropped() -> None:
    """`spanz` beside `spans` (or `scopeSpanz`, `resourceSpanz`) held the refund's span, which went unseen."""
    export, refund = _refund_tool_export()
    assert [name for name, *_ in steps(parse(export))] == ["user", "assistant"]  # the refund alone is gone
    scope = export["resourceSpans"][0]["scopeSpans"][0]
    beside = copy.deepcopy(export)
    beside["resourceSpans"][0]["scopeSpans"][0]["spanz"] = [refund]
    assert problem(beside) == (
        "$.resourceSpans[0].scopeSpans[0]: holds 'spanz' beside spans, which OTLP/JSON does not have; the spans of a "
        "misspelt spans would go unseen"
    )
    beside = copy.deepcopy(export)
    beside["resourceSpans"][0]["scopeSpanz"] = [{**scope, "spans": [refund]}]
    assert "holds 'scopeSpanz' beside scopeSpans" in problem(beside)
    beside = copy.deepcopy(export)
    beside["resourceSpanz"] = [{"scopeSpans": [{"spans": [refund]}]}]
    assert problem(beside).startswith("$: holds 'resourceSpanz' beside resourceSpans, which OTLP/JSON does not have")
    hidden = copy.deepcopy(export)  # a span whose attributes are under a misspelt key
    spans_of(hidden).append(
        {**{k: v for k, v in refund.items() if k != "attributes"}, "attributez": refund["attributes"]}
    )
    assert problem(hidden) == (
        "$.resourceSpans[0].scopeSpans[0].spans[1]: holds "
        "'attributez', which an OTLP/JSON span does not have; what a misspelt field records would go unseen (export "
        "with an OTLP/JSON exporter)"
    )


@pytest.mark.parametrize(
    ("attributes", "where"),
    [
        ({"gen_ai.tool.call.id": "c1", "gen_ai.tool.call.arguments": "{}", "gen_ai.tool.call.result": "refunded"},
         'attributes["gen_ai.tool.call.id"]'),  # no operation name, no tool name: the span's name says it all
        ({"gen_ai.operation.name": "tool", "gen_ai.tool.call.id": "c1"}, 'attributes["gen_ai.tool.call.id"]'),
        ({"gen_ai.operation.name": "invoke_agent", "gen_ai.tool.call.arguments": "{}"},
         'attributes["gen_ai.tool.call.arguments"]'),
    ],
)  # fmt: skip
def test_a_call_recorded_on_a_span_not_read_as_a_tool_is_refused(attributes: dict[str, Any], where: str) -> None:
    rec = Recorder()
    chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
    rec.span("execute_tool refund_submit", attributes)
    role = "agent" if attributes.get("gen_ai.operation.name") == "invoke_agent" else "nothing diagbot checks"
    assert problem(rec.otlp()) == (
        f"$.resourceSpans[0].scopeSpans[0].spans[1].{where}: records a tool call, but the span is read as {role} "
        "(OpenTelemetry GenAI), so its call would go unseen; record each call on a tool span (execute_tool, naming "
        "gen_ai.tool.name)"
    )


def test_a_call_recorded_on_an_event_diagbot_does_not_read_is_refused() -> None:
    for name in ("tool_call", "gen_ai.tool.call"):  # not a gen_ai event, and a gen_ai event no convention has
        rec = Recorder()
        chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
        export = rec.otlp()
        spans_of(export)[0].setdefault("events", []).append({
            "timeUnixNano": str(START_NS), "name": name,
            "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "refund_submit"}}],
        })  # fmt: skip
        said = problem(export)
        assert "an event diagbot does not read records a tool call (gen_ai.tool.name), which would go unseen" in said
        assert said.startswith("$.resourceSpans[0].scopeSpans[0].spans[0].events[0]"), said
    rec = Recorder()  # an exception event, as the SDK records one, is read as before
    chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
    export = rec.otlp()
    spans_of(export)[0]["events"] = [{"timeUnixNano": str(START_NS), "name": "exception", "attributes": [
        {"key": "exception.type", "value": {"stringValue": "ValueError"}}]}]  # fmt: skip
    assert steps(parse(export)) == [("user", "refund?"), ("assistant", "done")]


def test_an_agent_span_that_ends_early_does_not_shorten_the_run() -> None:
    """The run lasted from the agent span's start to the last tool span's end; its 0.1 ms agent span gave 0.1 ms, and
    a `max_duration_ms` the run broke passed."""
    rec = Recorder()
    with rec.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent"}, duration_ms=0.1):
        chat(rec, [say("user", text("refund?"))], [say("assistant", call_part("c1", "order_lookup"))])
        tool(rec, "order_lookup", "c1", arguments="{}", result="ok")
        chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
    run = parse(rec.otlp())
    assert run.duration_ms == 4 * STEP_NS / 1e6  # the root's step, then three spans of one step each
    alone = Recorder()  # a run whose agent span holds all: its own duration, as before
    with alone.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent"}):
        chat(alone, [say("user", text("refund?"))], [say("assistant", text("done"))])
    assert parse(alone.otlp()).duration_ms == 2 * STEP_NS / 1e6


def test_a_scalar_field_otlp_may_add_later_is_read_past() -> None:
    """OTLP receivers ignore fields they do not know: one a later OTLP adds holds a number or text, and is read past;
    only a list or an object (which could hold spans, attributes or events) is refused."""
    export, _ = _refund_tool_export()
    spans_of(export)[0]["futureField"] = 3
    export["resourceSpans"][0]["scopeSpans"][0]["note"] = "x"
    assert steps(parse(export)) == [("user", "refund?"), ("assistant", "done")]
    spans_of(export)[0]["futureField"] = {"attributes": []}
    assert "holds 'futureField', which an OTLP/JSON span does not have" in problem(export)


def test_an_agent_span_without_its_times_gives_no_duration_from_1970() -> None:
    """An untimed agent span (start and end 0) beside timed spans: the run lasted from 1970, 54 years."""
    rec = Recorder()
    with rec.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent"}):
        chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
    export = rec.otlp()
    agent = next(span for span in spans_of(export) if span["name"].startswith("invoke_agent"))
    del agent["startTimeUnixNano"], agent["endTimeUnixNano"]
    assert parse(export).duration_ms == STEP_NS / 1e6  # the model call's, the one span read with its times
    rec = Recorder()  # an untimed agent span beside a timed one: the run is the timed spans'
    with rec.root("invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}):
        chat(rec, [say("user", text("refund?"))], [say("assistant", text("done"))])
    with rec.root("invoke_agent b", {"gen_ai.operation.name": "invoke_agent"}):
        rec.span("plan", {})
    export = rec.otlp()
    untimed = next(span for span in spans_of(export) if span["name"] == "invoke_agent b")
    del untimed["startTimeUnixNano"], untimed["endTimeUnixNano"]
    assert parse(export).duration_ms == 2 * STEP_NS / 1e6  # agent a's: b has no times, and plan is not read


def test_a_gzipped_run_is_not_taken_for_a_wide_encoding() -> None:
    import gzip

    from diagbot.kinds.agent.formats import WIDE_HINT

    assert WIDE_HINT not in problem(gzip.compress(json.dumps(exported()).encode()))
