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

from diagbot.kinds.agent.formats.common import optional_number, speaker, text
from diagbot.kinds.agent.formats.otel_spans import (
    AGENT,
    INFERENCE,
    RETRIEVAL,
    TOOL,
    Said,
    Span,
    ToolSpan,
    document_id,
)
from diagbot.kinds.agent.run import MAX_STEPS, Document, Retrieval, ToolCall, TraceInvalid

KIND = "openinference.span.kind"
MAX_KEY_PARTS = 16  # dot-separated parts of a flattened key after its list's prefix (the conventions use at most 8)
_ROLES = {"LLM": INFERENCE, "TOOL": TOOL, "RETRIEVER": RETRIEVAL, "AGENT": AGENT}
_INPUT, _OUTPUT = "llm.input_messages.", "llm.output_messages."


def uses(span: Span) -> bool:
    return span.has(KIND)


def role(span: Span) -> str | None:
    kind = span.text(KIND)
    return None if kind is None else _ROLES.get(kind.upper())


def records_messages(span: Span) -> bool:
    """Whether the span may record messages (a cheap test of its keys; `conversation` tells whether it does)."""
    return any(key.startswith((_INPUT, _OUTPUT)) for key in span.attributes)


def conversation(span: Span) -> tuple[list[Said], list[Said]] | None:
    """The span's input messages and its output messages, in index order; None when it records no message."""
    said_in, said_out = _messages(span, _INPUT), _messages(span, _OUTPUT)
    return (said_in, said_out) if said_in or said_out else None


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
    for key, entry in _entries(span, "retrieval.documents.", _tree(span, "retrieval.documents.")):
        doc = _node(entry.get("document", {}), span, f"{key}.document")
        found.documents.append(
            Document(
                id=document_id(_leaf(span, doc, "id", f"{key}.document"), span.where(f"{key}.document.id")),
                score=optional_number(
                    _leaf(span, doc, "score", f"{key}.document"), span.where(f"{key}.document.score")
                ),
                content=_text(span, doc, "content", f"{key}.document"),
            )
        )
    return found


def _messages(span: Span, prefix: str) -> list[Said]:
    said = []
    for key, entry in _entries(span, prefix, _tree(span, prefix)):
        message = _node(entry.get("message", {}), span, f"{key}.message")
        where = f"{key}.message"
        role = _text(span, message, "role", where)
        if role is None:
            raise TraceInvalid(span.where(f"{where}.role"), "a message without its role")
        speaker(role, span.where(f"{where}.role"), result_role="tool")
        content = _text(span, message, "content", where)
        if content is None:  # the list form: its text parts joined, as the other formats join them
            texts = []
            for k, entry in _entries(span, f"{where}.contents.", message.get("contents", {})):
                part = _node(entry.get("message_content", {}), span, f"{k}.message_content")
                if (_text(span, part, "type", f"{k}.message_content") or "text") == "text":
                    texts.append(_text(span, part, "text", f"{k}.message_content") or "")
            content = "\n".join(texts)
        if role == "tool":
            answered = _text(span, message, "tool_call_id", where)
            said.append(Said(role, "", answers=[(answered, True, content, span.where(f"{where}.tool_call_id"))]))
            continue
        calls = []
        for k, entry in _entries(span, f"{where}.tool_calls.", message.get("tool_calls", {})):
            call = _node(entry.get("tool_call", {}), span, f"{k}.tool_call")
            function = _node(call.get("function", {}), span, f"{k}.tool_call.function")
            name = _text(span, function, "name", f"{k}.tool_call.function")
            if name is None:
                raise TraceInvalid(span.where(f"{k}.tool_call.function.name"), "a tool call without its name")
            call_id = _text(span, call, "id", f"{k}.tool_call")
            calls.append(ToolCall(name, call_id, _leaf(span, function, "arguments", f"{k}.tool_call.function")))
        legacy = _text(span, message, "function_call_name", where)  # the deprecated form of one call
        if legacy is not None:
            calls.append(ToolCall(legacy, None, _leaf(span, message, "function_call_arguments_json", where)))
        said.append(Said(role, content, calls))
    return said


# The flattened lists, unflattened: `a.0.b` becomes {"a": {"0": {"b": "a.0.b"}}}, each leaf the attribute key
# that holds the value, decoded only when read.


def _tree(span: Span, prefix: str) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for key in span.attributes:
        if key.startswith(prefix):
            parts = key.count(".", len(prefix)) + 1  # counted before a dict is made for each part
            if parts > MAX_KEY_PARTS:
                raise TraceInvalid(
                    span.where(key),
                    f"{parts:,} parts after {prefix.rstrip('.')}; diagbot reads at most {MAX_KEY_PARTS}",
                )
            node = tree
            *inner, last = key[len(prefix) :].split(".")
            for name in inner:
                node = node.setdefault(name, {})
                if not isinstance(node, dict):
                    raise TraceInvalid(span.where(key), "a key under another attribute's value")
            if isinstance(node.get(last), dict):
                raise TraceInvalid(span.where(key), "a value where other attributes have keys under it")
            node[last] = key
    return tree


def _entries(span: Span, prefix: str, tree: Any) -> list[tuple[str, dict[str, Any]]]:
    """The items of the list flattened under `prefix` (its key path, its subtree), in index order."""
    found = []
    for index, subtree in _node(tree, span, prefix.rstrip(".")).items():
        if not (index.isascii() and index.isdigit()):  # "-1", " 1", "²": no message or call may vanish
            raise TraceInvalid(
                span.where(_key_in(subtree)),
                f"list index {index[:20]!r} after {prefix.rstrip('.')}; an index must be a whole number from 0 "
                "(ASCII digits)",
            )
        if len(index) > 6 or int(index) >= MAX_STEPS:
            raise TraceInvalid(span.where(prefix + index), f"index {index[:20]}; diagbot reads at most {MAX_STEPS:,}")
        found.append((int(index), f"{prefix}{index}", _node(subtree, span, f"{prefix}{index}")))
    return [(key, subtree) for _, key, subtree in sorted(found, key=lambda item: item[0])]


def _key_in(subtree: Any) -> str:
    """An attribute key under `subtree` of the unflattened lists (the first recorded), to name in a message."""
    while isinstance(subtree, dict):  # never empty: a dict is made only for a key under it
        subtree = next(iter(subtree.values()))
    return str(subtree)


def _node(value: Any, span: Span, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TraceInvalid(span.where(value), f"expected the keys under {key}, found a value")
    return value


def _leaf(span: Span, node: dict[str, Any], name: str, where: str) -> Any:
    key = node.get(name)
    if isinstance(key, dict):
        raise TraceInvalid(span.where(f"{where}.{name}"), "expected a value, found more keys under it")
    return None if key is None else span.get(key)


def _text(span: Span, node: dict[str, Any], name: str, where: str) -> str | None:
    value = _leaf(span, node, name, where)
    return None if value is None else text(value, span.where(f"{where}.{name}"))
