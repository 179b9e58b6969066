"""RAG metrics of one trial (001 12.5): did the retrievals find the gold evidence, and does the answer cite it.

The case names its gold evidence (`gold_evidence: [{doc_id, passage_id?, required}]`) and the metrics to compute
(`evaluation_metrics`); the run records its retrievals and the answer's citations. Two metrics are machine-checked:

- `evidence_recall_at_K`: the share of required gold items found among the first K documents of any one retrieval
  (by recorded rank when every document has one, else in the recorded order).
- `citation_accuracy`: the share of the answer's citations that point at a gold item (required or not).

A document or citation points at a gold item when the doc ids are equal and, where both name a passage, the
passages are equal too. Any other metric (`faithfulness`, ...) needs a judge and is listed as not machine-checked.

The work is linear: documents and gold items are looked up by id, never compared pair by pair, and one pass over
a run's retrievals gives the recall at every K a case asks for.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from diagbot.core import values
from diagbot.core.rates import rate
from diagbot.core.text import closest
from diagbot.kinds.agent.run import Citation, Document, Retrieval

RECALL = re.compile(r"evidence_recall_at_([1-9][0-9]{0,3})")
ACCURACY = "citation_accuracy"
MAX_K = 1000
MACHINE_CHECKED = ("evidence_recall_at_K", ACCURACY)
DEFAULT_THRESHOLD = 1.0
MAX_LABEL_CHARS = 80  # of a doc id or a passage id shown in a message
CLOSE = 0.85  # difflib's ratio from which a metric name is taken for a misspelt computed one
_RECALL_SHAPE = "evidence_recall_at_k"  # a recall name with its digits replaced by k
_MAX_NAME_CHARS = 100  # longer names are close to no computed one (and are not normalised)
# Cyrillic and Greek letters that look like Latin ones, after casefolding: `еvidence` with a Cyrillic е is taken
# for `evidence`, since a name that only looks computed would silently become a judged metric.
_LOOKALIKES = str.maketrans("асеһіјԁорԛѕԝхуαεικνορτυχ", "acehijdopqswxyaeiknoptux")


@dataclass(frozen=True)
class Cited:
    """The answer's citations that are compared with the gold evidence, and what of the answer's citations was
    not read ("" when nothing was left): a citation not read could be a wrong one."""

    citations: list[Citation]
    unread: str = ""


def recall_k(metric: str) -> int | None:
    """K of an `evidence_recall_at_K` name (1 to MAX_K), or None for any other name."""
    found = RECALL.fullmatch(metric)
    return int(found.group(1)) if found and int(found.group(1)) <= MAX_K else None


def is_checked(metric: str) -> bool:
    return metric == ACCURACY or recall_k(metric) is not None


def misspelt(metric: str) -> str | None:
    """The computed metric that a name diagbot does not compute most likely misspells, or None for a name of
    another metric (`faithfulness`, `context_recall`, ...). Names are compared NFKC-folded, casefolded and with
    look-alike letters read as Latin; a recall name by its shape (digits as K), and the K written is kept
    (`EVIDENCE_RECAL_AT_3` means evidence_recall_at_3; 5 when it wrote no K from 1 to MAX_K)."""
    if len(metric) > _MAX_NAME_CHARS:
        return None
    skeleton = unicodedata.normalize("NFKC", metric).casefold().translate(_LOOKALIKES)
    if closest(re.sub(r"\d+", "k", skeleton), [_RECALL_SHAPE], cutoff=CLOSE):
        written = [int(k) for k in re.findall(r"\d+", skeleton) if len(k) <= 4]
        k = next((k for k in reversed(written) if 1 <= k <= MAX_K), 5)
        return f"evidence_recall_at_{k}"
    if closest(metric, [ACCURACY], cutoff=CLOSE) or closest(skeleton, [ACCURACY], cutoff=CLOSE):
        return ACCURACY
    return None


class _Places:
    """Where sources occur, for lookups by id: for each doc id the best (lowest) place of any of its sources, of
    each of its passages, and of the sources that name no passage (which stand for the whole document)."""

    def __init__(self) -> None:
        self.any: dict[str, int] = {}
        self.passage: dict[tuple[str, str], int] = {}
        self.whole: dict[str, int] = {}

    def add(self, doc_id: str | None, passage_id: str | None, place: int = 0) -> None:
        if doc_id is None:
            return  # a source recorded without an id can never be gold evidence
        _lower(self.any, doc_id, place)
        if passage_id is None:
            _lower(self.whole, doc_id, place)
        else:
            _lower(self.passage, (doc_id, passage_id), place)

    def first(self, doc_id: str, passage_id: str | None) -> int | None:
        """The best place of a source that `doc_id#passage_id` points at (see the module), or None."""
        if passage_id is None:
            return self.any.get(doc_id)
        places = [p for p in (self.passage.get((doc_id, passage_id)), self.whole.get(doc_id)) if p is not None]
        return min(places) if places else None


def _lower(places: dict[Any, int], key: Any, place: int) -> None:
    if places.get(key, place) >= place:
        places[key] = place


def _places(items: Iterable[Any]) -> _Places:
    found = _Places()
    for item in items:
        found.add(item.doc_id, item.passage_id)
    return found


def _ordered(retrieval: Retrieval) -> list[Document]:
    docs = retrieval.documents
    if docs and all(d.rank is not None for d in docs):
        docs = sorted(docs, key=lambda d: d.rank if d.rank is not None else 0)
    return docs


def recalls(gold: list[Any], retrievals: list[Retrieval], ks: Iterable[int]) -> dict[int, tuple[float, list[Any]]]:
    """For each k: (share of required gold items found in the top k of some retrieval, the required items not
    found). One pass over the documents whatever the number of k."""
    places = _Places()
    for retrieval in retrievals:
        for place, doc in enumerate(_ordered(retrieval)):
            places.add(doc.id, doc.passage_id, place)
    required = [g for g in gold if g.required]
    first = [places.first(g.doc_id, g.passage_id) for g in required]
    found: dict[int, tuple[float, list[Any]]] = {}
    for k in ks:
        missed = [g for g, place in zip(required, first, strict=True) if place is None or place >= k]
        found[k] = (rate(len(required) - len(missed), len(required)), missed)
    return found


def accuracy(gold: list[Any], citations: list[Citation]) -> tuple[float | None, list[Citation]]:
    """(share of citations that point at gold evidence, or None with no citation; the citations that do not)."""
    if not citations:
        return None, []
    places = _places(gold)
    wrong = [c for c in citations if places.first(c.doc_id, c.passage_id) is None]
    return rate(len(citations) - len(wrong), len(citations)), wrong


def cites_required(gold: list[Any], citations: list[Citation]) -> bool:
    """Whether the answer cites a required gold item; with none required, whether it cites anything."""
    required = [g for g in gold if g.required]
    if not required:
        return bool(citations)
    places = _places(required)
    return any(places.first(c.doc_id, c.passage_id) is not None for c in citations)


def required_citation(requirement: Any) -> bool:
    """Whether a case's `citation_requirement` asks for a citation: any value but an empty one or false."""
    return requirement not in (None, False, "", [], {})


def label(item: Any) -> str:
    """A gold item or a citation as `doc_id#passage_id`, each id cut to MAX_LABEL_CHARS."""
    shown = values.one_line(str(item.doc_id), MAX_LABEL_CHARS)
    return shown + (f"#{values.one_line(str(item.passage_id), MAX_LABEL_CHARS)}" if item.passage_id else "")
