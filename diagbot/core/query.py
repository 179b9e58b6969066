"""JMESPath queries from untrusted input, run within fixed bounds.

A pull request writes the queries (in a case's checks), so a query must not be able to stall a run or fill its
memory. It is capped in length and in nesting when it is validated, and while it runs it is metered in steps (nodes
visited, values compared) and in what it builds (array items, object members, string characters): hitting a bound
raises `QueryLimitError`, which fails that one query and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from numbers import Number
from typing import Any, TypeVar

import jmespath
from jmespath import functions as jmespath_functions
from jmespath.exceptions import IncompleteExpressionError, JMESPathError
from jmespath.parser import ParsedResult
from jmespath.visitor import Options, TreeInterpreter

from diagbot.core.values import one_line

# Bounds on one expression, checked when it is validated.
MAX_QUERY_CHARS = 1_000
"""Characters in one JMESPath expression."""
MAX_QUERY_DEPTH = 64
"""Levels of nesting in one JMESPath expression (its syntax tree), pipes and nested brackets included."""
# Bounds on one query over one value, counted while it runs.
MAX_QUERY_STEPS = 2_000_000
"""Interpreter steps (expression nodes visited, value pairs compared) of one query on one file: about a second."""
MAX_QUERY_BUILT = 16 * 1024 * 1024
"""Array items, object members and string characters one query may build on one file, in total: twice the largest
file a check reads (8 MiB), so `to_string(@)` of any file fits, and a string doubled in a loop does not."""

_SHOWN_CHARS = 80


_COMPARATORS = frozenset(("eq", "ne", "lt", "lte", "gt", "gte"))
_IDENTIFIERS = frozenset(("quoted_identifier", "unquoted_identifier"))


def quoted_comparisons(expr: str) -> list[str]:
    """The double-quoted names compared in a (valid) expression: `status == "refunded"` compares `status` with a
    field named refunded (null, most likely), not with the text, which JMESPath writes 'refunded'."""
    try:
        tokens = list(jmespath.lexer.Lexer().tokenize(expr))
    except JMESPathError:
        return []
    kinds = [str(token["type"]) for token in tokens]

    def compared_with_a_field(n: int, step: int) -> bool:  # `"order-id" == `1``: a field compared with a literal
        other = n + 2 * step
        return 0 <= other < len(kinds) and kinds[n + step] in _COMPARATORS and kinds[other] in _IDENTIFIERS

    return [
        str(token["value"])
        for n, token in enumerate(tokens)
        if kinds[n] == "quoted_identifier" and (compared_with_a_field(n, -1) or compared_with_a_field(n, 1))
    ]


def quoted_text_slips(where: str, expr: str) -> list[str]:
    """A warning for each of (at most 3 of) the double-quoted names a query compares (`quoted_comparisons`), for
    `validate` and `run` to say where the query is."""
    found = []
    for name in quoted_comparisons(expr)[:3]:
        shown = one_line(name, 60)
        found.append(
            f'{where}: "{shown}" is a field name in JMESPath, not a text, so this compares with the field {shown} '
            f"(null when there is none); write the text '{shown}' or `\"{shown}\"`"
        )
    return found


def valid_query(expr: str) -> str:
    """A pydantic AfterValidator: the expression itself when it parses within the bounds, else a ValueError."""
    shown = repr(expr[:_SHOWN_CHARS]) + ("..." if len(expr) > _SHOWN_CHARS else "")
    if len(expr) > MAX_QUERY_CHARS:
        raise ValueError(
            f"JMESPath expression {shown} is {len(expr):,} characters long; the limit is {MAX_QUERY_CHARS:,}"
        )
    try:
        tree = _compiled(expr).parsed
        depth = _depth(tree)
    except JMESPathError as exc:  # its text is three lines: what is wrong, the expression, a caret under it
        raise ValueError(f"invalid JMESPath expression {shown}: {_parse_error(exc)}") from None
    except RecursionError:
        depth = MAX_QUERY_DEPTH + 1  # the parser itself ran out of stack: certainly over the limit
    if depth > MAX_QUERY_DEPTH:
        raise ValueError(
            f"JMESPath expression {shown} nests more than {MAX_QUERY_DEPTH} levels deep (pipes and brackets count); "
            "flatten it"
        )
    unknown = sorted(_functions(tree) - set(_BoundedFunctions.FUNCTION_TABLE))
    if unknown:  # else the query fails only when a run is judged
        called = ", ".join(repr(name[:40]) for name in unknown[:5])
        raise ValueError(f"JMESPath expression {shown} calls {called}, no JMESPath function")
    return expr


def _parse_error(exc: JMESPathError) -> str:
    """What jmespath says is wrong, on one line, with where (counted from 1)."""
    if isinstance(exc, IncompleteExpressionError):
        said = "the expression is incomplete"
    else:
        said = getattr(exc, "message", None) or getattr(exc, "msg", None) or "it cannot be parsed"
    said = one_line(str(said), 120).removesuffix(" at")  # it may quote a token of the expression: escaped, cut
    where = getattr(exc, "lexer_position", getattr(exc, "lex_position", None))
    return f"{said} at character {where + 1}" if isinstance(where, int) else said


def _functions(tree: Any) -> set[str]:
    """The names of the functions a syntax tree calls."""
    names, todo = set(), [tree]
    while todo:
        node = todo.pop()
        if node.get("type") == "function_expression" and isinstance(node.get("value"), str):
            names.add(node["value"])
        todo.extend(child for child in node.get("children", ()) if isinstance(child, dict))
    return names


def _depth(tree: Any) -> int:
    """Levels of the syntax tree, walked without recursion."""
    deepest, todo = 0, [(tree, 1)]
    while todo:
        node, level = todo.pop()
        deepest = max(deepest, level)
        todo.extend((child, level + 1) for child in node.get("children", ()) if isinstance(child, dict))
    return deepest


@lru_cache(maxsize=1024)
def _compiled(expr: str) -> ParsedResult:
    return jmespath.compile(expr)


def run_query(expr: str, data: Any) -> Any:
    """`expr` evaluated on `data` by the bounded interpreter, with the meter reset first.

    Raises QueryLimitError when a bound is hit, RecursionError on a value nested too deeply, and what JMESPath
    itself raises (JMESPathError, JMESPathTypeError, and TypeError or ValueError from a function given the wrong
    value, or an arithmetic one: `floor(to_number('1e400'))` is a ValueError here, as `floor` of NaN is)."""
    _METER.reset()
    try:
        return _INTERPRETER.visit(_compiled(expr).parsed, data)
    except ArithmeticError as exc:  # OverflowError: an infinity made an integer; callers know ValueError
        raise ValueError(f"{type(exc).__name__}: {exc}") from None


def query_steps() -> int:
    """The steps the last query took (or had taken when it stopped): what a caller with a budget of its own, over
    many queries, charges for it."""
    return _METER.steps


def truthy(value: Any) -> bool:
    """JMESPath's own truth: null, false and empty string/array/object are false; the number 0 is true."""
    if value is None or value is False:
        return False
    return not (isinstance(value, str | list | dict) and len(value) == 0)


# A query cannot loop, but it can multiply: `[@, @]` doubles what it is given, `join('', [@, @])` doubles a
# string, and 36 of them take tens of GB. So everything the interpreter builds (projections, flattening, slices,
# multi-selects, what functions read and write) is charged against MAX_QUERY_BUILT, and every node visited and
# every pair of values compared against MAX_QUERY_STEPS, per query and file. Values built by `[@, @]` share what
# they hold, so they stay small until something writes them out in full: `to_string` sizes its argument first
# (each shared part once), `==` compares pair by pair on the meter, and whoever shows a result must write only
# what it shows.


class QueryLimitError(Exception):
    """A JMESPath query hit a bound: its check fails with this message, nothing else is affected."""


class _Meter:
    """What the query being evaluated has cost so far; reset before each query on each file."""

    __slots__ = ("built", "steps")

    def __init__(self) -> None:
        self.steps = self.built = 0

    def reset(self) -> None:
        self.steps = self.built = 0

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > MAX_QUERY_STEPS:
            raise QueryLimitError(
                f"stopped after {MAX_QUERY_STEPS:,} evaluation steps, the limit for one query on one file; "
                "narrow the query"
            )

    def build(self, count: int) -> None:
        self.built += count
        if self.built > MAX_QUERY_BUILT:
            raise QueryLimitError(
                f"stopped: it would build more than {MAX_QUERY_BUILT:,} array items, object members and string "
                "characters, the limit for one query on one file; narrow the query"
            )

    def room(self) -> int:
        return MAX_QUERY_BUILT - self.built


def _written_size(value: Any, cap: int) -> int:
    """About how many characters `value` takes as JSON, parts shared by `[@, @]` counted as often as they would be
    written, in time linear in its distinct parts (each array or object is sized once, after its items), without
    recursion. Sizes stop growing past `cap`. No part is written more than a few times longer than it counts
    (escapes, floats), and each counts at least one, so json.dumps of a value under `cap` is bounded too."""
    sizes: dict[int, int] = {}  # id -> size of each array and object; all stay alive inside `value` meanwhile
    todo: list[tuple[Any, bool]] = [(value, False)]
    while todo:
        item, children_sized = todo.pop()
        if id(item) in sizes or not isinstance(item, list | dict):
            continue
        members = item if isinstance(item, list) else item.values()
        if children_sized:
            size = 1 + len(item) + sum(_sized(member, sizes) for member in members)
            if isinstance(item, dict):
                size += sum(len(key) + 3 for key in item)
            sizes[id(item)] = min(size, cap + 1)
        else:
            todo.append((item, True))
            todo.extend((member, False) for member in members if isinstance(member, list | dict))
    return _sized(value, sizes)


def _sized(item: Any, sizes: dict[int, int]) -> int:
    if isinstance(item, str):  # to_string escapes non-ASCII text, 6 characters for most characters
        return len(item) * (1 if item.isascii() else 6) + 2
    if isinstance(item, list | dict):
        return sizes[id(item)]
    if isinstance(item, int) and not isinstance(item, bool):
        return item.bit_length() // 3 + 1  # at least its decimal digits
    return 5


def _is_number(value: Any) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool)


class _BoundedFunctions(jmespath_functions.Functions):
    """JMESPath's functions, charged to the meter: each pays for the strings, arrays and objects it is given
    (it reads them), `join` and `to_string` for what they write, `contains` for each item it compares."""

    _FREE = frozenset({"length", "type", "not_null", "to_array", "abs", "ceil", "floor"})

    def call_function(self, function_name: str, resolved_args: Iterable[Any]) -> Any:
        args = list(resolved_args)
        if function_name not in self._FREE:
            _METER.build(sum(len(arg) for arg in args if isinstance(arg, str | list | dict)))
        return super().call_function(function_name, args)

    @jmespath_functions.signature({"types": ["string"]}, {"types": ["array-string"]})
    def _func_join(self, separator: str, array: list[str]) -> str:
        _METER.build(sum(map(len, array)) + len(separator) * max(len(array) - 1, 0))
        return separator.join(array)

    @jmespath_functions.signature({"types": []})
    def _func_to_string(self, arg: Any) -> str:
        if isinstance(arg, str):
            return arg
        _METER.build(_written_size(arg, _METER.room()))
        return json.dumps(arg, separators=(",", ":"), default=str)

    @jmespath_functions.signature({"types": ["array", "string"]}, {"types": []})
    def _func_contains(self, subject: list[Any] | str, search: Any) -> bool:
        if isinstance(subject, str):
            return search in subject  # a TypeError for a non-string search, as JMESPath's own
        return any(item is search or _equal(item, search) for item in subject)


def _equal(left: Any, right: Any) -> bool:
    """JSON equality (Python's `==`, but a boolean equals only a boolean), without recursion and charged a step per
    pair, so that comparing two arrays that share their items many times over costs what it costs, not forever."""
    todo = [(left, right)]
    _METER.step()
    while todo:
        a, b = todo.pop()
        if a is b:  # what `==` inside an array or object does first, too
            continue
        if isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                return False
            _METER.step(len(a))
            todo.extend(zip(a, b, strict=True))
        elif isinstance(a, dict):
            if not isinstance(b, dict) or len(a) != len(b):
                return False
            _METER.step(len(a))
            for key, member in a.items():
                if key not in b:
                    return False
                todo.append((member, b[key]))
        elif isinstance(b, list | dict) or a != b or (type(a) is bool) != (type(b) is bool):
            return False  # JSON's true is no 1, at any depth (Python's `==` says it is)
    return True


class _BoundedInterpreter(TreeInterpreter):
    """JMESPath's interpreter with each node visited counted as a step, and what it builds charged."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self._methods: dict[str, Callable[..., Any]] = {}

    def visit(self, node: Any, *args: Any, **kwargs: Any) -> Any:
        """The base class's dispatch (one call less than calling it: this is the hot loop), plus a step."""
        meter = _METER
        meter.steps += 1
        if meter.steps > MAX_QUERY_STEPS:
            meter.step(0)  # raises
        method = self._methods.get(node["type"])
        if method is None:
            method = self._methods[node["type"]] = getattr(self, f"visit_{node['type']}", self.default_visit)
        return method(node, *args, **kwargs)

    def visit_comparator(self, node: Any, value: Any) -> Any:
        left, right = (self.visit(child, value) for child in node["children"])
        operator = node["value"]
        if operator in ("eq", "ne"):
            if isinstance(left, list | dict) and isinstance(right, list | dict):
                return _equal(left, right) is (operator == "eq")
            same = left == right and (type(left) is bool) == (type(right) is bool)  # JSON's true is no 1
            return same is (operator == "eq")
        if not (_is_number(left) or isinstance(left, str)) or not (_is_number(right) or isinstance(right, str)):
            return None  # ordering is for numbers (and strings), as in JMESPath's own
        return self.COMPARATOR_FUNC[operator](left, right)

    def visit_flatten(self, node: Any, value: Any) -> Any:
        base = self.visit(node["children"][0], value)
        if not isinstance(base, list):
            return None
        _METER.build(sum(len(item) if isinstance(item, list) else 1 for item in base))  # before it is built
        merged: list[Any] = []
        for item in base:
            if isinstance(item, list):
                merged.extend(item)
            else:
                merged.append(item)
        return merged

    def visit_slice(self, node: Any, value: Any) -> Any:
        return _built(super().visit_slice(node, value))

    def visit_multi_select_dict(self, node: Any, value: Any) -> Any:
        return _built(super().visit_multi_select_dict(node, value))

    def visit_multi_select_list(self, node: Any, value: Any) -> list[Any] | None:
        return _built(super().visit_multi_select_list(node, value))

    def visit_projection(self, node: Any, value: Any) -> list[Any] | None:
        return _built(super().visit_projection(node, value))

    def visit_value_projection(self, node: Any, value: Any) -> list[Any] | None:
        return _built(super().visit_value_projection(node, value))

    def visit_filter_projection(self, node: Any, value: Any) -> list[Any] | None:
        return _built(super().visit_filter_projection(node, value))


_T = TypeVar("_T")


def _built(value: _T) -> _T:
    """Charge what a node built; each such node builds at most one item per item it was given or per child."""
    if isinstance(value, list | dict):
        _METER.build(len(value))
    return value


# One meter and one interpreter serve every query (`ParsedResult.search` builds a new interpreter per call, and each
# is a reference cycle, as it caches its own bound methods, that only the cycle collector frees, which a suite
# kind may pause while it judges). Queries run one at a time: `run_query` resets the meter before each.
_METER = _Meter()
_INTERPRETER = _BoundedInterpreter(Options(custom_functions=_BoundedFunctions()))
