"""What the command line shows only to a person at a terminal: colour, and a progress bar for slow suites.

Neither ever reaches a CI log or a pipe: both are decided by whether the stream is a terminal, neither appears on
a dumb terminal (`TERM=dumb`, which shows escape sequences as text), and colour is off whenever `NO_COLOR` is set
(https://no-color.org). What is written to files or parsed by tools stays plain.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from typing import TextIO

PROGRESS_DELAY = 1.0  # seconds a suite runs before its bar appears: quick suites never flash one
PROGRESS_INTERVAL = 0.1  # at most this often a redraw
_BAR = 24

GREEN, RED, YELLOW = "32", "31", "33"
_CONSOLE_MARK = re.compile(r"^(\s*)(FAIL|INVALID|PASS)\b", re.M)


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False


def colour_allowed(stream: TextIO, environ: Mapping[str, str]) -> bool:
    """Colour only on a terminal, and never with NO_COLOR set to anything but the empty string."""
    return not environ.get("NO_COLOR") and environ.get("TERM") != "dumb" and is_terminal(stream)


class Painter:
    """Wraps text in an ANSI colour when enabled; the identity otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, colour: str) -> str:
        return f"\x1b[{colour}m{text}\x1b[0m" if self.enabled and text else text

    def console(self, text: str) -> str:
        """A kind's console summary with its FAIL / INVALID / PASS marks coloured."""
        if not self.enabled:
            return text
        return _CONSOLE_MARK.sub(lambda m: m.group(1) + self(m.group(2), GREEN if m.group(2) == "PASS" else RED), text)


class ProgressBar:
    """One line on a terminal, redrawn in place while a suite is judged, and cleared when the next suite starts or
    the run ends. It appears only once a suite has run for PROGRESS_DELAY seconds."""

    def __init__(
        self,
        stream: TextIO,
        delay: float | None = None,
        interval: float = PROGRESS_INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._delay = PROGRESS_DELAY if delay is None else delay
        self._interval = interval
        self._clock = clock
        self._drawn = False
        self._last = 0.0

    def suite(self, name: str) -> Callable[[int, int | None], None]:
        """The progress callback for one suite (a `kinds.base.Progress`); its clock starts now."""
        self.close()
        started = self._clock()

        def progress(done: int, total: int | None) -> None:
            now = self._clock()
            if now - started < self._delay or (now - self._last < self._interval and done != total):
                return
            self._last = now
            self._draw(_line(name, done, total, now - started))

        return progress

    def _draw(self, line: str) -> None:
        try:
            self._stream.write(f"\r{line}\x1b[K")
            self._stream.flush()
        except (OSError, ValueError):  # the terminal went away: the run itself goes on
            return
        self._drawn = True

    def close(self) -> None:
        """Clear the bar, if one was drawn, so that what is printed next starts on a clean line."""
        if self._drawn:
            self._drawn = False
            try:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
            except (OSError, ValueError):
                pass


def _line(name: str, done: int, total: int | None, elapsed: float) -> str:
    if total:
        filled = min(_BAR, _BAR * done // total)
        bar = "#" * filled + "-" * (_BAR - filled)
        return f"{name[:40]} [{bar}] {done:,}/{total:,} cases {elapsed:.1f} s"
    return f"{name[:40]} {done:,} case{'s' * (done != 1)} {elapsed:.1f} s"


def progress_bar(stream: TextIO, environ: Mapping[str, str] = os.environ) -> ProgressBar | None:
    """A progress bar on `stream` when it is a terminal that can take one (the bar redraws with escape sequences,
    which TERM=dumb says the terminal shows as text); None (no bar at all) for a pipe, a file or a CI log."""
    return ProgressBar(stream) if environ.get("TERM") != "dumb" and is_terminal(stream) else None
