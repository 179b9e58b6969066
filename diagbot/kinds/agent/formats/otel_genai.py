"""OpenTelemetry GenAI spans (semantic conventions, "Development" status), as the OTLP adapter reads them.

`gen_ai.operation.name` says what a span is: `chat` / `text_completion` / `generate_content` (a model call, whose
`gen_ai.input.messages` and `gen_ai.output.messages` hold the conversation so far: `{role, parts}` with `text`,
`tool_call` and `tool_call_response` parts, as JSON text or structured values), `execute_tool` (one call:
`gen_ai.tool.name`, `gen_ai.tool.call.id`, `.arguments`, `.result`), `retrieval` (`gen_ai.retrieval.query.text`,
`gen_ai.retrieval.documents`) and `invoke_agent` (the run). Older instrumentations record the messages as
`gen_ai.prompt` / `gen_ai.completion` lists, in chat-completions shape or in parts (both are read), or as span
events: `gen_ai.content.prompt` / `gen_ai.content.completion` carrying those two attributes (conventions up to
1.27), or one event per message (`gen_ai.{system,user,assistant,tool}.message` and `gen_ai.choice`, 1.28 to 1.36)
whose attributes are the event body's fields: `content`, `tool_calls`, the tool message's `id`, the choice's
`message`. OpenLLMetry flattens those lists into indexed keys (`gen_ai.prompt.N.role`, `.content`,
`.tool_call_id`, `.tool_calls.K.{id, name, arguments}` or `.function_call.{name, arguments}`, the same under
`gen_ai.completion.N`); they are read as the same messages.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, TypeGuard

from diagbot.core import values
from diagbot.core.values import one_line
from diagbot.kinds.agent.formats.common import (
    DECODE_ERRORS,
    FAILED_STATUSES,
    MISSING,
    calls_off_the_agent,
    content_text,
    holds_no_message,
    is_call_part,
    items,
    json_problem,
    no_text_elsewhere,
    obj,
    optional_number,
    optional_text,
    says_failed,
    speaker,
    text,
    unspoken,
    with_refusal,
)
from diagbot.kinds.agent.formats.otel_spans import (
    AGENT,
    INFERENCE,
    RETRIEVAL,
    TOOL,
    Said,
    Span,
    ToolSpan,
    document_id,
    flat_entries,
    flat_leaf,
    flat_node,
    flat_text,
    flat_tree,
    flat_value,
)
from diagbot.kinds.agent.run import Document, Retrieval, ToolCall, TraceInvalid

_ROLES = {
    "chat": INFERENCE,
    "text_completion": INFERENCE,
    "generate_content": INFERENCE,
    "execute_tool": TOOL,
    "retrieval": RETRIEVAL,
    "invoke_agent": AGENT,
    "invoke_workflow": AGENT,  # a workflow of agents: its messages, when recorded, are the run's as an agent's are
}
_INPUT, _OUTPUT = ("gen_ai.input.messages", "gen_ai.prompt"), ("gen_ai.output.messages", "gen_ai.completion")
_RESULT_KEYS = ("response", "result")  # the JSON schema says `response`; the spec's own example, `result`


_CONTENT_EVENTS = {"gen_ai.content.prompt": _INPUT, "gen_ai.content.completion": _OUTPUT}
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
_CHOICE = "gen_ai.choice"
_DETAILS = "gen_ai.client.inference.operation.details"  # the newest conventions' content, as an event of the span
_INSTRUCTIONS = "gen_ai.system_instructions"
_OLDER_EVENTS = frozenset((*_CONTENT_EVENTS, *_MESSAGE_EVENTS, _CHOICE))  # the older conventions' message events
READ_EVENTS = _OLDER_EVENTS | {_DETAILS}  # the events of a span diagbot reads
MESSAGE_KEYS = frozenset((*_INPUT, *_OUTPUT, _INSTRUCTIONS))  # what holds messages, on a span or an event


_FLAT_INPUT, _FLAT_OUTPUT = "gen_ai.prompt.", "gen_ai.completion."  # OpenLLMetry's indexed keys


def _flat(span: Span) -> bool:
    return any(key.startswith((_FLAT_INPUT, _FLAT_OUTPUT)) for key in span.attributes)


def role(span: Span) -> str | None:
    operation = span.text("gen_ai.operation.name")
    if operation is not None:
        found = _ROLES.get(operation)
        if found is None and _unread_call(span, operation):  # `embeddings`, `create_agent` too: they hold no call
            raise TraceInvalid(  # skipped, its calls would go unseen
                span.where("gen_ai.operation.name"),
                f"{operation[:60]!r} is not an operation diagbot reads ({', '.join(_ROLES)}), but the span records "
                "a model call's messages or a tool call; record it under the operation it is",
            )
        return found
    if span.has("gen_ai.tool.name"):  # a tool span without its operation name: dropped, its call went unseen
        return TOOL
    # older conventions, before the operation name, and a model call that left its name out: its messages read
    return INFERENCE if records_messages(span) else None


def _unread_call(span: Span, operation: str) -> bool:
    """A span of an operation diagbot does not read that holds a call: a tool's, a model call under a name that
    is one misspelt (`chat.completions`, `Chat`), or output messages that call tools (newer operations, `plan`)."""
    if span.has("gen_ai.tool.name"):
        return True
    if not records_messages(span):
        return False
    looks = operation.casefold()
    return any(word in looks for word in ("chat", "complet", "generat")) or bool(output_calls(span))


def _message_events(span: Span) -> bool:
    return any(e.name in READ_EVENTS for e in span.events)


def records_messages(span: Span) -> bool:
    """Whether the span may record messages (a cheap test of its keys; `conversation` tells whether it does)."""
    return any(span.has(key) for key in (*_INPUT, *_OUTPUT)) or _message_events(span) or _flat(span)


def conversation(span: Span) -> tuple[list[Said], list[Said]] | None:
    """The span's input messages (after its system instructions) and its output messages; None when it records
    no message (empty lists; system instructions alone are no conversation). Each side comes from the first
    place that records it (`_agreed`): attributes, OpenLLMetry's indexed keys, events (an input in attributes and
    the choice in an event are one conversation)."""
    places = _places(span, ("input", "output"))  # the events read once for both sides
    said_in, said_out = _agreed(span, "input", places["input"]), _agreed(span, "output", places["output"])
    if not (said_in or said_out):
        return None
    said: list[Said] = []
    instructions = span.json("gen_ai.system_instructions")
    if instructions is not None:
        where = span.where("gen_ai.system_instructions")
        said.append(_message({"role": "system", "parts": instructions}, where))
    return said + said_in, said_out


def output_messages(span: Span) -> list[Said]:
    """The span's output messages alone, as `conversation` reads them (the input, which repeats the history, is
    not read)."""
    return _agreed(span, "output", _places(span, ("output",))["output"])


def _agreed(span: Span, side: str, found: list[tuple[str, list[Said]]]) -> list[Said]:
    """One side's messages (input or output) from the first place that records them; a span that records them in
    more places (a deprecated one beside the current one, as some instrumentations do) is refused when another
    place holds a call or a text the first lacks: read from one place only, it would go unseen. The system
    instructions, which the current convention keeps apart, count as the first place's input. `found`: each
    place's messages of that side (`_places`)."""
    chosen_at, chosen = next(((at, said) for at, said in found if said), ("", []))
    if len(found) < 2:
        return chosen
    beside = chosen
    if side == "input" and span.has(_INSTRUCTIONS):
        beside = [_message({"role": "system", "parts": span.json(_INSTRUCTIONS)}, span.path), *chosen]
    for at, said in found:
        extra = _held_beside(said, beside) if said and said is not chosen else None
        if extra is not None:
            raise TraceInvalid(
                span.path,
                f"records its {side} messages in {chosen_at} and in {at}, and {extra} is in the second only, so "
                "which is the run is not known: record the messages in one place",
            )
    return chosen


def _places(span: Span, sides: tuple[str, ...]) -> dict[str, list[tuple[str, list[Said]]]]:
    """For each side asked for (input, output), each place the span records its messages, in the order `_agreed`
    reads them; the events, which hold both sides, are read once."""
    found: dict[str, list[tuple[str, list[Said]]]] = {}
    for side in sides:
        keys, prefix = (_INPUT, _FLAT_INPUT) if side == "input" else (_OUTPUT, _FLAT_OUTPUT)
        found[side] = [(key, _messages(span, (key,))) for key in keys if span.has(key)]
        if _flat(span):
            found[side].append((f"{prefix}N", _flat_messages(span, prefix)))
    if any(e.name in _OLDER_EVENTS for e in span.events):
        said_in, said_out = _event_messages(span)
        for side in sides:
            found[side].append(("its events", said_in if side == "input" else said_out))
    details = [event for event in span.events if event.name == _DETAILS]
    if len(details) > 1:  # which of them is the call's is not known
        raise TraceInvalid(
            details[1].path, f"a second {_DETAILS} event: a model call records its messages once; keep one"
        )
    if details:
        said_in, said_out = _details_messages(details[0])
        for side in sides:
            found[side].append((f"its {_DETAILS} event", said_in if side == "input" else said_out))
    return found


MAX_COMPARED_CHARS = 64 * 1024 * 1024
"""Characters searched when the messages one place records are looked for in another's, beyond those found whole
or at the same place in the list: past it, the two are not known to agree."""


def _held_beside(said: list[Said], chosen: list[Said]) -> str | None:
    """A call or a text of `said` that `chosen` does not hold, as a message names it; else None. Calls are held
    one to one, by tool and arguments (decoded, so their spacing and key order aside): a second call, or one with
    other arguments, in one place alone is a call that would go unseen. A text is found whole among `chosen`'s, or
    within the message at its place, else within all of them (that last search bounded by MAX_COMPARED_CHARS);
    spacing aside, and a text that is the JSON of its parts (OpenLLMetry's indexed keys write list content so) read
    as their text."""
    calls = Counter(_compared(call) for message in chosen for call in message.calls)
    tools = {tool for tool, _ in calls}
    for message in said:
        for call in message.calls:
            key = _compared(call)
            if not calls[key]:
                other = " (with other arguments, or once more)" if call.tool in tools else ""
                return f"a call of {one_line(call.tool, 60)!r}{other}"
            calls[key] -= 1
    held = [_squashed(message.text) for message in chosen]
    whole, written, searched = set(held), None, 0
    for place, message in enumerate(said):
        text_of = _squashed(_spoken(message.text))
        if not text_of or text_of in whole or (place < len(held) and text_of in held[place]):
            continue
        written = " ".join(held) if written is None else written
        searched += len(written)
        if searched > MAX_COMPARED_CHARS:
            return f"more text than diagbot compares ({MAX_COMPARED_CHARS:,} characters searched)"
        if text_of not in written:
            return f"the text {one_line(text_of, 60)!r}"
    return None


def _compared(call: ToolCall) -> tuple[str, str]:
    """A call as two places' copies of it are compared: its tool and its arguments' canonical JSON (as recorded when
    they do not decode)."""
    if call.args_problem is None:
        try:
            return call.tool, json.dumps(call.args, sort_keys=True, ensure_ascii=False, default=str)
        except (RecursionError, ValueError):  # nested too deeply to write out: compared as recorded
            pass
    raw = call.raw_args
    return call.tool, f"raw:{raw}" if isinstance(raw, str) else f"unread:{id(call)}"  # the latter agrees with none


def _squashed(text_of: str) -> str:
    return " ".join(text_of.split())


_SPOKEN_CHARS = 1024 * 1024
"""Characters of a message's text decoded as the JSON of its parts, for the comparison alone (a longer one is
compared as it is written): the run's own bound on decoded values counts what a reader keeps, not this."""


def _spoken(text_of: str) -> str:
    """A message's text, or, when it is the JSON text of a list of parts, the text those parts hold."""
    if not text_of.lstrip().startswith("[") or len(text_of) > _SPOKEN_CHARS:
        return text_of
    try:
        parts = values.loads(text_of)
    except (ValueError, RecursionError):
        return text_of
    if not isinstance(parts, list) or not all(isinstance(part, dict) for part in parts):
        return text_of
    return " ".join(v for part in parts for k in ("text", "content") if isinstance(v := part.get(k), str))


def input_texts(span: Span) -> list[str]:
    """The text of the span's input messages as recorded (JSON text, indexed keys, message events), undecoded:
    enough to tell whether a message's text is there."""
    found = [v for key in _INPUT if isinstance(v := _raw_text(span, key), str)]
    found += [
        v for key in span.attributes if key.startswith(_FLAT_INPUT) and isinstance(v := _raw_text(span, key), str)
    ]
    for event in span.events:
        if event.name in _MESSAGE_EVENTS or event.name in _CONTENT_EVENTS or event.name == _DETAILS:
            found += [v for key in event.attributes if isinstance(v := _raw_text(event, key), str)]
    return found


def _raw_text(span: Span, key: str) -> str | None:
    raw = span.attributes.get(key)
    return raw.get("stringValue") if isinstance(raw, dict) else None


def output_calls(span: Span) -> list[ToolCall]:
    return [call for message in output_messages(span) for call in message.calls]


def _messages(span: Span, keys: tuple[str, ...]) -> list[Said]:
    key = next((k for k in keys if span.has(k)), None)
    if key is None:
        return []
    value, where = span.json(key), span.where(key)
    return [_message(obj(m, f"{where}[{i}]"), f"{where}[{i}]") for i, m in enumerate(items(value, where))]


def _flat_messages(span: Span, prefix: str) -> list[Said]:
    """OpenLLMetry's messages, `gen_ai.prompt.N.*` or `gen_ai.completion.N.*`, in index order, read as the
    chat-completions shaped messages they flatten."""
    said = []
    for key, entry in flat_entries(span, prefix, flat_tree(span, prefix)):
        role = flat_text(span, entry, "role", key)
        message: dict[str, Any] = {"role": role if role is not None or prefix == _FLAT_INPUT else "assistant"}
        for name in ("content", "refusal", "tool_call_id"):
            if name in entry:
                message[name] = flat_leaf(span, entry, name, key)
        for name, node in entry.items():  # held to what a message list's message is (`_chat_message`): a text
            if name not in _FLAT_READ:  # or a call under a key not read (`text`, `additional_kwargs`) is refused
                message[name] = flat_value(span, node)
        blocks = _content_blocks(span, message.get("content"), span.where(f"{key}.content"))
        if blocks is not None:
            message["content"] = content_text(blocks, span.where(f"{key}.content"), apart=_TOOL_BLOCKS)
        calls = flat_entries(span, f"{key}.tool_calls.", entry.get("tool_calls", {}))
        if "function_call" in entry:  # the older single call
            calls.append((f"{key}.function_call", flat_node(entry["function_call"], span, f"{key}.function_call")))
        message["tool_calls"] = [
            {"id": flat_leaf(span, call, "id", where), "function": {name: flat_leaf(span, call, name, where)
                                                                    for name in ("name", "arguments")}}
            for where, call in calls
        ]  # fmt: skip
        said.append(_message(message, span.where(key)))
        if blocks is not None:
            _read_tool_blocks(blocks, said[-1], span.where(f"{key}.content"))
    return said


_FLAT_READ = frozenset(("role", "content", "refusal", "tool_call_id", "tool_calls", "function_call"))
_BLOCK_LIST = re.compile(r"\s*\[\s*\{")  # JSON text of a list of objects: content blocks, as OpenLLMetry writes them
_TOOL_BLOCKS = ("tool_use", "tool_result")  # Anthropic's content blocks of a call and of its result
_BLOCK_TYPES = frozenset((*_TOOL_BLOCKS, "text", "image", "document", "thinking", "redacted_thinking"))


def _content_blocks(span: Span, value: Any, where: str) -> list[Any] | None:
    """The content blocks a flattened message's content holds as JSON text, or None when it is text. OpenLLMetry's
    Anthropic instrumentation writes content that is not all text as the JSON of its blocks (`[{type: tool_result,
    tool_use_id, content, is_error}]`): read as text, a tool's result was the user's words, its "yes" a
    confirmation, and its `is_error` never failed its call."""
    if not isinstance(value, str) or not _BLOCK_LIST.match(value):
        return None
    span.quota.charge(value, where)  # JSON text decoded counts toward the run's values
    try:
        decoded = values.loads(value)
    except values.BadNumber as exc:  # blocks holding a number past a double: read as text, a tool's result would be
        try:  # the user's words; read with infinity, an amount would equal any other such one: the file is refused
            shape = values.loads(value, infinite=True)
        except DECODE_ERRORS:
            return None
        if _tool_blocks(shape):
            raise json_problem(exc, where, "nested too deeply to read") from None
        return None
    except DECODE_ERRORS:  # text that opens as such JSON does, and is none
        return None
    if not _tool_blocks(decoded):
        return None  # text that is JSON of something else (a reply listing cards, a search result): read as text
    try:
        values.refuse_repeats(value, decoded)  # a repeated key would hide one of its values
    except DECODE_ERRORS as exc:
        raise json_problem(exc, where, "nested too deeply to read") from None
    return values.replace_surrogates(decoded) if values.escapes_surrogates(value) else decoded


def _tool_blocks(decoded: Any) -> TypeGuard[list[Any]]:
    """Whether decoded JSON is a list of content blocks, one of them a tool's (`tool_use`, `tool_result`)."""
    return (
        isinstance(decoded, list)
        and all(isinstance(block, dict) and block.get("type") in _BLOCK_TYPES for block in decoded)
        and any(block["type"] in _TOOL_BLOCKS for block in decoded)
    )


def _read_tool_blocks(blocks: list[Any], said: Said, where: str) -> None:
    """A flattened message's `tool_use` blocks, as calls (unless its tool_calls keys record the same call, as
    OpenLLMetry writes them there too), and its `tool_result` blocks, as results of the calls they name
    (`is_error: true`: the call failed). A user message of results alone says nothing of the user's: it is read
    as a tool's message."""
    for i, block in enumerate(blocks):
        at = f"{where}[{i}]"
        if block.get("type") == "tool_use":
            if said.role != "assistant":
                raise calls_off_the_agent(f"{at}.type", said.role)
            name, call_id = text(block.get("name", MISSING), f"{at}.name"), optional_text(block.get("id"), f"{at}.id")
            if not any(call.id == call_id and call.tool == name for call in said.calls):
                said.calls.append(ToolCall(name, call_id, block.get("input")))
        elif block.get("type") == "tool_result":
            answered = optional_text(block.get("tool_use_id"), f"{at}.tool_use_id")
            said.answers.append((answered, True, block.get("content"), at, block.get("is_error") is True))
    if said.role == "user" and said.answers and not said.text.strip():
        said.role = "tool"


def _details_messages(event: Span) -> tuple[list[Said], list[Said]]:
    """The messages of the newest conventions' details event: the span's attributes' content, as one event."""
    said_in = []
    if event.has(_INSTRUCTIONS):
        said_in.append(_message({"role": "system", "parts": event.json(_INSTRUCTIONS)}, event.where(_INSTRUCTIONS)))
    said_in += _messages(event, ("gen_ai.input.messages",))
    return said_in, _messages(event, ("gen_ai.output.messages",))


def _event_messages(span: Span) -> tuple[list[Said], list[Said]]:
    """The messages a span records as events, in time order: before the choices, the input; the choices, output."""
    said_in: list[Said] = []
    said_out: list[Said] = []
    for event in span.events:
        if event.name in _CONTENT_EVENTS:
            keys = _CONTENT_EVENTS[event.name]
            (said_in if keys is _INPUT else said_out).extend(_messages(event, keys))
        elif event.name in _MESSAGE_EVENTS or event.name == _CHOICE:
            message: dict[str, Any] = {"role": _MESSAGE_EVENTS.get(event.name, "assistant")}
            if event.name == _CHOICE:
                message |= obj(event.json("message") or {}, event.where("message"))
            if event.has("content"):
                message["content"] = event.get("content")
            if event.has("tool_calls"):
                message["tool_calls"] = event.json("tool_calls")
            if event.has("id"):
                message["tool_call_id"] = event.get("id")
            (said_out if event.name == _CHOICE else said_in).append(_message(message, event.path))
    return said_in, said_out


_READ_PARTS = ("text", "tool_call", "tool_call_response", "server_tool_call")


def _hides_text_or_call(kind: str, part: dict[str, Any]) -> bool:
    """A part of a type diagbot does not read that reads as text or a call: a read type in another case or spelling
    (`Text`, `tool-call`), or a call as content parts record them (`common.is_call_part`: `function_call`,
    `tool_use`, a key naming a call). Others (`reasoning`, pydantic-ai's `thinking` and `binary`, media, and a
    server tool's result, which its `server_tool_call` part already counts) are skipped."""
    looks = kind.casefold().replace("-", "_")
    if looks == "server_tool_call_response":
        return False
    if looks in _READ_PARTS or "call" in looks or "arguments" in part or is_call_part(kind, part):
        return True
    said = "text" in part or isinstance(part.get("content"), str)  # `output_text`, `refusal`, `message`: text unread
    return said and not unspoken(kind)


_EMPTY: tuple[Any, ...] = (None, "", [])  # what a message may hold beside its parts (a serializer writing every field)


def _message(message: dict[str, Any], path: str) -> Said:
    if message.get("role") in ("function", "tool"):
        _no_calls(message, path)
    if message.get("role") == "function":  # the older API's result of a function_call: it carries no call id
        content = content_text(message.get("content"), f"{path}.content")
        return Said("tool", "", answers=[(None, True, content, f"{path}.role", False)])
    said = Said(speaker(message.get("role"), f"{path}.role", result_role="tool"), "")
    if "parts" not in message:
        return _chat_message(message, said, path)
    beside = next((key for key in ("tool_calls", "content", "function_call") if message.get(key) not in _EMPTY), None)
    if beside is not None:  # the parts are read, so what is beside them would go unread
        raise TraceInvalid(
            f"{path}.{beside}", f"a message with parts holds {beside} too: record it as parts (tool_call, text)"
        )
    texts = []
    for j, raw in enumerate(items(message["parts"], f"{path}.parts")):
        where = f"{path}.parts[{j}]"
        part = obj(raw, where)
        kind = text(part.get("type", MISSING), f"{where}.type")
        if kind in _PART_FIELDS and not part.keys() <= _PART_FIELDS[kind]:
            _nothing_beside(part, _PART_FIELDS[kind], kind == "text" and part.get("content"), where)
        if kind == "text":
            texts.append(text(part.get("content", MISSING), f"{where}.content"))
        elif kind == "tool_call":
            call_id = optional_text(part.get("id"), f"{where}.id")
            said.calls.append(
                ToolCall(text(part.get("name", MISSING), f"{where}.name"), call_id, part.get("arguments"))
            )
        elif kind == "tool_call_response":
            key = next((k for k in _RESULT_KEYS if k in part), None)
            answered = optional_text(part.get("id"), f"{where}.id")
            said.answers.append((answered, key is not None, part[key] if key else None, where, False))
        elif kind == "server_tool_call":  # a provider-run tool (web search...): a call, as Responses' hosted ones are
            call_id = optional_text(part.get("id"), f"{where}.id")
            args = {key: value for key, value in part.items() if key not in ("type", "id", "name", "server_tool_call")}
            if isinstance(part.get("server_tool_call"), dict):  # the convention's own payload: its fields at the top
                args.update(part["server_tool_call"])
            said.calls.append(ToolCall(text(part.get("name", MISSING), f"{where}.name"), call_id, args))
        elif _hides_text_or_call(kind, part):
            raise TraceInvalid(  # `Text`, `function_call`: skipped, what it says or calls would go unseen
                f"{where}.type",
                f"{kind[:40]!r} is not a part type diagbot reads (text, tool_call, tool_call_response, "
                "server_tool_call), but it reads as text or a call: record the text as a text part and a call as a "
                "tool_call part",
            )
        # other parts (reasoning, thinking, blob, binary, uri, file, server tool results) say nothing a check reads
    said.text = "\n".join(texts)
    if not message.keys() <= _PARTS_MESSAGE_FIELDS:
        _nothing_beside(message, _PARTS_MESSAGE_FIELDS, said.text, path)
    return said


_PARTS_MESSAGE_FIELDS = frozenset(("role", "parts", "name", "finish_reason", "tool_calls", "content", "function_call"))
_PART_FIELDS = {
    "text": frozenset(("type", "content")),
    "tool_call": frozenset(("type", "id", "name", "arguments")),
    "tool_call_response": frozenset(("type", "id", *_RESULT_KEYS)),
}
"""What the convention's messages and the parts diagbot reads hold (`tool_calls`, `content` and `function_call` only
empty, `_message` has seen to that); anything else is looked through for a call or a text."""


def _nothing_beside(node: dict[str, Any], read: frozenset[str], said: Any, path: str) -> None:
    """A message or a part with keys the convention does not have (`pending: [{name: refund_submit}]`, `text` beside
    a text part's `content`) is refused when they hold a call, a message or a text that `said` (its own text) does
    not: read from its parts alone, they would go unseen."""
    holds_no_message([(k, v) for k, v in node.items() if k not in read], path, _PARTS_HINT)
    no_text_elsewhere(node, said if isinstance(said, str) else "", read, path)


_PARTS_HINT = "record the message's texts as text parts and its calls as tool_call parts"


def _no_calls(message: dict[str, Any], path: str) -> None:
    """Only the assistant calls tools: calls on a tool's or function's message would go unread."""
    held = next((key for key in ("tool_calls", "function_call") if message.get(key) not in _EMPTY), None)
    if held is not None:
        raise calls_off_the_agent(f"{path}.{held}", message.get("role"))


_CHAT_FIELDS = frozenset((
    "role", "content", "name", "tool_calls", "tool_call_id", "function_call", "refusal", "audio", "annotations", "id",
    "type",
))  # fmt: skip  # what a chat-shaped message may hold; anything else is looked through for a call or text
_CHAT_HINT = "record the message's text as its content and its calls as its tool_calls"


def _chat_message(message: dict[str, Any], said: Said, path: str) -> Said:
    """A message of an older instrumentation, shaped as in the Chat Completions API."""
    content = content_text(message.get("content"), f"{path}.content")
    if not message.keys() <= _CHAT_FIELDS:  # LangChain's additional_kwargs may hold the calls, `text` the reply
        holds_no_message([(k, v) for k, v in message.items() if k not in _CHAT_FIELDS], path, _CHAT_HINT)
        no_text_elsewhere(message, content, _CHAT_FIELDS, path)
    if said.role == "tool":
        answered = optional_text(message.get("tool_call_id"), f"{path}.tool_call_id")
        failed = not message.keys() <= _CHAT_FIELDS and says_failed(message, path)  # `status: "error"`, as chat's
        said.answers.append((answered, True, content, f"{path}.tool_call_id", failed))
        return said
    said.text = with_refusal(content, message.get("refusal"), f"{path}.refusal")
    for k, raw in enumerate(items(message.get("tool_calls") or [], f"{path}.tool_calls")):
        where = f"{path}.tool_calls[{k}]"
        call = obj(raw, where)
        function = obj(call.get("function", MISSING), f"{where}.function")
        name = text(function.get("name", MISSING), f"{where}.function.name")
        said.calls.append(ToolCall(name, optional_text(call.get("id"), f"{where}.id"), function.get("arguments")))
    legacy = message.get("function_call")  # the API's call before tool_calls: one call, without an id
    if legacy is not None:
        function = obj(legacy, f"{path}.function_call")
        name = text(function.get("name", MISSING), f"{path}.function_call.name")
        said.calls.append(ToolCall(name, None, function.get("arguments")))
    return said


def tool(span: Span) -> ToolSpan:
    return ToolSpan(
        tool=span.required_text("gen_ai.tool.name", "a tool span"),
        id=span.text("gen_ai.tool.call.id"),
        raw_args=span.get("gen_ai.tool.call.arguments"),
        result=span.get("gen_ai.tool.call.result"),
        has_result=span.has("gen_ai.tool.call.result"),
        failed=span.error or span.has("error.type") or _failed_status(span),
    )


def _failed_status(span: Span) -> bool:
    """`gen_ai.tool.status: "error"` (Strands writes it on a tool span whose own status is OK): read as a success,
    a failed call would meet a precondition."""
    status = span.text("gen_ai.tool.status")
    return status is not None and status.strip().casefold() in FAILED_STATUSES


def retrieval(span: Span) -> Retrieval:
    found = Retrieval(span.text("gen_ai.retrieval.query.text"))
    value = span.json("gen_ai.retrieval.documents")
    where = span.where("gen_ai.retrieval.documents")
    for i, raw in enumerate(items(value if value is not None else [], where)):
        doc = obj(raw, f"{where}[{i}]")
        found.documents.append(
            Document(
                id=document_id(doc.get("id"), f"{where}[{i}].id"),
                score=optional_number(doc.get("score"), f"{where}[{i}].score"),
                content=optional_text(doc.get("content"), f"{where}[{i}].content"),
            )
        )
    return found
