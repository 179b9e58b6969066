"""Benchmarks for `diagbot eval` (issue 2) and `diagbot run` (issue 3), as ratios in paired, interleaved runs.

Timing: N fixtures of ~95 KB. `diagbot eval` is measured against a plain loop that reads the same case file and
then reads and json.loads each fixture it names; `diagbot run` (evaluate, diff against a baseline that differs in
a third of the cases, render) against `diagbot eval`. Every command runs as a fresh child process, so start-up is
included. The two sides alternate (A B, B A, A B, ...) and each pair gives one ratio; min / median / max of those
ratios are printed with the absolute wall and CPU (user + sys) times, since one shared 2-core machine is noisy.

Memory: suites of 5,000 / 20,000 / 50,000 small fixtures (~1.4 KB), each command run once in a fresh child; peak
RSS is that child's own VmHWM (see measure.py), and the growth between sizes is given in bytes per case.

Scripts, not tests: nothing here asserts on a time. Generated data lives in a temporary folder that is removed.

    .venv/bin/python bench/bench_eval.py [--cases 5000] [--pairs 15] [--run-pairs 9] [--sizes 5000,20000,50000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from measure import Child, load, machine, precompile, python_code, python_module, run_child, spread

# The baseline: what any evaluator must at least do, read the case file, then read and parse every fixture.
# (The loop used before, over sorted(glob("*.json")) with nothing else alive, paid ~0.2 s of page faults on 5,000
# fixtures: glibc gave the freed heap top back after every fixture and faulted it in again for the next one. With
# the parsed case list alive, as in diagbot, that does not happen, so this baseline is the fair one and faster.)
PLAIN_LOOP = """
import json, sys
from pathlib import Path
cases = json.loads(Path(sys.argv[1]).read_bytes())["cases"]
fixtures = Path(sys.argv[2])
for case in cases:
    json.loads((fixtures / case["traceFixture"]).read_bytes())
print(len(cases))
"""

TOOLS = ["lookup_knowledge", "query_logs", "query_metrics", "query_traces", "query_slow_sql"]


def make_fixture(rng: random.Random, index: int, target_bytes: int, lines_per_call: int) -> dict[str, object]:
    invocations = []
    size = 0
    while size < target_bytes:
        lines = [
            f"2026-11-30T10:{rng.randrange(60):02d}:{rng.randrange(60):02d}Z WARN pool-{rng.randrange(9)} "
            f"HikariPool-1 - Connection is not available, request timed out after {rng.randrange(30000)}ms"
            for _ in range(lines_per_call)
        ]
        invocation = {
            "toolName": rng.choice(TOOLS),
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


def generate_fixtures(folder: Path, count: int, target_bytes: int, lines_per_call: int) -> int:
    """Write `count` fixtures into folder/fixtures; the total number of bytes written."""
    rng = random.Random(7)
    fixtures = folder / "fixtures"
    fixtures.mkdir(parents=True, exist_ok=True)
    total = 0
    for i in range(count):
        text = json.dumps(make_fixture(rng, i, target_bytes, lines_per_call))
        (fixtures / f"case-{i:05d}.json").write_text(text, encoding="utf-8")
        total += len(text)
    return total


def write_cases(path: Path, count: int) -> Path:
    cases = [
        {
            "id": f"case-{i:05d}",
            "traceFixture": f"case-{i:05d}.json",
            "expectedRootCauseKeywords": ["timeout", "connection pool"],
            "requiredEvidenceTools": ["query_logs", "query_metrics"],
            "allowedVerdicts": ["PASS", "LOW_CONFID"],
        }
        for i in range(count)
    ]
    path.write_text(json.dumps({"defaults": {"degradationKeywords": ["insufficient evidence"]}, "cases": cases}))
    return path


def paired(name_a: str, cmd_a: Sequence[str], name_b: str, cmd_b: Sequence[str], pairs: int) -> None:
    """Run A and B `pairs` times each, interleaved, alternating which goes first; print B/A per pair."""
    print(f"  load average before: {load()}")
    a_runs: list[Child] = []
    b_runs: list[Child] = []
    for i in range(pairs):
        if i % 2 == 0:
            a_runs.append(run_child(cmd_a))
            b_runs.append(run_child(cmd_b))
        else:
            b_runs.append(run_child(cmd_b))
            a_runs.append(run_child(cmd_a))
    print(f"  load average after:  {load()}")
    width = max(len(name_a), len(name_b))
    for name, runs in ((name_a, a_runs), (name_b, b_runs)):
        print(f"  {name:<{width}}  wall {spread([r.wall for r in runs], '{:.3f} s')}")
        print(f"  {'':<{width}}  cpu  {spread([r.cpu for r in runs], '{:.3f} s')}")
        print(f"  {'':<{width}}  peak RSS {max(r.peak_rss for r in runs) / 2**20:.1f} MiB (largest of {pairs} runs)")
        if any(r.worker_peak_rss for r in runs):  # its workers' (`diagbot run --jobs`), or git's
            worker = max(r.worker_peak_rss for r in runs)
            print(
                f"  {'':<{width}}  largest child's peak RSS {worker / 2**20:.1f} MiB (a worker, or git: see measure.py)"
            )
    wall = [b.wall / a.wall for a, b in zip(a_runs, b_runs, strict=True)]
    cpu = [b.cpu / a.cpu for a, b in zip(a_runs, b_runs, strict=True)]
    print(f"  ratio {name_b} / {name_a} over {pairs} pairs:")
    print(f"    wall: {spread(wall, '{:.2f}x')}")
    print(f"    cpu:  {spread(cpu, '{:.2f}x')}")
    print("    per pair (wall): " + " ".join(f"{r:.2f}" for r in wall))


def eval_cmd(cases: Path, fixtures: Path, output: Path) -> list[str]:
    return python_module("diagbot", "eval", "--cases", str(cases), "--fixtures", str(fixtures), "--output", str(output))


def timing(folder: Path, count: int, pairs: int, run_pairs: int) -> None:
    started = time.perf_counter()
    total = generate_fixtures(folder, count, 95_000, 40)
    cases = write_cases(folder / "cases.json", count)
    fixtures = folder / "fixtures"
    print(f"timing suite: {count:,} fixtures, {total / count / 1024:.0f} KiB each on average, {total / 2**20:.0f} MiB")
    print(f"  (generated in {time.perf_counter() - started:.0f} s)")
    plain = python_code(PLAIN_LOOP, str(cases), str(fixtures))
    evaluate = eval_cmd(cases, fixtures, folder / "report.json")
    run_child(plain)  # warm the page cache once so no side pays for the first read from disk
    run_child(evaluate)
    print(f"\n[1] diagbot eval vs plain read + json.loads, {pairs} pairs")
    paired("plain", plain, "eval", evaluate, pairs)

    baseline = json.loads((folder / "report.json").read_text(encoding="utf-8"))
    for i, result in enumerate(baseline["results"]):
        if i % 3 == 0:  # a flipped verdict with failed checks that agree with it, as diagbot holds stored reports to
            result["passed"] = not result["passed"]
            result["failedChecks"] = [] if result["passed"] else ["keyword_coverage: flipped for the benchmark"]
    baseline["passedCases"] = sum(1 for result in baseline["results"] if result["passed"])
    baseline["passRate"] = baseline["passedCases"] / max(1, baseline["totalCases"])
    (folder / "baseline.json").write_text(json.dumps(baseline), encoding="utf-8")
    (folder / "diagbot.yml").write_text("suites:\n  - {name: bench, cases: cases.json, fixtures: fixtures}\n")
    config, out = str(folder / "diagbot.yml"), str(folder / "out")
    run = python_module("diagbot", "run", "--config", config, "--baseline", str(folder / "baseline.json"), "--out", out)
    run.append("--no-fail")
    run_child(run)
    comment = (folder / "out" / "comment.md").read_text(encoding="utf-8")
    print(f"\n[2] diagbot run (eval + diff against a baseline differing in {len(baseline['results'][::3]):,} cases")
    print(
        f"    + renders; comment {len(comment):,} characters, GitHub's limit 65,536) vs diagbot eval, {run_pairs} pairs"
    )
    paired("eval", evaluate, "run", run, run_pairs)


def memory(folder: Path, sizes: Sequence[int]) -> None:
    biggest = max(sizes)
    total = generate_fixtures(folder, biggest, 800, 2)
    fixtures = folder / "fixtures"
    print(f"\n[3] peak RSS by suite size: small fixtures, {total / biggest:.0f} bytes each on average,")
    print("    each command once per size in a fresh child")
    print(f"  load average before: {load()}")
    rows = []
    for size in sizes:
        cases = write_cases(folder / f"cases-{size}.json", size)
        plain = run_child(python_code(PLAIN_LOOP, str(cases), str(fixtures)))
        evaluate = run_child(eval_cmd(cases, fixtures, folder / f"report-{size}.json"))
        report = (folder / f"report-{size}.json").stat().st_size
        rows.append((size, plain, evaluate, report))
    print(f"  load average after:  {load()}")
    print(f"  {'cases':>7} | {'plain RSS':>10} | {'eval RSS':>10} | {'eval wall':>9} | {'report':>9}")
    for size, plain, evaluate, report in rows:
        print(
            f"  {size:>7,} | {plain.peak_rss / 2**20:>6.1f} MiB | {evaluate.peak_rss / 2**20:>6.1f} MiB | "
            f"{evaluate.wall:>7.2f} s | {report / 2**20:>5.1f} MiB"
        )
    print("  growth of peak RSS per added case:")
    for (small, plain_s, eval_s, _), (large, plain_l, eval_l, _) in itertools.pairwise(rows):
        added = large - small
        print(
            f"    {small:,} -> {large:,}: eval {(eval_l.peak_rss - eval_s.peak_rss) / added:,.0f} B/case, "
            f"plain {(plain_l.peak_rss - plain_s.peak_rss) / added:,.0f} B/case"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=5000, help="fixtures of ~95 KB in the timing suite")
    parser.add_argument("--pairs", type=int, default=15, help="plain/eval pairs")
    parser.add_argument("--run-pairs", type=int, default=9, help="eval/run pairs")
    parser.add_argument("--sizes", default="5000,20000,50000", help="suite sizes for the memory measurement")
    parser.add_argument("--keep", help="generate into this folder and keep it")
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes.split(","))
    precompile()
    print(f"{machine()}, load average {load()}")
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-") as tmp:
        folder = Path(args.keep or tmp)
        timing(folder / "timing", args.cases, args.pairs, args.run_pairs)
        memory(folder / "memory", sizes)


if __name__ == "__main__":
    main()
