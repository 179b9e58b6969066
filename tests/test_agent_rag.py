"""RAG cases of the agent suite (issue 13, 001 12.5): evidence recall at K, citation accuracy, a required citation,
the suite's citation pattern, thresholds, the metrics in the report and in the diff, and the case problems that
keep a misspelt metric from passing silently.

Runs are diagbot's native format with `retrieval` steps and an answer's `citations`, judged as a fixture is.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from diagbot.core import regex
from diagbot.kinds.agent import checks, rag
from diagbot.kinds.agent.cases import AgentCase, GoldEvidence
from diagbot.kinds.agent.diff import diff_agent
from diagbot.kinds.agent.evaluate import unchecked_expectations
from diagbot.kinds.agent.load import case_problems
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import build_report
from diagbot.kinds.agent.run import Document, Retrieval
from tests.conftest import write_json
from tests.test_agent_checks import evaluate, make_case, native, parse, say

GOLD = [
    {"doc_id": "policy_audio", "passage_id": "p12", "required": True},
    {"doc_id": "policy_general", "required": False},
]


def rag_case(metrics: list[str], **overrides: Any) -> AgentCase:
    fields: dict[str, Any] = {"gold_evidence": GOLD, "evaluation_metrics": metrics}
    fields.update(overrides)
    return make_case(**fields)


def retrieval(*docs: tuple[str, str | None] | dict[str, Any], query: str = "return opened earphones") -> dict[str, Any]:
    documents = [d if isinstance(d, dict) else {"id": d[0], **({"passage_id": d[1]} if d[1] else {})} for d in docs]
    return {"kind": "retrieval", "query": query, "documents": documents}


def answer(text: str, *cited: tuple[str, str | None]) -> dict[str, Any]:
    step = say("assistant", text)
    if cited:
        step["citations"] = [{"doc_id": d, **({"passage_id": p} if p else {})} for d, p in cited]
    return step


def judged(case: AgentCase, doc: Any, pattern: str | None = None) -> tuple[list[str], dict[str, float]]:
    """One trial as evaluate_case judges it: its failures and its metrics."""
    run = parse(doc)
    trial = checks.trial(run, case, {}, AgentOptions().confirmation, pattern)
    applied = [c for c in checks.CHECKS if c.applies(case)]
    return checks.judge(case, trial, applied), checks.metrics(case, trial)


FOUND_AT_3 = retrieval(("other", None), ("policy_general", None), ("policy_audio", "p12"))


def test_recall_counts_required_gold_in_the_top_k() -> None:
    case = rag_case(["evidence_recall_at_3", "evidence_recall_at_2"])
    failed, metrics = judged(case, native(FOUND_AT_3, answer("No: opened earphones cannot be returned.")))
    assert metrics == {"evidence_recall_at_3": 1.0, "evidence_recall_at_2": 0.0}
    assert failed == ["evidence_recall_low: evidence_recall_at_2 0.00 < 1 (not in the top 2: policy_audio#p12)"]


def test_recall_orders_by_recorded_rank_when_every_document_has_one() -> None:
    ranked = retrieval({"id": "other", "rank": 2}, {"id": "policy_audio", "passage_id": "p12", "rank": 1})
    assert judged(rag_case(["evidence_recall_at_1"]), native(ranked))[1] == {"evidence_recall_at_1": 1.0}


def test_recall_needs_the_gold_passage_not_just_the_document() -> None:
    wrong_passage = retrieval(("policy_audio", "p3"))
    failed, metrics = judged(rag_case(["evidence_recall_at_5"]), native(wrong_passage))
    assert metrics == {"evidence_recall_at_5": 0.0}
    assert failed == ["evidence_recall_low: evidence_recall_at_5 0.00 < 1 (not in the top 5: policy_audio#p12)"]
    # a document recorded without a passage id stands for the whole document
    assert judged(rag_case(["evidence_recall_at_5"]), native(retrieval(("policy_audio", None))))[0] == []


def test_recall_finds_gold_in_any_retrieval_and_fails_without_one() -> None:
    two = native(retrieval(("other", None)), retrieval(("policy_audio", "p12")))
    assert judged(rag_case(["evidence_recall_at_1"]), two) == ([], {"evidence_recall_at_1": 1.0})
    failed, _ = judged(rag_case(["evidence_recall_at_1"]), native(answer("I think so.")))
    assert failed == ["evidence_recall_low: evidence_recall_at_1 0.00 < 1 (the run records no retrieval)"]
    failed, _ = judged(rag_case(["evidence_recall_at_1"]), native(retrieval(), retrieval()))
    assert failed == [
        "evidence_recall_low: evidence_recall_at_1 0.00 < 1 (its 2 retrievals returned no documents; missing "
        "policy_audio#p12)"
    ]


def test_a_threshold_lowers_the_bar() -> None:
    gold = [*GOLD, {"doc_id": "policy_b", "required": True}]
    case = rag_case(
        ["evidence_recall_at_5"], gold_evidence=gold, evaluator_config={"thresholds": {"evidence_recall_at_5": 0.5}}
    )
    assert judged(case, native(FOUND_AT_3)) == ([], {"evidence_recall_at_5": 0.5})
    strict = rag_case(["evidence_recall_at_5"], gold_evidence=gold)
    assert judged(strict, native(FOUND_AT_3))[0] == [
        "evidence_recall_low: evidence_recall_at_5 0.50 < 1 (not in the top 5: policy_b)"
    ]


def test_citation_accuracy_is_the_share_of_citations_on_gold() -> None:
    case = rag_case(["citation_accuracy"])
    good = native(answer("No [policy_audio#p12].", ("policy_audio", "p12"), ("policy_general", "any")))
    assert judged(case, good) == ([], {"citation_accuracy": 1.0})
    mixed = native(answer("No.", ("policy_audio", "p12"), ("blog_post", None), ("policy_audio", "p9")))
    failed, metrics = judged(case, mixed)
    assert metrics == {"citation_accuracy": 0.333333}
    assert failed == ["citation_inaccurate: citation_accuracy 0.33 < 1 (not gold evidence: blog_post, policy_audio#p9)"]


def test_citation_accuracy_without_citations_is_not_computed() -> None:
    """Nothing cited is not inaccurate (a required citation is citation_missing's job)."""
    assert judged(rag_case(["citation_accuracy"]), native(answer("No."))) == ([], {})


def test_a_citation_requirement_needs_a_citation_of_required_gold() -> None:
    case = rag_case([], citation_requirement="the conclusion must cite the policy passage")
    assert judged(case, native(answer("No.", ("policy_audio", "p12"))))[0] == []
    assert judged(case, native(answer("No.", ("policy_general", None))))[0] == [
        "citation_missing: the answer cites none of policy_audio#p12 (citation_requirement asks for a citation); "
        "it cites policy_general"
    ]
    assert [c.code for c in checks.CHECKS if c.applies(rag_case([], citation_requirement=False))] == []


def test_the_suite_citation_pattern_reads_citations_from_the_answer() -> None:
    pattern = r"\[(?P<doc_id>[a-z_]+)(?:#(?P<passage_id>\w+))?\]"
    case = rag_case(["citation_accuracy"], citation_requirement=True)
    text = "Opened earphones cannot be returned [policy_audio#p12], see also [policy_audio#p12] and [faq]."
    failed, metrics = judged(case, native(answer(text)), pattern)
    assert metrics == {"citation_accuracy": 0.5}  # the repeated citation counts once
    assert failed == ["citation_inaccurate: citation_accuracy 0.50 < 1 (not gold evidence: faq)"]
    assert judged(case, native(answer(text)))[0] == [  # without the pattern the answer cites nothing
        "citation_missing: the answer cites none of policy_audio#p12 (citation_requirement asks for a citation); "
        "the run records no citations, so set the suite's citation-pattern to find them in the answer"
    ]


def test_a_citation_pattern_without_a_doc_id_group_is_refused() -> None:
    with pytest.raises(ValidationError, match="the citation pattern needs a named group doc_id"):
        AgentOptions.model_validate({"citation-pattern": r"\[(\w+)\]"})
    with pytest.raises(ValidationError, match="invalid regular expression"):
        AgentOptions.model_validate({"citation-pattern": r"(?P<doc_id>\w+)(?=x)"})
    with pytest.raises(ValidationError, match="the citation pattern matches empty text, so it would find a citation"):
        AgentOptions.model_validate({"citation-pattern": r"(?P<doc_id>\w*)"})
    assert AgentOptions.model_validate({"citation-pattern": r"\[(?P<doc_id>\w*)\]"}).citation_pattern


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"evaluation_metrics": ["evidence_recall_at_5"], "gold_evidence": [{"doc_id": "d", "required": False}]},
         "evaluation_metrics[0]: 'evidence_recall_at_5' needs gold_evidence with at least one required item"),
        ({"evaluation_metrics": ["citation_accuracy"]},
         "evaluation_metrics[0]: 'citation_accuracy' needs gold_evidence to compare the answer's citations with"),
        ({"evaluation_metrics": ["evidence_recall@5"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'evidence_recall@5' is not evidence_recall_at_K with K from 1 to 1000 "
         "(evidence_recall_at_5)"),
        ({"evaluation_metrics": ["evidence_recall_at_0"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'evidence_recall_at_0' is not evidence_recall_at_K with K from 1 to 1000 "
         "(evidence_recall_at_5)"),
        ({"evaluation_metrics": ["citation_acuracy"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'citation_acuracy' is not a metric diagbot computes (did you mean "
         "citation_accuracy?)"),
        ({"evaluation_metrics": ["evidence_recal_at_3"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'evidence_recal_at_3' is not a metric diagbot computes (did you mean "
         "evidence_recall_at_3?)"),
        ({"evaluation_metrics": ["EVIDENCE_RECALL_AT_20"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'EVIDENCE_RECALL_AT_20' is not a metric diagbot computes (did you mean "
         "evidence_recall_at_20?)"),
        ({"evaluation_metrics": ["\u0435vid\u0435nc\u0435_r\u0435call_at_5"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: '\u0435vid\u0435nc\u0435_r\u0435call_at_5' is not a metric diagbot computes "
         "(did you mean evidence_recall_at_5?)"),
        ({"evaluation_metrics": ["evidence-recall-at-0"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'evidence-recall-at-0' is not a metric diagbot computes (did you mean "
         "evidence_recall_at_5?)"),
        ({"evaluation_metrics": ["CITATION_ACCURACY"], "gold_evidence": GOLD},
         "evaluation_metrics[0]: 'CITATION_ACCURACY' is not a metric diagbot computes (did you mean "
         "citation_accuracy?)"),
        ({"evaluation_metrics": ["evidence_recall_at_5"], "gold_evidence": GOLD,
          "evaluator_config": {"thresholds": {"evidence_recall_at_3": 0.5}}},
         "evaluator_config.thresholds.evidence_recall_at_3: not a machine-checked metric of this case's "
         "evaluation_metrics; the case computes evidence_recall_at_5"),
    ],
)  # fmt: skip
def test_metric_mistakes_are_case_problems(overrides: dict[str, Any], expected: str) -> None:
    assert case_problems(make_case(**overrides), {}) == [expected]


@pytest.mark.parametrize(
    "name",
    ["faithfulness", "answer_relevance", "context_precision", "context_recall", "context_recall_at_5", "recall_at_5",
     "evidence_precision_at_5", "ndcg_at_5", "hit_rate_at_5", "\u5fe0\u5b9e\u5ea6"],
)  # fmt: skip
def test_other_metrics_are_judged_not_misspelt(name: str) -> None:
    assert case_problems(rag_case([name]), {}) == []
    assert f"evaluation_metrics: {name} (a judged metric)" in unchecked_expectations(rag_case([name]))


@pytest.mark.parametrize("value", [1.5, -0.1, float("nan")])
def test_a_threshold_outside_zero_to_one_is_refused(value: float) -> None:
    with pytest.raises(ValidationError, match=r"evaluator_config\.thresholds"):
        rag_case(["citation_accuracy"], evaluator_config={"thresholds": {"citation_accuracy": value}})


def test_judged_metrics_are_listed_as_not_machine_checked() -> None:
    case = rag_case(["evidence_recall_at_5", "faithfulness", "citation_accuracy"])
    listed = unchecked_expectations(case)
    assert "evaluation_metrics: faithfulness (a judged metric)" in listed
    assert not any(item.startswith(("gold_evidence", "evaluation_metrics: evidence")) for item in listed)
    assert "gold_evidence: (structured, not machine-checked)" in unchecked_expectations(rag_case(["faithfulness"]))


def _recorded(fixtures: Path, name: str, *steps: dict[str, Any]) -> None:
    write_json(fixtures / "c1" / name, native(*steps))


def test_metrics_are_reported_per_trial_and_as_their_mean(tmp_path: Path) -> None:
    _recorded(tmp_path, "t1.json", FOUND_AT_3)
    _recorded(tmp_path, "t2.json", retrieval(("other", None)))
    result = evaluate(rag_case(["evidence_recall_at_5"]), tmp_path, {"trials": "any"})
    assert [t.metrics for t in result.trial_results] == [{"evidence_recall_at_5": 1.0}, {"evidence_recall_at_5": 0.0}]
    assert result.metrics == {"evidence_recall_at_5": 0.5}
    assert result.status == "passed"
    dumped = build_report([result]).model_dump(mode="json", by_alias=True)
    assert dumped["results"][0]["metrics"] == {"evidence_recall_at_5": 0.5}


def test_a_case_without_metrics_writes_none(tmp_path: Path) -> None:
    _recorded(tmp_path, "t1.json", answer("fine"))
    result = evaluate(make_case(success_criteria=[{"answer_contains": {"any": ["fine"]}}]), tmp_path)
    dumped = build_report([result]).model_dump(mode="json", by_alias=True)["results"][0]
    assert "metrics" not in dumped and "metrics" not in dumped["trialResults"][0]


def test_the_diff_treats_a_lower_metric_as_a_regression(tmp_path: Path) -> None:
    case = rag_case(["evidence_recall_at_5"], evaluator_config={"thresholds": {"evidence_recall_at_5": 0.0}})
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _recorded(tmp_path / "a", "t1.json", FOUND_AT_3)
    _recorded(tmp_path / "b", "t1.json", retrieval(("other", None)))
    before, after = evaluate(case, tmp_path / "a"), evaluate(case, tmp_path / "b")
    assert before.status == after.status == "unchecked"  # a threshold of 0 checks nothing: the metric is compared
    items = diff_agent(build_report([before]), build_report([after])).items
    recall = [i for i in items if i.metric == "metrics.evidence_recall_at_5"]
    assert [(i.type.value, i.baseline_value, i.current_value, i.message) for i in recall] == [
        ("REGRESSION", 1.0, 0.0, "evidence_recall_at_5 fell from 100.0% to 0.0%")
    ]
    back = diff_agent(build_report([after]), build_report([before])).items
    assert [i.type.value for i in back if i.metric == "metrics.evidence_recall_at_5"] == ["IMPROVEMENT"]


def test_a_metric_computed_on_one_side_only_is_a_change_in_the_diff(tmp_path: Path) -> None:
    """citation_accuracy is computed only for an answer that cites something: a pull request whose answer stopped
    citing the gold evidence made the metric vanish with no item at all."""
    case = rag_case(["citation_accuracy"])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _recorded(tmp_path / "a", "t1.json", answer("No [policy_audio#p12].", ("policy_audio", "p12")))
    _recorded(tmp_path / "b", "t1.json", answer("All items can be refunded any time."))
    before, after = evaluate(case, tmp_path / "a"), evaluate(case, tmp_path / "b")
    assert (before.metrics, after.metrics) == ({"citation_accuracy": 1.0}, {})
    items = diff_agent(build_report([before]), build_report([after])).items
    assert [(i.type.value, i.baseline_value, i.current_value, i.message) for i in items if "metrics" in i.metric] == [
        ("CHANGED", 1.0, None, "citation_accuracy 100.0% → not computed")
    ]


# --- hostile sizes: the work is linear and every message bounded ---------------------------------------------------


def _brute_recall(gold: list[Any], retrievals: list[Any], k: int) -> list[Any]:
    """The required gold items not in the top k of any retrieval, by the module's definition, pair by pair."""

    def points_at(doc: Any, g: Any) -> bool:
        same_passage = doc.passage_id is None or g.passage_id is None or doc.passage_id == g.passage_id
        return doc.id is not None and doc.id == g.doc_id and same_passage

    def top(r: Any) -> list[Any]:
        ranked = r.documents and all(d.rank is not None for d in r.documents)
        return (sorted(r.documents, key=lambda d: d.rank) if ranked else r.documents)[:k]

    return [g for g in gold if g.required and not any(points_at(d, g) for r in retrievals for d in top(r))]


@given(
    st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from([None, "1", "2"]), st.booleans()), max_size=6),
    st.lists(
        st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from([None, "1", "2"]), st.integers(1, 4)), max_size=5),
        max_size=3,
    ),
    st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_recall_by_lookup_is_recall_pair_by_pair(gold_items: list[Any], found: list[Any], ranked: bool) -> None:
    gold = [GoldEvidence(doc_id=d, passage_id=p, required=r) for d, p, r in gold_items]
    retrievals = [
        Retrieval("q", [Document(d, p, rank=rank if ranked else None) for d, p, rank in docs]) for docs in found
    ]
    ks = [1, 2, 3, 6]
    recalls = rag.recalls(gold, retrievals, ks)
    for k in ks:
        assert recalls[k][1] == _brute_recall(gold, retrievals, k)


def test_recall_of_many_metrics_over_many_documents_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 required gold items against 300 retrievals of 1,000 documents, for 1,000 values of K: this took 26 s
    in the check and 27 s more for the metrics (compared pair by pair, the budget charged only afterwards). Each
    document is now placed once and each gold item looked up once, for the check and the metrics together."""
    counted = {"add": 0, "first": 0}
    for name in counted:
        real = getattr(rag._Places, name)
        monkeypatch.setattr(rag._Places, name, lambda self, *a, _n=name, _f=real: counted.update({_n: counted[_n] + 1})
                            or _f(self, *a))  # fmt: skip
    gold = [{"doc_id": f"g{i}", "required": True} for i in range(1_000)]
    case = rag_case([f"evidence_recall_at_{k}" for k in range(1_000, 0, -1)], gold_evidence=gold)
    docs = [{"id": f"d{j}"} for j in range(999)] + [{"id": "g7"}]
    doc = native(*[{"kind": "retrieval", "query": "q", "documents": docs}] * 300, answer("done"))
    failed, metrics = judged(case, doc)
    assert counted == {"add": 300 * 1_000, "first": 1_000}  # not 1,000 gold x 300,000 documents x 1,000 K
    assert failed == [
        "evidence_recall_low: evidence_recall_at_1000 0.00 < 1 (not in the top 1000: g0, g1, g2, g3, g4, g5, g6, g8, "
        "g9, g10, g11, g12, … 987 more)",
        *[f"evidence_recall_low: evidence_recall_at_{k} 0.00 < 1 (not in the top {k}: g0, g1, g2, g3, g4, g5, g6, g7, "
          "g8, g9, g10, g11, … 988 more)" for k in (999, 998, 997, 996)],
        "evidence_recall_low: and 995 more like these",
    ]  # fmt: skip
    assert len(metrics) == 1_000 and metrics["evidence_recall_at_1000"] == 0.001


def test_long_ids_are_cut_in_messages() -> None:
    """Twelve gold ids of a million characters, missed at 20 values of K, wrote a 480 MB report."""
    gold = [{"doc_id": f"{i}" + "g" * 1_000_000, "required": True} for i in range(12)]
    case = rag_case([f"evidence_recall_at_{k}" for k in range(1, 21)], gold_evidence=gold)
    failed, _ = judged(case, native(retrieval(("other", None)), answer("done")))
    shown = ", ".join(f"{i}" + "g" * 78 + "…" for i in range(10)) + ", " + ", ".join(f"{i}" + "g" * 77 + "…"
                                                                                    for i in (10, 11))  # fmt: skip
    assert failed[0] == f"evidence_recall_low: evidence_recall_at_1 0.00 < 1 (not in the top 1: {shown})"
    assert len(failed) == 6 and sum(map(len, failed)) < 10_000


PATTERN = r"\[(?P<doc_id>[^\]#]+)(?:#(?P<passage_id>[^\]]+))?\]"
ACCURATE = rag_case(["citation_accuracy"])


@pytest.mark.parametrize(
    ("text", "pattern", "expected"),
    [
        # a wrong citation after a thousand repeats of a right one was never read: it passed
        ("[policy_audio#p12] " * 1_000 + "[made_up]", PATTERN,
         "citation_accuracy 0.50 < 1 (not gold evidence: made_up)"),
        # a pattern that matches the empty string spent the thousand matches on nothing: it passed
        ("y" * 5_000 + " [made_up]", r"(?P<doc_id>\[\w+\])?",
         "citation_accuracy 0.00 < 1 (not gold evidence: [made_up])"),
        ("y" * 20_000 + " [made_up]", r"(?P<doc_id>\[\w+\])?",
         "no citation in the part read, but the search for citations stopped after reading 16,777,216 characters, "
         "each search for the next one counting the rest of the answer: a citation not read may not be gold "
         "evidence"),
        # a wrong citation past the part a regex reads: it passed
        ("[policy_audio#p12] " + "x" * (1 << 20) + " [made_up]", PATTERN,
         "citation_accuracy 1.00 in the part read, but only the first 1,048,576 characters of the answer were "
         "searched for citations: a citation not read may not be gold evidence"),
        (" ".join(f"[d{i}]" for i in range(1_001)), PATTERN,
         "citation_accuracy 0.00 < 1 (not gold evidence: d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, d10, d11, … 988 "
         "more); the answer cites more than 1,000 sources and only 1,000 were read"),
    ],
    ids=["repeated", "empty matches", "empty matches over long text", "past the cut", "too many"],
)  # fmt: skip
def test_citations_that_were_not_read_never_pass(text: str, pattern: str, expected: str) -> None:
    """The patterns go straight to the check: diagbot.yml now refuses one that matches empty text, and the check
    still never passes on citations it did not read."""
    failed, _ = judged(ACCURATE, native(answer(text)), pattern)
    assert failed == [f"citation_inaccurate: {expected}"]


def test_recorded_citations_past_the_limit_fail_too() -> None:
    cited = [("policy_audio", "p12")] + [(f"d{i}", None) for i in range(1_000)]
    failed, metrics = judged(ACCURATE, native(answer("see sources", *cited)))
    assert failed == [
        "citation_inaccurate: citation_accuracy 0.00 < 1 (not gold evidence: d0, d1, d2, d3, d4, d5, d6, d7, d8, d9, "
        "d10, d11, … 987 more); the answer cites more than 1,000 sources and only 1,000 were read"
    ]
    assert metrics == {"citation_accuracy": 0.001}


def test_a_required_citation_past_the_cut_says_where_it_looked() -> None:
    case = rag_case(["faithfulness"], citation_requirement="cite the policy")
    failed, _ = judged(case, native(answer("x" * (1 << 20) + " [policy_audio#p12]")), PATTERN)
    assert failed == [
        "citation_missing: the answer cites none of policy_audio#p12 in the part read (only the first 1,048,576 "
        "characters of the answer were searched for citations) (citation_requirement asks for a citation)"
    ]


def test_thresholds_of_unknown_metrics_list_the_metrics_once_and_briefly() -> None:
    """Each of 1,000 bad thresholds listed all 1,000 metrics: 4 MB of problems from a 50 KB case file."""
    metrics = [f"evidence_recall_at_{k}" for k in range(1, 1_001)]
    thresholds = {f"bogus{i}": 0.5 for i in range(1_000)}
    problems = case_problems(rag_case(metrics, evaluator_config={"thresholds": thresholds}), {})
    listed = ", ".join(metrics[:12])
    assert problems[0] == (
        "evaluator_config.thresholds.bogus0: not a machine-checked metric of this case's evaluation_metrics; the "
        f"case computes {listed}, … 988 more"
    )
    assert len(problems) == 1_000 and sum(map(len, problems)) < 500_000


def test_a_huge_metric_name_is_not_fuzzy_matched() -> None:
    """A 15 MB metric name made difflib build tables of 600 MB to find it close to nothing."""
    case = rag_case(["x" * 5_000_000])
    tracemalloc.start()
    try:
        assert case_problems(case, {}) == []
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024


@pytest.mark.parametrize(
    ("value", "threshold", "shown"),
    [(0.0, 1.0, "0.00 < 1"), (0.5, 0.75, "0.50 < 0.75"), (0.999, 1.0, "0.999 < 1"), (0.999, 0.9995, "0.999 < 0.9995"),
     (0.998999, 0.999, "0.998999 < 0.999"), (0.123, 0.1234567, "0.12 < 0.1234567"),
     (0.1, 0.1000000000000001, "0.10 < 0.1000000000000001"),
     (0.9999999999999998, 1.0, "0.9999999999999998 < 1")],
)  # fmt: skip
def test_a_failing_value_reads_below_its_threshold(value: float, threshold: float, shown: str) -> None:
    assert checks._below(value, threshold) == shown


def test_a_failing_recall_and_accuracy_show_the_digits_that_tell_them_from_the_threshold() -> None:
    gold = [{"doc_id": f"g{i}"} for i in range(1_000)]
    cited = [(f"g{i}", None) for i in range(999)] + [("made_up", None)]
    doc = native(retrieval(*[(f"g{i}", None) for i in range(999)]), answer("done", *cited))
    case = rag_case(
        ["evidence_recall_at_1000", "citation_accuracy"],
        gold_evidence=gold,
        evaluator_config={"thresholds": {"citation_accuracy": 0.9995}},
    )
    failed, _ = judged(case, doc)
    assert failed == [
        "evidence_recall_low: evidence_recall_at_1000 0.999 < 1 (not in the top 1000: g999)",
        "citation_inaccurate: citation_accuracy 0.999 < 0.9995 (not gold evidence: made_up)",
    ]


def test_citations_differing_only_in_other_groups_are_one_citation() -> None:
    """A pattern with a group of its own (a page) found one citation per page: 1,001 of one passage stopped the
    search as if the answer cited over 1,000 sources."""
    pattern = r"\[(?P<doc_id>[^\]#\s]+)(?:#(?P<passage_id>[^\]\s]+))?(?: (?P<page>[^\]]*))?\]"
    text = " ".join(f"[policy_audio#p12 page {i}]" for i in range(1_001)) + " [made_up]"
    failed, metrics = judged(ACCURATE, native(answer(text)), pattern)
    assert failed == ["citation_inaccurate: citation_accuracy 0.50 < 1 (not gold evidence: made_up)"]
    assert metrics == {"citation_accuracy": 0.5}
    found, complete = regex.find_named(pattern, text, 2, "doc_id", ("doc_id", "passage_id"))
    assert complete and found == [
        {"doc_id": "policy_audio", "passage_id": "p12"},
        {"doc_id": "made_up", "passage_id": None},
    ]
    assert regex.find_named(pattern, text, 1, "doc_id", ("doc_id", "passage_id"))[1] is False
