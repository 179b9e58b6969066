"""Counts and rates: every rate diagbot stores or shows is computed and rounded here, and nowhere else."""

from __future__ import annotations

import datetime as dt

RATE_DIGITS = 6


def rate(part: int, total: int) -> float:
    """`part / total`, rounded to six decimals; an empty total is 0.0 (callers say "no cases" themselves)."""
    return round(part / total, RATE_DIGITS) if total else 0.0


def mean(values: list[float]) -> float:
    """The mean of `values`, rounded as a rate; 0.0 for none."""
    return round(sum(values) / len(values), RATE_DIGITS) if values else 0.0


def number(value: float) -> str:
    """A measured value for people: whole from 1,000 up (13480.5 ms is 13480, never 1.348e+04), else four
    significant digits."""
    return f"{value:.0f}" if value.is_integer() or abs(value) >= 1000 else f"{value:.4g}"


def percent(value: float) -> str:
    """A rate as a percentage with one decimal that never overstates: 0.9996 is 99.9%, never 100.0%, and a
    non-zero rate is never shown as 0.0%."""
    shown = round(value * 100, 1)
    if shown >= 100.0 and value < 1.0:
        return "99.9%"
    if shown <= 0.0 < value:
        return "0.1%"
    return f"{shown:.1f}%"


def timestamp(moment: dt.datetime) -> str:
    """The one timestamp format of reports: UTC, whole seconds, `Z` (2026-12-01T10:02:28Z)."""
    return moment.astimezone(dt.UTC).replace(microsecond=0, tzinfo=None).isoformat() + "Z"
