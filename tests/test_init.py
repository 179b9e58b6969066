"""`diagbot init`: the files of each kind, the exact text it prints, the refusal to overwrite, and that what it
writes runs: in process for each kind, and from a built wheel installed outside this repository."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from diagbot import scaffold
from diagbot.cli import main
from diagbot.kinds.registry import KINDS
from tests.installed import installed
from tests.test_action import INPUTS, MINIMAL_PERMISSIONS

FILES = {
    "agent": [
        "diagbot.yml",
        "cases/agent/order_status_001.yaml",
        "cases/agent/refund_timeline_002.yaml",
        "fixtures/agent/order_status_001.json",
        "fixtures/agent/refund_timeline_002.json",
        ".github/workflows/diagbot.yml",
    ],
    "trace": [
        "diagbot.yml",
        "cases/diagnosis-cases.json",
        "fixtures/disk-full.json",
        "fixtures/payment-timeout.json",
        ".github/workflows/diagbot.yml",
    ],
    "workspace": [
        "diagbot.yml",
        "cases/workspace/latency-evidence-001/case.yaml",
        "cases/workspace/latency-evidence-002/case.yaml",
        *[
            f"fixtures/workspace/latency-evidence-00{n}/{name}"
            for n in (1, 2)
            for name in (
                "evidences/agent-runs/evidence-agent.json",
                "evidences/evidence_summary.md",
                "evidences/logs.json",
                "evidences/metrics.json",
                "workspace_evidence_report.json",
            )
        ],
        ".github/workflows/diagbot.yml",
    ],
}
FAILING = {"agent": "refund_timeline_002", "trace": "disk-full", "workspace": "latency-evidence-002"}
SUITE = {"agent": "agent", "trace": "diagnosis", "workspace": "workspace"}


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def test_there_is_a_starter_for_every_kind() -> None:
    assert sorted(scaffold.KINDS) == sorted(KINDS) == sorted(FILES)


def test_init_writes_an_agent_suite_by_default_and_says_what_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert _files(tmp_path) == set(FILES["agent"])
    assert capsys.readouterr().out == (
        "diagbot init: wrote an agent suite (6 files):\n" + "".join(f"  {name}\n" for name in FILES["agent"]) + "\n"
        "The example cases: order_status_001 passes; refund_timeline_002 fails without failing the gate, because it "
        "is P2 and only a failing P0 case fails it on its own (see the comments in diagbot.yml).\n"
        "Before the workflow runs on GitHub, set the commit it uses in .github/workflows/diagbot.yml: replace "
        "OWNER/diagbot@COMMIT_SHA with the repository and commit sha of diagbot to run.\n"
        "Pull requests from forks are gated, but their runs may not comment: the companion workflow in the README's "
        "'Fork pull requests' posts their comment and check run.\n"
        "diagbot run writes its report folders under build/: add build/ to your .gitignore.\n"
        "\n"
        "Next:\n"
        "  diagbot run --out build/baseline        # evaluate and print the PR comment; keep this run as a baseline\n"
        "  diagbot run --baseline build/baseline   # after changing a case or a run: compare with that baseline\n"
    )


def test_init_in_a_repository_on_another_branch_says_where_baselines_come_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`git init` still makes `master` in many setups, and the workflow makes baselines from pushes to main: without a
    word, no baseline would ever be made. On main, or outside a repository, nothing is said."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/master\n")
    (tmp_path / "app").mkdir()
    monkeypatch.chdir(tmp_path / "app")
    assert main(["init"]) == 0
    assert (
        "The workflow makes baselines from pushes to main, and this repository is on master: if your default branch "
        "is not main, set it in `branches: [main]` of .github/workflows/diagbot.yml.\n"
    ) in capsys.readouterr().out
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert main(["init", "again"]) == 0
    assert "this repository is on" not in capsys.readouterr().out
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/add-diagbot\n")  # a feature branch beside main: as usual
    (tmp_path / ".git" / "refs" / "heads").mkdir(parents=True)
    (tmp_path / ".git" / "refs" / "heads" / "main").write_text("0" * 40 + "\n")
    assert main(["init", "third"]) == 0
    assert "this repository is on" not in capsys.readouterr().out


def test_init_into_a_folder_makes_it_and_starts_the_next_steps_with_cd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--kind", "trace", "evals/new"]) == 0
    assert _files(tmp_path / "evals/new") == set(FILES["trace"])
    out = capsys.readouterr().out
    assert out.startswith("diagbot init: wrote a trace suite (5 files):\n  evals/new/diagbot.yml\n")
    assert "\nNext:\n  cd evals/new\n  diagbot run --out build/baseline " in out
    assert (
        "GitHub reads workflows only from .github/workflows at the repository's root: when evals/new is a folder of "
        "your repository, move the workflow there and give its diagbot step `config: evals/new/diagbot.yml`.\n"
    ) in out


def test_init_refuses_to_overwrite_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "diagbot.yml").write_text("suites: []  # mine\n")
    (tmp_path / ".github/workflows").mkdir(parents=True)
    (tmp_path / ".github/workflows/diagbot.yml").write_text("name: mine\n")
    assert main(["init", "--kind", "workspace"]) == 2
    assert capsys.readouterr().err == (
        "error: .github/workflows/diagbot.yml: exists already\n"
        "error: diagbot.yml: exists already\n"
        "error: diagbot init wrote nothing, because it never overwrites a file: move the files above away, or give "
        "another folder (diagbot init DIR)\n"
    )
    assert _files(tmp_path) == {"diagbot.yml", ".github/workflows/diagbot.yml"}
    assert (tmp_path / "diagbot.yml").read_text() == "suites: []  # mine\n"


def test_init_refuses_a_file_where_a_folder_must_be(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cases").write_text("not a folder")
    assert main(["init", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'cases'}: exists already\nerror: diagbot init")
    (tmp_path / "cases").unlink()
    (tmp_path / "file").write_text("")
    assert main(["init", str(tmp_path / "file")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {tmp_path / 'file'}: exists already\n")
    assert _files(tmp_path) == {"file"}


def test_a_file_that_appears_while_init_writes_is_kept_and_the_rest_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = scaffold.starter("agent")
    (tmp_path / "fixtures/agent").mkdir(parents=True)
    (tmp_path / "fixtures/agent/order_status_001.json").write_text("theirs")
    monkeypatch.setattr(scaffold, "conflicts", lambda target, plan: [])  # as if it appeared after the check
    with pytest.raises(scaffold.InitRefused) as refused:
        scaffold.write_starter(tmp_path, plan)
    assert refused.value.problems[0] == f"{tmp_path / 'fixtures/agent/order_status_001.json'}: exists already"
    assert _files(tmp_path) == {"fixtures/agent/order_status_001.json"}
    assert (tmp_path / "fixtures/agent/order_status_001.json").read_text() == "theirs"


def test_the_workflow_pins_a_commit_and_passes_only_declared_inputs() -> None:
    text = scaffold.starter("agent").files[scaffold.WORKFLOW].decode()
    workflow = yaml.safe_load(text)
    assert workflow["permissions"] == {}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == MINIMAL_PERMISSIONS
    (step,) = [s for s in job["steps"] if "diagbot" in s.get("uses", "")]
    assert step["uses"] == "OWNER/diagbot@COMMIT_SHA"
    assert set(step["with"]) <= set(INPUTS)
    assert "there is no tag like @v1" in text and "full 40-character sha" in text
    upload = job["steps"][-1]
    assert upload["if"] == "always()" and upload["with"]["name"] == "diagbot-report"


@pytest.mark.parametrize("kind", sorted(FILES))
def test_each_starter_validates_and_runs_with_one_failing_case_and_exit_0(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--kind", kind]) == 0
    assert main(["validate"]) == 0
    assert capsys.readouterr().out.endswith("diagbot validate: 1 suite, 0 errors, 0 warnings\n")
    assert main(["run", "--out", "build/baseline"]) == 0
    captured = capsys.readouterr()
    assert captured.err.endswith(
        "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/baseline\n"
    )
    comment = (tmp_path / "build/baseline/comment.md").read_text()
    assert comment == captured.out.removesuffix("\n")
    rate = "gating pass rate 50.0%" if kind == "agent" else "50.0%"  # an agent suite's rate is its gating cases'
    assert f"**{SUITE[kind]}** ({kind}): 1/2 cases pass ({rate}); no baseline to compare against" in comment
    report = json.loads((tmp_path / f"build/baseline/reports/{SUITE[kind]}.json").read_text())
    passed = [r["verdict"] == "pass" if kind == "workspace" else r["passed"] for r in report["results"]]
    assert [r["caseId"] for r, ok in zip(report["results"], passed, strict=True) if not ok] == [FAILING[kind]]
    # The first local baseline: the same run compared with it shows no change and passes.
    assert main(["run", "--baseline", "build/baseline", "--out", "build/next"]) == 0
    assert "no regression" in (tmp_path / "build/next/comment.md").read_text()


def test_the_agent_starters_failing_case_would_fail_the_gate_as_a_p0(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the starter's diagbot.yml says: only a failing P0 case fails the check on its own."""
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    case = tmp_path / "cases/agent/refund_timeline_002.yaml"
    case.write_text(case.read_text().replace("risk_level: P2", "risk_level: P0"))
    assert main(["run"]) == 1
    assert (
        "diagbot: 1 gating P0 case failed (failing P0: agent/refund_timeline_002); report folder build/diagbot"
    ) in capsys.readouterr().err


@pytest.mark.parametrize("kind", sorted(FILES))
def test_init_then_run_from_an_installed_wheel(kind: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Outside this repository, as a user would: the package from a built wheel (not editable), in an empty
    folder, `diagbot init --kind K` and then `diagbot run`."""
    diagbot = installed(tmp_path_factory)
    folder = tmp_path_factory.mktemp(f"user-{kind}")
    init = diagbot.run("init", "--kind", kind, cwd=folder)
    assert init.returncode == 0, init.stderr
    run = diagbot.run("run", cwd=folder)
    assert run.returncode == 0, run.stderr
    assert run.stderr == (
        "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/diagbot\n"
    )
    comment = (folder / "build/diagbot/comment.md").read_text()
    assert comment.startswith(f"<!-- diagbot:{SUITE[kind]} -->\n") and comment == run.stdout.removesuffix("\n")
    assert (
        "1/2 cases pass (gating pass rate 50.0%)" in comment if kind == "agent" else "1/2 cases pass (50.0%)" in comment
    )


def test_the_installed_wheel_is_the_package_that_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    import subprocess
    import sys

    diagbot = installed(tmp_path_factory)
    folder = tmp_path_factory.mktemp("where")
    code = "import diagbot; print(diagbot.__file__)"
    found = subprocess.run([sys.executable, "-c", code], cwd=folder, env=diagbot.env(), capture_output=True,
                           text=True, timeout=60, check=False)  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(diagbot.site)
    assert diagbot.script.read_text().startswith("#!")
    version = diagbot.run("--version", cwd=folder)
    assert (version.returncode, version.stdout) == (0, "diagbot 0.1.0\n")


def test_init_where_nothing_can_be_written_says_so_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder that cannot be made or written was "diagbot failed unexpectedly (OSError ...)"."""
    (tmp_path / "file").write_text("")
    for target, reason in [(tmp_path / "file/new", "Not a directory"), (tmp_path / ("a" * 300), "File name too long")]:
        assert main(["init", str(target)]) == 2
        assert capsys.readouterr().err == (
            f"error: {target}: cannot be written ({reason})\n"
            "error: diagbot init wrote nothing: give a folder you can write to (diagbot init DIR)\n"
        )
    assert _files(tmp_path) == {"file"}


def test_a_failure_midway_removes_the_files_and_folders_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = scaffold.starter("agent")
    opened = Path.open

    def full_disk(self: Path, *args: object, **kwargs: object) -> object:
        if self.name == "refund_timeline_002.json":
            raise OSError(28, "No space left on device", str(self))
        return opened(self, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(Path, "open", full_disk)
    with pytest.raises(scaffold.InitRefused) as refused:
        scaffold.write_starter(tmp_path / "new", plan)
    assert refused.value.problems == [
        f"{tmp_path / 'new/fixtures/agent/refund_timeline_002.json'}: cannot be written (No space left on device)",
        "diagbot init wrote nothing: give a folder you can write to (diagbot init DIR)",
    ]
    assert list(tmp_path.iterdir()) == []


def test_init_does_not_write_through_a_link_out_of_the_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A checked-out `.github` linked elsewhere had the workflow written there."""
    elsewhere, target = tmp_path / "elsewhere", tmp_path / "repo"
    elsewhere.mkdir()
    target.mkdir()
    (target / ".github").symlink_to(elsewhere, target_is_directory=True)
    (target / "cases").symlink_to(target, target_is_directory=True)  # a link that stays inside is fine
    assert main(["init", str(target)]) == 2
    assert capsys.readouterr().err == (
        f"error: {target / '.github'}: a symbolic link to a folder outside {target}\n"
        f"error: diagbot init wrote nothing, because it writes only inside {target}: remove the links above, or "
        "give another folder (diagbot init DIR)\n"
    )
    assert list(elsewhere.iterdir()) == [] and _files(target) == set()


def test_a_suite_without_a_baseline_beside_compared_ones_still_says_its_cases_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A review: the note that cases fail with nothing to compare them with went away as soon as another suite had
    a baseline, and a new suite of failing cases passed under a green "no regression"."""
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert main(["run", "--out", "build/base"]) == 0
    config = (tmp_path / "diagbot.yml").read_text()
    second = "  - name: second\n    kind: agent\n    cases: cases/agent\n    fixtures: fixtures/agent\n"
    (tmp_path / "diagbot.yml").write_text(config.replace("suites:\n", "suites:\n" + second, 1))
    capsys.readouterr()
    assert main(["run", "--baseline", "build/base", "--out", "build/now"]) == 0
    assert capsys.readouterr().err.endswith(
        "diagbot: no regression (no baseline for second, where 1 of 2 cases fail); report folder build/now\n"
    )
