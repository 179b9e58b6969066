"""`diagbot init`: a working starting point for one suite kind, written from the templates shipped in the package
(`templates/init/<kind>/`, plus the GitHub workflow): a diagbot.yml, one passing and one failing example case
with its recorded run, and `.github/workflows/diagbot.yml`. It never overwrites a file: when any of them exists,
nothing is written."""

from __future__ import annotations

import contextlib
import os
import shlex
from dataclasses import dataclass
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path, PurePosixPath

from diagbot.core.errors import DiagbotError
from diagbot.core.text import with_article
from diagbot.core.values import one_line

KINDS = ("agent", "trace", "workspace")
INIT_KIND = "agent"  # any tool-calling agent's OpenAI messages: what a newcomer most likely has
WORKFLOW = PurePosixPath(".github/workflows/diagbot.yml")
BASELINE = "build/baseline"

EXAMPLES = {  # what `diagbot run` will show, and why the failing case does not fail it
    "agent": "order_status_001 passes; refund_timeline_002 fails without failing the gate, because it is P2 and "
    "only a failing P0 case fails it on its own",
    "trace": "payment-timeout passes; disk-full fails without failing the gate, because with no baseline nothing "
    "can regress",
    "workspace": "latency-evidence-001 passes; latency-evidence-002 fails without failing the gate, because with no "
    "baseline nothing can regress",
}


class InitRefused(DiagbotError):
    """A file `diagbot init` would write is there already, or cannot be written."""


@dataclass(frozen=True)
class Starter:
    kind: str
    files: dict[PurePosixPath, bytes]  # path in the folder -> content, in the order they are written


def starter(kind: str) -> Starter:
    """The files of the starting point for `kind`, read from the package's templates."""
    root = files("diagbot") / "templates" / "init"
    found: dict[PurePosixPath, bytes] = {}
    _collect(root / kind, PurePosixPath(), found)
    config = PurePosixPath("diagbot.yml")
    ordered = {config: found.pop(config), **found, WORKFLOW: (root / "workflow.yml").read_bytes()}
    return Starter(kind, ordered)


def _collect(folder: Traversable, at: PurePosixPath, found: dict[PurePosixPath, bytes]) -> None:
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            _collect(entry, at / entry.name, found)
        elif entry.is_file():
            found[at / entry.name] = entry.read_bytes()


def conflicts(target: Path, plan: Starter) -> list[Path]:
    """Every path in the way: a file that exists, or a file where a folder has to be."""
    if target.exists() and not target.is_dir():
        return [target]
    blocked: set[Path] = set()
    for relative in plan.files:
        path = target / relative
        if os.path.lexists(path):
            blocked.add(path)
        for parent in path.relative_to(target).parents:
            folder = target / parent
            if parent != Path(".") and os.path.lexists(folder) and not folder.is_dir():
                blocked.add(folder)
    return sorted(blocked)


def links_out(target: Path, plan: Starter) -> list[Path]:
    """The folders on the way that are symbolic links leading out of `target`: writing through one would put a
    file elsewhere (a folder of a checked-out repository is not to be trusted with that)."""
    links = {target / parent for relative in plan.files for parent in relative.parents if parent != PurePosixPath(".")}
    links = {folder for folder in links if folder.is_symlink()}
    if not links:
        return []
    inside = target.resolve()  # a folder, or a link to one (the folders below it are real: `conflicts`)
    return sorted(folder for folder in links if not folder.resolve().is_relative_to(inside))


def write_starter(target: Path, plan: Starter) -> list[Path]:
    """Write every file of `plan` under `target`, or none: InitRefused lists what is in the way. Files are created
    exclusively, so one that appears meanwhile is not overwritten either; on any failure what was written (files,
    and the folders made for them) is removed again."""
    try:
        blocked = conflicts(target, plan)
        links = [] if blocked else links_out(target, plan)
    except OSError as exc:  # a name too long for the system, a folder that cannot be looked into, ...
        raise InitRefused(*_unwritable(exc, target)) from None
    if blocked:
        raise InitRefused(*_refusal(blocked))
    if links:
        raise InitRefused(
            *[f"{path}: a symbolic link to a folder outside {target}" for path in links],
            f"diagbot init wrote nothing, because it writes only inside {target}: remove the links above, or give "
            "another folder (diagbot init DIR)",
        )
    written: list[Path] = []
    made: list[Path] = []
    try:
        for relative, content in plan.files.items():
            path = target / relative
            for folder in reversed(path.parents):
                if not os.path.lexists(folder):
                    folder.mkdir()
                    made.append(folder)
            with path.open("xb") as handle:
                written.append(path)
                handle.write(content)
    except OSError as exc:
        for path in written:
            path.unlink(missing_ok=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, FileExistsError):
            raise InitRefused(*_refusal([Path(str(exc.filename))])) from None
        raise InitRefused(*_unwritable(exc, target)) from None
    return written


def _unwritable(exc: OSError, target: Path) -> list[str]:
    where = exc.filename if exc.filename is not None else target
    return [
        f"{where}: cannot be written ({exc.strerror or exc})",
        "diagbot init wrote nothing: give a folder you can write to (diagbot init DIR)",
    ]


def _refusal(blocked: list[Path]) -> list[str]:
    return [f"{path}: exists already" for path in blocked] + [
        "diagbot init wrote nothing, because it never overwrites a file: move the files above away, or give "
        "another folder (diagbot init DIR)"
    ]


def next_steps(target: Path, plan: Starter, written: list[Path]) -> str:
    """What `diagbot init` prints: what it wrote, the examples, the workflow's placeholder and the next commands."""
    lines = [f"diagbot init: wrote {with_article(plan.kind)} suite ({len(written)} files):"]
    lines += [f"  {one_line(str(path))}" for path in written]  # DIR is the user's: shown escaped, one line each
    lines += [
        "",
        f"The example cases: {EXAMPLES[plan.kind]} (see the comments in diagbot.yml).",
        f"Before the workflow runs on GitHub, set the commit it uses in {one_line(str(target / WORKFLOW))}: replace "
        "OWNER/diagbot@COMMIT_SHA with the repository and commit sha of diagbot to run.",
    ]
    if target != Path("."):
        folder = one_line(str(target))
        lines.append(
            f"GitHub reads workflows only from .github/workflows at the repository's root: when {folder} is a "
            f"folder of your repository, move the workflow there and give its diagbot step `config: {folder}/"
            "diagbot.yml`."
        )
    branch = branch_instead_of_main(target)
    if branch is not None:
        lines.append(
            f"The workflow makes baselines from pushes to main, and this repository is on {one_line(branch, 100)}: "
            f"if your default branch is not main, set it in `branches: [main]` of {one_line(str(target / WORKFLOW))}."
        )
    lines += [
        "Pull requests from forks are gated, but their runs may not comment: the companion workflow in the README's "
        "'Fork pull requests' posts their comment and check run.",
        "diagbot run writes its report folders under build/: add build/ to your .gitignore.",
        "",
        "Next:",
    ]
    if target != Path("."):
        lines.append(f"  cd {one_line(shlex.quote(str(target)))}")
    lines += [
        f"  diagbot run --out {BASELINE}        # evaluate and print the PR comment; keep this run as a baseline",
        f"  diagbot run --baseline {BASELINE}   # after changing a case or a run: compare with that baseline",
    ]
    return "\n".join(lines)


def branch_instead_of_main(target: Path) -> str | None:
    """The branch checked out in the git repository `target` is in, when that repository has no branch `main` (a
    `git init` that made `master`): the workflow's baselines come from pushes to main. None otherwise, and for a
    detached head, a worktree's or a submodule's `.git` file, or no repository."""
    try:
        for folder in (target.resolve(), *target.resolve().parents):
            git = folder / ".git"
            if not git.exists():
                continue
            if not git.is_dir() or not (git / "HEAD").is_file():  # a worktree or a submodule: elsewhere
                return None
            said = _start(git / "HEAD", 512).decode("utf-8", "replace").strip()
            branch = said.removeprefix("ref: refs/heads/") if said.startswith("ref: refs/heads/") else None
            if branch is None or branch == "main" or (git / "refs" / "heads" / "main").exists():
                return None
            packed = git / "packed-refs"
            return None if packed.is_file() and b" refs/heads/main\n" in _start(packed, 1 << 20) else branch
    except OSError:
        return None
    return None


def _start(path: Path, limit: int) -> bytes:
    """The file's first `limit` bytes."""
    with path.open("rb") as file:
        return file.read(limit)
