"""What every run adapter needs: typed reads of decoded JSON that fail with the JSON path."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from diagbot.core import values
from diagbot.core.text import closest
from diagbot.core.values import type_name
from diagbot.kinds.agent.run import MAX_STEPS, TraceInvalid

MAX_JSON_VALUES = 1_000_000  # values in one run file, counted before parsing (see core.values.count_values)
DECODE_ERRORS = (json.JSONDecodeError, values.BadNumber, RecursionError, UnicodeDecodeError)
"""What `values.loads` raises for a document it will not read; `json_problem` says it for the run."""


@dataclass(frozen=True)
class JsonLines:
    """A run file of several JSON documents, one a line (as the OpenTelemetry Collector's file exporter writes):
    each document with its line number, from 1."""

    documents: list[tuple[int, Any]]


def obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TraceInvalid(path, f"expected an object, found {found(value)}")
    return value


def items(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise TraceInvalid(path, f"expected an array, found {found(value)}")
    if len(value) > MAX_STEPS:
        raise TraceInvalid(path, f"has {len(value):,} items; diagbot reads at most {MAX_STEPS:,} per run")
    return value


MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()
"""What a reader reads for a key that is not there (`d.get(key, MISSING)`), so that its message tells an absent key
from a null: a tool message without tool_call_id was told it held null."""


def found(value: Any) -> str:
    """What a reader found where a value was required."""
    return "no value (the key is missing)" if value is MISSING else type_name(value)


def text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise TraceInvalid(path, f"expected a string, found {found(value)}")
    return value


SPEAKERS = ("system", "developer", "user", "assistant")
"""The roles of a message the run model keeps: the answer and the turns are the assistant's, confirmations the
user's. A tool result is no message: each format pairs it with its call."""


def unknown_role(role: str, path: str, results: str = "tool") -> TraceInvalid:
    """A message under a role diagbot does not read would be no one's: its text never the answer, its calls never
    counted. Refused, naming the roles read (`results`: how the format marks a tool result)."""
    return TraceInvalid(
        path,
        f"role {role[:80]!r} is not one diagbot reads ({', '.join(SPEAKERS)}, or {results} for a "
        "result); write the agent's messages as assistant",
    )


def speaker(value: Any, path: str, results: str = "tool", result_role: str | None = None) -> str:
    """The role of a message: one of SPEAKERS, or the format's `result_role` for a message that carries results."""
    role = text(value, path)
    if role not in SPEAKERS and role != result_role:
        raise unknown_role(role, path, results)
    return role


def optional_text(value: Any, path: str) -> str | None:
    return None if value is None else text(value, path)


def duration(value: Any, path: str) -> float | None:
    """A duration in milliseconds: a number from 0 to MAX_DURATION_MS, or absent. Past it the report would hold a
    number that the next run, reading it as its baseline, refuses as no report diagbot writes."""
    if value is None:
        return None
    if (
        isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0
        or value > MAX_DURATION_MS
    ):  # fmt: skip
        found = type_name(value) if isinstance(value, bool) or not isinstance(value, int | float) else repr(value)
        raise TraceInvalid(
            path, f"expected a duration in milliseconds (a number from 0 to {MAX_DURATION_MS:.0e}), found {found}"
        )
    return float(value)


MAX_DURATION_MS = 1e12  # about 31 years, as the trace kind's fixtures are held to


def optional_number(value: Any, path: str) -> float | None:
    """A finite number (a document's score), or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        found = type_name(value) if isinstance(value, bool) or not isinstance(value, int | float) else repr(value)
        raise TraceInvalid(path, f"expected a finite number, found {found}")
    return float(value)


def optional_rank(value: Any, path: str) -> int | None:
    """A rank: a whole number from 1, or absent."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1_000_000_000:
        found = type_name(value) if isinstance(value, bool) or not isinstance(value, int) else repr(value)
        raise TraceInvalid(path, f"expected a rank (a whole number from 1), found {found}")
    return value


def state(value: Any, path: str) -> dict[str, Any] | None:
    return None if value is None else obj(value, path)


TEXT_TYPES = ("text", "input_text", "output_text")  # the content part types whose `text` is the message's


def unspoken(kind: Any) -> bool:
    """Whether a part of this type says nothing a check of what was said reads: a word of its type (`input_image`,
    `redacted_thinking`) begins with one of `UNSPOKEN` (`security_notice` holds `uri`, but no word begins with it)."""
    words = re.split("[^a-z0-9]+", str(kind)[:200].casefold()) if kind is not None else []
    return any(word.startswith(UNSPOKEN) for word in words)


def content_text(value: Any, path: str, apart: tuple[str, ...] = ()) -> str:
    """Message content: a string, null, or a list of parts of which the text parts are joined. `apart`: the types
    of parts the caller reads itself (as calls or results), passed over here."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise TraceInvalid(path, f"expected text, null or a list of content parts, found {type_name(value)}")
    parts = []
    for index, part in enumerate(items(value, path)):
        part = obj(part, f"{path}[{index}]")
        kind = part.get("type")
        if kind in apart:
            continue
        if kind in TEXT_TYPES or (kind is None and "text" in part):
            parts.append(text(part.get("text", MISSING), f"{path}[{index}].text"))
        elif kind == "refusal":  # the model's refusal is what it said
            parts.append(text(part.get("refusal", MISSING), f"{path}[{index}].refusal"))
        elif part.get("transcript") is not None:  # an audio part (`output_audio`, Realtime's `audio`): its words
            parts.append(text(part["transcript"], f"{path}[{index}].transcript"))
        elif is_call_part(kind, part):  # an Anthropic-style `tool_use` part: a call no check would see
            named = "a part without a type" if kind is None else f"a part of type {str(kind)[:40]!r}"
            raise TraceInvalid(
                f"{path}[{index}]",
                f"{named} holds a tool call or result, which this format records outside a message's content; "
                "read here it would go unseen: record calls and results in the format's own fields (openai-chat: "
                "tool_calls and tool messages)",
            )
        elif "text" in part:  # text under a type no API writes (`Text`): skipped, it could hide what was said
            raise TraceInvalid(
                f"{path}[{index}].type",
                f"{str(kind)[:40]!r} is not a text part's type (text, input_text, "
                "output_text, refusal), but the part holds text",
            )
        elif (held := next((k for k in _PART_TEXT if isinstance(part.get(k), str)), None)) and not unspoken(kind):
            shown = "a part without a type" if kind is None else f"a part of type {str(kind)[:40]!r}"
            raise TraceInvalid(
                f"{path}[{index}].{held}",
                f"{shown} holds text under {held!r}, which diagbot does not read, so what it says would go unseen: "
                "write it as a text part ({type: text, text: ...})",
            )
    return "\n".join(parts)


_CALL_NAMED = ("tool", "function", "call_id")  # in a key or a type, these name a call or its result
_ARGS = ("args", "arguments", "input", "kwargs")


def is_call_part(kind: Any, part: dict[str, Any]) -> bool:
    """A content part, or any object, that records a call or its result: by its type (`tool_use`, `tool_result`,
    `function_call`, Vercel's `tool-call`, `tool_call_chunk`, `server_tool_use`), by a key that names one
    (`tool_use_id`, Bedrock's `toolUse`, Gemini's `functionCall` / `function_call`, LlamaIndex's `tool_name`,
    DSPy's `tool_args_0`), by a name beside arguments (LangChain's `{name, args, id}`), or as a ReAct action
    (`{action, action_input}`; its `Final Answer` too, a reply whose text would go unread). Anthropic's
    `search_result` and an `http_response` are none."""
    looks = kind.casefold().replace("-", "_") if isinstance(kind, str) else ""
    if any(word in looks for word in _CALL_NAMED) or looks.endswith(("_use", "_call", "_call_output")):
        return True
    if "action" in part and "action_input" in part:
        return True
    return _call_key(part) is not None or ("name" in part and any(key in part for key in _ARGS))


def _call_key(node: dict[str, Any]) -> str | None:
    """The first key that names a call and holds one (a count or a flag, `tool_calls: 0`, holds none)."""
    return next(
        (str(key) for key, value in node.items()
         if isinstance(value, str | list | dict) and any(word in str(key).casefold() for word in _CALL_NAMED)),
        None,
    )  # fmt: skip


_MESSAGE_ROLES = frozenset(("system", "developer", "user", "assistant", "tool", "function", "model"))


def reads_as_message_or_call(node: dict[str, Any]) -> str | None:
    """The key by which an object reads as a message, a reply or a call (`role: assistant`, a list of
    `tool_calls`, `choices` or `messages`, a call as `_is_call_part` tells), or None. A `role` that is no message
    role (CrewAI's `agent.role: "Refund specialist"`), or has nothing said beside it, and a count of messages are
    not one."""
    role = node.get("role")
    said = ("content", "parts", "text", "tool_calls", "function_call")
    if isinstance(role, str) and role.casefold() in _MESSAGE_ROLES and any(key in node for key in said):
        return "role"  # a message: a role and what it said (`{name: Ann, role: developer}` is a person)
    for key in ("tool_calls", "choices", "messages"):
        if isinstance(node.get(key), list | dict):
            return key
    if is_call_part(node.get("type"), node):
        return _call_key(node) or ("type" if "type" in node else "name" if "name" in node else "action")
    return None


# Keys under which exports and hand-written runs put what a message said, where neither OpenAI format reads it;
# under any other key, text is found in parts (`parts: [{type: text, text}]`, LlamaIndex's `blocks`). A model's
# reasoning (`reasoning_details`, `thinking` parts) is not what it said.
_TEXT_KEYS = frozenset((
    "text", "output_text", "value", "message", "answer", "response", "reply", "completion", "output", "msg",
    "parts", "content_parts", "blocks", "final_output", "final_answer", "final_response",
))  # fmt: skip  # `final_output`: an agent SDK's result, saved beside the messages
_PART_TEXT = ("text", "value", "content")
_NOT_SAID = ("reason", "think")
UNSPOKEN = (*_NOT_SAID, "blob", "uri", "file", "image", "audio", "video", "binary", "document", "result")
"""Words of part types whose text or content is not what the model said: its reasoning (`_NOT_SAID`), media (a
blob's `content` is its data), a document given to it, and what a tool or code it ran returned."""
_PART_DEPTH = 4  # levels of lists and parts looked into (`message: {content: [{type: text, text: {value}}]}`)


MAX_COMPARED_CHARS = 50_000_000
"""Characters of messages' contents searched for the text under their unread keys, in one run file (each distinct
piece of a message is one search of its content): 5,000 pieces beside a 1 MB content had taken seconds, and 300
such messages half a minute, before any check's budget applied."""
_COMPARED: ContextVar[list[int] | None] = ContextVar("compared", default=None)


@contextlib.contextmanager
def counting_compared() -> Iterator[None]:
    """One MAX_COMPARED_CHARS for the run file read inside (without it, each message has one)."""
    token = _COMPARED.set([0])
    try:
        yield
    finally:
        _COMPARED.reset(token)


def no_text_elsewhere(message: dict[str, Any], content: str, read: frozenset[str], where: str) -> None:
    """A message's text under a key its format does not read (`{role: assistant, text: ...}`, Vercel's `parts`)
    would leave the answer without it, and every check that something was not said would pass: such a message is
    refused, unless its content already says each piece of it. A tool's result is not the answer: its message is
    not looked through."""
    if message.get("role") in ("tool", "function"):
        return
    said_here: str | None = None  # the content, spaced as the pieces are compared: made only when one is found
    looked_for: set[str] = set()
    compared = _COMPARED.get() or [0]  # characters searched in this run file (`counting_compared`), else message
    for key, value in message.items():
        if key in read or any(word in str(key).casefold() for word in _NOT_SAID):
            continue
        for said in _texts(value, key in _TEXT_KEYS, _PART_DEPTH):
            said_here = " ".join(content.split()) if said_here is None else said_here
            piece = " ".join(said.split())
            if piece in looked_for or piece == said_here:  # the content itself, written twice: no search needed
                continue
            looked_for.add(piece)
            compared[0] += len(said_here) + len(piece)
            if compared[0] > MAX_COMPARED_CHARS:
                raise TraceInvalid(
                    f"{where}.{key}",
                    f"holds more text under keys diagbot does not read than it compares with the message's content "
                    f"({MAX_COMPARED_CHARS:,} characters searched), so what it says may go unseen: write it as the "
                    "message's content",
                )
            if piece not in said_here:
                raise TraceInvalid(
                    f"{where}.{key}",
                    f"a message's text under {key!r}, which diagbot does not read, so what it says would go unseen: "
                    "write it as the message's content",
                )


def _texts(value: Any, text_key: bool, depth: int, listed: bool = False) -> Iterator[str]:
    """The texts a value under an unread key holds: the value itself under a key that names text, and the text of
    parts (objects in a list, or with a `type`, or under a text key, holding `text`, `value` or `content`)."""
    if isinstance(value, str):
        if text_key and value.strip():
            yield value
    elif depth == 0:
        if text_key and isinstance(value, list | dict) and value:
            yield "\0"  # nested deeper than is looked into: what it holds is not known, so no content says it
    elif isinstance(value, list):  # a list is a level too, so lists nested in lists end at _PART_DEPTH
        for part in value:
            if isinstance(part, dict) or text_key:
                yield from _texts(part, text_key, depth - 1, listed=True)
    elif isinstance(value, dict) and (text_key or listed or "type" in value):
        kind = value.get("type", value.get("block_type"))
        if value.get("thought") is True or (isinstance(kind, str) and any(w in kind.casefold() for w in _NOT_SAID)):
            return  # a model's reasoning (Gemini marks its thought parts `thought: true`)
        for key in _PART_TEXT:
            if key in value:
                yield from _texts(value[key], True, depth - 1)


def with_refusal(content: str, refusal: Any, path: str) -> str:
    """A message's text with its `refusal`, the text a model writes instead of an answer (Chat Completions puts it
    beside a null `content`)."""
    if refusal is None:
        return content
    refused = text(refusal, path)
    return f"{content}\n{refused}" if content else refused


def no_unknown_keys(data: dict[str, Any], known: tuple[str, ...], path: str) -> None:
    """The native format is ours and strict: a misspelt key is an error, never a field quietly read as absent,
    with the closest known name (`core.text.closest`, which bounds the comparison)."""
    for key in data:
        if key not in known:
            name = str(key)
            close = closest(name, known)
            hint = f" (did you mean {close}?)" if close else f" (known: {', '.join(known)})"
            raise TraceInvalid(f"{path}.{key}", f"unknown field{hint}")


class Quota:
    """The JSON values that the strings of one run may hold, decoded (OpenTelemetry attributes hold messages and
    documents as JSON text): MAX_JSON_VALUES in all, as many as the file itself, so that values written as text
    inside strings are no way past the file's bound.

    Counting is dearer than decoding, so a string is charged what its length allows ((n + 1) // 2 values in n
    characters) while those bounds fit; only past that are the strings counted, each once."""

    __slots__ = ("_bounded", "_bounds", "left")

    def __init__(self) -> None:
        self.left = MAX_JSON_VALUES  # less the values counted
        self._bounded: list[str] = []  # strings charged by their length only, not counted yet
        self._bounds = 0

    def charge(self, value: str, path: str) -> None:
        bound = (len(value) + 1) // 2
        if self._bounds + bound <= self.left:
            self._bounded.append(value)
            self._bounds += bound
            return
        self.left -= sum(map(_count, self._bounded))
        self._bounded, self._bounds = [], 0
        count = count_json(value, path)
        if count > self.left:
            raise TraceInvalid(
                path,
                f"holds {count:,} JSON values, more than the {self.left:,} left of the {MAX_JSON_VALUES:,} that "
                "diagbot reads from the JSON text of one run's attributes",
            )
        self.left -= count


def _count(value: str) -> int:
    return values.count_values(value.encode("utf-8", "surrogatepass"))


def count_json(source: str | bytes, path: str) -> int:
    """The JSON values in `source`, counted before decoding (core.values.count_values); more than one run may hold
    is a TraceInvalid at `path`."""
    count = values.count_values(source) if isinstance(source, bytes) else _count(source)
    if count > MAX_JSON_VALUES:
        raise TraceInvalid(path, f"holds {count:,} JSON values; diagbot reads at most {MAX_JSON_VALUES:,} per run")
    return count


def json_problem(exc: Exception, path: str, too_deep: str) -> TraceInvalid:
    """One of DECODE_ERRORS as the problem at `path`; `too_deep` is the message for a RecursionError."""
    if isinstance(exc, json.JSONDecodeError):
        return TraceInvalid(path, f"not valid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})")
    if isinstance(exc, values.BadNumber):
        return TraceInvalid(path, f"cannot be read: {exc}")
    if isinstance(exc, UnicodeDecodeError):
        return TraceInvalid(path, f"not UTF-8 (bad byte at offset {exc.start}); re-save it as UTF-8")
    return TraceInvalid(path, too_deep)


def embedded_json(value: str, path: str, quota: Quota) -> Any:
    """A JSON document recorded as a string inside the run, decoded within the bounds of a run file, its values
    charged (before decoding) to the run's `quota`; a problem names the string's path."""
    quota.charge(value, path)
    try:
        decoded = values.loads_unique(value)  # a repeated key would hide one of its values
    except DECODE_ERRORS as exc:
        raise json_problem(exc, path, "nested too deeply to read") from None
    return values.replace_surrogates(decoded) if values.escapes_surrogates(value) else decoded


_LOOKED_AT = 100_000  # values beside what a format reads looked through for a message; past that, the file is refused


def calls_off_the_agent(path: str, role: Any) -> TraceInvalid:
    """Calls recorded on a message that is not the agent's: read with it, they would go unseen."""
    return TraceInvalid(
        path,
        f"only an assistant message calls tools; this one's role is {str(role)[:40]!r}: record the calls on the "
        "assistant message that made them",
    )


def holds_no_message(values: list[tuple[str, Any]], base: str, hint: str) -> None:
    """Keys the reader does not read (beside the messages: a request's parameters, a response's
    `system_fingerprint`, an export's `tags`; on a message: LangChain's `additional_kwargs`) are left alone unless
    they hold what reads as a message, a reply or a call, which would go unread (`response.choices[0].message`,
    `additional_kwargs.tool_calls`, LangChain's `intermediate_steps`). Paths are written only for the one refused:
    a deep value is looked through without a copy of its path per value."""
    parents: list[tuple[int, str]] = []  # each value looked at: (its parent's index, its step from there)
    todo: list[tuple[Any, int]] = []
    for key, value in values:
        parents.append((-1, f".{str(key)[:60]}"))
        todo.append((value, len(parents) - 1))
    while todo:
        node, at = todo.pop()
        if len(parents) > _LOOKED_AT:
            raise TraceInvalid(
                base,
                f"holds more than {_LOOKED_AT:,} values beside what diagbot reads; a reply or a call in them could "
                "not be ruled out: keep a run file to its messages and final_state",
            )
        if isinstance(node, dict):
            found = reads_as_message_or_call(node)
            if found is not None:
                raise TraceInvalid(
                    f"{base}{_path_to(parents, at)}.{str(found)[:60]}",
                    f"what reads as a message, a reply or a call ({str(found)[:60]!r}) where diagbot reads none "
                    f"would go unread (a call in it unseen): {hint}",
                )
            for key, value in node.items():
                parents.append((at, f".{str(key)[:60]}"))
                todo.append((value, len(parents) - 1))
        elif isinstance(node, list):
            for i, value in enumerate(node):
                parents.append((at, f"[{i}]"))
                todo.append((value, len(parents) - 1))


def _path_to(parents: list[tuple[int, str]], at: int) -> str:
    steps = []
    while at >= 0:
        at, step = parents[at]
        steps.append(step)
    return "".join(reversed(steps))


def says_failed(result: dict[str, Any], where: str) -> bool:
    """Whether a chat-shaped tool result message says its call failed, as exports beside the chat format write it:
    `error` (true, or the error's text or object), `is_error: true` (Anthropic's), `status: "error"` (LangChain's
    ToolMessage; also failed or failure). Read as a success, a failed call would meet a precondition; a flag of
    another type is refused."""
    error, is_error, status = result.get("error"), result.get("is_error"), result.get("status")
    if error is not None and not isinstance(error, bool | str | dict | list):
        raise TraceInvalid(
            f"{where}.error", f"expected true, false or the error's text or object, found {type_name(error)}"
        )
    if is_error is not None and not isinstance(is_error, bool):
        raise TraceInvalid(f"{where}.is_error", f"expected true or false, found {type_name(is_error)}")
    if status is not None and not isinstance(status, str):
        raise TraceInvalid(f"{where}.status", f"expected a text (success or error), found {type_name(status)}")
    return bool(error) or is_error is True or (status or "").strip().casefold() in FAILED_STATUSES


FAILED_STATUSES = frozenset(("error", "failed", "failure"))
