"""The action's contract: action.yml, the settings object, the README and the dogfooding workflows agree.

Every input of action.yml is read by `Settings` (as `INPUT_<NAME>`, hyphens kept) and documented in the README's
inputs table; every output is written by the bot and documented; nothing reads an `INPUT_` that is not declared;
the workflows pass only declared inputs to `uses: ./` and ask for the minimal permissions.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from diagbot.action.settings import Settings
from tests.conftest import ROOT

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
INPUTS: dict[str, dict[str, Any]] = ACTION["inputs"]
OUTPUTS: dict[str, dict[str, Any]] = ACTION["outputs"]
README = (ROOT / "README.md").read_text(encoding="utf-8")
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
MINIMAL_PERMISSIONS = {"contents": "read", "actions": "read", "pull-requests": "write", "checks": "write"}


def env_name(input_name: str) -> str:
    """The runner's mangling (actions/runner Handler.cs): spaces to `_`, upper-cased, hyphens kept."""
    return "INPUT_" + input_name.replace(" ", "_").upper()


def settings_inputs() -> dict[str, Any]:
    """INPUT_ alias -> field, as Settings.from_env reads them."""
    return {f.alias: f for f in Settings.model_fields.values() if f.alias is not None and f.alias.startswith("INPUT_")}


def readme_section(title: str) -> str:
    """The text under a README heading, up to the next heading of the same or a higher level."""
    match = re.search(rf"^(#+) {re.escape(title)}$", README, re.M)
    assert match, f"README has no '{title}' section"
    level = len(match.group(1))
    end = re.search(rf"^#{{1,{level}}} ", README[match.end() :], re.M)
    return README[match.end() : match.end() + end.start() if end else len(README)]


def table_names(section: str) -> set[str]:
    """The first-column names of a Markdown table's rows: | `name` | ..."""
    return set(re.findall(r"^\|\s*`([a-z0-9-]+)`\s*\|", section, re.M))


def test_action_metadata() -> None:
    assert ACTION["name"] and ACTION["description"]
    assert set(ACTION["branding"]) == {"icon", "color"}
    assert ACTION["runs"] == {"using": "docker", "image": "Dockerfile"}
    for name, spec in {**INPUTS, **OUTPUTS}.items():
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name), f"{name} is not kebab-case"
        assert spec.get("description"), f"{name} has no description"


def test_every_input_is_read_by_settings_and_nothing_else_is() -> None:
    declared = {env_name(name) for name in INPUTS}
    assert declared == set(settings_inputs())


def test_no_code_reads_an_undeclared_input() -> None:
    declared = {env_name(name) for name in INPUTS}
    sources = [*sorted((ROOT / "diagbot").glob("*.py")), ROOT / "entrypoint.py"]
    for source in sources:
        for name in re.findall(r"INPUT_[A-Z][A-Z0-9_-]*", source.read_text(encoding="utf-8")):
            assert name in declared, f"{source.name} reads {name}, which action.yml does not declare"


def test_input_defaults_match_settings() -> None:
    """A non-empty action default must be the settings default; an empty one lets settings/diagbot.yml decide."""
    fields = settings_inputs()
    assert INPUTS["github-token"]["default"] == "${{ github.token }}"
    for name, spec in INPUTS.items():
        default = str(spec.get("default", ""))
        if name == "github-token" or default == "":
            continue
        field_default = fields[env_name(name)].default
        assert default == str(getattr(field_default, "value", field_default)).removesuffix(".0"), name


def test_action_defaults_validate() -> None:
    """The environment the runner builds from action.yml's defaults alone is valid."""
    env = {env_name(name): str(spec.get("default", "")) for name, spec in INPUTS.items()}
    env.update({"INPUT_GITHUB-TOKEN": "t", "GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "pull_request"})
    settings = Settings.from_env(env)
    assert settings.thresholds == {}


def test_outputs_are_the_ones_the_bot_writes() -> None:
    source = (ROOT / "diagbot" / "action" / "bot.py").read_text(encoding="utf-8")
    start = source.index("def _outputs(")
    body = source[start : source.index("\ndef ", start + 1)]
    assert set(re.findall(r'^\s+"([a-z-]+)":', body, re.M)) == set(OUTPUTS)


@pytest.mark.parametrize("kind", ["Inputs", "Outputs"])
def test_readme_documents_every_input_and_output(kind: str) -> None:
    section = readme_section("Using it as a GitHub Action")
    assert f"### {kind}\n" in section
    documented = table_names(readme_section(kind))
    declared = set(INPUTS if kind == "Inputs" else OUTPUTS)
    assert declared - documented == set(), f"not in the README's {kind.lower()} table"
    assert documented - declared == set(), f"in the README's {kind.lower()} table but not in action.yml"


LOCAL_ACTION = ("./", "./.diagbot-action")  # the checkout itself, or the action checked out beside it


def local_action_steps(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        step for job in workflow["jobs"].values() for step in job.get("steps", []) if step.get("uses") in LOCAL_ACTION
    ]


def test_a_dispatched_rerun_runs_the_action_of_the_workflow_s_own_commit() -> None:
    """A workflow_dispatch rerun of a pull request checks out its head: `uses: ./` built a fork's Dockerfile with
    this job's write permissions. The action comes from a checkout of the workflow's own commit (no `ref`)."""
    main = yaml.safe_load((ROOT / ".github/workflows/diagbot.yml").read_text(encoding="utf-8"))
    [steps] = [job["steps"] for job in main["jobs"].values()]
    [own] = [s for s in steps if s.get("with", {}).get("path") == ".diagbot-action"]
    assert own["uses"].startswith("actions/checkout@") and "ref" not in own["with"]
    assert [s["uses"] for s in local_action_steps(main)] == ["./.diagbot-action"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_passes_only_declared_inputs(path: Path) -> None:
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    steps = local_action_steps(workflow)
    assert steps, f"{path.name} does not run the action"
    for step in steps:
        unknown = set(step.get("with", {})) - set(INPUTS)
        assert unknown == set(), f"{path.name} passes undeclared inputs {unknown}"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_permissions_are_minimal(path: Path) -> None:
    workflow = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert workflow.get("permissions") == {}, "grant nothing at workflow level; each job asks for what it needs"
    for name, job in workflow["jobs"].items():
        assert job.get("permissions") == MINIMAL_PERMISSIONS, f"job {name}"


def test_workflows_cover_the_events() -> None:
    by_name = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in WORKFLOWS}
    main, companion = by_name["diagbot.yml"], by_name["diagbot-comment.yml"]
    on = main[True]  # PyYAML reads the bare key `on` as a boolean
    assert set(on) == {"pull_request", "push", "workflow_dispatch"}
    assert on["push"]["branches"] == ["main"]
    assert "pr-number" in on["workflow_dispatch"]["inputs"]
    upload = [s for j in main["jobs"].values() for s in j["steps"] if "upload-artifact" in s.get("uses", "")]
    assert len(upload) == 1 and upload[0]["if"] == "always()" and upload[0]["with"]["name"] == "diagbot-report"
    run = companion[True]["workflow_run"]
    assert run == {"workflows": [main["name"]], "types": ["completed"]}
    steps = local_action_steps(companion)
    assert [s["with"].get("mode") for s in steps] == ["comment"]
    # The privileged workflow never checks out PR code: no ref/repository override on checkout.
    for job in companion["jobs"].values():
        for step in job["steps"]:
            if "actions/checkout" in step.get("uses", ""):
                assert not {"ref", "repository"} & set(step.get("with", {}))


def test_dockerfile_shape() -> None:
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    instructions = [line.split()[0] for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    assert instructions[0] == "FROM" and re.search(r"^FROM debian:bookworm-slim$", text, re.M)
    assert "USER" not in instructions
    assert text.index("requirements.lock") < text.index("COPY diagbot/")
    assert re.search(r'^ENTRYPOINT \["/opt/diagbot/bin/python", "/action/entrypoint.py"\]$', text, re.M)
