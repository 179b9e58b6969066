"""The run model: one recorded trial of an agent, whatever format recorded it.

Every adapter in `formats/` turns its file into a `Run`, and the checks read nothing else. A run is its steps in
the order they happened (messages, tool calls, state changes, retrievals), plus the final state, the duration and
the answer's citations when the format records them. Plain slotted classes, not pydantic: a suite of 10,000 runs
of 50 messages builds half a million of them, and the adapters have already checked every type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from diagbot.core import values
from diagbot.core.text import shows_something

MAX_STEPS = 10_000
"""Steps (messages, tool calls, state changes, retrievals) read from one run; more fails the trial as
trace_invalid (each adapter checks it as it reads)."""


MAX_ARG_VALUES = 1_000_000
"""JSON values in one call's arguments recorded as JSON text, counted before decoding (the run file's own bound
counts such text as one value)."""


class TraceInvalid(Exception):
    """A run file that cannot be read or placed: its trial fails with `trace_invalid`, naming the JSON path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.message = message


@dataclass(slots=True)
class Message:
    role: str  # system, user, assistant, tool (as recorded; `developer` is kept as it is)
    text: str  # the text parts joined; "" for a message that only calls tools
    calls: int = 0
    """How many of the steps after it are calls the message itself makes (a chat message's tool_calls beside its
    text): its text is said with them, not before them."""


_UNREAD = object()


@dataclass(slots=True)
class ToolCall:
    tool: str
    id: str | None = None
    raw_args: Any = None  # as recorded: a JSON string the model wrote (maybe not JSON), or a decoded value
    result: Any = None  # the recorded result: text, or any JSON value
    has_result: bool = False
    failed: bool = False  # the format says so, or the suite's tool-error-pattern matched the result text
    duration_ms: float | None = None
    audit: dict[str, Any] | None = None
    made: int | None = None
    """Which model output made the call, in an order the format's results share (`seen`): calls with the same
    `made` were made together (one chat message's tool_calls) and none of them saw another's result. None where
    the format does not say (a result recorded with its call, as the native format and OTLP spans do)."""
    seen: int | None = None
    """Where in that order the result came back, when `made` is known; None: it never did."""
    _decoded: Any = _UNREAD

    def _decode(self) -> tuple[Any, str | None]:
        """The arguments decoded once, when a check first asks: most checks never look at most calls' arguments."""
        if self._decoded is _UNREAD:
            self._decoded = decode_args(self.raw_args)
        decoded: tuple[Any, str | None] = self._decoded
        return decoded

    def ran_with(self, args: Any) -> None:
        """The arguments the tool itself records running with (an OTLP tool span's), which the checks judge instead
        of those the model asked for; `raw_args` stays as recorded, since it tells the call's copies apart."""
        self._decoded = (args, None)

    @property
    def args(self) -> Any:
        """The decoded arguments (an object, normally); None when they could not be decoded."""
        return self._decode()[0]

    @property
    def args_problem(self) -> str | None:
        """Why the arguments could not be decoded, or None."""
        return self._decode()[1]

    @property
    def result_text(self) -> str:
        if isinstance(self.result, str):
            return self.result
        return "" if self.result is None else _compact(self.result)

    @property
    def result_value(self) -> Any:
        return result_value(self.result)

    @property
    def result_is_error(self) -> bool | None:
        return result_is_error(self.result)

    @property
    def result_parts_text(self) -> str | None:
        """The text of the result's parts, one a line, when it is a list of parts that hold text (as MCP and the
        Responses API write results: `[{type: text, text: "Error: ..."}]`, whose JSON no pattern anchored at the
        start of the text matches), or an object whose `content` is one (MCP's `CallToolResult`), as a value or
        its JSON text; else None."""
        result = self.result_value
        if isinstance(result, dict):
            result = result.get("content")
        if not isinstance(result, list) or not result:
            return None
        texts = [part.get("text") for part in result if isinstance(part, dict)]
        return "\n".join(t for t in texts if isinstance(t, str)) if any(isinstance(t, str) for t in texts) else None


def result_value(result: Any) -> Any:
    """A recorded result as a value: as recorded, or, for JSON text of an object or a list (as an OTLP span records a
    structured result, MCP's `CallToolResult`), what it encodes; text that is no such JSON, or holds more than
    MAX_ARG_VALUES values, stays the text. It is read for its shape alone (`isError`, the parts' text), so a number
    past a double's range reads as infinity rather than leave an error result as text."""
    if not isinstance(result, str) or result.lstrip()[:1] not in ("{", "["):
        return result
    if _too_many_values(result):
        return result
    try:
        return values.loads(result, infinite=True)
    except (json.JSONDecodeError, values.BadNumber, RecursionError, UnicodeError):
        return result


def result_is_error(result: Any) -> bool | None:
    """Whether a recorded result says its call failed: MCP's `CallToolResult` with `isError: true`; None when it
    may, in JSON text of more values than diagbot decodes, or that repeats a key (`"isError": true, "isError":
    false` is read as false by JSON readers)."""
    if isinstance(result, str):
        if "isError" not in result:
            return False  # no JSON text needs decoding to tell
        if _too_many_values(result):
            return None
    value = result_value(result)
    if isinstance(result, str) and value is not result:
        try:
            values.refuse_repeats(result, value)
        except (ValueError, RecursionError):  # json.JSONDecodeError: a key repeated
            return None
    return isinstance(value, dict) and value.get("isError") is True


@dataclass(slots=True)
class StateChange:
    key: str
    before: Any  # FROM_STATE when the recording does not say: the state just before the change
    after: Any


FROM_STATE: Any = type("FromState", (), {"__repr__": lambda self: "FROM_STATE"})()


@dataclass(slots=True)
class Document:
    """One document a retrieval returned, as recorded (None where the recording does not say)."""

    id: str | None  # None when the recording names no id: such a document can never be gold evidence
    passage_id: str | None = None
    score: float | None = None
    rank: int | None = None  # the recorded rank; the documents' order in `Retrieval.documents` is the recorded order
    content: str | None = None


@dataclass(slots=True)
class Retrieval:
    """A retrieval step (RAG): the query text, when recorded, and the documents returned, in the recorded order."""

    query: str | None
    documents: list[Document] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Citation:
    """A source the answer cites."""

    doc_id: str
    passage_id: str | None = None


Step = Message | ToolCall | StateChange | Retrieval


@dataclass
class Run:
    """One trial: steps in order, the recorded final state (None when the format has none), the duration, and the
    citations recorded on the answer."""

    steps: list[Step] = field(default_factory=list)
    final_state: dict[str, Any] | None = None
    duration_ms: float | None = None
    citations: list[Citation] = field(default_factory=list)  # those the format records on the answer
    records_state: bool = False
    """The format records each change of state as a step (diagbot's own): a run of it with none changed nothing.
    In other formats a run's state is known only from a recorded final_state."""
    unrecorded: str | None = None
    """Why the run holds no messages though the agent spoke (spans exported without their content): the checks of
    its text and turns are then undecided, never passed on an empty answer."""

    @cached_property
    def _index(self) -> tuple[list[ToolCall], list[str], int, list[StateChange], list[Retrieval]]:
        """The calls, the assistant texts, the assistant turns, the state changes and the retrievals: one walk."""
        calls: list[ToolCall] = []
        texts: list[str] = []
        changes: list[StateChange] = []
        retrievals: list[Retrieval] = []
        turns = 0
        for step in self.steps:
            kind = type(step)
            if kind is ToolCall:
                calls.append(step)  # type: ignore[arg-type]
            elif kind is Message:
                if step.role == "assistant":  # type: ignore[union-attr]
                    turns += 1
                    if step.text and shows_something(step.text):  # type: ignore[union-attr]  # blank is no text
                        texts.append(step.text)  # type: ignore[union-attr]
            elif kind is StateChange:
                changes.append(step)  # type: ignore[arg-type]
            elif kind is Retrieval:
                retrievals.append(step)  # type: ignore[arg-type]
        return calls, texts, turns, changes, retrievals

    @property
    def calls(self) -> list[ToolCall]:
        return self._index[0]

    @property
    def least_duration_ms(self) -> float | None:
        """How long the run took at least: its recorded duration, or longer when one of its calls records that it
        took longer (calls may overlap, so they are not added up); None when the run records no duration."""
        if self.duration_ms is None:
            return None
        return max([self.duration_ms, *(c.duration_ms for c in self.calls if c.duration_ms is not None)])

    @cached_property
    def _numbers(self) -> dict[int, int]:
        return {id(call): number for number, call in enumerate(self.calls, 1)}

    def call_number(self, call: ToolCall) -> int:
        """The call's place among the run's calls, from 1 (by identity: two equal calls have their own numbers)."""
        return self._numbers[id(call)]

    @property
    def assistant_texts(self) -> list[str]:
        return self._index[1]

    @property
    def answer(self) -> str:
        """The last assistant message with text (not only blanks); "" when the agent never wrote one."""
        texts = self._index[1]
        return texts[-1] if texts else ""

    @property
    def turns(self) -> int:
        """Assistant messages, with or without text (a message that only calls tools is a turn too)."""
        return self._index[2]

    @property
    def state_changes(self) -> list[StateChange]:
        return self._index[3]

    @property
    def retrievals(self) -> list[Retrieval]:
        return self._index[4]


def decode_args(raw: Any) -> tuple[Any, str | None]:
    """Tool-call arguments as recorded: a JSON string (which the model may have got wrong) or a decoded value.
    Returns (args, None), or (None, why) when the string is not JSON: that call's arguments are invalid, the file
    is still fine."""
    if raw is None:
        return None, "arguments are not recorded"
    if not isinstance(raw, str):
        return (raw, None) if isinstance(raw, dict) else (None, f"arguments are {values.type_name(raw)}, not an object")
    if not raw.strip():
        return {}, None  # some SDKs record no arguments as ""
    if (
        len(raw) > 2 * MAX_ARG_VALUES
        and (count := values.count_values(raw.encode("utf-8", "replace"))) > MAX_ARG_VALUES
    ):
        return None, f"arguments hold {count:,} JSON values; diagbot decodes at most {MAX_ARG_VALUES:,} per call"
    try:  # a repeated key is refused: which of its values the tool acted on is not known
        decoded = values.loads_unique(raw)
    except RecursionError:  # Python's own words name its internals ("while decoding a JSON array from ...")
        return None, f"arguments are nested too deeply to read: {values.excerpt(raw)!r}"
    except (json.JSONDecodeError, values.BadNumber, UnicodeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return None, f"arguments are not valid JSON ({reason}): {values.excerpt(raw)!r}"
    if not isinstance(decoded, dict):  # `null`, `5`, a list, a JSON text inside the text: what the tool got is unknown
        return None, f"arguments are {values.type_name(decoded)}, not an object: {values.excerpt(raw)!r}"
    return decoded, None


def _too_many_values(raw: str) -> bool:
    """Whether JSON text holds more than MAX_ARG_VALUES values (counted only when it is long enough to)."""
    return len(raw) > 2 * MAX_ARG_VALUES and values.count_values(raw.encode("utf-8", "replace")) > MAX_ARG_VALUES


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
