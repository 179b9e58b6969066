"""What both benchmarks share: fresh Python children with their own peak RSS and CPU time, and plain summaries.

Peak RSS is the child's VmHWM, read from /proc/self/status by an exit hook the child runs. A child that judges in
forked worker processes (`diagbot run --jobs`) also reports the largest of its workers' peaks: the workers'
ru_maxrss, which holds (a fork copies no address space that exec replaced) the pages each shares with the child
too, so the child's peak plus each worker's is an upper bound of what the run held at once. (The `git` that
`diagbot run` asks for the commit is a child too, and its ru_maxrss keeps the size it was forked at, so a run
without workers shows that.) `peak_pss` measures what the processes held at once instead. Not ru_maxrss: on
Linux a child's ru_maxrss (from wait4 or RUSAGE_CHILDREN) keeps the high-water mark of the address space it was
forked with, that is the parent's resident size at the fork, across exec, so a 300 MB parent makes
`python -c pass` "peak" at 300 MB. VmHWM belongs to the address space exec made, so it is the child's own.
"""

from __future__ import annotations

import compileall
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass

PEAK_HOOK = """
import atexit as _atexit, os as _os, resource as _resource
_started = _os.getpid()
def _report_peak():
    if _os.getpid() != _started:  # a process the child forked (a worker) that ran this hook: not the child
        return
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    workers = _resource.getrusage(_resource.RUSAGE_CHILDREN).ru_maxrss  # the largest forked worker's, in KiB
    with open(_os.environ["BENCH_PEAK_FILE"], "w") as out:
        out.write(f"{peak} {workers}")
_atexit.register(_report_peak)
del _atexit
"""
RUN_MODULE = """
import runpy, sys
del sys.argv[0]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def python_code(code: str, *args: str) -> list[str]:
    """A child that runs `code` (as `python -c`) with args."""
    return [sys.executable, "-c", PEAK_HOOK + code, *args]


def python_module(module: str, *args: str) -> list[str]:
    """A child that runs `module` as `python -m module args` would."""
    return [sys.executable, "-c", PEAK_HOOK + RUN_MODULE, module, *args]


@dataclass(frozen=True)
class Child:
    wall: float  # seconds, from start until reaped
    cpu: float  # user + sys seconds of the child itself
    peak_rss: int  # bytes, the child's VmHWM
    worker_peak_rss: int = 0  # bytes, the largest peak of the processes the child forked and waited for (0: none)


def run_child(cmd: Sequence[str]) -> Child:
    """Run one fresh child (made by python_code or python_module); stdout is dropped, stderr shown on failure."""
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-child-") as folder:
        peak_file = os.path.join(folder, "peak")
        with open(os.path.join(folder, "stderr"), "w+b") as errors:
            start = time.perf_counter()
            env = {**os.environ, "BENCH_PEAK_FILE": peak_file}
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=errors, env=env)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - start
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                errors.seek(0)
                sys.stderr.write(errors.read().decode(errors="replace"))
                raise SystemExit(f"a bench child ({' '.join(cmd[3:6])} ...) exited with {proc.returncode}")
        with open(peak_file) as peak:
            own, workers = (int(kib) * 1024 for kib in peak.read().split())
    return Child(wall, usage.ru_utime + usage.ru_stime, own, workers)


def precompile(package: str = "diagbot") -> None:
    """Write the package's bytecode before timing, as installing it does: a checkout run under
    PYTHONDONTWRITEBYTECODE (set on some machines) would otherwise compile every module in every timed child."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{package} is not importable; install the project first (make run)")
    compileall.compile_dir(os.path.dirname(spec.origin), quiet=1)


def machine() -> str:
    return f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs ({len(os.sched_getaffinity(0))} usable)"


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def spread(values: Sequence[float], fmt: str) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"min {fmt.format(low)}  median {fmt.format(mid)}  max {fmt.format(high)}"


def mib(size: float) -> str:
    return f"{size / 2**20:.1f} MiB"


def _tree(pid: int) -> list[int]:
    """`pid` and its descendants, from each thread's list of children (Linux)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as children:
                    todo += [int(child) for child in children.read().split()]
        except OSError:
            continue  # it ended meanwhile
    return found


def _pss(pid: int) -> int:
    """The process's proportional set size in bytes: a page shared by n processes counts 1/n in each."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            return next(int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:"))
    except (OSError, StopIteration):
        return 0


def peak_pss(cmd: Sequence[str], every: float = 0.02) -> int:
    """The most memory a fresh child and the processes it forks held at once, in bytes: the sum of their
    proportional set sizes (shared pages counted once in all), sampled every `every` seconds while it runs. An
    untimed run: the sampling costs the machine time."""
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-pss-") as folder:
        env = {**os.environ, "BENCH_PEAK_FILE": os.path.join(folder, "peak")}
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, sum(_pss(pid) for pid in _tree(proc.pid)))
            time.sleep(every)
    return peak
