"""Benchmark for OTLP runs (issue 13): `diagbot run` on the agent benchmark's 10,000 cases with every run recorded
as OTLP/JSON, against a plain read + json.loads loop over the same files.

The conversations are bench_agent.py's (about 50 messages: a user turn, rounds of a tool call and its result, the
answer), recorded the way a GenAI instrumentation and an OTLP exporter write them: an `invoke_agent` root, one
`chat` span per assistant message whose `gen_ai.input.messages` repeats the whole history before it (as JSON text,
the way SDKs that record attributes as strings do) with the message in `gen_ai.output.messages`, and an
`execute_tool` span per call with its arguments and result. So each file holds the conversation about 25 times
over. The spans are built as plain dictionaries in the shape the SDK's encoder gives (tests/otel_recorder.py makes
the same with the SDK itself; 500,000 spans through it would take minutes). Every command is a fresh child
process; the two sides alternate (A B, B A, ...), each pair gives one ratio, and min / median / max are printed
with the wall and CPU times and each side's peak RSS (the child's VmHWM, see measure.py).

A script, not a test: nothing asserts on a time. Generated data lives in a temporary folder that is removed.

    .venv/bin/python bench/bench_agent_otlp.py [--cases 10000] [--pairs 9]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_agent import CONFIG, PLAIN_LOOP, make_case, make_run
from bench_eval import paired
from measure import load, machine, mib, peak_pss, precompile, python_code, python_module, run_child

START_NS = 1_796_000_000_000_000_000
STEP_NS = 40_000_000  # 40 ms per span


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    typed = {str: "stringValue", bool: "boolValue", int: "intValue", float: "doubleValue"}
    return [{"key": k, "value": {typed[type(v)]: str(v) if type(v) is int else v}} for k, v in values.items()]


def _part(message: dict[str, Any]) -> dict[str, Any]:
    """A chat message in the GenAI conventions' shape (role and parts)."""
    if message["role"] == "tool":
        response = {"type": "tool_call_response", "id": message["tool_call_id"], "response": message["content"]}
        return {"role": "tool", "parts": [response]}
    parts: list[dict[str, Any]] = [{"type": "text", "content": message["content"]}] if message["content"] else []
    for call in message.get("tool_calls") or []:
        arguments = json.loads(call["function"]["arguments"])
        parts.append({"type": "tool_call", "id": call["id"], "name": call["function"]["name"], "arguments": arguments})
    return {"role": message["role"], "parts": parts}


def make_export(messages: list[dict[str, Any]], index: int) -> dict[str, Any]:
    """One run's export: an invoke_agent root, a chat span per assistant message (the history before it repeated in
    each), a tool span per call."""
    trace_id = f"{index + 1:032x}"
    root_id = f"{1:016x}"
    spans: list[dict[str, Any]] = []
    encoded = [json.dumps(_part(m), ensure_ascii=False) for m in messages]
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    clock = START_NS + STEP_NS

    def span(name: str, kind: int, attributes: dict[str, Any]) -> None:
        nonlocal clock
        spans.append({"traceId": trace_id, "spanId": f"{len(spans) + 2:016x}", "parentSpanId": root_id,
                      "name": name, "kind": kind, "startTimeUnixNano": str(clock),
                      "endTimeUnixNano": str(clock + STEP_NS - 1), "attributes": _attributes(attributes),
                      "status": {}, "flags": 256})  # fmt: skip
        clock += STEP_NS

    for i, message in enumerate(messages):
        if message["role"] != "assistant":
            continue
        span("chat gpt-4.1", 3, {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                                 "gen_ai.request.model": "gpt-4.1", "gen_ai.usage.input_tokens": 900 * i,
                                 "gen_ai.input.messages": "[" + ", ".join(encoded[:i]) + "]",
                                 "gen_ai.output.messages": "[" + encoded[i] + "]"})  # fmt: skip
        for call in message.get("tool_calls") or []:
            name = call["function"]["name"]
            span(f"execute_tool {name}", 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                             "gen_ai.tool.call.id": call["id"],
                                             "gen_ai.tool.call.arguments": call["function"]["arguments"],
                                             "gen_ai.tool.call.result": results[call["id"]]})  # fmt: skip
    root = {"traceId": trace_id, "spanId": root_id, "name": "invoke_agent refund-agent", "kind": 1,
            "startTimeUnixNano": str(START_NS), "endTimeUnixNano": str(clock),
            "attributes": _attributes({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund-agent"}),
            "status": {}, "flags": 256}  # fmt: skip
    resource = {"attributes": _attributes({"service.name": "refund-agent", "telemetry.sdk.language": "python"})}
    scope = {"scope": {"name": "opentelemetry.instrumentation.openai_v2", "version": "2.1b0"}, "spans": [*spans, root]}
    return {"resourceSpans": [{"resource": resource, "scopeSpans": [scope]}]}


def generate(folder: Path, count: int) -> tuple[int, int]:
    """The suite: cases in one JSON file, one OTLP/JSON run file per case. Returns (bytes as OTLP, as chat)."""
    rng = random.Random(12)
    runs = folder / "runs"
    runs.mkdir(parents=True)
    otlp_total = chat_total = 0
    cases = []
    for i in range(count):
        case = make_case(i)
        cases.append(case)
        messages = make_run(rng, i)
        chat_total += len(json.dumps(messages))
        text = json.dumps(make_export(messages, i), ensure_ascii=False, separators=(",", ":"))
        (runs / f"{case['case_id']}.json").write_text(text, encoding="utf-8")
        otlp_total += len(text)
    (folder / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
    config = CONFIG.format(cases="cases.json").replace("trace-format: openai-chat", "trace-format: otlp")
    (folder / "otlp.yml").write_text(config, encoding="utf-8")
    return otlp_total, chat_total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--pairs", type=int, default=9, help="plain / run pairs")
    args = parser.parse_args()
    precompile()
    print(f"{machine()}, load average {load()}")
    with tempfile.TemporaryDirectory(prefix="diagbot-bench-otlp-") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        otlp_total, chat_total = generate(folder, args.cases)
        print(f"agent suite as OTLP/JSON: {args.cases:,} cases, {otlp_total / args.cases / 1024:.0f} KiB a run on "
              f"average ({otlp_total / chat_total:.1f}x the same runs as chat messages), {otlp_total / 2**20:.0f} MiB "
              f"(generated in {time.perf_counter() - started:.0f} s)")  # fmt: skip
        plain = python_code(PLAIN_LOOP, str(folder / "cases.json"), str(folder / "runs"))
        run = python_module("diagbot", "run", "--config", str(folder / "otlp.yml"), "--out", str(folder / "out"),
                            "--no-fail")  # fmt: skip
        run_child(plain)  # warm the page cache so that neither side pays for the first read from disk
        run_child(run)
        report = json.loads((folder / "out" / "reports" / "bench.json").read_text(encoding="utf-8"))
        print(f"  report: {report['passedCases']:,}/{report['totalCases']:,} cases pass")
        if report["passedCases"] != report["totalCases"]:
            failing = next(r for r in report["results"] if not r["passed"])
            raise SystemExit(f"the OTLP runs should pass as their chat originals do: {failing['failedChecks']}")
        print(f"\ndiagbot run (OTLP/JSON runs) vs plain read + json.loads of the same files, {args.pairs} pairs")
        paired("plain", plain, "run-otlp", run, args.pairs)
        print("\nthe most memory each held at once, worker processes included (sum of proportional set sizes, one")
        print("untimed run each)")
        for name, cmd in (("plain", plain), ("run-otlp", run), ("run-otlp --jobs 1", [*run, "--jobs", "1"])):
            print(f"  {name:<17} {mib(peak_pss(cmd))}")


if __name__ == "__main__":
    main()
