"""Check requests and responses against the vendored GitHub OpenAPI description.

The description's only server is ``https://api.github.com``, so a request to the
test server at ``http://127.0.0.1:PORT/repos/...`` would never match it.
``SpecRequest`` therefore presents every request to openapi-core as if it had been
sent to ``https://api.github.com`` with the same path: the description's server
URL stays untouched, and only the path, method, query and body are judged.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openapi_core import OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_core.templating.paths.exceptions import PathError
from openapi_core.templating.responses.exceptions import ResponseNotFound
from werkzeug.datastructures import Headers, ImmutableMultiDict

SPEC_PATH = Path(__file__).parent / "openapi" / "subset.json"
SPEC_SERVER = "https://api.github.com"


@functools.cache
def document() -> dict[str, Any]:
    """The description as plain JSON data, with nullable enums made to admit null."""
    with SPEC_PATH.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    _admit_null_in_nullable_enums(data)
    return data


def _admit_null_in_nullable_enums(node: Any) -> None:
    """Add ``None`` to every ``enum`` of a ``nullable: true`` schema.

    GitHub writes e.g. check-run ``conclusion`` as ``nullable: true`` with an enum
    of strings and really sends ``null`` for unfinished runs. OpenAPI 3.0.3 says
    nullable does not widen an enum, and openapi-schema-validator follows that,
    so the real API's own responses would fail. Putting null into the enum states
    GitHub's evident intent; in this subset it affects only check-run.conclusion.
    """
    if isinstance(node, dict):
        enum = node.get("enum")
        if node.get("nullable") is True and isinstance(enum, list) and None not in enum:
            enum.append(None)
        for value in node.values():
            _admit_null_in_nullable_enums(value)
    elif isinstance(node, list):
        for value in node:
            _admit_null_in_nullable_enums(value)


@functools.cache
def spec() -> OpenAPI:
    """Load the description once per process (about 0.2 s, mostly validating the spec itself)."""
    return OpenAPI.from_dict(document())


@functools.cache
def operations() -> list[tuple[str, str, str]]:
    """(method, path template, operationId) for every operation in the description."""
    paths = document()["paths"]
    return [
        (method.upper(), template, op["operationId"])
        for template, item in paths.items()
        for method, op in item.items()
        if method != "parameters"
    ]


@dataclass
class SpecRequest:
    """A request in the shape openapi-core reads (its ``Request`` protocol)."""

    method: str  # lower case, as openapi-core expects
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes | None
    content_type: str
    host_url: str = SPEC_SERVER
    parameters: RequestParameters = field(init=False)

    def __post_init__(self) -> None:
        self.parameters = RequestParameters(query=ImmutableMultiDict(self.query), header=Headers(self.headers))


@dataclass
class SpecResponse:
    """A response in the shape openapi-core reads (its ``Response`` protocol)."""

    status_code: int
    headers: Headers
    data: bytes
    content_type: str


class NotDescribed(Exception):
    """The path or method is not in the description, so the call has no contract."""


def describe(exc: BaseException) -> str:
    """One readable line per problem, with the JSON path of each schema error."""
    parts = [str(exc)]
    cause = exc.__cause__
    schema_errors = getattr(cause, "schema_errors", None) or getattr(exc, "schema_errors", None)
    if schema_errors:
        # str(exc) names the parameter ("Invalid query parameter: status") but for
        # bodies it repeats the whole value, which would drown the useful part.
        parts = [parts[0] if len(parts[0]) <= 100 else type(exc).__name__]
        for err in schema_errors:
            where = "/".join(str(p) for p in err.absolute_path) or "<root>"
            parts.append(f"{where}: {err.message}")
    elif cause is not None:
        parts.append(str(cause))
    return "; ".join(parts)


def request_problems(request: SpecRequest) -> list[str]:
    """Everything wrong with ``request``; raises NotDescribed for an unknown path or method."""
    try:
        errors = list(spec().request_validator.iter_errors(request))
    except PathError as exc:
        raise NotDescribed(str(exc)) from exc
    if errors and isinstance(errors[0], PathError):
        raise NotDescribed(str(errors[0]))
    return [describe(err) for err in errors]


def response_problems(request: SpecRequest, response: SpecResponse) -> list[str] | None:
    """Everything wrong with ``response``; None when the description has no entry for its status."""
    errors = list(spec().response_validator.iter_errors(request, response))
    if any(isinstance(err, ResponseNotFound) for err in errors):
        return None
    return [describe(err) for err in errors]


def encode(body: Any) -> bytes:
    """JSON bytes for a response body (helper shared by server and checker)."""
    return json.dumps(body, separators=(",", ":")).encode()


def spec_response(status: int, headers: dict[str, str], data: bytes) -> SpecResponse:
    """Wrap a response the server is about to send."""
    content_type = headers.get("Content-Type", "") if data else ""
    return SpecResponse(status, Headers(headers), data, content_type)
