"""The README says what is true: its Quick start runs as written (with the package installed from a built wheel
in place of the commit it names), and its example comment is what `make run` renders today."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from diagbot import __version__
from diagbot.cli import main
from tests.conftest import ROOT
from tests.installed import installed

README = (ROOT / "README.md").read_text(encoding="utf-8")

# `pip` in the Quick start, played by a shell function: the README's own line runs, and what it installs is the
# wheel built from this checkout instead of the commit it names (the tests have no network but the registries).
STAND_IN = """
pip() {
  [ "$1" = install ] && [ "$#" = 2 ] || { echo "stand-in: only 'pip install ONE_THING' is known: $*" >&2; return 2; }
  case "$2" in git+https://*@*|*.whl) ;; *) echo "stand-in: not a commit or a wheel: $2" >&2; return 2;; esac
  "$DIAGBOT_PYTHON" -m pip install --no-deps --no-index --disable-pip-version-check --quiet --target "$SITE" "$WHEEL"
}
"""


def section(title: str) -> str:
    match = re.search(rf"^(#+) {re.escape(title)}\n", README, re.M)
    assert match, f"README has no '{title}' section"
    end = re.search(rf"^#{{1,{len(match.group(1))}}} ", README[match.end() :], re.M)
    return README[match.end() : match.end() + end.start() if end else len(README)]


def fenced(text: str, language: str) -> str:
    match = re.search(rf"^```{language}\n(.*?)^```$", text, re.M | re.S)
    assert match, f"no ```{language} block"
    return match.group(1)


def test_the_quick_start_runs_as_written(tmp_path_factory: pytest.TempPathFactory) -> None:
    commands = fenced(section("Quick start"), "sh")
    lines = [line.split("#")[0].strip() for line in commands.splitlines()]
    assert [line.split()[:2] for line in lines] == [["pip", "install"], ["diagbot", "init"], ["diagbot", "run"],
                                                     ["diagbot", "run"]]  # fmt: skip
    package = installed(tmp_path_factory)
    folder = tmp_path_factory.mktemp("newcomer")
    site = tmp_path_factory.mktemp("site")
    script = f'set -euo pipefail\n{STAND_IN}\n{commands}\necho "diagbot was $(command -v diagbot)"\n'
    env = package.env(SITE=str(site), WHEEL=str(package.wheel), DIAGBOT_PYTHON=sys.executable)
    env |= {"PYTHONPATH": str(site), "PATH": f"{site / 'bin'}:{env['PATH']}"}  # the README's install, not ours
    done = subprocess.run(["bash", "-c", script], cwd=folder, env=env, capture_output=True, text=True, timeout=300,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith(f"diagbot was {site / 'bin' / 'diagbot'}")
    assert done.stdout.startswith("diagbot init: wrote an agent suite (6 files):\n")
    assert (folder / "diagbot.yml").is_file() and (folder / ".github/workflows/diagbot.yml").is_file()
    assert (folder / "build/baseline/reports/agent.json").is_file()
    second = (folder / "build/diagbot/comment.md").read_text(encoding="utf-8")
    assert "Compared against the baseline `build/baseline`" in second
    assert done.stderr.splitlines()[-2:] == [
        "diagbot: no regression (nothing compared: no baseline; 1 of 2 cases fail); report folder build/baseline",
        "diagbot: no regression; report folder build/diagbot",
    ]


def test_the_readme_pins_a_commit_until_there_is_a_release() -> None:
    assert "OWNER/diagbot@v1 " not in README and "uses: OWNER/diagbot@v1" not in README
    workflow = fenced(section("The workflow"), "yaml")
    assert "- uses: OWNER/diagbot@COMMIT_SHA" in workflow
    assert "pin the action to the full 40-character sha" in section("Using it as a GitHub Action")


def _squeezed(line: str) -> str:
    return re.sub(r"-{3,}", "---", " ".join(line.split()))


def test_the_example_comment_is_what_make_run_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every line of the README's example is in the real comment, in order; a row the README shortens with `...`
    must begin as the real one does. Only the current commit differs."""
    monkeypatch.chdir(ROOT)
    assert main(["run", "--baseline", "examples/baseline", "--out", str(tmp_path), "--no-fail"]) == 0
    real = [_squeezed(line) for line in (tmp_path / "comment.md").read_text(encoding="utf-8").splitlines()]
    example = fenced(section("An example comment"), "markdown")
    at = 0
    for line in example.splitlines():
        shown = _squeezed(line)
        if not shown or shown == "...":
            continue
        if shown.startswith("Current: "):
            assert re.fullmatch(rf"Current: `[0-9a-f]{{7}}` · diagbot {re.escape(__version__)}", shown)
            shown = re.sub(r"`[0-9a-f]{7}`", "`", shown)
            found = next(i for i, r in enumerate(real[at:], at) if re.sub(r"`[^`]*`", "`", r, count=1) == shown)
        elif "..." in shown:
            prefix = shown.split("...")[0].rstrip()
            found = next((i for i, r in enumerate(real[at:], at) if r.startswith(prefix)), -1)
        else:
            found = real.index(shown, at) if shown in real[at:] else -1
        assert found >= 0, f"the README's example comment has a line that `make run` does not print: {line!r}"
        at = found + 1
