"""Output files: written whole or not at all (a temporary file, then a rename), never left half-written, and
never carrying a registered secret (the action registers its token before anything is written)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from diagbot.core.errors import OutputError

MASK = "***"
_ELSEWHERE = "choose another place to write the outputs"
_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """From now on, every occurrence of `value` in an output is replaced by `***` (short values are ignored:
    masking every `a` would help no one)."""
    if len(value) >= 8:
        _SECRETS.add(value)


def scrub(text: str) -> str:
    for secret in _SECRETS:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


def _scrub_bytes(data: bytes) -> bytes:
    for secret in _SECRETS:
        encoded = secret.encode("utf-8", "backslashreplace")
        if encoded in data:
            data = data.replace(encoded, MASK.encode())
    return data


def real_folder(folder: Path, root: Path) -> None:
    """Make `folder` (`root` or a folder below it), refusing any folder on the way that is a symbolic link or not
    a folder: from the working folder down when `root` is in it (the repository, for the action), else from `root`
    itself down. A pull request can commit `build` or `build/diagbot/reports` as a link to elsewhere; diagbot never
    writes through it."""
    below = folder.relative_to(root).parts
    inside = root if not root.is_absolute() else _below_working_folder(root)
    if inside is not None:
        at, parts = Path.cwd() if root.is_absolute() else Path(), (*inside.parts, *below)
    else:
        at, parts = root.parent, (root.name, *below)
        _make(at, parents=True)  # above the output folder: as the user gave it
    for part in parts:
        at = at / part
        if at.is_symlink():
            raise OutputError(
                f"{at}: is a symbolic link; diagbot writes its outputs only into real folders (remove the link, "
                f"or {_ELSEWHERE})"
            )
        _make(at)


def _below_working_folder(path: Path) -> Path | None:
    try:
        return path.relative_to(Path.cwd())
    except (ValueError, OSError):  # elsewhere, or the working folder is gone
        return None


def _make(folder: Path, parents: bool = False) -> None:
    try:
        folder.mkdir(parents=parents, exist_ok=True)
    except FileExistsError:  # exist_ok tolerates a folder only
        raise OutputError(f"{folder}: is not a folder, so nothing can be written in it; {_ELSEWHERE}") from None
    except OSError as exc:
        raise OutputError(f"{folder}: cannot be made ({exc.strerror or exc}); {_ELSEWHERE}") from None


def write_file(path: Path, text: str | bytes, root: Path | None = None) -> None:
    """Write one output file as UTF-8 (text, or bytes already UTF-8), making its folder first; every file diagbot
    writes goes through here. A character UTF-8 cannot carry (a lone surrogate) is written as its `\\udxxx`
    escape rather than failing. With `root` (the output folder), no folder from it down may be a link
    (`real_folder`). A file that cannot be written is an OutputError naming it, never a crash."""
    if root is not None:
        real_folder(path.parent, root)
    else:
        _make(path.parent, parents=True)
    try:
        _write(path, text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot be written ({exc.strerror or exc}); {_ELSEWHERE}") from None


def _write(path: Path, text: str | bytes) -> None:
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:50]}.", suffix=".tmp", dir=path.parent)
    try:
        if isinstance(text, bytes):
            with os.fdopen(handle, "wb") as raw:
                raw.write(_scrub_bytes(text))
        else:
            with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
                stream.write(scrub(text))
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
