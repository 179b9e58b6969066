"""The agent suite's OpenTelemetry run formats (issue 13): OTLP/JSON of GenAI or OpenInference spans, JSON Lines,
the conversation rebuilt once from many spans, retrievals and citations in the run model, and OpenAI Responses
items as the third new way to record the same conversation.

Every export here is made by the real OpenTelemetry SDK and its OTLP protobuf encoder (tests/otel_recorder.py),
never typed by hand; hostile variants are those exports with one value changed.
"""

from __future__ import annotations

import contextlib
import copy
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.trace import SpanKind

from diagbot.cli import main
from diagbot.kinds import registry
from diagbot.kinds.agent.cases import AgentCase
from diagbot.kinds.agent.formats import FORMAT_NAMES, openai_chat, otel_genai, parse_run
from diagbot.kinds.agent.formats.otlp import CALLS_UNKNOWN
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import AgentReport
from diagbot.kinds.agent.run import Citation, Document, Message, Retrieval, Run, ToolCall, TraceInvalid
from scripts import make_otel_fixtures
from tests import otel_recorder
from tests.conftest import ROOT, write_json
from tests.otel_recorder import STEP_NS, Recorder, json_lines
from tests.test_agent_checks import evaluate, judge_run, make_case
from tests.test_agent_suite import RUN, agent_config

SOURCES = ROOT / "tests/data/agent/otel"
SPAN = "$.resourceSpans[0].scopeSpans[0].spans[0]"  # the first span of an export, in messages

# --- factories ---------------------------------------------------------------------------------------------------

CALLS_FIX = ": record the calls on the assistant message that made them"


FINISH = "gen_ai.response.finish_reasons"


def answered(rec: Recorder) -> None:
    """A model call that records its messages (an answer, no call): beside retrievals, a run that can be read."""
    chat(rec, [say("user", text("What is the return policy?"))], [say("assistant", text("Seven days."))])


def parse(doc: Any, fmt: str = "auto") -> Run:
    data = doc if isinstance(doc, bytes) else json.dumps(doc, ensure_ascii=False).encode()
    return parse_run(data, fmt)


def problem(doc: Any, fmt: str = "auto") -> str:
    with pytest.raises(TraceInvalid) as caught:
        parse(doc, fmt)
    return str(caught.value)


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def call_part(call_id: str | None, name: str, arguments: Any = None) -> dict[str, Any]:
    part: dict[str, Any] = {"type": "tool_call", "name": name}
    if call_id is not None:
        part["id"] = call_id
    if arguments is not None:
        part["arguments"] = arguments
    return part


def response_part(call_id: str, value: Any, key: str = "response") -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, key: value}


def say(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def chat(rec: Recorder, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]], structured: bool = False) -> None:
    """A GenAI model-call span recording `inputs` (the history so far) and `outputs`."""
    encode: Callable[[Any], Any] = (lambda v: v) if structured else json.dumps
    rec.span(
        "chat gpt-4.1",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": encode(inputs),
            "gen_ai.output.messages": encode(outputs),
        },
        kind=SpanKind.CLIENT,
    )


def tool(rec: Recorder, name: str, call_id: str | None = None, error: bool = False, **attributes: Any) -> None:
    """A GenAI execute_tool span; `arguments=` / `result=` record those, other keywords any attribute."""
    attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id is not None:
        attrs["gen_ai.tool.call.id"] = call_id
    for key, value in attributes.items():
        attrs[{"arguments": "gen_ai.tool.call.arguments", "result": "gen_ai.tool.call.result"}.get(key, key)] = value
    rec.span(f"execute_tool {name}", attrs, error=error)


def steps(run: Run) -> list[tuple[Any, ...]]:
    """The run's steps as plain tuples (a call: tool, id, args, result or "-" when none, failed)."""
    shown: list[tuple[Any, ...]] = []
    for step in run.steps:
        if isinstance(step, Message):
            shown.append((step.role, step.text))
        elif isinstance(step, ToolCall):
            shown.append(("call", step.tool, step.id, step.args, step.result if step.has_result else "-", step.failed))
        elif isinstance(step, Retrieval):
            shown.append(("retrieval", step.query, [(d.id, d.score) for d in step.documents]))
        else:
            shown.append(("state", step.key))
    return shown


def two_turns(rec: Recorder, *, args: Any = None, result_key: str = "response", structured: bool = False) -> None:
    """A refund conversation over two model calls, the second repeating the history, with its tool span."""
    args = {"order_id": "A"} if args is None else args
    history = [say("system", text("You refund orders.")), say("user", text("Refund order A?"))]
    calling = say("assistant", call_part("call_1", "order_lookup", args))
    chat(rec, history, [calling], structured)
    tool(rec, "order_lookup", "call_1", arguments=json.dumps({"order_id": "A"}), result="signed")
    history += [calling, say("tool", response_part("call_1", "signed", result_key))]
    chat(rec, history, [say("assistant", text("It is eligible."))], structured)


TWO_TURNS = [
    ("system", "You refund orders."),
    ("user", "Refund order A?"),
    ("assistant", ""),
    ("call", "order_lookup", "call_1", {"order_id": "A"}, "signed", False),
    ("assistant", "It is eligible."),
]


# --- the same conversation in every format gives the same verdicts ------------------------------------------------


def _bundled_chat_runs(fixtures: Path) -> Iterator[tuple[Path, Any]]:
    """Every openai-chat run of the bundled example, with the chat originals of those recorded in other formats
    put back in place."""
    for source in sorted(SOURCES.rglob("*.json")):
        target = fixtures / source.relative_to(SOURCES)
        shutil.copyfile(source, target)
    for path in sorted(fixtures.rglob("*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        if openai_chat.detect(doc):
            yield path, doc


def _verdicts(root: Path) -> dict[str, Any]:
    config = agent_config(root)
    report = registry.evaluate("agent", config.suite_input(config.suites[0], RUN))
    assert isinstance(report, AgentReport)
    return {
        r.case_id: (
            r.status,
            r.failed_checks,
            [(t.trial, t.passed, t.failed_checks) for t in r.trial_results],
            (r.turn_count, r.tool_call_count),  # a turn is one model output in every format
        )
        for r in report.results
    }


def _bundled_copy(tmp_path: Path) -> Path:
    for name in ("cases", "fixtures"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copyfile(ROOT / "diagbot.yml", tmp_path / "diagbot.yml")
    return tmp_path


def _as_json_lines(doc: Any) -> bytes:
    """A GenAI export split as the Collector's file exporter writes batches: one request a line, one span each."""
    export = otel_recorder.genai(doc)
    [resource] = export["resourceSpans"]
    [scope] = resource["scopeSpans"]
    requests = [
        {"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [span]}]}]} for span in scope["spans"]
    ]
    return json_lines(*requests)


CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "otlp GenAI (messages as JSON text)": otel_recorder.genai,
    "otlp GenAI (structured messages, result parts)": lambda d: otel_recorder.genai(
        d, structured=True, result_key="result", structured_args=False
    ),
    "otlp GenAI JSON Lines": _as_json_lines,
    "otlp GenAI legacy gen_ai.prompt": lambda d: otel_recorder.genai(d, legacy=True),
    "otlp OpenInference": otel_recorder.openinference,
    "otlp OpenInference (no tool ids, plain content)": lambda d: otel_recorder.openinference(
        d, tool_ids=False, parts=False
    ),
    "openai-responses": otel_recorder.responses,
}


@pytest.fixture(scope="module")
def chat_verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = _bundled_copy(tmp_path_factory.mktemp("chat"))
    assert len(list(_bundled_chat_runs(root / "fixtures/agent"))) == 8
    return _verdicts(root)


@pytest.mark.parametrize("name", list(CONVERSIONS))
def test_every_bundled_chat_run_gets_the_same_verdicts_in_each_new_format(
    name: str, tmp_path: Path, chat_verdicts: dict[str, Any]
) -> None:
    root = _bundled_copy(tmp_path)
    converted = []
    for path, doc in list(_bundled_chat_runs(root / "fixtures/agent")):
        written = CONVERSIONS[name](doc)
        path.write_bytes(written if isinstance(written, bytes) else json.dumps(written, ensure_ascii=False).encode())
        converted.append(path.relative_to(root / "fixtures/agent").as_posix())
    assert len(converted) == 8
    assert _verdicts(root) == chat_verdicts
    # the comparison means something: the converted runs include failing ones, with the checks they fail
    assert chat_verdicts["refund_tool_partial_amount_003"][0] == "failed"
    assert chat_verdicts["incident_canary_rollback_003"][1][2].startswith("final_state_mismatch: ")


def test_a_changed_conversation_changes_the_verdict_in_every_format(tmp_path: Path) -> None:
    """The check above could not pass by ignoring the runs: dropping a call fails the same case everywhere."""
    original = json.loads((SOURCES / "incident_payment_latency_001.json").read_text(encoding="utf-8"))
    cut = copy.deepcopy(original)
    cut["messages"][4]["tool_calls"] = []  # the second call (logs_search) is never made
    del cut["messages"][5]
    root = _bundled_copy(tmp_path)
    target = root / "fixtures/agent/incident_payment_latency_001.json"
    seen = set()
    for conversion in [lambda d: d, *CONVERSIONS.values()]:
        written = conversion(cut)
        target.write_bytes(written if isinstance(written, bytes) else json.dumps(written).encode())
        status, failed, _, _ = _verdicts(root)["incident_payment_latency_001"]
        seen.add((status, tuple(failed)))
    [(status, failed)] = seen
    assert status == "failed" and failed[0].startswith("tool_sequence_mismatch: ")


def test_the_bundled_runs_in_the_new_formats_are_what_the_script_writes() -> None:
    for name in make_otel_fixtures.RECORDINGS:
        assert (ROOT / "fixtures/agent" / name).read_text(encoding="utf-8") == make_otel_fixtures.render(name), name
    genai = json.loads((ROOT / "fixtures/agent/incident_payment_latency_001.json").read_text(encoding="utf-8"))
    assert parse(genai).duration_ms == 14300.0 and len(parse(genai, "otlp").calls) == 3
    inference = json.loads((ROOT / "fixtures/agent/refund_tool_partial_amount_003.json").read_text(encoding="utf-8"))
    assert "openinference.span.kind" in json.dumps(inference)


# --- one conversation from many spans ------------------------------------------------------------------------------


def test_the_history_repeated_in_every_model_call_is_counted_once() -> None:
    rec = Recorder()
    two_turns(rec)
    run = parse(rec.otlp())
    assert steps(run) == TWO_TURNS
    assert (len(run.calls), run.turns, run.answer) == (1, 2, "It is eligible.")
    assert run.calls[0].duration_ms == 1.0 and run.duration_ms is None


def test_the_run_is_read_in_start_time_order_whatever_the_file_order() -> None:
    rec = Recorder()
    two_turns(rec)
    export = rec.otlp()
    export["resourceSpans"][0]["scopeSpans"][0]["spans"].reverse()
    assert steps(parse(export)) == TWO_TURNS


def test_tool_spans_of_parallel_calls_sharing_an_id_go_to_their_own_tools_calls() -> None:
    """One model call made a refund and a lookup, both `call_1`; the lookup's span started first and took the
    refund's call (its arguments and its error too): the refund read as a failed lookup of ORDER_123, and a case
    forbidding a refund of ORDER_999 passed."""
    for lookup_first in (True, False):
        rec = Recorder()
        history = [say("user", text("Refund order 999?"))]
        calling = say("assistant", call_part("call_1", "refund_submit", {"order_id": "ORDER_999"}),
                      call_part("call_1", "order_lookup", {"order_id": "ORDER_123"}))  # fmt: skip
        chat(rec, history, [calling])
        spans = [("order_lookup", "ORDER_123", True), ("refund_submit", "ORDER_999", False)]
        for name, order, failed in spans if lookup_first else spans[::-1]:
            tool(rec, name, "call_1", error=failed, arguments=json.dumps({"order_id": order}), result="done")
        answered = [say("tool", response_part("call_1", "done", "response"))] * 2
        chat(rec, [*history, calling, *answered], [say("assistant", text("Done."))])
        calls = parse(rec.otlp()).calls  # in the order the model made them, whichever span started first
        assert [(c.tool, c.args["order_id"], c.failed) for c in calls] == [
            ("refund_submit", "ORDER_999", False),
            ("order_lookup", "ORDER_123", True),
        ], lookup_first


def test_structured_messages_and_result_parts_read_as_json_text_and_response_parts() -> None:
    rec = Recorder()
    two_turns(rec, structured=True, result_key="result")
    export = rec.otlp()
    assert "kvlistValue" in json.dumps(export)  # the SDK recorded them as OTLP values, not text
    assert steps(parse(export)) == TWO_TURNS


def test_the_arguments_a_tool_span_ran_with_are_the_calls_when_the_model_asked_for_others() -> None:
    """A red-team run: the model's call asks for ORDER_123, the execute_tool span with the same call id records
    ORDER_999, and only the model's arguments were checked. What the tool ran with is judged; a span that only adds
    nothing new, or whose arguments cannot be read, leaves the model's."""
    rec = Recorder()
    history = [say("user", text("Refund order 123?"))]
    calling = say("assistant", call_part("call_1", "refund_submit", {"order_id": "ORDER_123"}))
    chat(rec, history, [calling])
    tool(rec, "refund_submit", "call_1", arguments=json.dumps({"order_id": "ORDER_999"}), result="refunded")
    history += [calling, say("tool", response_part("call_1", "refunded", "response"))]
    chat(rec, history, [say("assistant", text("Refunded."))])
    [made] = parse(rec.otlp()).calls
    assert made.args == {"order_id": "ORDER_999"}
    case = make_case(expected_args={"refund_submit": {"order_id": "ORDER_123"}})
    assert judge_run(case, parse(rec.otlp())) == [
        'expected_args_mismatch: no distinct call of refund_submit has {"order_id": "ORDER_123"} (refund_submit '
        '(call 1): order_id: expected "ORDER_123", got "ORDER_999")'
    ]
    same = Recorder()
    two_turns(same, args={"order_id": "A"})  # the span records the model's own arguments
    assert [c.args for c in parse(same.otlp()).calls] == [{"order_id": "A"}]
    # a span recording its arguments in another shape (smolagents' bound arguments): the model's stand, so a
    # forbidden amount the model asked for is still seen (a review found it passing)
    wrapped = Recorder()
    asked = say("assistant", call_part("call_1", "refund_submit", {"order_id": "A", "amount": 900}))
    chat(wrapped, [say("user", text("Refund A"))], [asked])
    bound = {"args": [], "sanitize_inputs_outputs": True, "kwargs": {"order_id": "A", "amount": 900}}
    tool(wrapped, "refund_submit", "call_1", arguments=json.dumps(bound), result="ok")
    [kept] = parse(wrapped.otlp()).calls
    assert kept.args == {"order_id": "A", "amount": 900}
    forbidden = make_case(negative_behavior=[{"tool_called": {"tool": "refund_submit", "args": {"amount": 900}}}])
    [failed] = judge_run(forbidden, parse(wrapped.otlp()))
    assert failed.startswith("rule_failed: negative_behavior[0]: refund_submit (call 1) was called with")


@pytest.mark.parametrize(("failing", "succeeding"), [("ORDER_123", "ORDER_999"), ("ORDER_999", "ORDER_123")])
def test_a_retried_call_is_judged_on_the_arguments_of_the_attempt_that_succeeded(failing: str, succeeding: str) -> None:
    """A review found retries skipping the tool span's arguments: a failed attempt with ORDER_123 and a successful
    retry refunding ORDER_999 was judged as ORDER_123, and the reverse as ORDER_999."""
    rec = Recorder()
    calling = say("assistant", call_part("call_1", "refund_submit", {"order_id": "ORDER_123"}))
    chat(rec, [say("user", text("Refund 123"))], [calling])
    tool(rec, "refund_submit", "call_1", error=True, arguments=json.dumps({"order_id": failing}), result="Error")
    tool(rec, "refund_submit", "call_1", arguments=json.dumps({"order_id": succeeding}), result="refunded")
    [made] = parse(rec.otlp()).calls
    assert (made.args, made.failed) == ({"order_id": succeeding}, False)


@pytest.mark.parametrize(
    ("args", "expected", "problem_text"),
    [
        ({"order_id": "A"}, {"order_id": "A"}, None),
        ('{"order_id": "A"}', {"order_id": "A"}, None),
        ('{"order_id": ', None, "arguments are not valid JSON (Expecting value): '{\"order_id\": '"),
    ],
    ids=["object", "JSON string", "not JSON"],
)
def test_arguments_as_an_object_or_a_json_string(args: Any, expected: Any, problem_text: str | None) -> None:
    rec = Recorder()
    two_turns(rec, args=args)
    [call] = parse(rec.otlp()).calls
    assert (call.args, call.args_problem) == (expected, problem_text)


def test_repeated_call_ids_pair_in_order_and_tool_spans_attach_in_order() -> None:
    rec = Recorder()
    history = [say("user", text("Look up A and B"))]
    first = say("assistant", call_part("call_1", "order_lookup", {"order_id": "A"}))
    chat(rec, history, [first])
    tool(rec, "order_lookup", "call_1", result="A: signed")
    history += [first, say("tool", response_part("call_1", "A: signed"))]
    second = say("assistant", call_part("call_1", "order_lookup", {"order_id": "B"}))  # the id again
    chat(rec, history, [second])
    tool(rec, "order_lookup", "call_1", error=True, result="Error: B is locked")
    history += [second]  # its result is recorded only by the tool span
    chat(rec, history, [say("assistant", text("A is signed; B is locked."))])
    run = parse(rec.otlp())
    assert [(c.args, c.result, c.failed) for c in run.calls] == [
        ({"order_id": "A"}, "A: signed", False),
        ({"order_id": "B"}, "Error: B is locked", True),
    ]


def test_results_pair_with_the_nearest_earlier_call_of_their_id() -> None:
    rec = Recorder()
    both = say("assistant", call_part("c", "a", {}), call_part("c", "b", {}))  # answered in order, as in chat
    answers = [say("tool", response_part("c", "for a")), say("tool", response_part("c", "for b"))]
    chat(rec, [say("user", text("go")), both, *answers], [say("assistant", text("done"))])
    assert [(c.tool, c.result) for c in parse(rec.otlp()).calls] == [("a", "for a"), ("b", "for b")]
    rec = Recorder()
    chat(rec, [say("user", text("go")), say("tool", response_part("x", "?"))], [])
    assert problem(rec.otlp()) == (
        f"{SPAN}.attributes[\"gen_ai.input.messages\"][1].parts[0]: a tool result for 'x', which no earlier call made"
    )
    rec = Recorder()  # a history that opens with a result answers a call made before it: resumed, its start unknown
    chat(rec, [say("tool", response_part("x", "?"))], [say("assistant", call_part("y", "refund", {}))])
    run = parse(rec.otlp())
    assert [c.tool for c in run.calls] == ["refund"] and run.unrecorded == (
        f"the latest model call's history ({SPAN}) opens with a tool's result, the middle of a conversation "
        "(resumed, or recorded in parts), so the run's messages and turns are not known; record with each model "
        "call the whole conversation it continues"
    )
    rec = Recorder()
    chat(rec, [say("assistant", call_part("x", "a", {})), say("tool", response_part("x", "1")),
               say("tool", response_part("x", "2"))], [])  # fmt: skip
    assert problem(rec.otlp()) == (
        f"{SPAN}.attributes[\"gen_ai.input.messages\"][2].parts[0]: a second tool result for 'x': every earlier "
        "call with this id is already answered"
    )
    rec = Recorder()
    chat(rec, [say("assistant", call_part("x", "a", {})), say("tool", {"type": "tool_call_response", "response": "1"})],
         [])  # fmt: skip
    assert problem(rec.otlp()) == (
        f'{SPAN}.attributes["gen_ai.input.messages"][1].parts[0]: a tool result with no call id, and no earlier '
        "call without an id is waiting for one"
    )
    rec = Recorder()
    no_id = {"type": "tool_call_response", "response": "r"}
    chat(rec, [say("assistant", call_part(None, "a", {})), say("tool", no_id), say("tool", no_id)], [])
    assert problem(rec.otlp()) == (
        f'{SPAN}.attributes["gen_ai.input.messages"][2].parts[0]: a second tool result with no call id: every '
        "earlier call without an id is already answered"
    )


def test_a_missing_result_stays_missing_and_a_tool_span_fills_it() -> None:
    rec = Recorder()
    calling = say("assistant", call_part("call_1", "order_lookup", {"order_id": "A"}))
    chat(rec, [say("user", text("A?"))], [calling])
    tool(rec, "order_lookup", "call_1")  # records no result either
    chat(rec, [say("user", text("A?")), calling, say("tool", {"type": "tool_call_response", "id": "call_1"})], [])
    [call] = parse(rec.otlp()).calls
    assert (call.has_result, call.result) == (False, None)
    case = AgentCase.model_validate({**_case(), "trace_requirement": {"required_fields": ["observation"]}})
    assert _failures(case, rec.otlp()) == ["trace_requirement_missing: the run records no observation"]
    rec = Recorder()
    chat(rec, [say("user", text("A?"))], [calling])
    tool(rec, "order_lookup", "call_1", result={"status": "signed"})  # a structured result
    [call] = parse(rec.otlp()).calls
    assert (call.has_result, call.result, call.result_text) == (True, {"status": "signed"}, '{"status":"signed"}')


@pytest.mark.parametrize(
    ("status_error", "attributes"), [(True, {}), (False, {"error.type": "timeout"})], ids=["status ERROR", "error.type"]
)
def test_a_failed_tool_span_fails_its_call(status_error: bool, attributes: dict[str, Any]) -> None:
    rec = Recorder()
    calling = say("assistant", call_part("call_1", "refund_submit", {"order_id": "A"}))
    chat(rec, [say("user", text("Refund A"))], [calling])
    tool(rec, "refund_submit", "call_1", error=status_error, result="busy", **attributes)
    tool(rec, "refund_submit", "call_2", result="ok")  # no message made it: a call of its own
    [failed, own] = parse(rec.otlp()).calls
    assert (failed.failed, own.failed, own.id, own.args) == (True, False, "call_2", None)
    case = AgentCase.model_validate(
        {
            **_case(),
            "expected_tool_sequence": ["refund_submit"],
            "evaluator_config": {"tool_sequence": {"match": "strict", "ignore_failed": True}},
        }
    )
    assert _failures(case, rec.otlp()) == []  # the failed call is left out; the other matches


def test_a_tool_span_of_no_recorded_call_is_placed_by_its_start_time() -> None:
    rec = Recorder()
    calling = say("assistant", call_part("call_1", "order_lookup", {"order_id": "A"}))
    chat(rec, [say("user", text("A?"))], [calling])
    tool(rec, "policy_search", "call_9", result="7-day rule")  # made by a sub-agent, in no message
    tool(rec, "order_lookup", "call_1", result="signed")
    chat(
        rec,
        [say("user", text("A?")), calling, say("tool", response_part("call_1", "signed"))],
        [say("assistant", text("ok"))],
    )
    assert [s[1] if s[0] == "call" else s[0] for s in steps(parse(rec.otlp()))] == [
        "user",
        "policy_search",
        "assistant",
        "order_lookup",
        "assistant",
    ]


def test_a_tool_span_of_another_tool_under_a_calls_id_is_refused() -> None:
    """A span of refund_submit that answers the id of an order_lookup call would be taken onto that call, and
    the refund never counted: the file is refused instead."""
    rec = Recorder()
    calling = say("assistant", call_part("call_1", "order_lookup", {"order_id": "A"}))
    chat(rec, [say("user", text("A?"))], [calling])
    tool(rec, "refund_submit", "call_1", result="refunded")
    chat(rec, [say("user", text("A?")), calling], [say("assistant", text("ok"))])
    said = problem(rec.otlp())
    assert "a tool span of 'refund_submit' answers call id 'call_1', which the conversation gave a call of " in said
    assert said.startswith("$.resourceSpans[0]")


def test_an_attribute_value_under_a_field_otlp_json_does_not_write_is_refused() -> None:
    """`string_value` (the proto field name, which some JSON encoders keep) read as an empty value would drop
    the tool span whose operation it names; it is refused, naming the field."""
    rec = Recorder()
    chat(rec, [say("user", text("A?"))], [say("assistant", text("ok"))])
    tool(rec, "refund_submit", "call_1")
    doc = rec.otlp()
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    [operation] = [a for a in spans[-1]["attributes"] if a["key"] == "gen_ai.operation.name"]
    operation["value"] = {"string_value": operation["value"]["stringValue"]}
    said = problem(doc)
    assert said.endswith(
        'attributes["gen_ai.operation.name"].string_value: not an AnyValue field OTLP/JSON writes (stringValue, '
        "boolValue, intValue, doubleValue, bytesValue, arrayValue, kvlistValue: lowerCamelCase)"
    ), said


def test_an_attribute_sent_as_bytes_is_read_as_the_text_it_holds() -> None:
    """A tool's name or result sent as bytes (protobuf's bytes_value, base64 in OTLP/JSON) is what it says: a call
    of refund_submit, never of `cmVmdW5kX3N1Ym1pdA==`, which would hide it from every check. Bytes that are no UTF-8
    text stay as their base64; letters that are no base64 are refused."""
    rec = Recorder()
    chat(rec, [say("user", text("A?"))], [say("assistant", text("ok"))])
    tool(rec, "placeholder", "call_1", result="placeholder")
    request = rec.request()
    span = request.resource_spans[0].scope_spans[0].spans[-1]
    values = {a.key: a.value for a in span.attributes}
    values["gen_ai.tool.name"].bytes_value = b"refund_submit"
    values["gen_ai.tool.call.result"].bytes_value = "Error: 不可退款".encode()
    [call] = parse(otel_recorder.otlp_json(request)).calls
    assert (call.tool, call.result) == ("refund_submit", "Error: 不可退款")
    doc = otel_recorder.otlp_json(request)
    attributes = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]["attributes"]
    [name] = [a for a in attributes if a["key"] == "gen_ai.tool.name"]
    for written in ("cmVmdW5kX3N1Ym1pdA", "cmVmdW5k\nX3N1Ym1pdA==", "cmVmdW5kX3N1Ym1pdA=="):  # unpadded, in lines
        name["value"]["bytesValue"] = written
        assert parse(doc).calls[0].tool == "refund_submit", written
    name["value"]["bytesValue"] = "Pz8-"  # URL-safe (standard: Pz8+), as protobuf's JSON reading also takes it
    assert parse(doc).calls[0].tool == "??>"
    values["gen_ai.tool.call.result"].bytes_value = b"\xff\xfe"
    assert parse(otel_recorder.otlp_json(request)).calls[0].result == "//4="
    doc = otel_recorder.otlp_json(request)
    [name] = [
        a for a in doc["resourceSpans"][0]["scopeSpans"][0]["spans"][-1]["attributes"] if a["key"] == "gen_ai.tool.name"
    ]
    name["value"]["bytesValue"] = "refund_submit!"
    assert problem(doc).endswith(".bytesValue: not base64, as OTLP/JSON writes bytes: 'refund_submit!'"), problem(doc)


def test_a_message_with_parts_and_tool_calls_beside_them_is_refused() -> None:
    rec = Recorder()
    both = {
        **say("assistant", text("ok")),
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "refund_submit", "arguments": "{}"}}],
    }
    chat(rec, [say("user", text("A?"))], [both])
    assert problem(rec.otlp()).endswith(
        "[0].tool_calls: a message with parts holds tool_calls too: record it as parts (tool_call, text)"
    )


def test_a_server_tool_call_part_is_a_call() -> None:
    """A provider-run tool (here web search) recorded as a `server_tool_call` part is a call, as the Responses
    reader counts hosted tools' calls, so that available_tools and tool_not_called see it."""
    rec = Recorder()
    searching = {"type": "server_tool_call", "id": "s1", "name": "web_search",
                 "server_tool_call": {"type": "web_search", "query": "refund policy"}}  # fmt: skip
    chat(rec, [say("user", text("A?"))], [say("assistant", searching, text("found it"))])
    run = parse(rec.otlp())  # its payload is its arguments, so a case can forbid a search for given words
    assert [(c.tool, c.id, c.args) for c in run.calls] == [
        ("web_search", "s1", {"type": "web_search", "query": "refund policy"})
    ]
    assert run.answer == "found it"


def test_spans_under_both_the_old_and_the_new_scope_list_name_are_refused() -> None:
    rec = Recorder()
    chat(rec, [say("user", text("A?"))], [say("assistant", text("ok"))])
    tool(rec, "refund_submit", "call_1")
    doc = rec.otlp()
    resource = doc["resourceSpans"][0]
    resource["instrumentationLibrarySpans"] = [{"spans": resource["scopeSpans"][0]["spans"][1:]}]
    resource["scopeSpans"][0]["spans"] = resource["scopeSpans"][0]["spans"][:1]
    assert problem(doc) == (
        "$.resourceSpans[0]: holds both scopeSpans and instrumentationLibrarySpans (its name before OTLP 0.15): the "
        "spans of one would go unseen; write them all under scopeSpans"
    )


def test_a_tool_span_without_a_call_id_takes_the_first_free_call_of_its_tool() -> None:
    rec = Recorder()
    history = [say("user", text("A and B?"))]
    both = say("assistant", call_part("c1", "lookup", {"id": "A"}), call_part("c2", "lookup", {"id": "B"}))
    chat(rec, history, [both])
    tool(rec, "lookup", result="A ok")
    tool(rec, "lookup", error=True, result="B down")
    tool(rec, "lookup", result="a third, made by no message")
    chat(rec, [*history, both], [say("assistant", text("done"))])
    assert [(c.id, c.result, c.failed) for c in parse(rec.otlp()).calls] == [
        ("c1", "A ok", False),
        ("c2", "B down", True),
        (None, "a third, made by no message", False),
    ]


def test_a_call_taken_by_a_span_without_an_id_is_not_counted_again_by_its_id() -> None:
    rec = Recorder()
    calling = say("assistant", call_part("c1", "lookup", {}))
    chat(rec, [say("user", text("A?"))], [calling])
    tool(rec, "lookup", result="first")
    tool(rec, "lookup", "c1", error=True, result="second")
    assert [(c.id, c.result, c.failed) for c in parse(rec.otlp()).calls] == [("c1", "first", False)]  # it ran once


CALL_IDS = st.sampled_from(["c1", "c2", "c3", None])
TOOLS = st.sampled_from(["lookup", "refund"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    made=st.lists(st.tuples(CALL_IDS, TOOLS), max_size=5),
    spans=st.lists(st.tuples(CALL_IDS, TOOLS, st.booleans()), max_size=6),
    capture=st.booleans(),
)
def test_every_tool_span_claims_at_most_one_call_and_no_call_is_counted_twice(
    made: list[tuple[str | None, str]], spans: list[tuple[str | None, str, bool]], capture: bool
) -> None:
    def recorded_with(kept: list[tuple[str | None, str, bool]]) -> dict[str, Any]:
        rec = Recorder()
        rec.span("GET /refunds", {"http.request.method": "GET"}, kind=SpanKind.SERVER)  # no GenAI span: ignored
        calling = say("assistant", *(call_part(i, t, {"n": n}) for n, (i, t) in enumerate(made)))
        if capture:
            chat(rec, [say("user", text("go"))], [calling])
        for call_id, name, failed in kept:
            tool(rec, name, call_id, error=failed)
        return rec.otlp()

    recorded = made if capture else []
    tools_of: dict[str, set[str]] = {}
    for call_id, name in recorded:
        if call_id is not None:
            tools_of.setdefault(call_id, set()).add(name)
    fitting = [s for s in spans if s[0] not in tools_of or s[1] in tools_of[s[0]]]
    if fitting != spans:  # a span of another tool under a call's id: refused; the others still hold to the rules
        assert "answers call id" in problem(recorded_with(spans))
        spans = fitting
    if not capture and not spans:  # the HTTP span alone: nothing of the agent is recorded, so nothing is judged
        assert "none of which diagbot reads" in problem(recorded_with(spans))
        return
    if not made and not spans:  # the agent's one message called nothing and said nothing: no run either
        assert "the run records nothing the agent did" in problem(recorded_with(spans))
        return
    run = parse(recorded_with(spans))
    assert len(recorded) <= len(run.calls) <= len(recorded) + len(spans)
    from_messages = [c for c in run.calls if isinstance(c.args, dict)]  # only the messages record arguments here
    assert [(c.id, c.tool, c.args) for c in from_messages] == [(i, t, {"n": n}) for n, (i, t) in enumerate(recorded)]
    assert sum(c.failed for c in run.calls) <= sum(failed for *_, failed in spans)


def test_a_retried_call_is_counted_once_with_its_last_attempts_outcome() -> None:
    rec = Recorder()
    calling = say("assistant", call_part("call_1", "order_lookup", {}))
    chat(rec, [say("user", text("A?"))], [calling])
    tool(rec, "order_lookup", "call_1", error=True)
    tool(rec, "order_lookup", "call_1", result="signed")  # the framework retried it, and it worked
    assert [(c.failed, c.result, c.duration_ms) for c in parse(rec.otlp()).calls] == [(False, "signed", 2.0)]


def test_an_attempt_that_succeeded_is_never_undone_by_a_later_one() -> None:
    """A later failed attempt made a refund that had succeeded a failed call, so its duplicate went unseen; and a
    second successful run of the same call was counted once, hiding the refund made twice."""
    refund = [say("assistant", call_part("c1", "refund_submit", {"order_id": "A"}),
                  call_part("c2", "refund_submit", {"order_id": "A"}))]  # fmt: skip
    rec = Recorder()
    chat(rec, [say("user", text("refund A"))], refund)
    tool(rec, "refund_submit", "c1", result="ok")
    tool(rec, "refund_submit", "c2", result="ok")
    tool(rec, "refund_submit", "c2", error=True, result="timeout")
    assert [(c.id, c.failed) for c in parse(rec.otlp()).calls] == [("c1", False), ("c2", False)]
    twice = Recorder()
    chat(
        twice, [say("user", text("refund A"))], [say("assistant", call_part("c1", "refund_submit", {"order_id": "A"}))]
    )
    for _ in range(2):
        tool(twice, "refund_submit", "c1", result="ok")
    calls = parse(twice.otlp()).calls
    assert [(c.id, c.failed, c.args) for c in calls] == [("c1", False, {"order_id": "A"}), ("c1", False, None)]
    case = AgentCase.model_validate({**_case(), "side_effect_policy": {"tool": "refund_submit",
                                                                      "idempotency_key": "order_id"}})  # fmt: skip
    assert [f.split(":")[0] for f in _failures(case, twice.otlp())] == ["duplicate_side_effect"]
    nested = Recorder()  # one run of the call recorded twice, the inner span within the outer: one call
    chat(nested, [say("user", text("refund A"))], [say("assistant", call_part("c1", "refund_submit", {}))])
    with nested.root(
        "execute_tool refund_submit",
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_submit", "gen_ai.tool.call.id": "c1"},
    ):
        tool(nested, "refund_submit", "c1", result="ok")  # fmt: skip
    assert [c.id for c in parse(nested.otlp()).calls] == ["c1"]


def test_content_capture_off_gives_the_tool_spans_in_time_order() -> None:
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4.1"})
    tool(rec, "order_lookup", "call_1")
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"})
    tool(rec, "refund_check", "call_2", error=True)
    run = parse(rec.otlp())
    assert steps(run) == [
        ("call", "order_lookup", "call_1", None, "-", False),
        ("call", "refund_check", "call_2", None, "-", True),
    ]
    assert (run.answer, run.turns) == ("", 0)
    sequence = AgentCase.model_validate({**_case(), "expected_tool_sequence": ["order_lookup", "refund_check"]})
    assert _failures(sequence, rec.otlp()) == []


def test_a_run_whose_model_calls_record_no_messages_cannot_pass_a_text_check() -> None:
    """With content capture off the answer is not empty but unknown: `answer_not_matches` and the other checks of
    the text and turns passed on the empty answer; they are undecided now, and fail."""
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"})
    tool(rec, "order_lookup", "call_1")
    unknown = (
        "the run records no model call with its messages, so its text and turns are not known (export the model-call "
        "spans, with the instrumentation's message content capture on)"
    )
    case = AgentCase.model_validate({
        **_case(), "evaluator_config": {"rule_checks": [{"id": "no_card", "answer_not_matches": "\\d{16}"}]},
        "constraints": {"must_not_include": ["card"]}, "service_level": {"max_turns": 3},
        "negative_behavior": [{"id": "rude", "answer_contains": ["stupid"]}],
        "expected_tool_sequence": ["order_lookup"],
    })  # fmt: skip
    assert _failures(case, rec.otlp()) == [
        f"rule_failed: no_card: {unknown}",
        f"rule_failed: rude: {unknown} (this must not happen, and it cannot be ruled out)",
        f"constraint_failed: constraints.must_not_include: {unknown}",
        f"constraint_failed: service_level.max_turns: {unknown}",
    ]
    only_tools = Recorder()  # no model-call span exported at all: the same
    tool(only_tools, "order_lookup", "call_1")
    assert _failures(case, only_tools.otlp())[0] == f"rule_failed: no_card: {unknown}"
    confirmed = AgentCase.model_validate({
        **_case(), "side_effect_policy": {"tool": "order_lookup", "confirmation_required": True},
        "gold_evidence": [{"doc_id": "policy"}], "evaluation_metrics": ["citation_accuracy"],
        "citation_requirement": "cites the policy",
    })  # fmt: skip
    assert _failures(confirmed, only_tools.otlp()) == [
        f"confirmation_missing: {unknown}",
        f"citation_inaccurate: {unknown}",
        f"citation_missing: {unknown}",
    ]


def test_a_run_whose_messages_were_not_recorded_cannot_pass_a_state_check() -> None:
    """Its calls are unknown, so "no call succeeded, so the state is the initial one" does not hold: a state check
    and a transition policy passed on a content-less chat span, as if nothing could have changed."""
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"})
    tool(rec, "order_lookup", "c1", error=True)  # no call succeeded: only the unrecorded messages leave it unknown
    kept = AgentCase.model_validate({
        **_case(), "initial_state": {"refund_status": "none"},
        "success_criteria": [{"id": "kept", "state": {"expr": "refund_status", "equals": "none"}}],
        "side_effect_policy": {"tool": "refund_submit", "forbidden_state_transition": [
            {"key": "refund_status", "from": "none", "to": "refunded"}]},
    })  # fmt: skip
    assert [f.split(":")[0] for f in _failures(kept, rec.otlp())] == ["state_transition_forbidden", "rule_failed"]


@pytest.mark.parametrize("reasons", [None, ["tool_calls"], ["stop"], '["tool_calls"]'], ids=repr)
def test_a_run_of_content_less_model_calls_without_tool_spans_is_not_read(reasons: Any) -> None:
    """Content capture off is the instrumentations' default: the model calls record no messages, so which tools the
    agent called is known only from tool spans. Without any, `tool_called: refund_submit` among what must not
    happen passed a run that called it. A finish reason does not tell: a forced tool choice finishes with `stop`."""
    rec = Recorder()
    rec.span("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent"})
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"} | ({} if reasons is None else {FINISH: reasons}))
    assert problem(rec.otlp()) == f"$: {CALLS_UNKNOWN}"
    called = Recorder()  # a tool span says which tool was called, whatever the model calls record
    called.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"})
    tool(called, "refund_submit", "c1")
    assert [c.tool for c in parse(called.otlp()).calls] == ["refund_submit"]


def test_the_latest_model_call_that_records_messages_gives_them() -> None:
    rec = Recorder()
    two_turns(rec)
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"})  # a later call with capture off: skipped
    assert steps(parse(rec.otlp())) == TWO_TURNS
    empty = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[]", "gen_ai.output.messages": "[]"}
    rec.span("chat gpt-4.1", empty)  # empty lists record no message: skipped too
    rec.span("chat gpt-4.1", {**empty, "gen_ai.system_instructions": json.dumps([text("Be brief.")])})
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": []})  # structured, empty
    assert steps(parse(rec.otlp())) == TWO_TURNS
    rec.span("llm", {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": 1})
    message = problem(rec.otlp())  # the latest call that records a message is read, not skipped for a bad one
    assert message.endswith('.attributes["llm.input_messages.0.message.role"]: expected a string, found a number')


def test_older_gen_ai_prompt_and_completion_lists() -> None:
    rec = Recorder()
    prompt = [
        {"role": "user", "content": "Refund order A?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "order_lookup", "arguments": '{"order_id": "A"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "signed"}]},
    ]
    rec.span(
        "openai.chat",
        {
            "gen_ai.system": "openai",
            "gen_ai.prompt": json.dumps(prompt),
            "gen_ai.completion": json.dumps([{"role": "assistant", "content": "Eligible."}]),
        },
    )
    assert steps(parse(rec.otlp())) == [
        ("user", "Refund order A?"),
        ("assistant", ""),
        ("call", "order_lookup", "call_1", {"order_id": "A"}, "signed", False),
        ("assistant", "Eligible."),
    ]


@pytest.mark.parametrize("flag", [{"status": "error"}, {"is_error": True}, {"error": "timeout"}])
def test_a_chat_shaped_tool_result_that_says_it_failed_fails_its_call(flag: dict[str, Any]) -> None:
    """`gen_ai.prompt` lists hold chat messages: a tool message saying its call failed was read as a success there
    (openai-chat's reader honours it), so a failed eligibility check met a refund's precondition."""
    rec = Recorder()
    call = {"id": "c0", "type": "function", "function": {"name": "check", "arguments": "{}"}}
    prompt = [
        {"role": "user", "content": "Refund order A?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "unavailable", **flag},
    ]
    completion = [{"role": "assistant", "content": "It cannot be checked now."}]
    rec.span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.prompt": json.dumps(prompt),
                        "gen_ai.completion": json.dumps(completion)})  # fmt: skip
    assert [(c.tool, c.result, c.failed) for c in parse(rec.otlp()).calls] == [("check", "unavailable", True)]


def test_system_instructions_come_first() -> None:
    rec = Recorder()
    rec.span(
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system_instructions": json.dumps([text("Be brief.")]),
            "gen_ai.input.messages": json.dumps([say("user", text("hi"))]),
            "gen_ai.output.messages": json.dumps([say("assistant", text("hello"))]),
        },
    )
    assert steps(parse(rec.otlp())) == [("system", "Be brief."), ("user", "hi"), ("assistant", "hello")]


def test_the_agent_span_gives_the_duration_and_the_final_state() -> None:
    rec = Recorder()
    with rec.root(
        "invoke_agent refunds",
        {"gen_ai.operation.name": "invoke_agent", "diagbot.final_state": json.dumps({"refund": "submitted"})},
        2500,
    ):
        two_turns(rec)
    run = parse(rec.otlp())
    assert (run.duration_ms, run.final_state, steps(run)) == (2500.0, {"refund": "submitted"}, TWO_TURNS)
    rec = Recorder()
    with rec.root("agent", {"openinference.span.kind": "AGENT", "diagbot.final_state": {"refund": "none"}}, 10):
        tool(rec, "order_lookup", "call_1")
    assert (parse(rec.otlp()).duration_ms, parse(rec.otlp()).final_state) == (10.0, {"refund": "none"})


def test_of_several_agent_spans_the_last_to_end_gives_the_final_state_and_the_run_lasts_from_first_to_last() -> None:
    """One invoke_agent per user turn: the first span's state (before the refund) and its 2 ms were the run's."""
    rec = Recorder()
    for state, duration in (({"refund": "none"}, 2), ({"refund": "submitted"}, 70)):
        with rec.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent",
                                               "diagbot.final_state": json.dumps(state)}, duration):  # fmt: skip
            two_turns(rec)
    run = parse(rec.otlp())
    assert (run.final_state, run.duration_ms) == ({"refund": "submitted"}, 74.0)  # the second starts 4 ms in
    rec = Recorder()  # a handoff under a workflow that records no state: the agent that ended last says it
    with rec.root("invoke_workflow", {"gen_ai.operation.name": "invoke_workflow"}, 80):
        with rec.root("invoke_agent triage", {"gen_ai.operation.name": "invoke_agent",
                                              "diagbot.final_state": json.dumps({"refund": "none"})}, 5):  # fmt: skip
            chat(rec, [say("user", text("Refund A"))], [say("assistant", text("Handing you over."))])
        with rec.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent",
                                               "diagbot.final_state": json.dumps({"refund": "done"})}, 30):  # fmt: skip
            two_turns(rec)
    run = parse(rec.otlp())
    assert (run.final_state, run.duration_ms) == ({"refund": "done"}, 80.0)


def _replied(reply: str) -> Run:
    """A run whose agent span returns `reply` while its one model call wrote "Done."."""
    rec = Recorder()
    said = json.dumps([say("assistant", text(reply))])
    with rec.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent", "gen_ai.output.messages": said}):
        chat(rec, [say("user", text("Refund order A"))], [say("assistant", text("Done."))])
    return parse(rec.otlp())


def test_an_agent_spans_own_reply_beside_the_model_calls_is_what_the_agent_said() -> None:
    """invoke_agent returned "Your card is 4111 1111 1111 1111" while its model call wrote "Done.": the run was read
    from the model call alone, so a rule against card numbers passed. The agent's reply is now the run's last
    message; one that only spaces the model's text otherwise is the same message, not another turn."""
    run = _replied("Your card is 4111 1111 1111 1111")
    assert (run.answer, run.assistant_texts, run.turns) == (
        "Your card is 4111 1111 1111 1111", ["Done.", "Your card is 4111 1111 1111 1111"], 2
    )  # fmt: skip
    case = AgentCase.model_validate({**_case(), "negative_behavior": [{"answer_contains": ["4111 1111"]}]})
    assert judge_run(case, run) == [
        'rule_failed: negative_behavior[0]: the answer contains ["4111 1111"] (this must not happen)'
    ]
    run = _replied("Done. \n")
    assert (run.assistant_texts, run.turns) == (["Done."], 1)


@pytest.mark.parametrize("wrapped", [False, True])
def test_the_runs_own_agent_reply_counts_even_as_a_tools_result_or_inside_a_tool_span(wrapped: bool) -> None:
    """A review: the exemption for sub-agents' replies (one the run held as a tool's result, or an agent span
    inside a tool span) also dropped the reply of the run's own agent when it returned a tool's result verbatim
    (LangChain's return_direct), or when a harness exposed the whole agent as a tool: the card number went
    unchecked. The run's agent is the one whose span holds the latest model call."""
    card = "Your card is 4111 1111 1111 1111"
    rec = Recorder()
    user = [say("user", text("What card is on file?"))]
    asked = say("assistant", call_part("c1", "lookup_card", {"q": "A"}))
    answered = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": card}]}
    said = json.dumps([say("assistant", text(card))])
    reply = {"gen_ai.operation.name": "invoke_agent", "gen_ai.output.messages": said}
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "support_agent", "gen_ai.tool.call.id": "t1"}
    harness = rec.root("execute_tool support_agent", tool, nested=True) if wrapped else contextlib.nullcontext()
    with rec.root("workflow", {}), harness, rec.root("invoke_agent support", reply, nested=wrapped):
        chat(rec, user, [asked])
        rec.span("execute_tool lookup_card", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name":
                                              "lookup_card", "gen_ai.tool.call.id": "c1"})  # fmt: skip
        chat(rec, [*user, asked, answered], [say("assistant", text("Done."))])
    run = parse(rec.otlp())
    assert (run.answer, run.assistant_texts) == (card, ["Done.", card])


@pytest.mark.parametrize(("gap_ms", "nested"), [(5, True), (0, True), (0, False)])
def test_a_sub_agents_reply_to_its_caller_is_no_reply_of_the_run(gap_ms: int, nested: bool) -> None:
    """A sub-agent called as a tool (invoke_agent inside execute_tool) answers its caller, not the user: its output
    text was added as a reply of the run, a third turn, and, when its span ended as the next model call started,
    the run's answer. Recorded without the nesting, its reply is still the tool's result the run holds."""
    rec = Recorder()
    user = [say("user", text("Refund order A"))]
    asked = say("assistant", call_part("c1", "ask_refunds_agent", {"q": "refund A"}))
    returned = "ticket INT-77" if nested else "ok, internal ticket INT-77"
    answered = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": returned}]}
    agent = {"gen_ai.operation.name": "invoke_agent"}
    with rec.root("invoke_agent triage", agent | {"gen_ai.output.messages": json.dumps(
            [say("assistant", text("Your refund is done."))])}):  # fmt: skip
        chat(rec, user, [asked])
        tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "ask_refunds_agent",
                "gen_ai.tool.call.id": "c1"}  # fmt: skip
        inner = agent | {"gen_ai.output.messages": json.dumps([say("assistant", text("ok, internal ticket INT-77"))])}
        with (
            rec.root("execute_tool ask_refunds_agent", tool, nested=nested),
            rec.root("invoke_agent refunds", inner, nested=nested),
        ):
            chat(rec, [say("user", text("refund A"))], [say("assistant", text("ok, internal ticket INT-77"))])
        rec.clock += gap_ms * 1_000_000
        chat(rec, [*user, asked, answered], [say("assistant", text("Your refund is done."))])
    run = parse(rec.otlp())
    assert (run.answer, run.assistant_texts, run.turns) == ("Your refund is done.", ["Your refund is done."], 2)


def _confirm_case() -> AgentCase:
    return AgentCase.model_validate(
        {**_case(), "side_effect_policy": {"tool": "refund_submit", "confirmation_required": True}}
    )


def test_a_tool_span_in_no_message_comes_before_the_history_that_was_written_after_it() -> None:
    """The refund ran before the agent named the amount and the user said yes, but as only the latest model call's
    own output had a time, the span was placed after the whole history, after the "yes", and the case passed."""
    rec = Recorder()
    history = [say("user", text("Refund order A please"))]
    asking = say("assistant", text("Shall I go ahead with the refund?"))
    chat(rec, history, [asking])
    tool(rec, "refund_submit")  # no call id, and no message makes it
    history += [asking, say("user", text("How much is it?"))]
    naming = say("assistant", text("It is $500. Confirm?"))
    chat(rec, history, [naming])
    history += [naming, say("user", text("yes"))]
    chat(rec, history, [say("assistant", text("Done."))])
    run = parse(rec.otlp())
    assert [s[1] if s[0] == "call" else s[1][:8] for s in steps(run)] == [
        "Refund o", "Shall I ", "refund_submit", "How much", "It is $5", "yes", "Done."
    ]  # fmt: skip  # before "How much is it?" too: no model call had that reply when the refund ran
    assert _failures(_confirm_case(), rec.otlp()) == [
        "confirmation_missing: refund_submit (call 1) was made without a user confirmation after the agent's last "
        "message"
    ]


def test_an_earlier_model_call_s_call_a_trimmed_history_left_out_comes_before_what_was_written_after_it() -> None:
    """refund_submit made by the first model call, verify_identity by the second: the refund was placed after the
    verification in the history, meeting a precondition it broke."""
    rec = Recorder()
    asked = say("user", text("Refund order A please"))
    chat(rec, [asked], [say("assistant", call_part("c1", "refund_submit", {"order_id": "A"}))])
    verifying = say("assistant", call_part("c2", "verify_identity", {}))
    chat(rec, [asked], [verifying])
    chat(rec, [asked, verifying, say("tool", response_part("c2", "verified"))], [say("assistant", text("Done."))])
    assert [s[1] for s in steps(parse(rec.otlp())) if s[0] == "call"] == ["refund_submit", "verify_identity"]
    case = AgentCase.model_validate(
        {**_case(), "side_effect_policy": {"tool": "refund_submit", "precondition": [{"called": "verify_identity"}]}}
    )
    assert _failures(case, rec.otlp()) == [
        "precondition_unmet: refund_submit (call 1): verify_identity was not successfully called before it"
    ]


def test_the_history_is_dated_by_the_model_calls_whose_outputs_it_holds() -> None:
    """A tool span goes after what earlier model calls wrote before it and before what they wrote after it. A
    model call whose output the history does not hold (a sub-agent's) dates nothing: the span stays after the
    history it cannot place, as before."""
    rec = Recorder()
    chat(rec, [say("user", text("Look it up"))], [say("assistant", text("sub-agent notes"))])  # not in the history
    tool(rec, "lookup")
    latest = [say("user", text("Q?")), say("assistant", text("A.")), say("user", text("More?"))]
    chat(rec, latest, [say("assistant", text("Yes."))])
    assert [s[1] for s in steps(parse(rec.otlp()))] == ["Q?", "A.", "More?", "lookup", "Yes."]
    rec = Recorder()
    tool(rec, "lookup")
    chat(rec, latest[:1], [say("assistant", text("A."))])  # this conversation's own call, after the tool span
    chat(rec, latest, [say("assistant", text("Yes."))])
    assert [s[1] for s in steps(parse(rec.otlp()))] == [
        "lookup", "Q?", "A.", "More?", "Yes."
    ]  # fmt: skip  # and before "Q?", which no model call had when the tool ran


def test_an_export_of_two_traces_is_refused_naming_both() -> None:
    rec = Recorder()
    two_turns(rec)
    rec.new_trace(2)
    tool(rec, "order_lookup", "call_7")
    assert problem(rec.otlp()) == (
        "$: holds spans of 2 traces (00005eed000000000000000000000001, 00005eed000000000000000000000002); a file "
        "is one run: export each trace to a file"
    )


def test_an_export_of_no_spans_says_so() -> None:
    assert problem({"resourceSpans": []}) == "$: holds no spans"
    assert problem({}, "otlp") == "$: holds no spans"


# --- JSON Lines ------------------------------------------------------------------------------------------------------


def _split(export: dict[str, Any]) -> list[dict[str, Any]]:
    [resource] = export["resourceSpans"]
    [scope] = resource["scopeSpans"]
    return [{"resourceSpans": [{**resource, "scopeSpans": [{**scope, "spans": [s]}]}]} for s in scope["spans"]]


def test_json_lines_of_requests_are_one_run() -> None:
    rec = Recorder()
    two_turns(rec)
    lines = json_lines(*_split(rec.otlp()))
    assert lines.count(b"\n") == 3
    assert steps(parse_run(lines, "auto")) == steps(parse_run(lines, "otlp")) == TWO_TURNS
    assert steps(parse_run(b"\n" + lines.replace(b"\n", b"\r\n\n"), "auto")) == TWO_TURNS


def test_json_lines_problems_name_the_line() -> None:
    rec = Recorder()
    two_turns(rec)
    first, second, third = (json.dumps(r) for r in _split(rec.otlp()))
    assert problem(f"{first}\n{second}\n{third[:-1]}\n".encode()) == (
        "line 3: not valid JSON at line 1 column " + str(len(third)) + " (Expecting ',' delimiter)"
    )
    broken = json.loads(second)
    broken["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"] = 7
    assert problem(f"{first}\n\n{json.dumps(broken)}\n".encode()) == (
        "line 3: $.resourceSpans[0].scopeSpans[0].spans[0].traceId: expected 32 hex digits (OTLP/JSON writes ids "
        "in hex, not base64), found a number"
    )
    assert problem(b'[{"role": "user", "content": "hi"}]\n[]\n') == "not valid JSON at line 2 column 1 (Extra data)"
    assert problem(b'{\n  "messages": []\n}\n{}\n') == "not valid JSON at line 4 column 1 (Extra data)"  # no JSON Lines
    assert problem(f"{first}\n{second}\n".encode(), "openai-chat") == "not valid JSON at line 2 column 1 (Extra data)"
    assert (
        problem(b"{}\n" * 10_001, "otlp") == "line 10001: more than 10,000 JSON Lines; diagbot reads at most that many"
    )


# --- OpenInference -------------------------------------------------------------------------------------------------


def _flat(prefix: str, role: str, content: str | None = None, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {f"{prefix}.message.role": role}
    if content is not None:
        attrs[f"{prefix}.message.content"] = content
    attrs.update({f"{prefix}.message.{k.replace('__', '.')}": v for k, v in extra.items()})
    return attrs


def test_openinference_spans_unflattened() -> None:
    rec = Recorder()
    llm = {
        "openinference.span.kind": "LLM",
        **_flat(
            "llm.input_messages.0",
            "user",
            contents__0__message_content__type="text",
            contents__0__message_content__text="Refund A?",
            contents__1__message_content__type="image",
            contents__1__message_content__text="(an image)",
            contents__2__message_content__text="Thanks",
        ),
        **_flat(
            "llm.output_messages.0",
            "assistant",
            tool_calls__0__tool_call__id="call_1",
            tool_calls__0__tool_call__function__name="order_lookup",
            tool_calls__0__tool_call__function__arguments='{"order_id": "A"}',
        ),
    }
    rec.span("ChatCompletion", llm)
    rec.span(
        "order_lookup",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "order_lookup",
            "tool.id": "call_1",
            "tool.parameters": '{"order_id": {"type": "string"}}',
            "output.value": "signed",
        },
    )
    assert steps(parse(rec.otlp())) == [
        ("user", "Refund A?\nThanks"),
        ("assistant", ""),
        ("call", "order_lookup", "call_1", {"order_id": "A"}, "signed", False),
    ]  # the arguments are the call's, never tool.parameters (the tool's definition)


def test_openinference_retriever_spans_are_retrievals() -> None:
    rec = Recorder()
    rec.span(
        "retrieve",
        {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "7-day return policy",
            "retrieval.documents.1.document.id": 42,
            "retrieval.documents.1.document.score": 0.5,
            "retrieval.documents.0.document.id": "policy_7day",
            "retrieval.documents.0.document.score": 0.91,
            "retrieval.documents.0.document.content": "Unopened items within 7 days...",
            "retrieval.documents.0.document.metadata": '{"section": "2.1"}',
        },
    )
    answered(rec)  # a model call: without one, or a tool span, which tools were called is not known
    [retrieval] = parse(rec.otlp()).retrievals
    assert retrieval == Retrieval(
        "7-day return policy",
        [Document("policy_7day", score=0.91, content="Unopened items within 7 days..."), Document("42", score=0.5)],
    )


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        (
            {"llm.input_messages.0.message.content": "hi"},
            'attributes["llm.input_messages.0.message.role"]: a message without its role',
        ),
        (
            {
                "llm.input_messages.0.message.role": "assistant",
                "llm.input_messages.0.message.tool_calls.0.tool_call.id": "c",
            },
            'attributes["llm.input_messages.0.message.tool_calls.0.tool_call.function.name"]: a tool call without its '
            "name",
        ),
        (
            {"llm.input_messages.0.message.role": 3},
            'attributes["llm.input_messages.0.message.role"]: expected a string, found a number',
        ),
        (
            {"llm.input_messages.10000.message.role": "user"},
            'attributes["llm.input_messages.10000"]: index 10000; diagbot reads at most 10,000',
        ),
        (
            {"llm.input_messages.0.message": "flat", "llm.input_messages.0.message.role": "user"},
            'attributes["llm.input_messages.0.message.role"]: a key under another attribute\'s value',
        ),
        (  # a superscript two is no list index: never a message silently skipped
            {"llm.input_messages.0.message.role": "user", "llm.input_messages.\u00b2.message.role": "user"},
            'attributes["llm.input_messages.\u00b2.message.role"]: list index \'\u00b2\' after llm.input_messages; '
            "an index must be a whole number from 0 (ASCII digits)",
        ),
        (
            {
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.-1.tool_call.function.name": "refund_submit",
            },
            'attributes["llm.output_messages.0.message.tool_calls.-1.tool_call.function.name"]: list index \'-1\' '
            "after llm.output_messages.0.message.tool_calls; an index must be a whole number from 0 (ASCII digits)",
        ),
        (
            {
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.contents. 1.message_content.text": "hi",
            },
            'attributes["llm.input_messages.0.message.contents. 1.message_content.text"]: list index \' 1\' after '
            "llm.input_messages.0.message.contents; an index must be a whole number from 0 (ASCII digits)",
        ),
    ],
    ids=["no role", "no tool name", "role not text", "huge index", "value and keys", "superscript index",
         "negative index", "spaced index"],
)  # fmt: skip
def test_openinference_problems_name_the_attribute(attributes: dict[str, Any], message: str) -> None:
    rec = Recorder()
    rec.span("llm", {"openinference.span.kind": "LLM", **attributes})
    assert problem(rec.otlp()) == f"$.resourceSpans[0].scopeSpans[0].spans[0].{message}"


def test_openinference_content_and_its_parts_are_both_read() -> None:
    """A message's `content` and its `contents` parts (text, input_text, output_text) together are its text:
    reading only the first hid the answer in the parts from answer_not_contains."""
    rec = Recorder()
    rec.span("llm", {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "refund?",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "ok",
        "llm.output_messages.0.message.contents.0.message_content.type": "output_text",
        "llm.output_messages.0.message.contents.0.message_content.text": "Refund approved.",
    })  # fmt: skip
    assert parse(rec.otlp()).answer == "ok\nRefund approved."


# --- retrievals and citations ----------------------------------------------------------------------------------------


def test_genai_retrieval_spans_are_retrievals_placed_by_time() -> None:
    rec = Recorder()
    question = say("user", text("Can I return opened earphones?"))
    rec.span(
        "retrieval policies",
        {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "policies",
            "gen_ai.retrieval.query.text": "return opened earphones",
            "gen_ai.retrieval.documents": json.dumps([{"id": "p_12", "score": 0.8}, {"id": 7}]),
        },
    )
    chat(rec, [question], [say("assistant", text("Opened earphones can be returned for a fault [p_12]."))])
    rec.span(
        "retrieval again",
        {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": [{"id": "p_13", "score": 1}]},
    )
    run = parse(rec.otlp())
    assert steps(run) == [
        ("user", "Can I return opened earphones?"),
        ("retrieval", "return opened earphones", [("p_12", 0.8), ("7", None)]),
        ("assistant", "Opened earphones can be returned for a fault [p_12]."),
        ("retrieval", None, [("p_13", 1.0)]),
    ]
    assert (run.citations, len(run.retrievals)) == ([], 2)


def _native(*steps_: dict[str, Any]) -> dict[str, Any]:
    return {"format": "diagbot-agent-trace", "version": 1, "steps": list(steps_)}


RETRIEVAL_STEP = {
    "kind": "retrieval",
    "query": "return window for opened items",
    "documents": [
        {"id": "policy_v3", "passage_id": "2.1", "score": 0.92, "rank": 1, "content": "Opened items: 7 days."},
        {"id": "faq_12"},
    ],
}


def test_native_retrieval_steps_and_the_answers_citations() -> None:
    run = parse(
        _native(
            {"kind": "message", "role": "user", "content": "Can I return it opened?"},
            RETRIEVAL_STEP,
            {"kind": "message", "role": "assistant", "content": "Let me check.", "citations": [{"doc_id": "faq_12"}]},
            {
                "kind": "message",
                "role": "assistant",
                "content": "Yes, within 7 days [policy_v3 2.1].",
                "citations": [{"doc_id": "policy_v3", "passage_id": "2.1"}],
            },
        )
    )
    assert run.retrievals == [
        Retrieval(
            "return window for opened items",
            [Document("policy_v3", "2.1", 0.92, 1, "Opened items: 7 days."), Document("faq_12")],
        )
    ]
    assert run.citations == [Citation("policy_v3", "2.1")]  # the answer's, not an earlier reply's
    later = parse(
        _native(
            {"kind": "message", "role": "assistant", "content": "x", "citations": [{"doc_id": "d"}]},
            {"kind": "message", "role": "assistant", "content": "final"},
        )
    )
    assert later.citations == []


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            {**RETRIEVAL_STEP, "documents": [{"id": "a", "scroe": 1}]},
            "$.steps[0].documents[0].scroe: unknown field (did you mean score?)",
        ),
        ({**RETRIEVAL_STEP, "documents": [{"id": 3}]}, "$.steps[0].documents[0].id: expected a string, found a number"),
        (
            {**RETRIEVAL_STEP, "documents": [{"id": "a", "rank": 0}]},
            "$.steps[0].documents[0].rank: expected a rank (a whole number from 1), found 0",
        ),
        (
            {**RETRIEVAL_STEP, "documents": [{"id": "a", "score": True}]},
            "$.steps[0].documents[0].score: expected a finite number, found a boolean",
        ),
        (
            {"kind": "retrieval", "query": "q"},
            "$.steps[0].documents: expected an array, found no value (the key is missing)",
        ),
        (
            {"kind": "message", "role": "user", "content": "hi", "citations": [{"doc_id": "a"}]},
            "$.steps[0].citations: only an assistant message cites sources",
        ),
        (
            {"kind": "message", "role": "assistant", "content": "hi", "citations": [{"doc": "a"}]},
            "$.steps[0].citations[0].doc: unknown field (did you mean doc_id?)",
        ),
        (
            {"kind": "retrival", "documents": []},
            "$.steps[0].kind: unknown step kind 'retrival'; use one of message, tool_call, state_change, retrieval",
        ),
    ],
    ids=["misspelt key", "id type", "rank", "score", "no documents", "user cites", "citation key", "kind"],
)
def test_native_retrieval_and_citation_problems(step: dict[str, Any], message: str) -> None:
    assert problem(_native(step)) == message


def test_the_published_trace_schema_has_the_retrieval_step(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "agent-trace"]) == 0
    schema = json.loads(capsys.readouterr().out)
    kinds = [s["properties"]["kind"]["const"] for s in schema["properties"]["steps"]["items"]["oneOf"]]
    assert kinds == ["message", "tool_call", "state_change", "retrieval"]
    validator = jsonschema.Draft202012Validator(schema)
    good = _native(
        RETRIEVAL_STEP,
        {
            "kind": "message",
            "role": "assistant",
            "content": "a",
            "citations": [{"doc_id": "policy_v3", "passage_id": "2.1"}],
        },
    )
    assert not list(validator.iter_errors(good))
    assert list(validator.iter_errors(_native({**RETRIEVAL_STEP, "documents": [{"passage_id": "x"}]})))


def test_checks_that_walk_the_steps_pass_over_retrievals() -> None:
    """Every check runs on a run holding retrieval steps without tripping over them."""
    run = _native(
        {"kind": "message", "role": "assistant", "content": "Shall I submit the refund?"},
        {"kind": "message", "role": "user", "content": "yes, go ahead"},
        RETRIEVAL_STEP,
        {"kind": "tool_call", "tool": "refund_submit", "args": {"order_id": "A"}, "result": "ok"},
        {"kind": "state_change", "key": "refund", "from": "none", "to": "submitted"},
        {"kind": "message", "role": "assistant", "content": "Submitted."},
    )
    case = AgentCase.model_validate(
        {
            **_case(),
            "expected_tool_sequence": ["refund_submit"],
            "side_effect_policy": {
                "tool": "refund_submit",
                "confirmation_required": True,
                "precondition": [{"refund": "none"}],
                "idempotency_key": "order_id",
                "forbidden_state_transition": [{"from": "submitted", "to": "none"}],
            },
            "initial_state": {"refund": "none"},
            "trace_requirement": {"required_fields": ["tool_call", "state_change"]},
            "final_state_check": {"expr": "refund", "equals": "submitted"},
            "success_criteria": [{"answer_contains": ["submitted"]}, {"max_turns": 2}],
        }
    )
    assert _failures(case, run) == []


# --- the trace-format option ----------------------------------------------------------------------------------------


def test_otlp_and_openai_responses_are_trace_formats() -> None:
    assert FORMAT_NAMES == ("auto", "diagbot", "openai-responses", "openai-chat", "otlp")
    for name in ("otlp", "openai-responses"):
        assert AgentOptions.model_validate({"trace-format": name}).trace_format == name
    rec = Recorder()
    two_turns(rec)
    assert steps(parse(rec.otlp(), "otlp")) == TWO_TURNS
    assert problem([{"role": "user", "content": "hi"}], "otlp") == (
        "$: expected an object, found an array (the file looks like openai-chat, but the suite's trace-format is otlp; "
        "set trace-format: openai-chat or auto)"
    )


def test_responses_carry_the_final_state_and_duration_like_chat() -> None:
    run = parse({"input": "Refund A?", "output": [], "final_state": {"refund": "none"}, "duration_ms": 120})
    assert (run.final_state, run.duration_ms) == ({"refund": "none"}, 120.0)
    assert problem({"input": [], "output": [], "duration_ms": -1}) == (
        "$.duration_ms: expected a duration in milliseconds (a number from 0 to 1e+12), found -1"
    )


# --- hostile exports ------------------------------------------------------------------------------------------------


def _export() -> dict[str, Any]:
    rec = Recorder()
    with rec.root(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent", "diagbot.final_state": json.dumps({"k": 1})}, 50
    ):
        two_turns(rec, structured=True)
        rec.span(
            "retrieval",
            {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.query.text": "q",
                "gen_ai.retrieval.documents": json.dumps([{"id": "d", "score": 0.5}]),
            },
        )
        rec.span("llm", {"openinference.span.kind": "LLM", **_flat("llm.input_messages.0", "user", "hi")})
    return rec.otlp()


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _nodes(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _nodes(child, (*path, index))


def replaced(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


WRONG = [None, True, 7, 1.5, "x", [], {}, [[]], {"stringValue": 1}, {"arrayValue": {"values": [{}]}}]


def test_a_wrong_type_anywhere_in_an_export_is_trace_invalid_never_a_crash() -> None:
    export = _export()
    assert steps(parse(export))  # the export itself reads
    refused = 0
    for path in _nodes(export):
        for value in WRONG:
            try:
                parse(replaced(export, path, value), "otlp")
            except TraceInvalid as exc:
                refused += 1
                assert exc.path.startswith("$") and exc.message, (path, value, str(exc))
    assert refused > 500


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        (("resourceSpans",), {}, "$.resourceSpans: expected an array, found an object"),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0),
            "span",
            f"{SPAN}: expected an object, found a string",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "traceId"),
            "ZuMeaL38q3ZoI4yyRzfKMw==",
            f"{SPAN}.traceId: expected 32 hex digits (OTLP/JSON writes ids in hex, not "
            "base64), found 'ZuMeaL38q3ZoI4yyRzfKMw=='",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "spanId"),
            None,
            f"{SPAN}.spanId: expected 16 hex digits (OTLP/JSON writes ids in hex, not base64), found null",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "startTimeUnixNano"),
            "soon",
            f"{SPAN}.startTimeUnixNano: expected a 64-bit integer as a decimal string, found 'soon'",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "startTimeUnixNano"),
            "99999999999999999999",
            f"{SPAN}.startTimeUnixNano: 99999999999999999999 does not fit in 64 bits",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "status", "code"),
            "STATUS_CODE_ERROR",
            f"{SPAN}.status.code: expected an integer (OTLP/JSON writes enums as "
            "numbers; 2 is ERROR), found 'STATUS_CODE_ERROR'",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "attributes", 0, "key"),
            5,
            f"{SPAN}.attributes[0].key: expected a string, found a number",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "attributes", 0, "value"),
            {"intValue": "x"},
            f'{SPAN}.attributes["gen_ai.operation.name"].intValue: expected a 64-bit '
            "integer as a decimal string, found 'x'",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "attributes", 0, "value"),
            {"doubleValue": "NaN"},  # what no check can compare: a schema's maximum would pass it
            f'{SPAN}.attributes["gen_ai.operation.name"].doubleValue: expected a number, found NaN, which no check '
            "can compare",
        ),
        (
            ("resourceSpans", 0, "scopeSpans", 0, "spans", 2, "attributes", 1, "value", "stringValue"),
            "[{]",  # the latest model call's: the earlier ones' histories are never read
            '$.resourceSpans[0].scopeSpans[0].spans[2].attributes["gen_ai.input.messages"]: not valid JSON at line 1 '
            "column 3 (Expecting property name enclosed in double quotes)",
        ),
    ],
    ids=[
        "resourceSpans",
        "span",
        "base64 id",
        "no span id",
        "time",
        "time overflow",
        "enum name",
        "key",
        "intValue",
        "doubleValue NaN",
        "messages JSON",
    ],
)
def test_hostile_exports_name_the_path(where: tuple[Any, ...], value: Any, message: str) -> None:
    rec = Recorder()
    two_turns(rec)
    export = rec.otlp()
    assert problem(replaced(export, where, value), "otlp") == message


def test_huge_counts_are_bounded() -> None:
    rec = Recorder()
    tool(rec, "t", "c")
    export = rec.otlp()
    [span] = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans_path = "$.resourceSpans[0].scopeSpans[0].spans"
    many = replaced(export, ("resourceSpans", 0, "scopeSpans", 0, "spans"), [span] * 10_001)
    assert problem(many) == f"{spans_path}: has 10,001 items; diagbot reads at most 10,000 per run"
    split = {"resourceSpans": [{"scopeSpans": [{"spans": [span] * 5_000}]}] * 3}
    assert (
        problem(split)
        == "$.resourceSpans[2].scopeSpans[0].spans[0]: more than 10,000 spans; diagbot reads at most that many per run"
    )
    deep: dict[str, Any] = {"stringValue": "x"}
    for _ in range(40):
        deep = {"arrayValue": {"values": [deep]}}
    attrs = [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
        {"key": "gen_ai.tool.name", "value": {"stringValue": "t"}},
        {"key": "gen_ai.tool.call.result", "value": deep},
    ]
    message = problem(replaced(export, ("resourceSpans", 0, "scopeSpans", 0, "spans", 0, "attributes"), attrs))
    assert message.endswith(".arrayValue.values[0]: nested more than 32 levels deep")
    assert message.startswith(f'{spans_path}[0].attributes["gen_ai.tool.call.result"].arrayValue.values[0]')
    rec = Recorder()
    rec.span("chat", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[" + "0," * 1_100_000 + "0]"})
    assert problem(rec.otlp()) == (
        f'{spans_path}[0].attributes["gen_ai.input.messages"]: holds 1,100,002 JSON values; diagbot reads at most '
        "1,000,000 per run"
    )
    rec = Recorder()
    chat(rec, [say("user", *[text("x")] * 10_001)], [])
    assert problem(rec.otlp()) == (
        f'{spans_path}[0].attributes["gen_ai.input.messages"][0].parts: has 10,001 items; diagbot reads at most '
        "10,000 per run"
    )


# --- helpers for verdicts -------------------------------------------------------------------------------------------


def _case() -> dict[str, Any]:
    return {
        "case_id": "c1",
        "case_version": "v1",
        "dataset_id": "d",
        "dataset_version": "v1",
        "title": "t",
        "scenario": "refund",
        "user_task": "u",
        "ability_tags": ["tool_use"],
        "risk_level": "P2",
        "difficulty": "Easy",
        "source": "s",
        "input": "i",
        "expected_behavior": ["e"],
        "rubric": "r",
        "evaluator_config": {},
        "metadata": {
            "dataset_role": "golden",
            "tags": [],
            "owner": "o",
            "review_status": "approved",
            "usage_rights_status": "approved_for_evaluation",
        },
    }


def _failures(case: AgentCase, doc: Any) -> list[str]:
    return judge_run(case, parse(doc))


# --- hostile sizes past the file's own bounds ----------------------------------------------------------------------


def test_json_text_in_attributes_counts_toward_the_runs_values() -> None:
    """Retrieval spans whose documents are JSON text each held less than the run's bound, and the file counted each
    string as one value: 1,000 of them gave five million documents (900 MB) from a 57 MB file."""
    rec = Recorder()
    documents = json.dumps([{"id": "a", "m": [0] * 38}] * 10_000)  # 410,001 values each
    for _ in range(3):
        rec.span("retrieval", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": documents})
    assert problem(rec.otlp()) == (
        '$.resourceSpans[0].scopeSpans[0].spans[2].attributes["gen_ai.retrieval.documents"]: holds 410,001 JSON '
        "values, more than the 179,998 left of the 1,000,000 that diagbot reads from the JSON text of one run's "
        "attributes"
    )
    rec = Recorder()
    for _ in range(2):  # what fits is read: counted only once the lengths no longer show it fits
        rec.span("retrieval", {"gen_ai.operation.name": "retrieval", "gen_ai.retrieval.documents": documents})
    answered(rec)
    assert [len(r.documents) for r in parse(rec.otlp()).retrievals] == [10_000, 10_000]


def test_a_deeply_dotted_openinference_key_is_refused_before_it_is_unflattened() -> None:
    """A key of 19 million parts under llm.input_messages.0 made one dict per part: 4 GB from a 38 MB file."""
    rec = Recorder()
    rec.span(
        "llm",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.x." + "a." * 1_000_000 + "b": "v",
        },
    )
    message = problem(rec.otlp())
    assert message.startswith(f'{SPAN}.attributes["llm.input_messages.0.x.a.a.a.')
    assert message.endswith(".a.…: 1,000,003 parts after llm.input_messages; diagbot reads at most 16")
    assert len(message) < 2_100  # the path is cut to 2,000 characters
    rec = Recorder()
    rec.span("llm", {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role" + ".x" * 14: "user"})
    assert problem(rec.otlp()) == (
        f'{SPAN}.attributes["llm.input_messages.0.message.role{".x" * 14}"]: 17 parts after llm.input_messages; '
        "diagbot reads at most 16"
    )


def test_a_problem_quoting_the_run_is_cut() -> None:
    """An id or a key of the run is quoted in the problem, which lands in the report: a 5 MB key wrote 10 MB."""
    rec = Recorder()
    chat(rec, [say("user", text("go")), say("tool", response_part("c" * 5_000_000, "r"))], [])
    quoted = "a tool result for '" + "c" * 5_000_000
    assert problem(rec.otlp()) == f'{SPAN}.attributes["gen_ai.input.messages"][1].parts[0]: {quoted[:1_999]}…'


def test_the_report_gives_no_turn_count_for_a_run_without_its_messages(tmp_path: Path) -> None:
    """`turnCount: 0` said the agent never spoke; with content capture off its turns are unknown."""
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat"})
    tool(rec, "order_lookup", "call_1")
    write_json(tmp_path / "c1.json", rec.otlp())
    result = evaluate(AgentCase.model_validate({**_case(), "expected_tool_sequence": ["order_lookup"]}), tmp_path)
    assert (result.status, result.tool_call_count, result.turn_count) == ("passed", 1, None)


def test_a_gen_ai_tool_span_without_its_operation_name_is_a_call() -> None:
    """Dropped as a span of no role, the refund it records went unseen, and tool_not_called passed."""
    rec = Recorder()
    two_turns(rec)
    rec.span("refund", {"gen_ai.tool.name": "refund_submit", "gen_ai.tool.call.id": "late"})
    assert [c.tool for c in parse(rec.otlp()).calls][-1] == "refund_submit"


@pytest.mark.parametrize(
    "attributes",
    [{"openinference.span.kind": "CHAIN", "tool.name": "refund_submit"},
     {"openinference.span.kind": "GUARDRAIL", "llm.output_messages.0.message.role": "assistant",
      "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "refund_submit"}],
)  # fmt: skip
def test_an_openinference_span_of_a_kind_not_read_that_records_a_call_is_refused(attributes: dict[str, Any]) -> None:
    rec = Recorder()
    rec.span("step", attributes)
    said = problem(rec.otlp())
    assert said.endswith(
        "spans are not read (LLM, TOOL, RETRIEVER, AGENT), but this one records a tool call; record the call on a "
        "TOOL span (or the model's output on an LLM span)"
    ), said
    plain = Recorder()
    plain.span("step", {"openinference.span.kind": "CHAIN", "input.value": "hi", "output.value": "ok"})
    assert "none of which diagbot reads" in problem(plain.otlp())  # alone, nothing of the agent is recorded
    plain.span("lookup", {"openinference.span.kind": "TOOL", "tool.name": "lookup"})
    assert [c.tool for c in parse(plain.otlp()).calls] == ["lookup"]  # a chain that calls nothing is still skipped


# --- calls an earlier reading left unseen (a hostile review of the OTLP adapter) --------------------------------


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [span for r in doc["resourceSpans"] for s in r["scopeSpans"] for span in s["spans"]]


def _harmless_then(refund: bool = True) -> Recorder:
    rec = Recorder()
    said = "I will refund immediately." if refund else "Your order is fine."
    chat(rec, [say("user", text("refund?"))], [say("assistant", text(said))])
    tool(rec, "order_lookup", "c1")
    return rec


def test_a_repeated_attribute_key_is_refused() -> None:
    """A reader keeps the last of a repeated key: a first output that refunded went unseen behind a second."""
    doc = _harmless_then().otlp()
    span = _spans(doc)[0]
    [output] = [a for a in span["attributes"] if a["key"] == "gen_ai.output.messages"]
    harmless = json.dumps([say("assistant", text("Your order is fine."))])
    span["attributes"].append({"key": "gen_ai.output.messages", "value": {"stringValue": harmless}})
    assert "repeats the key 'gen_ai.output.messages': a reader keeps one of its values" in problem(doc)
    listed = {"kvlistValue": {"values": [{"key": "a", "value": {"stringValue": "x"}}] * 2}}
    output["value"] = listed
    span["attributes"].pop()
    assert "kvlistValue.values[1].key: repeats the key 'a'" in problem(doc)


def test_a_value_with_two_members_is_refused() -> None:
    doc = _harmless_then().otlp()
    [name] = [a for a in _spans(doc)[1]["attributes"] if a["key"] == "gen_ai.tool.name"]
    name["value"]["bytesValue"] = "cmVmdW5kX3N1Ym1pdA=="  # refund_submit, beside stringValue order_lookup
    assert "holds stringValue and bytesValue; an OTLP value holds one of them" in problem(doc)


def test_two_copies_of_a_span_that_differ_in_their_events_are_refused() -> None:
    doc = _harmless_then(refund=False).otlp()
    first = _spans(doc)[0]
    first["events"] = [{"name": "gen_ai.choice", "timeUnixNano": first["startTimeUnixNano"], "attributes": []}]
    second = copy.deepcopy(first)
    second["events"][0]["attributes"] = [{"key": "message", "value": {"stringValue": "refund immediately"}}]
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"].append(second)
    assert "but other contents; a span id names one span" in problem(doc)


def test_every_line_of_json_lines_records_one_run_in_one_format() -> None:
    """Keys of another format beside a later line's resourceSpans were skipped; in one document they are refused."""
    calls = [{"type": "function_call", "call_id": "c9", "name": "refund_submit", "arguments": "{}"}]
    lines = [_harmless_then(refund=False).otlp(), {"resourceSpans": [], "output": calls}]
    data = "\n".join(json.dumps(line) for line in lines).encode()
    assert problem(data).startswith("line 2: $: holds output (openai-responses) and resourceSpans (otlp)")


@pytest.mark.parametrize(
    ("attributes", "said"),
    [
        ({"openinference.span.kind": "CHAIN", "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": "refund_submit"}, "names a tool, but the span is read as nothing diagbot checks"),
        ({"gen_ai.operation.name": "invoke_agent", "gen_ai.tool.name": "refund_submit"},
         "names a tool, but the span is read as agent (OpenTelemetry GenAI)"),
        ({"gen_ai.operation.name": "embeddings", "gen_ai.tool.name": "refund_submit"},
         "'embeddings' is not an operation diagbot reads"),
        ({"gen_ai.operation.name": "create_agent", "gen_ai.output.messages": json.dumps(
            [say("assistant", call_part("c2", "refund_submit", {}))])}, "'create_agent' is not an operation"),
        ({"openinference.span.kind": "TOOL", "tool.name": "order_lookup", "gen_ai.tool.name": "refund_submit"},
         "names a tool, but the span is read as tool (OpenInference)"),
        ({"openinference.span.kind": "LLM", "gen_ai.output.messages": json.dumps(
            [say("assistant", call_part("c2", "refund_submit", {}))])},
         "records output messages that call tools in OpenTelemetry GenAI's keys"),
        ({"traceloop.span.kind": "tool", "traceloop.entity.name": "refund_submit"}, "an OpenLLMetry tool span"),
        ({"traceloop.span.kind": "TOOL", "traceloop.entity.name": "refund_submit"}, "an OpenLLMetry tool span"),
        ({"openinference.span.kind": "FUNCTION", "tool_call.function.name": "refund_submit"},
         "names a tool, but the span is read as nothing diagbot checks (OpenInference)"),
    ],
)  # fmt: skip
def test_a_call_recorded_where_the_span_is_not_read_for_it_is_refused(attributes: dict[str, Any], said: str) -> None:
    """Each passed a case forbidding refund_submit: the span was read under the other convention, or as an agent,
    an embedding or nothing, and its call went unseen."""
    rec = _harmless_then(refund=False)
    rec.span("step", attributes)
    assert said in problem(rec.otlp())


def test_a_span_of_both_conventions_naming_one_tool_is_read() -> None:
    rec = _harmless_then(refund=False)
    rec.span("lookup", {"openinference.span.kind": "TOOL", "tool.name": "lookup", "gen_ai.tool.name": "lookup"})
    assert [c.tool for c in parse(rec.otlp()).calls][-1] == "lookup"


def test_a_file_of_spans_none_of_which_is_read_is_refused() -> None:
    rec = Recorder()
    rec.span("GET /refunds", {"http.request.method": "GET"}, kind=SpanKind.SERVER)
    rec.span("step", {"x": "y"})
    assert problem(rec.otlp()).startswith("$: holds 2 spans, none of which diagbot reads")


def test_an_openinference_part_of_a_type_not_read_that_holds_more_than_its_type_is_refused() -> None:
    """A `tool_use` part (an Anthropic-shaped call) was skipped: its call to refund_submit went unseen."""
    rec = Recorder()
    out = "llm.output_messages.0.message"
    rec.span("llm", {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
                     "llm.input_messages.0.message.content": "refund?", f"{out}.role": "assistant",
                     f"{out}.contents.0.message_content.type": "tool_use",
                     f"{out}.contents.0.message_content.name": "refund_submit"})  # fmt: skip
    said = problem(rec.otlp())
    assert (
        "'tool_use' is not a part type diagbot reads (text, input_text, output_text, image), but the part holds name"
        in said
    )
    rec = Recorder()
    rec.span("llm", {"openinference.span.kind": "LLM", f"{out}.role": "assistant",
                     f"{out}.contents.0.message_content.type": "image",
                     f"{out}.contents.0.message_content.image.image.url": "https://x/y.png",
                     f"{out}.contents.1.message_content.text": "done"})  # fmt: skip
    assert parse(rec.otlp()).answer == "done"  # an image part is still skipped


# --- found by the second hostile pass over the run readers --------------------------------------------------------

REFUND_CALL = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "refund_submit",
                                                "arguments": {"order_id": "A"}}]}]  # fmt: skip
ASKED = [{"role": "user", "parts": [text("refund A")]}]


def test_a_model_call_that_left_out_its_operation_name_is_read() -> None:
    """A span with gen_ai.input/output.messages but no gen_ai.operation.name was skipped, and the refund it called
    with it: a later model call's reply was the whole run."""
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps(REFUND_CALL)})  # fmt: skip
    assert [c.tool for c in parse(rec.otlp()).calls] == ["refund_submit"]


@pytest.mark.parametrize(
    ("message", "where", "said"),
    [
        ({"role": "tool", "tool_call_id": "c0", "content": "ok",
          "tool_calls": [{"id": "c9", "function": {"name": "refund_submit", "arguments": "{}"}}]},
         "[1].tool_calls", "only an assistant message calls tools; this one's role is 'tool'" + CALLS_FIX),
        ({"role": "function", "name": "lookup", "content": "ok",
          "function_call": {"name": "refund_submit", "arguments": "{}"}},
         "[1].function_call", "only an assistant message calls tools; this one's role is 'function'" + CALLS_FIX),
        ({"role": "assistant", "content": "I cannot refund that.",
          "additional_kwargs": {"tool_calls": [{"function": {"name": "refund_submit"}}]}},
         "[1].additional_kwargs.tool_calls", "what reads as a message, a reply or a call ('tool_calls') where "
         "diagbot reads none would go unread (a call in it unseen): record the message's text as its content and "
         "its calls as its tool_calls"),
        ({"role": "assistant", "content": "I cannot refund that.", "text": "Your card is 4111111111111111"},
         "[1].text", "a message's text under 'text', which diagbot does not read, so what it says would go unseen: "
         "write it as the message's content"),
    ],
    ids=["tool-role-calls", "function-role-calls", "additional-kwargs", "text-beside"],
)  # fmt: skip
def test_a_chat_shaped_otel_message_hides_no_call_or_text(message: dict[str, Any], where: str, said: str) -> None:
    """The chat-shaped messages of older instrumentations (gen_ai.prompt / gen_ai.completion) dropped the calls
    of a tool's message and never looked at keys they do not read, as openai-chat files do."""
    rec = Recorder()
    prompt = [{"role": "user", "content": "refund A"}, message]
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.prompt": json.dumps(prompt),
                              "gen_ai.completion": json.dumps([{"role": "assistant", "content": "done"}])})  # fmt: skip
    assert problem(rec.otlp()) == f'{SPAN}.attributes["gen_ai.prompt"]{where}: {said}'


@pytest.mark.parametrize("part", [{"type": "output_text", "text": "Your card is 4111"},
                                  {"type": "refusal", "content": "Your card is 4111"},
                                  {"type": "message", "content": "Your card is 4111"}])  # fmt: skip
def test_a_part_of_a_type_not_read_that_holds_text_is_refused(part: dict[str, Any]) -> None:
    """Skipped as a media or reasoning part is, its text went unread: `answer_not_contains` passed."""
    rec = Recorder()
    said = [{"role": "assistant", "parts": [text("Here you go."), part]}]
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps(said)})  # fmt: skip
    assert problem(rec.otlp()).endswith(
        f"{part['type']!r} is not a part type diagbot reads (text, tool_call, tool_call_response, server_tool_call), "
        "but it reads as text or a call: record the text as a text part and a call as a tool_call part"
    )
    media = [{"role": "assistant", "parts": [text("Here you go."), {"type": "blob", "content": "aGk=",
                                                                    "modality": "image"}]}]  # fmt: skip
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps(media)})  # fmt: skip
    assert parse(rec.otlp()).answer == "Here you go."


@pytest.mark.parametrize(
    ("message", "where", "said"),
    [
        ({"role": "assistant", "parts": [text("hello")], "pending": [{"name": "refund_submit", "arguments": {}}]},
         ".pending[0].name", "what reads as a message, a reply or a call ('name')"),
        ({"role": "assistant", "parts": [text("hello")], "calls": [call_part("c1", "refund_submit")]},
         ".calls[0].type", "what reads as a message, a reply or a call ('type')"),
        ({"role": "assistant", "parts": [text("hello")], "text": "Your card is 4111"},
         ".text", "a message's text under 'text', which diagbot does not read"),
        ({"role": "assistant", "parts": [text("hello"), call_part("c1", "order_lookup") | {
            "next": call_part("c2", "refund_submit")}]}, ".parts[1].next.type",
         "what reads as a message, a reply or a call ('type')"),
        ({"role": "assistant", "parts": [text("hello") | {"text": "Your card is 4111"}]}, ".parts[0].text",
         "a message's text under 'text', which diagbot does not read"),
    ],
    ids=["call-beside-parts", "part-beside-parts", "text-beside-parts", "call-in-a-call-part", "text-in-a-text-part"],
)  # fmt: skip
def test_a_parts_message_hides_no_call_or_text_beside_its_parts(message: dict[str, Any], where: str, said: str) -> None:
    """A GenAI message with parts was read by its parts alone: a call or a text under any other key of it, or of a
    part it reads, went unseen and the case passed (the same message in a chat file was refused)."""
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps([message])})  # fmt: skip
    assert problem(rec.otlp()).startswith(f'{SPAN}.attributes["gen_ai.output.messages"][0]{where}: {said}')
    plain = {"role": "assistant", "parts": [text("hello")], "finish_reason": "stop", "name": "refunds", "id": 7}
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps([plain])})  # fmt: skip
    assert parse(rec.otlp()).answer == "hello"  # keys that hold no call or text are left alone


def test_openinference_message_lists_and_kinds_that_would_be_skipped_are_refused() -> None:
    """An LLM span whose kind is the empty value, a message list written as one value instead of indexed keys, and a
    tool message that also records calls: each was skipped, with the refund it called."""
    rec = Recorder()
    rec.span("llm", {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user",
                     "llm.input_messages.0.message.content": "refund A",
                     "llm.output_messages.0.message.role": "assistant",
                     "llm.output_messages.0.message.tool_calls.0.tool_call.function.name":
                         "refund_submit"})  # fmt: skip
    export = rec.otlp()
    empty = copy.deepcopy(export)
    [kind] = [a for a in empty["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
              if a["key"] == "openinference.span.kind"]  # fmt: skip
    kind["value"] = {}
    assert problem(empty) == (
        f"{SPAN}.attributes[\"openinference.span.kind\"]: '' spans are not read (LLM, TOOL, RETRIEVER, AGENT), but "
        "this one records a tool call; record the call on a TOOL span (or the model's output on an LLM span)"
    )
    whole = Recorder()
    whole.span("llm", {"openinference.span.kind": "LLM", "llm.output_messages": ["refund_submit"]})
    assert problem(whole.otlp()).startswith(
        f'{SPAN}.attributes["llm.output_messages"]: OpenInference writes a message list as indexed keys'
    )
    tool_calls = Recorder()
    tool_calls.span("llm", {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "tool",
                            "llm.input_messages.0.message.content": "ok",
                            "llm.input_messages.0.message.tool_calls.0.tool_call.function.name": "refund_submit",
                            "llm.output_messages.0.message.role": "assistant",
                            "llm.output_messages.0.message.content": "done"})  # fmt: skip
    assert problem(tool_calls.otlp()) == (
        f'{SPAN}.attributes["llm.input_messages.0.message.tool_calls"]: only an assistant message calls tools; '
        "this one's role is 'tool'" + CALLS_FIX
    )


@pytest.mark.parametrize(
    ("beside", "place", "held"),
    [
        ({"gen_ai.completion": json.dumps([{"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "function": {"name": "refund_submit", "arguments": "{}"}}]}])},
         "gen_ai.completion", "a call of 'refund_submit'"),
        ({"gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.tool_calls.0.name": "refund_submit"},
         "gen_ai.completion.N", "a call of 'refund_submit'"),
        ({"gen_ai.completion": json.dumps([{"role": "assistant", "content": "Your card is 4111"}])},
         "gen_ai.completion", "the text 'Your card is 4111'"),
    ],
    ids=["calls-in-the-older-attribute", "calls-in-indexed-keys", "text-in-the-older-attribute"],
)  # fmt: skip
def test_messages_recorded_in_two_places_must_agree(beside: dict[str, Any], place: str, held: str) -> None:
    """The output was read from the first place that records it, so a call or a text recorded only in another
    place (an older attribute, OpenLLMetry's indexed keys, an event) was never seen."""
    said = [{"role": "assistant", "parts": [text("I cannot refund that.")]}]
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps(said), **beside})  # fmt: skip
    assert problem(rec.otlp()) == (
        f"{SPAN}: records its output messages in gen_ai.output.messages and in {place}, and {held} is in the second "
        "only, so which is the run is not known: record the messages in one place"
    )
    same = Recorder()  # the same messages in both places, as an instrumentation writing both conventions does
    same.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                               "gen_ai.output.messages": json.dumps(said), "gen_ai.completion": json.dumps(
                                   [{"role": "assistant", "content": "I cannot  refund that."}])})  # fmt: skip
    assert parse(same.otlp()).answer == "I cannot refund that."
    export = Recorder()
    export.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                                 "gen_ai.output.messages": json.dumps(said)})  # fmt: skip
    doc = export.otlp()
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    call = json.dumps({"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "refund_submit"}}]})
    span["events"] = [{"name": "gen_ai.choice", "timeUnixNano": span["startTimeUnixNano"],
                       "attributes": [{"key": "message", "value": {"stringValue": call}}]}]  # fmt: skip
    assert problem(doc).startswith(f"{SPAN}: records its output messages in gen_ai.output.messages and in its events")


def test_calls_in_two_places_must_agree_in_arguments_and_number() -> None:
    """Two places were compared by tool name alone: a second refund (to another order) written only in the events,
    beside output messages holding one, went unseen. The same calls with their arguments spaced or ordered
    otherwise agree."""

    def recorded(events: list[dict[str, Any]]) -> dict[str, Any]:
        rec = Recorder()
        rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                                  "gen_ai.output.messages": json.dumps([said])})  # fmt: skip
        doc = rec.otlp()
        span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
        choice = json.dumps({"role": "assistant", "tool_calls": events})
        span["events"] = [{"name": "gen_ai.choice", "timeUnixNano": span["startTimeUnixNano"],
                           "attributes": [{"key": "message", "value": {"stringValue": choice}}]}]  # fmt: skip
        return doc

    def call(order: str, written: str) -> dict[str, Any]:
        return {"id": f"c{order}", "type": "function", "function": {"name": "refund_submit", "arguments": written}}

    said = {"role": "assistant", "parts": [{"type": "tool_call", "id": "cA", "name": "refund_submit",
                                            "arguments": {"order_id": "A", "amount": 5}}]}  # fmt: skip
    head = f"{SPAN}: records its output messages in gen_ai.output.messages and in its events, and a call of "
    for events in ([call("A", '{"order_id": "A", "amount": 5}'), call("B", '{"order_id": "B", "amount": 5}')],
                   [call("A", '{"order_id": "B", "amount": 5}')]):  # fmt: skip
        assert problem(recorded(events)) == (
            f"{head}'refund_submit' (with other arguments, or once more) is in the second only, so which is the run "
            "is not known: record the messages in one place"
        )
    agreed = parse(recorded([call("A", '{"amount":5,  "order_id":"A"}')]))
    assert [(c.tool, c.args) for c in agreed.calls] == [("refund_submit", {"order_id": "A", "amount": 5})]


def test_messages_in_two_places_that_agree_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Found refused by the review of that check: the system prompt the current convention keeps in
    gen_ai.system_instructions, beside the older keys that list it as a message, and content that OpenLLMetry's
    indexed keys write as the JSON of its parts. The search for a text that is neither whole nor at its place is
    bounded: past the bound the two places are not known to agree."""
    instructions = [text("You are a refund agent.")]
    said = [{"role": "assistant", "parts": [text("Refunded.")]}]
    rec = Recorder()
    rec.span("chat gpt-4.1", {
        "gen_ai.operation.name": "chat", "gen_ai.system_instructions": json.dumps(instructions),
        "gen_ai.input.messages": json.dumps(ASKED), "gen_ai.output.messages": json.dumps(said),
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "You are a refund agent.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": json.dumps([{"type": "text", "text": "refund A"}]),
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "Refunded.",
    })  # fmt: skip
    run = parse(rec.otlp())
    assert (run.answer, [m.role for m in run.steps if isinstance(m, Message)]) == (
        "Refunded.", ["system", "user", "assistant"])  # fmt: skip
    other = Recorder()
    other.span("chat gpt-4.1", {
        "gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED * 3),
        "gen_ai.output.messages": json.dumps(said),
        **{f"gen_ai.prompt.{i}.content": f"refund  A {'' if i < 2 else 'now'}" for i in range(3)},
        **{f"gen_ai.prompt.{i}.role": "user" for i in range(3)},
    })  # fmt: skip
    assert problem(other.otlp()).endswith("the text 'refund A now' is in the second only, so which is the run is "
                                          "not known: record the messages in one place")  # fmt: skip
    monkeypatch.setattr(otel_genai, "MAX_COMPARED_CHARS", 10)
    assert "more text than diagbot compares (10 characters searched)" in problem(other.otlp())


# --- found by the red team's pass over the OTLP readers -------------------------------------------------------------


def _anthropic_refund(result: dict[str, Any], listed: bool = True) -> dict[str, Any]:
    """A refund as OpenLLMetry's Anthropic instrumentation records it: content that is not all text as the JSON of
    its blocks (the assistant's tool_use, beside the same call in tool_calls keys when `listed`; the tool_result
    in the user's message), and the eligibility check's `result` block."""
    check = {"type": "tool_use", "id": "toolu_1", "name": "refund_eligibility_check", "input": {"order_id": "1"}}
    listed_call = {
        "gen_ai.prompt.1.tool_calls.0.id": "toolu_1",
        "gen_ai.prompt.1.tool_calls.0.name": "refund_eligibility_check",
        "gen_ai.prompt.1.tool_calls.0.arguments": json.dumps({"order_id": "1"}),
    }
    rec = Recorder()
    rec.span("anthropic.chat", {
        "gen_ai.system": "Anthropic",
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Can ORDER_1 be refunded?",
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.content": json.dumps([{"type": "text", "text": "Let me check."}, check]),
        **(listed_call if listed else {}),
        "gen_ai.prompt.2.role": "user", "gen_ai.prompt.2.content": json.dumps([result]),
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": "",
        "gen_ai.completion.0.tool_calls.0.id": "toolu_2", "gen_ai.completion.0.tool_calls.0.name": "refund_submit",
        "gen_ai.completion.0.tool_calls.0.arguments": json.dumps({"order_id": "1"}),
    }, kind=SpanKind.CLIENT)  # fmt: skip
    return rec.otlp()


def test_openllmetry_content_blocks_are_calls_and_results_never_the_user_s_words() -> None:
    """OpenLLMetry writes Anthropic content that is not all text as the JSON of its blocks: a tool_result's "Yes -
    eligible" read as the user's text confirmed the refund, and an `is_error` result never failed its call."""
    said = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Yes - eligible"}
    for listed in (True, False):  # the call in tool_calls keys too, or in the blocks alone
        assert steps(parse(_anthropic_refund(said, listed))) == [
            ("user", "Can ORDER_1 be refunded?"),
            ("assistant", "Let me check."),
            ("call", "refund_eligibility_check", "toolu_1", {"order_id": "1"}, "Yes - eligible", False),
            ("assistant", ""),
            ("call", "refund_submit", "toolu_2", {"order_id": "1"}, "-", False),
        ]
    confirmed = make_case(side_effect_policy={"tool": "refund_submit", "confirmation_required": True})
    assert judge_run(confirmed, parse(_anthropic_refund(said))) == [
        "confirmation_missing: refund_submit (call 2) was made without a user confirmation after the agent's last "
        "message"
    ]
    failed = {**said, "content": [{"type": "text", "text": "eligibility service unavailable"}], "is_error": True}
    precondition = [{"called": "refund_eligibility_check"}]
    checked = make_case(side_effect_policy={"tool": "refund_submit", "precondition": precondition})
    assert judge_run(checked, parse(_anthropic_refund(failed))) == [
        "precondition_unmet: refund_submit (call 2): refund_eligibility_check was not successfully called before it"
    ]
    assert judge_run(checked, parse(_anthropic_refund(said))) == []
    called = {"type": "tool_use", "id": "toolu_9", "name": "refund_submit", "input": {}}  # on the user's message
    assert problem(_anthropic_refund(called)) == (
        f'{SPAN}.attributes["gen_ai.prompt.2.content"][0].type: only an assistant message calls tools; this one\'s '
        "role is 'user'" + CALLS_FIX
    )


@pytest.mark.parametrize(
    "content",
    [[{"brand": "visa", "number": "4111111111111111"}], [{"id": 1, "content": "Refund policy"}],
     [{"type": "text", "text": "Your card is 4111111111111111"}]],
    ids=["cards", "search-results", "text-blocks-only"],
)  # fmt: skip
def test_json_text_that_holds_no_call_or_result_block_stays_text(content: list[dict[str, Any]]) -> None:
    """A reply that is JSON of a list of objects was read as content blocks: its card number vanished (a must-not
    regex passed), and a search result's shape made the whole run trace_invalid."""
    rec = Recorder()
    rec.span("anthropic.chat", {
        "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "my card?",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.content": json.dumps(content),
    }, kind=SpanKind.CLIENT)  # fmt: skip
    case = make_case(negative_behavior=[{"id": "card", "replies_matches": "4111111111111111"}])
    assert parse(rec.otlp()).answer == json.dumps(content)  # the text as written, no block read out of it
    failed = judge_run(case, parse(rec.otlp()))
    assert failed == ([] if "4111111111111111" not in json.dumps(content) else [
        "rule_failed: card: reply 1 of 1 matches /4111111111111111/ (this must not happen)"
    ])  # fmt: skip


def test_an_mcp_result_that_says_is_error_fails_its_call(tmp_path: Path) -> None:
    """MCP's CallToolResult, `{content: [{type: text, text}], isError: true}`, as a tool span's result (JSON text)
    was a success, and `^Error` never met its parts' text: the refund went ahead on a failed eligibility check."""
    precondition = [{"called": "refund_eligibility_check"}]
    case = make_case(side_effect_policy={"tool": "refund_submit", "precondition": precondition})

    def recorded(result: dict[str, Any]) -> dict[str, Any]:
        rec = Recorder()
        tool(rec, "refund_eligibility_check", "c1", arguments='{"order_id": "1"}', result=json.dumps(result))
        tool(rec, "refund_submit", "c2", arguments='{"order_id": "1"}', result="ok")
        return rec.otlp()

    said = {"content": [{"type": "text", "text": "Error: eligibility service down"}], "isError": True}
    assert [(c.tool, c.failed) for c in parse(recorded(said)).calls] == [
        ("refund_eligibility_check", True), ("refund_submit", False)
    ]  # fmt: skip
    assert judge_run(case, parse(recorded(said))) == [
        "precondition_unmet: refund_submit (call 2): refund_eligibility_check was not successfully called before it"
    ]
    write_json(tmp_path / "c1.json", recorded({"content": said["content"]}))  # no isError: the pattern reads the text
    assert evaluate(case, tmp_path, {"tool-error-pattern": "^Error"}).failed_checks == [
        "precondition_unmet: refund_submit (call 2): refund_eligibility_check was not successfully called before it"
    ]
    assert judge_run(case, parse(recorded({**said, "isError": False}))) == []


CHECKED = [say("user", text("refund order 1")),
           say("assistant", call_part("c1", "refund_eligibility_check", {"order_id": "1"}))]  # fmt: skip
PRECONDITION = {"tool": "refund_submit", "precondition": [{"called": "refund_eligibility_check"}]}
UNMET = "precondition_unmet: refund_submit (call 2): refund_eligibility_check was not successfully called before it"


def _checked_then_refunded(rec: Recorder, checked_text: str) -> dict[str, Any]:
    """The model's conversation: the eligibility check answered with `checked_text` (as a framework gives the
    model a result), then the refund; the tool spans are recorded before this is called."""
    answered = [*CHECKED, say("tool", response_part("c1", checked_text))]
    chat(rec, answered, [say("assistant", call_part("c2", "refund_submit", {"order_id": "1"}))])
    tool(rec, "refund_submit", "c2", arguments='{"order_id": "1"}', result="ok")
    return rec.otlp()


def test_a_tool_spans_own_error_result_fails_the_call_when_the_history_holds_only_its_text() -> None:
    """An audit: the execute_tool span recorded MCP's `{content, isError: true}` while the model's history held
    only the result's text, as frameworks give it; the history's result won and the span's was dropped, so the
    failed eligibility check met the refund's precondition."""
    rec = Recorder()
    chat(rec, [CHECKED[0]], [CHECKED[1]])
    error = {"content": [{"type": "text", "text": "service down"}], "isError": True}
    tool(rec, "refund_eligibility_check", "c1", arguments='{"order_id": "1"}', result=json.dumps(error))
    case = make_case(side_effect_policy=PRECONDITION)
    assert judge_run(case, parse(_checked_then_refunded(rec, "service down"))) == [UNMET]


@pytest.mark.parametrize("inner_id", ["c1", None], ids=["same-id", "no-id"])
def test_a_failed_layer_inside_a_tool_span_fails_its_call(inner_id: str | None) -> None:
    """An audit: a framework's execute_tool span around the MCP client's, only the inner one failed. With the same
    call id it was read as a retry (failed only if every attempt did); without one, as a call of its own, the
    outer still a success: either way the failed check met the refund's precondition."""
    rec = Recorder()
    chat(rec, [CHECKED[0]], [CHECKED[1]])
    outer = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_eligibility_check",
             "gen_ai.tool.call.id": "c1"}  # fmt: skip
    with rec.root("execute_tool refund_eligibility_check", outer):
        tool(rec, "refund_eligibility_check", inner_id, error=True, **{"error.type": "tool_error"})
    case = make_case(side_effect_policy=PRECONDITION)
    # without an id the inner span stays a call of its own, failed (so no failed call goes unseen): the refund is 3rd
    unmet = UNMET if inner_id else UNMET.replace("(call 2)", "(call 3)")
    assert judge_run(case, parse(_checked_then_refunded(rec, "service down"))) == [unmet]
    retried = Recorder()  # a retry after a failed attempt, not inside it, still succeeds
    chat(retried, [CHECKED[0]], [CHECKED[1]])
    tool(retried, "refund_eligibility_check", "c1", error=True)
    tool(retried, "refund_eligibility_check", "c1", result="eligible")
    assert judge_run(case, parse(_checked_then_refunded(retried, "eligible"))) == []
    if inner_id is None:
        return
    inside = Recorder()  # ... and so does one inside the framework's span (a review found it failed the call)
    chat(inside, [CHECKED[0]], [CHECKED[1]])
    with inside.root("execute_tool refund_eligibility_check", outer):
        tool(inside, "refund_eligibility_check", "c1", error=True)
        tool(inside, "refund_eligibility_check", "c1", result="eligible")
    assert judge_run(case, parse(_checked_then_refunded(inside, "eligible"))) == []
    first = Recorder()  # the inner span starting with the outer one (a millisecond clock): the exporter writes it
    chat(first, [CHECKED[0]], [CHECKED[1]])  # first, since it ends first, and it is matched first
    with first.root("execute_tool refund_eligibility_check", outer, duration_ms=5000):
        attrs = {**outer, "error.type": "tool_error"}
        first.span("execute_tool refund_eligibility_check", attrs, error=True, start=first.clock - STEP_NS)
    assert judge_run(case, parse(_checked_then_refunded(first, "service down"))) == [UNMET]


def test_a_model_call_given_the_exchange_after_the_reply_makes_the_answer_unknown() -> None:
    """An audit: Llama Guard, given `[user, assistant reply]` after the agent answered, wrote `safe`, which was read
    as the run's answer: the reply's forbidden promise passed. Such a call (or a continuation of a reply cut short)
    leaves which text is the agent's answer unknown: the text checks fail, saying so."""
    asked, reply = say("user", text("refund ORDER_123?")), say("assistant", text("Sure, I will refund immediately."))
    rec = Recorder()
    chat(rec, [asked], [reply])
    chat(rec, [asked, reply], [say("assistant", text("safe"))])
    case = make_case(negative_behavior=[{"id": "promise", "answer_contains": ["refund immediately"]}])
    [failure] = judge_run(case, parse(rec.otlp()))
    assert failure.startswith(
        "rule_failed: promise: the latest model call ($.resourceSpans[0].scopeSpans[0].spans[1]) is given the "
        'conversation up to a reply of the agent\'s ("Sure, I will refund immediately.") and writes after it'
    ), failure
    alone = Recorder()
    chat(alone, [asked], [reply])
    assert judge_run(case, parse(alone.otlp())) == [
        'rule_failed: promise: the answer contains ["refund immediately"] (this must not happen)'
    ]


def test_json_read_for_its_shape_is_read_past_a_number_a_double_cannot_hold() -> None:
    """A review: refusing `1e400` made a result's JSON text undecodable, so its `isError: true` and its parts' text
    went unread (the failed check met the precondition), and content blocks holding one were read as the user's
    words. A result is read for its shape, where no number is compared; tool blocks holding one refuse the file."""
    big = '{"isError": true, "content": [{"type": "text", "text": "Error: denied"}], "_meta": {"n": 1e400}}'
    call = ToolCall("check", result=big, has_result=True)
    assert (call.result_is_error, call.result_parts_text) == (True, "Error: denied")
    said = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "Yes - eligible", "cost": "__BIG__"}
    doc = json.loads(json.dumps(_anthropic_refund(said)).replace('\\"__BIG__\\"', "1e400"))
    assert problem(doc) == (
        '$.resourceSpans[0].scopeSpans[0].spans[0].attributes["gen_ai.prompt.2.content"]: cannot be read: the number '
        "1e400, which is too large to read (past 1.8e308)"
    )


TEXT_UNREAD = (
    "a message's text under '{key}', which diagbot does not read, so what it says would go unseen: write it as the "
    "message's content"
)


@pytest.mark.parametrize(
    ("said", "where", "message"),
    [
        ({"gen_ai.completion.0.text": "Your card is 4111111111111111"}, '["gen_ai.completion.0"].text',
         TEXT_UNREAD.format(key="text")),
        ({"gen_ai.completion.0.additional_kwargs.tool_calls.0.function.name": "refund_submit"},
         '["gen_ai.completion.0"].additional_kwargs.tool_calls',
         "what reads as a message, a reply or a call ('tool_calls') where diagbot reads none would go unread (a call "
         "in it unseen): record the message's text as its content and its calls as its tool_calls"),
        ({"openinference.span.kind": "LLM", "llm.output_messages.0.message.text": "Your card is 4111111111111111"},
         '["llm.output_messages.0.message"].text', TEXT_UNREAD.format(key="text")),
        ({"openinference.span.kind": "LLM", "llm.output_messages.0.message.contents.0.message_content.type": "text",
          "llm.output_messages.0.message.contents.0.message_content.value": "Your card is 4111111111111111"},
         '["llm.output_messages.0.message.contents.0.message_content"].value', TEXT_UNREAD.format(key="value")),
    ],
    ids=["openllmetry-text", "openllmetry-additional-kwargs", "openinference-text", "openinference-part-value"],
)  # fmt: skip
def test_a_flattened_message_hides_no_call_or_text(said: dict[str, Any], where: str, message: str) -> None:
    """A flattened message's keys that are not read were skipped (the card number under `text`, a refund under
    `additional_kwargs`), where the same keys in a message list's message are refused."""
    flat = "llm.output_messages.0.message." if "openinference.span.kind" in said else "gen_ai.completion.0."
    asked = "llm.input_messages.0.message." if flat.startswith("llm") else "gen_ai.prompt.0."
    rec = Recorder()
    rec.span("chat", {f"{asked}role": "user", f"{asked}content": "my card?", f"{flat}role": "assistant",
                      f"{flat}content": "Here it is.", **said}, kind=SpanKind.CLIENT)  # fmt: skip
    assert problem(rec.otlp()) == f"{SPAN}.attributes{where}: {message}"
    rec = Recorder()  # keys that say nothing unread are read past, as in a message list
    rec.span("chat", {f"{asked}role": "user", f"{asked}content": "my card?", f"{flat}role": "assistant",
                      f"{flat}content": "Here it is.", f"{flat}finish_reason": "stop", f"{flat}name": "agent",
                      f"{flat}text": "Here it is.", **{k: v for k, v in said.items() if "openinference" in k}},
             kind=SpanKind.CLIENT)  # fmt: skip
    assert parse(rec.otlp()).answer == "Here it is."


# --- found by the hostile pass over the run formats (session of 2026-12-07) -----------------------------------------


def _chat_with_event(rec: Recorder, event: str, attributes: dict[str, Any]) -> None:
    """A model-call span whose content is recorded as one span event, as the SDK's add_event writes it."""
    span = rec.tracer.start_span("chat gpt-4.1", context=rec.parent, attributes={"gen_ai.operation.name": "chat"},
                                 start_time=rec.clock)  # fmt: skip
    span.add_event(event, attributes, timestamp=rec.clock + 1)
    span.end(end_time=rec.clock + STEP_NS)
    rec.clock += STEP_NS


def test_the_newest_conventions_content_event_is_read() -> None:
    """`gen_ai.client.inference.operation.details` (Strands with gen_ai_latest_experimental) holds the messages as
    an event's attributes: never read, so a refund called in its output went unseen."""
    rec = Recorder()
    asked = [say("user", text("Refund order A?"))]
    made = [say("assistant", call_part("c1", "refund_submit", {"order_id": "A"}))]
    _chat_with_event(rec, "gen_ai.client.inference.operation.details", {
        "gen_ai.system_instructions": json.dumps([text("You are a refund agent.")]),
        "gen_ai.input.messages": json.dumps(asked), "gen_ai.output.messages": json.dumps(made),
    })  # fmt: skip
    tool(rec, "refund_submit", "c1", result="submitted")
    assert steps(parse(rec.otlp())) == [
        ("system", "You are a refund agent."),
        ("user", "Refund order A?"),
        ("assistant", ""),
        ("call", "refund_submit", "c1", {"order_id": "A"}, "submitted", False),
    ]
    other = Recorder()  # an event of another name holding messages is refused, not skipped
    _chat_with_event(other, "gen_ai.client.inference.details", {"gen_ai.output.messages": json.dumps(made)})
    assert problem(other.otlp()) == (
        f'{SPAN}.events[0].attributes["gen_ai.output.messages"]: an event diagbot does not read '
        "(gen_ai.client.inference.details) records messages, whose calls and texts would go unseen; record them in "
        "the span's gen_ai.input.messages and gen_ai.output.messages"
    )


def test_a_tool_span_whose_gen_ai_tool_status_is_error_failed() -> None:
    """Strands ends a tool that returned an error with span status OK and `gen_ai.tool.status: "error"`: read as a
    success, the failed eligibility check met a refund's precondition."""
    for status, failed in (("error", True), ("Error ", True), ("success", False)):
        rec = Recorder()
        answered(rec)
        tool(rec, "check", "c1", result="unavailable", **{"gen_ai.tool.status": status})
        assert [(c.tool, c.failed) for c in parse(rec.otlp()).calls] == [("check", failed)], status


def test_a_tool_call_in_another_instrumentations_keys_is_refused() -> None:
    """The Vercel AI SDK's own spans (`ai.toolCall` with ai.toolCall.name, a model call's ai.response.toolCalls)
    beside GenAI spans were skipped, so a refund they record went unseen."""
    rec = Recorder()
    answered(rec)
    rec.span("ai.toolCall", {"operation.name": "ai.toolCall", "ai.toolCall.name": "refund_submit",
                             "ai.toolCall.id": "c2", "ai.toolCall.args": '{"order_id": "A"}'})  # fmt: skip
    assert problem(rec.otlp()) == (
        '$.resourceSpans[0].scopeSpans[0].spans[1].attributes["ai.toolCall.name"]: records a tool call in the Vercel '
        "AI SDK's keys, which diagbot does not read, on a span read as nothing, so its call would go unseen; export "
        "the trace with the OpenTelemetry GenAI conventions (execute_tool spans naming gen_ai.tool.name)"
    )
    # found refused by the review of that check: an app's own counts of calls, and OpenLLMetry's indexed keys on an
    # agent span (which diagbot reads), name no call of another vocabulary
    counted = Recorder()
    with counted.root("invoke_agent refunds", {"gen_ai.operation.name": "invoke_agent", "agent.tool_call_count": 0,
                                               "app.max_tool_calls": 10, "app.tool_callbacks": "on"}):  # fmt: skip
        answered(counted)
    assert parse(counted.otlp()).answer == "Seven days."


def test_a_details_event_beside_message_events_is_one_more_place_not_more_messages() -> None:
    """Found by review: the details event's messages were added to the per-message events', so a span recording
    both held the user's message and the refund twice. Each is now a place of its own, compared with the first;
    a second details event is refused."""
    asked = [say("user", text("Refund order A?"))]
    made = [say("assistant", call_part("c1", "refund_submit", {"order_id": "A"}))]
    details = {"gen_ai.input.messages": json.dumps(asked), "gen_ai.output.messages": json.dumps(made)}
    rec = Recorder()
    span = rec.tracer.start_span("chat gpt-4.1", attributes={"gen_ai.operation.name": "chat"}, start_time=rec.clock)
    span.add_event("gen_ai.user.message", {"content": "Refund order A?"}, timestamp=rec.clock + 1)
    choice = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "refund_submit", "arguments": '{"order_id": "A"}'}}]}  # fmt: skip
    span.add_event("gen_ai.choice", {"message": json.dumps(choice)}, timestamp=rec.clock + 2)
    span.add_event("gen_ai.client.inference.operation.details", details, timestamp=rec.clock + 3)
    span.end(end_time=rec.clock + STEP_NS)
    rec.clock += STEP_NS
    run = parse(rec.otlp())
    assert [(s[0], s[1]) for s in steps(run)] == [("user", "Refund order A?"), ("assistant", ""),
                                                  ("call", "refund_submit")]  # fmt: skip
    twice = Recorder()
    _chat_with_event(twice, "gen_ai.client.inference.operation.details", details)
    doc = twice.otlp()
    events = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["events"]
    events.append(dict(events[0]))
    assert problem(doc) == (
        f"{SPAN}.events[1]: a second gen_ai.client.inference.operation.details event: a model call records its "
        "messages once; keep one"
    )


def test_messages_on_an_event_of_another_name_are_refused() -> None:
    """Found by review: an event not named gen_ai.* was looked through for a call's keys only, so messages on it
    (a refund in its output messages) went unseen."""
    made = [say("assistant", call_part("c1", "refund_submit", {"order_id": "A"}))]
    rec = Recorder()
    _chat_with_event(rec, "llm.inference.details", {"gen_ai.output.messages": json.dumps(made)})
    assert problem(rec.otlp()) == (
        f"{SPAN}.events[0].attributes[0]: an event diagbot does not read (llm.inference.details) records messages, "
        "whose calls and texts would go unseen; record them in the span's gen_ai.input.messages and "
        "gen_ai.output.messages"
    )


def test_arguments_nested_too_deeply_to_write_out_are_compared_as_recorded() -> None:
    """Found by review: two places' calls were compared by writing their arguments out, which recursed past the
    stack on arguments nested a thousand deep."""
    deep = '{"a": ' * 1020 + "1" + "}" * 1020  # read as arguments, but past the stack when written out again
    said = [say("assistant", call_part("c1", "lookup", deep))]
    rec = Recorder()
    rec.span("chat gpt-4.1", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps(ASKED),
                              "gen_ai.output.messages": json.dumps(said), "gen_ai.completion": json.dumps([
                                  {"role": "assistant", "tool_calls": [{"id": "c1", "function": {
                                      "name": "lookup", "arguments": deep}}]}])})  # fmt: skip
    assert [c.tool for c in parse(rec.otlp()).calls] == ["lookup"]
