"""An agent suite judged in several processes (`kinds.workers`): the parent reads the case files, forked workers
validate the cases and judge their runs in ranges, and the parent puts the report together in case order. The
report is the one the single-process path (`evaluate.evaluate_cases`) writes, to the byte. A suite of many case
files (`MIN_CASES` or more) is not read by the parent: each worker reads the files it judges, so that they are read
in parallel and never all held at once.

Problems of the suite's cases are not said here: as soon as one is met, this path stops and returns None, and
`AgentKind.evaluate` takes the single-process path, which says every problem in file order with its bounded
suggestions. A suite with problems is unusable anyway, so nothing judged here is lost.
"""

from __future__ import annotations

import contextlib

from diagbot.kinds.agent.cases import AgentCase
from diagbot.kinds.agent.evaluate import Assembly, Fixtures, judge_case, today_of
from diagbot.kinds.agent.load import CaseFile, CaseIds, RuleNames, Unit, decode, read_file, usable_case
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.report import AgentCaseResult, AgentReport, TrialResult
from diagbot.kinds.base import SuiteInput
from diagbot.kinds.workers import Workers

MIN_CASES = 200
"""Suites smaller than this are judged in one process: starting workers costs more than it saves."""
CHUNK = 50
"""Cases a worker judges before its results go back to the parent."""

Judged = tuple[list[list[tuple[str, AgentCaseResult, list[str]] | None] | None], int, list[str]]
"""A range's units, each its cases' (file as messages name it, result, warnings), None for a case with a problem,
or None for a case file with a problem; and what its trial folders left out (count, first names)."""


def evaluate_in_workers(
    suite: SuiteInput, options: AgentOptions, units: list[Unit] | list[CaseFile], chunk: int = CHUNK
) -> AgentReport | None:
    """The report of the suite whose cases `units` holds (`load.read_cases`: its cases, decoded by the worker that
    judges them, or for a suite of many files its files, each read by that worker), judged in `suite.workers`
    processes; None when a case or a file has a problem (the caller then judges the suite in one process, which
    says it)."""
    fixtures = Fixtures(suite.fixtures)
    today = today_of(suite.run)
    names = RuleNames(options.rules)

    def judge(start: int, end: int) -> Judged:
        judged: list[list[tuple[str, AgentCaseResult, list[str]] | None] | None] = []
        for unit in units[start:end]:
            if isinstance(unit, CaseFile):
                items = read_file(unit)
            else:
                item = decode(unit, [])
                items = None if item is None else [item]
            if items is None:
                judged.append(None)
                continue
            found: list[tuple[str, AgentCaseResult, list[str]] | None] = []
            for item in items:
                loaded = usable_case(item, options.rules, names)
                if loaded is None:
                    found.append(None)
                    continue
                result, warnings = judge_case(
                    loaded, fixtures, options, suite.max_fixture_bytes, suite.governance, today
                )
                found.append((item.shown, result, warnings))
            judged.append(found)
        return (judged, *fixtures.take_left_out())

    for model in (AgentCase, TrialResult, AgentCaseResult):  # built once here (they defer it), not in each worker
        model.model_rebuild()
    workers = Workers(judge, len(units), suite.workers, chunk)
    assembly, ids = Assembly(options.judging), CaseIds()
    total = None if units and isinstance(units[0], CaseFile) else len(units)  # files: how many cases is not known
    with contextlib.closing(iter(workers)) as results:  # leaving early stops the workers
        for judged, left_out, left_out_names in results:
            for cases in judged:
                for one in cases or [None]:  # a file with a problem (None) stops this path as a case with one does
                    if one is None or ids.clash(one[1].case_id, one[0]) is not None:
                        return None
                    assembly.add(one[1], one[2])
            fixtures.add_left_out(left_out, left_out_names)
            if suite.progress is not None:
                suite.progress(len(assembly.results), total)
    notes = [f"{workers.stopped}; the rest of the suite was judged in one process"] if workers.stopped else []
    return assembly.report(fixtures, suite.name, suite.run, notes + options.warnings)
