"""Base classes for the two kinds of model: strict hand-written input, lenient versioned output."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class StrictInput(BaseModel):
    """Hand-written input (case files, config): an unknown key is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Output(BaseModel):
    """Something diagbot writes and later reads back (reports, diffs): camelCase on the wire, extra keys tolerated."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True, alias_generator=to_camel, serialize_by_alias=True)
