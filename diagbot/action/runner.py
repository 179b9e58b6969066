"""The runner's files and workflow commands: $GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY, `::error::` and friends."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TextIO

from diagbot.core.values import cut_utf8
from diagbot.io.files import scrub
from diagbot.render.markdown import md

SUMMARY_BYTES = 1024 * 1024 - 1024  # $GITHUB_STEP_SUMMARY refuses 1 MiB and more per step


def escape(message: str) -> str:
    """A workflow command's message: `%`, CR and LF are escaped so one message stays one annotation."""
    return scrub(message).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def annotate(out: TextIO, warnings: list[str], errors: list[str]) -> None:
    """Print each warning and error as a workflow annotation."""
    for message in warnings:
        print(f"::warning::{escape(message)}", file=out)
    for message in errors:
        print(f"::error::{escape(message)}", file=out)


def write_outputs(path: Path | None, values: dict[str, str]) -> None:
    """Append `name<<delimiter` blocks; the delimiter is random so no value can end the block early."""
    if path is None:
        return
    lines = []
    for name, value in values.items():
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        while delimiter in value:
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
        lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
    append(path, "".join(lines))


def write_summary(path: Path | None, markdown: str) -> None:
    """Add to the job summary, cut (with a note) to stay under the runner's 1 MiB limit."""
    if len(markdown.encode("utf-8")) > SUMMARY_BYTES:
        note = "\n\n… (cut to fit the job summary's 1 MiB limit; the full report is in the report folder)\n"
        markdown = cut_utf8(markdown, SUMMARY_BYTES - len(note.encode())) + note
    append(path, markdown)


def bullets(lines: list[str]) -> str:
    """Problems as a Markdown list for the job summary, each escaped (`md`): one may quote a pull request's file."""
    return "".join(f"- {md(scrub(line), 1000)}\n" for line in lines)  # scrubbed before any cut: no half a secret


def append(path: Path | None, text: str) -> None:
    if path is None or not text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    text = scrub(text)
    with path.open("a", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
