"""An agent suite judged in several processes (`kinds.workers`): the parent reads the case files, forked workers
validate the cases and judge their runs in ranges, and the parent puts the report together in case order. The
report is the one the single-process path (`evaluate.evaluate_cases`) writes, to the byte.

Problems of the suite's cases are not said here: as soon as one is met, this path stops and returns None, and
`AgentKind.evaluate` takes the single-process path, which says every problem in file order with its bounded
suggestions. A suite with problems is unusable anyway, so nothing judged here is lost.
"""

from __future__ import annotations

import contextlib

from diagbot.kinds.agent.evaluate import Assembly, Fixtures, judge_case, today_of
from diagbot.kinds.agent.load import CaseIds, RawCase, RuleNames, usable_case
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import AgentCaseResult, AgentReport
from diagbot.kinds.base import SuiteInput
from diagbot.kinds.workers import Workers

MIN_CASES = 200
"""Suites smaller than this are judged in one process: starting workers costs more than it saves."""
CHUNK = 50
"""Cases a worker judges before its results go back to the parent."""

Judged = tuple[list[tuple[AgentCaseResult, list[str]] | None], int, list[str]]
"""A range's results (None for a case with a problem), and what its trial folders left out (count, first names)."""


def evaluate_in_workers(
    suite: SuiteInput, options: AgentOptions, items: list[RawCase], chunk: int = CHUNK
) -> AgentReport | None:
    """The report of the suite whose case files `items` holds (`load.read_cases`), judged in `suite.workers`
    processes; None when a case has a problem (the caller then judges the suite in one process, which says it)."""
    fixtures = Fixtures(suite.fixtures)
    today = today_of(suite.run)
    names = RuleNames(options.rules)

    def judge(start: int, end: int) -> Judged:
        judged: list[tuple[AgentCaseResult, list[str]] | None] = []
        for item in items[start:end]:
            loaded = usable_case(item, options.rules, names)
            judged.append(
                None
                if loaded is None
                else judge_case(loaded, fixtures, options, suite.max_fixture_bytes, suite.governance, today)
            )
        return (judged, *fixtures.take_left_out())

    workers = Workers(judge, len(items), suite.workers, chunk)
    assembly, ids = Assembly(), CaseIds()
    with contextlib.closing(iter(workers)) as results:  # leaving early stops the workers
        for (start, end), (judged, left_out, left_out_names) in zip(workers.ranges, results, strict=False):
            for item, one in zip(items[start:end], judged, strict=True):
                if one is None or _clashes(ids, item, one[0]):
                    return None
                assembly.add(*one)
            fixtures.add_left_out(left_out, left_out_names)
            if suite.progress is not None:
                suite.progress(end, len(items))
    notes = [f"{workers.stopped}; the rest of the suite was judged in one process"] if workers.stopped else []
    return assembly.report(fixtures, suite.name, suite.run, notes)


def _clashes(ids: CaseIds, item: RawCase, judged: AgentCaseResult) -> bool:
    return ids.clash(judged.case_id, item.shown) is not None
