"""Text matching shared by every suite kind: NFKC, then case-insensitive substring."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable


def normalize(text: str) -> str:
    """Fold width and compatibility forms (NFKC) and case, so `ＴＩＭＥＯＵＴ` matches `timeout`."""
    return unicodedata.normalize("NFKC", text).casefold()


def contains(haystack: str, needle: str) -> bool:
    """True when `needle` occurs in `haystack` after normalising both; an empty needle never matches."""
    folded = normalize(needle)
    return bool(folded) and folded in normalize(haystack)


def matches(haystack: str, needles: Iterable[str]) -> list[str]:
    """The needles that occur in `haystack`, in their given order (the haystack is normalised once)."""
    folded_haystack = normalize(haystack)
    found = []
    for needle in needles:
        folded = normalize(needle)
        if folded and folded in folded_haystack:
            found.append(needle)
    return found
