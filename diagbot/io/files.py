"""Output files: written whole or not at all (a temporary file, then a rename), never left half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_file(path: Path, text: str) -> None:
    """Write one output file as UTF-8, making its folder first; every file diagbot writes goes through here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name[:50]}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
