"""RAG metrics of one trial (001 12.5): did the retrievals find the gold evidence, and does the answer cite it.

The case names its gold evidence (`gold_evidence: [{doc_id, passage_id?, required}]`) and the metrics to compute
(`evaluation_metrics`); the run records its retrievals and the answer's citations. Two metrics are machine-checked:

- `evidence_recall_at_K`: the share of required gold items found among the first K documents of any one retrieval
  (by recorded rank when every document has one, else in the recorded order).
- `citation_accuracy`: the share of the answer's citations that point at a gold item (required or not).

A document or citation points at a gold item when the doc ids are equal and, where both name a passage, the
passages are equal too. Any other metric (`faithfulness`, ...) needs a judge and is listed as not machine-checked.
"""

from __future__ import annotations

import re
from typing import Any

from diagbot.core.rates import rate
from diagbot.kinds.agent.run import Citation, Document, Retrieval

RECALL = re.compile(r"evidence_recall_at_([1-9][0-9]{0,3})")
ACCURACY = "citation_accuracy"
MAX_K = 1000
MACHINE_CHECKED = ("evidence_recall_at_K", ACCURACY)
DEFAULT_THRESHOLD = 1.0


def recall_k(metric: str) -> int | None:
    """K of an `evidence_recall_at_K` name (1 to MAX_K), or None for any other name."""
    found = RECALL.fullmatch(metric)
    return int(found.group(1)) if found and int(found.group(1)) <= MAX_K else None


def is_checked(metric: str) -> bool:
    return metric == ACCURACY or recall_k(metric) is not None


def _points_at(doc_id: str | None, passage_id: str | None, gold: Any) -> bool:
    if doc_id is None or doc_id != gold.doc_id:
        return False
    return passage_id is None or gold.passage_id is None or passage_id == gold.passage_id


def _top(retrieval: Retrieval, k: int) -> list[Document]:
    docs = retrieval.documents
    if docs and all(d.rank is not None for d in docs):
        docs = sorted(docs, key=lambda d: d.rank if d.rank is not None else 0)
    return docs[:k]


def recall(gold: list[Any], retrievals: list[Retrieval], k: int) -> tuple[float, list[Any]]:
    """(share of required gold items found in the top k of some retrieval, the required items not found)."""
    required = [g for g in gold if g.required]
    tops = [_top(r, k) for r in retrievals]
    missed = [g for g in required if not any(_points_at(d.id, d.passage_id, g) for top in tops for d in top)]
    return rate(len(required) - len(missed), len(required)), missed


def accuracy(gold: list[Any], citations: list[Citation]) -> tuple[float | None, list[Citation]]:
    """(share of citations that point at gold evidence, or None with no citation; the citations that do not)."""
    if not citations:
        return None, []
    wrong = [c for c in citations if not any(_points_at(c.doc_id, c.passage_id, g) for g in gold)]
    return rate(len(citations) - len(wrong), len(citations)), wrong


def cites_required(gold: list[Any], citations: list[Citation]) -> bool:
    """Whether the answer cites a required gold item; with none required, whether it cites anything."""
    required = [g for g in gold if g.required]
    if not required:
        return bool(citations)
    return any(_points_at(c.doc_id, c.passage_id, g) for c in citations for g in required)


def required_citation(requirement: Any) -> bool:
    """Whether a case's `citation_requirement` asks for a citation: any value but an empty one or false."""
    return requirement not in (None, False, "", [], {})


def label(item: Any) -> str:
    """A gold item or a citation as `doc_id#passage_id`."""
    return str(item.doc_id) + (f"#{item.passage_id}" if item.passage_id else "")
