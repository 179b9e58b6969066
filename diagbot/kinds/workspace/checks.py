"""Check kinds for the workspace suite, and the one careful way they look at a run's files.

A workspace is whatever an agent left behind, so it is read defensively: paths never leave it, links that
resolve outside it count as absent, only regular files are opened, and at most `READ_CAP` bytes of any file
are read (a 1 GiB sparse file costs 8 MiB, and the check says so in its detail).
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property, lru_cache
from typing import Annotated, Any, NamedTuple, TypeVar

import jmespath
from jmespath.exceptions import JMESPathError
from jmespath.parser import ParsedResult
from jmespath.visitor import TreeInterpreter
from pydantic import AfterValidator, Field, model_validator
from pydantic_core import SchemaValidator, ValidationError, core_schema, from_json

from diagbot.core.models import StrictInput
from diagbot.core.text import matches

READ_CAP = 8 * 1024 * 1024
"""Bytes read from any one file; text checks search this prefix, JSON checks refuse a longer file."""
MAX_ENTRIES = 100_000
"""Entries listed in one workspace; past this the listing stops, and a check that finds nothing fails."""

_FIRST_READ = 64 * 1024
# Non-blocking, no-follow: a file swapped for a FIFO or a link after listing fails rather than hang or escape.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
_MAGIC = frozenset("*?[")
_SHOWN_FILES = 3


def safe_relative_path(value: str) -> str:
    """Reject a glob or folder that could name something outside the workspace before anything is read."""
    if not value.strip():
        raise ValueError("empty path; give a path relative to the workspace, e.g. evidences/metrics.json")
    if value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
        raise ValueError(f"absolute path {value!r}; paths are relative to the workspace root")
    if ".." in re.split(r"[/\\]", value):
        raise ValueError(f"path {value!r} contains '..'; paths must stay inside the workspace")
    try:
        _glob_regex(value)
    except re.error as exc:
        raise ValueError(f"invalid glob {value!r} ({exc})") from None
    return value


SafeGlob = Annotated[str, AfterValidator(safe_relative_path)]


def _valid_regex(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    return pattern


def _valid_jmespath(expr: str) -> str:
    try:
        _compiled(expr)
    except JMESPathError as exc:
        raise ValueError(f"invalid JMESPath expression {expr!r}: {exc}") from None
    return expr


@lru_cache(maxsize=1024)
def _compiled(expr: str) -> ParsedResult:
    return jmespath.compile(expr)


# One interpreter serves every query: `ParsedResult.search` builds a new one per call, and each is a reference
# cycle (it caches its own bound methods) that only the cycle collector frees, which `judge_suite` pauses.
_INTERPRETER = TreeInterpreter()


class ContainsSpec(StrictInput):
    file: SafeGlob
    any_of: list[str] | None = Field(None, alias="any", min_length=1)
    all_of: list[str] | None = Field(None, alias="all", min_length=1)

    @model_validator(mode="after")
    def _one_list(self) -> ContainsSpec:
        if (self.any_of is None) == (self.all_of is None):
            raise ValueError("give exactly one of 'any' or 'all' (a list of strings to look for)")
        if any(not needle.strip() for needle in self.needles):
            raise ValueError("an empty string never matches; remove it from the list")
        return self

    @property
    def needles(self) -> list[str]:
        return self.any_of if self.any_of is not None else self.all_of or []


class RegexSpec(StrictInput):
    file: SafeGlob
    pattern: Annotated[str, AfterValidator(_valid_regex)]

    @cached_property
    def compiled(self) -> re.Pattern[str]:
        return re.compile(self.pattern)


class JsonQuerySpec(StrictInput):
    file: SafeGlob
    expr: Annotated[str, AfterValidator(_valid_jmespath)]


class CheckKind(StrEnum):
    FILE_EXISTS = "file_exists"
    FILE_ABSENT = "file_absent"
    JSON_VALID = "json_valid"
    CONTAINS = "contains"
    REGEX = "regex"
    JSON_QUERY = "json_query"


class CheckSpec(StrictInput):
    """One check of a bucket, as written in case.yaml: common fields plus exactly one kind key."""

    id: str = Field(min_length=1)
    required: bool = True
    weight: float = Field(1.0, ge=0, allow_inf_nan=False)
    description: str | None = None
    file_exists: SafeGlob | None = None
    file_absent: SafeGlob | None = None
    json_valid: SafeGlob | None = None
    contains: ContainsSpec | None = None
    regex: RegexSpec | None = None
    json_query: JsonQuerySpec | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> CheckSpec:
        given = [kind.value for kind in CheckKind if getattr(self, kind.value) is not None]
        if len(given) != 1:
            found = ", ".join(given) or "none"
            raise ValueError(f"needs exactly one kind key of {', '.join(CheckKind)}; found {found}")
        return self

    @cached_property
    def kind(self) -> CheckKind:
        return next(kind for kind in CheckKind if getattr(self, kind.value) is not None)

    @cached_property
    def payload(self) -> Any:
        """What the kind key holds: a glob, or the kind's spec."""
        return getattr(self, self.kind.value)


class Outcome(NamedTuple):
    passed: bool
    detail: str


SpecT = TypeVar("SpecT")
FileJudge = Callable[["Workspace", str, SpecT], tuple[bool, str]]


@dataclass(slots=True)
class _Blob:
    data: bytes
    size: int
    text: str | None = None
    text_note: str = ""
    parsed: tuple[bool, Any, str] | None = None


class Workspace:
    """A read-only view of one run folder: listed once on creation, each file read at most once."""

    def __init__(self, root: str) -> None:
        """Raises OSError when the root itself cannot be listed; an unreadable subfolder just lists nothing."""
        self.root = root
        self.files: dict[str, str] = {}  # relative path -> path to open, regular files inside the root only
        self.refused: dict[str, str] = {}  # relative path -> why it is not treated as a file
        self.folders: dict[str, list[str]] = {}  # "evidences/" -> the files and refused entries directly in it
        self._blobs: dict[str, _Blob] = {}
        self.cut_short = ""  # why the listing is incomplete, if it is
        pending, listed = [(root, "")], 0
        while pending:
            folder, prefix = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(itertools.islice(listing, MAX_ENTRIES - listed + 1))
            except OSError:
                if folder is root:
                    raise
                continue
            listed += len(entries)
            if listed > MAX_ENTRIES:
                self.cut_short = f"the listing stopped after {MAX_ENTRIES:,} entries, so an unlisted file may match"
                entries, pending = entries[: len(entries) - (listed - MAX_ENTRIES)], []
            names = self.folders[prefix] = []
            for entry in entries:  # the common cases first, without a method call per entry
                rel = prefix + entry.name
                try:
                    if entry.is_file(follow_symlinks=False):
                        self.files[rel] = entry.path
                    elif entry.is_dir(follow_symlinks=False):
                        pending.append((entry.path, rel + "/"))
                        continue
                    else:
                        self._other(entry, rel)
                except OSError as exc:  # the type was not in the listing and the entry cannot be looked at
                    self.refused[rel] = f"an entry that cannot be inspected ({exc.strerror})"
                names.append(rel)

    def _other(self, entry: os.DirEntry[str], rel: str) -> None:
        """Folder links are not followed; a file link counts only when it resolves inside the root."""
        if not entry.is_symlink():
            self.refused[rel] = "not a regular file (ignored)"
            return
        target, real_root = os.path.realpath(entry.path), os.path.realpath(self.root)
        if os.path.commonpath([real_root, target]) != real_root:
            self.refused[rel] = "a link that resolves outside the workspace (treated as absent)"
        elif os.path.isfile(target):
            self.files[rel] = target
        else:
            self.refused[rel] = "a link to something other than a regular file (ignored)"

    def match(self, pattern: str) -> tuple[list[str], list[str]]:
        """Files matching the glob, sorted, and notes about matching entries that were refused. Like a shell,
        a glob whose wildcards are all in its last part looks only inside that one folder."""
        literal, folder, regex = _glob(pattern)
        if literal is not None:
            if literal in self.files:
                return [literal], []
            hits = [literal]
        else:
            names = self.folders.get(folder, []) if folder is not None else [*self.files, *self.refused]
            hits = sorted(filter(regex.fullmatch, names))
        found = [rel for rel in hits if rel in self.files]
        notes = [f"{rel} is {self.refused[rel]}" for rel in hits if rel in self.refused]
        return found, [*notes, self.cut_short] if self.cut_short and not found else notes

    def blob(self, rel: str) -> _Blob:
        """At most READ_CAP bytes of the file, read once with plain os calls (the hot path): one read covers
        a small file, as a short read means end of file; a larger one is sized, then read up to the cap."""
        blob = self._blobs.get(rel)
        if blob is None:
            fd = os.open(self.files[rel], _OPEN_FLAGS)
            try:
                data = os.read(fd, _FIRST_READ)
                size = len(data)
                if size == _FIRST_READ:
                    size = max(os.fstat(fd).st_size, size)
                    chunks, have = [data], len(data)
                    while have < min(size, READ_CAP) and (more := os.read(fd, min(size, READ_CAP) - have)):
                        chunks.append(more)
                        have += len(more)
                    data = b"".join(chunks)
            finally:
                os.close(fd)
            blob = self._blobs[rel] = _Blob(data, size)
        return blob

    def text(self, rel: str) -> tuple[str, str]:
        """The file as text, and a note when bytes were cut off or replaced; never fails on bad bytes."""
        blob = self.blob(rel)
        if blob.text is None:
            blob.text, blob.text_note = _decode(blob)
        return blob.text, blob.text_note

    def json_ok(self, rel: str) -> tuple[bool, str]:
        """(ok, problem) without building the value, when the file is plainly valid; else as `json`."""
        blob = self.blob(rel)
        if blob.parsed is None and _plainly_valid(blob):
            return True, "valid JSON"
        ok, _, problem = self.json(rel)
        return ok, problem

    def json(self, rel: str) -> tuple[bool, Any, str]:
        """(ok, value, problem): JSON must be strict UTF-8 and fit under the read cap to be judged at all."""
        blob = self.blob(rel)
        if blob.parsed is None:
            blob.parsed = _parse(blob)
        return blob.parsed


def _decode(blob: _Blob) -> tuple[str, str]:
    truncated = blob.size > len(blob.data)
    cut = f"read only the first {_size(READ_CAP)} of {_bytes(blob.size)}" if truncated else ""
    try:
        return blob.data.decode(), cut
    except UnicodeDecodeError as exc:
        if truncated and exc.reason == "unexpected end of data":  # the cap split a character
            return blob.data[: exc.start].decode(), cut
        bad = f"not valid UTF-8 (bad byte at offset {exc.start}; bad bytes replaced)"
        return blob.data.decode(errors="replace"), "; ".join(filter(None, [cut, bad]))


# Parses JSON in Rust and keeps nothing of an object's members, so no Python value is built. It is as strict as
# `from_json` (same parser) except that it lets NaN and Infinity through; `_plainly_valid` sends those to `_parse`.
_SYNTAX_ONLY = SchemaValidator(core_schema.typed_dict_schema({}, extra_behavior="ignore"))


def _plainly_valid(blob: _Blob) -> bool:
    """True only when the whole file is certainly valid JSON; any doubt is left to `_parse`, which explains it."""
    if blob.size > len(blob.data) or b"NaN" in blob.data or b"Infinity" in blob.data:
        return False
    try:
        _SYNTAX_ONLY.validate_json(blob.data)
    except ValidationError as exc:
        return exc.errors()[0]["type"] != "json_invalid"  # parsed fine, but the top level is not an object
    return True


def _parse(blob: _Blob) -> tuple[bool, Any, str]:
    if blob.size > len(blob.data):
        return False, None, f"{_bytes(blob.size)} is over the {_size(READ_CAP)} read cap; not parsed"
    try:
        return True, from_json(blob.data, allow_inf_nan=False), "valid JSON"  # the parser checks UTF-8 itself
    except ValueError as exc:
        try:
            blob.data.decode()  # from_json's own message for bad UTF-8 is unclear: name the offset instead
        except UnicodeDecodeError as bad:
            return False, None, f"not valid UTF-8 (first bad byte at offset {bad.start})"
        return False, None, f"not valid JSON ({exc})"


@lru_cache(maxsize=1024)
def _glob(pattern: str) -> tuple[str | None, str | None, re.Pattern[str]]:
    """(literal, folder, regex): a glob without wildcards is looked up directly (normalised); one with
    wildcards only in its last part names the one folder to look in; any other is matched against every path."""
    segments = _segments(pattern)
    if _MAGIC.isdisjoint(pattern):
        return "/".join(segments), None, _glob_regex(pattern)
    head = segments[:-1]
    folder = (
        "".join(f"{part}/" for part in head) if segments[-1] != "**" and all(map(_MAGIC.isdisjoint, head)) else None
    )
    return None, folder, _glob_regex(pattern)


def _segments(pattern: str) -> list[str]:
    return [part for part in pattern.split("/") if part and part != "."]


@lru_cache(maxsize=1024)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Shell-style glob as one regex over `/`-joined paths: `*`, `?` and `[...]` stay within a folder name,
    a `**` segment spans any number of folders."""
    segments, out = _segments(pattern), []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**":
            out.append("(?:[^/]+/)*" + ("[^/]+" if last else ""))
        else:
            out.append(_segment_regex(segment) + ("" if last else "/"))
    return re.compile("".join(out))


def _segment_regex(segment: str) -> str:
    out, i = [], 0
    while i < len(segment):
        char, i = segment[i], i + 1
        start = i + 1 if segment[i : i + 1] == "!" else i
        end = segment.find("]", start + 1) if char == "[" else -1
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif end != -1:
            body = re.sub(r"([\\^\[&~|])", r"\\\1", segment[start:end])
            out.append(f"[^/{body}]" if start > i else f"(?!/)[{body}]")  # a range like [+-0] holds `/`
            i = end + 1
        else:
            out.append(re.escape(char))
    return "".join(out)


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    value, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, bigger
    return f"{round(value, 1):g} {unit}"


def _bytes(n: int) -> str:
    """A file's size rounded, then exact: just over the cap must not read as the cap itself."""
    return f"{_size(n)} ({n:,} bytes)"


def _joined(notes: list[str]) -> str:
    return "".join(f"; {note}" for note in notes)


def _any_file(ws: Workspace, pattern: str, judge: FileJudge[SpecT], spec: SpecT) -> Outcome:
    """A glob passes when any matching file passes; the detail names the passing file or why the first few
    failed (and how many more did)."""
    files, refused = ws.match(pattern)
    if not files:
        return Outcome(False, f"no file matches {pattern!r}{_joined(refused)}")
    shown: list[str] = []
    for rel in files:
        try:
            passed, detail = judge(ws, rel, spec)
        except OSError as exc:
            passed, detail = False, f"could not read ({exc.strerror})"
        if passed:
            return Outcome(True, f"{rel}: {detail}")
        if len(shown) < _SHOWN_FILES:
            shown.append(f"{rel}: {detail}")
    more = f"; ...and {len(files) - _SHOWN_FILES} more" if len(files) > _SHOWN_FILES else ""
    return Outcome(False, "; ".join(shown) + more + _joined(refused))


def file_exists(ws: Workspace, pattern: str) -> Outcome:
    files, refused = ws.match(pattern)
    if files:
        return Outcome(True, f"found {', '.join(files[:_SHOWN_FILES])}")
    return Outcome(False, f"no file matches {pattern!r}{_joined(refused)}")


def file_absent(ws: Workspace, pattern: str) -> Outcome:
    files, refused = ws.match(pattern)
    if files:
        return Outcome(False, f"present: {', '.join(files[:_SHOWN_FILES])}")
    return Outcome(not ws.cut_short, f"no file matches {pattern!r}{_joined(refused)}")  # unsure is not a pass


# Each content kind is a glob plus a test of one file, returning (passed, detail).


def _valid_json_file(ws: Workspace, rel: str, _: None) -> tuple[bool, str]:
    return ws.json_ok(rel)


def _contains_file(ws: Workspace, rel: str, spec: ContainsSpec) -> tuple[bool, str]:
    text, note = ws.text(rel)
    found = matches(text, spec.needles)
    missing = [needle for needle in spec.needles if needle not in found]
    passed = bool(found) if spec.any_of is not None else not missing
    said = [f"found {', '.join(found)}"] if found else []
    said += [f"missing {', '.join(missing)}"] if missing else []
    return passed, "; ".join(said) + (f" ({note})" if note else "")


def _regex_file(ws: Workspace, rel: str, spec: RegexSpec) -> tuple[bool, str]:
    text, note = ws.text(rel)
    hit = spec.compiled.search(text)
    said = f"matched {hit.group(0)[:80]!r}" if hit else f"no match for /{spec.pattern}/"
    return hit is not None, said + (f" ({note})" if note else "")


def _jmespath_truthy(value: Any) -> bool:
    """JMESPath's own truth: null, false and empty string/array/object are false; the number 0 is true."""
    if value is None or value is False:
        return False
    return not (isinstance(value, str | list | dict) and len(value) == 0)


def _json_query_file(ws: Workspace, rel: str, spec: JsonQuerySpec) -> tuple[bool, str]:
    ok, value, problem = ws.json(rel)
    if not ok:
        return False, problem
    try:
        result = _INTERPRETER.visit(_compiled(spec.expr).parsed, value)
    except (JMESPathError, TypeError, ValueError) as exc:
        return False, f"{spec.expr} failed: {exc}"
    shown = json.dumps(result, ensure_ascii=False, default=str)
    return _jmespath_truthy(result), f"{spec.expr} -> {shown[:80]}"


def json_valid(ws: Workspace, pattern: str) -> Outcome:
    return _any_file(ws, pattern, _valid_json_file, None)


def contains(ws: Workspace, spec: ContainsSpec) -> Outcome:
    return _any_file(ws, spec.file, _contains_file, spec)


def regex(ws: Workspace, spec: RegexSpec) -> Outcome:
    return _any_file(ws, spec.file, _regex_file, spec)


def json_query(ws: Workspace, spec: JsonQuerySpec) -> Outcome:
    return _any_file(ws, spec.file, _json_query_file, spec)


CHECKS: dict[CheckKind, Callable[[Workspace, Any], Outcome]] = {
    CheckKind.FILE_EXISTS: file_exists,
    CheckKind.FILE_ABSENT: file_absent,
    CheckKind.JSON_VALID: json_valid,
    CheckKind.CONTAINS: contains,
    CheckKind.REGEX: regex,
    CheckKind.JSON_QUERY: json_query,
}


def run_check(ws: Workspace, check: CheckSpec) -> Outcome:
    """Dispatch through the registry; a listing or read error becomes a failed check, never an exception."""
    try:
        return CHECKS[check.kind](ws, check.payload)
    except OSError as exc:
        return Outcome(False, f"could not read the workspace ({exc.strerror})")
