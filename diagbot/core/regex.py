"""Regular expressions from untrusted input, run on RE2 within fixed bounds.

A pull request writes the patterns (in a case's checks), so a pattern must not be able to stall a run. RE2 matches
in time linear in the text, without backtracking; on top of that a pattern is capped in length and in the size of
the program it compiles to, which bounds the slow path RE2 falls back to. Features only a backtracking engine has
(backreferences, lookaround, ...) are refused with a message naming them and what to write instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import re2  # type: ignore[import-untyped]  # untyped; `Regex` below is the typed face it is used through

MAX_REGEX_CHARS = 1_000
"""Characters in one regex pattern."""
MAX_REGEX_PROGRAM = 128
"""RE2 instructions one pattern compiles to, counted over bytes (a class is one range test, not the UTF-8
sequences of its characters). RE2 runs in time linear in the text, but when its fast automaton gives up on a
pattern (like `[ab]*a[ab]{60}c`) the fallback costs about 5 ns per instruction per byte here: this keeps the worst
case to seconds for an 8 MiB text (the plainest patterns of cases take 10 to 80)."""

_SHOWN_CHARS = 80


class Regex:
    """A compiled RE2 pattern, typed, for what a check does with one: find the first match.

    It calls the binding's RE2 object itself, without the `re`-like layer over it (a generator and a match object
    per search). And a pattern that starts with literal text is looked for as bytes first (CPython's fast search),
    RE2 running only where that text occurs; a pattern that is all literal text is found that way alone."""

    __slots__ = ("_literal", "_match", "_prefix", "program")

    def __init__(self, compiled: Any, pattern: str, program: int = 1) -> None:
        self.program = program  # RE2 instructions, as MAX_REGEX_PROGRAM counts them: what a search may cost a byte
        self._match: Callable[[Any, bytes, int, int], list[tuple[int, int]]] = compiled._regexp.Match
        prefix = _literal_prefix(pattern)
        self._prefix = prefix.encode()
        self._literal = self._prefix if prefix == pattern else None

    def search(self, text: bytes) -> tuple[int, int] | None:
        """(start, end) of the first match in `text` (UTF-8), as byte offsets, or None."""
        if self._literal is not None:
            start = text.find(self._literal)
            return None if start == -1 else (start, start + len(self._literal))
        if self._prefix and self._prefix not in text:
            return None
        start, end = self._match(_UNANCHORED, text, 0, len(text))[0]
        return None if start == -1 else (start, end)

    def search_text(self, text: str) -> bool:
        """Whether the pattern matches anywhere in `text` (encoded as UTF-8, a lone surrogate replaced)."""
        return self.search(text.encode("utf-8", "replace")) is not None


_UNANCHORED = re2._Anchor.UNANCHORED
_SPECIAL = frozenset("\\^$.|?*+()[]{}")


def _literal_prefix(pattern: str) -> str:
    """Text every match of `pattern` starts with: its leading run of plain characters (less the last one when a
    quantifier follows it), unless a `|` outside any group or class offers an alternative to it. Empty when unsure
    (`\\Q...\\E` quotes specials)."""
    end = next((i for i, char in enumerate(pattern) if char in _SPECIAL), len(pattern))
    if pattern[end : end + 1] in ("?", "*", "+", "{") or pattern.startswith("(?", end):  # `ab(?i)?` is `ab?`
        end -= 1
    if end <= 0 or "\\Q" in pattern:
        return ""
    depth, i = 0, end
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 1
        elif char == "[":
            i = _class_end(pattern, i)
        elif char in "()":
            depth += 1 if char == "(" else -1
        elif char == "|" and depth <= 0:
            return ""
        i += 1
    return pattern[:end]


def _class_end(pattern: str, i: int) -> int:
    """Where the class opened at `i` closes: a `]` first (after any `^`) is literal, `[:alpha:]` is one name."""
    i += 2 if pattern[i + 1 : i + 2] == "^" else 1
    if pattern[i : i + 1] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        name_end = pattern.find(":]", i + 2) if pattern.startswith("[:", i) else -1
        i = name_end + 2 if name_end != -1 else i + (2 if pattern[i] == "\\" else 1)
    return i


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a bad pattern is reported as a case problem, not on stderr
_RE2_OPTIONS.never_capture = True  # only the whole match is shown, and without groups RE2 finds it faster
_SIZE_OPTIONS = re2.Options()
_SIZE_OPTIONS.log_errors, _SIZE_OPTIONS.never_capture = False, True
_SIZE_OPTIONS.encoding = re2.Options.Encoding.LATIN1

# What Python's `re` has and RE2 lacks, looked for (outside escapes) in a pattern RE2 refused, to name it.
_UNSUPPORTED = [
    (
        re.compile(r"\\[1-9]|\\g<|(?<!\\)\(\?P[=>]"),
        "a backreference (\\1, \\g<name> or (?P=name))",
        "match the repeated text itself",
    ),
    (
        re.compile(r"(?<!\\)\(\?<?[=!]"),
        "a lookahead or lookbehind ((?=, (?!, (?<= or (?<!)",
        "match the surrounding text itself",
    ),
    (
        re.compile(r"(?<!\\)\(\?>|(?<!\\)[*+?}]\+"),
        "an atomic group or a possessive quantifier ((?>, *+, ++ or ?+)",
        "RE2 never backtracks, so the plain group or quantifier means the same",
    ),
    (re.compile(r"(?<!\\)\(\?\("), "a conditional group ((?(1)...|...))", "use two checks"),
    (re.compile(r"\\Z"), "\\Z", "write \\z for the end of the text"),
    (re.compile(r"(?<!\\)\(\?(?:#|[a-zA-Z]*x)"), "a comment or verbose mode ((?# or (?x)", "write it without them"),
]


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> Regex:
    """RE2's compiled pattern, once per pattern; raises ValueError naming what RE2 cannot run, or the limit hit."""
    if len(pattern) > MAX_REGEX_CHARS:
        raise ValueError(f"is {len(pattern):,} characters long; the limit is {MAX_REGEX_CHARS:,}")
    try:
        compiled = re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        unescaped = pattern.replace("\\\\", "")  # an escaped backslash never starts a feature
        for feature, name, fix in _UNSUPPORTED:
            if feature.search(unescaped):
                raise ValueError(
                    f"uses {name}, which regex checks do not support: they run on RE2, which matches in time "
                    f"linear in the text and so has no backtracking features; {fix}"
                ) from None
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"{reason} (regex checks use RE2 syntax)") from None
    try:  # the binding's own RE2 object knows its program size; over bytes, it measures the pattern's shape
        size = re2.compile(pattern.encode(), _SIZE_OPTIONS)._regexp.ProgramSize()
    except re2.error:  # no byte-wise reading of it (`\\x{10FFFF}`): count it as it is
        size = compiled._regexp.ProgramSize()
    if size > MAX_REGEX_PROGRAM:
        raise ValueError(
            f"compiles to {size:,} RE2 instructions; the limit is {MAX_REGEX_PROGRAM:,} (shorten counted "
            "repetitions like .{0,100}, or split the pattern over several checks)"
        )
    return Regex(compiled, pattern, size)


_CAPTURING = re2.Options()
_CAPTURING.log_errors = False

MAX_SCANNED_CHARS = 16 * 1024 * 1024
"""Characters that the searches for the successive matches of one text may read in all (`find_named`). A search
can read on to the end of the text to learn where a match ends (`(?P<doc_id>a)(?:.*z)?` does), so each counts the
text from where it starts: however many matches, the worst case is that of one search of a 16 MiB text (seconds:
see MAX_REGEX_PROGRAM), not that of a search of the whole text once per match. A thousand matches fit in 32 KiB."""


@lru_cache(maxsize=64)
def _with_groups(pattern: str) -> Any:
    compile_regex(pattern)  # the same bounds as any pattern; raises ValueError past them
    return re2.compile(pattern, _CAPTURING)


def named_groups(pattern: str) -> set[str]:
    """The names of the pattern's named groups (the pattern must be valid: see `valid_regex`)."""
    return set(_with_groups(pattern).groupindex)


_GROUP_NAME = re.compile(r"\\.|\(\?P?<([A-Za-z_][A-Za-z0-9_]*)>")  # an escape (skipped), or a named group


def repeated_groups(pattern: str) -> list[str]:
    """The group names the pattern gives to more than one group. RE2 accepts them, but a match reports only the
    first group of a name, so what the others matched would go unseen (Python's re refuses them)."""
    seen: set[str] = set()
    repeated = []
    for match in _GROUP_NAME.finditer(pattern):
        name = match.group(1)
        if name in seen and name not in repeated:
            repeated.append(name)
        seen.add(name or "")
    return [name for name in repeated if name]


def matches_empty(pattern: str) -> bool:
    """Whether the (valid) pattern matches the empty text, and so matches at every position of any text."""
    return _with_groups(pattern).search("") is not None


def find_named(
    pattern: str, text: str, limit: int, needed: str, keys: tuple[str, ...]
) -> tuple[list[dict[str, str | None]], bool]:
    """The groups `keys` of the matches of `pattern` in `text` in which the group `needed` holds some text, left
    to right, each distinct one once and at most `limit` of them (None for a group that took no part in a match or
    matched empty text, or that the pattern lacks); and whether every match was read: False when there were more,
    or when the searches read MAX_SCANNED_CHARS. Matches are told apart by `keys` alone: the pattern's other named
    groups (a note, a page) neither make a match another one nor count towards `limit`. The characters read bound
    the matches read too (the n-th search reads at least n - 1 characters fewer than the first: a few thousand in
    all). Only this needs captures; every other search runs without them."""
    found: dict[tuple[str | None, ...], dict[str, str | None]] = {}
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")  # RE2 reads UTF-8, which holds no lone surrogate
    scanned = len(text)  # what the first search may read
    for match in _with_groups(pattern).finditer(text):
        groups: dict[str, str | None] = match.groupdict()
        if groups.get(needed):
            key = tuple(groups.get(name) or None for name in keys)
            if key not in found:
                if len(found) == limit:
                    return list(found.values()), False
                found[key] = dict(zip(keys, key, strict=True))
        scanned += len(text) - match.end()  # what the next search may read
        if scanned > MAX_SCANNED_CHARS and match.end() < len(text):
            return list(found.values()), False
    return list(found.values()), True


def valid_regex(pattern: str) -> str:
    """A pydantic AfterValidator: the pattern itself when RE2 can run it within the bounds, else a ValueError."""
    try:
        compile_regex(pattern)
    except ValueError as exc:
        raise ValueError(f"invalid regular expression {pattern[:_SHOWN_CHARS]!r}: {exc}") from None
    return pattern
