"""The run formats an agent suite reads, one adapter module each, and the one way a run file is loaded.

An adapter is a module with `NAME`, `detect(data) -> bool` (does this decoded JSON look like mine?),
`resembles(data) -> bool` (looser: was a file that no adapter detects meant to be mine? then my error names what
is wrong with it; a file only resembled is never read as a run) and `read(data) -> Run` (raising TraceInvalid
with the JSON path). A new format is one module and one entry in `ADAPTERS` and in `RESEMBLED`; `auto` tries
them in order. A file of several JSON documents, one a line (JSON Lines), is read only as OTLP (`otlp` or
`auto`): that adapter gets them as a `JsonLines`.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from diagbot.core import values
from diagbot.core.fs import FileProblem, read_bounded
from diagbot.core.regex import Regex
from diagbot.core.text import shows_something, unplain_name
from diagbot.kinds.agent.formats import native, openai_chat, openai_responses, otlp
from diagbot.kinds.agent.formats.common import (
    DECODE_ERRORS,
    MAX_JSON_VALUES,
    JsonLines,
    count_json,
    counting_compared,
    json_problem,
)
from diagbot.kinds.agent.run import MAX_ARG_VALUES, MAX_STEPS, Message, Run, ToolCall, TraceInvalid

# `auto` asks each in this order: the Responses check comes before chat's, whose items also carry `role`.
ADAPTERS: dict[str, ModuleType] = {module.NAME: module for module in (native, openai_responses, openai_chat, otlp)}
# which one a file that none detects was meant to be: the formats whose own key (`output`, `messages`,
# `resourceSpans`) is there before the native format's `format` or `steps`, which any format could hold
RESEMBLED = (openai_responses, openai_chat, otlp, native)
AUTO = "auto"
FORMAT_NAMES = (AUTO, *ADAPTERS)
MAX_PROBLEM_CHARS = 2_000
"""Characters of a problem's JSON path, and of its message, kept: both quote the run (a key, an id), and a trial's
failure lands in the report, the comment and the next run's baseline."""


EXPECTED = f"expected one of {', '.join(ADAPTERS)} (see docs/agent.md)"
UNKNOWN_FORMAT = f"not a run format diagbot knows; {EXPECTED}"
# the top-level keys that hold each format's run; a file with those of two would be read as one, the other unread
_RUN_KEYS = (
    ("messages", openai_chat.NAME),
    ("output", openai_responses.NAME),
    ("steps", native.NAME),
    ("resourceSpans", otlp.NAME),
)


class TraceMissing(Exception):
    """No run was recorded for the case."""


def parse_run(data: bytes, fmt: str) -> Run:
    """A run from a file's bytes in the given format (or detected); raises TraceInvalid naming the JSON path. A
    leading UTF-8 byte-order mark, which some editors write, is skipped."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return _parse(data, fmt)
    except TraceInvalid as exc:
        hint = _exporter_hint(data, exc) if fmt in (AUTO, otlp.NAME) else ""
        if not hint and fmt in (AUTO, openai_responses.NAME) and _RESPONSE_OBJECT.search(data[:_SDK_PREFIX]):
            hint = RESPONSES_HINT if data[:_SDK_PREFIX].lstrip()[:1] == b"[" else ""
        if not hint and fmt in (AUTO, openai_chat.NAME):
            hint = _chat_hint(data)
        if not hint and _wide(data):
            hint = WIDE_HINT
        if not hint:
            raise
        raise TraceInvalid(exc.path, exc.message + hint) from None


PROTOBUF_HINT = (
    " (this looks like binary protobuf OTLP, as an OTLP/HTTP or gRPC exporter sends it; diagbot reads OTLP/JSON: "
    "see docs/agent.md, 'Getting such a file')"
)
SDK_SPAN_HINT = (
    " (this is the OpenTelemetry SDK's own span JSON, as ConsoleSpanExporter or span.to_json() writes it, not "
    "OTLP/JSON; export with an OTLP/JSON file exporter instead: see docs/agent.md, 'Getting such a file')"
)


_SDK_SPAN = re.compile(rb'"context":\s*\{\s*"trace_id":\s*"0x[0-9a-f]{32}",\s*"span_id":\s*"0x[0-9a-f]{16}"')
_SDK_PREFIX = 64 * 1024  # bytes of a refused file looked at for the SDK's span JSON: never the whole file again


SNAKE_CASE_HINT = (
    " (this is OTLP with protobuf's own field names, as MessageToDict or MessageToJson write it with "
    "preserving_proto_field_name=True; OTLP/JSON names its fields in lowerCamelCase (resourceSpans, scopeSpans, "
    "traceId): write it without that option)"
)
RESPONSES_HINT = (
    " (this is a list of whole responses, one per request; a run is one conversation: its items in one object's "
    "input and output, each item once: see docs/agent.md, openai-responses)"
)
_JSON_START = b"{[ \t\r\n"


def _wide(data: bytes) -> bool:
    """Whether the file looks like UTF-16 or UTF-32 JSON: a byte-order mark, or a JSON start beside zero bytes."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] == b"\x00\x00\xfe\xff":
        return True
    first, second = data[:1], data[1:2]
    return (first != b"" and first in _JSON_START and second == b"\x00") or (
        first == b"\x00" and (second in _JSON_START or data[1:3] == b"\x00\x00") and second != b""
    )


COMPLETION_HINT = (
    " (this is a chat completion response, the model's one answer, not a run: record the conversation, the "
    "request's messages with the response's choices[0].message appended, as a JSON array or {\"messages\": [...]})"
)
CHAT_LINES_HINT = (
    " (this looks like chat messages one a line, JSON Lines, which diagbot reads only as OTLP: write the messages "
    'as one JSON array, or {"messages": [...]})'
)
_COMPLETION = re.compile(rb'^\s*\{.{0,4096}?"choices"\s*:\s*\[', re.DOTALL)  # within its first 4 KB


def _chat_hint(data: bytes) -> str:
    """What a file chat exports hold instead of a run: a completion response (`choices`), or messages one a line."""
    head = data[:_SDK_PREFIX]
    if not any(f'"{key}"'.encode() in head for key, _ in _RUN_KEYS) and _COMPLETION.search(head):
        return COMPLETION_HINT  # no format's own key: the `choices` are all there is
    first, _, rest = head.partition(b"\n")
    try:
        message = orjson.loads(first)
    except orjson.JSONDecodeError:
        return ""
    said = isinstance(message, dict) and isinstance(message.get("role"), str)
    return CHAT_LINES_HINT if said and rest.lstrip()[:1] == b"{" else ""


WIDE_HINT = " (it looks like UTF-16 or UTF-32 text, as Windows PowerShell's > and Out-File write; JSON is UTF-8)"
_SNAKE_CASE = re.compile(rb'"(?:resource_spans|scope_spans)"\s*:')
_RESPONSE_OBJECT = re.compile(rb'"object"\s*:\s*"response"')


def _exporter_hint(data: bytes, exc: TraceInvalid) -> str:
    """What an exporter wrote instead of OTLP/JSON, when the file is one of those: the SDK's console JSON, the
    protobuf message's own field names, or the binary protobuf request (field 1, length-delimited, holding a
    resource or its scope spans)."""
    if _sdk_span_json(data):
        return SDK_SPAN_HINT
    if _SNAKE_CASE.search(data[:_SDK_PREFIX]):
        return SNAKE_CASE_HINT
    protobuf = data[:1] == b"\n" and any(byte in (0x0A, 0x12) for byte in data[2:8])
    return PROTOBUF_HINT if protobuf and exc.message.startswith("not UTF-8") else ""


def _sdk_span_json(data: bytes) -> bool:
    """Whether the file starts with a span as the Python SDK writes it to the console: `{"name": ..., "context":
    {"trace_id": "0x...", "span_id": "0x..."}, ...}`, one after another (so not one JSON document), or a JSON array
    of such spans (`[span.to_json() ...]` collected by a script)."""
    head = data[:_SDK_PREFIX]
    start = head.lstrip()
    if start[:1] == b"[":
        start = start[1:].lstrip()
    return start[:1] == b"{" and _SDK_SPAN.search(head) is not None


def _parse(data: bytes, fmt: str) -> Run:
    if len(data) > 2 * MAX_JSON_VALUES:  # a shorter file cannot hold more values
        count_json(data, "")
    try:
        decoded = orjson.loads(data)  # the common case; orjson refuses lone surrogates and NaN
    except orjson.JSONDecodeError:
        decoded = _decode_slowly(data, fmt)
    else:
        decoded = _exact(data, decoded, "")
    if isinstance(decoded, dict):  # before any format reads it
        _one_run(decoded)
    elif isinstance(decoded, JsonLines):  # each line as a file of one document is held to it
        for line, document in decoded.documents:
            if isinstance(document, dict):
                _one_run(document, f"line {line}: $")
    guessed = False  # under auto: no adapter detected the file; the one it resembles says what is wrong with it
    if fmt == AUTO:
        adapter = next((a for a in ADAPTERS.values() if a.detect(decoded)), None)
        if adapter is None:
            adapter = next((a for a in RESEMBLED if a.resembles(decoded)), None)
            guessed = True
        if adapter is None:
            raise TraceInvalid("$", UNKNOWN_FORMAT)
    else:
        adapter = ADAPTERS[fmt]
    try:
        with counting_compared():
            run: Run = adapter.read(decoded)
    except TraceInvalid as exc:  # its path and message quote the run: cut and escaped, for the report and the log
        path, message = values.one_line(exc.path, MAX_PROBLEM_CHARS), values.one_line(exc.message, MAX_PROBLEM_CHARS)
        message += f" (read as {adapter.NAME}, the format it resembles)" if guessed else _format_hint(decoded, fmt)
        if (path, message) == (exc.path, exc.message):
            raise
        raise TraceInvalid(path, message) from None
    if guessed:  # it reads, but is not shaped as that format's files are: never judged as a run
        raise TraceInvalid(
            "$", f"not a run format diagbot knows (closest: {adapter.NAME}, but not in its shape); {EXPECTED}"
        )
    if run.final_state is None and not run.unrecorded and not any(_by_the_agent(step) for step in run.steps):
        raise TraceInvalid("$", NOTHING_DONE)
    for n, call in enumerate(run.calls, 1):
        said = call.result_is_error if call.has_result and not call.failed else False  # MCP's `isError: true`
        if said is None:  # read as a success, a failed call would count as done
            raise TraceInvalid(
                "$", f"tool call {n} (in the run's order) records a result that may say the call failed (isError) "
                f"but is not read exactly (JSON text of more than {MAX_ARG_VALUES:,} values, or repeating a key): "
                "record the result once, as plain JSON of its values"
            )  # fmt: skip
        call.failed = call.failed or said
        if not call.tool.strip():  # a call of "" fits no check that names a tool: not even tool_not_called
            raise TraceInvalid("$", f"tool call {n} (in the run's order) has no tool name; record the name called")
        why = unplain_name(call.tool)
        if why:  # `refund_submit\u200b` fits no check of refund_submit: not even tool_not_called
            named = values.one_line(call.tool, 100)
            raise TraceInvalid(
                "$", f"tool call {n} (in the run's order) is named '{named}', which {why}; no tool is named so, and no "
                "check of the tool it looks like would see the call: fix the agent or the recording that wrote the name"
            )  # fmt: skip
    return run


NOTHING_DONE = (
    "the run records nothing the agent did (no assistant text, tool call, state change, retrieval or final "
    "state); a recording that lost the agent's part would pass every check of what must not happen: record the "
    "whole run"
)


def _by_the_agent(step: Any) -> bool:
    """A step that shows the agent acting: any but a message, or an assistant message that says something (a blank
    one says nothing, as the answer reads it)."""
    return not isinstance(step, Message) or (step.role == "assistant" and shows_something(step.text))


def _one_run(top: dict[str, Any], root: str = "$") -> None:
    """A file records one run in one format: the keys of two formats, or a chat response's `choices` beside the
    messages, would leave one part unread (and a call in it unseen), whatever format reads it."""
    held = [f"{key} ({name})" for key, name in _RUN_KEYS if key in top]
    if isinstance(top.get("input"), list) and "output" not in top:
        held.append("input (openai-responses)")
    if len(held) > 1:
        raise TraceInvalid(
            root, f"holds {' and '.join(held)}: which is the run is unknown; a file records one run in one format"
        )
    if "messages" in top and "choices" in top:
        raise TraceInvalid(
            f"{root}.choices",
            "a chat response's choices beside the messages would go unread; append the chosen "
            "message (choices[0].message) to messages",
        )


def _format_hint(decoded: Any, fmt: str) -> str:
    """For a file the suite's forced `trace-format` cannot read: the format it looks like, when another adapter
    recognises it (an openai-chat export in an `otlp` suite fails with "expected an object", which alone does not
    say that the format is the problem)."""
    if fmt == AUTO or isinstance(decoded, JsonLines):
        return ""
    other = next((name for name, a in ADAPTERS.items() if a.detect(decoded)), None)  # what `auto` would pick
    if other is None or other == fmt:
        return ""
    return f" (the file looks like {other}, but the suite's trace-format is {fmt}; set trace-format: {other} or auto)"


def _decode_slowly(data: bytes, fmt: str, where: str = "") -> Any:
    """What orjson refused, read again by `values.loads` for its rules and its messages. A lone surrogate is a
    run's text to show, not a reason to refuse the file. A file whose first document is followed by more is read
    as JSON Lines where the format may be OTLP; `where` names the line of one."""
    if not data.strip():
        raise TraceInvalid("", "the run file is empty")
    try:
        decoded = values.loads(data)
    except DECODE_ERRORS as exc:
        problem = json_problem(exc, where, "nested too deeply to be a run")
        if isinstance(exc, json.JSONDecodeError) and exc.msg == "Extra data" and not where and fmt in (AUTO, otlp.NAME):
            return _json_lines(data, fmt, problem)
        raise problem from None
    decoded = _exact(data, decoded, where)  # a repeated key refused
    return values.replace_surrogates(decoded) if values.escapes_surrogates(data) else decoded


def _exact(data: bytes, decoded: Any, where: str) -> Any:
    """orjson's reading of a run file (or of one of its JSON Lines) when it is exact, else the exact one. A file that
    repeats a key in an object is refused: JSON readers keep the last value, so a second `"messages"` (or
    `"content"`, or a call's `"name"`) would hide the first one's conversation, call or text from every check. An
    integer past 64 bits is read whole (orjson reads it as a float)."""
    try:
        return values.exact(data, decoded)
    except DECODE_ERRORS as exc:
        raise json_problem(exc, where, "nested too deeply to be a run") from None


def _json_lines(data: bytes, fmt: str, otherwise: TraceInvalid) -> JsonLines:
    """Each non-blank line one JSON document (at most MAX_STEPS of them), for the OTLP adapter. Under `auto`, a
    file whose first line is no OTLP request is not JSON Lines but broken JSON: `otherwise` says how."""
    documents: list[tuple[int, Any]] = []
    for number, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        if len(documents) == MAX_STEPS:
            raise TraceInvalid(f"line {number}", f"more than {MAX_STEPS:,} JSON Lines; diagbot reads at most that many")
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError:
            if fmt == AUTO and not documents:
                raise otherwise from None
            document = _decode_slowly(line, fmt, f"line {number}")
        else:
            document = _exact(line, document, f"line {number}")
        documents.append((number, document))
        if fmt == AUTO and len(documents) == 1 and not otlp.detect(document):
            raise otherwise
    return JsonLines(documents)


def _says_error(call: ToolCall, pattern: Regex) -> bool:
    """The suite's tool-error-pattern finds the result's text: as recorded (its JSON, for a structured result), or
    the text of its parts, one a line."""
    if pattern.search_text(call.result_text):
        return True
    parts = call.result_parts_text
    return parts is not None and pattern.search_text(parts)


def load_run(path: str | Path, fmt: str, max_bytes: int, error_pattern: Regex | None) -> Run:
    """Read one trial's file; a call whose result text matches `error_pattern` is marked failed. The whole result is
    searched, however long (the pattern is RE2, linear in the text, and the file is bounded): an error said after a
    cut would leave the call successful."""
    try:
        data = read_bounded(path, max_bytes)
    except FileProblem as problem:
        if problem.missing:
            raise TraceMissing() from None
        hint = " (raise max-fixture-bytes)" if problem.too_big else ""
        raise TraceInvalid("", f"the run file {problem.message}{hint}") from None
    run = parse_run(data, fmt)
    if error_pattern is not None:  # a result nested too deeply to write as text is caught by the caller
        for call in run.calls:
            if not call.failed and call.has_result and _says_error(call, error_pattern):
                call.failed = True
    return run
