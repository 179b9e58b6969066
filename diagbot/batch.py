"""Helpers for judging a whole suite in one pass."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cycle collector while a suite's results pile up.

    Judging allocates many short-lived containers (parsed JSON) while the results it keeps grow, so the collector
    would run hundreds of times and repeatedly walk everything kept so far; none of these objects form cycles, so
    plain reference counting frees them anyway. Measured on the workspace bench: 8-15% of the judging time. The
    collector's previous state is restored on exit.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
