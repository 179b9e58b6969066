"""Checks on decoded JSON and YAML values that any loader of untrusted input applies before trusting them."""

from __future__ import annotations

import contextlib
import json
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import yaml

MAX_INT_DIGITS = 50
_COUNT_CHUNK = 1024 * 1024
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\[uU][dD][89a-fA-F]")  # a JSON escape that can give a lone surrogate
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode())


class BadNumber(ValueError):
    """A value diagbot will not read: a JSON number with too many digits, NaN or Infinity, or a YAML value JSON
    cannot hold (a set, a binary value, the pairs of `!!omap`)."""


def cut_utf8(text: str, limit: int) -> str:
    """At most `limit` bytes of UTF-8, cut between characters (60,000 CJK characters are 180,000 bytes)."""
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadNumber(f"a number with {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _constant(name: str) -> Any:
    raise BadNumber(f"{name}, which is not a JSON number")


def _float(text: str) -> float:
    """A JSON number with a fraction or an exponent; one past a double's range (`1e400`) would read as infinity,
    equal to every other such number, so two different amounts would compare equal: it is refused."""
    value = float(text)
    if math.isinf(value):
        raise BadNumber(f"the number {one_line(text, 40)}, which is too large to read (past 1.8e308)")
    return value


def loads(text: str | bytes, infinite: bool = False) -> Any:
    """`json.loads` that refuses absurd integers and the NaN/Infinity literals with a BadNumber, instead of a
    ValueError deep inside (Python refuses more than 4,300 digits with a message about sys.set_int_max_str_digits),
    and a number too large for a float (`1e400`, which `json` reads as infinity) too, unless `infinite`: for JSON
    text read only to tell its shape (does a tool's result say `isError`?), where no number is compared.

    orjson reads the document first: it is several times faster and accepts exactly the plain cases (no NaN, valid
    UTF-8 without lone surrogates, nesting under 1,024 levels). Anything it refuses, or may have read inexactly (an
    integer past 64 bits, which it reads as a float: `_may_hold_big_int`), is read again by `json`, which either
    accepts it under the rules above or raises the error users are shown."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    else:
        if not _may_hold_big_int(text, _dumped(value)):
            return value
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # a UnicodeDecodeError for the caller to report
    return json.loads(text, parse_int=_int, parse_float=None if infinite else _float, parse_constant=_constant)


def loads_written(text: str) -> Any:
    """`loads` for JSON that people write and review (case files): an object that repeats a key is refused with
    a json.JSONDecodeError at that object, as YAML refuses it (`load_yaml`). JSON readers keep the last value, so
    a second `"risk_level": "P3"` further down would quietly override the `"P0"` a reviewer reads."""
    try:
        return json.loads(
            text, object_pairs_hook=_unique_pairs, parse_int=_int, parse_float=_float, parse_constant=_constant
        )
    except _Repeated as repeat:
        raise _locate_repeat(text, repeat.key) from None


def loads_unique(text: str | bytes) -> Any:
    """`loads_written` (a repeated key is refused, every integer exact), at about `loads`' speed: orjson reads the
    text, and only a text that orjson may have read otherwise (`exact`) is read again the slow way."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return loads_written(text if isinstance(text, str) else text.decode("utf-8"))
    return exact(text, value)


def exact(source: str | bytes, value: Any) -> Any:
    """`value`, orjson's reading of `source`, when it is the exact one; else `loads_written`'s reading, which
    raises json.JSONDecodeError for a repeated key."""
    if inexact(source, value):
        return loads_written(source if isinstance(source, str) else source.decode("utf-8"))
    return value


def inexact(source: str | bytes, value: Any) -> bool:
    """Whether `value`, orjson's reading of `source`, may not be the exact one. orjson keeps one value of a
    repeated key without a word (so a second `"messages"` or `"content"` would hide the first one's call or text),
    and reads an integer past 64 bits as a float (so a forbidden `amount` of 10**20 + 1 would be compared as
    1e20)."""
    dumped = _dumped(value)
    return may_repeat(source, value, dumped) or _may_hold_big_int(source, dumped)


def refuse_repeats(source: str | bytes, value: Any) -> None:
    """Raise `loads_written`'s json.JSONDecodeError when `source`, which `value` was decoded from, repeats a key in
    an object: JSON readers keep one of the values without a word, so a second `"messages"` or `"content"` would
    hide what the first one holds."""
    if may_repeat(source, value):
        loads_written(source if isinstance(source, str) else source.decode("utf-8"))


def _dumped(value: Any) -> bytes | None:
    """orjson's writing of a value it read; None for one it cannot write (a lone surrogate, more than 255 levels)."""
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:
        return None


def may_repeat(source: str | bytes, value: Any, dumped: bytes | None = None) -> bool:
    """False when `source` cannot repeat a key: orjson keeps one value of a repeated key, so its own writing of
    `value` (`dumped`, written here when not given) holds fewer colons than the source, whose other colons (in
    strings) it writes again as they are. A colon the source escapes (`\\u003a`) could stand in for a lost key, so
    such a source may repeat one. A value orjson cannot write has its keys counted by a walk instead."""
    dumped = _dumped(value) if dumped is None else dumped
    keys = _keys(value) if dumped is None else dumped.count(b":")
    if isinstance(source, str):  # the regex alone: it scans a run's text faster than `in` with it
        return source.count(":") != keys or _COLON_ESCAPE.search(source) is not None
    return source.count(b":") != keys or _COLON_ESCAPE_BYTES.search(source) is not None


_BIG_INT_DIGITS = 19  # digits of the shortest integer orjson reads as a float (-9223372036854775809)
_DIGITS_ONLY = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x2E for byte in range(256))  # each digit 0, all else .


def _may_hold_big_int(source: str | bytes, dumped: bytes | None) -> bool:
    """Whether orjson may have read an integer of the source as a float: then its writing (`dumped`; None when it
    could not write the value) holds a float in exponent form (`1.8446744073709552e+19`: every float that large is
    written so), and the source a run of at least 19 digits. The first is looked for by a byte search, the second
    only when the first is found."""
    if dumped is not None and (b"+" not in dumped or b"e+" not in dumped):
        return False
    data = source.encode("utf-8", "surrogatepass") if isinstance(source, str) else source
    return b"0" * _BIG_INT_DIGITS in data.translate(_DIGITS_ONLY)


def _keys(value: Any) -> int:
    keys, todo = 0, [value]
    while todo:
        node = todo.pop()
        if type(node) is dict:
            keys += len(node)
            todo.extend(node.values())
        elif type(node) is list:
            todo.extend(node)
    return keys


_COLON_ESCAPE = re.compile(r"\\u003[aA]")
_COLON_ESCAPE_BYTES = re.compile(_COLON_ESCAPE.pattern.encode())


class _Repeated(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _first_repeat(pairs: list[tuple[str, Any]]) -> str | None:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def first_repeated_key(source: str | bytes) -> str | None:
    """The first key that an object of the JSON document repeats, read with every number as its text, so that
    a NaN or a 60-digit number (which `loads_written` refuses before it gets to a repeat) does not hide one; None
    when no key repeats, or the document cannot be read at all."""
    found: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        held = dict(items)
        if not found and len(held) != len(items):
            found.append(str(_first_repeat(items)))
        return held

    try:
        json.loads(source, object_pairs_hook=pairs, parse_int=str, parse_float=str, parse_constant=str)
    except (ValueError, RecursionError):
        return None
    return found[0] if found else None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Repeated(str(_first_repeat(pairs)))  # fewer keys than pairs: one of them repeats
    return found


def _repeat_problem(key: str, where: str = "in the object that starts here") -> str:
    return f"duplicate key {one_line(key, 100)!r} {where}; keep one"


def _locate_repeat(text: str, key: str) -> json.JSONDecodeError:
    """Where an object with a repeated key starts: the text read again by json's pure-Python scanner, which tells
    each object where it begins (only on this error path: it is several times slower). That scanner runs out of
    stack at a few hundred levels, where json's own reads a thousand: then the key is named without a place."""

    def parse_object(s_and_end: tuple[str, int], *args: Any) -> tuple[dict[str, Any], int]:
        strict, scan_once, _, _, *memo = args
        pairs, end = json.decoder.JSONObject(s_and_end, strict, scan_once, None, list, *memo)  # type: ignore[attr-defined]
        repeat = _first_repeat(pairs)
        if repeat is not None:
            raise json.JSONDecodeError(_repeat_problem(repeat), s_and_end[0], s_and_end[1] - 1)
        return dict(pairs), end

    decoder = json.JSONDecoder(parse_int=_int, parse_float=_float, parse_constant=_constant)
    decoder.parse_object = parse_object  # type: ignore[attr-defined]
    decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    try:
        decoder.decode(text)
    except json.JSONDecodeError as exc:
        return exc
    except RecursionError:
        pass
    return json.JSONDecodeError(_repeat_problem(key, "in an object nested too deeply to say where"), text, 0)


class _Core(yaml.resolver.BaseResolver):
    """Which plain scalars are not text: YAML 1.2's core schema, as JSON has them (and as GitHub's workflows read
    YAML). PyYAML's 1.1 resolver read `no` and `off` as false, `10:30` as 630, `017` as 15 and a timestamp as a
    datetime written back differently (`...Z` as `...+00:00`), so a case's expected value was never the text it
    wrote, and a must-not check on it passed. Here `true`/`false`, `null`/`~`/empty, decimal integers (no leading
    zero), `0o` and `0x` integers and decimal floats are read as such; anything else is the text written."""


for _tag, _regexp, _first in (
    ("bool", r"(?:true|True|TRUE|false|False|FALSE)", "tTfF"),
    ("null", r"(?:~|null|Null|NULL|)", ["~", "n", "N", ""]),
    ("int", r"(?:[-+]?(?:0|[1-9][0-9]*)|0o[0-7]+|0x[0-9a-fA-F]+)", "-+0123456789"),
    (
        "float",
        r"(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+)|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))",
        "-+0123456789.",
    ),
):
    _Core.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(f"^{_regexp}$"), list(_first))
# YAML 1.1's other booleans: read as text here, they would quietly turn `equals: yes` from true into "yes" (and a
# forbidden `{force: on}` into one no call has), so they are refused, asking for true/false or quotes.
_YAML11_BOOL = "tag:diagbot:yaml-1.1-bool"
_YAML11_WORDS = re.compile(r"^(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF)$")
_Core.add_implicit_resolver(_YAML11_BOOL, _YAML11_WORDS, list("yYnNoO"))
_TEXT_TAGS = frozenset(("tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp"))  # both are built as the text


class _Checked:
    """What both YAML loaders add to PyYAML's safe constructor: the core schema's types (`_Core`), a repeated key
    is an error (PyYAML keeps the last value, so a second `suites:` would drop the suites above it), a value its tag
    cannot build (`!!bool x`, `!!timestamp x`) is a YAML error at its line, never a crash, and an integer too long
    for Python's int() is kept as a `_LongInt` for `_as_json` to refuse with its location."""

    yaml_implicit_resolvers = _Core.yaml_implicit_resolvers

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)  # type: ignore[misc]
        except yaml.YAMLError:
            raise
        except (ValueError, KeyError, AttributeError, TypeError, IndexError, OverflowError):
            written = node.value if isinstance(node.value, str) else "this value"
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"{one_line(written, 40)!r} cannot be read as {node.tag.replace('tag:yaml.org,2002:', '!!')}",
                node.start_mark,
            ) from None

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        pairs: list[tuple[Any, Any]] = node.value if isinstance(node, yaml.MappingNode) else []
        for key, _ in pairs:
            if not isinstance(key, yaml.ScalarNode) or key.tag not in _TEXT_TAGS:
                _refuse_key(key)
        if len(pairs) > 1:  # keys compared as written (tag and text), before anything is built: cheap
            keys = [
                ("str" if k.tag in _TEXT_TAGS else k.tag, k.value) if isinstance(k, yaml.ScalarNode) else (None, id(k))
                for k, _ in pairs
            ]
            if len(set(keys)) != len(keys):
                _refuse_repeat(node, pairs, keys)
        return super().construct_mapping(node, deep)  # type: ignore[misc]


_KEY_KINDS = {
    "int": "a number in YAML",
    "float": "a number in YAML",
    "bool": "a boolean in YAML",
    "null": "null in YAML",
}


def _refuse_key(key: Any) -> None:
    """A mapping key that YAML reads as other than text: JSON's keys are text, so `200:` or `true:` would never
    equal the key a run records ("200"), a check on it would pass unseen, and `1:` and `0x1:` would be one key."""
    if not isinstance(key, yaml.ScalarNode):
        raise yaml.constructor.ConstructorError(
            None, None, "a key that is a list or a mapping; keys are text", key.start_mark
        )
    written = one_line(key.value, 40)
    if key.tag == _YAML11_BOOL:  # `on:`: its own constructor's advice (write true) would not do for a key
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f'the key {written} is a boolean in YAML 1.1 but text in YAML 1.2; quote it: "{written}"',
            key.start_mark,
        )
    kind = _KEY_KINDS.get(key.tag.rpartition(":")[2], f"not text in YAML ({one_line(key.tag, 40)})")
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f'the key {written or "(empty)"} is {kind}, but keys must be text as in JSON, or the key "{written}" '
        f'of a run or a file would never equal it; quote it: "{written}"',
        key.start_mark,
    )


def _construct_int(loader: Any, node: Any) -> Any:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except (ValueError, IndexError):
        digits = sum(c.isdigit() for c in node.value)
        if digits > sys.get_int_max_str_digits():  # more than Python converts: refused by `_as_json`, with its key
            return _LongInt(digits)
        raise yaml.constructor.ConstructorError(  # `!!int 12abc`, `!!int ""`
            None, None, f"{one_line(node.value, 40)!r} is not an integer", node.start_mark
        ) from None


def _refuse_repeat(node: Any, pairs: list[tuple[Any, Any]], keys: list[tuple[Any, Any]]) -> None:
    first: dict[tuple[Any, Any], Any] = {}
    for key, (key_node, _) in zip(keys, pairs, strict=True):
        if key in first:
            name, line = one_line(str(key_node.value), 100), first[key].line + 1
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"duplicate key '{name}' (first on line {line}); keep one",
                key_node.start_mark,
            )
        first[key] = key_node.start_mark


class _LongInt:
    """An integer YAML wrote with more digits than Python's int() reads: refused by `_as_json`, which knows where."""

    __slots__ = ("digits",)

    def __init__(self, digits: int) -> None:
        self.digits = digits


class _NoAliases(_Checked, yaml.SafeLoader):
    """PyYAML's safe loader without anchors' aliases: `*name` shares one node many times, so a few lines can
    stand for billions of values that every later walk (validation, messages) would visit."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, f"aliases (*{event.anchor}) are not allowed here; write the value out", event.start_mark
            )
        return super().compose_node(parent, index)


def _construct_text(loader: Any, node: Any) -> Any:
    return loader.construct_scalar(node)  # `!!timestamp 2024-05-20T10:00:00Z`: the text, as written


def _refuse_yaml11_bool(loader: Any, node: Any) -> Any:
    meant = node.value.lower() in ("yes", "on")
    raise yaml.constructor.ConstructorError(
        None,
        None,
        f"{node.value} is {str(meant).lower()} in YAML 1.1 but the text {node.value!r} in YAML 1.2; write "
        f"{str(meant).lower()}, or quote it",
        node.start_mark,
    )


_NoAliases.add_constructor("tag:yaml.org,2002:int", _construct_int)
_NoAliases.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
_NoAliases.add_constructor(_YAML11_BOOL, _refuse_yaml11_bool)
_FAST_LOADER: Any = None  # libyaml, when PyYAML was built with it
if hasattr(yaml, "CSafeLoader"):

    class _Fast(_Checked, yaml.CSafeLoader):
        """libyaml's safe loader with the same checks."""

    _Fast.add_constructor("tag:yaml.org,2002:int", _construct_int)
    _Fast.add_constructor("tag:yaml.org,2002:timestamp", _construct_text)
    _Fast.add_constructor(_YAML11_BOOL, _refuse_yaml11_bool)
    _FAST_LOADER = _Fast


def load_yaml(text: str) -> Any:
    """The one way diagbot decodes YAML a pull request wrote: safe types only, no aliases, no repeated key in a
    mapping (a ConstructorError at the repeat), and the numbers JSON readers accept (a BadNumber for an integer of
    more than 50 digits, which YAML's hex and octal forms reach without Python's own limit, and for .nan and
    .inf). A text without `*` cannot hold an alias, so libyaml's loader (ten times faster) reads it; any other
    goes through `_NoAliases`."""
    data: Any = _NOT_READ
    if _FAST_LOADER is not None and "*" not in text:
        # on an error, read again below, so that the message is PyYAML's own, the same whichever loader ran
        with contextlib.suppress(yaml.YAMLError):
            data = yaml.load(text, Loader=_FAST_LOADER)
    if data is _NOT_READ:
        data = yaml.load(text, Loader=_NoAliases)
    return _as_json(data)


def compose_yaml(text: str) -> yaml.Node | None:
    """The text's YAML nodes (with their lines), not constructed into values, so no alias is expanded and no tag
    run: for finding where a value is written. None when the text does not compose."""
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_FAST_LOADER or yaml.SafeLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        return None
    return node


_NOT_READ = object()
_MAX_INT_BITS = int(10**MAX_INT_DIGITS).bit_length()


def _as_json(value: Any) -> Any:
    """YAML's values as JSON has them: numbers JSON cannot hold are refused (BadNumber), as are sets, pairs and
    binary values. (A date or time is its text already: `_Core` never reads one as a date.)"""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            stack.extend(
                (v, f"{path}.{one_line(str(k), 100)}" if path else one_line(str(k), 100)) for k, v in node.items()
            )
            stack.extend((k, f"{path} (a key)") for k in node if not isinstance(k, str))
        elif isinstance(node, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
        elif isinstance(node, _LongInt) or (
            isinstance(node, int) and not isinstance(node, bool) and node.bit_length() > _MAX_INT_BITS
        ):
            digits = node.digits if isinstance(node, _LongInt) else int(node.bit_length() * 0.30103)
            raise BadNumber(f"a number of about {digits:,} digits at {path or 'the top'} (at most {MAX_INT_DIGITS})")
        elif isinstance(node, float) and not math.isfinite(node):
            raise BadNumber(f"{node} at {path or 'the top'}, which is not a JSON number")
        elif isinstance(node, set | frozenset | tuple | bytes):  # !!set, !!omap / !!pairs, !!binary
            shown = {bytes: "binary value", tuple: "pair (!!omap or !!pairs)"}.get(type(node), "set")
            raise BadNumber(f"a YAML {shown} at {path or 'the top'}, which JSON cannot hold; write a list or a mapping")
    return value


def lone_surrogate(data: bytes, parser_said: str) -> str | None:
    """What to say of JSON that a parser refused with "... hex escape ..." when it holds a high surrogate's escape
    with no low one after it (`\\ud83d`, a string cut in the middle of an emoji); None otherwise."""
    half = _LONE_HIGH.search(data) if "hex escape" in parser_said else None
    if half is None:
        return None
    return (
        f"holds {half.group().decode()}, half of a character (a lone surrogate) and no text: a string cut in the "
        "middle of an emoji? write the whole character"
    )


_LONE_HIGH = re.compile(rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])")


def may_hold_surrogates(text: str) -> bool:
    """False when `text` (JSON or YAML source) cannot decode to a lone surrogate: the cheap test first."""
    return bool(escapes_surrogates(text) or _SURROGATE.search(text))


def escapes_surrogates(source: str | bytes) -> bool:
    """Whether JSON source holds an escape that can decode to a lone surrogate: the only way valid UTF-8 (or text
    decoded from it) can give one."""
    if isinstance(source, bytes):
        return _SURROGATE_ESCAPE_BYTES.search(source) is not None
    return _SURROGATE_ESCAPE.search(source) is not None


MAX_REPORT_NUMBER = 1e15
"""The largest size of a number in a report diagbot writes (a run lasts at most 10^12 ms; counts, rates and scores
are far smaller): past it, sums and averages over a suite's results could overflow to infinity."""
_LARGE_NUMBER_TEXT = re.compile(r"\d{16}|[\d.][eE]\+?0*[1-9]")  # in numbers, or in strings


def oversized_number(value: Any, text: str) -> tuple[str, int | float] | None:
    """Where in `value`, decoded from `text`, the first number larger in size than MAX_REPORT_NUMBER is, and the
    number; None when there is none. The walk runs only when the text holds a run of 16 digits or a positive
    exponent, as every such number is written (99e14 as well as 1e+16)."""
    if _LARGE_NUMBER_TEXT.search(text) is None:
        return None
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, where = stack.pop()
        if isinstance(node, int | float) and not isinstance(node, bool):
            if not -MAX_REPORT_NUMBER <= node <= MAX_REPORT_NUMBER and math.isfinite(node):  # the models refuse inf
                return where or "top level", node
        elif isinstance(node, dict):
            stack.extend((child, f"{where}.{key}" if where else str(key)) for key, child in node.items())
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node))
    return None


def surrogate_paths(value: Any, path: str = "", limit: int = 10) -> list[str]:
    """Where in a decoded value a string (or key) holds a lone surrogate, which no UTF-8 output can carry."""
    return [p for p, _ in zip(_walk(value, path), range(limit), strict=False)]


def _walk(value: Any, path: str) -> Iterator[str]:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                yield where or "top level"
        elif isinstance(node, dict):
            for key, child in node.items():
                name = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and _SURROGATE.search(key):
                    yield f"{where or 'top level'} (a key)"
                    name = f"{where}.<key>"
                stack.append((child, name))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node))


def type_name(value: Any) -> str:
    """A decoded JSON value's kind as a message names it: "an array", "a number", "null"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


_INDENTATION = ("expected <block end>", "mapping values are not allowed", "did not find expected key",
                "could not find expected ':'", "did not find expected '-' indicator")  # fmt: skip


def yaml_problem(exc: Exception) -> str:
    """PyYAML's words for what is wrong, with what to look at when they are its words for a slip of indentation."""
    problem = str(getattr(exc, "problem", None) or exc)
    if problem.startswith(_INDENTATION):
        problem += "; check this line's indentation against the lines above it (YAML nests by indentation: a key "
        problem += "lines up with the keys beside it, and a list item's keys with its first)"
    return problem


def one_line(text: str, limit: int = 2_000) -> str:
    """Text from input, safe on one line of a log or terminal: control characters (a newline would start a new
    line that GitHub Actions could read as a workflow command; ESC reaches the terminal), invisible and bidi
    format characters (which make a name read as another) and lone surrogates are written as escapes, and at most
    `limit` characters are kept."""
    cut = text if len(text) <= limit else text[: limit - 1] + "…"
    if "##[" in cut:  # the runner reads `##[error]...` anywhere in a line of the log as a workflow command
        cut = cut.replace("##[", "##\\[")
    if not _UNPRINTABLE.search(cut):
        return cut
    return _UNPRINTABLE.sub(_escaped, cut)


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    return f"\\x{ord(char):02x}" if "\x7f" <= char <= "\x9f" else json.dumps(char)[1:-1]


SHOW_NOTHING = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f\u3164"
    "\ufe00-\ufe0d\ufeff\uffa0\ufff0-\ufffb\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff"
)
"""A regex class's ranges (no brackets) of the characters that show nothing: zero-width ones, soft hyphens, bidi
marks, fillers, tags and the variation selectors but the emoji ones (U+FE0E, U+FE0F). `one_line` escapes them;
text matching (`core.text.INVISIBLE`) reads past them."""

# control characters (C0, DEL, C1), line and paragraph separators, lone surrogates, and the characters that show
# nothing: each makes a line read as other than it is, or hides text
_UNPRINTABLE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff{SHOW_NOTHING}]")


def replace_surrogates(value: Any) -> Any:
    """The value with every lone surrogate in its strings (and keys) replaced by U+FFFD: for a recorded run, whose
    text is evidence to show, not input to refuse."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [replace_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    return value


def plain_name(name: str) -> bool:
    """A file or folder name that any output can carry: no control character, no undecodable byte (which Python
    keeps as a lone surrogate), no NUL."""
    return not any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in name)


EXCERPT_CHARS = 40
# Things that look like credentials: tokens of GitHub, AWS, Slack, Google, JWTs and private keys; a secret's key
# with its value (`password=...`, `"api_key": "..."`, `Authorization: Bearer ...`), a bearer token, a URL's
# password; long opaque strings (keys, hashes).
_SECRETISH = re.compile(
    r"(?i)(gh[pousr]_[A-Za-z0-9]{8,}|github_pat_\w{8,}|\b(?:AKIA|ASIA)[A-Z0-9]{12,}|xox[abposr]-[\w-]{8,}"
    r"|AIza[\w-]{20,}|eyJ[\w-]{4,}\.[\w-]{4,}(?:\.[\w-]*)?|-----BEGIN [A-Z ]*PRIVATE KEY-----[^-]*"
    # a key that names a secret (`GITHUB_TOKEN`, `db_password`, `x-api-key`, `SECRET_KEY`, not `max_tokens`), then
    # its value: quoted to its closing quote (escaped quotes, JSON inside JSON), a bearer/basic token, or up to a
    # space, quote, comma, semicolon or brace
    r"|\b[\w.-]{0,40}(?:token|secret|passw(?:or)?d|passphrase|api[_-]?key|access[_-]?key|private[_-]?key"
    r"|authorization)(?:[_-]?(?:key|value|id))?\\?[\"']?\s*(?:=>|[=:])\s*"
    r"(?:\\?\"(?:[^\"\\\n]|\\.){0,200}\"?|'(?:[^'\\\n]|\\.){0,200}'?|“[^”\n]{0,200}”?"
    r"|(?:bearer|basic|token)\s+[^\s\"',;}]+|[^\s\"',;}]+)"
    r"|\bbearer\s+[\w.~+/=-]{8,}|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"
    r"|(?=[\w+/=-]*\d)(?=[\w+/=-]*[A-Za-z])[\w+/=-]{32,})"
)
_HIDING = re.compile(f"[{SHOW_NOTHING}]")  # a zero-width character splitting a token would keep it whole to a reader


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A short, scrubbed excerpt of file content for a check's detail: never more than `limit` characters, with
    anything that looks like a credential replaced, since details land in reports, comments and artifacts."""
    cut = _HIDING.sub("", text[: limit * 4])
    scrubbed = _SECRETISH.sub("[redacted]", cut)
    return scrubbed if len(scrubbed) <= limit else scrubbed[: limit - 1] + "…"


def _outside_strings(data: bytes) -> Iterator[bytes]:
    """The JSON document `data` outside its strings, in pieces of about 1 MiB (splitting it all at once would make
    millions of objects), each string standing as `0`, a piece that starts inside one starting with `0`."""
    if b"\\" in data:  # drop escaped backslashes, then escaped quotes: every `"` left opens or closes a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    inside = False  # whether the piece starts inside a string
    for start in range(0, len(data), _COUNT_CHUNK):
        pieces = data[start : start + _COUNT_CHUNK].split(b'"')
        yield b"0".join([b"", *pieces[1::2]] if inside else pieces[::2])
        inside ^= len(pieces) % 2 == 0


def count_containers(data: bytes) -> int:
    """The arrays and objects of the JSON document `data`, those written inside strings left out (a case's title of
    a million `[` is one string), in O(len(data)) and little memory."""
    return sum(outside.count(b"[") + outside.count(b"{") for outside in _outside_strings(data))


def count_values(data: bytes) -> int:
    """The number of values in the JSON document `data` (exact if it is valid JSON, an upper bound if not),
    without parsing it, in O(len(data)) and little memory: one, plus the commas and the non-empty arrays and
    objects outside strings (each value but the root either follows a comma or is a container's first)."""
    total = 1
    tail = b"0"  # the last byte outside strings so far, "0" standing for a string
    for piece in _outside_strings(data):
        outside = piece.translate(None, b" \t\r\n")
        total += outside.count(b",") + outside.count(b"[") + outside.count(b"{")
        total -= outside.count(b"[]") + outside.count(b"{}") + (tail + outside[:1] in (b"[]", b"{}"))
        tail = outside[-1:] or tail
    return total
