"""The one way diagbot reads an input file: a regular file only, and never more than a cap.

A pull request controls most of what diagbot reads, so a FIFO (which would block forever), a device such as
`/dev/zero` (which never ends), a symlink loop or a huge file must each become a clear problem, not a hang, a
traceback or an out-of-memory kill. Callers turn `FileProblem` into their own error with what to do.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_CHUNK = 1024 * 1024


class FileProblem(Exception):
    """Why a file could not be read; the message completes "<path>: ..."."""

    def __init__(self, message: str, missing: bool = False, too_big: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.missing = missing
        self.too_big = too_big  # over the cap it was read with: the caller may say which limit to raise


GIT_FOLDER = ".git"
IN_GIT = f"is inside a {GIT_FOLDER} folder, which diagbot never reads (a checkout keeps its credentials there)"


def in_git_folder(path: str | Path) -> bool:
    """Whether a path (a real one: links resolved) is a `.git` folder or inside one. A pull request's checks may
    only read what the pull request holds; the checkout's own folder may hold the job's token (actions/checkout's
    `extraheader`), and a check's pass or fail would tell it piece by piece. Any case: on a runner whose disk
    ignores case (macOS), `.GIT/config` is that file."""
    return any(part.casefold() == GIT_FOLDER for part in Path(path).parts)


def read_bounded(path: str | Path, cap: int, head: bool = False, git: bool = False) -> bytes:
    """The bytes of `path` (symlinks followed), which must be a regular file of at most `cap` bytes and, unless
    `git` (the action reading which commit is checked out), not inside a `.git` folder (`in_git_folder`, after
    links); `head`: its first `cap` bytes, whatever its size."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        raise FileProblem("not found", missing=True) from None
    except ValueError:  # an embedded NUL
        raise FileProblem("is not a usable path (it contains a NUL character)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise FileProblem("is a symbolic link loop") from None
        raise FileProblem(f"cannot be opened ({exc.strerror or exc})") from None
    try:
        if not git and in_git_folder(_real_path(fd, path)):
            raise FileProblem(IN_GIT)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileProblem(f"is not a regular file (it is {file_kind(info.st_mode)})")
        if head:
            return os.read(fd, cap)
        if info.st_size > cap:
            raise FileProblem(f"is {info.st_size:,} bytes, over the {cap:,}-byte limit", too_big=True)
        chunks, size = [], 0
        want = info.st_size + 1  # the whole file in one read; after a short read, one byte to see the end
        while size <= cap:
            ask = min(want, cap + 1 - size)  # at least 1: the loop runs while size <= cap
            chunk = os.read(fd, ask)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            want = _CHUNK if len(chunk) == ask else 1
        if size > cap:
            raise FileProblem(f"grew past the {cap:,}-byte limit while being read", too_big=True)
        return b"".join(chunks)
    except OSError as exc:
        raise FileProblem(f"cannot be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def _real_path(fd: int, path: str | Path) -> str:
    """Where an open file really is: what Linux says its descriptor points at (one call), else its path with
    every link resolved."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def read_text_bounded(path: Path, cap: int) -> str:
    """As `read_bounded`, decoded as UTF-8; an empty file is fine here, callers say what empty means."""
    data = read_bounded(path, cap)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(f"is not UTF-8 text (byte {exc.start})") from None


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, as messages say it: "a folder", "a FIFO", "a device", ..."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"
