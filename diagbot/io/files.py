"""Output files: written whole or not at all (a temporary file, then a rename), never left half-written, and
never carrying a registered secret (the action registers its token before anything is written)."""

from __future__ import annotations

import base64
import contextlib
import os
import tempfile
from pathlib import Path

from diagbot.core.errors import OutputError
from diagbot.render.markdown import escape_inline

MASK = "***"
_ELSEWHERE = "choose another place to write the outputs"
_SECRETS: set[str] = set()


def register_secret(value: str) -> None:
    """From now on, every occurrence of `value` in an output is replaced by `***` (short values are ignored:
    masking every `a` would help no one)."""
    if len(value) >= 8:
        _SECRETS.update({value, escape_inline(value)})  # as the comment writes it, too: `ghs\_...`
        # as git's credentials keep it: actions/checkout's `extraheader` is `basic ` + base64 of this
        _SECRETS.add(base64.b64encode(f"x-access-token:{value}".encode("utf-8", "surrogatepass")).decode())


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


def real_folder(folder: Path, root: Path, anchor: Path | None = None) -> None:
    """Make `folder` (`root` or a folder below it), refusing any folder on the way that is a symbolic link or not
    a folder: from `anchor` down (the repository checkout: the working folder unless given) when `root` is in it,
    else from `root` itself down. A relative `root` is checked along its whole spelling from the working folder,
    `..` included (so a link on the way out of the checkout is refused too). A pull request can commit `build` or
    `build/diagbot/reports` as a link to elsewhere; diagbot never writes through it."""
    below = folder.relative_to(root).parts
    if not root.is_absolute():
        at, parts = Path(), (*root.parts, *below)  # named as the user gave it
    else:
        found = _inside(root, anchor)
        if found is not None:
            at, parts = found[0], (*found[1], *below)
        else:
            at, parts = root.parent, (root.name, *below)
            _make(at, parents=True)  # above the output folder, outside the checkout: as the user gave it
    for part in parts:
        at = at / part
        try:
            linked = at.is_symlink()
        except OSError as exc:  # a part over 255 bytes: `is_symlink` raises for all but a missing path
            raise OutputError(f"{at}: cannot be looked at ({exc.strerror or exc}); {_ELSEWHERE}") from None
        if linked:
            raise OutputError(
                f"{at}: is a symbolic link; diagbot writes its outputs only into real folders (remove the link, "
                f"or {_ELSEWHERE})"
            )
        _make(at)


def _inside(path: Path, anchor: Path | None) -> tuple[Path, tuple[str, ...]] | None:
    """(the anchor, the parts of `path` below it) when `path` is spelt inside the anchor: the given one, else the
    working folder as the system names it or as the shell spelt it (`$PWD`, through a link of its own)."""
    candidates = [anchor] if anchor is not None else [Path.cwd()]
    shell = os.environ.get("PWD")
    if anchor is None and shell and os.path.isabs(shell):
        with contextlib.suppress(OSError):
            if os.path.samefile(shell, candidates[0]):
                candidates.append(Path(shell))
    for candidate in candidates:
        with contextlib.suppress(ValueError):
            return candidate, path.relative_to(candidate).parts
    return None


def _make(folder: Path, parents: bool = False) -> None:
    try:
        folder.mkdir(parents=parents, exist_ok=True)
    except FileExistsError:  # exist_ok tolerates a folder only
        raise OutputError(f"{folder}: is not a folder, so nothing can be written in it; {_ELSEWHERE}") from None
    except OSError as exc:
        raise OutputError(f"{folder}: cannot be made ({exc.strerror or exc}); {_ELSEWHERE}") from None


def write_file(path: Path, text: str | bytes, root: Path | None = None, anchor: Path | None = None) -> None:
    """Write one output file as UTF-8 (text, or bytes already UTF-8), making its folder first; every file diagbot
    writes goes through here. A character UTF-8 cannot carry (a lone surrogate) is written as its `\\udxxx`
    escape rather than failing. With `root` (the output folder), no folder from it down may be a link
    (`real_folder`, from `anchor` down). A file that cannot be written is an OutputError naming it, never a crash."""
    if root is not None:
        real_folder(path.parent, root, anchor)
    else:
        _make(path.parent, parents=True)
    try:
        if path.is_char_device() or path.is_block_device():  # written beside and renamed, it would replace the
            raise OutputError(  # device (`--output /dev/full`, run as root, did); a link or a FIFO is replaced
                f"{path}: is a device, so diagbot does not write over it; {_ELSEWHERE}"
            )
        _write(path, text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot be written ({exc.strerror or exc}); {_ELSEWHERE}") from None


def remove_stale(path: Path, root: Path, anchor: Path | None = None) -> None:
    """Remove an output an earlier run left at `path`, when this run writes none there (a suite that could not be
    evaluated): a later `--baseline` on the folder would read it as this run's. Only below real folders, as
    `write_file` writes; a link at `path` itself is removed, never what it points at."""
    try:
        if not (path.is_file() or path.is_symlink()):
            return
        real_folder(path.parent, root, anchor)
        path.unlink()
    except OSError as exc:
        raise OutputError(
            f"{path}: an earlier run's output cannot be removed ({exc.strerror or exc}); {_ELSEWHERE}"
        ) from None


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
