"""RAG cases of the agent suite (issue 13, 001 12.5): evidence recall at K, citation accuracy, a required citation,
the suite's citation pattern, thresholds, the metrics in the report and in the diff, and the case problems that
keep a misspelt metric from passing silently.

Runs are diagbot's native format with `retrieval` steps and an answer's `citations`, judged as a fixture is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from diagbot.kinds.agent import checks
from diagbot.kinds.agent.cases import AgentCase
from diagbot.kinds.agent.diff import diff_agent
from diagbot.kinds.agent.evaluate import unchecked_expectations
from diagbot.kinds.agent.load import case_problems
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import build_report
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
        "citation_missing: the answer cites none of policy_audio#p12 (citation_requirement asks for a citation)"
    ]


def test_a_citation_pattern_without_a_doc_id_group_is_refused() -> None:
    with pytest.raises(ValidationError, match="the citation pattern needs a named group doc_id"):
        AgentOptions.model_validate({"citation-pattern": r"\[(\w+)\]"})
    with pytest.raises(ValidationError, match="invalid regular expression"):
        AgentOptions.model_validate({"citation-pattern": r"(?P<doc_id>\w+)(?=x)"})


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
        ({"evaluation_metrics": ["evidence_recall_at_5"], "gold_evidence": GOLD,
          "evaluator_config": {"thresholds": {"evidence_recall_at_3": 0.5}}},
         "evaluator_config.thresholds.evidence_recall_at_3: not a machine-checked metric of this case's "
         "evaluation_metrics; the case computes evidence_recall_at_5"),
    ],
)  # fmt: skip
def test_metric_mistakes_are_case_problems(overrides: dict[str, Any], expected: str) -> None:
    assert case_problems(make_case(**overrides), {}) == [expected]


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
    assert before.status == after.status == "passed"
    items = diff_agent(build_report([before]), build_report([after])).items
    recall = [i for i in items if i.metric == "metrics.evidence_recall_at_5"]
    assert [(i.type.value, i.baseline_value, i.current_value, i.message) for i in recall] == [
        ("REGRESSION", 1.0, 0.0, "evidence_recall_at_5 fell from 100.0% to 0.0%")
    ]
    back = diff_agent(build_report([after]), build_report([before])).items
    assert [i.type.value for i in back if i.metric == "metrics.evidence_recall_at_5"] == ["IMPROVEMENT"]
