"""OpenInference spans (Arize's conventions, `openinference.span.kind`), as the OTLP adapter reads them.

Lists are flattened into indexed keys. `LLM` spans hold the conversation so far in
`llm.input_messages.N.message.*` and `llm.output_messages.N.message.*` (`role`, `content` or
`contents.M.message_content.text`, `tool_calls.K.tool_call.{id, function.name, function.arguments}` or the
deprecated `function_call_name` / `function_call_arguments_json`, and on a tool result `tool_call_id`); `TOOL`
spans hold one call (`tool.name`, `tool.id`, the arguments as JSON in `input.value`, the result in
`output.value`; `tool.parameters` is the tool's definition, not the call's arguments); `RETRIEVER` spans hold
`retrieval.documents.N.document.{id, score, content}` and the query in `input.value`; `AGENT` is the run.
"""

from __future__ import annotations

from typing import Any

from diagbot.kinds.agent.formats.common import (
    TEXT_TYPES,
    calls_off_the_agent,
    holds_no_message,
    no_text_elsewhere,
    optional_number,
    speaker,
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

KIND = "openinference.span.kind"
_ROLES = {"LLM": INFERENCE, "TOOL": TOOL, "RETRIEVER": RETRIEVAL, "AGENT": AGENT}
_INPUT, _OUTPUT = "llm.input_messages.", "llm.output_messages."


def uses(span: Span) -> bool:
    return span.has(KIND)


def role(span: Span) -> str | None:
    """The span's role; a kind diagbot does not read (CHAIN, EMBEDDING, GUARDRAIL, ...) that records a tool call
    is refused, since skipping it would hide the call."""
    for key in (_INPUT[:-1], _OUTPUT[:-1]):
        if span.has(key):  # one value of the whole list: none of its messages or calls would be read
            raise TraceInvalid(
                span.where(key),
                "OpenInference writes a message list as indexed keys (llm.output_messages.0.message.role, ...); "
                "this span records it as one value, which diagbot does not read, so its messages and calls would go "
                "unseen: export with the OpenInference instrumentation's own attributes",
            )
    kind = span.text(KIND) or ""  # an empty kind is no kind diagbot reads
    found = _ROLES.get(kind.upper())
    if found is None and (span.has("tool.name") or (records_messages(span) and output_calls(span))):
        raise TraceInvalid(
            span.where(KIND),
            f"{kind[:40]!r} spans are not read ({', '.join(_ROLES)}), but this one records a tool call; record "
            "the call on a TOOL span (or the model's output on an LLM span)",
        )
    return found


def records_messages(span: Span) -> bool:
    """Whether the span may record messages (a cheap test of its keys; `conversation` tells whether it does)."""
    return any(key.startswith((_INPUT, _OUTPUT)) for key in span.attributes)


def conversation(span: Span) -> tuple[list[Said], list[Said]] | None:
    """The span's input messages and its output messages, in index order; None when it records no message."""
    said_in, said_out = _messages(span, _INPUT), _messages(span, _OUTPUT)
    return (said_in, said_out) if said_in or said_out else None


def output_messages(span: Span) -> list[Said]:
    """The span's output messages alone (the input, which repeats the history, is not read)."""
    return _messages(span, _OUTPUT)


def input_texts(span: Span) -> list[str]:
    """The text of the span's input messages as recorded, undecoded: enough to tell whether a message is there."""
    found = []
    for key, raw in span.attributes.items():
        if (key.startswith(_INPUT) or key == "input.value") and isinstance(raw, dict):
            value = raw.get("stringValue")
            if isinstance(value, str):
                found.append(value)
    return found


def output_calls(span: Span) -> list[ToolCall]:
    return [call for message in output_messages(span) for call in message.calls]


def tool(span: Span) -> ToolSpan:
    return ToolSpan(
        tool=span.required_text("tool.name", "a TOOL span"),
        id=span.text("tool.id") if span.has("tool.id") else span.text("tool_call.id"),
        raw_args=span.get("input.value"),
        result=span.get("output.value"),
        has_result=span.has("output.value"),
        failed=span.error,
    )


def retrieval(span: Span) -> Retrieval:
    found = Retrieval(span.text("input.value"))
    for key, entry in flat_entries(span, "retrieval.documents.", flat_tree(span, "retrieval.documents.")):
        doc = flat_node(entry.get("document", {}), span, f"{key}.document")
        found.documents.append(
            Document(
                id=document_id(flat_leaf(span, doc, "id", f"{key}.document"), span.where(f"{key}.document.id")),
                score=optional_number(
                    flat_leaf(span, doc, "score", f"{key}.document"), span.where(f"{key}.document.score")
                ),
                content=flat_text(span, doc, "content", f"{key}.document"),
            )
        )
    return found


def _messages(span: Span, prefix: str) -> list[Said]:
    said = []
    for key, entry in flat_entries(span, prefix, flat_tree(span, prefix)):
        message = flat_node(entry.get("message", {}), span, f"{key}.message")
        where = f"{key}.message"
        role = flat_text(span, message, "role", where)
        if role is None:
            raise TraceInvalid(span.where(f"{where}.role"), "a message without its role")
        legacy_result = role == "function"  # the result of a deprecated function call: it carries no call id
        role = "tool" if legacy_result else speaker(role, span.where(f"{where}.role"), result_role="tool")
        content = flat_text(span, message, "content", where)
        texts = [] if content is None else [content]  # and the list form's text parts, joined after it
        for k, entry in flat_entries(span, f"{where}.contents.", message.get("contents", {})):
            part = flat_node(entry.get("message_content", {}), span, f"{k}.message_content")
            kind = flat_text(span, part, "type", f"{k}.message_content") or "text"
            if kind in TEXT_TYPES:
                texts.append(flat_text(span, part, "text", f"{k}.message_content") or "")
                _nothing_unread(span, part, ("type", "text"), texts[-1], f"{k}.message_content", role)
            elif kind != "image" and "text" in part:  # `Text`: skipped, what it says would go unseen
                raise TraceInvalid(
                    span.where(f"{k}.message_content.type"),
                    f"{kind[:40]!r} is not a text part's type ({', '.join(TEXT_TYPES)}), but the part holds text",
                )
            elif kind != "image" and part.keys() - {"type"}:  # a `tool_use` part's name and input: a call unseen
                held = ", ".join(sorted(str(key)[:40] for key in part.keys() - {"type"})[:5])
                raise TraceInvalid(
                    span.where(f"{k}.message_content.type"),
                    f"{kind[:40]!r} is not a part type diagbot reads ({', '.join(TEXT_TYPES)}, image), but the part "
                    f"holds {held}: what it records (a call, say) would go unseen; record calls as the message's "
                    "tool_calls",
                )
        content = "\n".join(texts)
        _nothing_unread(span, message, _MESSAGE_READ, content, where, role)
        if role == "tool" and ("tool_calls" in message or "function_call_name" in message):
            key = f"{where}.tool_calls" if "tool_calls" in message else f"{where}.function_call_name"
            raise calls_off_the_agent(span.where(key), role)  # skipped with the result, they would go unseen
        if role == "tool":
            answered = None if legacy_result else flat_text(span, message, "tool_call_id", where)
            said.append(Said(role, "", answers=[(answered, True, content, span.where(f"{where}.tool_call_id"), False)]))
            continue
        calls = []
        for k, entry in flat_entries(span, f"{where}.tool_calls.", message.get("tool_calls", {})):
            call = flat_node(entry.get("tool_call", {}), span, f"{k}.tool_call")
            function = flat_node(call.get("function", {}), span, f"{k}.tool_call.function")
            name = flat_text(span, function, "name", f"{k}.tool_call.function")
            if name is None:
                raise TraceInvalid(span.where(f"{k}.tool_call.function.name"), "a tool call without its name")
            call_id = flat_text(span, call, "id", f"{k}.tool_call")
            calls.append(ToolCall(name, call_id, flat_leaf(span, function, "arguments", f"{k}.tool_call.function")))
        legacy = flat_text(span, message, "function_call_name", where)  # the deprecated form of one call
        if legacy is not None:
            calls.append(ToolCall(legacy, None, flat_leaf(span, message, "function_call_arguments_json", where)))
        said.append(Said(role, content, calls))
    return said


_MESSAGE_READ = (
    "role", "content", "contents", "tool_calls", "tool_call_id", "function_call_name", "function_call_arguments_json",
)  # fmt: skip
_HINT = "record the message's text as its content (or text parts of its contents) and its calls as its tool_calls"


def _nothing_unread(
    span: Span, node: dict[str, Any], read: tuple[str, ...], said: str, where: str, role: str | None = None
) -> None:
    """A message's (or a text part's) keys that are not read, held to what a message list's message is in the
    other conventions: a call under them (`additional_kwargs.tool_calls`) or a text its content does not say
    (`text`, a part's `value`) would go unseen, and is refused."""
    unread = [(name, flat_value(span, value)) for name, value in node.items() if name not in read]
    if unread:
        holds_no_message(unread, span.where(where), _HINT)
        no_text_elsewhere({"role": role, **dict(unread)}, said, frozenset(("role",)), span.where(where))
