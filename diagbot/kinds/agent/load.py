"""Reading an agent suite's case files: a folder of YAML/JSON files (or one file), each holding one case, a list
of cases, or `{defaults, cases}`. Every problem is collected (file, case, field, the closest known name) and the
suite is refused with all of them, as the trace suite's case file is."""

from __future__ import annotations

import difflib
import json
import os
import re
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import yaml
from pydantic import ValidationError

from diagbot.core import stack, values
from diagbot.core.errors import CaseFileError
from diagbot.core.fs import FileProblem, read_bounded
from diagbot.core.models import error_message, field_homes, field_names_at, literal_choices
from diagbot.core.text import Suggestions, closest, listing
from diagbot.kinds.agent import rag
from diagbot.kinds.agent.cases import CASE_ID_PATTERN, FIELD_NAMES, SHAPE_TAGS, AgentCase, Check
from diagbot.kinds.agent.match import show

MAX_CASE_FILE_BYTES = 16 * 1024 * 1024
MAX_CASE_FILES = 100_000
MAX_SUITE_PROBLEMS = 10_000  # problems said of one suite's cases before the rest are left unread
MAX_CASE_PROBLEMS = 100  # problems said of one case's fields
MAX_YAML_SEPARATORS = 2_000_000  # line breaks and commas in a YAML case file: a bound on its values, found cheaply
MAX_LISTED = 1_000_000  # entries (of any kind) listed under a cases folder
CASE_SUFFIXES = (".yaml", ".yml", ".json")
_PLAIN_ID = re.compile(CASE_ID_PATTERN)
_ID_LINE = re.compile(r"""case_id["']?\s*:\s*["']?([A-Za-z0-9][A-Za-z0-9._-]*)""")  # a literal start: searched fast
FIELD_SUGGESTIONS = 50  # distinct misspelt fields of one suite that are given the closest known name
RULE_CREDIT = 5  # rule names compared for suggestions, per rule the suite defines and per unknown name met
MAX_RULE_COMPARISONS = 20_000  # and at most this many in one suite


class RuleNames:
    """A suite's rules as unknown-rule problems name them: the sorted, capped listing built once, and the closest
    rule looked up once per unknown name. A lookup compares the name with every rule (difflib), so the names
    compared are bounded: RULE_CREDIT per rule defined and per unknown name met (work in proportion to what the
    suite's config and case files hold), and at most MAX_RULE_COMPARISONS."""

    def __init__(self, rules: dict[str, Check]) -> None:
        self.rules = rules
        self.listing = listing(sorted(rules))
        self._names = tuple(rules)
        self._credit = RULE_CREDIT * len(rules)  # names that may still be compared
        self._spent = 0
        self._found: dict[str, str | None] = {}

    def closest(self, ref: str) -> tuple[bool, str | None]:
        """(whether `ref` was compared with the rules, the closest of them or None)."""
        self._credit += RULE_CREDIT
        if ref in self._found or not self._names:
            return True, self._found.get(ref)
        cost = len(self._names)
        if cost > self._credit or self._spent + cost > MAX_RULE_COMPARISONS:
            return False, None
        self._credit -= cost
        self._spent += cost
        self._found[ref] = found = closest(ref, self._names)
        return True, found


@dataclass(frozen=True)
class LoadedCase:
    case: AgentCase
    file: Path  # where the case is written, for annotations
    label: str  # the file as messages name it
    line: int
    index: int = 0  # its number in its file, from 0


def case_files(root: Path, label: str, unread: list[str] | None = None) -> list[tuple[Path, str]]:
    """The case files of a suite, sorted: `root` itself, or the *.yaml/*.yml/*.json under it, in any case (links to
    folders are not followed, hidden entries are skipped). `unread`, when given, is set to the files of the same
    walk that look meant as case files but are not read as one (`unread_warning`)."""
    if unread is not None:
        unread.clear()  # the last walk's: a suite whose files are read again is walked again
    if root.is_file() or (root.exists() and not root.is_dir()):  # a FIFO or a device: reading it says what it is
        return [(root, label)]
    if not root.is_dir():
        raise CaseFileError(f"{label}: no such case file or folder; check the suite's cases path in diagbot.yml")
    found: list[tuple[Path, str]] = []
    links: list[Path] = []
    for path in _entries(root, label, links):
        if path.name.lower().endswith(CASE_SUFFIXES):  # `X.YAML` is a case file too
            found.append((path, _shown(path, root, label)))
            if len(found) > MAX_CASE_FILES:
                raise CaseFileError(f"{label}: holds more than {MAX_CASE_FILES:,} case files; split the suite")
        elif unread is not None and _LOOKS_LIKE_CASES.search(path.name):
            unread.append(_shown(path, root, label))
    if unread is not None:  # a link to a folder, never followed: named with a slash (`unread_warning`)
        unread += [_shown(link, root, label) + "/" for link in links]
    return sorted(found, key=lambda pair: pair[1])


def unread_warning(unread: list[str]) -> list[str]:
    """A warning naming the files of a cases folder that look meant as case files but are not read as one
    (`refund.yaml.txt`, `refund.json.bak`, `runs.jsonl`, as `case_files` found them): the suite would lose their
    cases without a word."""
    said = []
    linked = sorted(name for name in unread if name.endswith("/"))
    if linked:
        shown = ", ".join(linked[:_UNREAD_NAMED]) + _more(linked)
        said.append(
            f"{shown} is a link to a folder, which diagbot does not follow: no case file in it is read; move its case "
            "files into the cases folder, or make it a plain folder"
            if len(linked) == 1
            else f"{shown} are links to folders, which diagbot does not follow: no case file in them is read; move "
            "their case files into the cases folder, or make them plain folders"
        )
    named = sorted(name for name in unread if not name.endswith("/"))
    if named:
        said.append(
            f"{', '.join(named[:_UNREAD_NAMED])}{_more(named)} {'is' if len(named) == 1 else 'are'} not read: only "
            f"files ending in .yaml, .yml or .json hold cases; rename {'it' if len(named) == 1 else 'them'} so, or "
            f"move {'it' if len(named) == 1 else 'them'} out of the cases folder"
        )
    return said


def _more(named: list[str]) -> str:
    return f" and {len(named) - _UNREAD_NAMED:,} more" if len(named) > _UNREAD_NAMED else ""


_LOOKS_LIKE_CASES = re.compile(r"(?i)\.(?:ya?ml|json)")
_UNREAD_NAMED = 10


def _entries(root: Path, label: str, links: list[Path]) -> Iterator[Path]:
    """Each file under the folder `root`, hidden entries left out; each link to a folder, which is not followed,
    appended to `links`; at most MAX_LISTED entries of any kind are listed."""
    listed = 0
    for folder, dirs, files in os.walk(root):
        listed += len(dirs) + len(files)
        if listed > MAX_LISTED:  # other files count too: a folder of millions of them is no suite
            raise CaseFileError(f"{label}: holds more than {MAX_LISTED:,} entries; split the suite")
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        links += [Path(folder) / name for name in dirs if os.path.islink(os.path.join(folder, name))]
        for name in sorted(files):
            if not name.startswith("."):
                yield Path(folder) / name


def _shown(path: Path, root: Path, label: str) -> str:
    """A file under the cases folder as messages name it: escaped (`one_line`), as an unusual name is refused."""
    return f"{label.rstrip('/')}/{values.one_line(path.relative_to(root).as_posix(), 300)}"


def _loc(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif part not in SHAPE_TAGS:
            text += f".{part}" if text else str(part)
    return text or "the case"


_SYNONYMS = {  # what other tools call a field: `{name: ...}` for a call is as OpenAI writes it, not a case's `tool`
    "name": "tool", "tool_name": "tool", "function": "tool", "tool": "name",
    "arguments": "args", "parameters": "args", "params": "args", "input": "args",
}  # fmt: skip


def _synonym(key: Any, known: Sequence[str]) -> str | None:
    """The known field that another tool's name for it (`_SYNONYMS`) means, when difflib finds none."""
    meant = _SYNONYMS.get(key) if isinstance(key, str) else None
    return meant if meant in known and key not in known else None


def describe(
    error: Any, model: type[AgentCase] | type[Check] = AgentCase, suggestions: Suggestions | None = None
) -> str:
    """One pydantic error as a sentence naming the field; typos get the closest known name (from `suggestions`,
    the suite's, while its budget lasts)."""
    loc, kind = tuple(error["loc"]), error["type"]
    where = _loc(loc)
    if kind == "extra_forbidden":
        known = field_names_at(model, tuple(p for p in loc if p not in SHAPE_TAGS))
        home = field_homes(model).get(loc[-1]) if isinstance(loc[-1], str) else None
        parent = ".".join(p for p in loc[:-1] if isinstance(p, str) and p not in SHAPE_TAGS)
        if home and home != parent and not _synonym(loc[-1], known):  # a field of another part of the case
            return f"unknown field '{values.one_line(where, 200)}' (it belongs under {home})"
        close = (suggestions or Suggestions(FIELD_SUGGESTIONS)).closest(str(loc[-1]), known) or _synonym(loc[-1], known)
        return f"unknown field '{values.one_line(where, 200)}'" + (f" (did you mean {close}?)" if close else "")
    if kind == "missing":
        return f"missing required field '{where}'"
    found = values.one_line(values.excerpt(show(error.get("input")), 60))
    if kind == "literal_error":
        allowed, hint = literal_choices(error)
        return f"'{where}': {found} is not one of {', '.join(allowed)}{hint}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):  # not "or instance of EvaluatorConfig"
        return f"'{where}': expected an object (a mapping) (found {found})"
    if kind == "string_pattern_mismatch" and loc == ("case_id",):  # the pattern alone says it to regex readers
        return f"'case_id': {CASE_ID_RULE} (found {found})"
    message = error_message(error)
    lowered = message[:2].isupper() or message[:1].islower()  # an acronym (JMESPath) keeps its capital
    said = f"'{where}': {message if lowered else message[0].lower() + message[1:]} (found {found})"
    if kind == "string_type" and isinstance(error.get("input"), int | float):  # YAML reads `case_version: 3` as 3
        said += "; put it in quotes to write it as a text"
        if isinstance(error.get("input"), float):  # what was written may be lost: `1.10` is read as 1.1
            said += " (unquoted, it is read as a number, and 1.10 becomes 1.1)"
    return said


CASE_ID_RULE = (
    "a case_id is 1 to 200 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit, since it names "
    "the case's run file (FIXTURES/<case_id>.json); put other text in the title"
)


def _text(blob: bytes) -> str:
    """The file as text, without the byte-order mark some editors start UTF-8 with."""
    try:
        return blob.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise FileProblem(f"is not UTF-8 text (byte {exc.start})") from None


def _first_problems(where: str, count: int) -> str:
    """Said before the first MAX_CASE_PROBLEMS of a case's (or a file's defaults') `count` problems."""
    return (
        f"{where}: {count:,} problems; the first {MAX_CASE_PROBLEMS} follow, fix them and run diagbot validate again "
        "for the rest"
    )


def _separators(text: str) -> int:
    """The line breaks and commas of a YAML text, every line break YAML reads counted: a lone CR, NEL and the
    Unicode line and paragraph separators too (a file of `-\r` had 8,000,000 values past a count of newlines)."""
    breaks = text.count("\n") + text.count("\r") - text.count("\r\n")
    return breaks + text.count(",") + text.count("\x85") + text.count("\u2028") + text.count("\u2029")


def _decode(text: str, label: str) -> Any:
    if not text.strip():
        raise CaseFileError(f"{label}: the case file is empty; write one case, a list of cases, or {{defaults, cases}}")
    try:
        with stack.headroom():  # as deep whether the suite is read for workers or in one process
            if label.lower().endswith(".json"):
                return values.loads_written(text)
            if _separators(text) > MAX_YAML_SEPARATORS:  # PyYAML builds an object for each value
                raise CaseFileError(
                    f"{label}: holds more than {MAX_YAML_SEPARATORS:,} lines and commas, more YAML values than diagbot "
                    "reads in one case file; split its cases into several files (or write it as JSON)"
                )
            return values.load_yaml(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(f"{label}:{exc.lineno}:{exc.colno}: not valid JSON ({exc.msg})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise CaseFileError(f"{label}{at}: not valid YAML ({values.yaml_problem(exc)})") from None
    except values.BadNumber as exc:
        raise CaseFileError(f"{label}: holds {exc}") from None
    except RecursionError:
        raise CaseFileError(f"{label}: nested too deeply to be a case file") from None
    except ValueError as exc:  # PyYAML's int() of a number with thousands of digits
        raise CaseFileError(f"{label}: holds a value diagbot cannot read ({str(exc)[:80]})") from None


def _split(
    data: Any, label: str, problems: list[str], suggestions: Suggestions, path: Path | None = None
) -> tuple[dict[str, Any], list[Any]]:
    """(defaults, raw cases) of one file's decoded content; `path`: the file, for the line of a default's fault."""
    if isinstance(data, list):
        return {}, data
    if not isinstance(data, dict):
        problems.append(
            f"{label}: expected a case, a list of cases, or {{defaults, cases}}; found "
            + ("nothing (only comments)" if data is None else values.type_name(data))
        )
        return {}, []
    if "cases" not in data and "defaults" not in data:
        return {}, [data]  # one case
    unknown = sorted(values.one_line(str(k), 100) for k in data if k not in ("defaults", "cases"))
    absent = [name for name in ("defaults", "cases") if name not in data]  # what a misspelt key may have meant
    near = {k: closest(k, absent) if absent else None for k in unknown[:20]}
    if "cases" not in data:  # `{defaults, case: [...]}`: no case field is called defaults
        typo = next((k for k, name in near.items() if name == "cases"), None)
        problems.append(
            f"{label}: has 'defaults' but no 'cases'" + (f" ('{typo}': did you mean cases?)" if typo else "")
            + "; a file of {defaults, cases} lists its cases under 'cases'"
        )  # fmt: skip
        return {}, []
    if unknown:
        problems.append(
            f"{label}: unknown top-level key(s) {listing(unknown)}"
            + "".join(f" ('{k}': did you mean {name}?)" for k, name in near.items() if name)
            + "; a file with 'cases' may also have 'defaults'"
        )
    defaults, cases = data.get("defaults"), data.get("cases")
    if defaults is None:  # left out, or written empty (`defaults:`)
        defaults = {}
    elif not isinstance(defaults, dict):  # `[]`, `false`, `""` were taken for no defaults
        problems.append(f"{label}: 'defaults' must be a mapping of case fields")
        defaults = {}
    lines = FieldLines()
    wrong = [key for key in defaults if key == "case_id" or key not in FIELD_NAMES]
    if len(wrong) > MAX_CASE_PROBLEMS:  # as of one case's fields
        problems.append(_first_problems(f"{label}: defaults", len(wrong)))
    for key in wrong[:MAX_CASE_PROBLEMS]:
        line = lines.line(path, None, (key,)) if path is not None and isinstance(key, str) else None
        where = f"{label}:{line}: defaults" if line else f"{label}: defaults"
        if key == "case_id":
            problems.append(f"{where}: case_id cannot have a default; give each case its own")
        else:
            close = suggestions.closest(str(key), FIELD_NAMES)
            problems.append(
                f"{where}: unknown field '{values.one_line(str(key), 200)}'"
                + (f" (did you mean {close}?)" if close else "")
            )
    if not isinstance(cases, list):
        problems.append(f"{label}: 'cases' must be a list of cases")
        return defaults, []
    return {k: v for k, v in defaults.items() if k in FIELD_NAMES and k != "case_id"}, cases


def _from_defaults(loc: tuple[Any, ...], defaults: dict[str, Any], raw: dict[str, Any]) -> bool:
    """Whether the value at `loc` of a merged case came from the file's defaults (one level deep in metadata)."""
    if not loc or loc[0] not in defaults:
        return False
    if loc[0] not in raw:
        return True
    inner, given = defaults[loc[0]], raw[loc[0]]
    return (
        loc[0] == "metadata" and len(loc) > 1 and isinstance(inner, dict) and isinstance(given, dict)
        and loc[1] in inner and loc[1] not in given
    )  # fmt: skip


def _merged(defaults: dict[str, Any], raw: dict[str, Any]) -> dict[str, Any]:
    merged = {**defaults, **raw}
    if isinstance(defaults.get("metadata"), dict) and isinstance(raw.get("metadata"), dict):
        merged["metadata"] = {**defaults["metadata"], **raw["metadata"]}
    return merged


def _lines(text: str, comments: bool) -> dict[str, deque[int]]:
    """The lines of each `case_id: ...` written as a key, in one pass, in file order (a repeated id has its own),
    for messages and annotations: not one inside a text (`title: "dup of case_id: a2"`, an escaped `\\"case_id\\"`
    in JSON) and, with `comments` (YAML), not one after a `#` on its line (`# case_id: a2 is ...`). A YAML block
    text whose line starts with one is taken for a key. Each stretch of the text is looked at once, however long its
    lines (a JSON file of 10,000 cases is one line)."""
    lines: dict[str, deque[int]] = {}
    line, pos, line_start, hashed = 1, 0, 0, -1
    for match in _ID_LINE.finditer(text):
        start = match.start()
        newline = text.rfind("\n", pos, start)
        if newline != -1:
            line += text.count("\n", pos, start)
            line_start = newline + 1
        if comments:
            hashed = max(hashed, text.rfind("#", max(pos, line_start), start))
        pos = start
        if hashed >= line_start or not _written_as_key(text, start, line_start, yaml=comments):
            continue
        lines.setdefault(match.group(1), deque()).append(line)
    return lines


def _written_as_key(text: str, start: int, line_start: int, yaml: bool) -> bool:
    """Whether the `case_id` at `start` is a mapping's key. JSON: quoted, after `{` or `,` (a quote in a text is
    escaped, so `\\"case_id\\"` is none). YAML: with nothing before it on its line but indentation and list dashes,
    or after `{` or `,` on a line that starts a flow mapping or list (`- {title: t, case_id: a2}`); a quoted text
    of such a line, or a line of a block text, that holds `case_id: ...` is still taken for one."""
    at = start - (start > 0 and text[start - 1] in ("\"'" if yaml else '"'))
    if at == start and not yaml:
        return False
    if yaml and at - line_start <= _KEY_LEAD and not text[line_start:at].replace("-", " ").strip(" \t"):
        return True
    if yaml and text[line_start : line_start + _KEY_LEAD].lstrip(" \t-")[:1] not in ("{", "["):
        return False
    return text[max(0, at - _KEY_LEAD) : at].rstrip(" \t\r\n").endswith(("{", ","))


_KEY_LEAD = 200  # the characters looked through before a key for what leads it


def load_cases(root: Path, label: str, rules: dict[str, Check]) -> list[LoadedCase]:
    """Every case of the suite, in file order; raises CaseFileError listing every problem found."""
    problems: list[str] = []
    loaded = list(iter_cases(root, label, rules, problems))
    if problems:
        raise CaseFileError(*problems)
    return loaded


@dataclass(frozen=True)
class RawCase:
    """One case as its file holds it, merged with the file's defaults, before validation."""

    data: dict[str, Any]  # the case merged with its file's defaults
    raw: dict[str, Any]  # the case as written
    defaults: dict[str, Any]
    path: Path
    shown: str  # the file as messages name it
    named: str  # `case ID`, or `case #N` (its number in the file) when its id is unusable
    line: int | None  # the line of its case_id, when found (a case named by number has none)
    said_of_defaults: set[str]  # the file's faults of its defaults said so far (shared by its cases)
    index: int  # its number in the file, from 0

    @property
    def where(self) -> str:
        """The case as messages name it: `FILE:LINE: case ID`."""
        return self.at(self.line)

    def at(self, line: int | None) -> str:
        """The case as messages name it, at the given line of its file when that is known."""
        return f"{self.shown}:{line}: {self.named}" if line else f"{self.shown}: {self.named}"


def iter_cases(
    root: Path,
    label: str,
    rules: dict[str, Check],
    problems: list[str],
    read: list[RawCase] | None = None,
    unread: list[str] | None = None,
    valid: list[LoadedCase] | None = None,
) -> Iterator[LoadedCase]:
    """The suite's valid cases one at a time, in file order, each problem found appended to `problems` meanwhile.
    A caller that needs all cases to be valid checks `problems` once the iterator is exhausted: evaluation does,
    so that a suite of 10,000 cases never holds 10,000 case models at once. `read`: the suite's files as
    `read_cases` read them, when they were read already; `unread`: as `case_files` takes it; `valid`, when given,
    also gets, in order, each case whose fields are valid but that has a problem in this suite (`case_problems`),
    for `validate` to warn of it all the same."""
    suggestions = Suggestions(FIELD_SUGGESTIONS)  # one for the whole suite: every file's misspelt fields share it
    rule_names = RuleNames(rules)
    ids = CaseIds()
    lines = FieldLines()
    for item in raw_cases(root, label, problems, suggestions, unread) if read is None else read:
        if len(problems) >= MAX_SUITE_PROBLEMS:  # the suite is unusable: a million bad cases are not all read
            problems.append(
                f"{label}: stopped after {len(problems):,} problems, before {item.where}; fix these, then run diagbot "
                "validate again for the rest"
            )
            return
        case = _validated(item, problems, suggestions, lines)
        if case is None:  # its id still counts: a duplicate is said now, not once the other faults are fixed
            case_id = item.raw.get("case_id")
            plain = isinstance(case_id, str) and _PLAIN_ID.fullmatch(case_id) is not None
            clash = ids.clash(str(case_id), item.shown) if plain else None
            if clash:
                problems.append(f"{item.where}: {clash}")
            continue
        clash = ids.clash(case.case_id, item.shown)
        if clash:
            problems.append(f"{item.where}: {clash}")
            continue
        found = case_problems(case, rules, rule_names)
        problems += [
            f"{item.at(lines.of(p, item.path, item.index, item.line) if item.line else None)}: {p}" for p in found
        ]
        loaded = LoadedCase(case, item.path, item.shown, item.line or 1, item.index)
        if valid is not None:
            valid.append(loaded)
        if not found:
            yield loaded


def raw_cases(
    root: Path, label: str, problems: list[str], suggestions: Suggestions, unread: list[str] | None = None
) -> Iterator[RawCase]:
    """Each case of the suite's files as written (merged with its file's defaults), in file order; the problems of
    the files themselves (unreadable, not a case, a default that is wrong) appended to `problems` meanwhile."""
    folder = root.resolve() if root.is_dir() else None
    for path, shown in case_files(root, label, unread):
        yield from file_cases(path, shown, folder, problems, suggestions)


def file_cases(
    path: Path,
    shown: str,
    folder: Path | None,
    problems: list[str],
    suggestions: Suggestions,
) -> Iterator[RawCase]:
    """`raw_cases` of one case file of the suite (`folder`: the resolved cases folder, None for a suite of one
    file)."""
    text = _file_text(path, shown, folder, problems)
    if text is not None:
        cases = _text_cases(text, path, shown, problems, suggestions)
        del text  # the cases' reading lets it go once decoded, so that it adds nothing to the peak
        yield from cases


def _file_text(path: Path, shown: str, folder: Path | None, problems: list[str]) -> str | None:
    """A case file's text, or None with its problem said (a name no output can carry, a link out of the cases
    folder, a file too large or not UTF-8)."""
    if not values.plain_name(path.name):
        problems.append(f"{shown}: a case file name with a control character or undecodable byte; rename it")
        return None
    try:  # the walk follows no folder links, so only a file that is a link itself can lead elsewhere
        if folder is not None and path.is_symlink() and not path.resolve().is_relative_to(folder):
            problems.append(f"{shown}: a link that leads outside the cases folder; diagbot does not follow it")
            return None
        return _text(read_bounded(path, MAX_CASE_FILE_BYTES))
    except FileProblem as problem:
        split = "; split its cases into several files" if problem.too_big else ""
        problems.append(f"{shown}: the case file {problem.message}{split}")
    except (OSError, RuntimeError):
        problems.append(f"{shown}: cannot be resolved (a symbolic link loop?)")
    return None


def _text_cases(text: str, path: Path, shown: str, problems: list[str], suggestions: Suggestions) -> Iterator[RawCase]:
    """The cases of a case file's text, decoded whole, each with the line its `case_id` is on."""
    try:
        data = _decode(text, shown)
    except CaseFileError as exc:
        problems += exc.problems
        return
    defaults, raw_list = _split(data, shown, problems, suggestions, path)
    surrogates = values.may_hold_surrogates(text)
    bad_defaults = values.surrogate_paths(defaults) if surrogates else []
    if bad_defaults:
        problems.append(
            f"{shown}: defaults: {', '.join(bad_defaults)} holds a lone surrogate, which is not Unicode text"
        )
        defaults = {}
    lines = _lines(text, comments=not path.name.lower().endswith(".json"))
    said_of_defaults: set[str] = set()
    del data, text  # from here on `raw_list` holds the only reference, and each case is let go once it is read
    for index, raw in enumerate(raw_list):
        raw_list[index] = None  # its memory goes to the models built next, instead of adding to the peak
        item = _raw_case(raw, index, defaults, path, shown, surrogates, problems, said_of_defaults, lines)
        if item is not None:
            yield item


def _raw_case(
    raw: Any,
    index: int,
    defaults: dict[str, Any],
    path: Path,
    shown: str,
    surrogates: bool,
    problems: list[str],
    said_of_defaults: set[str],
    lines: dict[str, deque[int]] | None = None,
) -> RawCase | None:
    """The file's case number `index` (decoded: `raw`) merged with the file's defaults, or None with its problem
    said (not a mapping, a lone surrogate). `surrogates`: whether its text may hold one."""
    named = f"case #{index + 1}"
    if not isinstance(raw, dict):
        problems.append(f"{shown}: {named}: expected a mapping of case fields, found {values.type_name(raw)}")
        return None
    case_id = raw.get("case_id")
    found = lines.get(case_id) if lines and isinstance(case_id, str) else None
    line = (found.popleft() if len(found) > 1 else found[0]) if found else None  # a repeated id: its next line
    if isinstance(case_id, str) and _PLAIN_ID.fullmatch(case_id):  # others are named by number, not echoed
        named = f"case {case_id}"
    else:
        line = None
    item = RawCase(_merged(defaults, raw), raw, defaults, path, shown, named, line, said_of_defaults, index)
    bad = values.surrogate_paths(raw) if surrogates else []
    if bad:
        problems.append(f"{item.where}: {', '.join(bad)} holds a lone surrogate, which is not Unicode text")
        return None
    return item


@dataclass(frozen=True)
class CaseFile:
    """A case file of the suite, not read yet."""

    path: Path
    shown: str
    folder: Path | None  # the resolved cases folder; None for a suite of one file


MAX_LOCATED_BYTES = 2 * 1024 * 1024
"""Case files up to this size have each fault of a field said at the field's line; in a larger one, a case's at
the line of its case_id."""


_FIELD_FIRST = re.compile(r"([a-z_]{1,60}(?:\[\d{1,6}\]|\.[a-z_]{1,60}){0,8})[: ]")
_PART = re.compile(r"[a-z_]+|\d+")
_CASE_FIELDS = frozenset(FIELD_NAMES)


class FieldLines:
    """The line of a field of a case or of the file's defaults, for the message of its fault. The file is read
    again and composed into YAML nodes (a JSON file reads as YAML too), once per file and only for a file with a
    fault: a suite without one costs nothing. Where the field cannot be found (the file will not compose, or is
    larger than MAX_LOCATED_BYTES), there is no line, and the message gives the case's."""

    def __init__(self) -> None:
        self._path: Path | None = None
        self._root: yaml.Node | None = None
        self._keys: dict[int, dict[Any, tuple[yaml.Node, yaml.Node]]] = {}  # a mapping node's pairs by key, built once

    def of(self, message: str, path: Path, index: int, line: int) -> int:
        """The line of the field a message of case number `index` begins with (`negative_behavior[1]: ...`), when
        the case writes it; else `line`, the line of the case's id. Only a file with such a message is read again."""
        field = _FIELD_FIRST.match(message)
        loc = tuple(int(part) if part.isdigit() else part for part in _PART.findall(field[1])) if field else ()
        if not loc or loc[0] not in _CASE_FIELDS:  # "no negative_behavior; ...": no file is read for it
            return line
        return self.line(path, index, loc) or line

    def line(self, path: Path, index: int | None, loc: tuple[Any, ...]) -> int | None:
        """The line of `loc` in the file's case number `index`, or in its `defaults` (`index` None)."""
        if path != self._path:
            self._path, self._root, self._keys = path, _composed(path), {}
        node = self._case_node(index) if index is not None else self._defaults_node()
        line = None
        for part in loc:
            if isinstance(part, int) and isinstance(node, yaml.SequenceNode) and 0 <= part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            elif isinstance(part, str) and isinstance(node, yaml.MappingNode):
                pair = self._pairs(node).get(part)
                if pair is None:
                    if part in SHAPE_TAGS:  # pydantic's name of a union's branch: no key of the file
                        continue
                    break
                line, node = pair[0].start_mark.line + 1, pair[1]
            elif part not in SHAPE_TAGS:
                break
        return line

    def _defaults_node(self) -> yaml.Node | None:
        pair = self._pairs(self._root).get("defaults") if isinstance(self._root, yaml.MappingNode) else None
        return None if pair is None else pair[1]

    def _case_node(self, index: int) -> yaml.Node | None:
        """The node of the file's case number `index`: in a list of cases, in the `cases` of `{defaults, cases}`, or
        the file's one case."""
        root = self._root
        if isinstance(root, yaml.MappingNode):
            cases = self._pairs(root).get("cases")
            if cases is not None and isinstance(cases[1], yaml.SequenceNode):
                root = cases[1]
            elif index == 0:
                return root
        if isinstance(root, yaml.SequenceNode) and 0 <= index < len(root.value):
            case: yaml.Node = root.value[index]
            return case
        return None

    def _pairs(self, node: yaml.MappingNode) -> dict[Any, tuple[yaml.Node, yaml.Node]]:
        """The node's (key, value) pairs by the key's text, the first of a repeated key: a case of many faulty keys
        looks each up at once, not by a walk over all of them."""
        pairs = self._keys.get(id(node))
        if pairs is None:
            pairs = self._keys[id(node)] = {}
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    pairs.setdefault(key.value, (key, value))
        return pairs


_SURROGATE_PAIR = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")
"""A character past U+FFFF as JSON escapes it (`\\ud83d\\ude00`, as Python's json writes an emoji), which YAML
refuses: replaced by one letter before composing (within its line, so no line moves)."""


def _composed(path: Path) -> yaml.Node | None:
    try:
        text = _text(read_bounded(path, MAX_LOCATED_BYTES))
    except (FileProblem, OSError):
        return None
    return values.compose_yaml(_SURROGATE_PAIR.sub("x", text) if path.name.lower().endswith(".json") else text)


@dataclass(frozen=True)
class CaseText:
    """A case of a JSON case file, not decoded yet: where its text is in the file's. Workers decode the cases they
    judge, so that a suite of 10,000 cases in one file is never held decoded (and their pages of it never copied)."""

    text: str  # the whole file's text, shared by its cases
    start: int
    end: int
    index: int  # the case's number in its file, from 0
    levels: int  # the file's levels above the case: 1 in a list of cases, 2 in the `cases` of `{defaults, cases}`
    defaults: dict[str, Any]  # the file's defaults, checked
    path: Path
    shown: str
    said_of_defaults: set[str]


Unit = RawCase | CaseText


def read_cases(
    root: Path, label: str, files_at: int | None = None, unread: list[str] | None = None
) -> list[Unit] | list[CaseFile] | None:
    """Every case of the suite's files as written, or None when a file has a problem (`iter_cases` then reads them
    again, saying each problem in its place). The cases of a JSON file are given undecoded (`CaseText`: `decode`
    reads one). A suite of `files_at` files or more is left unread: its files, for workers to read."""
    listed = case_files(root, label, unread)  # listed once: the folder may be large
    folder = root.resolve() if root.is_dir() else None
    if files_at is not None and len(listed) >= files_at:
        return [CaseFile(path, shown, folder) for path, shown in listed]
    problems: list[str] = []
    suggestions = Suggestions(FIELD_SUGGESTIONS)
    read: list[Unit] = []
    for path, shown in listed:
        text = _file_text(path, shown, folder, problems)  # read once, whichever way its cases are then taken
        if text is None:
            continue
        placed = _case_texts(text, path, shown, suggestions) if shown.lower().endswith(".json") else None
        read += _text_cases(text, path, shown, problems, suggestions) if placed is None else placed
    return None if problems else read


_JSON_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace, as the json module skips it
_DECODER = json.JSONDecoder()


def _skip(text: str, pos: int) -> int:
    """Where the JSON whitespace from `pos` ends."""
    return _JSON_SPACE.match(text, pos).end()  # type: ignore[union-attr]  # matches the empty string at worst


def _case_texts(text: str, path: Path, shown: str, suggestions: Suggestions) -> list[CaseText] | None:
    """Where each case of a JSON case file is in its text, found by the json module's scanner one case at a time
    (each decoded case let go at once); None when the file is not plainly a list of cases or `{defaults?, cases}`
    or has any problem: it is then read whole, which says the problem. A case's text decodes to the value the
    whole file's decoding gives it (`decode` says why not)."""
    try:
        with stack.headroom():  # the scan goes as deep as `_decode`: a case it refuses is refused there too
            found = _scan(text)
    except (RuntimeError, ValueError):  # RecursionError is a RuntimeError; JSONDecodeError a ValueError
        return None
    if found is None:
        return None
    defaults_at, places, levels = found
    defaults: dict[str, Any] = {}
    if defaults_at is not None:
        problems: list[str] = []
        try:
            with stack.headroom(stack.HEADROOM - 1):
                written = values.loads_written(text[defaults_at[0] : defaults_at[1]])
        except (ValueError, RecursionError):  # a JSONDecodeError or BadNumber: said by `file_cases`
            return None
        defaults, _ = _split({"defaults": written, "cases": []}, shown, problems, suggestions)
        if problems or (values.may_hold_surrogates(text) and values.surrogate_paths(defaults)):
            return None
    said: set[str] = set()
    return [CaseText(text, start, end, i, levels, defaults, path, shown, said) for i, (start, end) in enumerate(places)]


def _scan(text: str) -> tuple[tuple[int, int] | None, list[tuple[int, int]], int] | None:
    """(the defaults' place, each case's place, the levels above the cases) in a JSON case file's text, or None
    when it is not plainly `[case, ...]` or `{"defaults": ..., "cases": [case, ...]}` (keys in any order, once)."""
    pos = _skip(text, 0)
    if text.startswith("[", pos):
        listed = _list(text, pos)
        return None if listed is None or not _at_end(text, listed[1]) else (None, listed[0], 1)
    if not text.startswith("{", pos):
        return None
    seen: dict[str, tuple[int, int]] = {}
    places: list[tuple[int, int]] | None = None
    pos = _skip(text, pos + 1)
    while text.startswith('"', pos):
        key, pos = _DECODER.raw_decode(text, pos)  # a string, as it starts with a quote
        pos = _skip(text, pos)
        if key in seen or key not in ("defaults", "cases") or not text.startswith(":", pos):
            return None
        start = _skip(text, pos + 1)
        if key == "cases":
            listed = _list(text, start) if text.startswith("[", start) else None
            if listed is None:
                return None
            places, end = listed
        else:
            end = _DECODER.raw_decode(text, start)[1]
        seen[key] = (start, end)
        pos = _skip(text, end)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("}", pos) or not _at_end(text, pos + 1):
            return None
        else:
            return None if places is None else (seen.get("defaults"), places, 2)
    return None


def _list(text: str, pos: int) -> tuple[list[tuple[int, int]], int] | None:
    """The places of the values of the JSON list at `pos` (its `[`), and where the list ends; None for an empty
    list or one that is not JSON."""
    places = []
    pos = _skip(text, pos + 1)
    if text.startswith("]", pos):
        return None
    while True:
        end = _DECODER.raw_decode(text, pos)[1]  # the decoded case is let go at once
        places.append((pos, end))
        pos = _skip(text, end)
        if text.startswith("]", pos):
            return places, pos + 1
        if not text.startswith(",", pos):
            return None
        pos = _skip(text, pos + 1)


def _at_end(text: str, pos: int) -> bool:
    return _skip(text, pos) == len(text)


_SHALLOW = 400
"""Opening brackets below which a case's text is decoded without measuring the stack: it cannot nest deep enough
to reach any limit (json's, orjson's or the whole file's reading), so both readings accept it or refuse it alike."""


def decode_located(units: list[Unit], problems: list[str]) -> list[RawCase | None]:
    """`decode` of each unit with the line of its case_id, as `iter_cases` would say it (each file's text searched
    once): for a small suite, whose cases are decoded in one process and whose messages must read as validate's."""
    lines: dict[int, dict[str, deque[int]]] = {}
    found = []
    for unit in units:
        if isinstance(unit, CaseText) and id(unit.text) not in lines:
            lines[id(unit.text)] = _lines(unit.text, comments=False)  # a CaseText is a JSON file's
        found.append(decode(unit, problems, lines.get(id(unit.text)) if isinstance(unit, CaseText) else None))
    return found


def decode(unit: Unit, problems: list[str], lines: dict[str, deque[int]] | None = None) -> RawCase | None:
    """The case of a unit `read_cases` gave, decoded; None, with a problem, when its text is not what the whole
    file's decoding accepts (a repeated key, a number too long, nested too deeply). `lines`: those of its file's
    case_ids (`_lines`), when its messages are to name them."""
    if isinstance(unit, RawCase):
        return unit
    part = unit.text[unit.start : unit.end]
    raw = _decoded_quickly(part)
    surrogates = False  # orjson refuses a lone surrogate, and the file's text (decoded UTF-8) holds none
    if raw is None:
        try:
            with stack.headroom(stack.HEADROOM - unit.levels):  # as deep as the case sits in the whole file's
                raw = values.loads_written(part)
        except (ValueError, RecursionError):
            problems.append(f"{unit.shown}: case #{unit.index + 1} is not what the file's decoding accepts")
            return None
        surrogates = values.may_hold_surrogates(part)
    return _raw_case(
        raw, unit.index, unit.defaults, unit.path, unit.shown, surrogates, problems, unit.said_of_defaults, lines
    )


def _decoded_quickly(part: str) -> Any:
    """A case's text as orjson reads it, when that is the exact reading and the text is too shallow to reach any
    stack limit; else None, for the reading the whole file gets."""
    if part.count("[") + part.count("{") >= _SHALLOW:
        return None
    try:
        value = orjson.loads(part)
    except orjson.JSONDecodeError:
        return None
    return None if values.inexact(part, value) else value


def read_file(file: CaseFile) -> list[RawCase] | None:
    """The cases of one case file as `read_cases` gives them: None when the file has a problem."""
    problems: list[str] = []
    read = list(file_cases(file.path, file.shown, file.folder, problems, Suggestions(FIELD_SUGGESTIONS)))
    return None if problems else read


def _validated(
    item: RawCase, problems: list[str], suggestions: Suggestions, lines: FieldLines | None = None
) -> AgentCase | None:
    try:
        return AgentCase.model_validate(item.data)
    except ValidationError as exc:
        errors = exc.errors()
        if len(errors) > MAX_CASE_PROBLEMS:  # 800,000 unknown keys were 800,000 lines, and as many annotations
            problems.append(_first_problems(item.where, len(errors)))
        for error in errors[:MAX_CASE_PROBLEMS]:  # a fault of the defaults is said once for the file, not once a case
            said = describe(error, suggestions=suggestions)
            if not _from_defaults(tuple(error["loc"]), item.defaults, item.raw):
                line = lines.line(item.path, item.index, tuple(error["loc"])) if lines else None
                problems.append(f"{item.at(line or item.line)}: {said}")  # a field not written: the case's line
            elif said not in item.said_of_defaults:
                item.said_of_defaults.add(said)
                line = lines.line(item.path, None, tuple(error["loc"])) if lines else None
                problems.append(f"{item.shown}{f':{line}' if line else ''}: defaults: {said}")
        risk = item.data.get("risk_level")  # said beside the other faults, not once they are fixed
        faulted = any(error["loc"][:1] == ("negative_behavior",) for error in errors)
        if risk in _NEEDS_NEGATIVE and not item.data.get("negative_behavior") and not faulted:
            problems.append(f"{item.where}: {_negative_required(risk)}")
        return None


def usable_case(item: RawCase, rules: dict[str, Check], names: RuleNames) -> LoadedCase | None:
    """The case when it is valid and usable in this suite on its own, else None (its problems are then said by
    `iter_cases`, which keeps the suite's order and its bounded suggestions)."""
    try:
        case = AgentCase.model_validate(item.data)
    except ValidationError:
        return None
    if case_problems(case, rules, names):
        return None
    return LoadedCase(case, item.path, item.shown, item.line or 1, item.index)


class CaseIds:
    """The case ids seen so far in a suite: a second case with an id, or with one that differs only in case, is
    refused."""

    def __init__(self) -> None:
        self._first_seen: dict[str, str] = {}
        self._first_folded: dict[str, tuple[str, str]] = {}  # a case id case-folded -> (that id, where defined)

    def clash(self, case_id: str, shown: str) -> str | None:
        """Why the case cannot take this id, or None (and the id is taken)."""
        if case_id in self._first_seen:
            return f"duplicate case_id (first defined in {self._first_seen[case_id]})"
        # ORDER_1 and order_1 name one run file on macOS and Windows runners; c1. and c1 one folder on Windows,
        # which drops a name's trailing dots
        folded = case_id.casefold().rstrip(".")
        if folded in self._first_folded and self._first_folded[folded][0] != case_id:
            other, place = self._first_folded[folded]
            if other.casefold() == case_id.casefold():
                return (
                    f"case_id differs from {other!r} ({place}) only in case; the two would share one run file where "
                    "names ignore case (macOS, Windows): rename one"
                )
            return (
                f"case_id differs from {other!r} ({place}) only in trailing dots (or case); the two would share one "
                "run file on Windows, which drops a name's trailing dots: rename one"
            )
        self._first_seen[case_id] = shown
        self._first_folded.setdefault(folded, (case_id, shown))
        return None


def case_problems(case: AgentCase, rules: dict[str, Check], names: RuleNames | None = None) -> list[str]:
    """What makes a valid case unusable in this suite: an unknown rule name, a P0/P1 case without
    negative_behavior (001 12.9.3). `names` are the suite's rules as problems name them, built once per suite."""
    problems = []
    names = names if names is not None and names.rules is rules else RuleNames(rules)
    for i, ref in enumerate(case.evaluator_config.rule_checks):
        if isinstance(ref, str) and ref not in rules:
            compared, close = names.closest(ref)
            hint = f" (did you mean {close}?)" if close else ""
            if not compared:
                hint = " (not compared with the suite's rules: its case files name too many unknown ones)"
            defined = f"; the suite defines {names.listing}" if rules and not close else ""
            problems.append(
                f"evaluator_config.rule_checks[{i}]: unknown rule '{values.one_line(ref, 200)}'{hint}{defined}; define "
                "it under the suite's "
                "rules in diagbot.yml"
            )
    problems += _metric_problems(case)
    if case.available_tools is not None and case.side_effect_policy is not None:
        problems += _misspelt_policy_tools(case)
    if case.risk_level in _NEEDS_NEGATIVE and not case.negative_behavior:
        problems.append(_negative_required(case.risk_level))
    return problems


_NEEDS_NEGATIVE = ("P0", "P1")
_SUGGESTED_TOOLS = 20  # policies of one case whose tool is looked up among available_tools


def policy_slip(tool: str, known: Sequence[str]) -> str | None:
    """The given tool a policy's tool name is a slip of (`book_flights` for `book_flight`, `Refund_Submit`): by
    difflib at 0.85, or differing only in case; not a name it begins (`refund` for `refund_lookup` is another
    tool, as a policy that a file's defaults share may name)."""
    found = difflib.get_close_matches(tool, known, n=1, cutoff=0.85) if len(tool) <= 200 else []
    return found[0] if found else next((name for name in known if name.casefold() == tool.casefold()), None)


def _misspelt_policy_tools(case: AgentCase) -> list[str]:
    """side_effect_policy entries for a tool that available_tools does not list but one it lists is spelt close to
    (`book_flights` for `book_flight`): the policy applies to no call the case allows (a call of a tool not given
    fails unavailable_tool_called already), and the tool it meant goes unchecked: a P0 booking without a
    confirmation passed. A name close to none is warned of instead (`evaluate.ignored_checks`): a policy shared
    through a file's defaults may be for a tool some of its cases do not give."""
    known = sorted(case.tool_names or ())
    problems = []
    for i, policy in enumerate(case.policies[:_SUGGESTED_TOOLS]):  # each a difflib pass over the names
        close = None if policy.tool in known else policy_slip(policy.tool, known)
        if close is not None:
            problems.append(
                f"side_effect_policy[{i}].tool: '{values.one_line(policy.tool, 100)}' is not in available_tools (did "
                f"you mean {values.one_line(close, 100)}?); the policy checks no call the case allows, and "
                f"{values.one_line(close, 100)} goes unchecked: name the tool as available_tools does"
            )
    return problems


def _negative_required(risk: str) -> str:
    return f"negative_behavior is required for {risk} cases: say what must not happen (001 12.9.3)"


def _metric_problems(case: AgentCase) -> list[str]:
    """RAG metrics that diagbot would compute wrongly or not at all: a misspelt machine-checked name, a metric
    without the gold evidence it needs, a threshold for a metric the case does not ask for."""
    problems = []
    asked = case.evaluation_metrics or []
    gold = case.gold_evidence or []
    for i, name in enumerate(asked):
        where = f"evaluation_metrics[{i}]: '{values.one_line(name, 80)}'"
        if rag.recall_k(name) is not None:
            if not any(g.required for g in gold):
                problems.append(f"{where} needs gold_evidence with at least one required item")
        elif name == rag.ACCURACY:
            if not gold:
                problems.append(f"{where} needs gold_evidence to compare the answer's citations with")
        elif name.startswith("evidence_recall"):
            problems.append(f"{where} is not evidence_recall_at_K with K from 1 to {rag.MAX_K} (evidence_recall_at_5)")
        elif meant := rag.misspelt(name):
            problems.append(f"{where} is not a metric diagbot computes (did you mean {meant}?)")
    checked = [m for m in dict.fromkeys(asked) if rag.is_checked(m)]
    known = f"; the case computes {listing(checked)}" if checked else ""
    computed = set(checked)
    for name in case.evaluator_config.thresholds:
        if name not in computed:
            problems.append(
                f"evaluator_config.thresholds.{values.one_line(name, 80)}: not a machine-checked metric of this "
                f"case's evaluation_metrics{known}"
            )
    return problems
