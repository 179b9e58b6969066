"""diagbot.yml: defaults, strictness with suggestions, and path resolution."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from diagbot.action.record import MARKER
from diagbot.core.errors import ConfigError
from diagbot.io.config import load_config, parse_config


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse_config(text, "diagbot.yml", Path("."))
    return info.value.problems


def test_no_config_means_the_default_trace_suite(tmp_path: Path) -> None:
    config = load_config(tmp_path / "diagbot.yml")
    assert [(s.name, s.kind, s.cases, s.fixtures) for s in config.suites] == [
        ("diagnosis", "trace", "cases/diagnosis-cases.json", "fixtures")
    ]
    assert config.marker_id == "diagnosis"


def test_explicit_missing_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.yml", required=True)


@pytest.mark.parametrize("target", ["/proc/self/environ", "/proc/self/status"])
def test_a_config_file_that_links_into_proc_or_dev_is_never_read(tmp_path: Path, target: str) -> None:
    """diagbot.yml as a link to /proc/self/status was read: its field names came back as unknown keys (and
    /proc/self/environ holds the token). The action refuses a config outside the workspace; the CLI did not."""
    link = tmp_path / "diagbot.yml"
    link.symlink_to(target)
    with pytest.raises(ConfigError) as caught:
        load_config(link)
    [said] = caught.value.problems
    assert said.startswith(f"{link}: the config file resolves to /") and said.endswith(
        ", which diagbot never reads; give diagbot.yml itself"
    )


def test_paths_resolve_relative_to_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub/diagbot.yml").write_text("id: evals\nsuites:\n  - {name: a, cases: c.json, fixtures: f}\n")
    config = load_config(tmp_path / "sub/diagbot.yml")
    assert config.path(config.suites[0].cases) == tmp_path / "sub/c.json"
    assert config.marker_id == "evals"


def test_typos_and_bad_values_are_all_listed() -> None:
    assert problems(
        "suites:\n - name: x\n   kind: trac\n   cases: a\n   fixture: b\nthresholds:\n  duration-pc: 3\n"
        "gate:\n  fail-on-regression: maybe\n"
    ) == [
        "diagbot.yml: suites.0.kind: unknown suite kind 'trac' (did you mean trace?); use one of agent, trace, "
        "workspace",
        "diagbot.yml: suites.0.fixtures: Field required",
        "diagbot.yml: unknown key 'suites.0.fixture' (did you mean fixtures?)",
        "diagbot.yml: unknown key 'thresholds.duration-pc' (did you mean duration-pct?)",
        "diagbot.yml: gate.fail-on-regression: Input should be a valid boolean, unable to interpret input",
    ]


def test_duplicate_suite_names_and_no_suites() -> None:
    dup = "suites:\n  - {name: a, cases: c, fixtures: f}\n  - {name: a, cases: d, fixtures: f}\n"
    assert problems(dup) == ["diagbot.yml: suites: suite names must be unique; repeated: a"]
    assert problems("suites: []\n") == ["diagbot.yml: suites: List should have at least 1 item after validation, not 0"]


def test_not_yaml_points_at_the_line() -> None:
    assert problems("suites:\n  - name: [a\n") == [
        "diagbot.yml:3:1: not valid YAML (expected ',' or ']', but got '<stream end>')"
    ]
    # a slip of indentation, in PyYAML's words, says where to look
    assert problems("suites:\n  - name: r\n    kind: agent\n   cases: c\n") == [
        "diagbot.yml:4:4: not valid YAML (expected <block end>, but found '<block mapping start>'; check this line's "
        "indentation against the lines above it (YAML nests by indentation: a key lines up with the keys beside it, "
        "and a list item's keys with its first))"
    ]


def test_the_comment_marker_id_stays_within_what_the_fork_relay_takes(tmp_path: Path) -> None:
    """Nine suites of 11-character names made a marker id of 107 characters: every pull request's run stopped
    with "failed unexpectedly" when pr.json refused it, and posted nothing. A long derived id is now shortened
    (the same suites, the same id), and an `id:` longer than the marker allows is refused where it is written."""
    suites = "".join(f"  - {{name: {n * 60}, cases: c, fixtures: f}}\n" for n in "ab")
    first = parse_config(f"suites:\n{suites}", "diagbot.yml", tmp_path).marker_id
    assert len(first) == 100 and first.startswith("a" * 60 + "+" + "b" * 22)
    assert parse_config(f"suites:\n{suites}", "diagbot.yml", tmp_path).marker_id == first
    other = parse_config(f"suites:\n{suites.replace('b' * 60, 'b' * 59 + 'c')}", "diagbot.yml", tmp_path)
    assert other.marker_id != first and len(other.marker_id) == 100
    assert re.fullmatch(MARKER, f"<!-- diagbot:{first} -->")
    assert parse_config(f"id: {'x' * 100}\nsuites:\n{suites}", "diagbot.yml", tmp_path).marker_id == "x" * 100
    [problem] = problems(f"id: {'x' * 101}\nsuites:\n{suites}")
    assert problem.startswith("diagbot.yml: id: String should match pattern"), problem
