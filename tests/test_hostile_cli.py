"""Hostile input to the command line and its config, driven end to end: `diagbot init`, `run` (--config, --out,
--baseline, --format json, --quiet), `validate`, `schema`, diagbot.yml, the action's INPUT_* settings, and the
terminal's colour and progress bar.

Most tests run `python -m diagbot` (or the action's entrypoint) in a child process with a timeout, its working
folder a temporary one, and pin what a user sees: the exit code and the exact message lines; a few call the
loaders in process where the promise is one message. The promises under test: a clear message, exit 2 for
unusable input, never a traceback or "failed unexpectedly", never a silent pass, never a hang, never a write
outside the output folder, and `run --format json` always valid against `diagbot schema run-outcome`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from diagbot.action.settings import Settings, SettingsError
from diagbot.io.baselines import baselines_in_archive
from diagbot.scaffold import starter, write_starter
from tests.conftest import ROOT
from tests.test_cases import problems_of
from tests.test_cli_ux import read_terminal

TIMEOUT = 60
SUITE = "suites:\n  - {name: agent, kind: agent, cases: cases/agent, fixtures: fixtures/agent}\n"
INIT_REFUSED = (
    "error: diagbot init wrote nothing, because it never overwrites a file: move the files above away, or give "
    "another folder (diagbot init DIR)\n"
)
INIT_UNWRITABLE = "error: diagbot init wrote nothing: give a folder you can write to (diagbot init DIR)\n"
VANISHED = (
    "is in the baseline but not in this run's config: a suite (or shard) that vanished cannot pass; restore it, or "
    "list it under gate.retired-suites in diagbot.yml to retire it on purpose"
)


def _environ(**extra: str) -> dict[str, str]:
    """This process's environment without the runner's and the action's variables, importing this checkout."""
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("INPUT_", "GITHUB_")) and k != "NO_COLOR"}
    return kept | {"PYTHONPATH": str(ROOT)} | extra


def diagbot(
    cwd: Path, *args: str, env: dict[str, str] | None = None, **streams: Any
) -> subprocess.CompletedProcess[str]:
    """`python -m diagbot ARGS` in `cwd`; stdout and stderr captured as text unless `streams` redirects one."""
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE} | streams
    return subprocess.run([sys.executable, "-m", "diagbot", *args], cwd=cwd, env=env or _environ(),
                          stdin=subprocess.DEVNULL, text=True, timeout=TIMEOUT, check=False, **streams)  # fmt: skip


def _started(folder: Path, config: str | bytes | None = None) -> Path:
    """`folder` with `diagbot init`'s agent suite, its diagbot.yml replaced by `config` when given."""
    write_starter(folder, starter("agent"))
    if config is not None:
        (folder / "diagbot.yml").write_bytes(config.encode() if isinstance(config, str) else config)
    return folder


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture(scope="module")
def outcome_schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    done = diagbot(tmp_path_factory.mktemp("schema"), "schema", "run-outcome")
    assert done.returncode == 0 and done.stderr == ""
    schema: dict[str, Any] = json.loads(done.stdout)
    return schema


def _outcome(text: str, schema: dict[str, Any]) -> dict[str, Any]:
    outcome: dict[str, Any] = json.loads(text)
    jsonschema.Draft202012Validator(schema).validate(outcome)
    return outcome


# --- diagbot init ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fifo", "blocked"),
    [("diagbot.yml", "repo/diagbot.yml"), ("cases/agent", "repo/cases/agent")],
    ids=["fifo-as-a-target-file", "fifo-where-a-folder-must-be"],
)
def test_init_refuses_a_fifo_in_the_way_without_hanging_on_it(tmp_path: Path, fifo: str, blocked: str) -> None:
    repo = tmp_path / "repo"
    (repo / fifo).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(repo / fifo)
    done = diagbot(tmp_path, "init", "repo")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: {blocked}: exists already\n" + INIT_REFUSED
    assert _files(repo) == sorted({fifo, *(str(p) for p in Path(fifo).parents if str(p) != ".")})


@pytest.mark.parametrize(
    ("target", "reason"),
    [("afile/sub", "Not a directory"), ("x" * 300, "File name too long")],
    ids=["below-a-file", "name-too-long"],
)
def test_init_where_no_folder_can_be_made_says_so_and_writes_nothing(tmp_path: Path, target: str, reason: str) -> None:
    (tmp_path / "afile").write_text("mine\n")
    done = diagbot(tmp_path, "init", target)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: {target}: cannot be written ({reason})\n" + INIT_UNWRITABLE
    assert _files(tmp_path) == ["afile"] and (tmp_path / "afile").read_text() == "mine\n"


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs the /dev/full device")
def test_init_into_a_device_is_refused_as_a_file_in_the_way(tmp_path: Path) -> None:
    done = diagbot(tmp_path, "init", "/dev/full")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "error: /dev/full: exists already\n" + INIT_REFUSED


def test_init_prints_a_dir_with_control_characters_escaped(tmp_path: Path) -> None:
    target = "e\x1b]0;title\x07\nx"
    done = diagbot(tmp_path, "init", target)
    assert done.returncode == 0 and (tmp_path / target / "diagbot.yml").is_file()
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    lines = done.stdout.splitlines()
    assert "  e\\u001b]0;title\\u0007\\nx/diagbot.yml" in lines  # each path written on one line, escaped
    assert not any(line.startswith("x") for line in lines)  # the newline in DIR never splits a line


# --- run --out -------------------------------------------------------------------------------------------------


LONG = "a" * 300  # a path part longer than the 255 bytes a file name may have: `exists` raises, not says False


@pytest.mark.parametrize(
    ("args", "config", "said"),
    [
        (
            ("validate",),
            {"cases": f"cases/agent/{LONG}"},
            f"suites.0.cases: 'cases/agent/{LONG}' cannot be looked at (File name too long)",
        ),
        (
            ("validate",),
            {"fixtures": f"fixtures/agent/{LONG}"},
            f"suites.0.fixtures: 'fixtures/agent/{LONG}' cannot be looked at (File name too long)",
        ),
        (("run", "-q", "--baseline", LONG, "--out", "o"), {}, f"{LONG}: cannot be looked at (File name too long)"),
        (("run", "-q", "--out", f"{LONG}/o"), {}, f"{LONG}: cannot be looked at (File name too long)"),
    ],
    ids=["cases", "fixtures", "baseline", "out"],
)
def test_a_path_part_too_long_for_a_file_name_is_named(
    tmp_path: Path, args: tuple[str, ...], config: dict[str, str], said: str
) -> None:
    """Each ended in "diagbot failed unexpectedly (OSError: [Errno 36] File name too long)", and in the action
    without a comment or a check run."""
    suite = {"name": "agent", "kind": "agent", "cases": "cases/agent", "fixtures": "fixtures/agent"} | config
    _started(tmp_path, yaml.safe_dump({"suites": [suite]}))
    done = diagbot(tmp_path, *args)
    assert done.returncode == 2, done.stderr
    assert "failed unexpectedly" not in done.stderr and "Traceback" not in done.stderr
    assert said in done.stderr


@pytest.mark.parametrize(
    "out", ["afile", "/dev/full", "build/diagbot"], ids=["a-file", "dev-full", "report-is-a-folder"]
)
def test_an_unwritable_out_is_named_with_exit_2(tmp_path: Path, out: str) -> None:
    _started(tmp_path)
    (tmp_path / "afile").write_text("mine\n")
    (tmp_path / "build/diagbot/reports/agent.json").mkdir(parents=True)
    done = diagbot(tmp_path, "run", "--out", out, "--quiet")
    assert done.returncode == 2
    assert "failed unexpectedly" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and out in done.stderr
    assert (tmp_path / "afile").read_text() == "mine\n"


def test_format_json_prints_the_outcome_even_when_out_cannot_be_written(
    tmp_path: Path, outcome_schema: dict[str, Any]
) -> None:
    _started(tmp_path)
    (tmp_path / "afile").write_text("mine\n")
    done = diagbot(tmp_path, "run", "--out", "afile", "--format", "json", "--quiet")
    assert done.returncode == 2
    outcome = _outcome(done.stdout, outcome_schema)
    assert outcome["exitCode"] == 2 and any("afile" in problem for problem in outcome["problems"])


def test_run_does_not_write_through_a_link_out_of_the_report_folder(tmp_path: Path) -> None:
    repo, elsewhere = _started(tmp_path / "repo"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (repo / "build/diagbot").mkdir(parents=True)
    (repo / "build/diagbot/reports").symlink_to(elsewhere, target_is_directory=True)
    done = diagbot(repo, "run", "--quiet")
    assert list(elsewhere.iterdir()) == []
    assert done.returncode == 2 and "build/diagbot/reports" in done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_link_or_fifo_in_place_of_an_output_file_is_replaced_not_followed(tmp_path: Path) -> None:
    repo, elsewhere = _started(tmp_path / "repo"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.txt").write_text("keep\n")
    out = repo / "build/diagbot"
    out.mkdir(parents=True)
    (out / "comment.md").symlink_to(elsewhere / "secret.txt")
    os.mkfifo(out / "summary.md")
    done = diagbot(repo, "run", "--quiet")
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert (elsewhere / "secret.txt").read_text() == "keep\n"
    for name in ("comment.md", "summary.md"):
        assert not (out / name).is_symlink() and (out / name).is_file()
    assert (out / "comment.md").read_text().startswith("<!-- diagbot:agent -->")


def test_a_suite_that_cannot_be_evaluated_leaves_no_earlier_report_behind(tmp_path: Path) -> None:
    """Its report and diff from an earlier run into the same folder stayed there, and a later `--baseline` on the
    folder read them as this run's. A link in their place is removed, not what it points at."""
    repo, elsewhere = _started(tmp_path / "repo"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.json").write_text("{}")
    assert diagbot(repo, "run", "--quiet", "--out", "first").returncode == 0
    assert diagbot(repo, "run", "--quiet", "--baseline", "first").returncode == 0
    out = repo / "build/diagbot"
    assert (out / "reports/agent.json").is_file() and (out / "diff/agent.json").is_file()
    (out / "diff/agent.json").unlink()
    (out / "diff/agent.json").symlink_to(elsewhere / "keep.json")
    for case_file in (repo / "cases/agent").iterdir():
        case_file.write_text("- not a case\n")
    done = diagbot(repo, "run", "--quiet", "--baseline", "first")
    assert done.returncode == 2
    assert _files(out) == ["comment.md", "diff", "reports", "summary.md"]
    assert (elsewhere / "keep.json").read_text() == "{}"
    # an unusable diagbot.yml writes nothing: what an earlier run wrote is removed, so nothing reads as this run's
    assert diagbot(repo, "run", "--quiet").returncode == 2
    (repo / "diagbot.yml").write_text("suites: 5\n")
    done = diagbot(repo, "run", "--quiet")
    assert done.returncode == 2 and "diagbot.yml" in done.stderr
    assert _files(out) == ["diff", "reports"]


def test_an_empty_out_is_refused(tmp_path: Path) -> None:
    _started(tmp_path)
    done = diagbot(tmp_path, "run", "--out", "", "--quiet")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "diagbot run: error: argument --out: is empty; give a path (is a variable in the command not set?)"
    )
    assert not (tmp_path / "comment.md").exists() and not (tmp_path / "reports").exists()


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs the /dev/full device")
def test_a_full_stdout_is_a_clear_error(tmp_path: Path) -> None:
    _started(tmp_path)
    with open("/dev/full", "w") as full:
        done = diagbot(tmp_path, "run", "--format", "json", "--quiet", stdout=full)
    assert done.returncode == 2
    assert done.stderr == "error: stdout cannot be written (No space left on device)\n"


@pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0, reason="makes a device node: needs root")
def test_an_output_path_that_is_a_device_is_not_replaced(tmp_path: Path) -> None:
    """`eval --output /dev/full`, run as root, replaced the device with the report (written beside it, renamed
    over it); a device at an output path is left as it is, and named."""
    import stat

    device = tmp_path / "out.json"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    done = diagbot(ROOT, "eval", "--cases", "cases/diagnosis-cases.json", "--fixtures", "fixtures", "--output",
                   str(device))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{device}: is a device, so diagbot does not write over it" in done.stderr
    assert device.is_char_device()


@pytest.mark.skipif(not Path("/dev/full").is_char_device(), reason="needs the /dev/full device")
def test_a_full_stderr_does_not_turn_a_pass_into_a_regression(tmp_path: Path) -> None:
    _started(tmp_path)
    with open("/dev/full", "w") as full:
        done = diagbot(tmp_path, "run", "--format", "json", stderr=full)
    assert json.loads(done.stdout)["exitCode"] == 0
    assert done.returncode == 0


# --- diagbot.yml -----------------------------------------------------------------------------------------------

PATTERN = "String should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'"
BAD_CONFIGS = {
    "empty": (
        "",
        "diagbot.yml: the config file is empty; list the suites under 'suites:' (see the README), or remove the "
        "file to run the built-in default suite",
    ),
    "a-list": ("- a\n- b\n", "diagbot.yml: expected a mapping with a 'suites' list"),
    "comments-only": ("# x\n", "diagbot.yml: the config file holds only comments; list the suites under 'suites:'"),
    "nul-byte": (
        SUITE + "\x00",
        "diagbot.yml: not valid YAML (unacceptable character #x0000: special characters are not allowed\\n  in "
        '"<unicode string>", position 85)',
    ),
    "not-utf8": (SUITE.encode() + b"\xff\xfe", "diagbot.yml: the config file is not UTF-8 text (byte 85)"),
    "utf16": (SUITE.encode("utf-16"), "diagbot.yml: the config file is not UTF-8 text (byte 0)"),
    "tab-indent": (
        "suites:\n\t- {name: a, cases: c, fixtures: f}\n",
        "diagbot.yml:2:1: not valid YAML (found character '\\t' that cannot start any token)",
    ),
    "huge": (
        "suites: []\n#" + "x" * (2 * 1024 * 1024) + "\n",
        "diagbot.yml: the config file is 2,097,165 bytes, over the 1,048,576-byte limit",
    ),
    "deeply-nested": (
        "a: " + "[" * 10000 + "]" * 10000 + "\n",
        "diagbot.yml: nested too deeply to be a diagbot config",
    ),
    "alias-bomb": (
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True))
        + "suites: *i\n",
        "diagbot.yml:2:8: not valid YAML (aliases (*a) are not allowed here; write the value out)",
    ),
    "python-tag": (
        "!!python/object/apply:os.system ['echo pwned']\n",
        "diagbot.yml:1:1: not valid YAML (could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object/apply:os.system')",
    ),
    "lone-surrogate": (
        'suites:\n  - {name: agent, kind: agent, cases: "\\ud800", fixtures: fixtures/agent}\n',
        "diagbot.yml: suites[0].cases holds a lone surrogate, which is not Unicode text",
    ),
    "slash-in-name": (SUITE.replace("name: agent", "name: a/b"), f"diagbot.yml: suites.0.name: {PATTERN}"),
    "dotdot-name": (SUITE.replace("name: agent", "name: '..'"), f"diagbot.yml: suites.0.name: {PATTERN}"),
    "newline-in-name": (SUITE.replace("name: agent", 'name: "a\\nb"'), f"diagbot.yml: suites.0.name: {PATTERN}"),
    "unicode-name": (SUITE.replace("name: agent", 'name: "é"'), f"diagbot.yml: suites.0.name: {PATTERN}"),
    "true-as-name": (  # a boolean, not text (`yes` is refused as YAML 1.1's true or 1.2's text)
        SUITE.replace("name: agent", "name: true"),
        "diagbot.yml: suites.0.name: Input should be a valid string",
    ),
    "duplicate-names": (
        SUITE + "  - {name: agent, kind: agent, cases: cases/agent, fixtures: fixtures/agent}\n",
        "diagbot.yml: suites: suite names must be unique; repeated: agent",
    ),
    "no-suites": ("suites: []\n", "diagbot.yml: suites: List should have at least 1 item after validation, not 0"),
    "nan-threshold": (
        SUITE + "thresholds: {tool-calls-pct: .nan}\n",
        "diagbot.yml: holds a value diagbot cannot read (nan at thresholds.tool-calls-pct, which is not a JSON number)",
    ),
    "huge-age": (
        SUITE + "gate: {baseline-max-age-days: 1e309}\n",
        "diagbot.yml: holds a value diagbot cannot read (inf at gate.baseline-max-age-days, which is not a JSON "
        "number)",
    ),
    "kernel-path": (
        SUITE.replace("cases: cases/agent", "cases: /proc/1/environ"),
        "diagbot.yml: suites.0.cases: '/proc/1/environ' resolves to /proc/1/environ, which diagbot never reads; give "
        "a path in the repository (relative to ./diagbot.yml)",
    ),
    "escape-in-path": (
        SUITE.replace("cases: cases/agent", 'cases: "cases/agent\\e[31m"'),
        "cases/agent\\u001b[31m (relative to ./diagbot.yml): case file or folder not found; fix suites.0.cases in "
        "diagbot.yml",
    ),
}


@pytest.mark.parametrize(("config", "message"), list(BAD_CONFIGS.values()), ids=list(BAD_CONFIGS))
def test_an_unusable_diagbot_yml_is_one_clear_line_and_exit_2(
    tmp_path: Path, config: str | bytes, message: str
) -> None:
    done = diagbot(_started(tmp_path, config), "validate")
    assert done.returncode == 2
    assert done.stderr == f"error: {message}\n"
    assert done.stdout in ("", "diagbot validate: 1 suite, 1 error, 0 warnings\n")  # the path problems are per suite


@pytest.mark.parametrize(
    "config", ["\ufeff" + SUITE, SUITE.replace("\n", "\r\n"), SUITE.replace("\n", "\r")], ids=["bom", "crlf", "cr"]
)
def test_a_bom_or_windows_line_ends_are_read_as_the_same_config(tmp_path: Path, config: str) -> None:
    done = diagbot(_started(tmp_path, config), "validate")
    assert (done.returncode, done.stdout, done.stderr) == (0, "diagbot validate: 1 suite, 0 errors, 0 warnings\n", "")


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (SUITE + "suites:\n  - {name: other, kind: agent, cases: cases/agent, fixtures: fixtures/agent}\n", "suites"),
        (SUITE + "gate: {fail-on-regression: true, fail-on-regression: false}\n", "fail-on-regression"),
        (SUITE.replace("{name: agent,", "{name: agent, name: other,"), "name"),
    ],
    ids=["second-suites-list", "gate-switched-off-by-a-repeat", "suite-renamed-by-a-repeat"],
)
def test_a_repeated_key_in_diagbot_yml_is_an_error(tmp_path: Path, config: str, key: str) -> None:
    done = diagbot(_started(tmp_path, config), "validate")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: diagbot.yml:") and f"not valid YAML (duplicate key '{key}' (first on line " in line


def test_a_repeated_key_in_a_case_file_is_an_error_at_its_line(tmp_path: Path) -> None:
    case = _started(tmp_path) / "cases/agent/order_status_001.yaml"
    lines = case.read_text().splitlines()
    case.write_text("\n".join([*lines, "case_version: v2", ""]))
    done = diagbot(tmp_path, "validate")
    assert done.returncode == 2
    first = lines.index("case_version: v1") + 1
    assert done.stderr == (
        f"error: cases/agent/order_status_001.yaml:{len(lines) + 1}:1: not valid YAML (duplicate key 'case_version' "
        f"(first on line {first}); keep one)\n"
    )


def test_a_repeated_key_in_a_json_case_file_is_an_error_at_its_object(tmp_path: Path) -> None:
    """JSON keeps a repeated key's last value: a second risk_level or review_status lower down would quietly
    override the one a reviewer reads. Both JSON case loaders refuse it, as YAML's do."""
    folder = _started(tmp_path)
    written = folder / "cases/agent/order_status_001.yaml"
    text = json.dumps(yaml.safe_load(written.read_text()), indent=2)
    written.unlink()
    case = folder / "cases/agent/order_status_001.json"
    case.write_text(text.replace('"metadata": {', '"metadata": {\n    "review_status": "draft",', 1))
    line = text[: text.index('"metadata": {')].count("\n") + 1
    column = text.splitlines()[line - 1].index("{") + 1
    done = diagbot(tmp_path, "validate")
    assert (done.returncode, done.stderr) == (
        2,
        f"error: cases/agent/order_status_001.json:{line}:{column}: not valid JSON (duplicate key 'review_status' in "
        "the object that starts here; keep one)\n",
    )
    case.write_text(text.replace("{", '{"risk_level": "P3", ', 1))
    assert diagbot(tmp_path, "validate").stderr == (
        "error: cases/agent/order_status_001.json:1:1: not valid JSON (duplicate key 'risk_level' in the object "
        "that starts here; keep one)\n"
    )


def test_a_repeated_key_nested_too_deeply_to_place_is_still_named() -> None:
    """json reads 450 levels; the pure-Python rescan that places a repeat runs out of stack first. The repeat is
    still the problem reported, not "nested too deeply"."""
    deep = '[{"id": "a", "traceFixture": "a.json", "title": ' + '{"k": ' * 450 + '{"x": 1, "x": 2}' + "}" * 450 + "}]"
    assert problems_of(deep, "cases.json") == [
        "cases.json:1:1: not valid JSON (duplicate key 'x' in an object nested too deeply to say where; keep one); "
        "fix the syntax and run again"
    ]


def test_a_repeated_key_in_a_trace_case_file_is_an_error() -> None:
    text = '[\n  {"id": "a", "traceFixture": "a.json"},\n  {"id": "b", "id": "a"}\n]'
    assert problems_of(text, "cases.json") == [
        "cases.json:3:3: not valid JSON (duplicate key 'id' in the object that starts here; keep one); fix the syntax "
        "and run again"
    ]


def test_a_number_of_thousands_of_digits_is_named_like_one_of_sixty(tmp_path: Path) -> None:
    sixty = diagbot(_started(tmp_path / "a", "thresholds: {tool-calls-pct: " + "9" * 60 + "}\n" + SUITE), "validate")
    assert sixty.stderr == (
        "error: diagbot.yml: holds a value diagbot cannot read (a number of about 60 digits at "
        "thresholds.tool-calls-pct (at most 50))\n"
    )
    huge = diagbot(_started(tmp_path / "b", "thresholds: {tool-calls-pct: " + "9" * 5000 + "}\n" + SUITE), "validate")
    assert huge.returncode == 2
    assert "thresholds.tool-calls-pct" in huge.stderr and "Exceeds the limit" not in huge.stderr


def test_an_unknown_key_with_a_bracket_is_named(tmp_path: Path) -> None:
    config = SUITE.replace("fixtures: fixtures/agent}", 'fixtures: fixtures/agent, "cases[1]": x}')
    done = diagbot(_started(tmp_path, config), "validate")
    assert done.returncode == 2
    assert done.stderr == "error: diagbot.yml: unknown key 'suites.0.cases[1]' (did you mean cases?)\n"


def test_a_nul_in_a_suite_path_is_called_a_nul(tmp_path: Path) -> None:
    done = diagbot(_started(tmp_path, SUITE.replace("cases: cases/agent", 'cases: "a\\0b"')), "validate")
    assert done.returncode == 2
    assert "NUL" in done.stderr and "symbolic link loop" not in done.stderr


def test_fifty_suites_run_and_the_json_outcome_lists_each(tmp_path: Path, outcome_schema: dict[str, Any]) -> None:
    suites = "".join(
        f"  - {{name: s{i}, kind: agent, cases: cases/agent, fixtures: fixtures/agent}}\n" for i in range(50)
    )
    done = diagbot(_started(tmp_path, "suites:\n" + suites), "run", "--format", "json", "--quiet")
    assert (done.returncode, done.stderr) == (0, "")
    outcome = _outcome(done.stdout, outcome_schema)
    assert [s["name"] for s in outcome["suites"]] == [f"s{i}" for i in range(50)]
    assert len(list((tmp_path / "build/diagbot/reports").iterdir())) == 50
    more = suites + "  - {name: s50, kind: agent, cases: cases/agent, fixtures: fixtures/agent}\n"
    (tmp_path / "diagbot.yml").write_text("suites:\n" + more)
    done = diagbot(tmp_path, "run", "--format", "json", "--quiet")
    assert done.returncode == 2 and "51 suites, more than the 50 a run may have" in done.stderr
    assert _outcome(done.stdout, outcome_schema)["exitCode"] == 2
    assert not list((tmp_path / "build/diagbot/reports").iterdir())  # the earlier run's reports are removed


@pytest.mark.parametrize(
    ("config", "what"), [("cases", "a folder"), ("/dev/zero", "a device")], ids=["a-folder", "a-device"]
)
def test_a_config_that_is_not_a_file_is_named_and_json_still_has_the_outcome(
    tmp_path: Path, outcome_schema: dict[str, Any], config: str, what: str
) -> None:
    _started(tmp_path)
    message = f"{config}: the config file is not a regular file (it is {what})"
    done = diagbot(tmp_path, "validate", "--config", config)
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"error: {message}\n")
    done = diagbot(tmp_path, "run", "--config", config, "--format", "json")
    assert (done.returncode, done.stderr) == (2, f"error: {message}\n")
    outcome = _outcome(done.stdout, outcome_schema)
    assert (outcome["exitCode"], outcome["config"], outcome["problems"], outcome["suites"]) == (
        2,
        config,
        [message],
        [],
    )


@pytest.mark.parametrize(
    ("args", "last"),
    [
        (
            ["run", "--format", "yaml"],
            "diagbot run: error: argument --format: invalid choice: 'yaml' (choose from 'text', 'json')",
        ),
        (
            ["run", "--tool-calls-pct", "0x10"],
            "diagbot run: error: argument --tool-calls-pct: invalid float value: '0x10'",
        ),
        (
            ["schema", "../etc/passwd"],
            "diagbot schema: error: argument name: invalid choice: '../etc/passwd' (choose from 'agent-case', "
            "'agent-report', 'agent-trace', 'run-outcome', 'trace-fixture', 'trace-report', 'workspace-case', "
            "'workspace-report')",
        ),
        (["run", "--tool-calls-pct", "nan"], "error: --tool-calls-pct: Input should be a finite number (got nan)"),
        (["run", "--duration-min-ms", "1e309"], "error: --duration-min-ms: Input should be a finite number (got inf)"),
    ],
    ids=["unknown-format", "hex-threshold", "schema-path", "nan-threshold", "infinite-threshold"],
)
def test_a_bad_flag_is_refused_with_exit_2(tmp_path: Path, args: list[str], last: str) -> None:
    done = diagbot(_started(tmp_path), *args, "--quiet") if args[0] == "run" else diagbot(tmp_path, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == last and "Traceback" not in done.stderr


# --- run --baseline --------------------------------------------------------------------------------------------


def _agent_report(folder: Path) -> dict[str, Any]:
    """The report a first run of the started agent suite writes (its --out is build/first)."""
    done = diagbot(folder, "run", "--out", "build/first", "--quiet")
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads((folder / "build/first/reports/agent.json").read_text())
    return report


def _refused_as_baseline(folder: Path, baseline: str, message: str) -> None:
    """`run --baseline` on it fails with exit 2, saying `message` alone."""
    done = diagbot(folder, "run", "--baseline", baseline, "--quiet")
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"error: {message}\n")


def test_a_baseline_of_another_kind_is_named_and_fails_with_exit_2(
    tmp_path: Path, outcome_schema: dict[str, Any]
) -> None:
    _started(tmp_path)
    made = diagbot(tmp_path, "eval", "--cases", str(ROOT / "cases/diagnosis-cases.json"), "--fixtures",
                   str(ROOT / "fixtures"), "--output", "wrong/reports/agent.json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    message = (
        "baseline for agent (wrong/reports/agent.json): is a trace report but the current suite is agent; check which "
        "file or artifact the "
        "baseline comes from"
    )
    _refused_as_baseline(tmp_path, "wrong", message)
    done = diagbot(tmp_path, "run", "--baseline", "wrong", "--quiet", "--format", "json")
    outcome = _outcome(done.stdout, outcome_schema)
    assert (done.returncode, outcome["exitCode"], outcome["conclusion"]) == (2, 2, "failure")
    assert outcome["problems"] == [message]


def test_a_folder_report_of_another_suite_is_refused_not_compared(tmp_path: Path) -> None:
    """reports/agent.json holding the report of a suite named otherwise (copied or renamed in the artifact) would
    count every case as new, so no regression could show: it is refused, by name, and the run fails with exit 2.
    A report file given alone is its suite's whatever it names, and one naming no suite is taken as the folder says."""
    report = _agent_report(_started(tmp_path))
    for name, suite in (("other", "refunds"), ("unnamed", None)):
        moved = {**report, "suite": suite} if suite else {k: v for k, v in report.items() if k != "suite"}
        (tmp_path / name / "reports").mkdir(parents=True)
        (tmp_path / name / "reports/agent.json").write_text(json.dumps(moved), encoding="utf-8")
    message = (
        "baseline for agent (other/reports/agent.json): is the report of suite 'refunds', not of agent, so its "
        "cases are not this suite's; give the report folder a diagbot run wrote (or rerun the base branch's "
        "workflow for a new baseline)"
    )
    _refused_as_baseline(tmp_path, "other", message)
    data = (tmp_path / "other/reports/agent.json").read_bytes()
    found = baselines_in_archive({"reports/agent.json": data}, ["agent"])
    assert (list(found.reports), found.filed, found.problems) == (["agent"], {"agent"}, [])
    lone = baselines_in_archive({"report.json": data}, ["agent"])  # an upload of the file alone names no suite
    assert (list(lone.reports), lone.filed, lone.problems) == (["agent"], set(), [])
    for given in ("unnamed", "other/reports/agent.json"):
        done = diagbot(tmp_path, "run", "--baseline", given, "--quiet")
        assert (done.returncode, done.stderr) == (0, ""), given


def test_a_baseline_from_a_newer_diagbot_says_upgrade(tmp_path: Path) -> None:
    report = _agent_report(_started(tmp_path))
    (tmp_path / "future/reports").mkdir(parents=True)
    (tmp_path / "future/reports/agent.json").write_text(json.dumps({**report, "schemaVersion": 999}))
    done = diagbot(tmp_path, "run", "--baseline", "future", "--quiet")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: baseline of suite agent: future/reports/agent.json: agent report schemaVersion 999 is newer than this "
        "diagbot understands (2); upgrade diagbot\n"
    )


@pytest.mark.parametrize(
    ("forge", "said"),
    [
        (lambda r: [r["results"][i].update(durationMs=1e308) for i in (0, 1)],
         "results[1].durationMs is 1e+308, larger than any number diagbot writes in a report (at most 1e+15 in "
         "size); give a report diagbot wrote"),
        (lambda r: r["results"][0].update(toolCallCount=10**49),
         "results[0].toolCallCount is 10000000000000000000000000000000000000000000000000, larger than any number "
         "diagbot writes in a report (at most 1e+15 in size); give a report diagbot wrote"),
        (lambda r: r["results"][0].update(metrics={"citation_accuracy": 5}),
         "not a readable agent report: results.0.metrics.citation_accuracy: input should be less than or equal to 1"),
        (lambda r: r["passHatK"].update({"1": -0.5}),
         "not a readable agent report: passHatK.1: input should be greater than or equal to 0"),
    ],
    ids=["durations-overflowing-the-mean", "huge-count", "metric-over-1", "negative-pass-hat-k"],
)  # fmt: skip
def test_a_baseline_of_numbers_no_report_holds_is_named(tmp_path: Path, forge: Any, said: str) -> None:
    """Two durations of 1e308 averaged to infinity, and the run ended "failed unexpectedly" with no report folder;
    a count of 10**49 and a share of 5 (500%) were compared and shown as they were."""
    report = _agent_report(_started(tmp_path))
    forge(report)
    (tmp_path / "forged/reports").mkdir(parents=True)
    (tmp_path / "forged/reports/agent.json").write_text(json.dumps(report))
    done = diagbot(tmp_path, "run", "--baseline", "forged", "--out", "build/now", "--quiet")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: baseline of suite agent: forged/reports/agent.json: {said}\n"
    assert (tmp_path / "build/now/reports/agent.json").is_file() and (tmp_path / "build/now/comment.md").is_file()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_baseline_folder_of_hostile_names_reads_only_reports_named_like_suites(tmp_path: Path) -> None:
    _started(tmp_path)
    reports = tmp_path / "base/reports"
    reports.mkdir(parents=True)
    os.mkfifo(reports / "agent.json")  # the suite's own report: would block a plain open() forever
    for name in ("..json", "a\nb.json", "-x.json", ".hidden.json", "é.json", "x" * 101 + ".json"):
        (reports / name).write_text("{")
    with open(reports / "other.json", "wb") as huge:  # a suite the config lost: named, never read
        huge.truncate(100 * 1024 * 1024)
    done = diagbot(tmp_path, "run", "--baseline", "base", "--quiet")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: baseline of suite agent: base/reports/agent.json: the report is not a regular file (it is a FIFO)\n"
        f"error: suite other {VANISHED}\n"
    )


def test_a_huge_baseline_file_is_refused_by_its_size_unread(tmp_path: Path) -> None:
    _started(tmp_path)
    with open(tmp_path / "big.json", "wb") as huge:
        huge.truncate(100 * 1024 * 1024)
    done = diagbot(tmp_path, "run", "--baseline", "big.json", "--quiet")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: baseline of suite agent: big.json: the report is 104,857,600 bytes, over the 67,108,864-byte limit (a "
        "suite of about 65,000 passing agent cases, or fewer with long failure lists, writes one that size): split the "
        "suite so that each suite's report stays under it\n"
    )


def test_an_empty_baseline_is_refused_not_a_silent_pass(tmp_path: Path) -> None:
    done = diagbot(_started(tmp_path), "run", "--baseline", "", "--quiet")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "diagbot run: error: argument --baseline: is empty; give a path (is a variable in the command not set?)"
    )


def test_a_device_as_baseline_is_not_called_missing(tmp_path: Path) -> None:
    done = diagbot(_started(tmp_path), "run", "--baseline", "/dev/zero", "--quiet")
    assert done.returncode == 2
    assert done.stderr.startswith("error: /dev/zero: ") and "not found" not in done.stderr


def test_a_baseline_report_that_links_out_of_its_folder_is_refused(tmp_path: Path) -> None:
    repo, elsewhere = _started(tmp_path / "repo"), tmp_path / "elsewhere"
    assert diagbot(repo, "run", "--out", "base", "--quiet").returncode == 0
    elsewhere.mkdir()
    (repo / "base/reports/agent.json").rename(elsewhere / "agent.json")
    (repo / "base/reports/agent.json").symlink_to(elsewhere / "agent.json")
    done = diagbot(repo, "run", "--baseline", "base", "--quiet")
    assert done.returncode == 2
    assert done.stderr == (
        "error: baseline of suite agent: base/reports/agent.json: the report is a symbolic link, which diagbot does "
        "not follow; give the report folder a diagbot run wrote\n"
    )


# --- the action's INPUT_* settings -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("max-wait-seconds", "1e309", "Input should be a finite number (got '1e309')"),
        ("max-wait-seconds", "-1", "Input should be greater than or equal to 0 (got '-1')"),
        ("max-wait-seconds", "nan", "Input should be a finite number (got 'nan')"),
        ("max-wait-seconds", "0x10", "Input should be a valid number, unable to parse string as a number (got '0x10')"),
        ("max-wait-seconds", "1e300", "Input should be less than or equal to 21600 (got '1e300')"),
        ("baseline-max-age-days", "0", "Input should be greater than 0 (got '0')"),
        ("baseline-max-age-days", "-1", "Input should be greater than 0 (got '-1')"),
        ("baseline-max-age-days", "٥", "Input should be a valid number, unable to parse string as a number (got '٥')"),
    ],
)  # fmt: skip
def test_the_entrypoint_refuses_a_bad_number_input_before_anything_runs(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "INPUT_GITHUB-TOKEN": "secret-token-value",
           "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "push", f"INPUT_{name.upper()}": value}  # fmt: skip
    done = subprocess.run([sys.executable, str(ROOT / "entrypoint.py")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT, check=False)  # fmt: skip
    assert (done.returncode, done.stderr) == (2, "")
    assert done.stdout == (
        f"::error::input '{name}' (INPUT_{name.upper()}): {message}; set it in the workflow step's `with:`\n"
    )


def test_padded_or_blank_number_inputs_are_read_as_given_or_as_the_default() -> None:
    base = {"INPUT_GITHUB-TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "push"}
    padded = Settings.from_env({**base, "INPUT_MAX-WAIT-SECONDS": " 5 ", "INPUT_BASELINE-MAX-AGE-DAYS": "\t7\n"})
    assert (padded.max_wait_seconds, padded.baseline_max_age_days) == (5.0, 7.0)
    blank = Settings.from_env({**base, "INPUT_MAX-WAIT-SECONDS": " \n", "INPUT_BASELINE-MAX-AGE-DAYS": ""})
    assert (blank.max_wait_seconds, blank.baseline_max_age_days) == (120.0, None)
    with pytest.raises(SettingsError) as info:  # an environment cannot carry a NUL; a mapping given directly can
        Settings.from_env({**base, "INPUT_MAX-WAIT-SECONDS": "5\x00"})
    assert info.value.problems == [
        "input 'max-wait-seconds' (INPUT_MAX-WAIT-SECONDS): Input should be a valid number, unable to parse string as "
        "a number (got '5\\x00'); set it in the workflow step's `with:`"
    ]


# --- the terminal ----------------------------------------------------------------------------------------------


def _on_terminal(folder: Path, *args: str, stream: str, env: dict[str, str]) -> tuple[str, str, int]:
    """`diagbot run ARGS` with `stream` (stdout or stderr) a pseudo-terminal and the other a pipe, the bar's
    one-second wait taken away: what the terminal got, what the pipe got, the exit code."""
    code = "import sys, diagbot.terminal as t; t.PROGRESS_DELAY = 0; from diagbot.cli import main; sys.exit(main())"
    primary, secondary = os.openpty()
    out, err = (secondary, subprocess.PIPE) if stream == "stdout" else (subprocess.PIPE, secondary)
    with subprocess.Popen([sys.executable, "-c", code, "run", *args], cwd=folder, env=_environ(**env),
                          stdin=subprocess.DEVNULL, stdout=out, stderr=err) as child:  # fmt: skip
        os.close(secondary)
        received = read_terminal(primary, child, TIMEOUT)
        pipe = child.stderr if stream == "stdout" else child.stdout
        assert pipe is not None
        piped = pipe.read().decode()
        status = child.wait(timeout=TIMEOUT)
    os.close(primary)
    return received.decode().replace("\r\n", "\n"), piped, status


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_json_on_a_terminal_stays_plain_json(tmp_path: Path, outcome_schema: dict[str, Any]) -> None:
    terminal, piped, status = _on_terminal(_started(tmp_path), "--format", "json", stream="stdout", env={})
    assert status == 0 and "\x1b" not in terminal
    assert _outcome(terminal, outcome_schema)["conclusion"] == "success"
    assert (
        piped
        == "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/diagbot\n"
    )


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_dumb_terminal_gets_no_escape_sequences(tmp_path: Path) -> None:
    terminal, _, status = _on_terminal(_started(tmp_path), stream="stderr", env={"TERM": "dumb"})
    assert status == 0 and terminal.endswith(
        "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/diagbot\n"
    )
    assert "\x1b" not in terminal


# --- found by review: a closed stderr, YAML values JSON cannot hold, links seen through another spelling ---------


def test_a_closed_stderr_keeps_the_exit_code(tmp_path: Path) -> None:
    """Started with file descriptor 2 closed, Python has no sys.stderr at all: nothing is shown, the verdict
    stands (0 for the passing starter, 2 for a config that is not there)."""
    _started(tmp_path)
    # fd 2 is closed by a Python that then execs diagbot, not by a preexec_fn (see test_hostile_agent.LIMITED)
    closing = "import os, sys; os.close(2); os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
    command = [sys.executable, "-c", closing, "-m", "diagbot", "run", "--out", "build/x"]
    passed = subprocess.run(command, cwd=tmp_path, env=_environ(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=TIMEOUT, check=False, close_fds=True)  # fmt: skip
    refused = subprocess.run([*command, "--config", "nope.yml"], cwd=tmp_path, env=_environ(),
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, timeout=TIMEOUT,
                             check=False)  # fmt: skip
    assert (passed.returncode, refused.returncode) == (0, 2)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("!!set {? a, ? b}", "(a YAML set at suites[0].rules.r.answer_contains, which JSON cannot hold; write a "
                             "list or a mapping)"),
        ("!!set {? " + "1" * 5000 + "}", "diagbot.yml:6:43: not valid YAML (the key " + "1" * 39 + "… is a number in "
                                          "YAML, but keys must be text as in JSON"),
        ("!!binary aGk=", "(a YAML binary value at suites[0].rules.r.answer_contains, which JSON cannot hold; "),
        ("!!omap [a: 1]", "(a YAML pair (!!omap or !!pairs) at suites[0].rules.r.answer_contains[0], which JSON "),
        ("!!int 12abc", "diagbot.yml:6:34: not valid YAML ('12abc' is not an integer)"),
    ],
    ids=["set", "set-of-a-huge-number", "binary", "omap", "int-that-is-not"],
)  # fmt: skip
def test_yaml_values_json_cannot_hold_are_refused(tmp_path: Path, value: str, message: str) -> None:
    config = ("suites:\n  - name: agent\n    kind: agent\n    cases: cases/agent\n    fixtures: fixtures/agent\n"
              f"    rules: {{r: {{answer_contains: {value}}}}}\n")  # fmt: skip
    done = diagbot(_started(tmp_path, config), "validate")
    assert done.returncode == 2 and message in done.stderr, done.stderr
    assert "object at 0x" not in done.stderr


def test_the_link_guard_sees_the_working_folder_through_the_shells_spelling(tmp_path: Path) -> None:
    """The working folder reached through a link ($PWD is the link, the system's name is the real folder): an
    absolute --out spelt through $PWD is still inside, so a committed `build` link is refused."""
    real, elsewhere = _started(tmp_path / "real"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "logical").symlink_to(real, target_is_directory=True)
    (real / "build").symlink_to(elsewhere, target_is_directory=True)
    logical = tmp_path / "logical"
    done = diagbot(
        real, "run", "--out", str(logical / "build/diagbot"), "--quiet", env={**_environ(), "PWD": str(logical)}
    )
    assert done.returncode == 2 and "build: is a symbolic link" in done.stderr, done.stderr
    assert list(elsewhere.iterdir()) == []


def test_a_relative_out_is_checked_along_its_whole_spelling(tmp_path: Path) -> None:
    """`--out ../linked/out` is checked from the working folder along what was written, `..` included: a link on
    the way is refused even outside the checkout (the same folder written as an absolute path outside the
    checkout is the user's to choose, and is written)."""
    repo, elsewhere = _started(tmp_path / "repo"), tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere, target_is_directory=True)
    done = diagbot(repo, "run", "--out", "../linked/out", "--quiet")
    assert done.returncode == 2 and done.stderr.startswith("error: ../linked: is a symbolic link"), done.stderr
    done = diagbot(repo, "run", "--out", str(tmp_path / "linked" / "out"), "--quiet")
    assert done.returncode == 0 and (elsewhere / "out" / "comment.md").is_file(), done.stderr


def test_a_baseline_with_no_case_in_common_is_named(tmp_path: Path) -> None:
    """A newcomer compared their own cases with the starter's baseline: "✅ no regressions" and 0.0% → 0.0%, with
    not a word that nothing had been compared."""
    _started(tmp_path)
    assert diagbot(tmp_path, "run", "--out", "build/base", "--quiet").returncode == 0
    for path in [*(tmp_path / "cases" / "agent").iterdir(), *(tmp_path / "fixtures" / "agent").iterdir()]:
        text = path.read_text(encoding="utf-8").replace("_001", "_101").replace("_002", "_102")
        path.unlink()
        path.with_name(path.name.replace("_001", "_101").replace("_002", "_102")).write_text(text, encoding="utf-8")
    done = diagbot(tmp_path, "run", "--baseline", "build/base", "--quiet")
    warning = (
        "warning: suite agent has no case in common with its baseline (none of its 2 cases is there with the same "
        "case_id and case_version): nothing was compared, so nothing could regress; make the baseline again from "
        "these cases (a run with --out, then --baseline that folder; in the action, a push to the base branch)"
    )
    assert done.returncode == 0 and warning in done.stderr.splitlines(), done.stderr
    comment = (tmp_path / "build/diagbot/comment.md").read_text()
    assert "has no case in common with its baseline" in comment
    # and the suite's line gives the cases that pass, not "pass rate 0.0% → 0.0%" over no case
    assert (
        "**agent** (agent): 1/2 cases pass; no case in common with the baseline, so no pass rate is compared" in comment
    )
    assert "0.0% → 0.0%" not in comment


def test_a_baseline_whose_cases_look_renamed_is_not_said_to_compare_nothing(tmp_path: Path) -> None:
    """Every baseline id differed only in case: the warning said nothing could regress, and the next line named the
    regression of a renamed case that fails now."""
    _started(tmp_path)
    assert diagbot(tmp_path, "run", "--out", "build/base", "--quiet").returncode == 0
    stored = tmp_path / "build/base/reports/agent.json"
    stored.write_text(re.sub(r'"caseId": "(\w)', lambda m: f'"caseId": "{m[1].upper()}', stored.read_text()), "utf-8")
    for path in (tmp_path / "fixtures" / "agent").iterdir():  # every run now answers nothing: each case fails
        path.write_text(json.dumps([{"role": "assistant", "content": "?"}]), encoding="utf-8")
    done = diagbot(tmp_path, "run", "--baseline", "build/base", "--quiet")
    assert done.returncode == 1, done.stderr
    assert (
        "warning: suite agent has no case in common with its baseline (none of its 2 cases is there with the same "
        "case_id and case_version): only cases that look renamed from the baseline's were compared (their items say "
        "which); make the baseline again from these cases (a run with --out, then --baseline that folder; in the "
        "action, a push to the base branch)"
    ) in done.stderr.splitlines(), done.stderr
    assert "nothing could regress" not in done.stderr


def test_a_case_that_lost_its_checks_is_in_common_with_its_baseline() -> None:
    """Not compared (checked on one side only), but there with the same id and version: no 'nothing in common'
    warning, whose advice to make the baseline again would accept the lost checks."""
    from diagbot.core.diff import ItemType, item, summarize
    from diagbot.pipeline import _nothing_in_common

    lost = item(ItemType.REGRESSION, "c1", "status", "passed", "unchecked", "passed → unchecked")
    assert not _nothing_in_common(summarize([lost], (1, 1, 1, 0), (1.0, 0.0), 0))
    added = item(ItemType.CHANGED, "c2", "presence", None, "added", "case added")
    assert _nothing_in_common(summarize([added], (1, 1, 1, 0), (0.0, 0.0), 0))
    assert not _nothing_in_common(summarize([added], (1, 1, 1, 0), (0.0, 0.0), None))  # other kinds: no count


def test_a_baseline_with_a_negative_duration_is_refused(tmp_path: Path) -> None:
    """A stored report's durations and counts are never negative; a forged -1e9 ms made every run look slower."""
    repo = _started(tmp_path)
    assert diagbot(repo, "run", "--out", "base", "--quiet").returncode == 0
    stored = repo / "base/reports/agent.json"
    report = json.loads(stored.read_text(encoding="utf-8"))
    report["results"][0]["durationMs"] = -1e9
    stored.write_text(json.dumps(report), encoding="utf-8")
    done = diagbot(repo, "run", "--baseline", "base", "--quiet")
    assert done.returncode == 2
    assert done.stderr == (
        "error: baseline of suite agent: base/reports/agent.json: not a readable agent report: results.0.durationMs: "
        "input should be greater than or equal to 0\n"
    )


def test_a_config_of_thousands_of_unknown_keys_says_the_first_hundred(tmp_path: Path) -> None:
    """8 suites of 12,000 unknown keys printed 96,000 error lines: on a runner, as many annotations."""
    keys = ", ".join(f"k{j}: 1" for j in range(1_000))
    config = "suites:\n" + "".join(f"  - {{name: s{i}, kind: trace, cases: c.json, fixtures: f, {keys}}}\n"
                                   for i in range(3))  # fmt: skip
    (tmp_path / "diagbot.yml").write_text(config)
    done = diagbot(tmp_path, "run", "--quiet")
    lines = done.stderr.splitlines()
    assert (done.returncode, len(lines)) == (2, 101)
    assert lines[0] == "error: diagbot.yml: unknown key 'suites.0.k0'"
    assert lines[-1] == "error: ... and 2,900 more problems in the config; fix these first"


def test_render_shows_ten_baseline_warnings_and_refuses_an_unreadable_age(tmp_path: Path) -> None:
    """2,000 warnings in a --baseline-info file filled the comment (every section cut for them), and an ageDays of
    1e308 was shown as a number of 309 digits."""
    _agent_report(_started(tmp_path))
    info = tmp_path / "info.json"
    info.write_text(json.dumps({"source": "file", "warnings": [f"warning {i}" for i in range(2_000)]}))
    done = diagbot(tmp_path, "render", "--current", "build/first/reports/agent.json", "--baseline-info", str(info),
                   "--output", "c.md")  # fmt: skip
    assert done.returncode == 0, done.stderr
    comment = (tmp_path / "c.md").read_text()
    assert comment.count("> [!WARNING]") == 11 and "warning 9\n" in comment and "warning 10\n" not in comment
    assert "> ... and 1990 more warnings about the baseline\n" in comment
    info.write_text(json.dumps({"source": "artifact", "ageDays": 1e308}))
    done = diagbot(tmp_path, "render", "--current", "build/first/reports/agent.json", "--baseline-info", str(info),
                   "--output", "c.md")  # fmt: skip
    assert (done.returncode, done.stderr) == (
        2, f"error: {info}: not readable baseline info (ageDays: Input should be less than or equal to 1000000)\n"
    )  # fmt: skip
