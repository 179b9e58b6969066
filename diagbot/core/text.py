"""Text matching shared by every suite kind: NFKC, then case-insensitive substring.

Normalising costs more than the text's size suggests (NFKC turns U+FDFA into 18 characters, and is slow on it),
so a text from untrusted input is folded once with `fold`, which caps both the text it reads and the normal
form it keeps, and says when it cut; `Folded.matches` then folds each short needle once per process.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

from diagbot.core.values import SHOW_NOTHING, one_line

MAX_TEXT_CHARS = 1024 * 1024  # characters of a text that `fold` normalises; the rest is not read
MAX_FOLDED_CHARS = 4 * MAX_TEXT_CHARS  # characters of the normal form that are kept and searched
_CHUNK_CHARS = 64 * 1024  # longer texts are normalised in pieces, so `fold` can stop once it has enough
_SPLIT_WINDOW = 4096  # how far back from a piece's end to look for a place where splitting changes nothing
_CACHED_NEEDLE_CHARS = 256  # needles up to this long are folded once per process, longer ones at each use


_INVISIBLE_CHARS = f"\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ufe0e\ufe0f{SHOW_NOTHING}"  # no whitespace control
INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]")
"""Characters that show nothing: the control characters that are no whitespace (NUL, BEL, ESC, DEL, C1), Unicode's
default-ignorable code points (zero-width spaces and joiners, soft hyphens, direction marks, variation selectors,
tags, fillers) and the interlinear annotation marks. Text matching reads past them, so `re\u200bfund` and
`SEC`, NUL, `RET` are `refund` and `secret`, and a phrase split by one is still found; a phrase made of nothing else is
looked for among the ones the text held (`Folded.hidden`)."""

_NOTHING_SHOWN = re.compile(f"[\\s\u2800{_INVISIBLE_CHARS}]*")  # U+2800, the Braille blank, is no whitespace


def shows_something(text: str) -> bool:
    """Whether a text shows anything: not only whitespace, INVISIBLE characters and the Braille blank, so a reply of
    one zero-width space is no answer. Reads up to the first character that shows."""
    return _NOTHING_SHOWN.fullmatch(text) is None


def normalize(text: str) -> str:
    """Fold width and compatibility forms (NFKC) and case, so `ＴＩＭＥＯＵＴ` matches `timeout`, read every decimal
    digit as its ASCII digit and every hyphen as `-` (`٤١١١‑١١١١` is `4111-1111`), and drop the INVISIBLE
    characters."""
    return _normalized(text)[0]


def _normalized(text: str, lines: bool = False) -> tuple[str, str]:
    """`normalize(text)`, and the INVISIBLE characters it dropped, each once (in their NFKC form, as a needle's
    are compared: U+3164 and U+FFA0 are U+1160). One search of the text finds both, and the second part is only
    made when there was something to drop. `lines`: keep its whitespace as it is (`_SPACES`)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    if not lines:
        folded = _SPACES.sub(" ", folded)
    if folded.isascii() and (folded.isprintable() or INVISIBLE.search(folded) is None):  # no NUL, ESC, DEL
        return folded, ""
    folded = ascii_digits(folded).translate(DASHES)
    visible, dropped = INVISIBLE.subn("", folded)
    if dropped and not lines:  # `a \u200b b`: the spaces an invisible character kept apart are one run too
        visible = _SPACES.sub(" ", visible)
    return visible, "".join(sorted(set(INVISIBLE.findall(folded)))) if dropped else ""


def ascii_digits(text: str) -> str:
    """The text with every decimal digit as its ASCII digit: NFKC keeps Arabic-Indic and Devanagari digits, and a
    number is one in any script (RE2's `\\d` is ASCII)."""
    if not _OTHER_DIGIT.search(text):
        return text
    return _OTHER_DIGIT.sub(lambda digit: str(unicodedata.decimal(digit.group())), text)


_OTHER_DIGIT = re.compile(r"(?![0-9])\d")  # Python's \d is every decimal digit, of any script
DASHES = dict.fromkeys((0x2010, 0x2011, 0x2012, 0x2212), "-")  # hyphens and minus read as "-" (str.translate); en
# and em dashes are not: they open a clause where the confirmation reader looks for a question ("Yes—could you")
_SPACES = re.compile(r"\s{2,}|[^\S ]")
"""A run of spaces, or a line break or tab, which matching reads as one space: a model that wraps `restart\nthe
database` still says `restart the database`."""


def _found(needle: str, folded: str | None, text: str, invisible: str) -> bool:
    """A needle in a normalised text; one made only of INVISIBLE characters (which normalising drops) is found
    when the text held each of them, so `answer_not_contains: ["\u202e"]` still sees a direction override."""
    if folded:
        return folded in text
    return folded == "" and bool(needle) and all(unicodedata.normalize("NFKC", c) in invisible for c in needle)


def contains(haystack: str, needle: str) -> bool:
    """True when `needle` occurs in `haystack` after normalising both; an empty needle never matches."""
    return _found(needle, normalize(needle), *_normalized(haystack))


def matches(haystack: str, needles: Iterable[str]) -> list[str]:
    """The needles that occur in `haystack`, in their given order (the haystack is normalised once)."""
    folded_haystack, invisible = _normalized(haystack)
    return [needle for needle in needles if _found(needle, normalize(needle), folded_haystack, invisible)]


@dataclass(frozen=True, slots=True)
class Folded:
    """A text normalised once for matching. `cut` is True when the text, or its normal form, was over the caps
    (MAX_TEXT_CHARS, MAX_FOLDED_CHARS) and only its start is kept: then a needle that is not found may still be
    in the part that was not read."""

    text: str
    cut: bool = False
    hidden: str = ""  # the INVISIBLE characters of the text read, each once
    unmarked: str | None = None  # the text without its emphasis markup, when it has some (`without_markup`)

    def matches(self, needles: Iterable[str]) -> list[str]:
        """The needles that occur in the text, or in it without its emphasis markup, in their given order; an empty
        needle never matches."""
        found = []
        for needle in needles:
            folded = _fold_short_needle(needle) if len(needle) <= _CACHED_NEEDLE_CHARS else _fold_needle(needle)
            if _found(needle, folded, self.text, self.hidden) or (
                self.unmarked is not None and folded and folded in self.unmarked
            ):
                found.append(needle)
        return found


def fold(text: str, max_chars: int = MAX_TEXT_CHARS, max_folded: int = MAX_FOLDED_CHARS, lines: bool = False) -> Folded:
    """`normalize(text)` when the text and its normal form fit the caps; otherwise the normal form of the
    text's first `max_chars` characters, cut to `max_folded`, with `cut` set. Costs O(max_chars) at most.
    `lines`: its whitespace kept as it is, for a reader of its lines (whitespace runs are one space otherwise)."""
    cut = len(text) > max_chars
    folded, over, invisible = _normalize_upto(text[:max_chars] if cut else text, max_folded, lines)
    return Folded(folded, cut or over, invisible)


MARKUP = re.compile(
    r"[*~`]+|(?<!\w)_+|(?<!_)_++(?!\w)"  # Markdown's emphasis (`**full** refund`); an underscore inside a word
    # stays (possessive: a long run of underscores is not tried again from each of its places)
    r"|</?(?:b|strong|em|i|u|s|del|ins|mark|code|span|sup|sub)\b[^<>]{0,200}>"  # and HTML's
)


def without_markup(folded: Folded) -> Folded:
    """A folded reply that phrases are also looked for without its emphasis markup: a model that bolds a word (`You
    will get a **full** refund`) still says `full refund`. Phrases are looked for as written (`**`, `__init__.py`),
    in the text as it is and in the text without markup."""
    plain = _SPACES.sub(" ", MARKUP.sub("", folded.text))
    return folded if plain == folded.text else replace(folded, unmarked=plain)


def _fold_needle(needle: str) -> str | None:
    """A needle's normal form, or None when it is longer than any folded text can be (so it cannot match)."""
    folded, over, _ = _normalize_upto(needle, MAX_FOLDED_CHARS)
    return None if over else folded


_fold_short_needle = lru_cache(maxsize=4096)(_fold_needle)  # keywords repeat across cases; keep only short ones


def _normalize_upto(text: str, limit: int, lines: bool = False) -> tuple[str, bool, str]:
    """(normal form cut to `limit`, whether it was longer, the INVISIBLE characters dropped from what was read),
    normalising no more of `text` than it needs."""
    if len(text) <= _CHUNK_CHARS:
        folded, invisible = _normalized(text, lines)  # the usual case: one call, exactly as `normalize`
    else:
        parts: list[str] = []
        dropped: set[str] = set()
        size = 0
        for piece in _pieces(text):
            visible, found = _normalized(piece, lines)
            parts.append(visible)
            dropped.update(found)
            size += len(visible)
            if size > limit:
                break
        folded, invisible = "".join(parts), "".join(sorted(dropped))
        folded = folded if lines else _SPACES.sub(" ", folded)  # a run across two pieces is one too
    return (folded[:limit], True, invisible) if len(folded) > limit else (folded, False, invisible)


def _pieces(text: str) -> Iterator[str]:
    """`text` in pieces of about _CHUNK_CHARS, each split before a character whose normal form nothing before it
    can combine with, so that normalising piece by piece gives what normalising all at once would."""
    start = 0
    while len(text) - start > _CHUNK_CHARS:
        end = start + _CHUNK_CHARS
        split = next((i for i in range(end, end - _SPLIT_WINDOW, -1) if _stable(text[i])), end)
        yield text[start:split]
        start = split
    yield text[start:]


def _stable(char: str) -> bool:
    """Whether splitting before `char` is safe: its normal form starts with ASCII or with a starter that no
    earlier character can combine with (not a mark, not a Hangul vowel or final consonant). A run of
    _SPLIT_WINDOW characters with no such place (pathological text) is split anyway."""
    first = char if char < "\x80" else unicodedata.normalize("NFKC", char)[0]
    return first < "\x80" or (
        unicodedata.combining(first) == 0
        and not unicodedata.category(first).startswith("M")
        and not "\u1160" <= first <= "\u11ff"
    )


def look_alike(name: str) -> str:
    """A name as a reader sees it, to tell names that differ only in how they are written: NFKC, case-folded, the
    Cyrillic and Greek letters drawn as Latin ones (in either case) read as those (`р` U+0440 as `p`), and without
    dashes (`-`, U+2010, the minus signs U+2212 and U+2796 ...), connectors (`_`), spaces, invisible characters and
    dots. Reads at most 1,000 characters."""
    folded = unicodedata.normalize("NFKC", name[:1000]).casefold().translate(_DRAWN_ALIKE)
    folded = INVISIBLE.sub("", folded)
    return "".join(c for c in folded if unicodedata.category(c) not in _SEPARATORS and c not in _DOTS_AND_DASHES)


_SEPARATORS = frozenset(("Pd", "Pc", "Zs", "Cf"))  # Cf: invisible (a zero-width space, a soft hyphen)
_DOTS_AND_DASHES = frozenset(".\u2212\u2796\u02d7\u2043")  # a minus sign (Sm), a modifier minus, a hyphen bullet
_DRAWN_ALIKE = str.maketrans(
    # Cyrillic, case-folded: а в е к м н о р с т у х і ј ѕ ԁ ԛ ԝ һ ӏ (в н к м т ӏ as their capitals look)
    "\u0430\u0432\u0435\u043a\u043c\u043d\u043e\u0440\u0441\u0442\u0443\u0445\u0456\u0458\u0455\u0501\u051b\u051d\u04bb\u04cf"
    # Greek, case-folded: α β ε ζ η ι κ μ ν ο ρ τ υ χ, and the dotless ı
    "\u03b1\u03b2\u03b5\u03b6\u03b7\u03b9\u03ba\u03bc\u03bd\u03bf\u03c1\u03c4\u03c5\u03c7\u0131",
    "abekmhopctyxijsdqwhiabeznikmvoptuxi",
)  # the letters most often swapped in to make one name read as another (not a full confusables table)


def closest(name: str, known: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name that `name` most likely misspells (the one it begins, none when it begins several, else
    difflib's ratio of at least `cutoff`, else the one that differs only in case: `CASE_ID` for `case_id`), or
    None.

    A name from untrusted input may be megabytes long, and difflib's tables of it take tens of times its size. A
    ratio is 2 * matches / (both lengths), so a name longer than `longest * (2 / cutoff - 1)` is close to none:
    it is not compared at all."""
    names = list(known)
    if not names or len(name) > max(map(len, names)) * (2 / cutoff - 1):
        return None
    started = [known_name for known_name in names if len(name) >= 3 and known_name.startswith(name)]
    if started:  # a name cut short (`subseq`) means the one it begins, not the nearest by ratio (`subset`)
        return started[0] if len(started) == 1 else None  # ... and it is ambiguous when it begins several
    found = difflib.get_close_matches(name, names, n=1, cutoff=cutoff)
    if found:
        return found[0]
    folded = name.casefold()
    return next((known_name for known_name in names if known_name.casefold() == folded), None)


class Suggestions:
    """`closest` for many misspelt names of one input (a config, a suite's case files): each distinct name looked
    up once, and at most `most` of them, since each lookup is a difflib pass over the known names and a pull
    request's files may misspell a million of them. Past the budget a name gets no suggestion."""

    def __init__(self, most: int) -> None:
        self.left = most
        self._found: dict[tuple[str, tuple[str, ...]], str | None] = {}

    def closest(self, name: str, known: Sequence[str]) -> str | None:
        key = (name, tuple(known))
        if key not in self._found:
            if self.left <= 0:
                return None
            self.left -= 1
            self._found[key] = closest(name, known)
        return self._found[key]


def listing(names: Sequence[str], most: int = 12) -> str:
    """Names as one message lists them: the first `most`, then how many more."""
    return ", ".join(names[:most]) + (f", … {len(names) - most} more" if len(names) > most else "")


def with_article(word: str) -> str:
    """`a trace`, `an agent`: the word with the article its first letter asks for."""
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def unplain_name(name: str) -> str | None:
    """Why a tool name is not one a tool has (a space at an end, an invisible or undecodable character, letters
    that NFKC reads otherwise, as full-width ones), or None."""
    if name.isascii() and name.isprintable() and name == name.strip():
        return None  # nearly every name: looked at no further
    if name != name.strip():
        return "starts or ends with a space"
    if INVISIBLE.search(name) or "\ufffd" in name or any(unicodedata.category(c) in _UNSEEN for c in name):
        return "holds an invisible, control or undecodable character"
    if unicodedata.normalize("NFKC", name) != name:
        read = one_line(unicodedata.normalize("NFKC", name), 100)
        return f"is not in its composed, compatibility-folded form (NFKC reads it as '{read}')"
    return None


_UNSEEN = frozenset(("Cc", "Cf", "Cs"))  # control, format (beside INVISIBLE's) and lone surrogate characters
