"""Output files: written whole or not at all (a temporary file, then a rename), never left half-written, and
never carrying a registered secret (the action registers its token before anything is written)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

MASK = "***"
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


def write_file(path: Path, text: str | bytes) -> None:
    """Write one output file as UTF-8 (text, or bytes already UTF-8), making its folder first; every file diagbot
    writes goes through here. A character UTF-8 cannot carry (a lone surrogate) is written as its `\\udxxx`
    escape rather than failing."""
    path.parent.mkdir(parents=True, exist_ok=True)
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
