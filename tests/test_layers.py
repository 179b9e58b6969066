"""The package's layers hold (import-linter contracts in pyproject.toml), and the check would catch a breach."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT = [str(Path(sys.executable).parent / "lint-imports")]


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "NO_COLOR": "1"}
    return subprocess.run(LINT, cwd=root, capture_output=True, text=True, env=env, timeout=120, check=False)


def test_the_layers_hold() -> None:
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("core/text.py", "import diagbot.pipeline", "layers"),
        ("kinds/trace/checks.py", "import diagbot.kinds.workspace.judge", "independent"),
        ("render/markdown.py", "import diagbot.github.port", "only the action talks to GitHub"),
    ],
    ids=["core-imports-pipeline", "kind-imports-kind", "render-imports-github"],
)
def test_a_lower_layer_importing_a_higher_one_is_caught(tmp_path: Path, module: str, line: str, contract: str) -> None:
    shutil.copytree(ROOT / "diagbot", tmp_path / "diagbot", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "diagbot" / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout and contract in result.stdout
