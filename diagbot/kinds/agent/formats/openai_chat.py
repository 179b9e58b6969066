"""OpenAI Chat Completions messages: a JSON array of messages, or `{messages, final_state?, duration_ms?}`.

Assistant messages carry `tool_calls[].function.{name, arguments}` with the arguments as a JSON string the model
wrote (possibly not JSON); `tool` messages carry the result and the `tool_call_id` it answers. Real exports reuse
call ids, so a result goes to the nearest earlier call with that id that has no result yet. Older logs use
`function_call` on the assistant message and a `function` message (named, not id'd) for the result. A message
the model refused to answer carries `refusal` (text) beside a null `content`: that text is what it said.

The loop checks types inline and builds a JSON path only for the message that is wrong: a suite reads hundreds of
thousands of messages.
"""

from __future__ import annotations

import json
from typing import Any

from diagbot.core import values
from diagbot.core.values import type_name
from diagbot.kinds.agent.formats.common import (
    MISSING,
    SPEAKERS,
    calls_off_the_agent,
    content_text,
    duration,
    found,
    holds_no_message,
    items,
    no_text_elsewhere,
    obj,
    optional_text,
    says_failed,
    state,
    text,
    unknown_role,
    with_refusal,
)
from diagbot.kinds.agent.run import MAX_STEPS, Message, Run, ToolCall, TraceInvalid

NAME = "openai-chat"


def detect(data: Any) -> bool:
    if isinstance(data, dict):
        return isinstance(data.get("messages"), list)
    return isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data[:5])


def resembles(data: Any) -> bool:
    """Looser than `detect`: the file was meant to be chat messages (it has `messages`, or a message among its
    first items), so this adapter's error says what is wrong with it."""
    if isinstance(data, dict):
        return "messages" in data
    return isinstance(data, list) and any(isinstance(m, dict) and "role" in m for m in data[:20])


_KEYS = ("messages", "final_state", "duration_ms")
_HINT = (
    f"put every message in messages and every call in a message's tool_calls ({', '.join(_KEYS)} are a chat run's keys)"
)
_DEFINITIONS = ("tools", "functions", "tool_choice", "parallel_tool_calls")  # the request's tools, not calls
_MESSAGE_FIELDS = frozenset((
    "role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio", "annotations",
    "type", "id",
))  # fmt: skip  # what a chat message may hold; anything else is looked through for a call


def read(data: Any) -> Run:
    other = None
    if isinstance(data, dict):
        other = [(key, value) for key, value in data.items() if key not in _KEYS and key not in _DEFINITIONS]
        if other:
            holds_no_message(other, "$", _HINT)
        run = Run(
            final_state=state(data.get("final_state"), "$.final_state"),
            duration_ms=duration(data.get("duration_ms"), "$.duration_ms"),
        )
        messages, prefix = items(data.get("messages", MISSING), "$.messages"), "$.messages"
    else:
        run, messages, prefix = Run(), items(data, "$"), "$"
    steps = run.steps  # at most MAX_STEPS messages (`items`); the calls they add are counted where they are added
    append = steps.append
    waiting: dict[str, list[ToolCall]] = {}  # call id (or, for `function` results, name) -> calls without result
    for index, message in enumerate(messages):
        if type(message) is not dict:
            raise TraceInvalid(f"{prefix}[{index}]", f"expected a message object, found {type_name(message)}")
        if message.keys() <= _PLAIN_FIELDS and _plain(message, index, waiting, steps):
            if len(steps) > MAX_STEPS and message["role"] == "assistant":  # counted where the full reading counts
                raise _too_many(prefix)
            continue
        if not message.keys() <= _MESSAGE_FIELDS:  # LangChain's additional_kwargs may hold the calls
            holds_no_message(
                [(k, v) for k, v in message.items() if k not in _MESSAGE_FIELDS], f"{prefix}[{index}]", _HINT
            )
            if (  # a tool result may echo its call's name and arguments: its call is in tool_calls already
                "arguments" in message
                and message.get("name") is not None
                and message.get("type") is None
                and message.get("role") not in ("tool", "function")
            ):
                raise TraceInvalid(
                    f"{prefix}[{index}].arguments",
                    "name and arguments on the message itself read as a call, which a chat message does not hold "
                    "there, so it would go unseen: record it in the assistant message's tool_calls ({id, type: "
                    "function, function: {name, arguments}})",
                )
        role = message.get("role")
        if type(role) is not str:
            raise TraceInvalid(
                f"{prefix}[{index}].role", f"expected a string, found {found(message.get('role', MISSING))}"
            )
        content = message.get("content")
        if type(content) is not str:
            content = content_text(content, f"{prefix}[{index}].content")
        refusal = message.get("refusal")  # tested here first: the helper's call would cost every message
        if refusal is not None:
            content = with_refusal(content, refusal, f"{prefix}[{index}].refusal")
        audio = message.get("audio")  # an audio reply: its transcript is what the model said, beside any text
        if audio is not None:
            said = text(
                obj(audio, f"{prefix}[{index}].audio").get("transcript", ""), f"{prefix}[{index}].audio.transcript"
            )
            if said.strip() and said.strip() not in content:
                content = f"{content}\n{said}" if content else said
        if not message.keys() <= _MESSAGE_FIELDS:
            no_text_elsewhere(message, content, _MESSAGE_FIELDS, f"{prefix}[{index}]")
        beside = [(key, message[key]) for key in _LOOKED_THROUGH if message.get(key) is not None]
        if beside:  # read for their citations and transcript, never for a call or a text of their own
            holds_no_message(beside, f"{prefix}[{index}]", _HINT)
            no_text_elsewhere(dict(beside), content, frozenset(), f"{prefix}[{index}]")
        kind = message.get("type")
        if kind is not None and kind != "message":
            _not_a_message(kind, f"{prefix}[{index}]")
        if role == "tool" or role == "function":
            _no_calls(message, role, prefix, index)
            key = "tool_call_id" if role == "tool" else "name"
            answered = message.get(key)
            pending = waiting.get(answered) if type(answered) is str else None
            if not pending:  # None: no earlier call with this id (or name); []: each has its result already
                where = f"{prefix}[{index}].{key}"
                text(message.get(key, MISSING), where)
                if pending is None:
                    raise TraceInvalid(where, f"a tool result for {answered!r}, which no earlier call made")
                keyed = "id" if role == "tool" else "name"
                raise TraceInvalid(
                    where,
                    f"a second tool result for {answered!r}: every earlier call with this {keyed} is already answered",
                )
            call = _answered(pending, message.get("name"), f"{prefix}[{index}]", str(answered))
            call.result, call.has_result, call.seen = content, True, index
            if not message.keys() <= _MESSAGE_FIELDS:
                call.failed = says_failed(message, f"{prefix}[{index}]")
            continue
        if role != "assistant" and role not in SPEAKERS:
            raise unknown_role(role, f"{prefix}[{index}].role", "tool or function")
        spoken = Message(role, content)
        append(spoken)
        if role != "assistant":
            _no_calls(message, role, prefix, index)
            continue
        calls = message.get("tool_calls")
        if calls is not None:
            if type(calls) is not list or len(calls) > MAX_STEPS:
                items(calls, f"{prefix}[{index}].tool_calls")  # raises, naming the path
            made = [_call(raw, prefix, index, k) for k, raw in enumerate(calls)]
            spoken.calls = len(made)  # its text is said with its calls
            for call in made:
                call.made = index
                append(call)
            for call in reversed(made):  # results take the last one waiting: one message's calls that share an
                if call.id is not None:  # id (as some servers write them) are answered in the order they were made
                    waiting.setdefault(call.id, []).append(call)
        legacy = message.get("function_call")
        if legacy is not None:
            where = f"{prefix}[{index}].function_call"
            function = obj(legacy, where)
            call = ToolCall(
                tool=text(function.get("name", MISSING), f"{where}.name"), raw_args=function.get("arguments", "")
            )
            call.made = index
            spoken.calls += 1
            append(call)
            waiting.setdefault(call.tool, []).append(call)
        if len(steps) > MAX_STEPS:
            raise _too_many(prefix)
    if isinstance(data, dict) and other:  # `{messages, output_text: ...}`: an answer saved beside the messages
        said = "\n".join(s.text for s in steps if isinstance(s, Message) and s.role == "assistant")
        no_text_elsewhere(dict(other), said, frozenset(), "$")
    return run


def _answered(pending: list[ToolCall], name: Any, where: str, answered: str) -> ToolCall:
    """The call a tool result answers: the nearest earlier one waiting with its id; among several waiting with the
    id (parallel calls of servers that reuse ids), the one of the tool the result names, when it names one: the
    results of parallel calls come back in the order they finish."""
    if len(pending) < 2 or name is None:
        return pending.pop()
    for at in range(len(pending) - 1, -1, -1):
        if pending[at].tool == name:
            return pending.pop(at)
    tools = ", ".join(sorted({call.tool for call in pending}))
    raise TraceInvalid(
        f"{where}.name",
        f"a tool result named {values.one_line(str(name), 80)!r} for {values.one_line(answered, 80)!r}, whose "
        f"waiting calls are of {values.one_line(tools, 200)}: which call it answers is unknown; record each result "
        "with its call's name and id",
    )


def _too_many(prefix: str) -> TraceInvalid:
    return TraceInvalid(
        prefix, f"holds more than {MAX_STEPS:,} messages and tool calls; diagbot reads at most {MAX_STEPS:,} per run"
    )


_LOOKED_THROUGH = ("annotations", "audio")  # a message's fields that are not its text or calls, but could hide them
_PLAIN_FIELDS = frozenset(("role", "content", "tool_calls", "tool_call_id", "name"))
"""What most messages hold: a message of these keys alone, written as most exports write them, is read by `_plain`."""


def _plain(message: dict[str, Any], index: int, waiting: dict[str, list[ToolCall]], steps: list[Any]) -> bool:
    """The usual message, read without the checks that only an unusual one needs: a user, system or assistant text,
    an assistant's well-formed calls, or a tool result answering a waiting call. False, having read nothing, for
    anything else: the full reading then says what is wrong with it, naming the path."""
    role, content = message.get("role"), message.get("content")
    if content is None:
        content = ""
    elif type(content) is not str:
        return False
    if role == "tool":
        answered = message.get("tool_call_id")
        pending = waiting.get(answered) if type(answered) is str else None
        if not pending or message.get("tool_calls") or (len(pending) > 1 and message.get("name") is not None):
            return False  # a name among calls sharing the id: `_answered` picks the call
        call = pending.pop()  # the nearest earlier call with this id
        call.result, call.has_result, call.seen = content, True, index
        return True
    if role == "assistant":
        calls = message.get("tool_calls")
        if calls is None:
            steps.append(Message(role, content))
            return True
        if type(calls) is not list or not calls or len(calls) > _PLAIN_CALLS:
            return False
        made = []
        for raw in calls:
            function = _plain_function(raw)
            if function is None:
                return False
            call_id, name = raw.get("id"), function.get("name")
            if type(name) is not str or (call_id is not None and type(call_id) is not str):
                return False
            made.append(ToolCall(name, call_id, function.get("arguments", ""), made=index))
        steps.append(Message(role, content, len(made)))
        steps += made
        for call in reversed(made):  # as `read` files them: one message's calls sharing an id answered in order
            if call.id is not None:
                waiting.setdefault(call.id, []).append(call)
        return True
    if (role == "user" or role == "system") and not message.get("tool_calls"):
        steps.append(Message(role, content))
        return True
    return False


_PLAIN_CALLS = 64  # calls of one message read by `_plain`; more go the full way, which counts them against MAX_STEPS


def _no_calls(message: dict[str, Any], role: str, prefix: str, index: int) -> None:
    """Only the assistant calls tools: calls on another role's message would go unread."""
    if message.get("tool_calls") or message.get("function_call") is not None:
        field = "tool_calls" if message.get("tool_calls") else "function_call"
        raise calls_off_the_agent(f"{prefix}[{index}].{field}", role)


def _not_a_message(kind: Any, where: str) -> None:
    """A chat message has no `type`; one naming a call (a Responses item's) would be read without its call."""
    if not isinstance(kind, str) or kind.endswith(("_call", "_call_output")) or kind.startswith("response."):
        raise TraceInvalid(
            f"{where}.type",
            f"{str(kind)[:40]!r} is not a chat message's type (chat messages have none); a "
            "Responses item among chat messages would be read without its call: record the run in one format",
        )


_CALL_FIELDS = frozenset(("id", "type", "function", "index"))  # a function call's entry (`index`: streamed)
_FUNCTION_FIELDS = frozenset(("name", "arguments"))
_CUSTOM_FIELDS = ("name", "input")


def _plain_function(raw: Any) -> dict[str, Any] | None:
    """The `function` of a call entry written as most exports write it (nothing beside what is read), else None."""
    if type(raw) is not dict or not raw.keys() <= _CALL_FIELDS or raw.get("type") not in (None, "function"):
        return None
    function = raw.get("function")
    return function if type(function) is dict and function.keys() <= _FUNCTION_FIELDS else None


def _call(raw: Any, prefix: str, index: int, k: int) -> ToolCall:
    function = _plain_function(raw)
    if function is not None:
        call_id, name = raw.get("id"), function.get("name")
        if (call_id is None or type(call_id) is str) and type(name) is str:
            return ToolCall(name, call_id, function.get("arguments", ""))  # absent: none, as "" is
    where = f"{prefix}[{index}].tool_calls[{k}]"  # the same reads, now naming the fault
    entry = obj(raw, where)
    kind = "function" if entry.get("type") is None else entry["type"]  # null, as exports writing every field do
    if kind not in ("function", "custom"):
        shown = values.one_line(kind if isinstance(kind, str) else json.dumps(kind, default=str), 40)
        raise TraceInvalid(
            f"{where}.type",
            f"{shown!r} is not a chat tool call's type (function or custom), so the call would go unread; record "
            "it as a function call",
        )
    if "function" in entry and "custom" in entry:
        raise TraceInvalid(
            where, "holds both a function and a custom call, so which one was made is unknown; record one call an entry"
        )
    other = [(key, value) for key, value in entry.items() if key not in _CALL_FIELDS and key != "custom"]
    if other:  # a call under a key diagbot does not read would go unseen
        holds_no_message(other, where, _HINT)
    if kind == "custom":  # a custom tool: free-form input, read as {input: TEXT}
        custom = obj(entry.get("custom", MISSING), f"{where}.custom")
        holds_no_message([(key, v) for key, v in custom.items() if key not in _CUSTOM_FIELDS], f"{where}.custom", _HINT)
        name = text(custom.get("name", MISSING), f"{where}.custom.name")
        given = {"input": text(custom.get("input", MISSING), f"{where}.custom.input")}
        return ToolCall(tool=name, id=optional_text(entry.get("id"), f"{where}.id"), raw_args=given)
    function = obj(entry.get("function", MISSING), f"{where}.function")
    holds_no_message(
        [(key, v) for key, v in function.items() if key not in _FUNCTION_FIELDS], f"{where}.function", _HINT
    )
    name = text(function.get("name", MISSING), f"{where}.function.name")
    return ToolCall(tool=name, id=optional_text(entry.get("id"), f"{where}.id"), raw_args=function.get("arguments", ""))
