"""The chat reader's short way for the usual message (`openai_chat._plain`) reads every conversation as the full
reading does: the same steps, results and call order, or the same refusal naming the same path."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diagbot.kinds.agent.formats import openai_chat, parse_run
from diagbot.kinds.agent.run import MAX_STEPS, Message, Run, StateChange, ToolCall, TraceInvalid

IDS = st.sampled_from(["c1", "c2", "c3", None, 7])
FUNCTION = st.fixed_dictionaries(
    {"name": st.sampled_from(["lookup", "refund", 3]), "arguments": st.sampled_from(['{"a": 1}', "{bad", ""])}
)
CALL = st.one_of(
    st.fixed_dictionaries({"id": IDS, "type": st.just("function"), "function": FUNCTION}),
    st.sampled_from([{}, {"id": "c1"}, {"id": "c1", "function": "x"}, {"function": {"arguments": "{}"}}, "call"]),
    st.sampled_from(
        [  # entries with more than a call: read, or refused where what they hold reads as a call
            {"id": "c2", "index": 0, "function": {"name": "lookup", "arguments": "{}"}},
            {
                "id": "c2",
                "type": "function",
                "function": {"name": "lookup"},
                "extra": {"name": "refund", "arguments": ""},
            },
            {"id": "c2", "function": {"name": "lookup", "arguments": "{}", "tool_calls": [{"name": "refund"}]}},
            {"id": "c2", "function": {"name": "lookup", "arguments": "{}"}, "meta": {"trace": "t1"}},
            {"id": "c2", "type": "custom", "custom": {"name": "refund", "input": "x"}, "function": {"name": "lookup"}},
            {"id": "c2", "type": "mcp", "function": {"name": "lookup", "arguments": "{}"}},
        ]
    ),
)
CONTENT = st.sampled_from([None, "", "Sure.", "yes, go ahead", ["x"], [{"type": "text", "text": "part"}], 5])
MESSAGE = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "system", "assistant", "tool", "developer", "function", "robot", 4])},
    optional={
        "content": CONTENT,
        "tool_calls": st.one_of(st.lists(CALL, max_size=3), st.sampled_from([None, "calls", {}])),
        "tool_call_id": IDS,
        "name": st.sampled_from(["lookup", None]),
    },
)


def _shape(run: Run) -> list[Any]:
    found: list[Any] = []
    for step in run.steps:
        if isinstance(step, Message):
            found.append(("message", step.role, step.text))
        elif isinstance(step, ToolCall):
            found.append(("call", step.tool, step.id, step.raw_args, step.result, step.has_result, step.made,
                          step.seen, run.call_number(step)))  # fmt: skip
        else:
            assert isinstance(step, StateChange)
    return found


def _read(data: Any) -> Any:
    try:
        return _shape(openai_chat.read(data))
    except TraceInvalid as exc:
        return ("refused", exc.path, exc.message)


def _read_fully(data: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    with monkeypatch.context() as patched:
        patched.setattr(openai_chat, "_PLAIN_FIELDS", frozenset())  # no message takes the short way
        return _read(data)


@settings(max_examples=400, deadline=None)
@given(st.lists(MESSAGE, max_size=12), st.booleans())
def test_the_short_way_reads_as_the_full_reading(messages: list[dict[str, Any]], wrapped: bool) -> None:
    data: Any = {"messages": messages} if wrapped else messages
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert _read(data) == _read_fully(data, monkeypatch)


def test_a_repeated_call_id_is_answered_by_the_nearest_call_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "first"},
        {"role": "assistant", "content": None, "tool_calls": [call, {**call, "function": {"name": "refund"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "second"},
        {"role": "tool", "tool_call_id": "c1", "content": "third"},
    ]
    read = _read(messages)
    assert read == _read_fully(messages, monkeypatch)
    assert [(s[1], s[4]) for s in read if s[0] == "call"] == [("lookup", "first"), ("lookup", "second"),
                                                              ("refund", "third")]  # fmt: skip


def test_results_of_parallel_calls_sharing_an_id_go_by_the_tool_they_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Parallel calls of one message sharing an id were answered in the order the calls were made, whatever tool
    each result named: the order results finished in decided which call failed, and so a P0 verdict."""
    refund = {"id": "call_0", "type": "function", "function": {"name": "refund_submit", "arguments": "{}"}}
    lookup = {"id": "call_0", "type": "function", "function": {"name": "order_lookup", "arguments": "{}"}}
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [refund, lookup]},
        {"role": "tool", "tool_call_id": "call_0", "name": "order_lookup", "content": "Error: timeout"},
        {"role": "tool", "tool_call_id": "call_0", "name": "refund_submit", "content": "refunded"},
    ]
    read = _read(messages)
    assert read == _read_fully(messages, monkeypatch)
    assert [(s[1], s[4]) for s in read if s[0] == "call"] == [("refund_submit", "refunded"),
                                                              ("order_lookup", "Error: timeout")]  # fmt: skip
    named_otherwise = [*messages[:1], {**messages[1], "name": "wire_money"}]
    refused = (
        "refused",
        "$[1].name",
        "a tool result named 'wire_money' for 'call_0', whose waiting calls are of order_lookup, refund_submit: "
        "which call it answers is unknown; record each result with its call's name and id",
    )
    assert _read(named_otherwise) == _read_fully(named_otherwise, monkeypatch) == refused


def test_text_under_unread_keys_is_compared_within_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 pieces of text beside a 1 MB content were each searched for in it: seconds per file, before any check's
    budget applied. A piece is searched once however often it repeats, and the searches stop at a bound."""
    from diagbot.kinds.agent.formats import common

    monkeypatch.setattr(common, "MAX_COMPARED_CHARS", 200_000)
    pieces = [f"z{n}" for n in range(100)]
    content = "a" * 10_000 + " " + " ".join(pieces)
    repeated = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": content, "text": ["z7"] * 5_000}]
    assert _read(repeated)[-1][:2] == ("message", "assistant")  # said by the content: read, searched once
    distinct = [repeated[0], {**repeated[1], "text": pieces}]
    assert _read(distinct) == (
        "refused",
        "$[1].text",
        "holds more text under keys diagbot does not read than it compares with the message's content (200,000 "
        "characters searched), so what it says may go unseen: write it as the message's content",
    )


def test_a_call_written_on_the_message_itself_is_refused() -> None:
    """`{role: assistant, name: refund_submit, arguments: "{}"}` read as a message said by "refund_submit": the call
    went unseen and a forbidden-call case passed."""
    messages = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": "ok", "name": "refund_submit", "arguments": "{}"}]  # fmt: skip
    assert _read(messages) == (
        "refused",
        "$[1].arguments",
        "name and arguments on the message itself read as a call, which a chat message does not hold there, so it "
        "would go unseen: record it in the assistant message's tool_calls ({id, type: function, function: {name, "
        "arguments}})",
    )
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    echoed = [messages[0], {"role": "assistant", "content": None, "tool_calls": [call]},
              {"role": "tool", "tool_call_id": "c1", "name": "lookup", "arguments": "{}", "content": "ok"}]  # fmt: skip
    assert [s[0] for s in _read(echoed)] == ["message", "message", "call"]  # a result echoing its call is read


def test_the_bound_on_text_under_unread_keys_is_one_per_run_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reset for every message, 300 messages each just under the bound took half a minute for one file."""
    import json

    from diagbot.kinds.agent.formats import common, parse_run

    monkeypatch.setattr(common, "MAX_COMPARED_CHARS", 100_000)
    said = {"role": "assistant", "content": "a" * 10_000 + " zq", "text": ["zq"]}
    messages = [{"role": "user", "content": "hi"}, *[said] * 30]
    assert _read(messages)[0][0] == "message"  # read alone, each message has the bound
    with pytest.raises(TraceInvalid, match="holds more text under keys diagbot does not read"):
        parse_run(json.dumps(messages).encode(), "openai-chat")


def test_too_many_steps_is_refused_at_the_same_message_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    messages = [{"role": "assistant", "content": "x", "tool_calls": [call] * 40}] * (MAX_STEPS // 41 + 1)
    refused = _read(messages)
    assert refused == _read_fully(messages, monkeypatch)
    assert refused[0] == "refused" and "holds more than 10,000 messages and tool calls" in refused[2]


@pytest.mark.parametrize(
    ("entry", "refused"),
    [
        ({"id": "a", "type": "custom", "custom": {"name": "refund_submit", "input": "x"},
          "function": {"name": "order_lookup", "arguments": "{}"}},
         ("$[0].tool_calls[0]", "holds both a function and a custom call, so which one was made is unknown; record "
          "one call an entry")),
        ({"id": "a", "type": "function", "function": {"name": "order_lookup", "arguments": "{}"},
          "extra": {"name": "refund_submit", "arguments": "{}"}},
         ("$[0].tool_calls[0].extra.name", "what reads as a message, a reply or a call ('name') where "
          "diagbot reads none would go unread (a call in it unseen): " + openai_chat._HINT)),
        ({"id": "a", "function": {"name": "order_lookup", "arguments": "{}",
                                  "tool_calls": [{"function": {"name": "refund_submit"}}]}},
         ("$[0].tool_calls[0].function.tool_calls[0].function", "what reads as a message, a reply or a "
          "call ('function') where diagbot reads none would go unread (a call in it unseen): " + openai_chat._HINT)),
        ({"id": "a", "type": "mcp_call", "function": {"name": "order_lookup", "arguments": "{}"}},
         ("$[0].tool_calls[0].type", "'mcp_call' is not a chat tool call's type (function or custom), so the call "
          "would go unread; record it as a function call")),
    ],
    ids=["custom-and-function", "call-beside", "call-inside-function", "other-type"],
)  # fmt: skip
def test_a_call_entry_never_hides_a_second_call(entry: dict[str, Any], refused: tuple[str, str]) -> None:
    """A `type: custom` entry that also held a `function` was read as the function (the custom call, a refund,
    unseen), and a call under a key beside the entry's, or inside its function, was never looked at."""
    messages = [{"role": "assistant", "content": None, "tool_calls": [entry]}]
    assert _read(messages) == ("refused", *refused)


def test_a_call_entry_with_an_index_or_harmless_extras_is_read() -> None:
    """A streamed export's `index`, and data beside the call that holds no call, take nothing away."""
    entry = {"id": "a", "index": 0, "type": "function", "function": {"name": "lookup", "arguments": "{}"},
             "meta": {"latency_ms": 5}}  # fmt: skip
    read = _read([{"role": "assistant", "content": None, "tool_calls": [entry]}])
    assert [(s[0], s[1]) for s in read] == [("message", "assistant"), ("call", "lookup")]
    typeless = {"index": 0, "id": "a", "type": None, "function": {"name": "lookup", "arguments": "{}"}}  # null
    read = _read([{"role": "assistant", "content": None, "tool_calls": [typeless]}])
    assert [(s[0], s[1]) for s in read] == [("message", "assistant"), ("call", "lookup")]


def test_annotations_and_audio_hold_no_call_or_text_of_their_own() -> None:
    """They were never looked at: a call or a reply written there went unseen. A citation and a transcript read."""
    cited = {"type": "url_citation", "url_citation": {"url": "https://example.com", "title": "Policy"}}
    read = _read([{"role": "assistant", "content": "See the policy.", "annotations": [cited],
                   "audio": {"id": "a1", "transcript": "See the policy."}}])  # fmt: skip
    assert read == [("message", "assistant", "See the policy.")]
    hidden_call = {"type": "function_call", "name": "refund_submit", "arguments": "{}"}
    refused = _read([{"role": "assistant", "content": "ok", "annotations": [hidden_call]}])
    assert refused[:2] == ("refused", "$[0].annotations[0].type")
    hidden_text = {"type": "output_text", "text": "Your card is 4111"}
    refused = _read([{"role": "assistant", "content": "ok", "annotations": [hidden_text]}])
    assert refused[:2] == ("refused", "$[0].annotations")


@pytest.mark.parametrize("key", ["output_text", "answer", "response", "text", "final_output"])
def test_an_answer_saved_beside_the_messages_must_be_one_of_them(key: str) -> None:
    """`{messages, output_text: "Refund approved."}` (an agent SDK's final output saved beside the conversation):
    the text was read nowhere, so every check that the answer must not say something passed."""
    said = [{"role": "user", "content": "Refund ORDER_123?"}, {"role": "assistant", "content": "Let me check."}]
    with pytest.raises(TraceInvalid) as refused:
        openai_chat.read({"messages": said, key: "Refund approved."})
    assert (refused.value.path, "which diagbot does not read" in refused.value.message) == (f"$.{key}", True)
    run = openai_chat.read({"messages": said, key: "Let me check.", "model": "gpt-4o", "usage": {"total_tokens": 9}})
    assert [s.text for s in run.steps] == ["Refund ORDER_123?", "Let me check."]


CALLED = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "c1", "type": "function", "function": {"name": "check", "arguments": "{}"}}]}  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "failed"),
    [({"error": True}, True), ({"is_error": True}, True), ({"status": "error"}, True), ({"status": "Failed"}, True),
     ({"error": "eligibility service unavailable"}, True), ({"error": {"message": "unavailable"}}, True),
     ({"error": {}}, False), ({"error": False, "is_error": False}, False),
     ({"status": "success"}, False), ({"error": ""}, False)],
)  # fmt: skip
def test_a_tool_result_that_says_its_call_failed_fails_it(flags: dict[str, Any], failed: bool) -> None:
    """A result with `error: true` (or Anthropic's `is_error`, LangChain's `status: "error"`) was read as a success,
    so the failed eligibility check met a refund's precondition `{called: check}` (an audit found it)."""
    run = openai_chat.read([CALLED, {"role": "tool", "tool_call_id": "c1", "content": "unavailable", **flags}])
    assert [(c.tool, c.failed) for c in run.calls] == [("check", failed)]


@pytest.mark.parametrize(
    ("flags", "refused"),
    [({"error": 1}, ("$[1].error", "expected true, false or the error's text or object, found a number")),
     ({"is_error": "yes"}, ("$[1].is_error", "expected true or false, found a string")),
     ({"status": ["error"]}, ("$[1].status", "expected a text (success or error), found an array"))],
)  # fmt: skip
def test_a_tool_results_failure_flag_of_another_type_is_refused(flags: dict[str, Any], refused: Any) -> None:
    with pytest.raises(TraceInvalid) as info:
        openai_chat.read([CALLED, {"role": "tool", "tool_call_id": "c1", "content": "x", **flags}])
    assert (info.value.path, info.value.message) == refused


COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
}


@pytest.mark.parametrize("fmt", ["auto", "openai-chat"])
def test_a_chat_completion_response_saved_as_the_run_says_what_to_record_instead(fmt: str) -> None:
    """Saving the SDK's response (`choices`) in place of the conversation is the likeliest first mistake; it was
    refused as "not a run format diagbot knows" with no word of what to record."""
    with pytest.raises(TraceInvalid) as caught:
        parse_run(json.dumps(COMPLETION).encode(), fmt)
    assert caught.value.message.endswith(
        "(this is a chat completion response, the model's one answer, not a run: record the conversation, the "
        "request's messages with the response's choices[0].message appended, as a JSON array or "
        '{"messages": [...]})'
    )


@pytest.mark.parametrize("fmt", ["auto", "openai-chat"])
def test_chat_messages_one_a_line_say_that_json_lines_are_read_only_as_otlp(fmt: str) -> None:
    lines = b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "hello"}\n'
    with pytest.raises(TraceInvalid) as caught:
        parse_run(lines, fmt)
    assert caught.value.message == (
        "not valid JSON at line 2 column 1 (Extra data) (this looks like chat messages one a line, JSON Lines, "
        'which diagbot reads only as OTLP: write the messages as one JSON array, or {"messages": [...]})'
    )


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ({"role": "tool", "content": "ok"}, "tool_call_id: expected a string, found no value (the key is missing)"),
        ({"role": "tool", "tool_call_id": None, "content": "ok"}, "tool_call_id: expected a string, found null"),
        ({"content": "ok"}, "role: expected a string, found no value (the key is missing)"),
    ],
)
def test_a_required_key_left_out_is_told_from_one_that_is_null(result: dict[str, Any], said: str) -> None:
    """A newcomer left tool_call_id out of a tool message and was told the message held null there."""
    messages = [
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "forecast", "arguments": "{}"}}]},
        result,
    ]  # fmt: skip
    with pytest.raises(TraceInvalid) as refused:
        parse_run(json.dumps({"messages": messages}).encode(), "openai-chat")
    assert f"{refused.value.path}: {refused.value.message}" == f"$.messages[2].{said}"
