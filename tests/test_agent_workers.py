"""An agent suite judged in forked worker processes gives the report one process gives, byte for byte; a suite
with problems says them as one process does; a worker that dies loses no case."""

from __future__ import annotations

import dataclasses
import errno
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from diagbot.cli import main
from diagbot.core import stack
from diagbot.core.errors import CaseFileError
from diagbot.core.report import dump_model_bytes
from diagbot.kinds import workers as workers_module
from diagbot.kinds.agent.kind import AgentKind
from diagbot.kinds.agent.load import CaseFile, CaseText, RawCase, Unit, read_cases
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.parallel import evaluate_in_workers
from diagbot.kinds.base import SuiteInput
from diagbot.kinds.workers import Workers, can_fork
from tests.conftest import ROOT
from tests.test_agent_suite import RUN, agent_config

needs_fork = pytest.mark.skipif(not can_fork(), reason="worker processes are forked, on Linux only")


def bundled_suite(tmp_path: Path, copies: int = 3) -> SuiteInput:
    """The bundled agent suite, its cases written `copies` times under other ids (with their runs), plus a trial
    folder holding files that are not trials: every kind of result and warning, over several ranges."""
    cases, runs = tmp_path / "cases", tmp_path / "runs"
    shutil.copytree(ROOT / "fixtures" / "agent", runs)
    written = "".join(source.read_text(encoding="utf-8") for source in (ROOT / "cases" / "agent").iterdir())
    ids = sorted(set(re.findall(r"case_id[\"']?\s*:\s*[\"']?([A-Za-z0-9._-]+)", written)))
    named = re.compile(r"\b(" + "|".join(ids) + r")\b")
    for n in range(copies):
        (cases / f"c{n}").mkdir(parents=True)
        for source in sorted((ROOT / "cases" / "agent").iterdir()):
            text = named.sub(rf"\1_c{n}", source.read_text(encoding="utf-8"))
            (cases / f"c{n}" / source.name).write_text(text, encoding="utf-8")
        for entry in (ROOT / "fixtures" / "agent").iterdir():
            target = runs / f"{entry.name.removesuffix('.json')}_c{n}{'.json' if entry.is_file() else ''}"
            (shutil.copy if entry.is_file() else shutil.copytree)(entry, target)
    if copies >= 3:
        (runs / "tool_refund_check_008_c1" / "notes.txt").write_text("kept aside", encoding="utf-8")
        (runs / "tool_refund_check_008_c2" / "old").mkdir()
    config = agent_config()
    suite = config.suite_input(config.suites[0], RUN)
    return dataclasses.replace(suite, cases=cases, fixtures=runs, cases_label="cases", fixtures_label="runs")


def read(suite: SuiteInput) -> list[Unit]:
    found = read_cases(suite.cases, suite.cases_label)
    assert found is not None and not any(isinstance(unit, CaseFile) for unit in found)
    return found  # type: ignore[return-value]  # no CaseFile without files_at


def options(suite: SuiteInput) -> AgentOptions:
    assert isinstance(suite.options, AgentOptions)
    return suite.options


@needs_fork
@pytest.mark.parametrize(("chunk", "files"), [(1, False), (4, False), (1000, False), (1, True), (5, True)])
def test_a_suite_judged_in_workers_gives_the_one_process_report_to_the_byte(
    tmp_path: Path, chunk: int, files: bool
) -> None:
    """Workers judge ranges of cases the parent read, or (`files`: a suite of many files) read their own files."""
    suite = bundled_suite(tmp_path)
    alone = AgentKind().evaluate(suite)
    units = read_cases(suite.cases, suite.cases_label, files_at=1 if files else None)
    assert units is not None and all(isinstance(u, CaseFile if files else (RawCase, CaseText)) for u in units)
    assert files or any(isinstance(u, CaseText) for u in units)  # the JSON file's cases, decoded by the workers
    seen: list[tuple[int, int | None]] = []
    forked = evaluate_in_workers(
        dataclasses.replace(suite, workers=2, progress=lambda done, total: seen.append((done, total))),
        options(suite), units, chunk=chunk,
    )  # fmt: skip
    assert forked is not None
    assert dump_model_bytes(forked) == dump_model_bytes(alone)
    assert alone.total_cases > 40 and alone.passed_cases and alone.total_cases - alone.passed_cases > 3
    assert any("notes.txt" in w and "old/" in w for w in alone.warnings)  # left-out files, found in two workers
    assert seen[-1] == (alone.total_cases, None if files else alone.total_cases)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


def test_the_kind_uses_workers_only_for_a_suite_big_enough(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = dataclasses.replace(bundled_suite(tmp_path, copies=1), workers=2)
    called: list[int] = []
    monkeypatch.setattr(Workers, "__init__", lambda *a: called.append(1) or pytest.fail("no workers for 17 cases"))
    AgentKind().evaluate(suite)
    assert called == []


def _problems(suite: SuiteInput) -> list[str]:
    with pytest.raises(CaseFileError) as caught:
        AgentKind().evaluate(suite)
    return caught.value.problems


@needs_fork
@pytest.mark.parametrize(
    "fault",
    ["unknown_field", "duplicate_id", "id_differs_in_case", "unknown_rule", "bad_file", "repeated_key_in_a_case"],
)
def test_a_suite_with_problems_says_them_as_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str
) -> None:
    suite = bundled_suite(tmp_path, copies=2)
    folder = suite.cases / "c1"
    target = folder / "refund_eligibility_001.yaml"
    text = target.read_text(encoding="utf-8")
    if fault == "unknown_field":
        text = text.replace("title:", "titel: x\ntitle:", 1)
    elif fault == "duplicate_id":
        text = text.replace("refund_eligibility_001_c1", "refund_eligibility_001_c0")
    elif fault == "id_differs_in_case":
        text = text.replace("refund_eligibility_001_c1", "REFUND_eligibility_001_c0")
    elif fault == "unknown_rule":
        text = text.replace("no_privacy_leak", "no_privacy_leek")
    elif fault == "repeated_key_in_a_case":  # found only when the worker decodes that case of the JSON file
        listed = folder / "refund_account_cases.json"
        listed.write_text(listed.read_text(encoding="utf-8").replace('"title":', '"title": "x", "title":', 1), "utf-8")
    else:
        (folder / "zz_broken.json").write_text("{not json", encoding="utf-8")
    target.write_text(text, encoding="utf-8")
    alone = _problems(suite)
    monkeypatch.setattr("diagbot.kinds.agent.parallel.MIN_CASES", 1)
    if fault == "bad_file":
        assert read_cases(suite.cases, suite.cases_label) is None
    else:
        assert evaluate_in_workers(dataclasses.replace(suite, workers=2), options(suite), read(suite), 2) is None
    files = read_cases(suite.cases, suite.cases_label, files_at=1)  # each worker reads its own files
    assert (
        files is not None and evaluate_in_workers(dataclasses.replace(suite, workers=2), options(suite), files) is None
    )
    assert _problems(dataclasses.replace(suite, workers=2)) == alone  # MIN_CASES 1: the worker path tried first
    assert alone and all(isinstance(p, str) for p in alone)


def _job(start: int, end: int) -> list[int]:
    return [i * i for i in range(start, end)]


@needs_fork
def test_workers_give_every_range_in_order_from_other_processes() -> None:
    pids: list[int] = []

    def job(start: int, end: int) -> tuple[int, list[int]]:
        return os.getpid(), _job(start, end)

    pool = Workers(job, 103, 2, 10)
    for pid, part in pool:
        pids.append(pid)
        assert part
    assert [x for _, part in Workers(job, 103, 2, 10) for x in part] == [i * i for i in range(103)]
    assert os.getpid() not in pids and pool.stopped is None


@needs_fork
def test_a_worker_that_dies_loses_no_range() -> None:
    parent = os.getpid()

    def job(start: int, end: int) -> list[int]:
        if start == 30 and os.getpid() != parent:
            os._exit(9)  # as a worker the kernel killed for memory
        return _job(start, end)

    pool = Workers(job, 100, 2, 10)
    assert [x for part in pool for x in part] == [i * i for i in range(100)]
    assert pool.stopped == "a worker process stopped (killed, perhaps for memory)"


def test_without_fork_the_ranges_are_judged_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers_module, "can_fork", lambda: False)

    def job(start: int, end: int) -> int:
        return os.getpid()

    assert set(Workers(job, 50, 4, 5)) == {os.getpid()}


@needs_fork
def test_an_error_in_a_worker_is_raised_in_the_parent_and_the_workers_stop() -> None:
    def job(start: int, end: int) -> list[int]:
        if start == 20:
            raise ValueError("range 20")
        return _job(start, end)

    with pytest.raises(ValueError, match="range 20"):
        list(Workers(job, 100, 2, 10))
    assert workers_module._JOB is None


@needs_fork
def test_diagbot_run_jobs_gives_the_same_report_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bundled_suite(tmp_path)
    config = tmp_path / "diagbot.yml"
    source = (ROOT / "diagbot.yml").read_text(encoding="utf-8")
    agent = source[source.index("  - name: agent") : source.index("thresholds:")]
    agent = agent.replace("cases: cases/agent", "cases: cases").replace("fixtures: fixtures/agent", "fixtures: runs")
    config.write_text("suites:\n" + agent, encoding="utf-8")
    monkeypatch.setattr("diagbot.kinds.agent.parallel.MIN_CASES", 20)  # 18 files, 51 cases: the parent reads them
    monkeypatch.setenv("GITHUB_SHA", "0" * 40)
    reports, used = [], []

    class Counted(Workers[Any]):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            used.append(self.workers)

    monkeypatch.setattr("diagbot.kinds.agent.parallel.Workers", Counted)
    for jobs in ("1", "2"):
        out = tmp_path / f"out{jobs}"
        assert main(["run", "--config", str(config), "--out", str(out), "--no-fail", "--jobs", jobs]) == 0
        report = json.loads((out / "reports" / "agent.json").read_text(encoding="utf-8"))
        report.pop("run")
        reports.append((report, (out / "comment.md").read_text(encoding="utf-8")))
    assert reports[0] == reports[1] and reports[0][0]["totalCases"] == 3 * len(agent_config_cases())
    assert used == [2]  # --jobs 1 judges in this process, without workers


def agent_config_cases() -> list[str]:
    written = "".join(source.read_text(encoding="utf-8") for source in (ROOT / "cases" / "agent").iterdir())
    return re.findall(r"case_id[\"']?\s*:", written)


@pytest.mark.parametrize("jobs", ["0", "-1", "9", "two", "1.5"])
def test_jobs_outside_1_to_8_is_refused(jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", "--jobs", jobs])
    assert exited.value.code == 2
    assert f"argument --jobs/-j: expected a whole number from 1 to 8, got '{jobs}'" in capsys.readouterr().err


@needs_fork
def test_a_worker_ignores_ctrl_c_and_dies_with_its_parent() -> None:
    def job(start: int, end: int) -> tuple[bool, int]:
        return signal.getsignal(signal.SIGINT) is signal.SIG_IGN, os.getppid()

    assert set(Workers(job, 4, 2, 1)) == {(True, os.getpid())}
    script = (
        "import os, sys, time\n"
        "from diagbot.kinds.workers import Workers\n"
        "for pid in Workers(lambda s, e: os.getpid(), 40, 2, 1):\n"
        "    print(pid, flush=True)\n"
        "    time.sleep(60)\n"
    )
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT) as parent:
        assert parent.stdout is not None
        worker = int(parent.stdout.readline())
        parent.kill()  # as `timeout` or a cancelled CI job does: no chance to stop the pool
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker)


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return False
    return "\nState:\tZ" not in status


@needs_fork
def test_a_fork_that_fails_part_way_leaves_no_worker_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    forked = os.fork
    calls: list[int] = []

    def fork() -> int:
        calls.append(1)
        if len(calls) == 2:
            raise OSError(errno.EAGAIN, "Resource temporarily unavailable")
        return forked()

    monkeypatch.setattr(os, "fork", fork)
    pool = Workers(_job, 100, 2, 10)
    assert [x for part in pool for x in part] == [i * i for i in range(100)]
    assert pool.stopped == "no worker processes could be started (Resource temporarily unavailable)"
    monkeypatch.undo()
    deadline = time.monotonic() + 10
    while multiprocessing.active_children() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert multiprocessing.active_children() == []  # the one that did start was stopped, not left to wait


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_how_deep_a_run_may_nest_does_not_depend_on_the_caller_s_stack(tmp_path: Path) -> None:
    """Reading a run and checking it recurse; a worker process starts its stack under the pool's frames, so
    without a limit counted from `evaluate_case` the same run passed in one process and failed in a worker."""
    from tests.test_agent_checks import assistant_calls, chat_call, evaluate, make_case, tool_result

    case = make_case(side_effect_policy={"tool": "order_lookup", "idempotency_key": "order_id"})
    verdicts: dict[int, list[list[str]]] = {}
    for levels in range(150, 1000, 50):
        arguments = '{"order_id": ' + _nested(levels) + "}"
        doc = [assistant_calls(chat_call("c1", "order_lookup", arguments)), tool_result("c1", "ok"),
               assistant_calls(chat_call("c2", "order_lookup", arguments)), tool_result("c2", "ok")]  # fmt: skip
        (tmp_path / f"{case.case_id}.json").write_text(json.dumps(doc), encoding="utf-8")

        def deeper(frames: int) -> list[str]:
            return evaluate(case, tmp_path).failed_checks if frames == 0 else deeper(frames - 1)

        verdicts[levels] = [deeper(0), deeper(60)]
    assert all(shallow == deep for shallow, deep in verdicts.values()), verdicts
    outcomes = {tuple(found[0]) for found in verdicts.values()}
    assert len(outcomes) == 2  # both a duplicate found and, deeper, a value too deeply nested to compare


def _levels() -> int:
    """How many more Python calls fit before the recursion limit stops them."""
    try:
        return 1 + _levels()
    except RecursionError:
        return 0


def _at_depth(calls: int, through_c: bool, work: Any) -> Any:
    """`work()` called `calls` calls further down the stack, each through a C function when `through_c` (which
    Python 3.11 counts against its limit too: a worker's stack has more of them than the command line's)."""
    if calls == 0:
        return work()
    if through_c:
        return next(map(lambda _: _at_depth(calls - 1, through_c, work), [0]))
    return _at_depth(calls - 1, through_c, work)


@pytest.mark.parametrize("through_c", [False, True])
def test_the_stack_a_block_may_use_is_the_same_wherever_it_starts(through_c: bool) -> None:
    def measured() -> int:
        with stack.headroom(300):
            return _levels()

    room = {calls: _at_depth(calls, through_c, measured) for calls in range(0, 130, 3)}
    assert len(set(room.values())) == 1, room
    assert abs(room[0] - 300) <= 10  # the block's own frames (`with`, the context manager) aside


@needs_fork
def test_runs_nested_to_the_limit_get_the_same_verdicts_in_workers(tmp_path: Path) -> None:
    """Python 3.11 counts some C calls against its recursion limit, and a worker's stack has more of them: with
    the limit counted in frames, a run nested 967 levels deep passed in one process and failed in a worker."""
    from tests.test_agent_checks import case_data

    (tmp_path / "cases").mkdir()
    (tmp_path / "runs").mkdir()
    cases = []
    for levels in range(900, 1020, 2):
        case_id = f"deep_{levels}"
        cases.append(case_data(case_id=case_id, success_criteria=[{"answer_contains": ["done"]}]))
        nested = "[" * levels + "]" * levels
        run = ('[{"role": "user", "content": "go"}, {"role": "assistant", "content": null, "tool_calls": [{"id": '
               '"c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]}, {"role": "tool", '
               '"tool_call_id": "c1", "content": "order 1234567890123456789", "extra": ' + nested + '}, {"role": '
               '"assistant", "content": "done"}]')  # fmt: skip  # a run of 19 digits: read again by `json`, recursively
        (tmp_path / "runs" / f"{case_id}.json").write_text(run, encoding="utf-8")
    (tmp_path / "cases" / "all.json").write_text(json.dumps(cases), encoding="utf-8")
    suite = SuiteInput("deep", tmp_path / "cases", tmp_path / "runs", "cases", "runs", 1 << 24, RUN, AgentOptions())
    alone = AgentKind().evaluate(suite)
    forked = evaluate_in_workers(dataclasses.replace(suite, workers=2), AgentOptions(), read(suite), chunk=7)
    assert forked is not None and dump_model_bytes(forked) == dump_model_bytes(alone)
    verdicts = {r.status for r in alone.results}
    assert verdicts == {"passed", "failed"}  # the limit falls inside the sweep, so both sides of it are compared
