"""Runs recorded with the real OpenTelemetry SDK, for tests/test_agent_otel.py and scripts/make_otel_fixtures.py.

Spans are made by `opentelemetry-sdk` (a TracerProvider with an in-memory exporter, fixed ids and clock so that a
recording is reproducible), encoded by `opentelemetry-exporter-otlp-proto-common` into the protobuf
`ExportTraceServiceRequest` of `opentelemetry-proto`, and written as OTLP/JSON the way the Collector writes it:
protobuf's JSON mapping with enums as integers, and the ids turned from base64 into hex, as the OTLP spec
requires. Nothing here is hand-typed OTLP.

`genai(...)`, `openinference(...)` and `responses(...)` turn an openai-chat run (a message list, or `{messages,
final_state?, duration_ms?}`) into the same conversation in the other formats: one model-call span per assistant
message whose input repeats the whole history before it, as instrumentations record it, then a span per tool call.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from google.protobuf import json_format
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import SpanKind, Status, StatusCode

START_NS = 1_796_000_000_000_000_000  # 2026-11-30, the bundled runs' day
STEP_NS = 1_000_000  # each span lasts a millisecond and starts one after the one before


class FixedIds(IdGenerator):
    """Trace ids from a seed, span ids counted: the same recording gives the same file."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.count = 0

    def generate_trace_id(self) -> int:
        return (0x5EED << 96) | self.seed

    def generate_span_id(self) -> int:
        self.count += 1
        return (self.seed << 32) | self.count


class Recorder:
    """One agent run's spans, with a clock that moves only when told."""

    def __init__(self, seed: int = 1, service: str = "refund-agent") -> None:
        self.ids = FixedIds(seed)
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource({"service.name": service}), id_generator=self.ids)
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("diagbot.tests.recorder", "1.0")
        self.clock = START_NS
        self.parent: Any = None

    def new_trace(self, seed: int) -> None:
        """Spans from now on belong to another trace."""
        self.ids.seed = seed
        self.parent = None

    @contextmanager
    def root(
        self, name: str, attributes: Mapping[str, Any], duration_ms: float | None = None, nested: bool = False
    ) -> Iterator[Any]:
        """A span that the spans made inside the block are children of; its end is `duration_ms` after its start,
        or when the block ends. `nested`: itself a child of the enclosing root's span (else a root of its own)."""
        start = self.clock
        context = self.parent if nested else None
        span = self.tracer.start_span(name, context=context, attributes=attributes, start_time=start)
        self.parent, before = trace.set_span_in_context(span), self.parent
        self.clock += STEP_NS
        try:
            yield span
        finally:
            self.parent = before
            span.end(end_time=start + int(duration_ms * 1e6) if duration_ms is not None else self.clock)

    def span(
        self,
        name: str,
        attributes: Mapping[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        error: bool = False,
        start: int | None = None,
    ) -> None:
        """One finished span; `start` (ns) overrides the clock for this span alone."""
        begin = self.clock if start is None else start
        span = self.tracer.start_span(name, context=self.parent, kind=kind, attributes=attributes, start_time=begin)
        if error:
            span.set_status(Status(StatusCode.ERROR, "the tool failed"))
        span.end(end_time=begin + STEP_NS)
        if start is None:
            self.clock += STEP_NS

    def request(self) -> ExportTraceServiceRequest:
        return encode_spans(self.exporter.get_finished_spans())

    def otlp(self) -> dict[str, Any]:
        return otlp_json(self.request())


def otlp_json(request: ExportTraceServiceRequest) -> dict[str, Any]:
    """The request as OTLP/JSON: protobuf's JSON mapping with integer enums, then the ids as hex."""
    data: dict[str, Any] = json_format.MessageToDict(request, use_integers_for_enums=True)
    for resource in data.get("resourceSpans", []):
        for scope in resource.get("scopeSpans", []):
            for span in scope.get("spans", []):
                for holder in (span, *span.get("links", [])):
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in holder:
                            holder[key] = base64.b64decode(holder[key]).hex()
    return data


def json_lines(*requests: dict[str, Any]) -> bytes:
    """Requests as the Collector's file exporter writes them: one compact JSON document a line."""
    return b"".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in requests)


# --- an openai-chat run in the other formats -----------------------------------------------------------------------


def chat_parts(doc: Any) -> tuple[list[dict[str, Any]], dict[str, Any] | None, float | None]:
    if isinstance(doc, dict):
        return doc["messages"], doc.get("final_state"), doc.get("duration_ms")
    return doc, None, None


def _texts(content: Any) -> list[str]:
    """The text parts of chat content, as diagbot joins them."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content] if content else []
    return [part["text"] for part in content if part.get("type") == "text" or ("text" in part and "type" not in part)]


def _pairs(messages: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Which call each tool message answers (message index -> (assistant message index, call index)), by chat's
    rule: the nearest earlier call with that id that has no result yet."""
    waiting: dict[str, list[tuple[int, int]]] = {}
    answered = {}
    for i, message in enumerate(messages):
        for k, call in enumerate(message.get("tool_calls") or []):
            waiting.setdefault(call["id"], []).append((i, k))
        if message["role"] == "tool":
            answered[i] = waiting[message["tool_call_id"]].pop()
    return answered


def _results(messages: list[dict[str, Any]]) -> dict[tuple[int, int], str]:
    return {call: "\n".join(_texts(messages[i]["content"])) for i, call in _pairs(messages).items()}


def _arguments(raw: Any, structured: bool) -> Any:
    """Chat's argument string, or (structured) the object it encodes, where it is one."""
    if structured and isinstance(raw, str):
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError:
            return raw
        return decoded if isinstance(decoded, dict) and decoded else raw
    return raw


def _genai_message(message: dict[str, Any], structured_args: bool, result_key: str) -> dict[str, Any]:
    if message["role"] == "tool":
        result = "\n".join(_texts(message["content"]))
        return {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": message["tool_call_id"], result_key: result}],
        }
    parts: list[dict[str, Any]] = [{"type": "text", "content": t} for t in _texts(message.get("content"))]
    for call in message.get("tool_calls") or []:
        part = {"type": "tool_call", "id": call["id"], "name": call["function"]["name"]}
        if call["function"].get("arguments") is not None:
            part["arguments"] = _arguments(call["function"]["arguments"], structured_args)
        parts.append(part)
    return {"role": message["role"], "parts": parts}


def genai(
    doc: Any,
    *,
    seed: int = 1,
    content: bool = True,
    structured: bool = False,
    structured_args: bool = True,
    result_key: str = "response",
    legacy: bool = False,
) -> dict[str, Any]:
    """The run as OpenTelemetry GenAI spans. `content=False` records no messages (capture off); `structured`
    records them as attribute values instead of JSON text; `legacy` as older `gen_ai.prompt` / `gen_ai.completion`
    lists of chat messages."""
    messages, final_state, duration_ms = chat_parts(doc)
    recorder = Recorder(seed)
    results = _results(messages)
    converted = [_genai_message(m, structured_args, result_key) for m in messages]

    def encode(value: list[dict[str, Any]]) -> Any:
        return value if structured else json.dumps(value, ensure_ascii=False)

    def record() -> None:
        for i, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4.1",
                "gen_ai.provider.name": "openai",
            }
            if content and legacy:
                attributes.pop("gen_ai.operation.name")
                attributes["gen_ai.prompt"] = json.dumps(messages[:i], ensure_ascii=False)
                attributes["gen_ai.completion"] = json.dumps([message], ensure_ascii=False)
            elif content:
                output = {**converted[i], "finish_reason": "tool_call" if message.get("tool_calls") else "stop"}
                attributes["gen_ai.input.messages"] = encode(converted[:i])
                attributes["gen_ai.output.messages"] = encode([output])
            recorder.span("chat gpt-4.1", attributes, kind=SpanKind.CLIENT)
            for k, call in enumerate(message.get("tool_calls") or []):
                attributes = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": call["function"]["name"],
                    "gen_ai.tool.call.id": call["id"],
                    "gen_ai.tool.type": "function",
                }
                if content:
                    if call["function"].get("arguments") is not None:
                        attributes["gen_ai.tool.call.arguments"] = call["function"]["arguments"]
                    if (i, k) in results:
                        attributes["gen_ai.tool.call.result"] = results[(i, k)]
                recorder.span(f"execute_tool {call['function']['name']}", attributes)

    if duration_ms is None and final_state is None:
        record()
    else:
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund-agent"}
        if final_state is not None:
            agent["diagbot.final_state"] = json.dumps(final_state, ensure_ascii=False)
        with recorder.root("invoke_agent refund-agent", agent, duration_ms):
            record()
    return recorder.otlp()


def _flat_message(prefix: str, message: dict[str, Any], parts: bool) -> dict[str, Any]:
    """One chat message as OpenInference's flattened attributes; `parts` writes list content as `contents`."""
    flat: dict[str, Any] = {f"{prefix}.message.role": message["role"]}
    given = message.get("content")
    if isinstance(given, list) and parts:
        texts = _texts(given)
        for m, text in enumerate(texts):
            flat[f"{prefix}.message.contents.{m}.message_content.type"] = "text"
            flat[f"{prefix}.message.contents.{m}.message_content.text"] = text
    elif given is not None:
        flat[f"{prefix}.message.content"] = "\n".join(_texts(given))
    if message["role"] == "tool":
        flat[f"{prefix}.message.tool_call_id"] = message["tool_call_id"]
    for k, call in enumerate(message.get("tool_calls") or []):
        where = f"{prefix}.message.tool_calls.{k}.tool_call"
        flat[f"{where}.id"] = call["id"]
        flat[f"{where}.function.name"] = call["function"]["name"]
        if call["function"].get("arguments") is not None:
            flat[f"{where}.function.arguments"] = call["function"]["arguments"]
    return flat


def openinference(doc: Any, *, seed: int = 2, tool_ids: bool = True, parts: bool = True) -> dict[str, Any]:
    """The run as OpenInference spans (LLM spans with flattened messages, TOOL spans, an AGENT root when the run
    has a duration or a final state). `tool_ids=False` leaves `tool.id` off the TOOL spans, as many
    instrumentations do."""
    messages, final_state, duration_ms = chat_parts(doc)
    recorder = Recorder(seed)
    results = _results(messages)

    def record() -> None:
        for i, message in enumerate(messages):
            if message["role"] != "assistant":
                continue
            attributes: dict[str, Any] = {"openinference.span.kind": "LLM", "llm.model_name": "gpt-4.1"}
            for j, earlier in enumerate(messages[:i]):
                attributes.update(_flat_message(f"llm.input_messages.{j}", earlier, parts))
            attributes.update(_flat_message("llm.output_messages.0", message, parts))
            recorder.span("ChatCompletion", attributes, kind=SpanKind.CLIENT)
            for k, call in enumerate(message.get("tool_calls") or []):
                attributes = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": call["function"]["name"],
                    "tool.parameters": '{"type": "object"}',
                }
                if tool_ids:
                    attributes["tool.id"] = call["id"]
                if call["function"].get("arguments") is not None:
                    attributes["input.value"] = call["function"]["arguments"]
                    attributes["input.mime_type"] = "application/json"
                if (i, k) in results:
                    attributes["output.value"] = results[(i, k)]
                recorder.span(call["function"]["name"], attributes)

    if duration_ms is None and final_state is None:
        record()
    else:
        agent: dict[str, Any] = {"openinference.span.kind": "AGENT"}
        if final_state is not None:
            agent["diagbot.final_state"] = json.dumps(final_state, ensure_ascii=False)
        with recorder.root("agent", agent, duration_ms):
            record()
    return recorder.otlp()


def responses(doc: Any) -> Any:
    """The run as OpenAI Responses items: `{input, output}` (with the final state and duration, when recorded),
    the input being the messages before the first assistant message."""
    messages, final_state, duration_ms = chat_parts(doc)
    items: list[dict[str, Any]] = []
    first = next((i for i, m in enumerate(messages) if m["role"] == "assistant"), len(messages))
    split = 0  # where the response's output starts
    for i, message in enumerate(messages):
        split = len(items) if i == first else split
        if message["role"] == "tool":
            output = "\n".join(_texts(message["content"]))
            items.append({"type": "function_call_output", "call_id": message["tool_call_id"], "output": output})
            continue
        texts = _texts(message.get("content"))
        kind = "output_text" if message["role"] == "assistant" else "input_text"
        if texts or message["role"] != "assistant":
            items.append(
                {
                    "type": "message",
                    "role": message["role"],
                    "id": f"msg_{i}",
                    "content": [{"type": kind, "text": t} for t in texts],
                }
            )
        for k, call in enumerate(message.get("tool_calls") or []):
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{i}_{k}",
                    "call_id": call["id"],
                    "name": call["function"]["name"],
                    "arguments": call["function"].get("arguments"),
                    "status": "completed",
                }
            )
    split = len(items) if first == len(messages) else split
    result: dict[str, Any] = {"input": items[:split], "output": items[split:]}
    if final_state is not None:
        result["final_state"] = final_state
    if duration_ms is not None:
        result["duration_ms"] = duration_ms
    return result
