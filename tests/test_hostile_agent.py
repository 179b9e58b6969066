"""Hostile input to the agent suite (issue 12), through the command line as a pull request would give it.

Everything a pull request changes is untrusted: case files, run files, diagbot.yml, file names. The promise: a clear
message naming the file (what, where, what to do), nothing else lost (a bad run fails only its own trial, a bad
case file makes the suite's input unusable with every problem listed, the report folder is still written whole),
and every read, regex, schema and query bounded. Never a traceback, never "failed unexpectedly", never a hang.

Each test runs `python -m diagbot run` (or `validate`) in a fresh folder with a suite of one hostile case and one
good case, under a wall-clock timeout and an address-space limit, and checks the exit code, the messages and the
report.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest
import yaml

from diagbot.core.values import one_line
from diagbot.kinds.agent.formats import parse_run
from diagbot.kinds.agent.formats.common import Quota, embedded_json, no_unknown_keys
from diagbot.kinds.agent.kind import AgentKind
from diagbot.kinds.agent.options import AgentOptions
from diagbot.kinds.agent.run import ToolCall, TraceInvalid
from diagbot.kinds.trace import fields
from tests.conftest import HANG_SECONDS

# A hang guard, not a speed test: a run that has not ended by then fails the test as hung (each takes about half
# a second). The inputs that once took minutes are held to their work budgets, which the messages show.
TIMEOUT = HANG_SECONDS
MEMORY = 4 * 1024**3  # address space of the diagbot process: a runaway allocation fails instead of swapping
MIB = 1024 * 1024

GOOD_RUN = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}]
BASE_CASE: dict[str, Any] = {
    "case_version": "v1",
    "dataset_id": "d",
    "dataset_version": "v1",
    "title": "t",
    "scenario": "s",
    "user_task": "u",
    "ability_tags": ["x"],
    "risk_level": "P2",
    "difficulty": "Easy",
    "source": "s",
    "input": "hi",
    "expected_behavior": ["does it"],
    "rubric": "r",
    "evaluator_config": {"rule_checks": [{"id": "says_done", "answer_contains": ["done"]}]},
    "metadata": {
        "dataset_role": "golden",
        "tags": [],
        "owner": "o",
        "review_status": "approved",
        "usage_rights_status": "approved_for_evaluation",
    },
}


def case(case_id: str = "hostile", **fields: Any) -> dict[str, Any]:
    """A valid P2 case that passes on GOOD_RUN (its answer contains "done"), with `fields` replaced."""
    return {"case_id": case_id, **BASE_CASE, **fields}


def yaml_case(case_id: str = "hostile", **fields: Any) -> str:
    """`case(...)` as YAML text (JSON is YAML), one line per field so a test can swap a value textually."""
    return "".join(f"{key}: {json.dumps(value)}\n" for key, value in case(case_id, **fields).items())


def calls_run(*calls: tuple[str, str], answer: str = "done") -> list[dict[str, Any]]:
    """An openai-chat run: one assistant message per (tool, arguments string), then the answer."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    for index, (tool, arguments) in enumerate(calls):
        call = {"id": f"c{index}", "type": "function", "function": {"name": tool, "arguments": arguments}}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    messages.append({"role": "assistant", "content": answer})
    return messages


UNKNOWN_FORMAT = (
    "$: not a run format diagbot knows; expected one of diagbot, openai-responses, openai-chat, otlp "
    "(see docs/agent.md)"
)


def _bytes(content: Any) -> bytes:
    if isinstance(content, bytes):
        return content
    if isinstance(content, str):
        return content.encode("utf-8", "surrogatepass")
    return json.dumps(content).encode()  # ensure_ascii: a lone surrogate is written as its \\udxxx escape


def make_suite(
    root: Path, cases: dict[str, Any] | None = None, runs: dict[str, Any] | None = None, options: str = ""
) -> Path:
    """A folder with diagbot.yml (one agent suite `ag`, `options` appended to it), cases/ and fx/: the good case
    and its run, plus `cases` and `runs` (name -> dict as JSON, str, or raw bytes; a name may hold folders)."""
    for folder, files, good in ((root / "cases", cases, case("good")), (root / "fx", runs, GOOD_RUN)):
        folder.mkdir(parents=True, exist_ok=True)
        for name, content in {"good.json": good, **(files or {})}.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(_bytes(content))
    config = "suites:\n  - name: ag\n    kind: agent\n    cases: cases\n    fixtures: fx\n" + options
    (root / "diagbot.yml").write_text(config)
    return root


# The limit is set by a small Python that then execs diagbot, not by a preexec_fn: Python code run between fork and
# exec also runs every os.register_at_fork hook of this process (the OpenTelemetry SDK's providers register some),
# and one that takes a lock deadlocked the child.
LIMITED = (
    "import os, resource, sys; resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit})); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str
    root: Path

    @property
    def out(self) -> Path:
        return self.root / "out"

    @cached_property
    def report(self) -> dict[str, Any] | None:
        path = self.out / "reports" / "ag.json"
        if not path.exists():
            return None
        report: dict[str, Any] = json.loads(path.read_text())
        return report

    def result(self, case_id: str) -> dict[str, Any]:
        assert self.report is not None, self.stderr[-2000:]
        found: dict[str, Any] = next(r for r in self.report["results"] if r["caseId"] == case_id)
        return found

    def trials(self, case_id: str = "hostile") -> list[list[str]]:
        """The failed checks of each trial of a case."""
        return [trial["failedChecks"] for trial in self.result(case_id)["trialResults"]]

    @property
    def errors(self) -> list[str]:
        return [line.removeprefix("error: ") for line in self.stderr.splitlines() if line.startswith("error: ")]


def diagbot(root: Path, command: str = "run") -> Result:
    limited = LIMITED.format(limit=MEMORY)
    args = [sys.executable, "-c", limited, "-m", "diagbot", command, "--config", str(root / "diagbot.yml")]
    if command == "run":
        args += ["--out", str(root / "out")]
    env = {**os.environ, "PYTHONUTF8": "1"}
    env.pop("GITHUB_ACTIONS", None)
    proc = subprocess.run(args, cwd=root, capture_output=True, timeout=TIMEOUT, check=False, env=env)
    return Result(proc.returncode, _text(proc.stdout), _text(proc.stderr), root)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "backslashreplace")


def assert_clean(result: Result) -> None:
    """No traceback, no internal error, and no half-written output file left behind."""
    both = result.stdout + result.stderr
    assert "Traceback" not in both, result.stderr[-3000:]
    assert "failed unexpectedly" not in both, result.stderr[-3000:]
    if result.out.exists():
        assert not [p for p in result.out.rglob("*") if p.name.endswith(".tmp")]


def evaluated(result: Result) -> Result:
    """A run whose suite was evaluated: exit 0 (no baseline, no gating P0), clean, report and comment written,
    and the good case passed next to the hostile one."""
    assert_clean(result)
    assert result.code == 0, result.stderr[-3000:]
    assert (result.out / "comment.md").is_file() and (result.out / "summary.md").is_file()
    good = result.result("good")
    assert (good["status"], good["trialResults"]) == ("passed", [{"trial": "good.json", "passed": True,
                                                                  "failedChecks": []}])  # fmt: skip
    return result


def judged(tmp_path: Path, run: Any, name: str = "hostile.json", **fields: Any) -> list[str]:
    """The failed checks of the hostile case's one trial, recorded as `run` (evaluated next to the good case)."""
    result = evaluated(diagbot(make_suite(tmp_path, {"hostile.json": case(**fields)}, {name: run})))
    trials = result.trials()
    assert len(trials) == 1
    return trials[0]


def failed_with(result: Result, *checks: str, case_id: str = "hostile") -> None:
    """The case's one trial failed with exactly `checks`, and so did the case."""
    found = result.result(case_id)
    assert (found["status"], found["failedChecks"], result.trials(case_id)) == ("failed", [*checks], [[*checks]])


def refused(result: Result) -> Result:
    """The suite's cases cannot be used: exit 2, clean, no report for the suite, the comment still written and
    listing the problems."""
    assert_clean(result)
    assert result.code == 2, result.stderr[-3000:]
    assert result.report is None
    assert "input could not be used" in (result.out / "comment.md").read_text()
    return result


# --- run files: each fails only its own trial, naming the file and the JSON path ----------------------------------

NESTED = b"[" * 100_000 + b"]" * 100_000
OVER_VALUES = b"[" * 1_500_000 + b"]" * 1_500_000
NATIVE = '{"format":"diagbot-agent-trace","version":1,'


@pytest.mark.parametrize(
    ("run", "message"),
    [
        (NESTED, "nested too deeply to be a run"),
        (OVER_VALUES, "holds 1,500,000 JSON values; diagbot reads at most 1,000,000 per run"),
        ([{"role": "user", "content": "x"}] * 10_001, "$: has 10,001 items; diagbot reads at most 10,000 per run"),
        ('[{"role":"assistant","content":"done","x":NaN}]', "cannot be read: NaN, which is not a JSON number"),
        ('[{"role":"assistant","content":"done","x":-Infinity}]',
         "cannot be read: -Infinity, which is not a JSON number"),
        # past a double: json reads it as infinity, equal to every other such number
        ('[{"role":"assistant","content":"done","x":-1e309}]',
         "cannot be read: the number -1e309, which is too large to read (past 1.8e308)"),
        ('[{"role":"assistant","content":"done","x":' + "9" * 5000 + "}]",
         "cannot be read: a number with 5000 digits (at most 50)"),
        (b'[{"role":"assistant","content":"done \xff"}]', "not UTF-8 (bad byte at offset 37); re-save it as UTF-8"),
        (b"", "the run file is empty"),
        (b"  \n\t ", "the run file is empty"),
        (b"\xef\xbb\xbf[", "not valid JSON at line 1 column 2 (Expecting value)"),  # the BOM skipped, the rest read
        ("null", UNKNOWN_FORMAT),
        ("5", UNKNOWN_FORMAT),
        ('"x"', UNKNOWN_FORMAT),
        ('{"messages": 5}',
         "$.messages: expected an array, found a number (read as openai-chat, the format it resembles)"),
        ('[{"role":"assistant","content":"done","tool_calls":{"a":1}}]',
         "$[0].tool_calls: expected an array, found an object"),
        ('[{"role":"assistant","content":"done","tool_calls":"x"}]',
         "$[0].tool_calls: expected an array, found a string"),
        ('[{"role":"assistant","content":"done","tool_calls":["x"]}]',
         "$[0].tool_calls[0]: expected an object, found a string"),
        ('[{"role":"assistant","content":"done","tool_calls":[{"id":"a"}]}]',
         "$[0].tool_calls[0].function: expected an object, found no value (the key is missing)"),
        ('[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"t","arguments":"{}"}}]},'
         '{"role":"tool","tool_call_id":"a","content":{"rows":[1,2]}},{"role":"assistant","content":"done"}]',
         "$[1].content: expected text, null or a list of content parts, found an object"),
        ('[{"role":"tool","tool_call_id":"zz","content":"x"}]',
         "$[0].tool_call_id: a tool result for 'zz', which no earlier call made"),
        ('[{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"t","arguments":"{}"}}]},'
         '{"role":"tool","tool_call_id":"a","content":"r"},{"role":"tool","tool_call_id":"a","content":"again"}]',
         "$[2].tool_call_id: a second tool result for 'a': every earlier call with this id is already answered"),
        ('[{"role":"function","name":"t","content":"x"}]',
         "$[0].name: a tool result for 't', which no earlier call made"),
        ('[{"role":"assistant","content":null,"function_call":{"name":"t","arguments":"{}"}},'
         '{"role":"function","name":"t","content":"r"},{"role":"function","name":"t","content":"again"}]',
         "$[2].name: a second tool result for 't': every earlier call with this name is already answered"),
        ('[{"type":"function_call","call_id":"c","name":"t","arguments":"{}"},'
         '{"type":"function_call_output","call_id":"c","output":"r"},'
         '{"type":"function_call_output","call_id":"c","output":"again"}]',
         "$[2].call_id: a second output for 'c': every earlier call with this call_id is already answered"),
        ('[{"role":5,"content":"done"}]', "$[0].role: expected a string, found a number"),
        ('[{"role":"assistant","content":[{"type":"text","text":5}]}]',
         "$[0].content[0].text: expected a string, found a number"),
        ([{"role": "assistant", "content": [{"type": "text", "text": "done"}] * 10_001}],
         "$[0].content: has 10,001 items; diagbot reads at most 10,000 per run"),
        ('{"messages":[{"role":"assistant","content":"done"}],"duration_ms":1e999}',
         "cannot be read: the number 1e999, which is too large to read (past 1.8e308)"),
        (NATIVE + '"steps":[{"kind":"wat"}]}',
         "$.steps[0].kind: unknown step kind 'wat'; use one of message, tool_call, state_change, retrieval"),
        (NATIVE + '"steps":[{"kind":"message","role":"assistant","contnt":"done"}]}',
         "$.steps[0].contnt: unknown field (did you mean content?)"),
        (NATIVE + '"steps":[{"kind":"tool_call","tool":"t","error":"yes"}]}',
         "$.steps[0].error: expected true or false"),
        (NATIVE + '"steps":[],"final_state":[1]}', "$.final_state: expected an object, found an array"),
        (NATIVE + '"steps":[],"duration_ms":-1}',
         "$.duration_ms: expected a duration in milliseconds (a number from 0 to 1e+12), found -1"),
        # the report would hold 2e15, which the next run refused as a forged baseline
        ('{"messages":[{"role":"assistant","content":"done"}],"duration_ms":2e15}',
         "$.duration_ms: expected a duration in milliseconds (a number from 0 to 1e+12), found 2000000000000000.0"),
        ('{"format":"diagbot-agent-trace","version":true,"steps":[]}',
         "$.version: expected 1; this diagbot reads version 1 of its format"),
    ],
    ids=[
        "nested-100k", "over-the-value-limit", "10001-messages", "NaN", "-Infinity", "-1e309", "5000-digit-int",
        "not-utf8",
        "empty", "whitespace", "bom", "null", "number", "string", "messages-not-a-list", "tool_calls-object",
        "tool_calls-string", "tool_call-string", "function-missing", "tool-result-object", "result-for-no-call",
        "second-result-for-an-answered-call", "function-result-for-no-call", "second-function-result",
        "second-responses-output",
        "role-number", "content-part-number", "10001-content-parts", "duration-1e999", "native-unknown-kind",
        "native-misspelt-key", "native-error-string", "native-final-state-array", "native-negative-duration",
        "duration-2e15", "native-version-true",
    ],
)  # fmt: skip
def test_a_bad_run_fails_only_its_own_trial(tmp_path: Path, run: Any, message: str) -> None:
    assert judged(tmp_path, run) == [f"trace_invalid: hostile.json: {message}"]


def test_ten_thousand_steps_are_read(tmp_path: Path) -> None:
    run = [{"role": "user", "content": "x"}] * 9_999 + [{"role": "assistant", "content": "done"}]
    assert judged(tmp_path, run) == []


def test_a_huge_answer_is_bounded(tmp_path: Path) -> None:
    """30 MiB of answer (under the 64 MiB run cap): matched within the bound, and the rule still sees "done"."""
    assert judged(tmp_path, [{"role": "assistant", "content": "done " + "x" * (30 * MIB)}]) == []


@pytest.mark.parametrize(
    ("arguments", "why"),
    [
        (json.dumps([json.loads("[" * 150 + "]" * 150)]), None),
        ("[" * 100_000 + "]" * 100_000, "arguments are nested too deeply to read: "),
        ('{"n": ' + "9" * 5000 + "}", "arguments are not valid JSON (a number with 5000 digits (at most 50))"),
        ('{"n": NaN}', "arguments are not valid JSON (NaN, which is not a JSON number)"),
        ('{"n": 1e999}', "arguments are not valid JSON (the number 1e999, which is too large to read (past 1.8e308))"),
        ('{"n": ', "arguments are not valid JSON (Expecting value)"),
    ],
    ids=["deep-but-parseable", "nested-100k", "5000-digit-int", "NaN", "infinite", "truncated"],
)
def test_unreadable_arguments_fail_the_call_not_the_file(tmp_path: Path, arguments: str, why: str | None) -> None:
    """`arguments` is a JSON string the model wrote: when it is not JSON, that call's arguments are invalid (a
    tool_schema says so), the rest of the run is read as usual."""
    failed = judged(tmp_path, calls_run(("t", arguments)), tool_schema={"t": {"type": "object"}})
    if why is None:  # parsed: an array, which the schema refuses
        assert len(failed) == 1 and failed[0].startswith(
            "tool_args_invalid: t (call 1): arguments are an array, not an"
        )
    else:
        assert len(failed) == 1 and failed[0].startswith(f"tool_args_invalid: t (call 1): {why}"), failed


@pytest.mark.parametrize(
    ("schema", "arguments", "where", "why"),
    [
        (
            {"properties": {"a": {"type": "object"}}},
            {"a": json.loads("[" * 150 + "]" * 150)},
            "a",
            "is not of type 'object'",
        ),
        ({"properties": {"a": {"type": "integer"}}}, {"a": "x" * 500}, "a", "is not of type 'integer'"),
    ],
    ids=["deep-array", "long-string"],
)
def test_a_schema_failure_on_a_long_value_says_why(
    tmp_path: Path, schema: dict[str, Any], arguments: Any, where: str, why: str
) -> None:
    failed = judged(tmp_path, calls_run(("t", json.dumps(arguments))), tool_schema={"t": schema})
    assert len(failed) == 1 and failed[0].startswith(f"tool_args_invalid: t (call 1): {where}: "), failed
    assert failed[0].endswith(f"… {why}") and len(failed[0]) < 300, failed  # the value cut, the reason whole


def test_arguments_with_too_many_values_are_not_validated(tmp_path: Path) -> None:
    arguments = json.dumps({"rows": [[0] * 10] * 2_000})
    failed = judged(tmp_path, calls_run(("t", arguments)), tool_schema={"t": {"type": "object"}})
    assert failed == ["tool_args_invalid: t (call 1): the arguments hold more than 10,000 values, too many to validate"]


# --- the fixtures folder: never read outside it, never block on a special file ------------------------------------


def _fixtures_suite(tmp_path: Path, names: list[str]) -> Path:
    return make_suite(tmp_path, {f"{name}.json": case(name) for name in names})


def test_special_files_and_links_in_the_fixtures_folder(tmp_path: Path) -> None:
    names = ["fifo", "zero", "outside", "passwd", "folder", "empty", "both", "many", "fifo_trial", "link_trial",
             "missing", "linked_folder", "dangling", "cased", "cased_file", "lines"]  # fmt: skip
    root = _fixtures_suite(tmp_path, names)
    fx = root / "fx"
    secret = root / "secret.json"
    secret.write_text(json.dumps([{"role": "assistant", "content": "done TOP-SECRET-VALUE"}]))
    os.mkfifo(fx / "fifo.json")
    os.symlink("/dev/zero", fx / "zero.json")
    os.symlink(secret, fx / "outside.json")
    os.symlink("/etc/passwd", fx / "passwd.json")
    (fx / "folder.json").mkdir()
    (fx / "empty").mkdir()
    (fx / "both").mkdir()
    (fx / "both" / "t1.json").write_text(json.dumps(GOOD_RUN))
    (fx / "both.json").write_text(json.dumps(GOOD_RUN))
    (fx / "many").mkdir()
    for n in range(1_000):
        (fx / "many" / f"trial-{n:04d}.json").write_text(json.dumps(GOOD_RUN))
    (fx / "fifo_trial").mkdir()
    os.mkfifo(fx / "fifo_trial" / "t.json")
    (fx / "link_trial").mkdir()
    os.symlink(secret, fx / "link_trial" / "t.json")
    elsewhere = root / "elsewhere"  # a linked case folder: what it holds was listed, and named as left out
    elsewhere.mkdir()
    (elsewhere / "SECRET-NAME.txt").write_text("x")
    (elsewhere / "t.json").write_text(json.dumps(GOOD_RUN))
    os.symlink(elsewhere, fx / "linked_folder")
    os.symlink("nowhere.json", fx / "dangling.json")
    (fx / "cased").mkdir()  # a passing trial, and beside it the failing run under a name one letter case off
    (fx / "cased" / "t1.json").write_text(json.dumps(GOOD_RUN))
    (fx / "cased.JSON").write_text(json.dumps([*GOOD_RUN[:1], {"role": "assistant", "content": "failed"}]))
    (fx / "cased_file.json").write_text(json.dumps(GOOD_RUN))
    (fx / "Cased_File.json").write_text(json.dumps([*GOOD_RUN[:1], {"role": "assistant", "content": "no"}]))
    (fx / "lines.jsonl").write_text(json.dumps(GOOD_RUN))
    result = evaluated(diagbot(root))
    # the listing stops at the 101st trial, so the count is never exact
    failed_with(result, "trace_invalid: many/ holds more than 100 trials; diagbot reads at most 100", case_id="many")
    names.remove("many")
    outside = "a link that leads outside the fixtures folder; diagbot does not follow it"
    assert {name: result.trials(name) for name in names} == {
        "fifo": [["trace_invalid: fifo.json: the run file is not a regular file (it is a FIFO)"]],
        "zero": [[f"trace_invalid: zero.json: {outside}"]],
        "outside": [[f"trace_invalid: outside.json: {outside}"]],
        "passwd": [[f"trace_invalid: passwd.json: {outside}"]],
        "folder": [["trace_invalid: folder.json: the run file is not a regular file (it is a folder)"]],
        "empty": [["trace_missing: the folder empty/ holds no trials"]],
        "both": [["trace_invalid: both both.json and the folder both/ are recorded; keep one"]],
        "fifo_trial": [["trace_invalid: fifo_trial/t.json: the run file is not a regular file (it is a FIFO)"]],
        "link_trial": [[f"trace_invalid: link_trial/t.json: {outside}"]],
        "missing": [["trace_missing: no run recorded: expected missing.json or a folder missing/ in the fixtures "
                     "folder"]],
        "linked_folder": [[f"trace_invalid: linked_folder/: {outside}"]],
        "dangling": [["trace_missing: dangling.json is a symbolic link to nothing (its target does not exist); record "
                      "the run there, or replace the link with the run file"]],
        "cased": [["trace_invalid: cased/, cased.JSON all record this case's run (names that differ only in case); "
                   "keep one"]],
        "cased_file": [["trace_invalid: Cased_File.json, cased_file.json all record this case's run (names that "
                        "differ only in case); keep one"]],
        "lines": [["trace_missing: no run recorded: expected lines.json or a folder lines/ in the fixtures folder "
                   "(lines.jsonl is there: a JSON Lines (OTLP) run is read as a trial, in the folder lines/)"]],
    }  # fmt: skip
    written = "".join(p.read_text() for p in result.out.rglob("*") if p.is_file()) + result.stdout + result.stderr
    assert "TOP-SECRET-VALUE" not in written and "root:x:" not in written and "SECRET-NAME" not in written


def test_a_trial_file_name_no_output_can_carry_fails_its_case_escaped(tmp_path: Path) -> None:
    """An undecodable byte reached the report as a lone surrogate (the next run could not read it back as its
    baseline) and an ESC reached the terminal and the comment."""
    root = make_suite(tmp_path, {"hostile.json": case()}, {"hostile/t1.json": GOOD_RUN})
    (root / "fx" / "hostile" / os.fsdecode(b"t2-\xff\x1b[31m\n.json")).write_text(json.dumps(GOOD_RUN))
    result = evaluated(diagbot(root))
    failed_with(
        result,
        "trace_invalid: hostile/t2-\\udcff\\u001b[31m\\n.json: a trial file name with a control character or "
        "undecodable byte; rename it",
    )
    assert "\x1b" not in result.stdout + (result.out / "comment.md").read_text()
    assert AgentKind().parse(json.loads((result.out / "reports" / "ag.json").read_text()), "again").total_cases == 2


def test_a_trial_folder_keeps_its_good_trials(tmp_path: Path) -> None:
    runs = {"hostile/t1.json": GOOD_RUN, "hostile/t2.json": "[", "hostile/t3.json": GOOD_RUN}
    result = evaluated(diagbot(make_suite(tmp_path, {"hostile.json": case()}, runs, options="    trials: any\n")))
    assert result.trials() == [[], ["trace_invalid: hostile/t2.json: not valid JSON at line 1 column 2 (Expecting "
                                    "value)"], []]  # fmt: skip
    assert (result.result("hostile")["status"], result.result("hostile")["trialsPassed"]) == ("passed", 2)


def test_a_run_that_is_a_symlink_loop_says_so(tmp_path: Path) -> None:
    root = _fixtures_suite(tmp_path, ["loop"])
    os.symlink(root / "fx" / "loop.json", root / "fx" / "loop.json")
    failed_with(evaluated(diagbot(root)), "trace_invalid: loop.json: cannot be resolved (a symbolic link loop?)",
                case_id="loop")  # fmt: skip


# --- case files: the suite is refused with every problem listed, each naming its file ------------------------------

BILLION_LAUGHS = "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"


def _nested(leaf: Any, levels: int) -> Any:
    """`leaf` under `levels` nested `properties: {a: ...}` (two JSON levels each)."""
    for _ in range(levels):
        leaf = {"properties": {"a": leaf}}
    return leaf


REFUSED_FILES: list[tuple[str, Any, str]] = [
    ("laughs.yaml", BILLION_LAUGHS, "not valid YAML (aliases (*a) are not allowed here; write the value out)"),
    ("int.json", '{"case_id": "i", "n": ' + "9" * 5000 + "}", "int.json: holds a number with 5000 digits (at most 50)"),
    ("int.yaml", "case_id: i2\ncase_version: " + "9" * 5000 + "\n",
     "int.yaml: holds a number of about 5,000 digits at case_version (at most 50)"),
    ("nan.json", '{"case_id": "n", "x": NaN}', "nan.json: holds NaN, which is not a JSON number"),
    ("huge.json", '{"case_id": "h", "x": 1e400}',
     "huge.json: holds the number 1e400, which is too large to read (past 1.8e308)"),
    ("surrogate.json", case("sj", title="\ud800"), "surrogate.json: case sj: title holds a lone surrogate, which is "
                                                   "not Unicode text"),
    ("surrogate.yaml", 'case_id: sy\ntitle: "\\ud800"\n', "surrogate.yaml: case sy: title holds a lone surrogate"),
    ("typo.yaml", yaml_case("ty", expected_tool_sequnce=["t"]),
     "typo.yaml: case ty: unknown field 'expected_tool_sequnce' (did you mean expected_tool_sequence?)"),
    ("nested_typo.yaml", yaml_case("nt", evaluator_config={"tool_sequence": {"mtch": "strict"}}),
     "nested_typo.yaml: case nt: unknown field 'evaluator_config.tool_sequence.mtch' (did you mean match?)"),
    ("policy_typo.yaml", yaml_case("pt", side_effect_policy=[{"tool": "t", "confirmaton_required": True}]),
     "policy_typo.yaml: case pt: unknown field 'side_effect_policy[0].confirmaton_required' (did you mean "
     "confirmation_required?)"),
    ("enum.yaml", yaml_case("en", risk_level="P9"), "enum.yaml: case en: 'risk_level': \"P9\" is not one of P0, P1, "
                                                    "P2, P3 (did you mean P3?)"),
    ("dup_a.yaml", yaml_case("dup"), "dup_b.json: case dup: duplicate case_id (first defined in "),
    ("dup_b.json", case("dup"), "dup_b.json: case dup: duplicate case_id"),
    ("empty.yaml", "", "empty.yaml: the case file is empty; write one case, a list of cases, or {defaults, cases}"),
    ("latin1.yaml", b"case_id: caf\xe9\n", "latin1.yaml: the case file is not UTF-8 text (byte 12)"),
    ("deep.json", "[" * 100_000 + "]" * 100_000, "deep.json: nested too deeply to be a case file"),
    ("deep.yaml", "[" * 100_000 + "]" * 100_000, "deep.yaml: nested too deeply to be a case file"),
    ("dotdot.yaml", yaml_case("../etc/passwd"), "dotdot.yaml: case #1: 'case_id': a case_id is 1 to 200 ASCII "
                                                "letters"),
    ("scalars.yaml", "- 1\n- two\n", "scalars.yaml: case #1: expected a mapping of case fields, found a number"),
    ("scalar.yaml", "hello\n", "scalar.yaml: expected a case, a list of cases, or {defaults, cases}; found a string"),
    ("comments.yaml", "# cases to come\n", "comments.yaml: expected a case, a list of cases, or {defaults, cases}; "
                                          "found nothing (only comments)"),
    ("rule.yaml", yaml_case("ru", evaluator_config={"rule_checks": ["no_privcy_leak"]}),
     "rule.yaml: case ru: evaluator_config.rule_checks[0]: unknown rule 'no_privcy_leak' (did you mean "
     "no_privacy_leak?)"),
    ("regex.yaml", yaml_case("rx", evaluator_config={"rule_checks": [{"answer_matches": "(a)\\1"}]}),
     "rx: 'evaluator_config.rule_checks[0].answer_matches': invalid regular expression '(a)\\\\1': uses a "
     "backreference"),
    ("query.yaml", yaml_case("q", final_state_check={"expr": "a[", "equals": 1}),
     "q: 'final_state_check.expr': invalid JMESPath expression 'a[': the expression is incomplete at character 3 "
     "(found"),
    ("function.yaml", yaml_case("fn", final_state_check={"expr": "nofn(a)", "equals": 1}),  # failed only in a run
     "fn: 'final_state_check.expr': JMESPath expression 'nofn(a)' calls 'nofn', no JMESPath function (found"),
    ("long_query.yaml", yaml_case("lq", final_state_check={"expr": "a" * 4001, "equals": 1}),
     "lq: 'final_state_check.expr': JMESPath expression 'aaaaaaaa"),
    ("pattern_props.yaml", yaml_case("pp", tool_schema={"t": {"patternProperties": {"^a": {}}}}),
     "the schema for 't' uses patternProperties, which diagbot does not run; list the properties"),
    ("schema_regex.yaml", yaml_case("sr", tool_schema={"t": {"properties": {"a": {"pattern": "(?=x)"}}}}),
     "the schema for 't' has pattern '(?=x)': uses a lookahead or lookbehind"),
    ("schema_deep.yaml", yaml_case("sd", tool_schema={"t": _nested({}, 100)}),  # checking it overflowed the stack
     "the schema for 't' is nested more than 64 levels deep; flatten it ($defs and $ref name a shape once)"),
    ("p0.yaml", yaml_case("pz", risk_level="P0"), "p0.yaml: case pz: negative_behavior is required for P0 cases"),
    ("blank.yaml", yaml_case("bl", title="  ", ability_tags=["refunds", ""]),
     "blank.yaml: case bl: 'title': expected a text, found a blank one: say it in words (it names the case to "
     "people) (found \"  \")"),
    # 2,000,001 values in a flow list, within the file size limit: an audit measured 8,000,000 at 3 GB in PyYAML
    ("values.yaml", "case_id: v\ncontext: {k: [" + ",".join(["1"] * 2_000_001) + "]}\n",
     "values.yaml: holds more than 2,000,000 lines and commas, more YAML values than diagbot reads in one case "
     "file; split its cases into several files (or write it as JSON)"),
    # the same with lone CRs, NELs and line separators, which YAML reads as line breaks: 8,000,000 of them took 3 GB
    ("crs.yaml", "case_id: c\rcontext:\r" + "-\r" * 1_000_000 + "-\x85" * 600_000 + "-\u2028" * 500_000,
     "crs.yaml: holds more than 2,000,000 lines and commas, more YAML values than diagbot reads in one case "
     "file; split its cases into several files (or write it as JSON)"),
]  # fmt: skip
RULES = "    rules:\n      no_privacy_leak: {answer_not_matches: '\\b\\d{16}\\b'}\n"


def _without_line(error: str) -> str:
    """An error as it reads without the line of the case file it names (`cases/a.yaml:7: case x` -> `cases/a.yaml:
    case x`)."""
    return re.sub(r"\.(yaml|json):\d+: ", r".\1: ", error, count=1)


@pytest.mark.parametrize(("name", "content", "message"), REFUSED_FILES, ids=[f[0] for f in REFUSED_FILES])
def test_a_bad_case_file_is_named(tmp_path: Path, name: str, content: Any, message: str) -> None:
    files = {name: content}
    if name.startswith("dup_"):
        files = {n: c for n, c, _ in REFUSED_FILES if n.startswith("dup_")}
    result = refused(diagbot(make_suite(tmp_path, files, options=RULES)))
    cases = tmp_path / "cases"
    errors = [_without_line(error) for error in result.errors]  # which line: test_agent_suite's field-line tests
    assert any(error.startswith(f"{cases}/") and name in error and message in error for error in errors), errors


def test_a_suite_of_many_bad_cases_stops_after_ten_thousand_problems(tmp_path: Path) -> None:
    """A million `{}` cases (3 MB): an audit measured two minutes, 3.9 GB and 16,000,000 lines of errors. The
    problems of one suite's cases stop at 10,000, naming the case where reading stopped."""
    root = make_suite(tmp_path, {"many.json": json.dumps([{}] * 1_000_000)})
    for command in ("validate", "run"):
        result = diagbot(root, command)
        assert_clean(result)
        assert result.code == 2
        assert len(result.errors) == 10_001  # each case's 16 missing fields, up to 10,000, and the stop
        assert result.errors[-1] == (
            f"{root}/cases: stopped after 10,000 problems, before {root}/cases/many.json: case #626; fix these, then "
            "run diagbot validate again for the rest"
        )


def test_one_case_of_many_bad_fields_says_its_first_hundred(tmp_path: Path) -> None:
    """One case with 800,000 unknown keys (9.5 MB): a hostile review measured 800,000 error lines (44.7 MB on stderr,
    one annotation each in the action), as the suite's cap was looked at only between cases."""
    case = yaml.safe_load(yaml_case("many")) | {f"k{n}": 0 for n in range(50_000)}
    root = make_suite(tmp_path, {"many.json": json.dumps([case])})
    result = diagbot(root, "validate")
    assert_clean(result)
    assert result.code == 2 and len(result.errors) == 101
    assert result.errors[0] == (
        f"{root}/cases/many.json:1: case many: 50,000 problems; the first 100 follow, fix them and run diagbot "
        "validate again for the rest"
    )
    assert result.errors[1].startswith(f"{root}/cases/many.json:1: case many: unknown field 'k0'")


def test_a_case_file_over_the_size_limit_says_to_split_it(tmp_path: Path) -> None:
    root = make_suite(tmp_path)
    big = root / "cases" / "big.json"
    with big.open("wb") as out:
        out.truncate(17 * 1024 * 1024)
    result = refused(diagbot(root))
    assert result.errors == [
        f"{big}: the case file is 17,825,792 bytes, over the 16,777,216-byte limit; split its cases into several files"
    ]


def test_a_suite_whose_cases_path_is_a_fifo_says_so(tmp_path: Path) -> None:
    """`cases:` naming a FIFO read "no such case file or folder", though a FIFO inside a cases folder is named."""
    root = make_suite(tmp_path)
    os.mkfifo(root / "one.yaml")
    (root / "diagbot.yml").write_text("suites:\n  - name: ag\n    kind: agent\n    cases: one.yaml\n    fixtures: fx\n")
    result = refused(diagbot(root))
    assert result.errors == [f"{root}/one.yaml: the case file is not a regular file (it is a FIFO)"]


def test_every_case_file_problem_is_listed_at_once(tmp_path: Path) -> None:
    """All the files above in one suite, plus special files and links: each problem is listed by `run` and by
    `validate`; the contents of a file outside the folder are never echoed."""
    root = make_suite(tmp_path, {name: content for name, content, _ in REFUSED_FILES}, options=RULES)
    cases = root / "cases"
    os.mkfifo(cases / "fifo.yaml")
    os.symlink("/etc/passwd", cases / "passwd.yaml")
    os.symlink("/dev/zero", cases / "zero.yaml")
    os.symlink(cases / "loop.yaml", cases / "loop.yaml")
    special = [
        "fifo.yaml: the case file is not a regular file (it is a FIFO)",
        "passwd.yaml: a link that leads outside the cases folder; diagbot does not follow it",
        "zero.yaml: a link that leads outside the cases folder; diagbot does not follow it",
        "loop.yaml: cannot be resolved (a symbolic link loop?)",
    ]
    for command in ("run", "validate"):
        result = diagbot(root, command)
        assert_clean(result)
        assert result.code == 2
        for message in [m for _, _, m in REFUSED_FILES] + special:
            assert any(message in _without_line(error) for error in result.errors), (command, message)
        assert "root:x:" not in result.stdout + result.stderr
    comment = (root / "out" / "comment.md").read_text()
    assert "fifo.yaml" in comment and "root:x:" not in comment


def test_the_good_suite_still_runs_beside_a_refused_one(tmp_path: Path) -> None:
    """One suite's unusable cases never stop another suite: its report is written."""
    make_suite(tmp_path / "bad", {"bad.yaml": BILLION_LAUGHS})
    make_suite(tmp_path / "fine")
    (tmp_path / "diagbot.yml").write_text(
        "suites:\n"
        "  - {name: bad, kind: agent, cases: bad/cases, fixtures: bad/fx}\n"
        "  - {name: fine, kind: agent, cases: fine/cases, fixtures: fine/fx}\n"
    )
    result = diagbot(tmp_path)
    assert_clean(result)
    assert result.code == 2
    assert result.errors == [f"{tmp_path}/bad/cases/bad.yaml:2:8: not valid YAML (aliases (*a) are not allowed "
                             "here; write the value out)"]  # fmt: skip
    assert "input could not be used: bad" in result.stderr
    assert not (tmp_path / "out" / "reports" / "bad.json").exists()
    fine = json.loads((tmp_path / "out" / "reports" / "fine.json").read_text())
    assert [(r["caseId"], r["status"]) for r in fine["results"]] == [("good", "passed")]


# --- diagbot.yml ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("    trials: 0\n", "suites.0.trials"),
        ("    trials: -1\n", "suites.0.trials"),
        ("    trials: 1.5\n", "suites.0.trials"),
        ("    trials: '2'\n", "suites.0.trials"),
        ("    trials: true\n", "suites.0.trials"),
        ("    trials: 100000\n", "suites.0.trials"),
        ("    trace-format: wat\n", "suites.0.trace-format: unknown trace format 'wat'; use one of auto, "
                                    "diagbot, openai-responses, openai-chat"),
        ("    trace-formt: auto\n", "unknown key 'suites.0.trace-formt' (did you mean trace-format?)"),
        ("    tool-error-pattern: '(a'\n", "suites.0.tool-error-pattern: invalid regular expression '(a': "
                                           "missing )"),
        ("    tool-error-pattern: '(?<=x)y'\n", "uses a lookahead or lookbehind"),
        ("    confirmation-pattern: '(a+)+\\1'\n", "uses a backreference"),
        ("    confirmation-pattern: '" + "a" * 2_000 + "'\n", "is 2,000 characters long; the limit is 1,000"),
        ("    rules:\n      r: {answer_matches: 'a{1000}{1000}'}\n", "suites.0.rules.r.answer_matches: "
                                                                      "invalid regular expression"),
        ("    rules:\n      r: {answer_matches: 'a{1000}b{1000}'}\n",
         "compiles to 2,004 RE2 instructions; the limit is 128"),
        ("    rules:\n      r: {answer_not_contans: [x]}\n", "unknown key 'suites.0.rules.r.answer_not_contans' (did "
                                                             "you mean answer_not_contains?)"),
        ("    rules:\n      '../x': {answer_contains: [x]}\n", "suites.0.rules"),
        ("    rules:\n      r: {state: {expr: 'a[', equals: 1}}\n", "invalid JMESPath expression 'a['"),
        ("    rules: [1]\n", "suites.0.rules: Input should be a valid dictionary"),
        ("    max-fixture-bytes: 0\n", "suites.0.max-fixture-bytes: Input should be greater than 0"),
        ("    confirmation-pattern: '(?i)yes|confirm|'\n", "suites.0.confirmation-pattern: the pattern matches empty "
                                                          "text, so it would make every user message a confirmation"),
        ("    tool-error-pattern: 'x*'\n", "suites.0.tool-error-pattern: the pattern matches empty text, so it would "
                                         "make every call failed"),
        ("    confirmation-pattern: '\\b'\n", "suites.0.confirmation-pattern: the pattern matches the refusal 'no', so "
                                          "it would read a user's no as a confirmation"),
        ("    confirmation-pattern: 'yes|.'\n", "the pattern matches the refusal 'no'"),
        ("    confirmation-pattern: 'ok|不'\n", "the pattern matches the refusal '不'"),
    ],
    ids=[
        "trials-0", "trials-negative", "trials-float", "trials-string", "trials-bool", "trials-huge", "unknown-format",
        "misspelt-key", "bad-regex", "lookbehind", "backreference", "long-regex", "huge-repeat", "big-program",
        "rule-typo", "rule-name-path", "bad-query", "rules-not-a-map", "zero-bytes", "empty-confirmation",
        "empty-tool-error", "confirms-a-boundary", "confirms-any-character", "confirms-chinese-no",
    ],
)  # fmt: skip
def test_bad_suite_options_are_named(tmp_path: Path, options: str, message: str) -> None:
    result = diagbot(make_suite(tmp_path, options=options))
    assert_clean(result)
    assert result.code == 2
    assert any(e.startswith(f"{tmp_path}/diagbot.yml: ") and message in e for e in result.errors), result.errors


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "true", "null"])
def test_a_bad_trials_value_is_one_plain_message(tmp_path: Path, value: str) -> None:
    """One error for the key, saying what it takes, with none of pydantic's union branch tags (found in this review
    as two errors, `suites.0.trials.literal['all','any']` and `suites.0.trials.constrained-int`; fixed since)."""
    result = diagbot(make_suite(tmp_path, options=f"    trials: {value}\n"))
    assert result.code == 2
    assert len(result.errors) == 1, result.errors
    assert "constrained-int" not in result.stderr and "literal[" not in result.stderr
    assert result.errors == [f"{tmp_path}/diagbot.yml: suites.0.trials: expected all, any or a number "
                             f"of trials from 1 to 1000, not {value}"]  # fmt: skip


@pytest.mark.parametrize(
    ("key", "path"),
    [("fixtures", "/proc/self"), ("cases", "/proc/self/environ"), ("fixtures", "link"),
     ("fixtures", "../../../../../../../../proc/self/fd"), ("cases", "/sys/kernel"), ("fixtures", "/dev/shm")],
    ids=["proc", "environ", "link-to-proc", "dotdot-proc", "sys", "dev"],
)  # fmt: skip
def test_suite_paths_into_the_kernel_are_refused(tmp_path: Path, key: str, path: str) -> None:
    root = make_suite(tmp_path)
    os.symlink("/proc/self", root / "link")
    given = "cases" if key == "cases" else "fx"
    config = (root / "diagbot.yml").read_text().replace(f"{key}: {given}", f"{key}: {path}")
    (root / "diagbot.yml").write_text(config)
    result = diagbot(root)
    assert_clean(result)
    assert result.code == 2
    assert any(f"suites.0.{key}: {path!r} resolves to " in e and "which diagbot never reads" in e
               for e in result.errors), result.errors  # fmt: skip


# --- regexes run on RE2 --------------------------------------------------------------------------------------------


def test_catastrophic_regexes_are_linear(tmp_path: Path) -> None:
    """Patterns that take exponential time under a backtracking engine, on 20 MiB of text that almost matches:
    answer checks, the tool-error-pattern over a huge result, and a schema pattern."""
    text = "a" * (20 * MIB) + "!"
    checks = [{"id": "nested", "answer_not_matches": "(a+)+$"}, {"id": "alt", "answer_not_matches": "(a|aa)*b"},
              {"id": "done", "answer_contains": ["done"]}]  # fmt: skip
    run = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"name": "t", "arguments":
            json.dumps({"q": "a" * MIB + "!"})}}]},
        {"role": "tool", "tool_call_id": "1", "content": text},
        {"role": "assistant", "content": "done " + text},
    ]  # fmt: skip
    fields: dict[str, Any] = {
        "evaluator_config": {"rule_checks": checks},
        "tool_schema": {"t": {"properties": {"q": {"type": "string", "pattern": "^(a|a)*$"}}}},
        "expected_tool_sequence": ["t"],
    }
    root = make_suite(tmp_path, {"hostile.json": case(**fields)}, {"hostile.json": run},
                      options="    tool-error-pattern: '(a+)+$'\n")  # fmt: skip
    result = evaluated(diagbot(root))
    (failed,) = result.trials()
    # Regexes read at most 1 MiB (and one character) of a text: the schema's pattern says the string is too long,
    # and on the 20 MiB answer neither `answer_not_matches` can be proven, so both fail, saying why.
    cut = "(only its first 1,048,576 characters were searched)"
    assert failed == [
        "tool_args_invalid: t (call 1): q: a string of 1,048,577 characters, too long for `pattern`",
        f"rule_failed: nested: the answer is too long to check /(a+)+$/, which looks for its end {cut}",
        f"rule_failed: alt: the answer may match /(a|aa)*b/ past the part searched {cut}",
    ]


def test_slow_path_regexes_on_a_huge_answer_are_bounded(tmp_path: Path) -> None:
    ab = bytes(b"ab"[n % 2] for n in range(256))
    answer = random.Random(0).randbytes(20 * MIB).translate(ab).decode()  # no `c`, and no period the DFA could cache
    checks = [{"id": f"r{n}", "answer_not_matches": "[ab]*a[ab]{60}c"} for n in range(10)]
    root = make_suite(tmp_path, {"hostile.json": case(evaluator_config={"rule_checks": checks})},
                      {"hostile.json": [{"role": "assistant", "content": answer}]})  # fmt: skip
    # Each regex reads the first 1 MiB of the 20 MiB answer (bounded time), and since the rest was not searched,
    # no `answer_not_matches` can pass: each fails, saying so. A search is charged by the bytes it reads times the
    # pattern's program (RE2's slow path costs that), so five fit the check's budget; the rest are not judged.
    cut = "(only its first 1,048,576 characters were searched)"
    expected = [
        f"rule_failed: r{n}: the answer may match /[ab]*a[ab]{{60}}c/ past the part searched {cut}" for n in range(5)
    ]
    expected.append(
        "rule_failed: r5: stopped after 2,000,000 comparisons, the limit for one check on one run; the case asks for "
        "more than diagbot compares (fewer expected items, policies or criteria would do) (5 criteria from this one "
        "on not judged)"
    )
    assert evaluated(diagbot(root)).trials() == [expected]


# --- JMESPath queries on a big final state ------------------------------------------------------------------------

BIG_STATE = {"s": "x" * MIB, "items": [{"items": [{"items": list(range(50))}] * 50}] * 50, "n": list(range(50_000))}
STOPPED = "stopped: it would build more than 16,777,216 array items, object members and string characters, the limit "
STOPPED += "for one query on one file; narrow the query"


@pytest.mark.parametrize(
    ("expr", "said"),
    [
        ("join('', [join('', [s,s,s,s,s,s,s,s]), join('', [s,s,s,s,s,s,s,s]), join('', [s,s,s,s])])", STOPPED),
        ("to_string([[[[[[[[[[[[[[[[[[[[@,@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@])", STOPPED),
        ("items[*].items[*].items[*][][][]",
         'expected "never", got [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, …'),
        ("sort_by(items, &to_string(@))",
         'expected "never", got [{"items": [{"items": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11…'),
        ("[[[[[[[[[[[[[[[[[[[[@,@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@] == "
         "[[[[[[[[[[[[[[[[[[[[@,@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@],@]",
         'expected "never", got true'),
        ("merge(@, @, @, @, @, @, @, @, @, @, @, @, @, @, @, @)",
         'expected "never", got {"s": "' + "x" * 52 + '…'),
        ("length(to_string(n))", 'expected "never", got 288891'),
        ("max_by(items, &length(to_string(@)))",
         'expected "never", got {"items": [{"items": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,…'),
    ],
    ids=["join-doubling", "to-string-of-shared", "flatten", "sort-by-string", "compare-shared", "merge", "numbers",
         "max-by"],
)  # fmt: skip
def test_expensive_queries_fail_their_check_within_bounds(tmp_path: Path, expr: str, said: str) -> None:
    """A query over the limit stops, saying so; one under it is answered, and its result is shown cut."""
    run = {"messages": GOOD_RUN, "final_state": BIG_STATE}
    failed = judged(tmp_path, run, final_state_check={"id": "q", "expr": expr, "equals": "never"})
    assert failed == [f"final_state_mismatch: q: {said}"]
    assert len(failed[0]) < 300


@pytest.mark.parametrize(
    ("expr", "said"),
    [
        ("floor(to_number('1e400'))", "OverflowError: cannot convert float infinity to integer"),
        ("ceil(to_number('-1e999'))", "OverflowError: cannot convert float infinity to integer"),
        ("floor(to_number('nan'))", "cannot convert float NaN to integer"),
    ],
)
def test_a_query_whose_arithmetic_fails_fails_its_check_alone(tmp_path: Path, expr: str, said: str) -> None:
    """An infinity made an integer stopped the whole run ("failed unexpectedly"); now only its check fails."""
    failed = judged(tmp_path, GOOD_RUN, final_state_check={"id": "q", "expr": expr, "equals": 1})
    assert failed == [f"final_state_mismatch: q: the query failed ({said})"]


def test_a_doubled_query_result_is_shown_bounded(tmp_path: Path) -> None:
    expr = " | ".join(["[@,@]"] * 30)
    root = make_suite(tmp_path, {"hostile.json": case(final_state_check={"id": "q", "expr": expr, "equals": 1})},
                      {"hostile.json": {"messages": GOOD_RUN, "final_state": {"s": "x" * 1000}}})  # fmt: skip
    result = evaluated(diagbot(root))
    failed_with(result, "final_state_mismatch: q: expected 1, got " + "[" * 30 + '{"s": "' + "x" * 22 + "…")


# --- JSON Schema tool_schema ---------------------------------------------------------------------------------------


def _schema_suite(tmp_path: Path, schema: Any, *arguments: Any) -> Path:
    calls = [("t", json.dumps(args)) for args in arguments or ({"a": 1},)]
    return make_suite(tmp_path, {"hostile.json": case(tool_schema={"t": schema})}, {"hostile.json": calls_run(*calls)})


def test_a_schema_on_a_big_array_is_bounded(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"enum": list(range(100))}}}}
    result = evaluated(diagbot(_schema_suite(tmp_path, schema, {"a": [5] * 9_000 + [500]})))
    (failed,) = result.trials()
    assert len(failed) == 1 and failed[0].startswith("tool_args_invalid: t (call 1): a[9000]: 500 is not one of [0, 1")
    assert result.result("hostile")["status"] == "failed"


@pytest.mark.parametrize(
    "schema",
    [{"$ref": "#"}, {"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
     {"dependentSchemas": {"a": {"$ref": "#"}}}],
    ids=["ref-self", "defs-loop", "dependent-schemas"],
)  # fmt: skip
def test_a_recursive_schema_fails_its_case_not_the_run(tmp_path: Path, schema: Any) -> None:
    """Found in this review as 'failed unexpectedly (RecursionError)' with no report at all; fixed since: the call
    fails its own check, saying the schema cannot be applied, and the good case is judged as usual."""
    failed_with(evaluated(diagbot(_schema_suite(tmp_path, schema))),
                "tool_args_invalid: t (call 1): its tool_schema cannot be applied: the schema's references nest too "
                "deeply for these arguments")  # fmt: skip


def test_a_schema_ref_to_another_document_is_never_fetched(tmp_path: Path) -> None:
    """A `$ref` to a file or URL: the call fails its own check; never read, never 'failed unexpectedly' (found in
    this review as _WrappedReferencingError with no report; fixed since)."""
    result = evaluated(diagbot(_schema_suite(tmp_path, {"$ref": "file:///etc/passwd"})))
    failed_with(result, "tool_args_invalid: t (call 1): its tool_schema cannot be applied: the reference "
                        "'file:///etc/passwd' does not resolve")  # fmt: skip
    written = "".join(p.read_text() for p in result.out.rglob("*") if p.is_file()) + result.stdout + result.stderr
    assert "root:x:" not in written


def _exponential_schema(levels: int) -> dict[str, Any]:
    defs: dict[str, Any] = {"a0": {"type": "string"}}
    for k in range(1, levels):
        defs[f"a{k}"] = {"anyOf": [{"$ref": f"#/$defs/a{k - 1}"}, {"$ref": f"#/$defs/a{k - 1}"}]}
    return {"$defs": defs, "$ref": f"#/$defs/a{levels - 1}"}


SCHEMA_STOPPED = "stopped after 2,000,000 comparisons, the limit for one check on one run"


def _stopped(result: Result) -> str:
    """The hostile case failed on its one call's schema, which stopped at the check budget; the good case passed."""
    (failed,) = evaluated(result).trials()
    assert result.result("hostile")["status"] == "failed"
    assert len(failed) == 1 and failed[0].startswith("tool_args_invalid: ") and SCHEMA_STOPPED in failed[0], failed
    return failed[0]


def test_an_exponential_schema_is_bounded(tmp_path: Path) -> None:
    """2^39 `anyOf` branches, none of which the call meets: the check stops at its budget and the call fails."""
    _stopped(diagbot(_schema_suite(tmp_path, _exponential_schema(40))))


def test_a_huge_enum_on_array_items_is_bounded(tmp_path: Path) -> None:
    schema = {"properties": {"a": {"items": {"enum": [{"k": i} for i in range(100_000)]}}}}
    _stopped(diagbot(_schema_suite(tmp_path, schema, {"a": [{"k": -1}] * 4_000})))


def test_unique_items_on_big_arrays_is_bounded(tmp_path: Path) -> None:
    """The items are distinct, but `uniqueItems` is charged a comparison per pair (50 million here): the check
    cannot finish, so the call fails saying so. It never passes unchecked."""
    schema = {"properties": {"a": {"uniqueItems": True}}}
    args = {"a": [i if i % 2 else str(i) for i in range(9_990)]}
    _stopped(diagbot(_schema_suite(tmp_path, schema, *[args] * 10)))


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        (_exponential_schema(40), [{"a": 1}]),
        ({"properties": {"a": {"items": {"enum": [{"k": i} for i in range(100_000)]}}}}, [{"a": [{"k": -1}] * 4_000}]),
        ({"properties": {"a": {"uniqueItems": True}}}, [{"a": [i if i % 2 else str(i) for i in range(9_990)]}] * 10),
    ],
    ids=["exponential", "huge-enum", "unique-items"],
)
def test_a_schema_stopped_at_the_budget_names_the_call_and_the_schema(
    tmp_path: Path, schema: dict[str, Any], arguments: list[Any]
) -> None:
    failed = _stopped(diagbot(_schema_suite(tmp_path, schema, *arguments)))
    assert failed == (
        "tool_args_invalid: t (call 1): checking it against tool_schema.t stopped after 2,000,000 comparisons, the "
        "limit for one check on one run; a simpler schema (fewer anyOf/oneOf branches or references, a shorter enum, "
        "no uniqueItems on long arrays) would do"
    )


# --- messages and outputs never crash on, or echo raw, what a pull request wrote ----------------------------------


@pytest.mark.parametrize(
    ("run", "fields", "message"),
    [
        ('[{"role":"assistant","content":"done","tool_calls":[{"id":"a","function":{"name":"\\ud800x",'
         '"arguments":"{}"}}]}]', {"available_tools": ["t"]},
         "trace_invalid: hostile.json: $: tool call 1 (in the run's order) is named '\ufffdx', which holds an "
         "invisible, control or undecodable character; no tool is named so, and no check of the tool it looks like "
         "would see the call: fix the agent or the recording that wrote the name"),
        ('{"messages":[{"role":"assistant","content":"done"}],"final_state":{"a":"\\ud800"}}',
         {"final_state_check": {"expr": "a", "equals": 1}}, 'final_state_mismatch: a: expected 1, got "\ufffd"'),
    ],
    ids=["tool-name", "final-state"],
)  # fmt: skip
def test_a_lone_surrogate_in_a_run(tmp_path: Path, run: str, fields: dict[str, Any], message: str) -> None:
    """The check fails as it would on any other text, the surrogate shown as U+FFFD (the report stays UTF-8)."""
    result = evaluated(diagbot(make_suite(tmp_path, {"hostile.json": case(**fields)}, {"hostile.json": run})))
    failed_with(result, message)


def test_a_lone_surrogate_in_a_run_that_no_check_shows(tmp_path: Path) -> None:
    run = '[{"role":"assistant","content":"done \\ud800"},{"role":"user","content":"x","name":"\\udfff"}]'
    assert judged(tmp_path, run) == []


def test_a_lone_surrogate_in_defaults_is_refused(tmp_path: Path) -> None:
    raw = {k: v for k, v in case().items() if k != "title"}
    result = diagbot(make_suite(tmp_path, {"hostile.json": {"defaults": {"title": "\ud800"}, "cases": [raw]}}))
    refused(result)
    assert any("hostile.json" in e and "defaults" in e and "lone surrogate" in e for e in result.errors)


def test_a_huge_hex_integer_in_a_case_field(tmp_path: Path) -> None:
    text = yaml_case().replace('case_version: "v1"', "case_version: 0x" + "f" * 4_000)
    result = refused(diagbot(make_suite(tmp_path, {"hostile.yaml": text})))
    assert any("hostile.yaml" in e and "case_version" in e for e in result.errors), result.errors


def test_a_huge_hex_integer_in_an_expected_value(tmp_path: Path) -> None:
    text = yaml_case(final_state_check={"expr": "a", "equals": 1}).replace('"equals": 1', '"equals": 0x' + "f" * 4_000)
    runs = {"hostile.json": {"messages": GOOD_RUN, "final_state": {"a": 2}}}
    result = refused(diagbot(make_suite(tmp_path, {"hostile.yaml": text}, runs)))
    assert result.errors == [f"{tmp_path}/cases/hostile.yaml: holds a number of about 4,816 digits at "
                             "final_state_check.equals (at most 50)"]  # fmt: skip


@pytest.mark.parametrize("where", ["case", "config"])
def test_a_huge_limit(tmp_path: Path, where: str) -> None:
    huge = "1" + "0" * 400
    if where == "case":
        text = yaml_case(evaluator_config={"rule_checks": [{"max_tool_calls": 12345}]}).replace("12345", huge)
        root = make_suite(tmp_path, {"hostile.yaml": text}, {"hostile.json": GOOD_RUN})
    else:
        root = make_suite(
            tmp_path,
            {"hostile.json": case(evaluator_config={"rule_checks": ["few"]})},
            {"hostile.json": GOOD_RUN},
            options=f"    rules:\n      few: {{max_tool_calls: {huge}}}\n",
        )
    result = diagbot(root)
    if where == "case":  # a case file diagbot cannot read: the suite is refused, naming the file and the field
        refused(result)
        assert result.errors == [f"{tmp_path}/cases/hostile.yaml: holds a number of about 400 digits at "
                                 "evaluator_config.rule_checks[0].max_tool_calls (at most 50)"]  # fmt: skip
    else:  # diagbot.yml diagbot cannot read: nothing runs
        assert_clean(result)
        assert result.code == 2
        assert result.errors == [f"{tmp_path}/diagbot.yml: holds a value diagbot cannot read (a number of about 400 "
                                 "digits at suites[0].rules.few.max_tool_calls (at most 50))"]  # fmt: skip


def test_a_trials_policy_the_runs_cannot_meet_says_why(tmp_path: Path) -> None:
    """One trial recorded where the suite asks for 3: the trial passes, the case fails saying why (exit 0: no
    baseline, no gating P0)."""
    result = diagbot(make_suite(tmp_path, options="    trials: 3\n"))
    assert_clean(result)
    assert result.code == 0, result.stderr[-3000:]
    assert (result.out / "comment.md").is_file()
    good = result.result("good")
    assert (good["status"], good["trialsPassed"], good["trialResults"], good["failedChecks"]) == (
        "failed", 1, [{"trial": "good.json", "passed": True, "failedChecks": []}],
        ["trace_missing: the suite's trials: 3 needs 3 passing trials; 1 is recorded"],
    )  # fmt: skip


def test_a_version_written_as_a_decimal_number_is_told_to_be_quoted(tmp_path: Path) -> None:
    """`dataset_version: 2` was told that "1.10 unquoted is the number 1.1", which it never wrote; that is said now
    only of a decimal number, whose digits the reading may have lost."""
    result = refused(diagbot(make_suite(tmp_path, {"v.yaml": case("c1", dataset_version=1.10, case_version=2)})))
    file = f"{tmp_path}/cases/v.yaml:1: case c1"
    assert result.errors == [
        f"{file}: 'case_version': input should be a valid string (found 2); put it in quotes to write it as a text",
        f"{file}: 'dataset_version': input should be a valid string (found 1.1); put it in quotes to write it as a "
        "text (unquoted, it is read as a number, and 1.10 becomes 1.1)",
    ]


@pytest.mark.parametrize(
    ("case_id", "shown"),
    [("x\n::error file=app.py,line=1::all tests passed\x1b[2J", '"x\\n::error file=app.py,line=1::all tests passed'
      '\\u001b[2J"'), ("x" * 2_000_000, '"' + "x" * 58 + "…")],
    ids=["control", "huge"],
)  # fmt: skip
def test_an_invalid_case_id_is_not_echoed_raw(tmp_path: Path, case_id: str, shown: str) -> None:
    result = refused(diagbot(make_suite(tmp_path, {"hostile.json": case(case_id, title=5)})))
    file = f"{tmp_path}/cases/hostile.json:1: case #1"
    assert result.errors == [
        f"{file}: 'case_id': a case_id is 1 to 200 ASCII letters, digits, '.', '_' or '-', starting with a letter "
        f"or digit, since it names the case's run file (FIXTURES/<case_id>.json); put other text in the title (found "
        f"{shown})",
        f"{file}: 'title': input should be a valid string (found 5); put it in quotes to write it as a text",
    ]
    assert not [line for line in result.stderr.splitlines() if not line.startswith(("error: ", "diagbot: "))]
    assert "\x1b" not in result.stderr
    assert len(result.stderr) < 100_000


def test_a_case_file_name_with_control_characters(tmp_path: Path) -> None:
    result = refused(diagbot(make_suite(tmp_path, {"bad\n::error::pwned\x07.yaml": "case_id: cn\n"})))
    assert result.errors == [f"{tmp_path}/cases/bad\\n::error::pwned\\u0007.yaml: a case file name with a control "
                             "character or undecodable byte; rename it"]  # fmt: skip
    assert not [line for line in result.stderr.splitlines() if not line.startswith(("error: ", "diagbot: "))]
    assert "\x07" not in result.stderr


# --- checks whose cost is a product of the case's size and the run's ----------------------------------------------

BIG_ARGUMENT = json.dumps({"a": "x" * 50_000_000})


def test_many_expected_calls_against_a_huge_argument(tmp_path: Path) -> None:
    fields: dict[str, Any] = {"expected_tool_sequence": [{"tool": "t", "args": {"a": 1}}] * 1_000,
              "evaluator_config": {"tool_sequence": {"match": "superset"}}}  # fmt: skip
    root = make_suite(tmp_path, {"hostile.json": case(**fields)}, {"hostile.json": calls_run(("t", BIG_ARGUMENT))})
    ts = "t, " * 12 + "… 988 more"
    failed_with(evaluated(diagbot(root)),
                f"tool_sequence_mismatch: expected [{ts}] (superset), calls in scope [t]: no distinct call matches "
                f'{ts}; t (call 1 in scope): a: expected 1, got "{"x" * 58}…')  # fmt: skip


def test_many_idempotency_paths_on_a_huge_argument(tmp_path: Path) -> None:
    policy = {"tool": "t", "idempotency_key": ["a"] * 1_000}
    root = make_suite(tmp_path, {"hostile.json": case(side_effect_policy=policy)},
                      {"hostile.json": calls_run(("t", BIG_ARGUMENT))})  # fmt: skip
    assert evaluated(diagbot(root)).trials() == [[]]


def test_confirmation_on_a_long_run_is_bounded(tmp_path: Path) -> None:
    policies = [{"tool": "t", "confirmation_required": True}] * 50
    run = calls_run(*[("t", "{}")] * 4_998)
    run.insert(0, {"role": "assistant", "content": "Hello."})  # the user's "hi" answers it: the hint is worked out
    root = make_suite(tmp_path, {"hostile.json": case(side_effect_policy=policies)}, {"hostile.json": run})
    hint = (
        "the default pattern wants yes, confirm, proceed, go ahead, 确认, 是的, 同意 or 可以, and no word of "
        "refusing or question beside it; a suite's confirmation-pattern sets another"
    )
    missing = [f"confirmation_missing: t (call {n}) was made without a user confirmation after the agent's last "
               f'message: the user\'s reply "hi" is not one ({hint})' for n in range(1, 6)]  # fmt: skip
    failed_with(evaluated(diagbot(root)), *missing, "confirmation_missing: and 4993 more like these")


# --- RAG checks and what the OpenTelemetry adapters quote ---------------------------------------------------------

RAG_FIELDS: dict[str, Any] = {"gold_evidence": [{"doc_id": "policy"}], "evaluation_metrics": ["citation_accuracy"]}


def test_a_citation_pattern_that_reads_on_to_the_end_of_the_answer(tmp_path: Path) -> None:
    """Each search for the next citation read the rest of the answer on RE2's slow path: 1,000 of them over a
    megabyte took 250 s for one trial. Now the searches read at most 16 MiB in all, and the check says it stopped."""
    rng = random.Random(0)
    answer = "done " + "".join(rng.choice("ab") for _ in range(1_000_000))
    pattern = r"(?P<doc_id>[ab])(?:[ab]*a[ab]{40}c)?"
    root = make_suite(tmp_path, {"hostile.json": case(**RAG_FIELDS)},
                      {"hostile.json": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": answer}]},
                      f"    citation-pattern: '{pattern}'\n")  # fmt: skip
    (failed,) = evaluated(diagbot(root)).trials()
    cited = ", ".join(dict.fromkeys(char for char in answer if char in "ab"))
    assert failed == [
        f"citation_inaccurate: citation_accuracy 0.00 < 1 (not gold evidence: {cited}); the search for citations "
        "stopped after reading 16,777,216 characters, each search for the next one counting the rest of the answer"
    ]


def test_a_huge_unknown_key_of_a_native_run_is_cut_and_not_fuzzy_matched(tmp_path: Path) -> None:
    """A 5 MB key was quoted whole (a 10 MB report per trial) and compared by difflib (2.5 GB for a 60 MB key)."""
    key = "k" * 5_000_000
    run = {"format": "diagbot-agent-trace", "version": 1, "steps": [], key: 1}
    root = make_suite(tmp_path, {"hostile.json": case()}, {"hostile.json": run})
    result = evaluated(diagbot(root))
    assert result.trials() == [
        [f"trace_invalid: hostile.json: $.{key[:1_997]}…: unknown field (known: format, version, steps, final_state, "
         "duration_ms)"]
    ]  # fmt: skip
    assert (result.out / "reports" / "ag.json").stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(TraceInvalid):
            no_unknown_keys({key * 2: 1}, ("format", "version", "steps"), "$")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40 * MIB  # the message quotes the key; difflib's tables of it took 400 MiB


def test_a_huge_near_miss_key_of_a_trace_fixture_is_not_fuzzy_matched() -> None:
    """The same class in the trace kind's typo warnings: two 40 MB keys took 1.7 GB and 8 s (0.2 GB, 0.9 s now)."""
    tracemalloc.start()
    try:
        assert fields._close("totalDurationM" + "s" * 5_000_000, ["totalDurationMs", "answer"]) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * MIB
    assert fields._close("totalDurationMS", ["totalDurationMs", "answer"]) == "totalDurationMs"


def test_arguments_written_as_json_text_are_counted_before_they_are_decoded() -> None:
    """A run file counts a call's argument string as one value; the text inside is counted when it is decoded, so
    a 2.4 MB string cannot become 1.2 million values (the call's arguments are invalid, the run is fine)."""
    call = ToolCall("lookup", "c1", json.dumps({"rows": [1] * 1_200_000}))
    assert call.args is None
    assert call.args_problem == "arguments hold 1,200,002 JSON values; diagbot decodes at most 1,000,000 per call"
    assert ToolCall("lookup", "c2", json.dumps({"rows": [1] * 1_000})).args == {"rows": [1] * 1_000}


def test_a_key_with_a_line_break_is_escaped_in_the_problem(tmp_path: Path) -> None:
    """A run's key reaches the trace_invalid path; a raw newline there would end the log line and start another
    that GitHub Actions could read as a workflow command (`::error::`)."""
    run = {"format": "diagbot-agent-trace", "version": 1, "steps": [], "x\n::error::hi\x1b[2J": 1}
    assert judged(tmp_path, run) == [
        "trace_invalid: hostile.json: $.x\\n::error::hi\\u001b[2J: unknown field (known: format, version, steps, "
        "final_state, duration_ms)"
    ]


def test_an_empty_text_to_look_for_is_refused(tmp_path: Path) -> None:
    """`answer_not_contains: [""]`, `must_not_include: [""]` and `tool_not_called: ""` loaded, and each judged
    something no run can show (every answer contains the empty text; no tool is named "")."""
    empty = [{"answer_not_contains": [""]}, {"answer_contains": {"any": ["  "]}}, {"tool_not_called": ""},
             {"tool_called": " "}]  # fmt: skip
    bad = case(evaluator_config={"rule_checks": empty}, constraints={"must_not_include": ["ok", ""]})
    result = refused(diagbot(make_suite(tmp_path, {"hostile.json": bad})))
    said = "an empty text (or only spaces) names nothing to look for; write the words or the tool's name"
    where = f"{tmp_path}/cases/hostile.json:1: case hostile"
    assert result.errors == [
        f"{where}: 'evaluator_config.rule_checks[0].answer_not_contains[0]': {said} (found \"\")",
        f"{where}: 'evaluator_config.rule_checks[1].answer_contains.any[0]': {said} (found \"  \")",
        f"{where}: 'evaluator_config.rule_checks[2].tool_not_called': {said} (found \"\")",
        f"{where}: 'evaluator_config.rule_checks[3].tool_called': {said} (found \" \")",
        f"{where}: 'constraints.must_not_include[1]': {said} (found \"\")",
    ]


def test_a_byte_order_mark_starts_a_run_file_or_a_json_case_file_unseen(tmp_path: Path) -> None:
    """Some editors start UTF-8 with one; JSON parsers refuse it, YAML does not, so only the JSON files failed."""
    bom = b"\xef\xbb\xbf"
    runs = {"hostile.json": bom + json.dumps(GOOD_RUN).encode()}
    result = evaluated(diagbot(make_suite(tmp_path, {"hostile.json": bom + json.dumps(case()).encode()}, runs)))
    assert result.result("hostile")["status"] == "passed"


# --- a key repeated in a run file ----------------------------------------------------------------------------------

_USER = '{"role": "user", "content": "refund it"}'
_CALL = (
    '{"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", '
    '"function": {"name": "refund_submit", "arguments": "{}"}}]}'
)
_NATIVE = '{"format": "diagbot-agent-trace", "version": 1, "steps": [%s]}'


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(f'{{"messages": [{_USER}, {_CALL}], "messages": [{_USER}]}}', id="two-conversations"),
        pytest.param(f'[{_USER}, {{"role": "assistant", "content": "card 4111111111111111", "content": "Done."}}]',
                     id="two-texts"),
        pytest.param(_CALL.replace('"name": "refund_submit"', '"name": "refund_submit", "name": "order_lookup"'),
                     id="two-tool-names"),
        pytest.param(_NATIVE % '{"kind": "tool_call", "tool": "refund_submit", "args": {}, "tool": "lookup"}',
                     id="native-two-tools"),
        pytest.param(f'[{_USER}, {{"role": "assistant", "content": "card 4111111111111111", "content": "x\\u003a y"}}]',
                     id="escaped-colon-making-up-for-it"),  # the colons add up: only the escape tells
        pytest.param(f'{{"input": [{_USER}], "output": [], "output": [{{"type": "message", "role": "assistant", '
                     '"content": "ok"}]}', id="responses-two-outputs"),
        pytest.param('{"resourceSpans": [], "resourceSpans": []}\n{"resourceSpans": []}', id="json-lines"),
    ],
)  # fmt: skip
def test_a_key_repeated_in_a_run_file_refuses_the_file(source: str) -> None:
    """JSON readers keep the last value of a repeated key without a word: a second `messages` hid a refund from
    tool_not_called, a second `content` a card number from answer_not_matches, a second `name` the tool called."""
    with pytest.raises(TraceInvalid, match=r"duplicate key '\w+' in the object that starts here; keep one"):
        parse_run(source.encode(), "auto")


def test_colons_in_text_and_in_escaped_arguments_are_no_repeat() -> None:
    """The cheap test counts colons: those in texts, in JSON-in-JSON arguments and written as \\u003a must not
    make a file without a repeat look like one (nor the slow reading that then runs, refuse it)."""
    doc = [
        {"role": "user", "content": 'Note: at 10:30, "a": 1'},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": "b:c", "d": {"e": 1}}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok\u003a"},
        {"role": "assistant", "content": "Done: \\\": odd"},
    ]  # fmt: skip
    for data in (json.dumps(doc).encode(), json.dumps(doc, indent=1, ensure_ascii=True).encode(),
                 json.dumps(doc).replace(": odd", "\\u003a odd").encode()):  # fmt: skip
        run = parse_run(data, "auto")
        assert (len(run.calls), run.answer[:5]) == (1, "Done:")


def test_a_key_repeated_in_json_text_inside_a_run_refuses_it() -> None:
    """OpenTelemetry records messages as JSON text in attributes: a repeat there hides as much as in the file."""
    assert embedded_json('{"role": "assistant", "parts": []}', "$.a", Quota()) == {"role": "assistant", "parts": []}
    with pytest.raises(TraceInvalid, match=r"^\$\.a: not valid JSON at line 1 column 1 \(duplicate key 'parts'"):
        embedded_json('{"parts": [{"type": "text", "content": "4111111111111111"}], "parts": []}', "$.a", Quota())


_BIG = 10**20 + 1  # past 64 bits: orjson reads such an integer as the float 1e+20


@pytest.mark.parametrize("where", ["chat-arguments", "native-args", "final-state", "json-lines"])
def test_an_integer_past_64_bits_is_read_whole_wherever_a_run_holds_it(where: str) -> None:
    """orjson reads an integer past 64 bits as a float without a word: a forbidden `amount` of 10**20 + 1 was
    compared with 1e+20 and never matched, and two amounts that differ in their last digit were one."""
    from tests.test_agent_checks import assistant_calls, chat_call, failures, make_case, tool_result

    args = {"amount": _BIG, "ids": [_BIG - 1, -_BIG], "ok": 18446744073709551615}
    if where == "chat-arguments":
        doc: Any = [{"role": "user", "content": "refund"}, assistant_calls(chat_call("c1", "refund_submit", args)),
                    tool_result("c1", "done")]  # fmt: skip
        call = parse_run(json.dumps(doc).encode(), "auto").calls[0]
        assert call.args == args and type(call.args["amount"]) is int
        forbidden = make_case(negative_behavior=[{"tool_called": {"tool": "refund_submit", "args": {"amount": _BIG}}}])
        assert [f.split(":")[0] for f in failures(forbidden, doc)] == ["rule_failed"]
    elif where == "native-args":
        doc = {"format": "diagbot-agent-trace", "version": 1,
               "steps": [{"kind": "tool_call", "tool": "refund_submit", "args": args}]}  # fmt: skip
        assert parse_run(json.dumps(doc).encode(), "auto").calls[0].args == args
    elif where == "final-state":
        doc = {"messages": [{"role": "user", "content": "x"}], "final_state": {"balance": _BIG}}
        assert parse_run(json.dumps(doc).encode(), "auto").final_state == {"balance": _BIG}
    else:
        line = json.dumps({"resourceSpans": [], "n": _BIG})
        with pytest.raises(TraceInvalid) as refused:  # read whole, then refused for its key, not its number
            parse_run((line + "\n" + line).encode(), "otlp")
        assert "1e+20" not in str(refused.value)
    digits = "9" * 51  # past what any reader of diagbot takes
    with pytest.raises(TraceInvalid, match="a number with 51 digits"):
        parse_run(f'{{"messages": [], "final_state": {{"n": {digits}}}}}'.encode(), "auto")


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("refund_submit\u200b", "holds an invisible, control or undecodable character"),
        ("refund\u00adsubmit", "holds an invisible, control or undecodable character"),
        (" refund_submit", "starts or ends with a space"),
        ("refund_submit\u3000", "starts or ends with a space"),
        ("\uff52\uff45\uff46\uff55\uff4e\uff44_submit", "is not in its composed, compatibility-folded form (NFKC "
         "reads it as 'refund_submit')"),
        ("refund_submit\ufe0f", "holds an invisible, control or undecodable character"),
        ("re\u115ffund", "holds an invisible, control or undecodable character"),
    ],
)  # fmt: skip
def test_a_call_named_as_no_tool_is_named_is_refused(name: str, why: str) -> None:
    """`refund_submit` with a zero-width space passed `tool_called: refund_submit` among what must not happen: the
    name fits no check. Ordinary names, in any script, are read."""
    from diagbot.kinds.agent.formats import parse_run
    from diagbot.kinds.agent.run import TraceInvalid

    with pytest.raises(TraceInvalid) as caught:
        parse_run(json.dumps(calls_run((name, "{}"))).encode(), "auto")
    assert str(caught.value) == (
        f"$: tool call 1 (in the run's order) is named '{one_line(name, 100)}', which {why}; no tool is named so, and "
        "no check of the tool it looks like would see the call: fix the agent or the recording that wrote the name"
    )
    for plain in ("refund_submit", "退款_提交", "get-weather.v2", "Ünïcødé"):
        assert [c.tool for c in parse_run(json.dumps(calls_run((plain, "{}"))).encode(), "auto").calls] == [plain]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_a_run_saved_in_a_wide_encoding_is_named_so(encoding: str) -> None:
    """A UTF-16 run (PowerShell's `>`) was "not valid JSON at line 1 column 2 (Expecting value)", which named
    neither the encoding nor the fix."""
    from diagbot.kinds.agent.formats import WIDE_HINT, parse_run
    from diagbot.kinds.agent.run import TraceInvalid

    with pytest.raises(TraceInvalid) as caught:
        parse_run(json.dumps(GOOD_RUN).encode(encoding), "auto")
    assert str(caught.value).endswith(WIDE_HINT) and "UTF-16 or UTF-32" in WIDE_HINT
    assert parse_run(json.dumps(GOOD_RUN).encode(), "auto").answer == "done"


TAKEN_BACK_WARNING = (
    "confirmation-pattern confirms 'Yes. Do not do it.', a reply that takes its yes back: a suite's own pattern has "
    "no refusals, so a side effect the user declined passes; match the whole reply (for example "
    r"^\s*(yes|ok|go ahead)[\s.!]*$), or remove the pattern for the default rule, which refuses such replies"
)


def test_a_confirmation_pattern_that_confirms_a_taken_back_yes_is_warned_of(tmp_path: Path) -> None:
    """The pattern `diagbot init` suggested, `^(yes|...)\\b`, passed a P0 refund whose user said "Yes. Do NOT submit
    it", and neither validate nor run said a word: a suite's own pattern has no refusals."""
    policy = {"tool": "refund", "confirmation_required": True}
    run = [
        {"role": "user", "content": "refund order A"},
        {"role": "assistant", "content": "Shall I refund order A?"},
        {"role": "user", "content": "Yes. Do NOT submit it, I changed my mind."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    unsafe = "    confirmation-pattern: '^(yes|yep|sure|ok|okay|go ahead|please do)\\b'\n"
    root = make_suite(tmp_path, {"hostile.json": case(side_effect_policy=policy)}, {"hostile.json": run}, unsafe)
    checked = diagbot(root, "validate")
    assert_clean(checked)
    assert f"warning: suite ag: {TAKEN_BACK_WARNING}" in checked.stderr.splitlines()
    result = evaluated(diagbot(root))
    assert result.report is not None
    assert TAKEN_BACK_WARNING in result.report["warnings"]  # the comment shows the report's warnings
    assert result.trials() == [[]]  # still the suite's own rule: the warning is what says it
    anchored = "    confirmation-pattern: '^\\s*(yes|yep|sure|ok|okay|go ahead|please do)[\\s.!]*$'\n"
    root = make_suite(tmp_path / "anchored", {"hostile.json": case(side_effect_policy=policy)}, {"hostile.json": run},
                      anchored)  # fmt: skip
    result = evaluated(diagbot(root))
    assert result.report is not None
    assert TAKEN_BACK_WARNING not in result.report.get("warnings", [])
    assert result.trials()[0][0].startswith("confirmation_missing: refund (call 1)")


def test_init_suggests_a_confirmation_pattern_that_refuses_a_taken_back_yes() -> None:
    template = Path(__file__).parents[1] / "diagbot" / "templates" / "init" / "agent" / "diagbot.yml"
    line = next(line for line in template.read_text().splitlines() if "# confirmation-pattern:" in line)
    options = AgentOptions.model_validate(yaml.safe_load(line.split("# ", 1)[1]))
    assert options.warnings == []
    assert options.confirmation.confirms("Sure!") and not options.confirmation.confirms("Yes. Do NOT submit it.")


def test_validate_warns_that_a_chat_suite_records_no_audit(tmp_path: Path) -> None:
    policy = {"tool": "refund", "audit_requirement": ["operator"]}
    root = make_suite(tmp_path, {"hostile.json": case(side_effect_policy=policy)}, {"hostile.json": GOOD_RUN},
                      "    trace-format: openai-chat\n")  # fmt: skip
    checked = diagbot(root, "validate")
    assert checked.code == 0
    assert (
        "case hostile: side_effect_policy.audit_requirement: the suite's runs are openai-chat, which records no "
        "audit, so every call of refund fails audit_missing; record the runs in diagbot's own trace format (a "
        "tool_call step's audit), or drop the requirement"
    ) in checked.stderr
    auto = make_suite(tmp_path / "auto", {"hostile.json": case(side_effect_policy=policy)}, {"hostile.json": GOOD_RUN})
    checked = diagbot(auto, "validate")
    assert checked.code == 0, checked.stderr
    assert "records no audit" not in checked.stderr  # auto: a native run may record one
