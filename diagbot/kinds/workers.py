"""Judging a suite's cases in several processes: the suite is cut into consecutive ranges of cases, and forked
worker processes judge them while the parent collects the results in order.

The workers are forked after the parent has read the suite, so they inherit everything a range needs (the cases
the parent read, or the names of the files they are to read, the options, the compiled patterns): nothing is sent
to them but two numbers, and only results come back. Where there is no fork (macOS and Windows start processes
afresh), or one worker is asked for, or the operating system refuses to make the pool, the ranges are judged in
this process instead, with the same results.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Generator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Generic, TypeVar

T = TypeVar("T")

MAX_WORKERS = 8
"""Processes one suite is judged in at most: past this, reading the run files is what limits a suite."""

_JOB: Callable[[int, int], Any] | None = None  # what a forked worker runs; set only while a pool is open


def _run(start: int, end: int) -> Any:
    if _JOB is None:  # a worker that was not forked from a parent with a job: never happens with fork
        raise RuntimeError("no job in this worker")
    return _JOB(start, end)


def available_cpus() -> int:
    """The CPUs this process may run on (a container's or a CI runner's share, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers() -> int:
    """What `diagbot run` and the action use: the CPUs this process may use, at most MAX_WORKERS; 1 where there is
    no fork, so that a suite is streamed through one process there instead of read whole for workers first."""
    return max(1, min(MAX_WORKERS, available_cpus())) if can_fork() else 1


def _started_in(parent: int) -> None:
    """A worker's first act: die with its parent, which alone holds what it judges for (a parent killed by
    `timeout` or a CI runner must not leave workers waiting on a queue forever), and leave Ctrl-C to the parent,
    which stops the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the request above took effect
        os._exit(1)


_PR_SET_PDEATHSIG = 1  # prctl(2): the signal a process gets when its parent dies (Linux)


def can_fork() -> bool:
    """Only Linux forks safely here: macOS's system libraries may not survive a fork of a process with threads."""
    return sys.platform == "linux" and "fork" in multiprocessing.get_all_start_methods()


class Workers(Generic[T]):
    """`job(start, end)` over consecutive ranges of at most `chunk` items covering `range(total)`, yielded in
    order. `stopped` says why the workers were given up on part way (a worker killed, perhaps for memory): the
    ranges not yet returned were then judged in this process, so no result is lost."""

    def __init__(self, job: Callable[[int, int], T], total: int, workers: int, chunk: int) -> None:
        self.job = job
        self.ranges = [(start, min(start + chunk, total)) for start in range(0, total, max(1, chunk))]
        self.workers = min(workers, len(self.ranges))
        self.stopped: str | None = None

    def __iter__(self) -> Generator[T, None, None]:
        if self.workers < 2 or not can_fork():
            return (self.job(start, end) for start, end in self.ranges)
        return self._forked()

    def _forked(self) -> Generator[T, None, None]:
        global _JOB
        _JOB = self.job
        gc.freeze()  # what the parent holds stays out of the workers' collections, so their pages stay shared
        done = 0
        try:
            try:
                pool = ProcessPoolExecutor(
                    self.workers, multiprocessing.get_context("fork"), _started_in, (os.getpid(),)
                )
            except (OSError, ImportError) as exc:  # no /dev/shm for the pool's locks
                self.stopped = f"no worker processes could be started ({exc})"
            else:
                with pool:
                    try:
                        futures: list[Future[T]] = [pool.submit(_run, start, end) for start, end in self.ranges]
                    except OSError as exc:  # the process limit, or no memory left to fork
                        self.stopped = f"no worker processes could be started ({exc.strerror or exc})"
                        futures = []
                        _stop(pool)  # those that did start would wait for work, and keep this process from ending
                    try:
                        for future in futures:
                            result = future.result()
                            done += 1
                            yield result
                    except BrokenProcessPool:
                        self.stopped = "a worker process stopped (killed, perhaps for memory)"
                    finally:
                        for future in futures:
                            future.cancel()
        finally:
            _JOB = None
            gc.unfreeze()
        yield from (self.job(start, end) for start, end in self.ranges[done:])


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill the workers a pool did start (it keeps them in a private mapping: there is no public way)."""
    started = getattr(pool, "_processes", None) or {}
    for process in list(started.values()):
        process.kill()
