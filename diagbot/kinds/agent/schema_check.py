"""Validating a call's arguments against the case's `tool_schema`, with jsonschema, bounded.

A pull request writes the schema, so its cost is bounded as well as the arguments': `pattern` runs on RE2 (case
loading refuses `patternProperties`, which jsonschema would match with Python's backtracking `re`, and any
pattern RE2 cannot run), references are never fetched, and every keyword evaluated is charged to the trial's
check budget (an `enum` by its length, `uniqueItems` by the pairs it may compare, `pattern` by the text's length),
so an exponential `anyOf` of references or a huge `enum` stops with a message instead of running for hours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import referencing.exceptions

from diagbot.core.regex import compile_regex
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


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[jsonschema.ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    _charge(len(instance) // 1000)
    if len(instance) > MAX_PATTERN_CHARS:
        yield jsonschema.ValidationError(f"a string of {len(instance):,} characters, too long for `pattern`")
    elif not compile_regex(pattern).search_text(instance):
        yield jsonschema.ValidationError(f"{show(instance)} does not match /{pattern}/")


_PER_ITEM = frozenset({"items", "prefixItems", "contains", "unevaluatedItems"})
_PER_MEMBER = frozenset({
    "properties", "additionalProperties", "unevaluatedProperties", "propertyNames", "dependentSchemas",
    "dependentRequired", "required",
})  # fmt: skip
_PER_BRANCH = frozenset({"allOf", "anyOf", "oneOf"})


def _cost(name: str, value: Any, instance: Any) -> int:
    """The keyword's own cost, plus the work it does beyond its subschemas' keywords (which are charged
    themselves): a visit per array item or object member it walks, per subschema it tries (an empty one has no
    keyword to charge), per value `const` or each `enum` value is compared with, per pair `uniqueItems` may
    compare."""
    if (name in _PER_ITEM and isinstance(instance, list)) or (name in _PER_MEMBER and isinstance(instance, dict)):
        return KEYWORD_COST + VISIT_COST * len(instance)
    if name in _PER_BRANCH and isinstance(value, list):
        return KEYWORD_COST + VISIT_COST * len(value)
    if name == "const":
        return KEYWORD_COST + _size(instance, MAX_VALIDATED_VALUES)
    if name == "enum" and isinstance(value, list):
        return KEYWORD_COST + len(value) * _size(instance, MAX_VALIDATED_VALUES)
    if name == "uniqueItems" and value is True and isinstance(instance, list):
        return KEYWORD_COST + len(instance) * len(instance) // 2
    return KEYWORD_COST


def _metered(name: str, keyword: Callable[..., Any]) -> Callable[..., Any]:
    def run(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _charge(_cost(name, value, instance))
        return keyword(validator, value, instance, schema) or ()

    return run


_KEYWORDS = {
    name: _metered(name, _pattern if name == "pattern" else keyword)
    for name, keyword in jsonschema.Draft202012Validator.VALIDATORS.items()
}
_Validator = jsonschema.validators.extend(jsonschema.Draft202012Validator, _KEYWORDS)  # type: ignore[no-untyped-call]


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
    _charge = charge
    try:
        error = jsonschema.exceptions.best_match(_Validator(schema).iter_errors(args))
    except referencing.exceptions.Unresolvable as exc:  # a $ref to nothing (or elsewhere: nothing is fetched)
        return f"its tool_schema cannot be applied: the reference {str(exc.ref)[:80]!r} does not resolve"
    except RecursionError:
        return "its tool_schema cannot be applied: the schema's references nest too deeply for these arguments"
    finally:
        _charge = _no_charge
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
