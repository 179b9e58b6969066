"""OTLP/JSON: the spans of one agent run as an OpenTelemetry exporter or the Collector's file exporter writes them
(`{resourceSpans: [{scopeSpans: [{spans: [...]}]}]}`, or JSON Lines of such requests), in the OpenTelemetry GenAI
or the OpenInference conventions (each span read by the one whose attributes it carries).

The OTLP rules: ids are hex, enums integers (`status.code` 2 is ERROR), 64-bit integers decimal strings,
unknown fields ignored, but for one that holds a list or an object beside a span's or a list of spans' own fields
(a misspelt `spanz` or `attributez`: what it holds would go unseen). One file is one run, so spans of two traces
are refused, naming them; spans are taken in start-time order.

One conversation from many spans: every model call records the history so far, so the run's messages are those
of the latest inference span that records any (its input messages, then its output messages), or, when no model
call does, of the latest agent span that records an output message (some frameworks record it there alone). Tool
spans attach to that conversation's calls by call id, in order, adding status, duration and what the messages left
out (result, arguments); a tool span whose call is in no message, and every retrieval, is placed by its start time.
The history's steps are dated by the earlier model calls' outputs, so such a span goes before what was
written after it; a conversation recorded in parts (each model call only what is new) makes the run's messages
unknown, and so does a latest model call given only the user's messages that an earlier one answered otherwise (a
title written after the answer, or a guardrail before it: which is the agent's is not known). With no messages
recorded (content capture is opt-in) the run is its tool spans and retrievals in time order. The agent spans
(`invoke_agent`, OpenInference `AGENT`) give the duration (first start to last end, or of every span read when
those reach further), and the `diagbot.final_state` attribute (an object, or its JSON text) of the one that ended
last the final state, for agents that record it.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import json
import re
from collections import deque
from collections.abc import Callable
from types import ModuleType
from typing import Any, NamedTuple

from diagbot.core.text import shows_something
from diagbot.core.values import excerpt, type_name
from diagbot.kinds.agent.formats import openinference, otel_genai
from diagbot.kinds.agent.formats.common import MISSING, JsonLines, Quota, items, obj, text
from diagbot.kinds.agent.formats.otel_spans import (
    AGENT,
    INFERENCE,
    RETRIEVAL,
    TOOL,
    Said,
    Span,
    ToolSpan,
    int64,
    repeated_key,
)
from diagbot.kinds.agent.run import MAX_STEPS, Message, Run, Step, ToolCall, TraceInvalid, decode_args, result_is_error

NAME = "otlp"
FINAL_STATE = "diagbot.final_state"
_IDS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}  # hex digits
_HEX = re.compile(r"[0-9a-fA-F]*")
_SHOWN_TRACES = 5

Roles = list[tuple[Span, ModuleType, str | None]]  # each span, its convention, what it is to the run


def detect(data: Any) -> bool:
    if isinstance(data, JsonLines):
        data = data.documents[0][1]
    return isinstance(data, dict) and isinstance(data.get("resourceSpans"), list)


def resembles(data: Any) -> bool:
    """Looser than `detect`: an export request whose `resourceSpans` is not a list."""
    if isinstance(data, JsonLines):
        data = data.documents[0][1]
    return isinstance(data, dict) and "resourceSpans" in data


def read(data: Any) -> Run:
    requests = data.documents if isinstance(data, JsonLines) else [(0, data)]
    spans: list[Span] = []
    quota = Quota()  # the JSON text of all the run's attributes, together
    for line, request in requests:
        _request(request, f"line {line}: $" if line else "$", spans, quota)
    if not spans:
        raise TraceInvalid("$", "holds no spans")
    traces = list(dict.fromkeys(span.trace_id for span in spans))
    if len(traces) > 1:
        more = len(traces) - _SHOWN_TRACES
        shown = ", ".join(traces[:_SHOWN_TRACES]) + (f" and {more} more" if more > 0 else "")
        raise TraceInvalid(
            "$", f"holds spans of {len(traces)} traces ({shown}); a file is one run: export each trace to a file"
        )
    spans.sort(key=lambda span: (span.start, span.order))
    roles: Roles = []
    for span in _once(spans):
        convention = openinference if openinference.uses(span) else otel_genai
        role = convention.role(span)
        _no_unread_call(span, convention, role)
        roles.append((span, convention, role))
    if not any(role for _, _, role in roles):
        raise TraceInvalid(
            "$", f"holds {len(roles):,} spans, none of which diagbot reads (a model call, a tool call, an agent or "
            "a retrieval of the OpenTelemetry GenAI or OpenInference conventions): nothing of the run could be "
            "checked"
        )  # fmt: skip
    return _run(roles)


_TOOL_NAME = {otel_genai: "gen_ai.tool.name", openinference: "tool.name"}  # where each reads a tool span's name
_CONVENTION = {otel_genai: "OpenTelemetry GenAI", openinference: "OpenInference"}


def _no_unread_call(span: Span, convention: Any, role: str | None) -> None:
    """A call recorded where the span is not read for it is refused: a tool named by the other convention's key, or
    on a span not read as a tool (an agent, a retrieval, an embedding), an OpenLLMetry tool span, output messages
    that call tools in the other convention's keys. Skipped, the call would go unseen."""
    read = _TOOL_NAME[convention] if role == TOOL else None
    for key in (*_TOOL_NAME.values(), "tool_call.function.name"):  # the last: OpenInference's call on its span
        if key != read and span.has(key) and (read is None or span.text(key) != span.text(read)):
            raise TraceInvalid(
                span.where(key),
                f"names a tool, but the span is read as {role or 'nothing diagbot checks'} "
                f"({_CONVENTION[convention]}), so its call would go unseen; record each call on a tool span of one "
                "convention",
            )
    if role != TOOL:  # a call's id, arguments or result on a span not read as a tool: its call would go unseen
        recorded = next((key for key in span.attributes if key.startswith(_CALL_PREFIX)), None)
        if recorded is not None:
            raise TraceInvalid(
                span.where(recorded),
                f"records a tool call, but the span is read as {role or 'nothing diagbot checks'} "
                f"({_CONVENTION[convention]}), so its call would go unseen; record each call on a tool span "
                "(execute_tool, naming gen_ai.tool.name)",
            )
    for event in span.events:
        if event.name not in otel_genai.READ_EVENTS:
            recorded = next((key for key in event.attributes if _records_call(key)), None)
            if recorded is not None:
                raise TraceInvalid(event.where(recorded), _UNREAD_EVENT.format(key=recorded[:60]))
            recorded = next((key for key in event.attributes if key in otel_genai.MESSAGE_KEYS), None)
            if recorded is not None:
                raise TraceInvalid(event.where(recorded), _UNREAD_MESSAGES.format(event=event.name[:80]))
    if role != TOOL and role != INFERENCE:
        recorded = next((key for key in span.attributes if key.startswith(_FOREIGN_CALLS)), None)
        if recorded is not None:
            raise TraceInvalid(
                span.where(recorded),
                f"records a tool call in the Vercel AI SDK's keys, which diagbot does not read, on a span read as "
                f"{role or 'nothing'}, so its call would go unseen; export the trace with the OpenTelemetry GenAI "
                "conventions (execute_tool spans naming gen_ai.tool.name)",
            )
    if (span.text("traceloop.span.kind") or "").strip().casefold() == "tool":  # `TOOL` is one too
        raise TraceInvalid(
            span.where("traceloop.span.kind"),
            "an OpenLLMetry tool span, which diagbot does not read, so its call would go unseen; export the trace "
            "with the OpenTelemetry GenAI conventions (execute_tool spans naming gen_ai.tool.name)",
        )
    other = otel_genai if convention is openinference else openinference
    if other.records_messages(span) and other.output_calls(span):
        raise TraceInvalid(
            span.path,
            f"records output messages that call tools in {_CONVENTION[other]}'s keys, but the span is read as "
            f"{_CONVENTION[convention]}'s, so those calls would go unseen; record a span in one convention",
        )


def _once(spans: list[Span]) -> list[Span]:
    """Each span once: an exporter that retries, or batches written one after another, may hold a span twice, and
    its calls would be counted twice. Two spans of one id that differ are refused: which one happened is not known."""
    first: dict[str, Span] = {}
    kept = []
    for span in spans:
        other = first.setdefault(span.span_id, span)
        if other is span:
            kept.append(span)
        elif (other.name, other.start, other.end, other.error, other.attributes, other.parent_id, _events(other)) != (
            span.name, span.start, span.end, span.error, span.attributes, span.parent_id, _events(span)
        ):  # fmt: skip
            raise TraceInvalid(
                span.path,
                f"has the spanId of {other.path} ({span.span_id}) but other contents; a span id names one span",
            )
    return kept


def _events(span: Span) -> list[tuple[str, int, dict[str, Any]]]:
    """What a span's events record (a choice's text and calls): two copies of a span must agree on them too."""
    return [(event.name, event.start, event.attributes) for event in span.events]


# --- the envelope ------------------------------------------------------------------------------------------------


def _request(request: Any, root: str, spans: list[Span], quota: Quota) -> None:
    top = obj(request, root)
    for r, resource in enumerate(_list(top, "resourceSpans", root)):
        where = f"{root}.resourceSpans[{r}]"
        for s, scope in enumerate(_list(obj(resource, where), "scopeSpans", where)):
            inner = f"{where}.scopeSpans[{s}]"
            for k, raw in enumerate(_list(obj(scope, inner), "spans", inner)):
                path = f"{inner}.spans[{k}]"
                if len(spans) == MAX_STEPS:
                    raise TraceInvalid(path, f"more than {MAX_STEPS:,} spans; diagbot reads at most that many per run")
                spans.append(_span(obj(raw, path), path, len(spans), quota))


_BESIDE = {  # the other fields of each OTLP message whose list of spans `_list` reads
    "resourceSpans": ("schemaUrl",),
    "scopeSpans": ("resource", "schemaUrl"),
    "spans": ("scope", "instrumentationLibrary", "schemaUrl"),
}
_OLD_NAMES = {"scopeSpans": "instrumentationLibrarySpans"}  # OTLP before 0.15 (2021), still written by old exporters


def _list(message: dict[str, Any], key: str, where: str) -> list[Any]:
    """The message's list `key` (absent: empty, as proto3 reads it). A message that holds fields OTLP does not
    have instead (a misspelt `resourceSpan`, another format's `messages`) is refused: its spans would go unseen."""
    old = _OLD_NAMES.get(key)
    if key in message and old in message:
        raise TraceInvalid(
            where, f"holds both {key} and {old} (its name before OTLP 0.15): the spans of one would go unseen; "
            f"write them all under {key}"
        )  # fmt: skip
    stray = [  # beside the list too, what could hold spans (`spanz` next to `spans`); absent, anything else
        str(k) for k, v in message.items()
        if k != key and k != old and k not in _BESIDE[key] and (key not in message or isinstance(v, list | dict))
    ]  # fmt: skip
    if stray:
        shown = ", ".join(repr(k[:40]) for k in stray[:3])
        held = f"holds {shown} beside {key}" if key in message or old in message else f"holds no {key}, but {shown}"
        raise TraceInvalid(
            where, f"{held}, which OTLP/JSON does not have; the spans of a misspelt {key} would go unseen"
        )
    if key not in message and old in message:
        return items(message[old], f"{where}.{old}")
    return items(message.get(key, []), f"{where}.{key}")


_SPAN_FIELDS = frozenset((
    "traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind", "startTimeUnixNano",
    "endTimeUnixNano", "attributes", "droppedAttributesCount", "events", "droppedEventsCount", "links",
    "droppedLinksCount", "status",
))  # fmt: skip  # OTLP/JSON's Span: a misspelt `attributes` or `events` would hide a call's record
_CALL_KEYS = ("gen_ai.tool.name", "tool.name", "tool_call.function.name")  # what names a call, in either convention
_CALL_PREFIX = "gen_ai.tool.call."  # its id, arguments and result


def _records_call(key: str) -> bool:
    return key in _CALL_KEYS or key.startswith(_CALL_PREFIX)


def _span(span: dict[str, Any], path: str, order: int, quota: Quota) -> Span:
    if not span.keys() <= _SPAN_FIELDS:  # a field OTLP may add later holds a scalar; a list or object may hide calls
        held = [str(k) for k, v in span.items() if k not in _SPAN_FIELDS and isinstance(v, list | dict)]
        if held:
            raise TraceInvalid(
                path, f"holds {', '.join(repr(k[:40]) for k in held[:3])}, which an OTLP/JSON span does not have; "
                "what a misspelt field records would go unseen (export with an OTLP/JSON exporter)"
            )  # fmt: skip
    status = obj(span.get("status", {}), f"{path}.status")
    code = status.get("code", 0)
    if isinstance(code, bool) or not isinstance(code, int):
        found = repr(code[:40]) if isinstance(code, str) else type_name(code)
        raise TraceInvalid(
            f"{path}.status.code", f"expected an integer (OTLP/JSON writes enums as numbers; 2 is ERROR), found {found}"
        )
    attributes = _attributes(span, path)
    trace_id = _id(span.get("traceId"), "traceId", path)
    span_id = _id(span.get("spanId"), "spanId", path)
    parent_id = _id(span["parentSpanId"], "parentSpanId", path) if span.get("parentSpanId") else None
    name = span.get("name", "")
    events = []
    for i, raw in enumerate(items(span.get("events", []), f"{path}.events")):
        where = f"{path}.events[{i}]"
        event = obj(raw, where)
        event_name = text(event.get("name", ""), f"{where}.name")
        if not event_name.startswith("gen_ai."):  # exceptions, logs: nothing the conventions read, and no call
            _no_call_in(event, where)
            continue
        at = int64(event.get("timeUnixNano", "0"), f"{where}.timeUnixNano")
        events.append(Span(where, "", event_name, at, at, False, i, _attributes(event, where), quota))
    events.sort(key=lambda event: (event.start, event.order))
    return Span(
        path=path,
        trace_id=trace_id,
        name=text(name, f"{path}.name"),
        start=int64(span.get("startTimeUnixNano", "0"), f"{path}.startTimeUnixNano"),
        end=int64(span.get("endTimeUnixNano", "0"), f"{path}.endTimeUnixNano"),
        error=code == 2,
        order=order,
        attributes=attributes,
        quota=quota,
        events=events,
        span_id=span_id,
        parent_id=parent_id,
    )


def _no_call_in(event: dict[str, Any], where: str) -> None:
    """An event diagbot does not read that records a tool call (its name, id or arguments) is refused: skipped,
    the call would go unseen."""
    attributes = event.get("attributes")
    for i, raw in enumerate(attributes[:MAX_STEPS] if isinstance(attributes, list) else ()):  # read leniently:
        key = raw.get("key") if isinstance(raw, dict) else None  # the event is skipped unless it records a call
        if isinstance(key, str) and _records_call(key):
            raise TraceInvalid(f"{where}.attributes[{i}]", _UNREAD_EVENT.format(key=key[:60]))
        if isinstance(key, str) and key in otel_genai.MESSAGE_KEYS:  # or messages
            name = event.get("name")
            raise TraceInvalid(
                f"{where}.attributes[{i}]", _UNREAD_MESSAGES.format(event=str(name)[:80] if name else "unnamed")
            )


_FOREIGN_CALLS = ("ai.toolCall.", "ai.response.toolCalls")
"""Keys that record a tool call in an instrumentation's own vocabulary, which diagbot does not read: the Vercel AI
SDK's tool-call span and a model call's calls (its spans say `ai.*`, beside any `gen_ai.*` they also carry)."""


_UNREAD_MESSAGES = (
    "an event diagbot does not read ({event}) records messages, whose calls and texts would go unseen; record "
    "them in the span's gen_ai.input.messages and gen_ai.output.messages"
)
_UNREAD_EVENT = (
    "an event diagbot does not read records a tool call ({key}), which would go unseen; record each call on a "
    "tool span (execute_tool, naming gen_ai.tool.name)"
)


def _attributes(message: dict[str, Any], path: str) -> dict[str, Any]:
    """A span's or an event's attributes: key -> the AnyValue as recorded (decoded when a convention asks)."""
    found: dict[str, Any] = {}
    for i, raw in enumerate(items(message.get("attributes", []), f"{path}.attributes")):
        attribute = obj(raw, f"{path}.attributes[{i}]")
        key = text(attribute.get("key", MISSING), f"{path}.attributes[{i}].key")
        if key in found:  # a reader keeps one value: a second output or tool name would hide the first
            raise TraceInvalid(f"{path}.attributes[{i}].key", repeated_key(key))
        found[key] = attribute.get("value")
    return found


def _id(value: Any, field: str, path: str) -> str:
    digits = _IDS[field]
    if not isinstance(value, str) or len(value) != digits or not _HEX.fullmatch(value):
        found = repr(value[:40]) if isinstance(value, str) else type_name(value)
        raise TraceInvalid(
            f"{path}.{field}", f"expected {digits} hex digits (OTLP/JSON writes ids in hex, not base64), found {found}"
        )
    return value.lower()


# --- one conversation from many spans ----------------------------------------------------------------------------


def _run(roles: Roles) -> Run:
    agents = [span for span, _, role in roles if role == AGENT]  # invoke_agent, invoke_workflow, one per turn or per
    # agent handed to: the run lasts from the first one's start to the last one's end, and its final state is the
    # one recorded by the agent span that ended last (an outer workflow may not record one)
    for agent in agents:
        agent.duration_ms  # noqa: B018  # refuses a span that ends before it starts
    # from the first start to the last end of the spans read that have their times, the agent spans among them:
    # an agent span that ended early is not the whole run, and one without its times did not start in 1970
    timed = [span for span, _, role in roles if role is not None and span.start != 0 and span.start <= span.end]
    timed = timed or agents
    duration = (max(s.end for s in timed) - min(s.start for s in timed)) / 1e6 if agents else None
    stated = max((a for a in agents if a.has(FINAL_STATE)), key=lambda a: a.end, default=None)
    run = Run(duration_ms=duration, final_state=_final_state(stated))
    # The latest model call that records a message (one whose message lists are empty records none); else the
    # latest agent span that records an output, for frameworks that record the conversation on `invoke_agent` alone.
    latest = _latest(roles, INFERENCE, judges=True) or _latest(roles, AGENT, with_output=True)
    steps: list[Step] = []
    anchors: list[int | None] = []  # when a step is known to have started: where the others are placed
    owners: dict[int, int] = {}  # a call's step -> the step of the message that made it
    message_of: list[int] = []  # each step of the latest call's history: the index of its message there
    history: list[Said] = []
    if latest is not None:
        span, (history, said_out) = latest
        waiting = _Waiting()
        resumed = _opens_with_result(history)  # results of calls made before what the file holds
        for index, message in enumerate(history):
            if resumed and not steps and message.role == "tool":
                continue  # answering a call the file does not hold: that part of the run is not known
            _conversation([message], steps, waiting, owners)
            message_of += [index] * (len(steps) - len(message_of))
        anchors = [None] * len(steps)
        _conversation(said_out, steps, waiting, owners)
        anchors += [span.start] * (len(steps) - len(anchors))  # the output came after the call started
        if resumed:
            run.unrecorded = (
                f"the latest model call's history ({span.path}) opens with a tool's result, the middle of a "
                "conversation (resumed, or recorded in parts), so the run's messages and turns are not known; "
                "record with each model call the whole conversation it continues"
            )
        elif not said_out:
            run.unrecorded = (
                f"the latest model call ({span.path}) records its input messages but not its output, so the "
                "answer and the turns are not known (record the output messages too)"
            )
    else:  # an agent's run has model calls: none, or none with its messages, is a run without them
        run.unrecorded = (
            "the run records no model call with its messages, so its text and turns are not known (export the "
            "model-call spans, with the instrumentation's message content capture on)"
        )
    role_of = next(role for span, _, role in roles if span is latest[0]) if latest is not None else None
    from_agents = role_of == AGENT  # the conversation is the agent spans': no model call records messages
    earlier = _earlier_outputs(roles, latest[0], role_of) if latest is not None else []
    writers = [output for output in earlier if output.role != AGENT or from_agents]
    # when each step was made: only a tool span without a call id, or a step to place among the history, asks
    dates = functools.cache(lambda: _made(history, message_of, writers, len(steps), latest[0].start if latest else 0))
    later = _attach(roles, steps, anchors, owners, dates)
    if latest is not None:
        parents = {span.span_id: span.parent_id for span, _, _ in roles}
        unseen = _unseen_calls(earlier, steps, later, parents, from_agents, latest[0])
        later = sorted(later + unseen, key=lambda entry: entry[0])
        if later:  # steps to place among the history: it is dated for that
            for step, when in enumerate(dates()):
                if anchors[step] is None:
                    anchors[step] = when
        run.unrecorded = (
            run.unrecorded or _left_out(latest, earlier) or _answered_apart(latest, earlier) or _after_reply(latest)
        )
    seen = None
    if latest is not None and any(isinstance(step, ToolCall) for _, step in later):
        seen = _seen(roles, latest[0], role_of, history, message_of, len(steps))
    run.steps = _merge(steps, anchors, later, seen)
    if len(run.steps) > MAX_STEPS:
        raise TraceInvalid("$", f"holds more than {MAX_STEPS:,} steps; diagbot reads at most {MAX_STEPS:,} per run")
    if latest is None and not any(type(step) is ToolCall for step in run.steps):
        raise TraceInvalid("$", CALLS_UNKNOWN)
    return run


CALLS_UNKNOWN = (
    "the run records no model call's messages and no tool span, so whether the agent called a tool is not known "
    "(every check that a tool was not called would pass unseen); export the tool spans, or the model calls with "
    "the instrumentation's message content capture on"
)
"""A run read from its tool spans alone needs one: a model call's finish reason does not tell (a forced tool
choice finishes with `stop`, as Gemini's calls do)."""


class _Output(NamedTuple):
    """An earlier span's output messages, read once for dating the history, finding unseen calls and gaps."""

    span: Span
    convention: ModuleType
    role: str | None
    said: list[Said]


def _earlier_outputs(roles: Roles, latest: Span, role_of: str | None) -> list[_Output]:
    """The output messages of the other spans of the latest one's kind (model calls, or agent spans when no model
    call records messages; a model call passed over as a judge of the answer too) and, when the conversation is the
    model calls', of the agent spans: a framework may record the calls it made on `invoke_agent` alone, beside
    another library's model call that records its messages."""
    found = []
    for span, convention, role in roles:
        if span is latest or not (role == role_of or (role == AGENT and role_of == INFERENCE)):
            continue
        if convention.records_messages(span) and (said := convention.output_messages(span)):
            found.append(_Output(span, convention, role, said))
    return found


def _key(message: Said) -> tuple[Any, ...]:
    """What tells one message from another across the histories that repeat it (spaced as it may be)."""
    return (
        message.role,
        _words(message.text),
        tuple((call.id, call.tool) for call in message.calls),
        tuple(answer[0] for answer in message.answers),
    )


def _made(history: list[Said], message_of: list[int], earlier: list[_Output], size: int, now: int) -> list[int | None]:
    """When each step was made, as far as known: a step of the latest call's output when that call started, and
    one of its history, when the earlier model call whose output it is (the same text and calls, each output
    message taken once, in order) started, else no earlier than the agent's message before it (the user's reply
    to it, a tool's result). A history that only the latest call records (trimmed, or recorded in parts) is dated
    where its messages are recognized. Without this, a tool span or an earlier call's output call was placed after
    the whole history, past a later "yes" it came before."""
    outputs: dict[tuple[Any, ...], list[tuple[int, int]]] = {}  # a message's key -> (earlier call, its message)
    for n, output in enumerate(earlier):
        for m, message in enumerate(output.said):
            if message.role == "assistant":
                outputs.setdefault(_key(message), []).append((n, m))
    made: list[int | None] = [None] * len(message_of) + [now] * (size - len(message_of))
    when: int | None = None
    after = (-1, -1)  # the output message the last dated one was: the next is a later one
    dated = -1
    for step, index in enumerate(message_of):
        message = history[index]
        if index != dated and message.role == "assistant":
            dated = index
            writers = outputs.get(_key(message), [])
            k = bisect.bisect_right(writers, after)
            if k < len(writers):
                after = writers[k]
                when = earlier[after[0]].span.start
        made[step] = when
    return made


def _left_out(latest: tuple[Span, tuple[list[Said], list[Said]]], earlier: list[_Output]) -> str | None:
    """Why the run's messages are not known when it is recorded in parts: each model call records only what is new
    (a Responses call given `previous_response_id`), so the latest call's history lacks what an earlier call wrote,
    and that call's own input opens with a tool's result, as no whole conversation does (nor a guardrail's, a
    router's or a sub-agent's, whose text may well be missing from the history). Read from the latest call alone,
    such a run loses replies and turns, and places calls among the user's messages wrongly."""
    span, (history, said_out) = latest
    held = {_words(m.text) for m in itertools.chain(history, said_out) if m.role == "assistant"}
    looked = 0  # the inputs decoded: each may repeat a long history, and the first few tell
    for output in earlier:
        if output.role == AGENT:
            continue
        wrote = next((m.text for m in output.said if m.role == "assistant" and _words(m.text) not in held), None)
        if not wrote or not wrote.strip() or looked >= _INPUTS_LOOKED_AT:
            continue
        looked += 1
        if _opens_with_result(_inputs(output)):
            return (
                f"the latest model call ({span.path}) does not hold what an earlier model call wrote "
                f"({json.dumps(excerpt(wrote, 60), ensure_ascii=False)}, {output.span.path}), and the model calls "
                "record the conversation in parts, so the run's messages, turns and their order are not known; "
                "record with each model call the whole conversation it continues"
            )
    return None


_INPUTS_LOOKED_AT = 8  # earlier model calls whose text the history lacks, whose inputs are looked at


def _answered_apart(latest: tuple[Span, tuple[list[Said], list[Said]]], earlier: list[_Output]) -> str | None:
    """Why the run's messages are not known when the latest model call is given the user's messages alone (no
    message of the agent's) that an earlier model call was given too and answered with a text the latest does not
    hold: a call after the answer (a title or a summary of the conversation, from the system prompt and the user's
    first message) read as the run, its output replacing the agent's reply, and a guardrail's call before the
    agent's only one looks the same, so which of the two is the agent's is not known."""
    span, (history, said_out) = latest
    if any(m.role == "assistant" for m in history):
        return None  # it continues the agent's conversation
    asked = {_words(m.text) for m in history if m.role == "user" and m.text.strip()}
    if not asked:
        return None
    held = {_words(m.text) for m in said_out if m.role == "assistant"}
    looked = 0
    for output in earlier:  # its calls are the run's all the same (`_unseen_calls`): its text is what is lost
        wrote = next(
            (m.text for m in output.said if m.role == "assistant" and m.text.strip() and _words(m.text) not in held),
            None,
        )
        if output.role == AGENT or wrote is None or looked >= _INPUTS_LOOKED_AT:
            continue
        looked += 1
        if asked <= {_words(m.text) for m in _inputs(output) if m.role == "user"}:
            return (
                f"the latest model call ({span.path}) is given only the user's messages, which an earlier model call "
                f"({output.span.path}) was given too and answered with a text the latest does not hold "
                f"({json.dumps(excerpt(wrote, 60), ensure_ascii=False)}), so which of them is the agent's reply is "
                "not known (a title or summary written after the answer, or a guardrail before it): the run's "
                "messages and turns are not known; leave the model calls that are not the agent's out of the run file"
            )
    return None


def _after_reply(latest: tuple[Span, tuple[list[Said], list[Said]]]) -> str | None:
    """Why the run's messages are not known when the latest model call's input ends with a reply of the agent's:
    the agent's model is called on a user's or a tool's message, so this call either classifies the exchange
    (Llama Guard is given `[user, assistant]` and answers `safe`) or continues a reply cut short, and which of
    them its output is, the agent's answer or a verdict on it, is not known."""
    span, (history, said_out) = latest
    last = next((m for m in reversed(history) if m.role not in ("system", "developer")), None)
    if last is None or last.role != "assistant" or not last.text.strip() or not said_out:
        return None
    return (
        f"the latest model call ({span.path}) is given the conversation up to a reply of the agent's "
        f"({json.dumps(excerpt(last.text, 60), ensure_ascii=False)}) and writes after it: a check of that reply (a "
        "guardrail such as Llama Guard) or a continuation of it, so which text is the agent's answer is not known: "
        "the run's messages and turns are not known; leave the model calls that are not the agent's out of the run "
        "file"
    )


def _words(text: str) -> str:
    """A text as histories are compared: a framework may space a message differently when it repeats it."""
    return " ".join(text.split())


def _opens_with_result(said: list[Said]) -> bool:
    """Whether messages open (after the instructions) with a tool's result: the middle of a conversation."""
    return next((m.role for m in said if m.role not in ("system", "developer")), None) == "tool"


def _inputs(output: _Output) -> list[Said]:
    said = output.convention.conversation(output.span)
    return said[0] if said is not None else []


def _unseen_calls(
    earlier: list[_Output],
    steps: list[Step],
    later: list[tuple[int, Step]],
    parents: dict[str, str | None],
    from_agents: bool,
    latest: Span | None = None,
) -> list[tuple[int, Step]]:
    """The calls earlier model calls (and agent spans) made that the latest one's history leaves out (a framework
    that trims the history, a sub-agent's own model calls, calls recorded on `invoke_agent` alone), with their
    span's start: read from the latest span alone, a forbidden call made earlier would go unseen.

    Each output call is one call: it is a call the conversation or a tool span already holds, of the same id and
    tool, with the same arguments or none recorded on one side (ids repeat across turns, so each is taken once),
    else a tool span's call of its tool recorded without an id; a call so found takes the arguments it lacks (tool
    spans record them only on request). Only the rest are new: a trimmed history that kept a later call of a
    reused id must not hide an earlier one with other arguments. An agent span's output text beside the model
    calls' that the conversation does not hold (an agent that rewrites its model's reply before returning it) is
    what the agent said too, from the span's end: read from the model calls alone, it would go unchecked. Only an
    agent span around the latest model call (`latest`) is the run's agent: a sub-agent, whose span holds only its
    own model calls, answers its caller, not the user. One call recorded by two spans, one the other's ancestor (a
    framework's span around the SDK's own), is one call. When the conversation is the model calls' (not
    `from_agents`), the agent spans' calls are read last, and one that a model call already recorded, or (without
    an id) any held call of its tool with those arguments, is that call, wherever its spans are."""
    held: dict[tuple[str | None, str], list[ToolCall]] = {}
    for step in itertools.chain(steps, (step for _, step in later)):
        if isinstance(step, ToolCall):
            held.setdefault((step.id, step.tool), []).append(step)
    every = {key: list(calls) for key, calls in held.items()}  # what `held` gives up as calls are taken
    every_of: dict[str, list[ToolCall]] = {}  # the same, by tool alone
    for (_, tool), calls in every.items():
        every_of.setdefault(tool, []).extend(calls)
    from_spans = {id(step) for _, step in later}
    same = _SameArgs()
    found: list[tuple[int, Step]] = []
    said = {_words(step.text) for step in steps if type(step) is Message and step.role == "assistant"}
    read: dict[tuple[str | None, str], list[tuple[Span, ToolCall]]] = {}  # model calls' output calls so far
    for output in sorted(earlier, key=lambda output: output.role == AGENT):  # stable: model calls first
        beside = output.role == AGENT and not from_agents  # an agent span's record beside the model calls'
        runs_it = beside and latest is not None and _ancestor(output.span, latest, parents)  # the run's agent
        for message in output.said:
            words = _words(message.text) if runs_it and message.role == "assistant" else ""
            if words and words not in said and shows_something(words):
                said.add(words)
                found.append((output.span.end, Message("assistant", message.text)))
            for call in message.calls:
                key = (call.id, call.tool)
                if beside:
                    recorded = [seen for _, seen in read.get(key, [])] + every.get(key, [])
                    if call.id is None:
                        recorded += every_of.get(call.tool, [])
                    if _first_same(recorded, call, same) is not None:
                        continue
                    found.append((output.span.start, call))
                    continue
                seen = read.setdefault(key, [])
                if _recorded_twice(output.span, call, seen, same, parents):
                    continue
                seen.append((output.span, call))
                taken = _take(held.get(key), call, same)
                if taken is None and call.id is not None:  # a tool span of this tool recorded without an id
                    taken = _take(held.get((None, call.tool)), call, same, from_spans)
                if taken is None:
                    found.append((output.span.start, call))
                elif taken.raw_args is None:
                    taken.raw_args = call.raw_args
    return found


def _recorded_twice(
    span: Span, call: ToolCall, earlier: list[tuple[Span, ToolCall]], same: _SameArgs, parents: dict[str, str | None]
) -> bool:
    """Whether an earlier output call of this id and tool is this one, recorded by a span that is this one's
    ancestor or descendant (two model calls that only overlap in time, parallel sub-agents', are two)."""
    for other, seen in earlier:
        same.charge()
        if same(call, seen) and (_ancestor(span, other, parents) or _ancestor(other, span, parents)):
            return True
    return False


MAX_ANCESTRY = 32  # parents walked up from a span to find another: a framework's span is a few levels up


def _ancestor(one: Span, other: Span, parents: dict[str, str | None]) -> bool:
    """Whether `one` is among `other`'s nearest MAX_ANCESTRY parents (a parent outside `parents` ends the walk; so
    does a cycle, within the bound)."""
    at = other.parent_id
    for _ in range(MAX_ANCESTRY):
        if at is None:
            return False
        if at == one.span_id:
            return True
        at = parents.get(at)
    return False


MAX_MERGE_COMPARISONS = 1_000_000  # pairs of call records compared in one run: a bound on O(n²) with one id


class _SameArgs:
    """Whether two records of a call have the same arguments, or none recorded on one side (the same text, as a
    history repeats it, needs no decoding; each text is decoded once). Counted: a file whose model calls reuse one
    id and tool thousands of times, with other arguments each time, would otherwise compare every pair, for
    minutes; past MAX_MERGE_COMPARISONS the file is refused, never read with a call left out."""

    __slots__ = ("_decoded", "_left")

    def __init__(self) -> None:
        self._decoded: dict[str, tuple[Any, str | None]] = {}
        self._left = MAX_MERGE_COMPARISONS

    def charge(self) -> None:
        """One more pair looked at (every pair is, whether its arguments are compared or not)."""
        self._left -= 1
        if self._left < 0:
            raise TraceInvalid(
                "$",
                f"its model calls record calls whose ids and tools repeat so often that telling them apart takes "
                f"more than {MAX_MERGE_COMPARISONS:,} comparisons; give each call its own id",
            )

    def __call__(self, mine: ToolCall, theirs: ToolCall) -> bool:
        one, other = mine.raw_args, theirs.raw_args
        return one is None or other is None or one == other or self._decode(one) == self._decode(other)

    def _decode(self, raw: Any) -> tuple[Any, str | None]:
        if not isinstance(raw, str):
            return raw, None
        if raw not in self._decoded:
            self._decoded[raw] = decode_args(raw)
        return self._decoded[raw]


def _take(
    calls: list[ToolCall] | None, call: ToolCall, same: _SameArgs, among: set[int] | None = None
) -> ToolCall | None:
    """The first of `calls` (of those whose identity is in `among`, when given) that is `call`, removed from
    `calls`."""
    found = _first_same(calls or [], call, same, among)
    if found is not None and calls is not None:
        calls.pop(next(i for i, held in enumerate(calls) if held is found))
    return found


def _first_same(
    calls: list[ToolCall], call: ToolCall, same: _SameArgs, among: set[int] | None = None
) -> ToolCall | None:
    """The first of `calls` (in `among`, when given) with this call's arguments, or none recorded on one side;
    every pair looked at is counted."""
    for held in calls:
        same.charge()
        if (among is None or id(held) in among) and same(held, call):
            return held
    return None


def _latest(
    roles: Roles, role: str, with_output: bool = False, judges: bool = False
) -> tuple[Span, tuple[list[Said], list[Said]]] | None:
    """The latest span of `role` that records a message (`with_output`: an output message, for agent spans, whose
    input alone would give a run without its answer), with its conversation. With `judges`, a model call given an
    earlier call's answer to judge (an output guardrail, a check after the answer: the answer is a message of
    its input that is not the agent's) is passed over for the call before it, up to MAX_JUDGES of them: read as
    the run, its verdict was the answer and its private conversation the run's."""
    passed_over: list[tuple[Span, tuple[list[Said], list[Said]]]] = []
    for at in range(len(roles) - 1, -1, -1):
        span, convention, its = roles[at]
        if its == role and convention.records_messages(span):
            said = convention.conversation(span)
            if said is None or not (said[1] or not with_output):
                continue
            if judges and len(passed_over) < MAX_JUDGES and _judges(said[0], roles[:at]):
                passed_over.append((span, said))
                continue
            return span, said
    return passed_over[0] if passed_over else None  # nothing but judges: the latest stands


MAX_JUDGES = 8  # model calls after the answer passed over (guardrails, checks); the earlier calls each looks in
_JUDGED_LOOKUP = 64


def _judges(history: list[Said], before: Roles) -> bool:
    """Whether a model call's input gives it an earlier model call's answer to judge: its input holds no message of
    the agent's own, and an earlier model call's output text is there as another speaker's (a guardrail's
    `user`). A call that continues the conversation holds the agent's earlier messages: it is never one."""
    if any(m.role == "assistant" for m in history):
        return False
    given = {_words(m.text) for m in history if m.role != "assistant" and m.text.strip()}
    if not given:
        return False
    looked = 0
    for span, convention, role in reversed(before):
        if role != INFERENCE or not convention.records_messages(span):
            continue
        looked += 1
        if looked > _JUDGED_LOOKUP:
            return False
        if any(m.role == "assistant" and _words(m.text) in given for m in convention.output_messages(span)):
            return True
    return False


class _Waiting:
    """The calls without a result yet. With an id, the nearest earlier one first (real exports reuse ids). Without
    one, the latest message's calls first, in order: parallel calls are answered in order, and a call an earlier
    turn left unanswered must not take a later turn's result."""

    def __init__(self) -> None:
        self.by_id: dict[str, list[ToolCall]] = {}
        self.batches: list[deque[ToolCall]] = []  # id-less calls, one deque per message that made some
        self.made_idless = False

    def add(self, calls: list[ToolCall]) -> None:
        batch: deque[ToolCall] = deque(call for call in calls if call.id is None)
        for call in reversed(calls):  # results take the last one waiting: one message's calls sharing an id are
            if call.id is not None:  # answered in the order they were made, as openai-chat answers them
                self.by_id.setdefault(call.id, []).append(call)
        if batch:
            self.batches.append(batch)
            self.made_idless = True

    def take(self, call_id: str | None, path: str) -> ToolCall:
        if call_id is None:
            while self.batches and not self.batches[-1]:
                self.batches.pop()
            if self.batches:
                return self.batches[-1].popleft()
            if not self.made_idless:
                raise TraceInvalid(
                    path, "a tool result with no call id, and no earlier call without an id is waiting for one"
                )
            raise TraceInvalid(
                path, "a second tool result with no call id: every earlier call without an id is already answered"
            )
        pending = self.by_id.get(call_id)
        if pending is None:
            raise TraceInvalid(path, f"a tool result for {call_id!r}, which no earlier call made")
        if not pending:
            raise TraceInvalid(
                path, f"a second tool result for {call_id!r}: every earlier call with this id is already answered"
            )
        return pending.pop()


def _conversation(said: list[Said], steps: list[Step], waiting: _Waiting, owners: dict[int, int]) -> None:
    """Messages as steps, as openai-chat reads them (a result goes to the call `_Waiting` gives it), and a
    message that only gives results is not a step."""
    for message in said:
        if not message.calls:  # a message's results answer earlier calls, or (below) its own
            _answer(message, waiting)
        owner = None
        if message.role != "tool" and (message.text or message.calls or not message.answers):
            steps.append(Message(message.role, message.text, len(message.calls)))
            owner = len(steps) - 1
        for call in message.calls:
            steps.append(call)
            if owner is not None:
                owners[len(steps) - 1] = owner
        waiting.add(message.calls)
        if message.calls:  # a provider-run tool's call and result in one message (pydantic-ai's built-in tools)
            _answer(message, waiting)
        if len(steps) > MAX_STEPS:
            raise TraceInvalid("$", f"holds more than {MAX_STEPS:,} steps; diagbot reads at most {MAX_STEPS:,} per run")


def _answer(message: Said, waiting: _Waiting) -> None:
    for call_id, has_result, result, path, failed in message.answers:
        call = waiting.take(call_id, path)
        call.result, call.has_result = result, has_result
        call.failed = call.failed or failed


def _attach(
    roles: Roles,
    steps: list[Step],
    anchors: list[int | None],
    owners: dict[int, int],
    made: Callable[[], list[int | None]],
) -> list[tuple[int, Step]]:
    """Tool spans onto the conversation's calls; returns the steps of their own (tool spans of calls no message
    made, retrievals) with their start times, in time order.

    A span takes the first call not yet taken with its call id (of its tool, when calls of several tools share the
    id: parallel spans start in any order). A span without an id (OpenInference often records
    none), or whose id no message has while some calls have none, takes the first free call of its tool, or, when
    it records arguments, the first free one with those arguments. A span
    whose id the messages have but whose calls are all taken repeats the last of them (a retry): counted once,
    that call fails only if every attempt failed, and takes a result if it had none and a duration to the attempt's
    end; but an attempt that starts after one that succeeded has ended, and succeeds too, ran the tool again, and is
    a call of its own (with the arguments its span records)."""
    by_id: dict[str, deque[tuple[int, ToolCall]]] = {}
    by_tool: dict[str, deque[tuple[int, ToolCall]]] = {}
    no_id: dict[str, deque[tuple[int, ToolCall]]] = {}
    tools_of: dict[str, set[str]] = {}  # call id -> the tools the conversation's calls of that id are of
    for i, step in enumerate(steps):
        if isinstance(step, ToolCall):
            by_tool.setdefault(step.tool, deque()).append((i, step))
            if step.id is not None:
                tools_of.setdefault(step.id, set()).add(step.tool)
            (
                by_id.setdefault(step.id, deque()) if step.id is not None else no_id.setdefault(step.tool, deque())
            ).append((i, step))
    taken: set[int] = set()
    decoded: dict[int, tuple[Any, str | None]] = {}  # a call's arguments, decoded once for matching spans to it
    first: dict[tuple[str, str], tuple[ToolCall, Span, bool]] = {}  # (call id, tool) -> the last call of them a
    # span took, that span, and whether the call had failed by then
    enclosing: dict[str, list[tuple[ToolCall, Span]]] = {}  # tool -> each call a span was taken onto, and the span
    later: list[tuple[int, Step]] = []
    for span, convention, role in roles:
        if role == RETRIEVAL:
            later.append((span.start, convention.retrieval(span)))
        if role != TOOL:
            continue
        found: ToolSpan = convention.tool(span)
        if found.id is not None and found.id in by_id:
            named = tools_of[found.id]
            if found.tool not in named:  # taken onto a call of another tool, this call would go unseen
                raise TraceInvalid(
                    span.path,
                    f"a tool span of {found.tool!r} answers call id {found.id!r}, which the conversation "
                    f"gave a call of {sorted(named)[0]!r}; a call id names one call of one tool",
                )
            if len(named) > 1:  # calls of several tools share the id (parallel calls of servers that reuse ids):
                # the span is its own tool's, whichever of them started first
                match = next(((i, c) for i, c in by_id[found.id] if i not in taken and c.tool == found.tool), None)
            else:
                match = _first_free(by_id[found.id], taken)
            if match is None:
                done, attempt, own = first[(found.id, found.tool)]
                if not done.failed and not found.failed and span.start >= attempt.end:  # run again after it
                    # succeeded: its side effect twice (a span within the first one's time is that run, recorded twice)
                    later.append((span.start, _call(found, span)))
                    continue
                _retried(done, attempt, own, found, span)
                continue
        else:
            queue = (by_tool if found.id is None else no_id).get(found.tool)
            match = _first_free(queue, taken, found.raw_args, decoded, functools.partial(_before, made, span.end))
        if match is None:
            later.append((span.start, _call(found, span)))
            if found.failed or _result_says_error(found):  # a layer of a taken call's attempt (the MCP client's span
                for around, outer in enclosing.get(found.tool, [])[-_ENCLOSING_LOOKED_AT:]:  # within a framework's)
                    if _within(span, outer):  # fails that attempt too
                        around.failed = True
            continue
        i, call = match
        taken.add(i)
        enclosing.setdefault(call.tool, []).append((call, span))
        _enrich(call, found, span)
        if call.id is not None:
            first[(call.id, call.tool)] = (call, span, call.failed)
        anchors[i] = span.start
        owner = owners.get(i)
        if owner is not None and ((known := anchors[owner]) is None or span.start < known):
            anchors[owner] = span.start  # the message that made the call started no later
    return later


_ENCLOSING_LOOKED_AT = 64  # the latest taken calls of a tool looked at for a failed span they may enclose


def _within(inner: Span, outer: Span) -> bool:
    """Whether a span ran inside another (a layer of the same work: a framework's tool span around the MCP
    client's), not after it (a retry starts once the attempt before it has ended)."""
    return outer.start <= inner.start < outer.end and inner.end <= outer.end


def _retried(call: ToolCall, first: Span, failed_then: bool, found: ToolSpan, span: Span) -> None:
    """Another span of a call already matched (`first`, when the call's failure was `failed_then`). After it, it is
    another attempt: the call failed only if every attempt did (one that succeeded made its side effect). Within
    or around it, it is the same work recorded by another layer (a framework's tool span around the MCP client's,
    which the exporter may write first): a layer inside says how the work went, the last one of them deciding (a
    retry inside the framework's span that succeeded succeeded), beside what the first span said itself; a layer
    around it fails the call when it failed."""
    said = found.failed or _result_says_error(found)
    if _within(span, first):
        call.failed = failed_then or said
    elif _within(first, span):
        call.failed = call.failed or said
    else:
        call.failed = call.failed and found.failed
    if not call.has_result and found.has_result:
        call.result, call.has_result = found.result, True
    call.duration_ms = max(span.end - first.start, 0) / 1e6
    if not found.failed and found.raw_args is not None:  # the attempt that succeeded ran what is judged
        _ran_otherwise(call, found.raw_args)


_ARGS_LOOKAHEAD = 64  # free calls of a tool compared with a span's arguments before taking the first


CLOCK_SKEW_NS = 50_000_000  # how far a tool's host clock may run behind the model calls' (50 ms)


def _before(made: Callable[[], list[int | None]], end: int, step: int) -> bool:
    """Whether the call at `step` may have been made before a span that ended at `end` (unknown: it may), give or
    take CLOCK_SKEW_NS."""
    return (made()[step] or 0) < end + CLOCK_SKEW_NS


def _first_free(
    queue: deque[tuple[int, ToolCall]] | None,
    taken: set[int],
    raw_args: Any = None,
    decoded: dict[int, tuple[Any, str | None]] | None = None,
    possible: Callable[[int], bool] | None = None,
) -> tuple[int, ToolCall] | None:
    """The first call of `queue` no span has taken; for a span that records its arguments, the first of the next
    few whose arguments are those (parallel calls of one tool, whose spans start in any order). `decoded` keeps
    each call's decoded arguments by step, apart from the call's own cache, which `_enrich` may yet invalidate.
    `possible`: whether the call at a step can be this span's (a span without an id never takes a call its model
    made only after the span ended: that one is a later call)."""
    while queue and queue[0][0] in taken:
        queue.popleft()
    if not queue:
        return None
    free = [
        e
        for e in itertools.islice(queue, _ARGS_LOOKAHEAD)
        if e[0] not in taken and (possible is None or possible(e[0]))
    ]
    if raw_args is not None:
        args, problem = decode_args(raw_args)
        if problem is None:
            known = {} if decoded is None else decoded
            for entry in free:
                if entry[1].raw_args is None:
                    continue
                if entry[0] not in known:
                    known[entry[0]] = decode_args(entry[1].raw_args)
                if known[entry[0]] == (args, None):
                    queue.remove(entry)
                    return entry
    if not free:
        return None
    if free[0] is queue[0]:
        return queue.popleft()
    queue.remove(free[0])
    return free[0]


def _enrich(call: ToolCall, found: ToolSpan, span: Span) -> None:
    # the span's own result may say the call failed (MCP's isError) where the history's text of it does not
    call.failed = call.failed or found.failed or (call.has_result and _result_says_error(found))
    call.duration_ms = span.duration_ms
    if not call.has_result and found.has_result:
        call.result, call.has_result = found.result, True
    if call.raw_args is None:
        call.raw_args = found.raw_args
    elif found.raw_args is not None:
        _ran_otherwise(call, found.raw_args)


def _result_says_error(found: ToolSpan) -> bool:
    """Whether a tool span's result says its call failed (MCP's `CallToolResult` with `isError: true`); one that
    may, but is too large or repeats a key to tell, is taken as saying so: read as a success, it would count as
    done."""
    return found.has_result and result_is_error(found.result) is not False


def _ran_otherwise(call: ToolCall, ran: Any) -> None:
    """When the tool span records other values for the arguments the model's call asked for (both readable objects,
    the span's holding every key the model gave), the tool ran with its own, and those are what the checks judge: a
    red-team run asked for ORDER_123 and refunded ORDER_999, and only the model's ORDER_123 was checked. A span
    recording its arguments in another shape (smolagents' `{args, kwargs}`), or either side unreadable, leaves the
    model's, as they always were."""
    (asked, problem), (used, failed) = decode_args(call.raw_args), decode_args(ran)
    if problem is not None or failed is not None or not isinstance(asked, dict) or not isinstance(used, dict):
        return
    if asked.keys() <= used.keys():
        call.ran_with(used if _canonical(asked) != _canonical(used) else asked)


def _canonical(args: Any) -> str:
    return json.dumps(args, sort_keys=True, default=str)


def _call(found: ToolSpan, span: Span) -> ToolCall:
    return ToolCall(
        tool=found.tool,
        id=found.id,
        raw_args=found.raw_args,
        result=found.result,
        has_result=found.has_result,
        failed=found.failed,
        duration_ms=span.duration_ms,
    )


def _merge(
    steps: list[Step], anchors: list[int | None], later: list[tuple[int, Step]], seen: list[int | None] | None = None
) -> list[Step]:
    """`later` (in time order) placed among `steps`: each before the first step known to have started after it,
    and a call also before the first user message no model call had seen by its start (`seen`): the agent could
    not have had that reply yet. Each place only moves forward as the start grows, so one pass per kind does it."""
    if not later:
        return steps
    places: list[list[Step]] = [[] for _ in range(len(steps) + 1)]  # what goes before each step, and at the end
    cursors = [0, 0]  # for retrievals and calls: where the last one went
    for start, step in later:
        is_call = isinstance(step, ToolCall) and seen is not None
        i = cursors[is_call]
        while i < len(steps) and not (
            ((anchor := anchors[i]) is not None and anchor > start)
            or (is_call and seen is not None and (known := seen[i]) is not None and known > start)
        ):
            i += 1
        cursors[is_call] = i
        places[i].append(step)
    merged: list[Step] = []
    for i, step in enumerate(steps):
        merged += places[i]
        merged.append(step)
    return merged + places[len(steps)]


MAX_REPLIES_LOOKED_UP = 64  # user messages whose first model call is looked for, the latest ones
MAX_CALLS_LOOKED_IN = 256  # earlier model calls looked in for each
MAX_SCANNED_BYTES = 256 * 2**20  # input text searched for them, in all


def _seen(
    roles: Roles, latest: Span, role_of: str | None, history: list[Said], message_of: list[int], size: int
) -> list[int | None]:
    """For each step that is a user message of the latest history, the start of the first model call whose input
    holds it (read as the text the input attributes hold, not decoded): the agent had the reply no earlier, so a
    call made before that was made without it."""
    calls = list(
        itertools.islice(
            ((span.start, convention.input_texts(span)) for span, convention, role in roles
             if role == role_of and span is not latest),
            MAX_CALLS_LOOKED_IN,
        )
    )  # fmt: skip
    budget = MAX_SCANNED_BYTES  # text searched in all: a file of many long inputs is searched only so far
    seen: list[int | None] = [None] * size
    replies = [
        step for step, index in enumerate(message_of) if history[index].role == "user" and history[index].text.strip()
    ]
    covered = False  # an earlier model call the file holds saw an earlier reply: those calls are recorded
    for step in replies[-MAX_REPLIES_LOOKED_UP:]:
        said = history[message_of[step]].text
        escaped = [json.dumps(said)[1:-1], json.dumps(said, ensure_ascii=False)[1:-1]]  # as JSON text writes it
        needles = {said, *escaped, *(text.replace("/", "\\/") for text in escaped)}  # some writers escape "/"
        first = None
        for start, texts in calls:
            budget -= sum(map(len, texts)) * len(needles)
            if budget < 0:
                return seen  # the rest not known: placed as if no call had them
            if any(needle in raw for raw in texts for needle in needles):
                first = start
                break
        covered = covered or first is not None
        # in none of them: the latest call saw it first, unless the file holds none of the calls that saw the
        # replies before it either (then a call it leaves out may have)
        seen[step] = first if first is not None else latest.start if covered else None
    return seen


def _final_state(agent: Span | None) -> dict[str, Any] | None:
    if agent is None or not agent.has(FINAL_STATE):
        return None
    return obj(agent.json(FINAL_STATE), agent.where(FINAL_STATE))
