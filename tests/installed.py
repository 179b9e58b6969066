"""diagbot as a user outside this repository gets it: a wheel built from the package, installed (not editable)
into a folder of its own, run through the `diagbot` script that the install made.

Offline: the wheel is built with the setuptools of the development lock (`--no-build-isolation`), and installed
with `--no-deps --no-index`; the dependencies are the test environment's own. Built once per test session.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

_BUILT: dict[str, Installed] = {}


@dataclass(frozen=True)
class Installed:
    wheel: Path
    site: Path  # the install's target folder: the package, its metadata, and bin/diagbot

    @property
    def script(self) -> Path:
        return self.site / "bin" / "diagbot"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment a child runs in: the installed copy first on the path, the repository nowhere."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "COV_", "COVERAGE"))}
        path = f"{self.site / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        return {**env, "PYTHONPATH": str(self.site), "PATH": path, "NO_COLOR": "1", **extra}

    def run(self, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.script), *args], cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=timeout,
            check=False,
        )  # fmt: skip


def _pip(*args: str, cwd: Path) -> None:
    command = [sys.executable, "-m", "pip", *args, "--disable-pip-version-check", "--no-index", "--quiet"]
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def installed(factory: pytest.TempPathFactory) -> Installed:
    """Build the wheel from a copy of the package's files (so the build leaves nothing in the repository), then
    install it into a fresh folder."""
    if "wheel" not in _BUILT:
        work = factory.mktemp("wheel")
        source = work / "source"
        source.mkdir()
        shutil.copytree(ROOT / "diagbot", source / "diagbot", ignore=shutil.ignore_patterns("__pycache__"))
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, source / name)
        _pip("wheel", "--no-deps", "--no-build-isolation", "--wheel-dir", str(work / "dist"), "./source", cwd=work)
        (wheel,) = (work / "dist").glob("diagbot-*.whl")
        _pip("install", "--no-deps", "--target", str(work / "site"), str(wheel), cwd=work)
        _BUILT["wheel"] = Installed(wheel, work / "site")
    return _BUILT["wheel"]
