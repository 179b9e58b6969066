"""How much judging a workspace costs over merely reading its files, as ratios in paired, interleaved runs.

Timing: 1,000 evidence-only workspaces of 20 files each (12 checks per case, one a regex over twelve log files,
so every file but the summary is read), in this process with the page cache warm. Each round times the plain read
of every file from a ready list of paths, a walk of the folders that reads every file, and `judge_suite` over every
case (report included), alternating the order (read, walk, judge / judge, walk, read); each round gives one
judge/read and one judge/walk ratio, and min / median / max of those are printed with the absolute times.

Memory: suites of 1,000 / 3,000 / 6,000 of those workspaces, loaded from case.yaml files by
`load_workspace_suite`, judged by `judge_suite` and written out as `diagbot eval` writes a report, once per size
in a fresh child, against a child that walks and reads the same workspaces; peak RSS is each child's own VmHWM
(see measure.py).

Scripts, not tests: nothing here asserts on a time. Generated data lives in a temporary folder that is removed.

    .venv/bin/python bench/bench_workspace.py [--workspaces 1000] [--pairs 15] [--sizes 1000,3000,6000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml
from measure import load, machine, precompile, python_code, run_child, spread

from diagbot.kinds.workspace.judge import WorkspaceCase, judge_suite

LOG_FILES = 12  # with the 8 fixed files below: 20 files per workspace

JUDGE = {
    "evidence_collection": [
        {"id": "metrics_bundle", "file_exists": "evidences/metrics.json"},
        {
            "id": "logs_observed",
            "json_query": {"file": "evidences/logs.json", "expr": "length(entries) > `0`"},
        },
        {"id": "events_bundle", "json_valid": "evidences/events.json"},
        {"id": "queries_bundle", "json_valid": "evidences/queries.json"},
    ],
    "critical_evidence": [
        {"id": "gc_pause_metric", "contains": {"file": "evidences/metrics.json", "any": ["jvm_gc_pause"]}},
        {
            "id": "heap_usage",
            "required": False,
            "regex": {"file": "evidences/*.json", "pattern": "heap_(used|usage)"},
        },
        {"id": "gc_log_lines", "contains": {"file": "evidences/logs.json", "all": ["Pause Young", "G1"]}},
        # Only the last log holds the line, so every log file is read and searched.
        {"id": "oom_in_logs", "regex": {"file": "evidences/logs/*.log", "pattern": "OutOfMemoryError"}},
    ],
}

# The memory children. Both take CASES_DIR FIXTURES_DIR; the judge also writes the report to argv[3].
JUDGE_CHILD = """
import sys
from pathlib import Path
from diagbot.core.report import dump_model
from diagbot.io.files import write_file
from diagbot.kinds.workspace.judge import judge_suite, load_workspace_suite
cases, problems = load_workspace_suite(Path(sys.argv[1]), Path(sys.argv[2]))
if problems:
    sys.exit("\\n".join(problems[:5]))
report = judge_suite(cases, Path(sys.argv[2]), "bench")
if report.passed_cases != len(cases):
    sys.exit(f"{report.passed_cases} of {len(cases)} bench workspaces passed; all should")
write_file(Path(sys.argv[3]), dump_model(report))
"""
PLAIN_CHILD = """
import os, sys
fixtures = sys.argv[2]
for case_id in sorted(os.listdir(sys.argv[1])):
    for folder, _, names in os.walk(os.path.join(fixtures, case_id)):
        for name in names:
            with open(os.path.join(folder, name), "rb") as handle:
                handle.read()
"""


def _files(index: int) -> dict[str, str]:
    """Twenty files of a few KiB each, shaped like a collector's output."""
    line = f"2024-06-01T10:04:{index % 60:02d} INFO order-service handled request in 12ms trace=abc{index}\n"
    series = [{"name": f"metric_{n}", "max": n * 1.5} for n in range(60)]
    files = {
        "workspace_evidence_report.json": json.dumps({"stage": "evidence", "case": index}),
        "evidences/agent-runs/evidence-agent.json": json.dumps({"agent": "evidence-agent", "status": "completed"}),
        "evidences/evidence_summary.md": "# Evidence summary\n\n" + line * 20,
        "evidences/metrics.json": json.dumps({"series": [*series, {"name": "jvm_gc_pause_seconds", "max": 2.8}]}),
        "evidences/logs.json": json.dumps({"entries": [{"line": "GC(812) Pause Young (G1 Evacuation)"}] * 40}),
        "evidences/events.json": json.dumps({"events": [{"reason": "Pulled", "count": n} for n in range(50)]}),
        "evidences/queries.json": json.dumps({"rows": [{"sql": "SELECT 1", "ms": n} for n in range(50)]}),
        "evidences/collection_errors.json": "[]",
    }
    for n in range(LOG_FILES):
        tail = "java.lang.OutOfMemoryError: Java heap space\n" if n == LOG_FILES - 1 else ""
        files[f"evidences/logs/service-{n:02d}.log"] = line * 40 + tail
    return files


def case_raw(case_id: str) -> dict[str, object]:
    return {"id": case_id, "title": "bench", "evaluation": {"mode": "evidence_only"}, "judge": JUDGE}


def case_id(index: int) -> str:
    return f"bench-{index:05d}"


def generate(fixtures: Path, start: int, stop: int) -> list[str]:
    """Workspaces start..stop-1 under fixtures/; the paths of their files."""
    paths = []
    for index in range(start, stop):
        for rel, text in _files(index).items():
            path = fixtures / case_id(index) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
    return paths


def write_case_files(cases_dir: Path, count: int) -> None:
    for index in range(count):
        name = case_id(index)
        text = yaml.safe_dump(case_raw(name), sort_keys=False)
        (cases_dir / name).mkdir(parents=True)
        (cases_dir / name / "case.yaml").write_text(text, encoding="utf-8")


def clock(work: Callable[[], None]) -> tuple[float, float]:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def timing(root: Path, count: int, pairs: int) -> None:
    fixtures = root / "fixtures"
    paths = generate(fixtures, 0, count)
    cases = [WorkspaceCase.model_validate(case_raw(case_id(index))) for index in range(count)]
    total = sum(os.path.getsize(path) for path in paths)
    print(f"timing suite: {count:,} workspaces, {len(paths):,} files, {total / 2**20:.1f} MiB")

    def read_all() -> None:
        for path in paths:
            with open(path, "rb") as handle:
                handle.read()

    def walk_and_read_all() -> None:
        # What merely reading a workspace costs when its files are not known in advance: find them, read them.
        for case in cases:
            for folder_path, _, names in os.walk(fixtures / case.id):
                for name in names:
                    with open(os.path.join(folder_path, name), "rb") as handle:
                        handle.read()

    def judge_all() -> None:
        judge_suite(cases, fixtures)

    report = judge_suite(cases, fixtures)  # warms the page cache and the checks' caches
    if report.passed_cases != len(cases):
        raise SystemExit(f"{report.passed_cases} of {len(cases)} bench workspaces passed; all should")
    read_all()
    sides = {"read": read_all, "walk+read": walk_and_read_all, "judge": judge_all}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
    print(f"\n[1] judge_suite vs plain read of every file, {pairs} rounds (read, walk+read, judge; then reversed)")
    print(f"  load average before: {load()}")
    for i in range(pairs):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for name in order:
            times[name].append(clock(sides[name]))
    print(f"  load average after:  {load()}")
    for name, measured in times.items():
        print(f"  {name:<9}  wall {spread([wall for wall, _ in measured], '{:.3f} s')}")
        print(f"  {'':<9}  cpu  {spread([cpu for _, cpu in measured], '{:.3f} s')}")
    judge = times["judge"]
    for base in ("read", "walk+read"):
        wall = [j[0] / b[0] for j, b in zip(judge, times[base], strict=True)]
        cpu = [j[1] / b[1] for j, b in zip(judge, times[base], strict=True)]
        print(f"  ratio judge / {base} over {pairs} rounds:")
        print(f"    wall: {spread(wall, '{:.2f}x')}")
        print(f"    cpu:  {spread(cpu, '{:.2f}x')}")
        print("    per round (wall): " + " ".join(f"{r:.2f}" for r in wall))
    median = statistics.median(wall for wall, _ in judge)
    print(f"  judge per case: {median / count * 1000:.3f} ms (median round)")


def memory(root: Path, start: int, sizes: Sequence[int]) -> None:
    fixtures = root / "fixtures"
    generate(fixtures, start, max(sizes))  # the first `start` workspaces are the timing suite's
    print(f"\n[2] peak RSS by suite size ({len(_files(0))} files per workspace), each child once per size")
    print(f"  load average before: {load()}")
    rows = []
    for size in sizes:
        cases_dir = root / f"cases-{size}"
        write_case_files(cases_dir, size)
        plain = run_child(python_code(PLAIN_CHILD, str(cases_dir), str(fixtures)))
        report_path = root / f"report-{size}.json"
        judged = run_child(python_code(JUDGE_CHILD, str(cases_dir), str(fixtures), str(report_path)))
        rows.append((size, plain, judged, report_path.stat().st_size))
    print(f"  load average after:  {load()}")
    print(f"  {'cases':>7} | {'walk+read RSS':>13} | {'judge RSS':>10} | {'judge wall':>10} | {'report':>9}")
    for size, plain, judged, report in rows:
        print(
            f"  {size:>7,} | {plain.peak_rss / 2**20:>9.1f} MiB | {judged.peak_rss / 2**20:>6.1f} MiB | "
            f"{judged.wall:>8.2f} s | {report / 2**20:>5.1f} MiB"
        )
    print("  growth of peak RSS per added case (judge = load case.yaml + judge_suite + write the report):")
    for (small, plain_s, judged_s, _), (large, plain_l, judged_l, _) in itertools.pairwise(rows):
        added = large - small
        print(
            f"    {small:,} -> {large:,}: judge {(judged_l.peak_rss - judged_s.peak_rss) / added:,.0f} B/case, "
            f"walk+read {(plain_l.peak_rss - plain_s.peak_rss) / added:,.0f} B/case"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workspaces", type=int, default=1000, help="workspaces in the timing suite")
    parser.add_argument("--pairs", type=int, default=15, help="timing rounds")
    parser.add_argument("--sizes", default="1000,3000,6000", help="suite sizes for the memory measurement")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    precompile()
    print(f"{machine()}, load average {load()}")
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-") as folder:
        root = Path(folder)
        timing(root, args.workspaces, args.pairs)
        memory(root, min(args.workspaces, max(sizes)), sizes)


if __name__ == "__main__":
    main()
