"""OpenAI Responses API items: a JSON array of items, or `{input: [...], output: [...], final_state?,
duration_ms?}` (the request's input items, then the response's output items; the run's final state and duration
as in openai-chat's object form).

`message` items carry `role` and `content` parts (`input_text`, `output_text`); `function_call` items carry
`call_id`, `name` and `arguments` (the JSON string the model wrote); `function_call_output` items carry the
`call_id` they answer and the `output`. Calls and outputs pair on `call_id`, never on the item's own `id`, the
nearest earlier call without an output first. A `custom_tool_call` is a call whose free-form `input` is read as
the arguments `{input: TEXT}`; an `mcp_call` holds its call (`name`, `arguments`) and its `output` or `error`.
The hosted tools' calls (`web_search_call`, `computer_call`, ... any other `*_call`) are calls of the tool named by
the type (`web_search`, `computer`), their other fields (and their `action`'s) the arguments, so that a case can
forbid or allow them; their
`*_call_output` items pair on `call_id` as functions' do. Other items (reasoning, MCP tool listings and approvals,
references to an earlier response's items) are skipped; an item whose `type` is no string, or with neither `type`
nor `role` nor a reference's `id`, is refused.
"""

from __future__ import annotations

from typing import Any

from diagbot.core.values import type_name
from diagbot.kinds.agent.formats.common import (
    MISSING,
    content_text,
    duration,
    holds_no_message,
    is_call_part,
    items,
    no_text_elsewhere,
    obj,
    optional_text,
    speaker,
    state,
    text,
)
from diagbot.kinds.agent.run import MAX_STEPS, Message, Run, ToolCall, TraceInvalid

NAME = "openai-responses"
_TYPES = frozenset({"message", "function_call", "function_call_output"})  # what `detect` looks for
_NAMED_CALLS = ("function_call", "custom_tool_call")
# on a message item: a chat message's call fields, or a call's own; either way a call that would go unread
_CALL_FIELDS = ("tool_calls", "tool_call_id", "function_call", "call_id", "name", "arguments", "output")
_TEXT_OUTPUTS = ("function_call_output", "custom_tool_call_output")  # text or text parts; a hosted tool's is any

_KEYS = ("input", "output", "final_state", "duration_ms")
_CONTINUES = ("previous_response_id", "conversation")  # a response's fields naming what came before its input
_SETTINGS = ("tools", "tool_choice", "parallel_tool_calls", "text", "reasoning")  # the request's, not what was said
_HINT = f"put every item in input or output ({', '.join(_KEYS)} are a Responses run's keys)"

# Item types read by being skipped: reasoning, MCP tool listings and approvals (an approval request names a call
# that has not run), references to an earlier response's items. Another type is skipped only when it holds nothing
# that reads as a call or as text (a call's type, or one of _SAID_KEYS).
_SKIPPED = frozenset(("reasoning", "mcp_list_tools", "mcp_approval_request", "mcp_approval_response", "item_reference"))
_MESSAGE_KEYS = frozenset(("type", "role", "content", "id", "status"))  # what a message item holds
_SAID_KEYS = frozenset(("text", "content", "name", "arguments", "input", "output", "call_id"))


def detect(data: Any) -> bool:
    """Items carry a `type` (chat messages do not), except the API's short input messages (`{role, content}`);
    some of the first are typed items this format reads."""
    if isinstance(data, dict):
        return isinstance(data.get("output"), list) and isinstance(data.get("input", []), list | str)
    head = data[:20] if isinstance(data, list) else []
    return (
        bool(head)
        and all(isinstance(item, dict) and (isinstance(item.get("type"), str) or _untyped(item)) for item in head)
        and any(item.get("type") in _TYPES for item in head)
    )


def _untyped(item: dict[str, Any]) -> bool:
    """The items that may omit `type` (or give it as null): a short input message (`{role, content}`), a
    reference (`{id}`)."""
    reference = isinstance(item.get("id"), str) and set(item) <= {"id", "type"}
    return item.get("type") is None and ("role" in item or reference)


def resembles(data: Any) -> bool:
    """Looser than `detect`: a response object (with `output`), or items among which one is typed as this format's."""
    if isinstance(data, dict):
        return "output" in data
    return isinstance(data, list) and any(isinstance(i, dict) and _typed(i.get("type")) for i in data[:20])


def _typed(kind: Any) -> bool:
    """A type this format reads (a list or object as `type` is not one, and cannot be looked up)."""
    return isinstance(kind, str) and kind in _TYPES


def read(data: Any) -> Run:
    run = Run()
    if isinstance(data, dict):
        other = [(key, value) for key, value in data.items() if key not in _KEYS and key not in _SETTINGS]
        if other:
            holds_no_message(other, "$", _HINT)
        given = data.get("input", [])
        parts = [("$.input", [] if isinstance(given, str) else items(given, "$.input"))]
        parts.append(("$.output", items(data.get("output", MISSING), "$.output")))
        if isinstance(given, str):  # a request may give its input as one user text
            parts.insert(0, ("$.input", [{"type": "message", "role": "user", "content": given}]))
        run.final_state = state(data.get("final_state"), "$.final_state")
        run.duration_ms = duration(data.get("duration_ms"), "$.duration_ms")
        earlier = next((key for key in _CONTINUES if data.get(key)), None)
        if earlier is not None:  # the API holds the conversation before this request (messages and calls); the
            raise TraceInvalid(  # file does not, so a call made before it would go unseen
                f"$.{earlier}",
                "the response continues an earlier one, whose messages and calls this file does not hold; record "
                "the whole conversation: every request's input items and output items, in order, in one file",
            )
    else:
        parts = [("$", items(data, "$"))]
    waiting: dict[str, list[ToolCall]] = {}
    # The model outputs so far: an output or a message from anyone but the model starts the next one. A call made in
    # output `turn` is `made` 2 * turn; a result the client sent back (an output item) is `seen` at 2 * turn, before
    # the next output; a hosted tool's result, which the model had before going on, at 2 * turn - 1.
    turn = 0
    spoke: Message | None = None  # the assistant message of the current model output, once there is one
    stand_in: int | None = None  # where a message without text stands for an output that only called tools

    def made_here() -> int:
        """A call of this output: an output that only calls tools is a turn too, as a chat message of tool_calls
        is, so it gets an assistant message without text (removed if the output's own message comes later)."""
        nonlocal spoke, stand_in
        if spoke is None:
            spoke, stand_in = Message("assistant", ""), len(run.steps)
            run.steps.append(spoke)
        elif run.steps[-1 - spoke.calls] is spoke:  # every step since the output's message is its call: so is this
            spoke.calls += 1
        return 2 * turn

    held = _held(parts)
    for prefix, entries in parts:
        turn += 1  # a response's `output` is a model output of its own, after what its `input` held
        spoke = stand_in = None
        for index, raw in enumerate(entries):
            where = f"{prefix}[{index}]"
            item = obj(raw, where)
            kind = _kind(item, where)
            if kind == "item_reference" and (not isinstance(item.get("id"), str) or item["id"] not in held):
                raise TraceInvalid(  # what it points at (a message, a call) is in an earlier response only
                    f"{where}.id",
                    f"a reference to the item {str(item.get('id'))[:80]!r}, which this file does not hold, so what "
                    "it said or called would go unseen; record the whole conversation: every request's input items "
                    "and output items, in order, in one file",
                )
            if kind == "message":
                role = speaker(item.get("role"), f"{where}.role", "a function_call_output item")
                said = content_text(item.get("content"), f"{where}.content")
                if not item.keys() <= _MESSAGE_KEYS:  # what the other keys hold would go unread
                    holds_no_message([(k, v) for k, v in item.items() if k not in _MESSAGE_KEYS], where, _HINT)
                    no_text_elsewhere(item, said, _MESSAGE_KEYS, where)
                if role != "assistant":
                    run.steps.append(Message(role, said))
                    turn, spoke, stand_in = turn + 1, None, None
                elif stand_in is not None:  # its calls came first: the output's message stands where its turn began,
                    # said with the calls after it (a question there asks before them, as a chat message's would)
                    made = len(run.steps) - stand_in - 1
                    spoke = run.steps[stand_in] = Message(role, said, made)
                    stand_in = None
                else:
                    spoke = Message(role, said)
                    run.steps.append(spoke)
            elif kind in _NAMED_CALLS:
                call_id = text(item.get("call_id", MISSING), f"{where}.call_id")
                free = kind == "custom_tool_call"
                args = {"input": text(item.get("input", MISSING), f"{where}.input")} if free else item.get("arguments")
                call = ToolCall(tool=text(item.get("name", MISSING), f"{where}.name"), id=call_id, raw_args=args)
                call.made = made_here()  # the function calls of one model output are made together
                run.steps.append(call)
                queue = waiting.setdefault(call_id, [])
                at = len(queue)  # results take the last one waiting; those of one output sharing an id (as some
                while at and queue[at - 1].made == call.made:  # servers write them) are answered in the order
                    at -= 1  # they were made, as openai-chat answers them
                queue.insert(at, call)
            elif kind == "mcp_call":
                error = item.get("error")
                call = ToolCall(
                    tool=text(item.get("name", MISSING), f"{where}.name"),
                    id=optional_text(item.get("id"), f"{where}.id"),
                    raw_args=item.get("arguments"),
                    result=item.get("output"),
                    has_result=item.get("output") is not None,
                    failed=bool(error) or item.get("status") == "failed",
                    made=made_here(),
                )
                call.seen = 2 * turn - 1 if call.has_result else None
                run.steps.append(call)
            elif kind.endswith("_call") and kind != "_call":  # a hosted tool: web_search_call is a call of web_search
                hosted_id = optional_text(item.get("call_id"), f"{where}.call_id")
                named = item.get("name")  # a hosted call is named by its type, unless it names its tool
                tool = named if isinstance(named, str) else kind.removesuffix("_call")
                call = ToolCall(tool=tool, id=hosted_id, raw_args=_hosted_args(item), made=made_here())
                call.failed = item.get("status") == "failed"
                run.steps.append(call)
                if hosted_id is not None:  # run by the client (local_shell, computer): its output item answers it
                    waiting.setdefault(hosted_id, []).append(call)
                else:  # run by the API within the response
                    call.seen = 2 * turn - 1
            elif kind.endswith("_call_output") and kind not in _TEXT_OUTPUTS:  # a hosted tool's: paired if it can be
                hosted = item.get("call_id", item.get("id"))  # local_shell_call_output names its call by `id`
                pending = waiting.get(hosted) if isinstance(hosted, str) else None
                if pending:
                    call = pending.pop()
                    call.result, call.has_result, call.seen = item.get("output"), True, 2 * turn
                    # its output's status says how the client's run of it went (apply_patch: completed or failed)
                    call.failed = call.failed or item.get("status") == "failed" or bool(item.get("error"))
                turn, spoke, stand_in = turn + 1, None, None
            elif kind in _TEXT_OUTPUTS:
                call_id = text(item.get("call_id", MISSING), f"{where}.call_id")
                pending = waiting.get(call_id)
                if pending is None:
                    raise TraceInvalid(f"{where}.call_id", f"an output for {call_id!r}, which no earlier call made")
                if not pending:
                    raise TraceInvalid(
                        f"{where}.call_id",
                        f"a second output for {call_id!r}: every earlier call with this call_id is already answered",
                    )
                output = item.get("output")
                call = pending.pop()  # the nearest earlier call with this call_id
                if not isinstance(output, str):
                    output = content_text(output, f"{where}.output")
                call.result, call.has_result, call.seen = output, True, 2 * turn  # seen by the next model output
                turn, spoke, stand_in = turn + 1, None, None
            elif kind not in _SKIPPED and ("encrypted_content" in item or "compact" in str(kind).casefold()):
                # a compaction (with its encrypted content or without): it stands for the conversation before it
                raise TraceInvalid(
                    f"{where}.type",
                    f"{str(kind)[:40]!r} stands for earlier conversation (a compaction), which diagbot cannot read, "
                    "so a call made in it would go unseen; record the run before it was compacted: every request's "
                    "input items and output items, in order, in one file",
                )
            elif kind not in _SKIPPED and (is_call_part(kind, item) or not _SAID_KEYS.isdisjoint(item)):
                raise TraceInvalid(  # skipped, the call or the text in it would go unseen
                    f"{where}.type",
                    f"{str(kind)[:40]!r} is not an item type diagbot reads, but the item holds a call or text; record "
                    "calls as function_call (or a hosted *_call) items and text in message items",
                )
            if len(run.steps) > MAX_STEPS:
                raise TraceInvalid(prefix, f"holds more than {MAX_STEPS:,} steps; diagbot reads at most {MAX_STEPS:,}")
    if isinstance(data, dict) and "output_text" in data:  # the SDK's joined output text, saved beside the items
        said = "\n".join(s.text for s in run.steps if isinstance(s, Message) and s.role == "assistant")
        no_text_elsewhere({"output_text": data["output_text"]}, said, frozenset(), "$")
    return run


_NOT_ARGS = frozenset(("type", "id", "call_id", "status", "name", "output", "outputs", "result", "results", "action"))


def _held(parts: list[tuple[str, list[Any]]]) -> set[str]:
    """The ids of the items the file holds (not references to them). An item held twice, the same id with the same
    content, is one item recorded twice: each request's input repeats the conversation so far, so a file made of
    every request's input and output holds the earlier calls again, and they would count as calls made again.
    Items that only share an id are not (the Agents SDK gives every item of a Chat Completions model
    `__fake_id__`)."""
    held: dict[str, tuple[str, Any]] = {}
    for prefix, entries in parts:
        for index, item in enumerate(entries):
            if isinstance(item, dict) and isinstance(item.get("id"), str) and not _refers(item):
                where = f"{prefix}[{index}]"
                earlier, first = held.setdefault(item["id"], (where, item))
                if earlier != where and first == item:
                    raise TraceInvalid(
                        f"{where}.id",
                        f"the item {item['id'][:80]!r} is at {earlier} too: the file holds part of the conversation "
                        "twice (a request's input repeats what came before it), so its calls would count twice; record "
                        "each item once (when every request resends the conversation, the last request's input and its "
                        "output hold all of it)",
                    )
    return set(held)


def _hosted_args(item: dict[str, Any]) -> dict[str, Any]:
    """A hosted tool call's arguments: what the item records of the request (a file search's `queries`, a code
    interpreter's `code`), with the fields of its `action` at the top (a web search's `query`, a shell's
    `command`), so that a case can forbid a call with given arguments as it forbids a function's."""
    args = {key: value for key, value in item.items() if key not in _NOT_ARGS}
    action = item.get("action")
    if isinstance(action, dict):
        args.update(action)
    return args


def _refers(item: dict[str, Any]) -> bool:
    """Whether the item is a reference to another (`{id}`, or typed item_reference), not an item itself."""
    return item.get("type") == "item_reference" or (item.get("type") is None and set(item) <= {"id", "type"})


def _kind(item: dict[str, Any], where: str) -> str:
    """The item's type: a string (one this format does not read is skipped), `message` for an item with a `role`
    and no type, `item_reference` for the API's reference to an earlier item (`{"id": ...}`, its type optional);
    anything else is refused, never skipped."""
    kind = item.get("type")
    if kind is None:
        if "role" in item:
            kind = "message"
        elif isinstance(item.get("id"), str):
            other = next((key for key in item if key not in ("id", "type")), None)
            if other is None:
                return "item_reference"  # it points at an item of an earlier response, which this file does not hold
            raise TraceInvalid(  # a call or an output without its type must not be skipped as a reference
                where,
                f"an item without a type holds {str(other)[:40]!r}; only a reference ({{id}}) may omit it: "
                "give its type (function_call, function_call_output, ...)",
            )
        else:
            raise TraceInvalid(
                where, "an item with neither type nor role; expected a typed item (message, function_call, ...)"
            )
    if kind == "message":
        field = next((key for key in _CALL_FIELDS if key in item), None)
        if field is not None:  # a chat message, or a call without its type, among Responses items
            raise TraceInvalid(
                f"{where}.{field}",
                f"a message item holds {field}: a call recorded so would go unread (Responses records calls and "
                "results as function_call and function_call_output items); record the run in one format",
            )
    if not isinstance(kind, str):
        raise TraceInvalid(
            f"{where}.type",
            f"expected a string naming the item's type (message, function_call, ...), found {type_name(kind)}",
        )
    if kind.startswith("response.") or kind != kind.lower():  # a stream event, or a type the API never writes
        raise TraceInvalid(
            f"{where}.type",
            f"{kind[:60]!r} is not an item type (they are lower case: message, function_call, ...); "
            "a stream's events are not a run: record the response's items",
        )
    return kind
