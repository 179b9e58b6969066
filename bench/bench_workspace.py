"""How much judging a workspace costs over merely reading its files.

Generates 1,000 evidence-only workspaces of 20 files each in a temporary folder, then times (best of
three, page cache warm) reading every file once against judging every case. Target: ratio below 2x.

    .venv/bin/python bench/bench_workspace.py [--workspaces 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

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


def generate(root: Path, count: int) -> tuple[list[WorkspaceCase], list[str]]:
    cases, paths = [], []
    for index in range(count):
        case_id = f"bench-{index:04d}"
        for rel, text in _files(index).items():
            path = root / case_id / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        raw = {"id": case_id, "title": "bench", "evaluation": {"mode": "evidence_only"}, "judge": JUDGE}
        cases.append(WorkspaceCase.model_validate(raw))
    return cases, paths


def best_of(repeat: int, work: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--workspaces", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        cases, paths = generate(root, args.workspaces)
        total = sum(os.path.getsize(path) for path in paths)

        def read_all() -> None:
            for path in paths:
                with open(path, "rb") as handle:
                    handle.read()

        def walk_and_read_all() -> None:
            # What merely reading a workspace costs when its files are not known in advance: find them, read them.
            for case in cases:
                for folder_path, _, names in os.walk(root / case.id):
                    for name in names:
                        with open(os.path.join(folder_path, name), "rb") as handle:
                            handle.read()

        def judge_all() -> None:
            report = judge_suite(cases, root)
            assert report.passed_cases == len(cases), "bench workspaces should all pass"

        read_all()  # warm the page cache for both timings
        read = best_of(args.repeat, read_all)
        walk = best_of(args.repeat, walk_and_read_all)
        judge = best_of(args.repeat, judge_all)
    print(f"workspaces: {len(cases)}, files: {len(paths)}, bytes: {total:,}")
    print(f"read every file once: {read:.3f} s")
    print(f"judge every case:     {judge:.3f} s ({judge / len(cases) * 1000:.2f} ms per case)")
    print(f"walk folders + read:  {walk:.3f} s")
    print(f"ratio judge/read:     {judge / read:.2f}x (target < 2x); judge/(walk + read): {judge / walk:.2f}x")


if __name__ == "__main__":
    main()
