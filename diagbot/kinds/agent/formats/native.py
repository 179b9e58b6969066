"""diagbot's own run format (`schemas/agent-trace.schema.json`): for agents that record their runs themselves.

`{format: "diagbot-agent-trace", version: 1, steps: [...], final_state?, duration_ms?}`; each step is a
`message` (role, content), a `tool_call` (id, tool, args, result, error, duration_ms, audit) or a
`state_change` (key, from, to). Strict: an unknown key or step kind names its path and the closest known name.
"""

from __future__ import annotations

from typing import Any

from diagbot.kinds.agent.formats.common import (
    content_text,
    duration,
    items,
    no_unknown_keys,
    obj,
    optional_text,
    state,
    text,
)
from diagbot.kinds.agent.run import Message, Run, StateChange, Step, ToolCall, TraceInvalid

NAME = "diagbot"
FORMAT = "diagbot-agent-trace"
VERSION = 1
_TOP = ("format", "version", "steps", "final_state", "duration_ms")
_STEP_KEYS = {
    "message": ("kind", "role", "content"),
    "tool_call": ("kind", "id", "tool", "args", "result", "error", "duration_ms", "audit"),
    "state_change": ("kind", "key", "from", "to"),
}


def detect(data: Any) -> bool:
    return isinstance(data, dict) and data.get("format") == FORMAT


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
    )
    for index, raw in enumerate(items(top.get("steps"), "$.steps")):  # at most MAX_STEPS of them
        run.steps.append(_step(obj(raw, f"$.steps[{index}]"), f"$.steps[{index}]"))
    return run


def _step(step: dict[str, Any], path: str) -> Step:
    kind = text(step.get("kind"), f"{path}.kind")
    if kind not in _STEP_KEYS:
        raise TraceInvalid(f"{path}.kind", f"unknown step kind {kind!r}; use one of {', '.join(_STEP_KEYS)}")
    no_unknown_keys(step, _STEP_KEYS[kind], path)
    if kind == "message":
        return Message(text(step.get("role"), f"{path}.role"), content_text(step.get("content"), f"{path}.content"))
    if kind == "state_change":
        return StateChange(text(step.get("key"), f"{path}.key"), step.get("from"), step.get("to"))
    error = step.get("error", False)
    if not isinstance(error, bool):
        raise TraceInvalid(f"{path}.error", "expected true or false")
    audit = step.get("audit")
    return ToolCall(
        tool=text(step.get("tool"), f"{path}.tool"),
        id=optional_text(step.get("id"), f"{path}.id"),
        raw_args=step.get("args", {}),
        result=step.get("result"),
        has_result="result" in step,
        failed=error,
        duration_ms=duration(step.get("duration_ms"), f"{path}.duration_ms"),
        audit=None if audit is None else obj(audit, f"{path}.audit"),
    )
