"""Check kinds for the workspace suite, and the one careful way they look at a run's files.

A workspace is whatever an agent left behind, so it is read defensively: paths never leave it, links that
resolve outside it count as absent, only regular files are opened, and at most `READ_CAP` bytes of any file
are read (a 1 GiB sparse file costs 8 MiB, and the check says so in its detail).

A case.yaml comes from the pull request, so every check is bounded whatever it asks for: regexes run on RE2
(linear time, no backtracking; `core/regex.py`), globs are translated so that matching one path never backtracks
across wildcards, and a JMESPath query is capped in length and nesting when the case loads, and in steps and in
what it builds while it runs (`core/query.py`). A check that hits a bound fails with a detail naming it; the other
checks are not affected.

And a case's checks together have one work budget, `MAX_CASE_STEPS`, counted in steps of roughly a microsecond
(`Workspace.spend`, at the rates under it): a case.yaml can hold some 15,000 checks, and each one, bounded as it
is, may take seconds. Work is counted, never timed, so a case's verdict is the same on any machine and whatever the
other cases ask. Past the budget the case's remaining checks fail, saying so; those already decided keep their
results.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property, lru_cache
from typing import Annotated, Any, NamedTuple, TypeVar

from jmespath.exceptions import JMESPathError, JMESPathTypeError
from pydantic import AfterValidator, ConfigDict, Field, model_validator
from pydantic_core import from_json

from diagbot.core.fs import GIT_FOLDER, in_git_folder
from diagbot.core.models import StrictInput
from diagbot.core.query import QueryLimitError, query_steps, run_query, truthy, valid_query
from diagbot.core.regex import Regex, compile_regex, valid_regex
from diagbot.core.text import MAX_TEXT_CHARS, Folded, fold
from diagbot.core.values import excerpt, lone_surrogate, one_line, refuse_repeats

READ_CAP = 8 * 1024 * 1024
"""Bytes read from any one file; text checks search this prefix, JSON checks refuse a longer file."""
MAX_ENTRIES = 100_000
"""Entries listed in one workspace; past this the listing stops, and a check that finds nothing fails."""
MAX_MATCHES_KEPT = 10 * MAX_ENTRIES
"""Paths kept by one workspace's memo of glob matches; past this the oldest globs' matches are forgotten."""

MAX_CASE_STEPS = 10_000_000
"""Steps of work all of one case's checks may take on its run together: about 10 s at most, whatever the case asks
(the bundled cases take well under 1% of it). Each check costs a step, and what it does on top is charged by the
rates below before it is done, except a JMESPath query, whose steps are known once it has run (it stops at its own
2,000,000). When a charge takes the case past the budget, that work is not done: the check, and every later check
of the case, fails saying so."""
# What a step buys of each kind of work: each rate is set so that a step is at most about a microsecond of the
# slowest input of that kind measured (ASCII is cheap to normalise, so it is charged less).
_NAME_CHARS_PER_STEP = 100  # a glob tested on a path: a step per path, and one per 100 characters of the paths
_READ_BYTES_PER_STEP = 1_000  # a file read and decoded, once per case
_JSON_BYTES_PER_STEP = 4  # a file parsed as JSON, once per case (a top-level array of small objects: ~250 ns/byte)
_FOLD_ASCII_CHARS_PER_STEP = 100  # a text normalised for `contains`, once per case
_FOLD_CHARS_PER_STEP = 2  # the same for other text, which NFKC may expand (up to ~400 ns a character)
_PHRASE_CHARS_PER_STEP = 1_000  # one phrase of a `contains` check looked for in a normalised text
_REGEX_INSTRUCTION_BYTES_PER_STEP = 200  # a regex search: RE2's slow path (its fast automaton can give up, as on
# `[ab]*a[ab]{50}c`) costs about 5 ns per instruction of the pattern's program per byte searched

MAX_WEIGHT = 1_000.0
"""A check's weight: weights are shares within a bucket, and a bound keeps their sum finite (two weights of 1e308
made it infinite, the share NaN, and the report unreadable as a baseline)."""
MAX_NEEDLES = 1_000
"""Strings one `contains` check looks for: each is searched for in the whole (normalised) file."""
# Bounds on what a case.yaml may ask for, checked when the case loads (those on regexes and JMESPath are in
# `core/regex.py` and `core/query.py`).
MAX_GLOB_CHARS = 1_000
"""Characters in one glob (or folder) of a case."""
MAX_GLOB_PARTS = 32
"""Parts between `/` in one glob."""
MAX_GLOB_DOUBLE_STARS = 8
"""`**` parts in one glob."""

_FIRST_READ = 64 * 1024
# Non-blocking, no-follow: a file swapped for a FIFO or a link after listing fails rather than hang or escape.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
_MAGIC = frozenset("*?[")
_SHOWN_FILES = 3
_SHOWN_NEEDLES = 12  # strings of a `contains` check named in its detail before "...and N more"
_SHOWN_CHARS = 80


def safe_relative_path(value: str) -> str:
    """Reject a glob or folder that could name something outside the workspace, or that is too large to match
    quickly, before anything is read."""
    if len(value) > MAX_GLOB_CHARS:
        raise ValueError(f"glob {value[:40]!r}... is {len(value):,} characters long; the limit is {MAX_GLOB_CHARS:,}")
    if not value.strip():
        raise ValueError("empty path; give a path relative to the workspace, e.g. evidences/metrics.json")
    if value.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", value):
        raise ValueError(f"absolute path {value!r}; paths are relative to the workspace root")
    if ".." in re.split(r"[/\\]", value):
        raise ValueError(f"path {value!r} contains '..'; paths must stay inside the workspace")
    if in_git_folder(value):  # `file_absent` would pass whatever a run planted there
        raise ValueError(
            f"path {value!r} enters a {GIT_FOLDER} folder, which diagbot never reads (a checkout keeps its "
            "credentials there); check the files the run wrote instead"
        )
    if "\\" in value:
        raise ValueError(
            f"path {value!r} has a backslash; separate folders with '/' (a backslash is no separator and no escape "
            "here, so the path would name no file)"
        )
    if "{" in value or "}" in value:
        raise ValueError(
            f"glob {value!r} has a brace; diagbot's globs have no {{a,b}} alternatives (only *, ?, ** and [...]), "
            "so it would name no file: write one check per name"
        )
    if any(part != part.strip() for part in value.split("/")):
        raise ValueError(f"path {value!r} has a space at the start or end of a part; remove it (no file is named so)")
    segments = _segments(value)
    if len(segments) > MAX_GLOB_PARTS:
        raise ValueError(f"glob {value!r} has {len(segments)} parts between '/'; the limit is {MAX_GLOB_PARTS}")
    if (double := segments.count("**")) > MAX_GLOB_DOUBLE_STARS:
        raise ValueError(f"glob {value!r} has {double} '**' parts; the limit is {MAX_GLOB_DOUBLE_STARS}")
    try:
        _glob_regex(value)
    except re.error as exc:
        raise ValueError(f"invalid glob {value!r} ({exc})") from None
    return value


SafeGlob = Annotated[str, AfterValidator(safe_relative_path)]


class ContainsSpec(StrictInput):
    file: SafeGlob
    any_of: list[str] | None = Field(None, alias="any", min_length=1, max_length=MAX_NEEDLES)
    all_of: list[str] | None = Field(None, alias="all", min_length=1, max_length=MAX_NEEDLES)

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
    pattern: Annotated[str, AfterValidator(valid_regex)]

    @cached_property
    def compiled(self) -> Regex:
        return compile_regex(self.pattern)  # compiled by the validator already: a cache hit

    @cached_property
    def dollar_before_newline(self) -> bool:
        """Whether to search again without a final newline: outside (?m), Python's `$` also matches just before
        one, and RE2's only at the very end. Searching the shorter text finds nothing `re` would not have found
        (no pattern can see the missing newline but by `\\z`, RE2's own "very end", and then this is False)."""
        return "$" in self.pattern and "\\z" not in self.pattern


class JsonQuerySpec(StrictInput):
    file: SafeGlob
    expr: Annotated[str, AfterValidator(valid_query)]


def _sane_weight(weight: float) -> float:
    if weight > MAX_WEIGHT:
        raise ValueError(
            f"{weight:g} is over the largest weight, {MAX_WEIGHT:g}; weights are shares of their bucket, "
            "so scale the bucket's weights down together"
        )
    return weight


class CheckKind(StrEnum):
    FILE_EXISTS = "file_exists"
    FILE_ABSENT = "file_absent"
    JSON_VALID = "json_valid"
    CONTAINS = "contains"
    REGEX = "regex"
    JSON_QUERY = "json_query"


class CheckSpec(StrictInput):
    """One check of a bucket, as written in case.yaml: common fields plus exactly one kind key."""

    # The published schema says "exactly one kind key" too (`diagbot schema workspace-case`).
    model_config = ConfigDict(json_schema_extra={"oneOf": [{"required": [kind.value]} for kind in CheckKind]})

    id: str = Field(min_length=1)
    required: bool = True
    weight: Annotated[float, AfterValidator(_sane_weight)] = Field(
        1.0, ge=0, allow_inf_nan=False, json_schema_extra={"maximum": MAX_WEIGHT}
    )
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


class CaseLimit(Exception):
    """A case's checks reached MAX_CASE_STEPS: the check running fails with this message, and so does every later
    one of the case."""


SpecT = TypeVar("SpecT")
FileJudge = Callable[["Workspace", str, SpecT], tuple[bool, str]]


@dataclass(slots=True)
class _Blob:
    data: bytes
    size: int
    text: str | None = None
    text_note: str = ""
    utf8: bytes | None = None  # the text as UTF-8, for RE2: the bytes read themselves when they decoded cleanly
    folded: Folded | None = None  # the text normalised for `contains`, once however many checks search it
    valid: tuple[bool, str] | None = None  # json_valid's (ok, problem), once however many checks ask; no value kept
    parsed: tuple[bool, Any, str] | None = None


class Workspace:
    """A read-only view of one run folder, made for one case: listed once on creation, each file read, decoded,
    normalised and parsed at most once, each glob matched once (however many checks ask). It also keeps the case's
    work budget (`spend`): everything the case's checks have it do is charged to it, so a case's checks share one
    budget, and another case, with a workspace of its own, has its own."""

    def __init__(self, root: str) -> None:
        """Raises OSError when the root itself cannot be listed; an unreadable subfolder just lists nothing."""
        self.root = root
        self.spent = 0  # steps charged to the case's checks so far
        self.files: dict[str, str] = {}  # relative path -> path to open, regular files inside the root only
        self.refused: dict[str, str] = {}  # relative path -> why it is not treated as a file
        self.folders: dict[str, list[str]] = {}  # "evidences/" -> the files and refused entries directly in it
        self._blobs: dict[str, _Blob] = {}
        self._matches: dict[str, tuple[list[str], list[str]]] = {}  # glob -> what `match` found, oldest first
        self._kept = 0  # paths held in `_matches`
        self.cut_short = ""  # why the listing is incomplete, if it is
        self.unlisted: list[tuple[str, str]] = []  # subfolders that could not be listed ("a/b/", why)
        pending, listed = [(root, "")], 0
        while pending:
            folder, prefix = pending.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = list(itertools.islice(listing, MAX_ENTRIES - listed + 1))
            except OSError as exc:
                if folder is root:
                    raise
                self.unlisted.append((prefix, exc.strerror or str(exc)))  # what it holds is unknown, not absent
                continue
            listed += len(entries)
            if listed > MAX_ENTRIES:
                self.cut_short = f"the listing stopped after {MAX_ENTRIES:,} entries, so an unlisted file may match"
                entries, pending = entries[: len(entries) - (listed - MAX_ENTRIES)], []
            names = self.folders[prefix] = []
            for entry in entries:  # the common cases first, without a method call per entry
                rel = prefix + entry.name
                try:
                    if entry.name.casefold() == GIT_FOLDER:  # a checkout's: what it holds may be the job's token,
                        self.refused[rel] = f"a {GIT_FOLDER} folder or file, never read"  # and nothing in it is
                        # a run's output: absent to every check, as a run folder committed without it has none
                    elif entry.is_file(follow_symlinks=False):
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
        target, real_root = os.path.realpath(entry.path), self._real_root
        if os.path.commonpath([real_root, target]) != real_root:
            self.refused[rel] = "a link that resolves outside the workspace (treated as absent)"
        elif in_git_folder(target):
            self.refused[rel] = f"a link into a {GIT_FOLDER} folder, never read"
        elif os.path.isfile(target):
            self.files[rel] = target
        elif os.path.isdir(target):  # not followed, so what it holds is unknown, not absent (`file_absent` is unsure)
            self.refused[rel] = "a link to a folder (not followed)"
            self.unlisted.append((rel + "/", "it is a link to a folder, which diagbot does not follow"))
        else:
            self.refused[rel] = "a link to something other than a regular file (ignored)"

    @cached_property
    def _real_root(self) -> str:
        return os.path.realpath(self.root)

    def spend(self, steps: int) -> None:
        """Charge work about to be done; raises CaseLimit instead when it would take the case past MAX_CASE_STEPS
        (or the case is past it already), and the work is then not done."""
        self.spent += steps
        if self.spent > MAX_CASE_STEPS:
            raise CaseLimit(
                f"stopped: the case's checks reached its work budget of {MAX_CASE_STEPS:,} steps before this one "
                "was decided; use fewer or narrower checks (narrower globs, fewer phrases, simpler patterns)"
            )

    def match(self, pattern: str) -> tuple[list[str], list[str]]:
        """Files matching the glob, sorted, and notes about the first few matching entries that were refused. Like
        a shell, a glob whose wildcards are all in its last part looks only inside that one folder.

        Memoised, as the workspace does not change while it is judged: a `**` glob is tested against every path,
        and a case may ask for it in thousands of checks. The lists returned are shared; do not change them."""
        found = self._matches.get(pattern)
        if found is None:
            found = self._matches[pattern] = self._match(pattern)
            self._kept += len(found[0])
            while self._kept > MAX_MATCHES_KEPT:  # many distinct globs that each match much: forget the oldest
                self._kept -= len(self._matches.pop(next(iter(self._matches)))[0])
        return found

    def entries_not_files(self, pattern: str) -> list[str]:
        """Entries matching the glob that are there but not read as files: folders, links, FIFOs, sockets."""
        literal, folder, regex = _glob(pattern)
        if literal is not None:
            self.spend(1)
            return [literal] if literal in self.refused or literal + "/" in self.folders else []
        names = self.folders.get(folder, []) if folder is not None else list(self.refused)
        listed = sum(map(len, names)) + sum(map(len, self.folders))  # the folders' names are tested too
        self.spend(1 + len(names) + len(self.folders) + listed // _NAME_CHARS_PER_STEP)
        folders = [name[:-1] for name in self.folders if name and regex.fullmatch(name[:-1])]
        return sorted({*filter(regex.fullmatch, (n for n in names if n in self.refused)), *folders})

    def _match(self, pattern: str) -> tuple[list[str], list[str]]:
        literal, folder, regex = _glob(pattern)
        if literal is not None:
            self.spend(1)
            if literal in self.files:
                return [literal], []
            hits = [literal]
        else:
            names = self.folders.get(folder, []) if folder is not None else [*self.files, *self.refused]
            self.spend(1 + len(names) + sum(map(len, names)) // _NAME_CHARS_PER_STEP)
            hits = sorted(filter(regex.fullmatch, names))
        found = [rel for rel in hits if rel in self.files]
        refused = [rel for rel in hits if rel in self.refused]
        notes = [f"{rel} is {self.refused[rel]}" for rel in refused[:_SHOWN_FILES]]
        if len(refused) > _SHOWN_FILES:
            notes.append(f"...and {len(refused) - _SHOWN_FILES} more matching entries that are not read as files")
        unseen = self.unseen(pattern)
        if not found and unseen:
            notes.append(unseen)
        return found, [*notes, self.cut_short] if self.cut_short and not found else notes

    def unseen(self, pattern: str) -> str:
        """Why a file the glob matches may be in a subfolder that could not be listed, or ""."""
        written = "/".join(_segments(pattern))  # as the glob is matched: `./a//b` is `a/b`
        start, *wild = re.split(r"[*?\[]", written, maxsplit=1)  # the part before the first wildcard
        for prefix, why in self.unlisted[:MAX_ENTRIES]:  # each `folder/`
            self.spend(1)
            inside = start.startswith(prefix)  # the glob's fixed part leads into the folder
            if inside or (wild and prefix.startswith(start)):  # or a wildcard may lead there
                return f"folder {prefix} cannot be listed ({why}), so a file in it may match"
        return ""

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
            self.spend(1 + len(data) // _READ_BYTES_PER_STEP)  # after: what a read costs is known once it is made
        return blob

    def text(self, rel: str) -> tuple[str, str]:
        """The file as text, and a note when bytes were cut off or replaced; never fails on bad bytes."""
        blob = self.blob(rel)
        if blob.text is None:
            blob.text, blob.text_note, blob.utf8 = _decode(blob)
        return blob.text, blob.text_note

    def folded(self, rel: str) -> tuple[Folded, str]:
        """`text` normalised for matching (NFKC and case, capped: `core.text.fold`), and the same note."""
        text, note = self.text(rel)
        blob = self.blob(rel)
        if blob.folded is None:
            shown = len(text) if len(text) <= MAX_TEXT_CHARS else MAX_TEXT_CHARS  # what `fold` reads
            per_step = _FOLD_ASCII_CHARS_PER_STEP if text.isascii() else _FOLD_CHARS_PER_STEP
            self.spend(1 + shown // per_step)
            blob.folded = fold(text)
        return blob.folded, note

    def utf8(self, rel: str) -> tuple[bytes, str]:
        """`text` encoded as UTF-8 (without encoding again when the file was clean), and the same note."""
        blob = self.blob(rel)
        if blob.text is None:
            blob.text, blob.text_note, blob.utf8 = _decode(blob)
        if blob.utf8 is None:
            blob.utf8 = blob.text.encode()
        return blob.utf8, blob.text_note

    def json_ok(self, rel: str) -> tuple[bool, str]:
        """(ok, problem) as `json` says, without keeping the value when no check has asked for it. Always the full
        parse: a syntax-only shortcut passed a file that repeats a key, which `json` refuses, so the verdict
        depended on whether a json_query had read the file first."""
        blob = self.blob(rel)
        if blob.parsed is not None:
            return blob.parsed[0], blob.parsed[2]
        if blob.valid is None:
            self.spend(_parse_cost(blob))
            ok, _, problem = _parse(blob)
            blob.valid = ok, problem
        return blob.valid

    def json(self, rel: str) -> tuple[bool, Any, str]:
        """(ok, value, problem): JSON must be strict UTF-8 and fit under the read cap to be judged at all."""
        blob = self.blob(rel)
        if blob.parsed is None:
            self.spend(_parse_cost(blob))
            blob.parsed = _parse(blob)
        return blob.parsed


def _parse_cost(blob: _Blob) -> int:
    """Steps to parse the file as JSON: a file over the read cap is refused unparsed."""
    return 1 if blob.size > len(blob.data) else 1 + len(blob.data) // _JSON_BYTES_PER_STEP


def _decode(blob: _Blob) -> tuple[str, str, bytes | None]:
    """(text, note, the text's UTF-8 when it is a prefix of the bytes read, else None)."""
    truncated = blob.size > len(blob.data)
    cut = f"read only the first {_size(READ_CAP)} of {_bytes(blob.size)}" if truncated else ""
    try:
        return blob.data.decode(), cut, blob.data
    except UnicodeDecodeError as exc:
        if truncated and exc.reason == "unexpected end of data":  # the cap split a character
            whole = blob.data[: exc.start]
            return whole.decode(), cut, whole
        bad = f"not valid UTF-8 (bad byte at offset {exc.start}; bad bytes replaced)"
        return blob.data.decode(errors="replace"), "; ".join(filter(None, [cut, bad])), None


def _parse(blob: _Blob) -> tuple[bool, Any, str]:
    if blob.size > len(blob.data):
        return False, None, f"{_bytes(blob.size)} is over the {_size(READ_CAP)} read cap; not parsed"
    if not blob.data or blob.data.isspace():
        return False, None, "empty: no JSON in it"
    data = blob.data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write, as the other kinds skip it
    try:
        value = from_json(data, allow_inf_nan=False)  # the parser checks UTF-8 itself
        refuse_repeats(data, value)  # a repeated key: which of its values a query should read is unknown
        return True, value, "valid JSON"
    except json.JSONDecodeError as exc:  # a repeated key
        return False, None, f"not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})"
    except ValueError as exc:
        try:
            data.decode()  # from_json's own message for bad UTF-8 is unclear: name the offset instead
        except UnicodeDecodeError as bad:
            return False, None, f"not valid UTF-8 (first bad byte at offset {bad.start})"
        half = lone_surrogate(data, str(exc))  # its own message says only "unexpected end of hex escape"
        if half is not None:
            return False, None, half
        if "recursion limit" in str(exc):
            return False, None, "nested too deeply to read (arrays and objects inside one another, about 200 levels)"
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
    a `**` segment spans any number of folders.

    Built so that matching never goes back on a choice once made, which keeps one path's match linear in the
    path times the glob, whatever the glob (a plain translation is exponential in the wildcards: minutes for
    `**/*a*a*a*a*a*a*a*a*a*a*b` on one deep path, seconds per path for eight `**/a*`). Each part is an atomic
    group that matches one folder name or fails; each `**` but the last takes the fewest folders after which the
    parts up to the next `**` match, for good (taking more could only leave less for the rest); only the last
    `**` is left to choose, folder by folder from the end."""
    parts: list[str] = []
    for segment in _segments(pattern):
        if not (segment == "**" and parts and parts[-1] == "**"):  # `**/**` means what `**` means
            parts.append(segment)
    if parts and parts[-1] == "**":  # a trailing `**` is any folders, then one name
        parts.append("")
    last_double = max((index for index, part in enumerate(parts) if part == "**"), default=-1)
    out, open_group = [], False
    for index, part in enumerate(parts):
        if part == "**":
            out.append(")" if open_group else "")
            open_group = index != last_double
            out.append("(?>(?:[^/]++/)*?" if open_group else "(?:[^/]++/)*")
        else:
            out.append(_segment_regex(part) + ("/" if index < len(parts) - 1 else ""))
    return re.compile("".join(out))


def _segment_regex(segment: str) -> str:
    """One folder name's part of a glob. Without `*` it is a fixed run of one-character tests. With `*`s, each run
    between two of them is matched at its first place, atomically, and the last run at the last place: any match
    can be shifted to that one, so nothing is retried, and the whole is atomic too."""
    if not segment:
        return "[^/]+"
    runs: list[list[str]] = [[]]
    i = 0
    while i < len(segment):
        char, i = segment[i], i + 1
        start = i + 1 if segment[i : i + 1] == "!" else i
        end = segment.find("]", start + 1) if char == "[" else -1
        if char == "*":
            if runs[-1] or len(runs) == 1:  # `**` inside a name is one `*`
                runs.append([])
        elif char == "?":
            runs[-1].append("[^/]")
        elif end != -1:
            body = re.sub(r"([\\^\[\]&~|])", r"\\\1", segment[start:end])
            # never `/`, which a range holds ([+-0]); `[!-z]` is not `[^/-z]`, a range from `/` to `z`
            runs[-1].append(f"(?!/)[^{body}]" if start > i else f"(?!/)[{body}]")
            i = end + 1
        else:
            runs[-1].append(re.escape(char))
    if len(runs) == 1:
        return "".join(runs[0])
    first, *middle, last = ("".join(run) for run in runs)
    return "(?>" + first + "".join(f"(?>[^/]*?{run})" for run in middle) + "[^/]*" + last + ")"


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
        ws.spend(1)
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
    others = ws.entries_not_files(pattern)  # a folder, FIFO or link in its place is not its absence
    if others:
        return Outcome(False, f"present, but not as a regular file: {', '.join(others[:_SHOWN_FILES])}")
    unsure = ws.cut_short or ws.unseen(pattern)  # unsure is not a pass
    return Outcome(not unsure, f"no file matches {pattern!r}{_joined(refused)}")


# Each content kind is a glob plus a test of one file, returning (passed, detail).


def _valid_json_file(ws: Workspace, rel: str, _: None) -> tuple[bool, str]:
    return ws.json_ok(rel)


def _contains_file(ws: Workspace, rel: str, spec: ContainsSpec) -> tuple[bool, str]:
    folded, note = ws.folded(rel)  # normalised once per file and capped, however the file expands under NFKC
    ws.spend(len(spec.needles) * (1 + len(folded.text) // _PHRASE_CHARS_PER_STEP))
    found = folded.matches(spec.needles)
    if folded.cut:
        note = "; ".join(filter(None, [note, "only the start of the text was searched (the normalisation cap)"]))
    matched = set(found)
    missing = [needle for needle in spec.needles if needle not in matched]
    passed = bool(found) if spec.any_of is not None else not missing
    said = [f"found {_needles(found)}"] if found else []
    said += [f"missing {_needles(missing)}"] if missing else []
    return passed, "; ".join(said) + (f" ({note})" if note else "")


def _needles(needles: list[str]) -> str:
    more = f", ...and {len(needles) - _SHOWN_NEEDLES} more" if len(needles) > _SHOWN_NEEDLES else ""
    return ", ".join(one_line(n, _SHOWN_CHARS) for n in needles[:_SHOWN_NEEDLES]) + more


def _regex_file(ws: Workspace, rel: str, spec: RegexSpec) -> tuple[bool, str]:
    data, note = ws.utf8(rel)
    cost = 1 + len(data) * spec.compiled.program // _REGEX_INSTRUCTION_BYTES_PER_STEP
    ws.spend(cost)
    hit = spec.compiled.search(data)
    if hit is None and spec.dollar_before_newline and data.endswith(b"\n"):
        ws.spend(cost)
        hit = spec.compiled.search(data[:-1])
    if hit is not None:  # 4 bytes per character at most: enough bytes for the characters shown
        start, end = hit
        shown = data[start : min(end, start + 4 * _SHOWN_CHARS)].decode(errors="replace")[:_SHOWN_CHARS]
        said = f"matched {excerpt(shown, _SHOWN_CHARS)!r}"  # short and scrubbed: details reach reports and comments
    else:
        said = f"no match for /{spec.pattern}/"
    return hit is not None, said + (f" ({note})" if note else "")


def _preview(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, default=str)[:80]`, written only as far as needed: a value built by
    `[@, @]` thirty times over shares its parts, and written out in full it would not fit in memory."""
    if not isinstance(value, list | dict):
        return _scalar_json(value)[:_SHOWN_CHARS]
    out, size, todo = [], 0, [iter((value,))]
    while todo and size < _SHOWN_CHARS:
        item = next(todo[-1], _END)
        if item is _END:
            todo.pop()
        elif isinstance(item, _Raw):
            out.append(item.text)
            size += len(item.text)
        elif isinstance(item, list):
            todo.append(_list_parts(item))
        elif isinstance(item, dict):
            todo.append(_dict_parts(item))
        else:
            text = _scalar_json(item)
            out.append(text)
            size += len(text)
    return "".join(out)[:_SHOWN_CHARS]


def _scalar_json(item: Any) -> str:
    """A string (only as much as can be shown), number, boolean or null as JSON."""
    return json.dumps(item[:_SHOWN_CHARS] if isinstance(item, str) else item, ensure_ascii=False, default=str)


class _Raw(NamedTuple):
    text: str


_END = _Raw("")


def _list_parts(items: list[Any]) -> Iterator[Any]:
    yield _Raw("[")
    for index, item in enumerate(items):
        if index:
            yield _Raw(", ")
        yield item
    yield _Raw("]")


def _dict_parts(members: dict[str, Any]) -> Iterator[Any]:
    yield _Raw("{")
    for index, (key, member) in enumerate(members.items()):
        yield _Raw((", " if index else "") + json.dumps(key[:_SHOWN_CHARS], ensure_ascii=False) + ": ")
        yield member
    yield _Raw("}")


def _type_problem(exc: JMESPathTypeError) -> str:
    """JMESPath's own message, with the offending value shown shortened (its own writes all of it)."""
    try:
        shown = excerpt(_preview(exc.current_value), _SHOWN_CHARS)  # scrubbed: it may quote a secret of the file
    except (ValueError, RecursionError):  # a number past Python's 4,300-digit limit for writing one
        shown = "(a value too large to show)"
    return (
        f"In function {exc.function_name}(), invalid type for value: {shown}, "
        f'expected one of: {exc.expected_types}, received: "{exc.actual_type}"'
    )


def _json_query_file(ws: Workspace, rel: str, spec: JsonQuerySpec) -> tuple[bool, str]:
    ok, value, problem = ws.json(rel)
    if not ok:
        return False, problem
    ws.spend(1)  # a query's own steps are known only once it has run: charged then, and it stops at its own bound
    try:
        try:
            result = run_query(spec.expr, value)
        finally:
            ws.spent += query_steps()
        shown = _preview(result)
    except QueryLimitError as exc:
        return False, f"{spec.expr} {exc}"
    except RecursionError:
        return False, f"{spec.expr} stopped: nested too deeply to evaluate"
    except JMESPathTypeError as exc:
        return False, f"{spec.expr} failed: {_type_problem(exc)}"
    except (JMESPathError, TypeError, ValueError) as exc:
        return False, f"{spec.expr} failed: {exc}"
    return truthy(result), f"{spec.expr} -> {excerpt(shown, _SHOWN_CHARS)}"


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
    """Dispatch through the registry; a listing or read error, or the case's work budget running out, becomes a
    failed check, never an exception."""
    try:
        ws.spend(1)
        return CHECKS[check.kind](ws, check.payload)
    except CaseLimit as exc:
        return Outcome(False, str(exc))
    except OSError as exc:
        return Outcome(False, f"could not read the workspace ({exc.strerror})")
