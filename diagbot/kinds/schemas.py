"""The JSON Schemas diagbot publishes (`diagbot schema NAME`, committed under `schemas/`): the agent case file,
the native agent trace, the trace fixture, the workspace case.yaml and every kind's report. Editors use them for
completion and checking."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from diagbot.core.outcome import RunOutcome
from diagbot.kinds.agent.cases import AgentCase
from diagbot.kinds.agent.formats.common import SPEAKERS
from diagbot.kinds.agent.formats.native import FORMAT, VERSION
from diagbot.kinds.agent.report import AgentReport
from diagbot.kinds.trace.fixture import Trace
from diagbot.kinds.trace.report import TraceReport
from diagbot.kinds.workspace.judge import WorkspaceCase, WorkspaceReport

_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_BASE = "https://diagbot.dev/schemas/"  # an identifier only: nothing is fetched from it


def _model(model: type[BaseModel], name: str, title: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    return {"$schema": _DRAFT, "$id": f"{_BASE}{name}.schema.json", **schema, "title": title}


def agent_case_file() -> dict[str, Any]:
    case = AgentCase.model_json_schema(by_alias=True)
    defs = case.pop("$defs")
    # In {defaults, cases}, a case may leave out what the defaults give, and the defaults hold any part of a case
    # (metadata merged one level deep): both are the case's fields, each checked as in a case, none required.
    partial_metadata = {k: v for k, v in defs["Metadata"].items() if k != "required"}
    partial = {k: v for k, v in case.items() if k not in ("required", "title")}
    partial["properties"] = {**partial["properties"], "metadata": {"$ref": "#/$defs/PartialMetadata"}}
    defaults = {"$ref": "#/$defs/PartialCase", "not": {"required": ["case_id"]}}  # each case names its own
    return {
        "$schema": _DRAFT,
        "$id": f"{_BASE}agent-case.schema.json",
        "title": "diagbot agent case file: one case, a list of cases, or {defaults, cases}",
        "$defs": {**defs, "AgentCase": case, "PartialMetadata": partial_metadata, "PartialCase": partial},
        "oneOf": [
            {"$ref": "#/$defs/AgentCase"},
            {"type": "array", "items": {"$ref": "#/$defs/AgentCase"}},
            {
                "type": "object",
                "required": ["cases"],
                "properties": {
                    "defaults": defaults,
                    "cases": {"type": "array", "items": {"$ref": "#/$defs/PartialCase"}},
                },
                "additionalProperties": False,
            },
        ],
    }


def agent_trace() -> dict[str, Any]:
    """The native run format, written out by hand: `formats/native.py` reads exactly this."""
    duration = {"type": ["number", "null"], "minimum": 0}
    optional_text = {"type": ["string", "null"]}
    citation = {
        "type": "object",
        "required": ["doc_id"],
        "additionalProperties": False,
        "properties": {"doc_id": {"type": "string"}, "passage_id": optional_text},
    }
    document = {
        "type": "object",
        "required": ["id"],
        "additionalProperties": False,
        "properties": {
            "id": {"type": "string"},
            "passage_id": optional_text,
            "score": {"type": ["number", "null"]},
            "rank": {"type": ["integer", "null"], "minimum": 1},
            "content": optional_text,
        },
    }
    step: dict[str, dict[str, Any]] = {
        "message": {
            "role": {"enum": list(SPEAKERS)},
            "content": {
                "type": ["string", "null", "array"],
                "items": {
                    "type": "object",
                    "description": "a content part: {type: text, text} is read, a part without text (an image) is "
                    "skipped, and a part holding a tool call is refused",
                },
            },
            "citations": {
                "type": ["array", "null"],
                "items": citation,
                "description": "the sources an assistant message cites; the run's citations are the answer's",
            },
        },
        "tool_call": {
            "id": {"type": ["string", "null"]},
            "tool": {"type": "string"},
            "args": {"description": "the arguments: an object, or the JSON string the model wrote"},
            "result": {"description": "the tool's result: text or any JSON value"},
            "error": {"type": "boolean"},
            "duration_ms": duration,
            "audit": {"type": ["object", "null"]},
        },
        "state_change": {
            "key": {"type": "string"},
            "from": {"description": "the value before; left out, the state just before the change"},
            "to": {"description": "the value after (null: the key was removed)"},
        },
        "retrieval": {
            "query": optional_text,
            "documents": {"type": "array", "items": document, "description": "in the order the retriever returned"},
        },
    }
    required = {
        "message": ["kind", "role"],
        "tool_call": ["kind", "tool"],
        "state_change": ["kind", "key", "to"],
        "retrieval": ["kind", "documents"],
    }
    return {
        "$schema": _DRAFT,
        "$id": f"{_BASE}agent-trace.schema.json",
        "title": "diagbot agent trace (one recorded run)",
        "type": "object",
        "required": ["format", "version", "steps"],
        "additionalProperties": False,
        "properties": {
            "format": {"const": FORMAT},
            "version": {"const": VERSION},
            "duration_ms": duration,
            "final_state": {"type": ["object", "null"]},
            "steps": {
                "type": "array",
                "items": {
                    "oneOf": [
                        {
                            "type": "object",
                            "required": required[kind],
                            "additionalProperties": False,
                            "properties": {"kind": {"const": kind}, **fields},
                        }
                        for kind, fields in step.items()
                    ]
                },
            },
        },
    }


SCHEMAS: dict[str, Callable[[], dict[str, Any]]] = {
    "agent-case": agent_case_file,
    "agent-trace": agent_trace,
    "agent-report": lambda: _model(AgentReport, "agent-report", "diagbot agent suite report"),
    "trace-fixture": lambda: _model(Trace, "trace-fixture", "diagbot trace fixture: one recorded run of a trace suite"),
    "trace-report": lambda: _model(TraceReport, "trace-report", "diagbot trace suite report"),
    "workspace-case": lambda: _model(WorkspaceCase, "workspace-case", "diagbot workspace case (case.yaml)"),
    "workspace-report": lambda: _model(WorkspaceReport, "workspace-report", "diagbot workspace suite report"),
    "run-outcome": lambda: _model(RunOutcome, "run-outcome", "diagbot run --format json: the outcome of a run"),
}
