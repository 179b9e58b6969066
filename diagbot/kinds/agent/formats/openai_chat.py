"""OpenAI Chat Completions messages: a JSON array of messages, or `{messages, final_state?, duration_ms?}`.

Assistant messages carry `tool_calls[].function.{name, arguments}` with the arguments as a JSON string the model
wrote (possibly not JSON); `tool` messages carry the result and the `tool_call_id` it answers. Real exports reuse
call ids, so a result goes to the nearest earlier call with that id that has no result yet. Older logs use
`function_call` on the assistant message and a `function` message (named, not id'd) for the result.
"""

from __future__ import annotations

from typing import Any

from diagbot.kinds.agent.formats.common import content_text, decode_args, duration, items, obj, state, text
from diagbot.kinds.agent.run import Message, Run, ToolCall, TraceInvalid

NAME = "openai-chat"


def detect(data: Any) -> bool:
    if isinstance(data, dict):
        return isinstance(data.get("messages"), list)
    return isinstance(data, list) and all(isinstance(m, dict) and "role" in m for m in data[:5])


def read(data: Any) -> Run:
    if isinstance(data, dict):
        run = Run(
            final_state=state(data.get("final_state"), "$.final_state"),
            duration_ms=duration(data.get("duration_ms"), "$.duration_ms"),
        )
        messages, prefix = items(data.get("messages"), "$.messages"), "$.messages"
    else:
        run, messages, prefix = Run(), items(data, "$"), "$"
    waiting: dict[str, list[ToolCall]] = {}  # call id (or, for `function` results, name) -> calls without result
    for index, raw in enumerate(messages):
        where = f"{prefix}[{index}]"
        message = obj(raw, where)
        role = text(message.get("role"), f"{where}.role")
        if role in ("tool", "function"):
            key = "tool_call_id" if role == "tool" else "name"
            answered = text(message.get(key), f"{where}.{key}")
            pending = waiting.get(answered)
            if not pending:
                raise TraceInvalid(f"{where}.{key}", f"a tool result for {answered!r}, which no earlier call made")
            call = pending.pop()  # the nearest earlier call with this id
            call.result, call.has_result = content_text(message.get("content"), f"{where}.content"), True
            continue
        run.steps.append(Message(role, content_text(message.get("content"), f"{where}.content")))
        if role != "assistant":
            continue
        calls = message.get("tool_calls")
        for k, raw_call in enumerate(items(calls, f"{where}.tool_calls") if calls is not None else []):
            call_path = f"{where}.tool_calls[{k}]"
            function = obj(obj(raw_call, call_path).get("function"), f"{call_path}.function")
            call_id = raw_call.get("id")
            call = _call(
                function, f"{call_path}.function", None if call_id is None else text(call_id, f"{call_path}.id")
            )
            run.steps.append(call)
            if call.id is not None:
                waiting.setdefault(call.id, []).append(call)
        legacy = message.get("function_call")
        if legacy is not None:
            call = _call(obj(legacy, f"{where}.function_call"), f"{where}.function_call", None)
            run.steps.append(call)
            waiting.setdefault(call.tool, []).append(call)
    return run


def _call(function: dict[str, Any], path: str, call_id: str | None) -> ToolCall:
    args, problem = decode_args(function.get("arguments"))
    return ToolCall(tool=text(function.get("name"), f"{path}.name"), id=call_id, args=args, args_problem=problem)
