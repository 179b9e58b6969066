"""Benchmark for the agent suite (issue 12): `diagbot run` on 10,000 cases against a plain read + json.loads loop.

Each case has one recorded run of about 50 OpenAI chat messages (~40 KB: tool calls with JSON-string arguments,
tool results, assistant text). The suite is written twice: its cases once in one JSON file, once as 10,000 YAML
files (one case each). Every command is a fresh child process, start-up included. The plain loop reads the JSON
case file and then reads and json.loads every run file: what any evaluator of these runs must at least do. The two
sides alternate (A B, B A, ...), each pair gives one ratio, and min / median / max are printed with the absolute
wall and CPU times and each side's peak RSS (the child's own VmHWM, see measure.py).

`diagbot run` judges a suite this size in worker processes, as many as the CPUs it may use (`--jobs`): its wall
time is what a user waits, its CPU time (the workers' included) what it costs, and its peak RSS is printed with
the largest worker's (which counts the pages it shares with the parent). [3] runs it with `--jobs 1`, in one
process, for the single-process figure. [4] gives the most memory each command held at once with its workers, the
sum of their proportional set sizes, in one untimed run each.

A script, not a test: nothing asserts on a time. Generated data lives in a temporary folder that is removed.

    .venv/bin/python bench/bench_agent.py [--cases 10000] [--pairs 9] [--yaml-pairs 3] [--one-process-pairs 3]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import yaml
from bench_eval import paired
from measure import load, machine, mib, peak_pss, precompile, python_code, python_module, run_child

PLAIN_LOOP = """
import json, sys
from pathlib import Path
cases = json.loads(Path(sys.argv[1]).read_bytes())
runs = Path(sys.argv[2])
for case in cases:
    json.loads((runs / (case["case_id"] + ".json")).read_bytes())
print(len(cases))
"""

TOOLS = ["order_lookup", "refund_eligibility_check", "refund_status_lookup", "policy_search", "refund_submit"]
FILLER = "The order was signed for ten days ago; the customer reports a fault with the left earbud. "


def make_run(rng: random.Random, index: int) -> list[dict[str, object]]:
    """About 50 messages: a user turn, then rounds of assistant tool call + tool result, then the answer."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a refund assistant. " + FILLER * 4},
        {"role": "user", "content": f"Order ORDER_{index}: can I return these earphones? " + FILLER},
    ]
    call = 0
    while len(messages) < 48:
        call += 1
        tool = TOOLS[(call - 1) % 4]
        args = {"order_id": f"ORDER_{index}", "page": call, "fields": ["status", "items", "signed_days"]}
        messages.append({
            "role": "assistant",
            "content": None if rng.random() < 0.5 else f"Checking {tool} for the order. " + FILLER,
            "tool_calls": [{"id": f"call_{call}", "type": "function",
                            "function": {"name": tool, "arguments": json.dumps(args)}}],
        })  # fmt: skip
        result = {"order_id": f"ORDER_{index}", "status": "signed", "note": FILLER * 11, "rows": list(range(40))}
        messages.append({"role": "tool", "tool_call_id": f"call_{call}", "content": json.dumps(result)})
    messages.append(
        {"role": "assistant", "content": "This looks like a quality issue: after-sales inspection. " + FILLER}
    )
    return messages


def make_case(index: int) -> dict[str, object]:
    return {
        "case_id": f"refund_{index:05d}",
        "case_version": "v1",
        "dataset_id": "bench_set",
        "dataset_version": "v1",
        "title": "Quality issue after the return window",
        "scenario": "refund",
        "user_task": "judge refund eligibility",
        "ability_tags": ["tool use", "business rules"],
        "risk_level": "P1",
        "difficulty": "Medium",
        "source": "generated",
        "input": "Can I return these earphones?",
        "expected_behavior": ["look up the order before answering"],
        "negative_behavior": [{"tool_called": "refund_submit"}, "promise an instant refund"],
        "rubric": "refund_policy_v1",
        "evaluator_config": {"rule_checks": ["no_card_number"]},
        "available_tools": TOOLS,
        "expected_tool_sequence": ["order_lookup", "refund_eligibility_check"],
        "expected_args": {"order_lookup": {"order_id": f"ORDER_{index}"}},
        "success_criteria": [{"answer_contains": {"any": ["inspection", "after-sales"]}}],
        "metadata": {
            "dataset_role": "regression",
            "tags": ["refund"],
            "owner": "bench",
            "review_status": "approved",
            "usage_rights_status": "approved_for_evaluation",
        },
    }


CONFIG = """suites:
  - name: bench
    kind: agent
    cases: {cases}
    fixtures: runs
    trace-format: openai-chat
    rules:
      no_card_number: {{answer_not_matches: "\\\\b\\\\d{{16}}\\\\b"}}
"""


def generate(folder: Path, count: int) -> int:
    rng = random.Random(12)
    runs = folder / "runs"
    runs.mkdir(parents=True)
    (folder / "yaml").mkdir()
    total, cases = 0, []
    for i in range(count):
        case = make_case(i)
        cases.append(case)
        text = json.dumps(make_run(rng, i))
        (runs / f"{case['case_id']}.json").write_text(text, encoding="utf-8")
        total += len(text)
        (folder / "yaml" / f"{case['case_id']}.yaml").write_text(
            yaml.safe_dump(case, sort_keys=False), encoding="utf-8"
        )
    (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    (folder / "json.yml").write_text(CONFIG.format(cases="cases.json"), encoding="utf-8")
    (folder / "yaml.yml").write_text(CONFIG.format(cases="yaml"), encoding="utf-8")
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=9, help="plain / run (JSON cases) pairs")
    parser.add_argument("--yaml-pairs", type=int, default=3, help="plain / run (YAML case files) pairs")
    parser.add_argument("--one-process-pairs", type=int, default=3, help="plain / run --jobs 1 pairs")
    args = parser.parse_args()
    precompile()
    print(f"{machine()}, load average {load()}")
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-agent-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        total = generate(folder, args.cases)
        print(f"agent suite: {args.cases:,} cases, runs of 50 messages, {total / args.cases / 1024:.1f} KiB each "
              f"on average, {total / 2**20:.0f} MiB (generated in {time.perf_counter() - started:.0f} s)")  # fmt: skip
        plain = python_code(PLAIN_LOOP, str(folder / "cases.json"), str(folder / "runs"))
        runs = {
            kind: python_module("diagbot", "run", "--config", str(folder / f"{kind}.yml"), "--out",
                                str(folder / f"out-{kind}"), "--no-fail")
            for kind in ("json", "yaml")
        }  # fmt: skip
        one = [*runs["json"], "--jobs", "1"]
        run_child(plain)  # warm the page cache so that neither side pays for the first read from disk
        run_child(runs["json"])
        report = json.loads((folder / "out-json" / "reports" / "bench.json").read_text(encoding="utf-8"))
        print(f"  report: {report['passedCases']:,}/{report['totalCases']:,} cases pass")
        print(f"\n[1] diagbot run (cases in one JSON file) vs plain read + json.loads, {args.pairs} pairs")
        paired("plain", plain, "run-json", runs["json"], args.pairs)
        print(f"\n[2] diagbot run (10,000 YAML case files) vs plain read + json.loads, {args.yaml_pairs} pairs")
        paired("plain", plain, "run-yaml", runs["yaml"], args.yaml_pairs)
        print(f"\n[3] diagbot run --jobs 1 (JSON cases, one process) vs plain, {args.one_process_pairs} pairs")
        paired("plain", plain, "run-one", one, args.one_process_pairs)
        print("\n[4] the most memory each held at once, its worker processes included (sum of proportional set sizes,")
        print("    sampled every 20 ms in one untimed run each)")
        for name, cmd in (("plain", plain), ("run-json", runs["json"]), ("run-yaml", runs["yaml"]), ("run-one", one)):
            print(f"  {name:<9} {mib(peak_pss(cmd))}")


if __name__ == "__main__":
    main()
