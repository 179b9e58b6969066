"""Benchmarks for `diagbot eval` (issue 2) and `diagbot run` (issue 3) on N fixtures of ~100 KB.

eval is measured against a plain loop that only reads and json.loads the same files; run (evaluate, diff against
a baseline that differs in a third of the cases, render) against eval alone. Every side runs as a child process,
so start-up is included; peak memory is the children's max RSS. Usage: python bench/bench_eval.py [--cases 5000].
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PLAIN_LOOP = """
import json, sys
from pathlib import Path
n = 0
for path in sorted(Path(sys.argv[1]).glob("*.json")):
    json.loads(path.read_bytes())
    n += 1
print(n)
"""


def make_fixture(rng: random.Random, index: int) -> dict[str, object]:
    tools = ["lookup_knowledge", "query_logs", "query_metrics", "query_traces", "query_slow_sql"]
    invocations = []
    size = 0
    while size < 95_000:
        lines = [
            f"2026-11-30T10:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z WARN pool-{rng.randrange(9)} "
            f"HikariPool-1 - Connection is not available, request timed out after {rng.randrange(30000)}ms"
            for _ in range(40)
        ]
        invocation = {
            "toolName": rng.choice(tools),
            "success": rng.random() > 0.1,
            "durationMs": rng.randrange(5000),
            "arguments": {"service": "payment", "window": "15m"},
            "result": {"lines": lines},
        }
        size += len(json.dumps(invocation))
        invocations.append(invocation)
    return {
        "session": {
            "answer": f"Case {index}: payment timeout caused by connection pool exhaustion; raise maxPoolSize.",
            "totalDurationMs": rng.randrange(2000, 40000),
            "selfEvaluation": {
                "verifier_evaluation": {
                    "verdict": rng.choice(["PASS", "LOW_CONFID", "REJECT"]),
                    "tool_trace_summary": [{"tool_name": "query_metrics"}],
                }
            },
        },
        "toolInvocations": invocations,
    }


def generate(folder: Path, count: int) -> Path:
    rng = random.Random(7)
    fixtures = folder / "fixtures"
    fixtures.mkdir(parents=True, exist_ok=True)
    cases = []
    for i in range(count):
        (fixtures / f"case-{i:05d}.json").write_text(json.dumps(make_fixture(rng, i)), encoding="utf-8")
        cases.append(
            {
                "id": f"case-{i:05d}",
                "traceFixture": f"case-{i:05d}.json",
                "expectedRootCauseKeywords": ["timeout", "connection pool"],
                "requiredEvidenceTools": ["query_logs", "query_metrics"],
                "allowedVerdicts": ["PASS", "LOW_CONFID"],
            }
        )
    cases_file = folder / "cases.json"
    cases_file.write_text(json.dumps({"defaults": {"degradationKeywords": ["insufficient evidence"]}, "cases": cases}))
    return cases_file


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and the child's peak RSS in MB (ru_maxrss of the largest child so far, so run small first)."""
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    return elapsed, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--keep", help="generate into this folder and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        cases_file = generate(folder, args.cases)
        total = sum(p.stat().st_size for p in (folder / "fixtures").glob("*.json"))
        print(f"{args.cases} fixtures, {total / args.cases / 1024:.0f} KB each on average, {total / 2**20:.0f} MiB")
        # Warm the page cache once so neither side pays for the first read from disk.
        timed([sys.executable, "-c", PLAIN_LOOP, str(folder / "fixtures")])
        plain, plain_rss = timed([sys.executable, "-c", PLAIN_LOOP, str(folder / "fixtures")])
        diag, diag_rss = timed(
            [
                sys.executable,
                "-m",
                "diagbot",
                "eval",
                "--cases",
                str(cases_file),
                "--fixtures",
                str(folder / "fixtures"),
                "--output",
                str(folder / "report.json"),
            ]
        )
        print(f"plain read+json.loads: {plain:.2f} s, peak RSS {plain_rss} MB")
        print(f"diagbot eval:          {diag:.2f} s, peak RSS {diag_rss} MB (max of both children)")
        print(f"ratio: {diag / plain:.2f}x (target <= 1.5x); peak memory target < 300 MB")

        baseline = json.loads((folder / "report.json").read_text(encoding="utf-8"))
        for i, result in enumerate(baseline["results"]):
            if i % 3 == 0:
                result["passed"] = not result["passed"]
        (folder / "baseline.json").write_text(json.dumps(baseline), encoding="utf-8")
        (folder / "diagbot.yml").write_text("suites:\n  - {name: bench, cases: cases.json, fixtures: fixtures}\n")
        run, _ = timed(
            [
                sys.executable,
                "-m",
                "diagbot",
                "run",
                "--config",
                str(folder / "diagbot.yml"),
                "--baseline",
                str(folder / "baseline.json"),
                "--out",
                str(folder / "out"),
                "--no-fail",
            ]
        )
        size = len((folder / "out" / "comment.md").read_text(encoding="utf-8"))
        print(f"diagbot run:           {run:.2f} s, comment {size} characters (limit 65,536)")
        print(f"run / eval: {run / diag:.2f}x (target < 2x)")


if __name__ == "__main__":
    main()
