"""Write the bundled agent runs recorded in the OpenTelemetry and Responses formats (issue 13).

Each is the same conversation as an openai-chat original kept in tests/data/agent/otel/, recorded again with the
real OpenTelemetry SDK (tests/otel_recorder.py: fixed ids and clock, so the output is the same every time) or
written as OpenAI Responses items. The case's verdict does not change with the format; tests/test_agent_otel.py
checks that and that the committed files are what this script writes. Usage:
    python scripts/make_otel_fixtures.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import otel_recorder  # noqa: E402

SOURCES = ROOT / "tests/data/agent/otel"
FIXTURES = ROOT / "fixtures/agent"
# the run file (under fixtures/agent, named as the chat original under tests/data/agent/otel) -> how it is written
RECORDINGS: dict[str, Callable[[Any], Any]] = {
    "incident_payment_latency_001.json": lambda run: otel_recorder.genai(run, seed=1),  # GenAI spans
    "refund_tool_partial_amount_003.json": lambda run: otel_recorder.openinference(run, seed=3),  # OpenInference
    "tool_refund_check_008/trial-2.json": otel_recorder.responses,  # OpenAI Responses items
}


SYSTEM = "You answer refund policy questions from the policy corpus and cite passages as [doc_id#passage_id]."


def rag_genai() -> dict[str, Any]:
    """rag_refund_policy_014 as GenAI spans: a retrieval that finds the gold passage's document second, then an
    answer citing that passage. It passes."""
    recorder = otel_recorder.Recorder(seed=14, service="policy-agent")
    question = "Can I still return earphones within seven days, no reason given, once I have opened them?"
    documents = [
        {"id": "refund_policy_general_001", "score": 0.91},
        {"id": "refund_policy_audio_003", "score": 0.88},
        {"id": "shipping_faq_007", "score": 0.42},
    ]
    answer = (
        "Opened earphones that can no longer be resold are outside the seven-day no-reason return "
        "[refund_policy_audio_003#p12]. If they are faulty, after-sales can inspect them for a quality return."
    )
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "policy-agent"}
    with recorder.root("invoke_agent policy-agent", agent, duration_ms=1800):
        retrieval = {
            "gen_ai.operation.name": "retrieval",
            "gen_ai.data_source.id": "refund_policy_2026_07",
            "gen_ai.retrieval.query.text": question,
            "gen_ai.retrieval.documents": json.dumps(documents),
        }
        recorder.span("retrieval refund_policy_2026_07", retrieval)
        history = [
            {"role": "system", "parts": [{"type": "text", "content": SYSTEM}]},
            {"role": "user", "parts": [{"type": "text", "content": question}]},
        ]
        output = [{"role": "assistant", "parts": [{"type": "text", "content": answer}], "finish_reason": "stop"}]
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4.1",
            "gen_ai.provider.name": "openai",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(output),
        }
        recorder.span("chat gpt-4.1", chat, kind=otel_recorder.SpanKind.CLIENT)
    return recorder.otlp()


def rag_openinference() -> dict[str, Any]:
    """rag_refund_policy_015 as OpenInference spans: the gold passage comes back seventh, and the answer cites a
    FAQ page instead of it: evidence_recall_low, citation_inaccurate and citation_missing."""
    recorder = otel_recorder.Recorder(seed=15, service="policy-agent")
    question = "I returned an order last week. Do I keep the member points I earned on it?"
    found = ["points_faq_010", "member_tiers_004", "shipping_faq_007", "coupon_rules_003", "refund_policy_general_001",
             "points_expiry_006", "member_points_policy_002"]  # fmt: skip
    answer = "Yes, points you have earned are yours to keep [points_faq_010]."
    with recorder.root("agent", {"openinference.span.kind": "AGENT"}, duration_ms=2100):
        retriever: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": question}
        for i, doc in enumerate(found):
            retriever[f"retrieval.documents.{i}.document.id"] = doc
            retriever[f"retrieval.documents.{i}.document.score"] = round(0.9 - i * 0.05, 2)
        recorder.span("retrieve", retriever)
        llm = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4.1",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": SYSTEM,
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": question,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": answer,
        }
        recorder.span("ChatCompletion", llm, kind=otel_recorder.SpanKind.CLIENT)
    return recorder.otlp()


# RAG runs recorded from scratch (no chat original: the chat format has no retrievals)
RAG_RECORDINGS: dict[str, Callable[[], Any]] = {
    "rag_refund_policy_014.json": rag_genai,
    "rag_refund_policy_015.json": rag_openinference,
}


def render(name: str) -> str:
    """The run file's text, from its chat original (or recorded from scratch, for a RAG run)."""
    if name in RAG_RECORDINGS:
        return json.dumps(RAG_RECORDINGS[name](), indent=2, ensure_ascii=False) + "\n"
    original = json.loads((SOURCES / name).read_text(encoding="utf-8"))
    return json.dumps(RECORDINGS[name](original), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    for name in [*RECORDINGS, *RAG_RECORDINGS]:
        (FIXTURES / name).write_text(render(name), encoding="utf-8")
        print(f"wrote fixtures/agent/{name}")


if __name__ == "__main__":
    main()
