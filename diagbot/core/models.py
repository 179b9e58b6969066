"""Base classes for the two kinds of model: strict hand-written input, lenient versioned output."""

from __future__ import annotations

import functools
import re
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from diagbot.core.text import closest


class StrictInput(BaseModel):
    """Hand-written input (case files, config): an unknown key is an error, never silently ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)


class Output(BaseModel):
    """Something diagbot writes and later reads back (reports, diffs): camelCase on the wire, extra keys tolerated."""

    model_config = ConfigDict(
        extra="ignore", populate_by_name=True, alias_generator=to_camel, serialize_by_alias=True, defer_build=True,
        allow_inf_nan=False,  # a baseline's `1e400` (read as infinity) is refused, not shown as "inf ms"
    )  # fmt: skip


def field_names_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    """The field names (aliases where given) of the model that holds the last part of a validation error's
    `loc`: what a misspelt key could have meant. Follows fields through lists, dicts, optionals and unions;
    parts that are list indexes, dict keys or union tags are stepped over."""
    current: list[Any] = [model]
    for part in loc[:-1]:
        models = [m for m in _models_in(current) if _field(m, part) is not None]
        # a field of a model, else an index, a dict key or a union tag: step into the element types
        current = [_field(models[0], part).annotation] if models else _elements(current)
    models = _models_in(current)
    return [f.alias or name for name, f in models[0].model_fields.items()] if models else []


_HOME_DEPTH = 3  # levels of fields looked into for `field_homes`: a model that holds itself would never end


@functools.cache
def field_homes(model: type[BaseModel]) -> dict[str, str]:
    """Each field name (alias where given) that one model inside `model` has and no other, to the dotted path of
    the field holding that model (`confirmation_required` -> `side_effect_policy`); the model's own fields map to
    "". For a key written at the wrong level: it says where the key goes (a name many models have, `id` or
    `tool`, says nothing)."""
    homes: dict[str, set[str]] = {}
    todo: list[tuple[type[BaseModel], str]] = [(model, "")]
    while todo:
        current, path = todo.pop()
        if path.count(".") >= _HOME_DEPTH:
            continue
        for name, field in current.model_fields.items():
            key = field.alias or name
            homes.setdefault(key, set()).add(path)
            inner = _models_in([field.annotation]) + _models_in(_elements([field.annotation]))
            todo += [(sub, f"{path}.{key}" if path else key) for sub in inner]
    return {key: next(iter(paths)) for key, paths in homes.items() if len(paths) == 1}


def _field(model: type[BaseModel], name: Any) -> Any:
    fields = model.model_fields
    return fields.get(str(name)) or next((f for f in fields.values() if f.alias == name), None)


def _args(annotation: Any) -> list[Any]:
    """The types an annotation stands for, one level down (Annotated and unions unwrapped)."""
    if get_origin(annotation) is Annotated:
        return _args(get_args(annotation)[0])
    if get_origin(annotation) in (Union, UnionType):
        return [t for a in get_args(annotation) for t in _args(a)]
    return [annotation]


def _models_in(annotations: list[Any]) -> list[type[BaseModel]]:
    found = [t for a in annotations for t in _args(a)]
    return [t for t in found if isinstance(t, type) and issubclass(t, BaseModel)]


def _elements(annotations: list[Any]) -> list[Any]:
    found = []
    for annotation in (t for a in annotations for t in _args(a)):
        origin_args = get_args(annotation)
        if get_origin(annotation) in (list, dict, tuple) and origin_args:
            found.append(origin_args[-1])
        elif not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            continue
        else:
            found.append(annotation)  # a union tag before the model's own fields
    return found


def literal_choices(error: Any) -> tuple[list[str], str]:
    """A pydantic `literal_error`'s allowed values, and " (did you mean X?)" for the closest to the value given
    (or "")."""
    allowed = re.findall(r"'([^']*)'", str((error.get("ctx") or {}).get("expected", "")))
    close = closest(str(error.get("input"))[:1000], allowed, cutoff=0.5)
    return allowed, f" (did you mean {close}?)" if close else ""


def error_message(error: Any) -> str:
    """A pydantic error's message as a sentence of ours: without the "Value error, " that pydantic puts before
    what a validator raised."""
    return str(error["msg"]).removeprefix("Value error, ")
