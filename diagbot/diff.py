"""Structured comparison of two reports: regressions, improvements and plain changes."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from diagbot.models import Output


class ItemType(StrEnum):
    REGRESSION = "REGRESSION"
    IMPROVEMENT = "IMPROVEMENT"
    CHANGED = "CHANGED"


class Scope(StrEnum):
    AGGREGATE = "aggregate"
    CASE = "case"


class DiffItem(Output):
    """One difference between baseline and current (the documents' DiagnosisEvalDiffItem)."""

    type: ItemType
    scope: Scope
    case_id: str | None = None
    metric: str
    baseline_value: Any = None
    current_value: Any = None
    delta: float | None = None
    message: str
