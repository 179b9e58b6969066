"""diagbot's own run format (`schemas/agent-trace.schema.json`): for agents that record their runs themselves.

`{format: "diagbot-agent-trace", version: 1, steps: [...], final_state?, duration_ms?}`; each step is a
`message` (role, content, and on an assistant message the `citations` [{doc_id, passage_id?}] it makes), a
`tool_call` (id, tool, args, result, error, duration_ms, audit), a `state_change` (key, from, to) or a
`retrieval` (query, documents [{id, passage_id?, score?, rank?, content?}]). The run's citations are the answer's:
those of the last assistant message with text. Strict: an unknown key or step kind names its path and the
closest known name.
"""

from __future__ import annotations

from typing import Any

from diagbot.kinds.agent.formats.common import (
    MISSING,
    content_text,
    duration,
    items,
    no_unknown_keys,
    obj,
    optional_number,
    optional_rank,
    optional_text,
    speaker,
    state,
    text,
)
from diagbot.kinds.agent.run import (
    FROM_STATE,
    Citation,
    Document,
    Message,
    Retrieval,
    Run,
    StateChange,
    Step,
    ToolCall,
    TraceInvalid,
)

NAME = "diagbot"
FORMAT = "diagbot-agent-trace"
VERSION = 1
_TOP = ("format", "version", "steps", "final_state", "duration_ms")
_STEP_KEYS = {
    "message": ("kind", "role", "content", "citations"),
    "tool_call": ("kind", "id", "tool", "args", "result", "error", "duration_ms", "audit"),
    "state_change": ("kind", "key", "from", "to"),
    "retrieval": ("kind", "query", "documents"),
}
_DOCUMENT_KEYS = ("id", "passage_id", "score", "rank", "content")
_CITATION_KEYS = ("doc_id", "passage_id")


def detect(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


def resembles(data: Any) -> bool:
    """Looser than `detect`: an object naming a format or holding steps was meant to be this one."""
    return isinstance(data, dict) and ("format" in data or "steps" in data)


def read(data: Any) -> Run:
    top = obj(data, "$")
    if top.get("format") != FORMAT:
        raise TraceInvalid("$.format", f"expected {FORMAT!r}")
    if top.get("version") != VERSION or isinstance(top.get("version"), bool):
        raise TraceInvalid("$.version", f"expected {VERSION}; this diagbot reads version {VERSION} of its format")
    no_unknown_keys(top, _TOP, "$")
    run = Run(
        final_state=state(top.get("final_state"), "$.final_state"),
        duration_ms=duration(top.get("duration_ms"), "$.duration_ms"),
        records_state=True,
    )
    for index, raw in enumerate(items(top.get("steps", MISSING), "$.steps")):  # at most MAX_STEPS of them
        path = f"$.steps[{index}]"
        step = _step(obj(raw, path), path)
        run.steps.append(step)
        if isinstance(step, Message):
            cited = _citations(raw.get("citations"), f"{path}.citations")
            if cited and step.role != "assistant":
                raise TraceInvalid(f"{path}.citations", "only an assistant message cites sources")
            if step.role == "assistant" and step.text:  # the answer so far: the last assistant message with text
                run.citations = cited
    return run


def _step(step: dict[str, Any], path: str) -> Step:
    kind = text(step.get("kind", MISSING), f"{path}.kind")
    if kind not in _STEP_KEYS:
        raise TraceInvalid(f"{path}.kind", f"unknown step kind {kind!r}; use one of {', '.join(_STEP_KEYS)}")
    no_unknown_keys(step, _STEP_KEYS[kind], path)
    if kind == "message":
        role = speaker(step.get("role"), f"{path}.role", "a tool_call step")
        return Message(role, content_text(step.get("content"), f"{path}.content"))
    if kind == "state_change":
        start = step.get("from", FROM_STATE)  # left out: where the state was just before it
        if "to" not in step:  # read as null, a change no forbidden `to` matched
            raise TraceInvalid(f"{path}.to", "a state_change says what the key became: add `to` (null for removed)")
        return StateChange(text(step.get("key", MISSING), f"{path}.key"), start, step["to"])
    if kind == "retrieval":
        documents = [
            _document(obj(raw, f"{path}.documents[{i}]"), f"{path}.documents[{i}]")
            for i, raw in enumerate(items(step.get("documents", MISSING), f"{path}.documents"))
        ]
        return Retrieval(optional_text(step.get("query"), f"{path}.query"), documents)
    error = step.get("error", False)
    if not isinstance(error, bool):
        raise TraceInvalid(f"{path}.error", "expected true or false")
    audit = step.get("audit")
    return ToolCall(
        tool=text(step.get("tool", MISSING), f"{path}.tool"),
        id=optional_text(step.get("id"), f"{path}.id"),
        raw_args=step.get("args", {}),
        result=step.get("result"),
        has_result="result" in step,
        failed=error,
        duration_ms=duration(step.get("duration_ms"), f"{path}.duration_ms"),
        audit=None if audit is None else obj(audit, f"{path}.audit"),
    )


def _document(doc: dict[str, Any], path: str) -> Document:
    no_unknown_keys(doc, _DOCUMENT_KEYS, path)
    return Document(
        id=text(doc.get("id", MISSING), f"{path}.id"),
        passage_id=optional_text(doc.get("passage_id"), f"{path}.passage_id"),
        score=optional_number(doc.get("score"), f"{path}.score"),
        rank=optional_rank(doc.get("rank"), f"{path}.rank"),
        content=optional_text(doc.get("content"), f"{path}.content"),
    )


def _citations(value: Any, path: str) -> list[Citation]:
    if value is None:
        return []
    found = []
    for i, raw in enumerate(items(value, path)):
        cited = obj(raw, f"{path}[{i}]")
        no_unknown_keys(cited, _CITATION_KEYS, f"{path}[{i}]")
        found.append(
            Citation(
                text(cited.get("doc_id", MISSING), f"{path}[{i}].doc_id"),
                optional_text(cited.get("passage_id"), f"{path}[{i}].passage_id"),
            )
        )
    return found
