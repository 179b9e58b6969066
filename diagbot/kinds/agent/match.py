"""Matching what a case expects against what a run did: argument values, and expected calls against calls.

Arguments: an expected object matches when each expected key is present and matches (extra keys are allowed
unless `exact`); arrays match element by element and must be equally long; numbers by value (1 == 1.0), booleans
only booleans, strings exactly, null only null. A mismatch names the first path that differs.

Calls: every pairing of expected items with calls is one to one and is found whenever one exists (a maximum
bipartite matching, not a greedy scan, so a loose item never takes the call a stricter one needs).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
U = TypeVar("U")
_SHOWN = 60


def show(value: Any) -> str:
    """A value as short JSON for a message, written only as far as `_SHOWN` characters: a huge string, or a hugely
    shared value like a query's `[@, @]`, costs no more than its start."""
    parts: list[str] = []
    size = 0
    todo: list[Any] = [value]
    while todo and size <= _SHOWN:
        item = todo.pop()
        if isinstance(item, _Raw):
            part = item.text
        elif isinstance(item, str):
            part = json.dumps(item[: _SHOWN + 1], ensure_ascii=False)
        elif isinstance(item, dict):
            part = "{"
            members: list[Any] = []
            for n, (key, child) in enumerate(item.items()):
                members += [
                    _Raw(", " if n else ""),
                    _Raw(json.dumps(str(key)[: _SHOWN + 1], ensure_ascii=False) + ": "),
                    child,
                ]
                if len(members) > _SHOWN:
                    break
            todo += [_Raw("}"), *reversed(members)]
        elif isinstance(item, list):
            part = "["
            members = []
            for n, child in enumerate(item[: _SHOWN + 1]):
                members += [_Raw(", " if n else ""), child]
            todo += [_Raw("]"), *reversed(members)]
        elif isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > 200:
            part = f"<a number of about {int(item.bit_length() * 0.30103):,} digits>"
        else:
            part = json.dumps(item, default=str)
        parts.append(part)
        size += len(part)
    text = "".join(parts)
    return text if len(text) <= _SHOWN and not todo else text[: _SHOWN - 1] + "…"


class _Raw:
    """Text `show` writes as it is (punctuation between the values it walks)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


def _free(count: int) -> None:
    """The default budget of `args_mismatch` and `max_matching`: none."""


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def args_mismatch(
    expected: Any,
    actual: Any,
    exact: bool = False,
    path: str = "",
    spend: Callable[[int], None] = _free,
    empty_exact: bool = False,
    root: str = "arguments",
) -> str | None:
    """None when `actual` matches `expected`, else where and how the first difference is (`args_fit` decides the
    same without writing it). `spend` is charged, once the comparison ends, a step per value compared and per key an
    exact match looks at. `empty_exact`: an expected `{}` is matched only by `{}` (a state value that must be
    empty), not by any object. `root`: what a difference of the whole value (`path` empty) is said of."""
    found = _difference(expected, actual, exact, path, True, spend, empty_exact)
    if found is None:
        return None
    where, kind, want, got = found
    label = where or root
    if kind == "extra":
        return f"{_join(where, want)}: not expected ({'args_match is exact' if exact else 'expected an empty object'})"
    if kind == "missing":
        return f"{label}: missing"
    if kind == "length":
        return f"{label}: expected {len(want)} items, got {len(got)}"
    if kind in ("object", "array"):
        return f"{label}: expected an {kind}, got {show(got)}"
    return f"{label}: expected {show(want)}, got {show(got)}"


def args_fit(expected: Any, actual: Any, exact: bool, spend: Callable[[int], None], empty_exact: bool = False) -> bool:
    """Whether `actual` matches `expected`, as `args_mismatch` decides, without writing why not."""
    return _difference(expected, actual, exact, "", False, spend, empty_exact) is None


def _difference(
    expected: Any,
    actual: Any,
    exact: bool,
    path: str,
    detail: bool,
    spend: Callable[[int], None],
    empty_exact: bool = False,
) -> tuple[str, str, Any, Any] | None:
    """The first difference as (path, kind, expected, actual), paths written only with `detail`. Iterative:
    nesting depth is bounded by what the JSON decoder accepted, not by Python's stack."""
    todo: list[tuple[Any, Any, str]] = [(expected, actual, path)]
    visited = 0
    try:
        while todo:
            want, got, where = todo.pop()
            visited += 1
            if isinstance(want, dict):
                if not isinstance(got, dict):
                    return where, "object", want, got
                if exact or (empty_exact and not want):
                    visited += len(got)
                    if any(k not in want for k in got):
                        return where, "extra", min(str(k) for k in got if k not in want), got
                for key in reversed(list(want)):
                    at = _join(where, str(key)) if detail else ""
                    todo.append((want[key], got[key], at) if key in got else (_MISSING, _MISSING, at))
            elif want is _MISSING:
                return where, "missing", want, got
            elif isinstance(want, list):
                if not isinstance(got, list):
                    return where, "array", want, got
                if len(want) != len(got):
                    return where, "length", want, got
                todo.extend(
                    (w, g, f"{where}[{i}]" if detail else "")
                    for i, (w, g) in reversed(list(enumerate(zip(want, got, strict=True))))
                )
            elif _is_number(want):
                if not _is_number(got) or want != got:
                    return where, "value", want, got
            elif type(want) is not type(got) or want != got:  # bool, str, None: same type and value
                return where, "value", want, got
        return None
    finally:
        spend(visited)


_MISSING = object()


def _join(path: str, key: str) -> str:
    """`path.key`, or `path["key"]` for a key that would read as something else (empty, with dots, brackets or
    spaces), so that a message names one place."""
    if not _PLAIN_KEY.fullmatch(key):
        return f"{path}[{json.dumps(key, ensure_ascii=False)}]"
    return f"{path}.{key}" if path else key


_PLAIN_KEY = re.compile(r"[^\W\d][\w-]*")


def max_matching(
    left: Sequence[T], right: Sequence[U], fits: Callable[[T, U], bool], spend: Callable[[int], None] = _free
) -> list[int | None]:
    """A maximum one-to-one pairing of `left` with `right` items it fits: for each left item, the index of its
    right item or None. Left items first take free items greedily, those with the fewest choices first (a loose
    item then rarely holds the call a strict one needs). The rest search for augmenting paths (Kuhn's algorithm,
    with an explicit stack) in passes: within a pass every right item is visited at most once, so a pass costs at
    most one visit per edge, and passes repeat while one of them pairs more. A pass that pairs nothing more, its
    failed searches sharing their marks, proves the pairing maximum. `spend` is charged a step per edge visited."""
    if len(left) == 1:  # the common case: the first fitting item will do, and most need not be tried
        first = next((j for j, r in enumerate(right) if fits(left[0], r)), None)
        return [first]
    edges = [[j for j, r in enumerate(right) if fits(item, r)] for item in left]
    owner: list[int | None] = [None] * len(right)
    paired = [False] * len(left)
    for i in sorted(range(len(left)), key=lambda i: len(edges[i])):
        free = next((j for j in edges[i] if owner[j] is None), None)
        if free is not None:
            owner[free], paired[i] = i, True
    grew = True
    while grew:
        grew = False
        seen = [False] * len(right)
        for start in range(len(left)):
            if not paired[start] and _augment(start, edges, owner, seen, spend):
                paired[start] = grew = True
    pairing: list[int | None] = [None] * len(left)
    for j, holder in enumerate(owner):
        if holder is not None:
            pairing[holder] = j
    return pairing


def _augment(
    start: int, edges: list[list[int]], owner: list[int | None], seen: list[bool], spend: Callable[[int], None]
) -> bool:
    """Search from the left item `start` for a path to a free right item through items not yet `seen`, and flip
    it: each right item on the path goes to the left item that reached it. True when one was found."""
    parent: dict[int, int] = {}  # right item -> the left item that reached it on the search
    via: dict[int, int] = {}  # left item (not `start`) -> the right item it holds, through which it was reached
    stack, found = [(start, 0)], None
    while stack:
        node, k = stack.pop()
        if k == len(edges[node]):
            continue
        spend(1)
        stack.append((node, k + 1))
        j = edges[node][k]
        if seen[j]:
            continue
        seen[j], parent[j] = True, node
        holder = owner[j]
        if holder is None:
            found = j
            break
        via[holder] = j
        stack.append((holder, 0))
    if found is None:
        return False
    while found is not None:
        reached_by = parent[found]
        owner[found] = reached_by
        found = via.get(reached_by) if reached_by != start else None
    return True


def ordered_matching(left: Sequence[T], right: Sequence[U], fits: Callable[[T, U], bool]) -> list[int | None]:
    """Each left item paired with a later right item than the one before: the leftmost choice for each item is
    optimal (taking the earliest fitting call leaves the most calls for the items after it). Stops at the first
    left item with no fitting call after its predecessor's."""
    pairing: list[int | None] = [None] * len(left)
    j = 0
    for i, item in enumerate(left):
        while j < len(right) and not fits(item, right[j]):
            j += 1
        if j == len(right):
            break
        pairing[i] = j
        j += 1
    return pairing
