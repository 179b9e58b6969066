"""Where `bench_agent.py`'s ratio comes from: the parts of `diagbot run` on the same 10,000-case chat suite, each
timed against the plain loop's own parts, in paired, interleaved rounds (A B, then B A, ...), min / median / max.

- reading the runs: read + `json.loads` of every run file (the plain loop's work) against what diagbot does for
  each one (read, orjson, the openai-chat adapter into the run model), in one warm process, streaming one run at
  a time as both do;
- loading the cases: `json.loads` of the case file against diagbot's strict loading of it (10,000 case models);
- starting: a fresh `python -c "import json"` against a fresh `python -c "import diagbot.cli"`.

A script, not a test: nothing asserts on a time. The generated suite lives in a temporary folder that is removed.

    .venv/bin/python bench/bench_agent_parts.py [--cases 10000] [--rounds 9]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from bench_agent import generate
from bench_eval import paired
from measure import load, machine, precompile, python_code

from diagbot.kinds.agent.formats import openai_chat
from diagbot.kinds.agent.load import iter_cases
from diagbot.kinds.agent.options import AgentOptions

RULES = AgentOptions.model_validate({"rules": {"no_card_number": {"answer_not_matches": r"\b\d{16}\b"}}}).rules


def rounds(name_a: str, a: Callable[[], object], name_b: str, b: Callable[[], object], count: int) -> None:
    """`count` rounds of A and B in this process, alternating which goes first; per round B / A."""
    times: dict[str, list[float]] = {name_a: [], name_b: []}
    for i in range(count):
        order = [(name_a, a), (name_b, b)] if i % 2 == 0 else [(name_b, b), (name_a, a)]
        for name, work in order:
            started = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - started)
    for name, taken in times.items():
        print(f"  {name:<14} {min(taken):.3f} / {statistics.median(taken):.3f} / {max(taken):.3f} s")
    ratio = sorted(b_time / a_time for a_time, b_time in zip(times[name_a], times[name_b], strict=True))
    print(f"  {name_b} / {name_a}: {ratio[0]:.2f}x / {statistics.median(ratio):.2f}x / {ratio[-1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    precompile()
    print(f"{machine()}, load average {load()}")
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-parts-") as tmp:
        folder = Path(tmp)
        generate(folder, args.cases)
        case_file, runs = folder / "cases.json", folder / "runs"
        ids = [case["case_id"] for case in json.loads(case_file.read_bytes())]

        def plain_runs() -> None:
            for case_id in ids:
                json.loads((runs / f"{case_id}.json").read_bytes())

        def diagbot_runs() -> None:
            for case_id in ids:
                openai_chat.read(orjson.loads((runs / f"{case_id}.json").read_bytes()))

        def diagbot_cases() -> None:
            problems: list[str] = []
            for _ in iter_cases(case_file, "cases.json", RULES, problems):
                pass
            assert not problems, problems[:3]

        plain_runs()  # the page cache warmed for both sides
        print(f"\n[1] reading the {len(ids):,} runs, in process, {args.rounds} rounds (min / median / max)")
        rounds("json.loads", plain_runs, "diagbot", diagbot_runs, args.rounds)
        print(f"\n[2] loading the case file, in process, {args.rounds} rounds")
        rounds("json.loads", lambda: json.loads(case_file.read_bytes()), "diagbot", diagbot_cases, args.rounds)
    print(f"\n[3] starting a fresh process, {args.rounds} pairs")
    paired("import json", python_code("import json"), "import diagbot", python_code("import diagbot.cli"), args.rounds)


if __name__ == "__main__":
    main()
