"""What the OTLP adapter's two span conventions (OpenTelemetry GenAI, OpenInference) share: a span as read from
OTLP/JSON with its attributes decoded on first use, the roles a span can play in a run, and `Said`, one message
of a recorded conversation before it becomes steps.

Attribute values are OTLP `AnyValue`s (`{stringValue | boolValue | intValue | doubleValue | arrayValue |
kvlistValue | bytesValue}`); 64-bit integers are decimal strings. Only the attributes a convention asks for are
decoded, so a run's many repeated histories cost one string each until one of them is read.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass, field
from typing import Any

from diagbot.core.values import type_name
from diagbot.kinds.agent.formats.common import MISSING, Quota, embedded_json, items, obj, text
from diagbot.kinds.agent.run import MAX_STEPS, ToolCall, TraceInvalid

# What a span is to the run.
INFERENCE = "inference"  # a model call that may record the conversation so far
TOOL = "tool"  # one tool call
RETRIEVAL = "retrieval"  # one retrieval (RAG)
AGENT = "agent"  # the agent's run: the root, whose duration is the run's

MAX_DEPTH = 32  # nested arrays and key-value lists in one attribute value
MAX_KEY_PARTS = 16  # dot-separated parts of a flattened key after its list's prefix (the conventions use at most 8)
_INT = re.compile(r"-?[0-9]{1,20}")
_INT_RANGE = (-(2**63), 2**64 - 1)  # int64 values and the fixed64 times


@dataclass(slots=True)
class Span:
    path: str  # the span's JSON path in the file, for messages
    trace_id: str  # lower-case hex
    name: str
    start: int  # Unix nanoseconds
    end: int
    error: bool  # status.code 2 (ERROR)
    order: int  # place in the file, to keep ties in time stable
    attributes: dict[str, Any] = field(default_factory=dict)  # key -> the AnyValue as recorded
    quota: Quota = field(default_factory=Quota)  # what JSON text its attributes may still decode: the run's, shared
    events: list[Span] = field(default_factory=list)  # its `gen_ai.*` span events, in time order, read as spans
    span_id: str = ""  # lower-case hex ("" for an event)
    parent_id: str | None = None
    decoded: dict[str, Any] = field(default_factory=dict)  # `json`'s values by key: each decoded, and charged, once

    def has(self, key: str) -> bool:
        return key in self.attributes

    def where(self, key: str) -> str:
        return f'{self.path}.attributes["{key}"]'

    def get(self, key: str) -> Any:
        """The attribute's value decoded (None when absent or empty)."""
        raw = self.attributes.get(key)
        return None if raw is None else any_value(raw, self.where(key))

    def text(self, key: str) -> str | None:
        value = self.get(key)
        return None if value is None else text(value, self.where(key))

    def required_text(self, key: str, what: str) -> str:
        value = self.text(key)
        if value is None:
            raise TraceInvalid(f"{self.path}.attributes", f"{what} without {key}")
        return value

    def json(self, key: str) -> Any:
        """A structured attribute, recorded as a value or as JSON text (where an SDK can only record strings)."""
        if key not in self.decoded:
            value = self.get(key)
            self.decoded[key] = embedded_json(value, self.where(key), self.quota) if isinstance(value, str) else value
        return self.decoded[key]

    @property
    def duration_ms(self) -> float:
        if self.end < self.start:
            raise TraceInvalid(f"{self.path}.endTimeUnixNano", "the span ends before it starts")
        return (self.end - self.start) / 1e6


@dataclass(slots=True)
class ToolSpan:
    """What a tool span records of its call; `raw_args` and `result` are None when not recorded."""

    tool: str
    id: str | None
    raw_args: Any
    result: Any
    has_result: bool
    failed: bool


@dataclass(slots=True)
class Said:
    """One recorded message: its text, the calls it makes and the results it answers (call id, whether a result
    is recorded, the result, the JSON path of the answer, whether the result says the call failed)."""

    role: str
    text: str
    calls: list[ToolCall] = field(default_factory=list)
    answers: list[tuple[str | None, bool, Any, str, bool]] = field(default_factory=list)


def int64(value: Any, path: str) -> int:
    """A 64-bit integer: OTLP/JSON writes them as decimal strings; a plain JSON number is taken too."""
    if isinstance(value, str) and _INT.fullmatch(value):
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        found = repr(value[:40]) if isinstance(value, str) else type_name(value)
        raise TraceInvalid(path, f"expected a 64-bit integer as a decimal string, found {found}")
    if not _INT_RANGE[0] <= number <= _INT_RANGE[1]:
        raise TraceInvalid(path, f"{number} does not fit in 64 bits")
    return number


_MEMBERS = ("stringValue", "boolValue", "intValue", "doubleValue", "bytesValue", "arrayValue", "kvlistValue")


def repeated_key(key: str) -> str:
    return (
        f"repeats the key {key[:60]!r}: a reader keeps one of its values, so which the agent recorded is not known; "
        "write each key once"
    )


_URL_SAFE = str.maketrans("-_", "+/")


def _bytes(written: str, path: str) -> str:
    """A bytesValue (base64 in OTLP/JSON) as the UTF-8 text it holds: a tool's name or result sent as bytes is read
    as what it says, never as its base64 letters (a call of `cmVmdW5kX3N1Ym1pdA==` would hide `refund_submit` from
    every check). Bytes that are no UTF-8 text (an image) stay as their base64 text."""
    plain = "".join(written.split()).translate(_URL_SAFE)  # as protobuf's JSON reading takes it: URL-safe or
    try:  # standard, padded or not, broken into lines
        held = base64.b64decode(plain + "=" * (-len(plain) % 4), validate=True)
    except ValueError:  # binascii.Error
        raise TraceInvalid(path, f"not base64, as OTLP/JSON writes bytes: {written[:40]!r}") from None
    try:
        return held.decode("utf-8")
    except UnicodeDecodeError:
        return written


def any_value(raw: Any, path: str, depth: int = 0) -> Any:
    """An OTLP AnyValue as a plain value: arrays as lists, key-value lists as objects, bytes as the text they hold
    (`_bytes`), an empty AnyValue as None."""
    value = obj(raw, path)
    if len(value) > 1 and len(members := [key for key in _MEMBERS if key in value]) > 1:  # a oneof: a reader takes
        raise TraceInvalid(path, f"holds {' and '.join(members)}; an OTLP value holds one of them")  # one, hides one
    if "stringValue" in value:
        return text(value["stringValue"], f"{path}.stringValue")
    if "boolValue" in value:
        if not isinstance(value["boolValue"], bool):
            raise TraceInvalid(f"{path}.boolValue", f"expected true or false, found {type_name(value['boolValue'])}")
        return value["boolValue"]
    if "intValue" in value:
        return int64(value["intValue"], f"{path}.intValue")
    if "doubleValue" in value:
        return _double(value["doubleValue"], f"{path}.doubleValue")
    if "bytesValue" in value:
        return _bytes(text(value["bytesValue"], f"{path}.bytesValue"), f"{path}.bytesValue")
    if depth == MAX_DEPTH and ("arrayValue" in value or "kvlistValue" in value):
        raise TraceInvalid(path, f"nested more than {MAX_DEPTH} levels deep")
    if "arrayValue" in value:
        where = f"{path}.arrayValue.values"
        found = items(obj(value["arrayValue"], f"{path}.arrayValue").get("values", []), where)
        return [any_value(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(found)]
    if "kvlistValue" in value:
        where = f"{path}.kvlistValue.values"
        pairs = {}
        for i, entry in enumerate(items(obj(value["kvlistValue"], f"{path}.kvlistValue").get("values", []), where)):
            entry = obj(entry, f"{where}[{i}]")
            key = text(entry.get("key", MISSING), f"{where}[{i}].key")
            if key in pairs:
                raise TraceInvalid(f"{where}[{i}].key", repeated_key(key))
            pairs[key] = any_value(entry.get("value", {}), f"{where}[{i}].value", depth + 1)
        return pairs
    if value:  # `string_value` (a proto field name), a misspelling: read as empty, the value would go unseen
        key = str(next(iter(value)))[:40]
        raise TraceInvalid(
            f"{path}.{key}",
            "not an AnyValue field OTLP/JSON writes (stringValue, boolValue, intValue, doubleValue, "
            "bytesValue, arrayValue, kvlistValue: lowerCamelCase)",
        )
    return None


def _double(value: Any, path: str) -> float:
    if value == "NaN" or (isinstance(value, float) and math.isnan(value)):  # a schema's maximum would pass it
        raise TraceInvalid(path, "expected a number, found NaN, which no check can compare")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if value in ("Infinity", "-Infinity"):  # how the protobuf JSON mapping writes what JSON cannot
        return float(value)
    raise TraceInvalid(path, f"expected a number, found {type_name(value)}")


def document_id(value: Any, path: str) -> str | None:
    """A document's id: text, or a whole number written as text; None when not recorded."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TraceInvalid(path, f"expected a string or a whole number, found {type_name(value)}")


# Lists flattened into indexed keys (OpenInference's, OpenLLMetry's `gen_ai.prompt.N.*`), unflattened: `a.0.b`
# becomes {"a": {"0": {"b": "a.0.b"}}}, each leaf the attribute key that holds the value, decoded only when read.


def flat_tree(span: Span, prefix: str) -> dict[str, Any]:
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


def flat_entries(span: Span, prefix: str, tree: Any) -> list[tuple[str, dict[str, Any]]]:
    """The items of the list flattened under `prefix` (its key path, its subtree), in index order."""
    found = []
    for index, subtree in flat_node(tree, span, prefix.rstrip(".")).items():
        if not (index.isascii() and index.isdigit()):  # "-1", " 1", "²": no message or call may vanish
            raise TraceInvalid(
                span.where(_key_in(subtree)),
                f"list index {index[:20]!r} after {prefix.rstrip('.')}; an index must be a whole number from 0 "
                "(ASCII digits)",
            )
        if len(index) > 6 or int(index) >= MAX_STEPS:
            raise TraceInvalid(span.where(prefix + index), f"index {index[:20]}; diagbot reads at most {MAX_STEPS:,}")
        found.append((int(index), f"{prefix}{index}", flat_node(subtree, span, f"{prefix}{index}")))
    return [(key, subtree) for _, key, subtree in sorted(found, key=lambda item: item[0])]


def _key_in(subtree: Any) -> str:
    """An attribute key under `subtree` of the unflattened lists (the first recorded), to name in a message."""
    while isinstance(subtree, dict):  # never empty: a dict is made only for a key under it
        subtree = next(iter(subtree.values()))
    return str(subtree)


def flat_node(value: Any, span: Span, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TraceInvalid(span.where(value), f"expected the keys under {key}, found a value")
    return value


def flat_value(span: Span, node: Any) -> Any:
    """A subtree of the unflattened lists as the value it flattens, for a reader to look through what it does not
    read: each leaf's value, decoded, and keys that are all list indexes as a list in index order
    (`additional_kwargs.tool_calls.0.function.name` is `{tool_calls: [{function: {name}}]}`)."""
    if not isinstance(node, dict):
        return span.get(node)
    if all(key.isascii() and key.isdigit() for key in node):
        return [flat_value(span, node[key]) for key in sorted(node, key=int)]
    return {key: flat_value(span, value) for key, value in node.items()}


def flat_leaf(span: Span, node: dict[str, Any], name: str, where: str) -> Any:
    key = node.get(name)
    if isinstance(key, dict):
        raise TraceInvalid(span.where(f"{where}.{name}"), "expected a value, found more keys under it")
    return None if key is None else span.get(key)


def flat_text(span: Span, node: dict[str, Any], name: str, where: str) -> str | None:
    value = flat_leaf(span, node, name, where)
    return None if value is None else text(value, span.where(f"{where}.{name}"))
