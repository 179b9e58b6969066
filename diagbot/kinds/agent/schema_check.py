"""Validating a call's arguments against the case's `tool_schema`, with jsonschema, bounded.

A pull request writes the schema, so its cost is bounded as well as the arguments': `pattern` runs on RE2 (case
loading refuses `patternProperties`, which jsonschema would match with Python's backtracking `re`, and any
pattern RE2 cannot run), references are never fetched, and every keyword evaluated is charged to the trial's
check budget (an `enum` by its length, `uniqueItems` by the pairs it may compare, `pattern` by the text's length),
so an exponential `anyOf` of references or a huge `enum` stops with a message instead of running for hours.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import jsonschema
import referencing.exceptions

from diagbot.core.regex import compile_regex
from diagbot.core.text import closest
from diagbot.core.values import one_line
from diagbot.kinds.agent.match import show

MAX_VALIDATED_VALUES = 10_000
"""Values in one call's arguments that are validated; a larger call fails the check (it is not validated)."""
MAX_PATTERN_CHARS = 1024 * 1024
"""Characters of a string a `pattern` reads."""
KEYWORD_COST = 20
"""What one keyword evaluated costs in the check budget (`checks.MAX_CHECK_STEPS`): jsonschema takes about 25 us
per keyword, twenty times a plain comparison, so a schema gets about 100,000 keywords (2 to 3 s) per run."""

VISIT_COST = 3
"""What a keyword pays per item, member or subschema it walks: about 3.5 us each in jsonschema, even for an empty
subschema (whose own keywords, having none, charge nothing)."""

MAX_REASON_CHARS = 160  # characters of jsonschema's message shown
MAX_VALUE_CHARS = 60  # characters of the value's repr kept in it, when the message is longer than that

_charge: Callable[[int], None] = lambda count: None  # noqa: E731  # the running check's budget, set by first_error


class UnrunnablePattern(ValueError):
    """A regex of the schema that RE2 cannot run (a backreference, lookaround, too long): the schema cannot be
    applied. Case loading refuses the patterns it sees; this one was reached another way (a `$ref` into a
    schema's `default`, say)."""


def _search(pattern: str, text: str) -> bool:
    """A regex search of a schema's, on RE2 and charged to the running check's budget."""
    if not isinstance(pattern, str):  # reached through a `$ref` into data that case loading did not check
        raise UnrunnablePattern(f"its pattern {one_line(repr(pattern), 60)} is not a string")
    try:
        regex = compile_regex(pattern)
    except ValueError as exc:
        raise UnrunnablePattern(f"its pattern {one_line(pattern, 60)!r} cannot be run: {exc}") from None
    _charge(1 + len(text) * regex.program // 50)  # RE2's slow path: 200 instruction-bytes a step, 4 bytes a char
    return regex.search_text(text)


class _RE2:
    """What jsonschema's keywords use of the `re` module: `re.search(pattern, text)`, in `patternProperties`,
    `additionalProperties` and `unevaluatedProperties`. It stands in for `re` in those modules (`_use_re2`), so
    that while `first_error` validates a call, no pattern a pull request wrote is run by Python's backtracking
    engine, however the validator reaches it: case loading refuses the `patternProperties` it sees, but a `$ref`
    can lead into a schema's data. Any other use of jsonschema gets `re` itself."""

    active = False

    @staticmethod
    def search(pattern: str, text: str) -> Any:
        if not _RE2.active:
            return re.search(pattern, text)
        return _search(pattern, text) if isinstance(text, str) else None


def _use_re2() -> None:
    from jsonschema import _keywords, _legacy_keywords, _utils

    for module in (_keywords, _legacy_keywords, _utils):
        module.re = _RE2  # type: ignore[attr-defined]


_use_re2()


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    if len(instance) > MAX_PATTERN_CHARS:
        yield jsonschema.ValidationError(f"a string of {len(instance):,} characters, too long for `pattern`")
        return
    if not _search(pattern, instance):
        yield jsonschema.ValidationError(f"{show(instance)} does not match /{pattern}/")


_PER_ITEM = frozenset({"items", "prefixItems", "contains", "unevaluatedItems"})
_PER_MEMBER = frozenset({
    "properties", "additionalProperties", "unevaluatedProperties", "propertyNames", "dependentSchemas",
    "dependentRequired", "required", "dependencies",
})  # fmt: skip


def _cost(name: str, value: Any, instance: Any) -> int:
    """The keyword's own cost, plus the work it does beyond its subschemas' keywords (which are charged
    themselves): a visit per entry of its own list or object (subschemas tried, even empty ones; names required,
    each a possible error), per array item or object member of the instance it walks, per value `const` or each
    `enum` value is compared with, per pair `uniqueItems` may compare."""
    if name == "const":
        return KEYWORD_COST + _size(instance, MAX_VALIDATED_VALUES)
    if name == "enum" and isinstance(value, list):
        return KEYWORD_COST + len(value) * _size(instance, MAX_VALIDATED_VALUES)
    if name == "uniqueItems" and value is True and isinstance(instance, list):  # each pair compared member by member
        per_item = 1 + _size(instance, MAX_VALIDATED_VALUES) // max(1, len(instance))
        return KEYWORD_COST + len(instance) * len(instance) // 2 * per_item
    visits = len(value) if isinstance(value, list | dict) else 0
    if isinstance(value, dict) and name in ("dependentRequired", "dependencies"):
        visits += sum(len(names) for names in value.values() if isinstance(names, list))
    if (name in _PER_ITEM and isinstance(instance, list)) or (name in _PER_MEMBER and isinstance(instance, dict)):
        visits += len(instance)
    return KEYWORD_COST + VISIT_COST * visits


def _metered(name: str, keyword: Callable[..., Any]) -> Callable[..., Any]:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _charge(_cost(name, value, instance))
        return keyword(validator, value, instance, schema) or ()

    return run


_DRAFTS: tuple[Any, ...] = (
    jsonschema.Draft202012Validator,
    jsonschema.Draft201909Validator,
    jsonschema.Draft7Validator,
    jsonschema.Draft6Validator,
    jsonschema.Draft4Validator,
)


def _uri(text: Any) -> str:
    return str(text).split("://", 1)[-1].rstrip("#")  # http or https, with or without the empty fragment


_BY_URI = {_uri(d.META_SCHEMA.get("$id") or d.META_SCHEMA.get("id")): d for d in _DRAFTS}


def draft_of(schema: Any) -> Any:
    """The validator class of the draft the schema declares in `$schema` (2020-12 when it declares none); a
    ValueError for a `$schema` that is no draft diagbot knows."""
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if declared is None:
        return jsonschema.Draft202012Validator
    found = _BY_URI.get(_uri(declared)) if isinstance(declared, str) else None
    if found is None:
        raise ValueError(
            f"declares $schema {str(declared)[:80]!r}, which is no JSON Schema draft diagbot knows (2020-12, "
            "2019-09, draft-07, draft-06, draft-04); remove it to have the schema read as 2020-12"
        )
    return found


@lru_cache(maxsize=len(_DRAFTS))
def _metered_validator(draft: Any) -> Any:
    keywords = {name: _metered(name, _pattern if name == "pattern" else k) for name, k in draft.VALIDATORS.items()}
    return jsonschema.validators.extend(draft, keywords)  # type: ignore[no-untyped-call]


_ANNOTATIONS = frozenset({
    "$schema", "$id", "id", "$defs", "definitions", "$comment", "$anchor", "$dynamicAnchor", "$recursiveAnchor",
    "$vocabulary", "title", "description", "default", "examples", "readOnly", "writeOnly", "deprecated",
    "contentMediaType", "contentEncoding", "contentSchema", "format",
    "then", "else", "minContains", "maxContains", "exclusiveMaximum", "exclusiveMinimum",
})  # fmt: skip  # keywords that validate nothing by design, and those read by a sibling (`if`, `contains`, ...)
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
_SCHEMAS = (
    "items", "prefixItems", "allOf", "anyOf", "oneOf", "additionalItems", "additionalProperties", "not", "if",
    "then", "else", "contains", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema",
)  # fmt: skip  # a subschema, or a list of them
MAX_SCHEMA_NODES = 100_000  # subschemas `unknown_keywords` looks at
MAX_UNKNOWN_SHOWN = 20
MAX_PATH_CHARS = 200  # of a subschema's path: each is built from its parent's, so an uncut one could copy megabytes


def unknown_keywords(schema: Any) -> list[str]:
    """`path: unknown keyword 'k' (did you mean ...?)` for each keyword that the schema's draft does not have, in
    the schema and its subschemas: JSON Schema ignores such a keyword, so a misspelt `maximun` checks nothing."""
    draft = draft_of(schema)
    known = sorted({*draft.VALIDATORS, *_ANNOTATIONS})
    found: list[str] = []
    todo: list[tuple[str, Any]] = [("", schema)]
    visited = 0
    while todo and visited < MAX_SCHEMA_NODES and len(found) < MAX_UNKNOWN_SHOWN:
        path, node = todo.pop()
        visited += 1
        if not isinstance(node, dict):
            continue
        for key, value in node.items():
            if len(found) == MAX_UNKNOWN_SHOWN:
                break
            at = one_line(f"{path}.{key}" if path else str(key), MAX_PATH_CHARS)  # a path of keys the PR wrote
            if key not in draft.VALIDATORS and key not in _ANNOTATIONS:
                close = closest(str(key), known)
                found.append(
                    f"{path or 'top level'}: unknown keyword {one_line(str(key), 80)!r}"
                    + (f" (did you mean {close}?)" if close else "")
                )
            elif key in _SCHEMA_MAPS and isinstance(value, dict):
                todo.extend((one_line(f"{at}.{name}", MAX_PATH_CHARS), sub) for name, sub in value.items())
            elif key in _SCHEMAS:
                subs = value if isinstance(value, list) else [value]
                todo.extend((f"{at}[{i}]" if isinstance(value, list) else at, sub) for i, sub in enumerate(subs))
    return found[:MAX_UNKNOWN_SHOWN]


def _size(value: Any, limit: int) -> int:
    count, todo = 0, [value]
    while todo and count <= limit:
        item = todo.pop()
        count += 1
        if isinstance(item, dict):
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return count


def first_error(schema: Any, args: Any, charge: Callable[[int], None]) -> str | None:
    """Why `args` do not validate (the best match, with its path), or None. `charge` raises when the budget is
    spent; that exception passes through."""
    global _charge
    if _size(args, MAX_VALIDATED_VALUES) > MAX_VALIDATED_VALUES:
        return f"the arguments hold more than {MAX_VALIDATED_VALUES:,} values, too many to validate"
    _charge, _RE2.active = charge, True
    try:
        validator = _metered_validator(draft_of(schema))(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
    except referencing.exceptions.Unresolvable as exc:  # a $ref to nothing (or elsewhere: nothing is fetched)
        return f"its tool_schema cannot be applied: the reference {str(exc.ref)[:80]!r} does not resolve"
    except RecursionError:
        return "its tool_schema cannot be applied: the schema's references nest too deeply for these arguments"
    except UnrunnablePattern as exc:
        return f"its tool_schema cannot be applied: {exc}"
    except (TypeError, AttributeError, KeyError, ValueError, IndexError) as exc:
        # a keyword with a value of the wrong shape, reached through a `$ref` into a part of the schema that
        # `check_schema` does not look at (`default`, `examples`, an `x-` key): jsonschema fails on it
        return f"its tool_schema cannot be applied: a keyword it reaches has a value of the wrong shape ({exc})"
    finally:
        _charge, _RE2.active = _no_charge, False
    if error is None:
        return None
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path).lstrip(".")
    return f"{where or 'arguments'}: {_reason(error)}"


def _reason(error: jsonschema.ValidationError) -> str:
    """jsonschema's message, bounded: most start with the value's repr, which is cut first, so that a long value
    never pushes out the reason ("[[[[…]]]] is not of type 'object'")."""
    message, value = error.message, repr(error.instance)
    if len(message) > MAX_REASON_CHARS and message.startswith(value) and len(value) > MAX_VALUE_CHARS:
        message = value[: MAX_VALUE_CHARS - 1] + "…" + message[len(value) :]
    return message if len(message) <= MAX_REASON_CHARS else message[: MAX_REASON_CHARS - 1] + "…"


def _no_charge(count: int) -> None:
    return None
