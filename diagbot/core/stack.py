"""The Python stack a piece of work may use, counted from where it starts rather than from the bottom.

Reading deeply nested input and some checks recurse, and Python stops them at its recursion limit, which counts
every frame from the bottom of the stack. How deep a value may be nested before it is refused would then depend
on how deep the caller sits: the command line, the action, a forked worker process (whose stack starts under the
pool's own frames) and a test would give different verdicts on the same value. `headroom` makes the limit relative
to the caller, so they all give the same one.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Iterator
from types import FrameType

HEADROOM = 980
"""Frames below the caller: about what Python's default limit of 1,000 leaves the command line."""


def depth() -> int:
    """The recursion depth as the interpreter counts it against its limit: Python 3.11 counts some C calls between
    the frames as well (more of them on a worker's stack), so the frames alone are not it. Python says the depth
    when asked for a limit below it; where it does not, the frames are counted."""
    before = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(1)
    except RecursionError as exc:
        said = _SAID_DEPTH.search(str(exc))
        if said is not None:
            return int(said.group(1))
    else:
        sys.setrecursionlimit(before)
    frame: FrameType | None = sys._getframe(1)
    count = 0
    while frame is not None:
        count += 1
        frame = frame.f_back
    return count


_SAID_DEPTH = re.compile(r"at the recursion depth (\d+)")


@contextlib.contextmanager
def headroom(frames: int = HEADROOM) -> Iterator[None]:
    """Within the block, recursion stops `frames` frames below the caller, wherever the caller sits."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(depth() + frames)
    try:
        yield
    finally:
        sys.setrecursionlimit(before)
