"""What both benchmarks share: fresh Python children with their own peak RSS and CPU time, and plain summaries.

Peak RSS is the child's VmHWM, read from /proc/self/status by an exit hook the child runs. Not ru_maxrss: on
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
import atexit as _atexit, os as _os
def _report_peak():
    with open("/proc/self/status") as status:
        peak = next(line.split()[1] for line in status if line.startswith("VmHWM:"))
    with open(_os.environ["BENCH_PEAK_FILE"], "w") as out:
        out.write(peak)
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
            peak_rss = int(peak.read()) * 1024
    return Child(wall, usage.ru_utime + usage.ru_stime, peak_rss)


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
