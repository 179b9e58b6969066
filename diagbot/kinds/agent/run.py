"""The run model: one recorded trial of an agent, whatever format recorded it.

Every adapter in `formats/` turns its file into a `Run`, and the checks read nothing else. A run is its steps in
the order they happened (messages, tool calls, state changes), plus the final state and the duration when the
format records them. Plain slotted classes, not pydantic: a suite of 10,000 runs of 50 messages builds half a
million of them, and the adapters have already checked every type.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from diagbot.core import values

MAX_STEPS = 10_000
"""Steps (messages, tool calls, state changes) read from one run; more fails the trial as trace_invalid (each
adapter checks it as it reads)."""


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
    _decoded: Any = _UNREAD

    def _decode(self) -> tuple[Any, str | None]:
        """The arguments decoded once, when a check first asks: most checks never look at most calls' arguments."""
        if self._decoded is _UNREAD:
            self._decoded = decode_args(self.raw_args)
        decoded: tuple[Any, str | None] = self._decoded
        return decoded

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


@dataclass(slots=True)
class StateChange:
    key: str
    before: Any
    after: Any


Step = Message | ToolCall | StateChange


@dataclass
class Run:
    """One trial: steps in order, the recorded final state (None when the format has none), the duration."""

    steps: list[Step] = field(default_factory=list)
    final_state: dict[str, Any] | None = None
    duration_ms: float | None = None

    @cached_property
    def calls(self) -> list[ToolCall]:
        return [step for step in self.steps if isinstance(step, ToolCall)]

    @cached_property
    def _numbers(self) -> dict[int, int]:
        return {id(call): number for number, call in enumerate(self.calls, 1)}

    def call_number(self, call: ToolCall) -> int:
        """The call's place among the run's calls, from 1 (by identity: two equal calls have their own numbers)."""
        return self._numbers[id(call)]

    @cached_property
    def assistant_texts(self) -> list[str]:
        return [s.text for s in self.steps if isinstance(s, Message) and s.role == "assistant" and s.text]

    @property
    def answer(self) -> str:
        """The last assistant message with text; "" when the agent never wrote one."""
        return self.assistant_texts[-1] if self.assistant_texts else ""

    @cached_property
    def turns(self) -> int:
        """Assistant messages, with or without text (a message that only calls tools is a turn too)."""
        return sum(1 for s in self.steps if isinstance(s, Message) and s.role == "assistant")

    @cached_property
    def state_changes(self) -> list[StateChange]:
        return [step for step in self.steps if isinstance(step, StateChange)]


def decode_args(raw: Any) -> tuple[Any, str | None]:
    """Tool-call arguments as recorded: a JSON string (which the model may have got wrong) or a decoded value.
    Returns (args, None), or (None, why) when the string is not JSON: that call's arguments are invalid, the file
    is still fine."""
    if not isinstance(raw, str):
        return raw, None
    if not raw.strip():
        return {}, None  # some SDKs record no arguments as ""
    try:
        return values.loads(raw), None
    except (json.JSONDecodeError, values.BadNumber, RecursionError, UnicodeError) as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        return None, f"arguments are not valid JSON ({reason}): {values.excerpt(raw)!r}"


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
