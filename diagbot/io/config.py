"""diagbot.yml: which suites to run, the diff thresholds and the gate. Strict: a typo is an error, not a default."""

from __future__ import annotations

import contextlib
import hashlib
from collections import Counter
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError, field_validator

from diagbot.core import values
from diagbot.core.diff import Thresholds
from diagbot.core.errors import ConfigError
from diagbot.core.fs import IN_GIT, FileProblem, in_git_folder, read_text_bounded
from diagbot.core.models import StrictInput, error_message, field_names_at, literal_choices
from diagbot.core.report import SUITE_NAME, RunInfo
from diagbot.core.text import Suggestions, closest, listing
from diagbot.kinds.agent.cases import ROLES, Role
from diagbot.kinds.base import Governance, SuiteInput
from diagbot.kinds.registry import DEFAULT_KIND, KINDS

DEFAULT_CONFIG = "diagbot.yml"
MAX_CONFIG_BYTES = 1024 * 1024
FORBIDDEN_ROOTS = frozenset({"proc", "sys", "dev"})
MAX_SUGGESTIONS = 500  # distinct unknown keys of one config that are given the closest known name


FixtureBytes = Annotated[int, Field(gt=0)]
"""The per-fixture read limit, wherever it is given (diagbot.yml's max-fixture-bytes, the --max-fixture-bytes flag)."""
_FIXTURE_BYTES: TypeAdapter[int] = TypeAdapter(FixtureBytes)


class SuiteConfig(StrictInput):
    """One suite. Keys beyond these belong to the suite's kind and are validated by its `options` model."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True)

    name: str = Field(pattern=SUITE_NAME)
    kind: str = DEFAULT_KIND
    cases: str
    fixtures: str
    max_fixture_bytes: FixtureBytes = Field(default=64 * 1024 * 1024, alias="max-fixture-bytes")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, kind: str) -> str:
        if kind not in KINDS:
            near = closest(kind, KINDS) if isinstance(kind, str) else None
            hint = f" (did you mean {near}?)" if near else ""
            raise ValueError(
                f"unknown suite kind {values.one_line(kind, 100)!r}{hint}; use one of {', '.join(sorted(KINDS))}"
            )
        return kind

    def kind_options(self, where: str, index: int, suggestions: Suggestions | None = None) -> Any:
        """The kind's own keys of this suite, validated; a ConfigError names each bad or unknown key as
        `parse_config` names the others (`where` is the config file; `suggestions`, the config's, shared by all
        its suites)."""
        model = KINDS[self.kind].options
        given = dict(self.model_extra or {})
        if model is None and not given:
            return None
        try:
            return (model or _NoOptions).model_validate(given)
        except ValidationError as exc:
            defaulted = "kind" not in self.model_fields_set
            raise ConfigError(*_option_problems(exc, self.kind, where, index, given, suggestions, defaulted)) from None


def _option_problems(
    exc: ValidationError,
    kind: str | None,
    where: str,
    index: int,
    given: Any,
    suggestions: Suggestions | None = None,
    defaulted: bool = False,
) -> list[str]:
    """`defaulted`: the suite does not give its `kind`, so it is the default."""
    problems = []
    suggestions = suggestions or Suggestions(MAX_SUGGESTIONS)
    model = KINDS[kind].options if kind in KINDS else None
    for error in exc.errors():
        loc = ".".join((f"suites.{index}", *_keys(error["loc"], given)))
        if error["type"] == "extra_forbidden":
            known = [*_SUITE_KEYS, *(field_names_at(model, error["loc"]) if model else [])]
            close = suggestions.closest(str(error["loc"][-1]), known)
            hint = f" (did you mean {close}?)" if close else _other_kinds_key(error["loc"], kind, defaulted)
            problems.append(f"{where}: unknown key '{loc}'{hint}")
        else:
            problems.append(_value_problem(where, loc, error))
    return problems


def _other_kinds_key(loc: tuple[int | str, ...], kind: str | None, defaulted: bool) -> str:
    """For a key this suite's kind does not take but another kind does (`trace-format` in a suite whose `kind` was
    left out, so is the default): which kind takes it. Nothing for a suite of an unknown kind."""
    owners = [name for name in _kinds_taking(loc) if name != kind]
    if kind is None or not owners:
        return ""
    default = ", the default when `kind` is not given" if defaulted else ""
    return f" (a key of {' and '.join(owners)} suites; this suite's kind is {kind}{default}: set its kind: {owners[0]})"


def _kinds_taking(loc: tuple[int | str, ...]) -> list[str]:
    """The kinds whose suites take the key at `loc` (a suite's own keys: `trace-format`, `rules.r.answer_matches`)."""
    return [name for name, kind in KINDS.items() if kind.options and loc[-1] in field_names_at(kind.options, loc)]


def _value_problem(where: str, loc: str, error: Any) -> str:
    """A value diagbot.yml cannot take, said with what would do: the closest allowed value of a misspelt one."""
    given = error.get("input")
    found = values.one_line(values.excerpt(str(given)[:1000], 60))
    if error["type"] in ("model_type", "dict_type") and error["loc"][-2:-1] == ("rules",):
        what = (
            f"the name {found!r}: a rule cannot name another rule"
            if isinstance(given, str)
            else values.type_name(given)
        )
        return (
            f"{where}: {loc}: a rule is one check object ({{answer_not_contains: [...]}}, {{tool_not_called: ...}}), "
            f"found {what}"
        )
    if error["type"] == "literal_error":
        allowed, hint = literal_choices(error)
        return f"{where}: {loc}: {found!r} is not one of {', '.join(allowed)}{hint}"
    return f"{where}: {loc or 'top level'}: {error_message(error)}"


def _keys(loc: tuple[int | str, ...], given: Any) -> list[str]:
    """A validation error's location as keys of the suite as given (`given`): the parts pydantic adds of its own
    (union tags such as `list[str]`, the shape tags `<text>`, `<list>`, ..., `[key]` for a dict key) are left out,
    unless the input holds a key of that name there."""
    kept, node = [], given
    for part in loc:
        inside = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if inside or (isinstance(node, dict) and part in node):
            node = node[part]
        elif isinstance(part, str) and ((part[:1], part[-1:]) == ("<", ">") or "[" in part):
            continue  # a tag: the input at this place is still `node`
        else:
            node = None  # a key the input lacks (a missing field): nothing below it to follow
        kept.append(str(part))
    return kept


def _extra_key_problems(data: dict[str, Any], where: str, suggestions: Suggestions) -> dict[int, list[str]]:
    """The unknown keys of each suite when the config failed to validate (kind_options never ran then)."""
    found: dict[int, list[str]] = {}
    suites = data.get("suites")
    fields = {*_SUITE_KEYS, *SuiteConfig.model_fields}
    for index, suite in enumerate(suites if isinstance(suites, list) else []):
        if not isinstance(suite, dict):
            continue
        kind = suite.get("kind", DEFAULT_KIND)
        kind = kind if isinstance(kind, str) and kind in KINDS else None
        extra = {k: v for k, v in suite.items() if k not in fields}
        if kind is None:  # the kind meant is unknown: only a key no kind takes is surely unknown
            extra = {k: v for k, v in extra.items() if not _kinds_taking((k,))}
        if not extra:
            continue
        try:
            ((KINDS[kind].options if kind else None) or _NoOptions).model_validate(extra)
        except ValidationError as exc:
            problems = _option_problems(exc, kind, where, index, extra, suggestions, "kind" not in suite)
            found[index] = [p for p in problems if "unknown key" in p]
    return found


class _NoOptions(StrictInput):
    """What a kind without keys of its own accepts: nothing."""


_SUITE_KEYS = [f.alias or n for n, f in SuiteConfig.model_fields.items()]


class ThresholdConfig(StrictInput):
    """Kebab-case like the action's inputs; see diff.Thresholds for the meaning."""

    tool_calls_pct: float = Field(default=20.0, ge=0, allow_inf_nan=False, alias="tool-calls-pct")
    tool_calls_min: float = Field(default=1.0, ge=0, allow_inf_nan=False, alias="tool-calls-min")
    duration_pct: float = Field(default=20.0, ge=0, allow_inf_nan=False, alias="duration-pct")
    duration_min_ms: float = Field(default=500.0, ge=0, allow_inf_nan=False, alias="duration-min-ms")
    score_points: float = Field(default=5.0, ge=0, allow_inf_nan=False, alias="score-points")

    def override(self, given: Mapping[str, float], where: str = "--{name}") -> ThresholdConfig:
        """These thresholds with some replaced (kebab-case keys, as in diagbot.yml), validated again; a bad or
        unknown value is a ConfigError naming it as `where` does (`--{name}` for a flag)."""
        try:
            return ThresholdConfig.model_validate({**self.model_dump(by_alias=True), **given})
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                name = str(error["loc"][0]) if error["loc"] else "thresholds"
                if error["type"] == "extra_forbidden":
                    known = ", ".join(f.alias or n for n, f in ThresholdConfig.model_fields.items())
                    problems.append(f"{where.format(name=name)}: unknown threshold; use one of {known}")
                else:
                    shown = f"{error.get('input')!r:.40}"
                    problems.append(f"{where.format(name=name)}: {error_message(error)} (got {shown})")
            raise ConfigError(*problems) from None

    def to_thresholds(self) -> Thresholds:
        return Thresholds(
            tool_call_pct=self.tool_calls_pct,
            tool_call_abs=self.tool_calls_min,
            duration_pct=self.duration_pct,
            duration_abs_ms=self.duration_min_ms,
            score_points=self.score_points,
        )


def checked_fixture_bytes(value: object, where: str = "--max-fixture-bytes") -> int:
    """A fixture size limit given outside diagbot.yml, refused (ConfigError) with the message diagbot.yml gives."""
    try:
        return _FIXTURE_BYTES.validate_python(value)
    except ValidationError as exc:
        raise ConfigError(f"{where}: {error_message(exc.errors()[0])} (got {value!r:.40})") from None


def given_thresholds(source: object) -> dict[str, float]:
    """The thresholds `source` sets, keyed like diagbot.yml. CLI flags and action inputs use ThresholdConfig's
    field names, so one function reads both; an unset value (None) is left out."""
    values = {field.alias: getattr(source, name, None) for name, field in ThresholdConfig.model_fields.items()}
    return {str(key): value for key, value in values.items() if value is not None}


class GateConfig(StrictInput):
    fail_on_regression: bool = Field(default=True, alias="fail-on-regression")
    require_baseline: bool = Field(default=False, alias="require-baseline")
    baseline_max_age_days: float = Field(default=30.0, gt=0, allow_inf_nan=False, alias="baseline-max-age-days")
    # Suites deliberately removed: a baseline report for one of them is a notice, not a vanished suite.
    retired_suites: list[str] = Field(default_factory=list, alias="retired-suites", max_length=100)
    # Which agent cases may gate (001 governance): their dataset_role and usage_rights_status.
    roles: list[Role] = Field(default=["golden", "regression", "red_team"], max_length=len(ROLES))
    usage_rights: list[str] = Field(
        default_factory=lambda: list(Governance().usage_rights), alias="usage-rights", max_length=100
    )


MAX_MARKER_ID = 100  # characters of the comment marker's id (the fork relay's pr.json allows no more)
MAX_SUITES = 50  # each is bounded on its own; this bounds a run (and the fork relay's pr.json lists them all)


class Config(StrictInput):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    id: str | None = Field(default=None, pattern=rf"^[A-Za-z0-9][A-Za-z0-9._+-]{{0,{MAX_MARKER_ID - 1}}}$")
    suites: list[SuiteConfig] = Field(min_length=1)
    thresholds: ThresholdConfig = ThresholdConfig()
    gate: GateConfig = GateConfig()
    root: Path = Field(default=Path("."), exclude=True)
    # The config file as it was given (`diagbot.yml`, `sub/diagbot.yml`); None for the built-in default suite.
    source: str | None = Field(default=None, exclude=True)
    # Every suite path must resolve inside this folder (the action sets it to the workspace); None: anywhere but
    # the kernel's own trees.
    boundary: Path | None = Field(default=None, exclude=True)

    @field_validator("suites")
    @classmethod
    def _unique_names(cls, suites: list[SuiteConfig]) -> list[SuiteConfig]:
        duplicates = sorted(n for n, count in Counter(s.name for s in suites).items() if count > 1)
        if duplicates:
            raise ValueError(f"suite names must be unique; repeated: {listing(duplicates)}")
        by_fold: dict[str, list[str]] = {}
        for suite in suites:
            by_fold.setdefault(suite.name.casefold(), []).append(suite.name)
        alike = [" and ".join(names) for names in by_fold.values() if len(names) > 1]
        if alike:  # reports/A.json and reports/a.json are one file on macOS and Windows runners
            raise ValueError(f"suite names must differ in more than case (they name report files); {listing(alike)}")
        return suites

    @property
    def marker_id(self) -> str:
        """What the hidden comment marker names: the config's id, else its suites, so each config has one comment."""
        if self.id:
            return self.id
        joined = "+".join(s.name for s in self.suites)
        if len(joined) <= MAX_MARKER_ID:
            return joined
        digest = hashlib.sha256(joined.encode()).hexdigest()[:16]  # the same suites, the same comment
        return f"{joined[: MAX_MARKER_ID - 17]}+{digest}"

    def path(self, relative: str) -> Path:
        return self.root / relative

    @cached_property
    def _places(self) -> dict[int, int]:
        """Each suite's place in `suites`, by identity: a lookup per suite, where `list.index` compared every
        earlier suite field by field (a config of thousands of suites took seconds)."""
        return {id(suite): index for index, suite in enumerate(self.suites)}

    @property
    def where(self) -> str:
        """How messages name this config: its file as given, or what stands in for it."""
        return self.source or "the built-in default suite (no diagbot.yml)"

    @property
    def relative_to(self) -> str:
        """What the suites' paths are relative to, as messages say it: `relative to ./diagbot.yml`."""
        if self.source is None:
            return f"relative to {'the current folder' if self.root == Path('.') else self.root}"
        return f"relative to {_shown(self.source)}"

    def shown(self, relative: str) -> str:
        """A configured path as the user wrote it, with what it is relative to."""
        return f"{relative} ({self.relative_to})"

    def confined(self, relative: str, key: str) -> Path:
        """A configured path, refused when it resolves outside the boundary or into /proc, /sys or /dev: a pull
        request's diagbot.yml must not point a check at the runner's environment or secrets."""
        path = self.path(relative)
        where = f"{self.where}: {key}: {relative!r}"
        base = f" ({self.relative_to})"
        if "\x00" in relative:
            raise ConfigError(
                f"{where} is not a usable path (it contains a NUL character); give the path without it{base}"
            )
        try:
            resolved = path.resolve()
        except (OSError, RuntimeError, ValueError):  # a symlink loop
            raise ConfigError(f"{where} cannot be resolved (a symbolic link loop?); give a plain path{base}") from None
        if _in_kernel_tree(resolved):
            raise ConfigError(
                f"{where} resolves to {resolved}, which diagbot never reads; give a path in the repository{base}"
            )
        if in_git_folder(resolved):
            raise ConfigError(f"{where} {IN_GIT}; give a path in the repository's files{base}")
        if self.boundary is not None and not resolved.is_relative_to(self.boundary.resolve()):
            raise ConfigError(
                f"{where} resolves outside the workspace ({resolved}); give a path inside the repository{base}"
            )
        try:  # `exists` says False for a path that is not there, and raises for one that cannot be looked at
            path.exists()
        except OSError as exc:  # a part over 255 bytes, a folder that may not be entered
            raise ConfigError(f"{where} cannot be looked at ({exc.strerror or exc}); give a plain path{base}") from None
        return path

    def _existing(self, suite: SuiteConfig, index: int) -> tuple[Path, Path]:
        """The suite's cases and fixtures, which must exist: a missing one is named as written in the config, with
        what it is relative to, before any kind looks for it."""
        cases = self.confined(suite.cases, f"suites.{index}.cases")
        fixtures = self.confined(suite.fixtures, f"suites.{index}.fixtures")
        problems = []
        if not cases.exists():
            noun = _CASES_NOUN.get(suite.kind, "cases")
            problems.append(f"{self.shown(suite.cases)}: {noun} not found; {self._fix(f'suites.{index}.cases')}")
        if not fixtures.is_dir():
            what = "is not a folder" if fixtures.exists() else "not found"
            problems.append(
                f"{self.shown(suite.fixtures)}: fixtures folder {what}, so no case could be judged; "
                f"{self._fix(f'suites.{index}.fixtures')}"
            )
        if problems:
            raise ConfigError(*problems)
        return cases, fixtures

    def _fix(self, key: str) -> str:
        if self.source is None:  # that this is the built-in default suite, the command line's note says once
            return "write a diagbot.yml that names your suites"
        return f"fix {key} in {self.where}"

    def suite_input(self, suite: SuiteConfig, run: RunInfo | None = None) -> SuiteInput:
        index = self._places.get(id(suite), 0)
        cases, fixtures = self._existing(suite, index)
        return SuiteInput(
            name=suite.name,
            cases=cases,
            fixtures=fixtures,
            cases_label=str(self.path(suite.cases)),
            fixtures_label=str(self.path(suite.fixtures)),
            max_fixture_bytes=suite.max_fixture_bytes,
            run=run,
            options=suite.kind_options(self.source or DEFAULT_CONFIG, index),
            governance=Governance(tuple(self.gate.roles), tuple(self.gate.usage_rights)),
        )


_CASES_NOUN = {"trace": "case file", "workspace": "cases folder", "agent": "case file or folder"}


def _shown(config: str) -> str:
    """A config file's path as messages give it: `./diagbot.yml` for one in the current folder."""
    path = Path(config)
    return f"./{config}" if not path.is_absolute() and len(path.parts) == 1 else config


def default_config(root: Path) -> Config:
    """No diagbot.yml: one trace suite, `diagnosis`, from cases/diagnosis-cases.json and fixtures/."""
    suite = SuiteConfig(name="diagnosis", cases="cases/diagnosis-cases.json", fixtures="fixtures")
    return Config(suites=[suite], root=root)


def parse_config(text: str, where: str, root: Path) -> Config:
    """Validate diagbot.yml's text; every problem is listed with its location and, for typos, a suggestion."""
    if not text or text.isspace():
        raise ConfigError(
            f"{where}: the config file is empty; list the suites under 'suites:' (see the README), or remove the "
            "file to run the built-in default suite"
        )
    try:
        data = values.load_yaml(text)
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be a diagbot config") from None
    except ValueError as exc:  # a BadNumber: a number JSON cannot hold, named with its key
        raise ConfigError(f"{where}: holds a value diagbot cannot read ({values.one_line(str(exc), 300)})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise ConfigError(f"{where}{at}: not valid YAML ({values.yaml_problem(exc)})") from None
    if data is None:
        raise ConfigError(f"{where}: the config file holds only comments; list the suites under 'suites:'")
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping with a 'suites' list")
    bad_text = values.surrogate_paths(data) if values.may_hold_surrogates(text) else []
    if bad_text:
        raise ConfigError(f"{where}: {', '.join(bad_text)} holds a lone surrogate, which is not Unicode text")
    suites = data.get("suites")
    if isinstance(suites, list) and len(suites) > MAX_SUITES:  # before any of them is validated
        raise ConfigError(f"{where}: suites: {len(suites)} suites, more than the {MAX_SUITES} a run may have; merge "
                          "suites, or split the config and run diagbot once for each part")  # fmt: skip
    suggestions = Suggestions(MAX_SUGGESTIONS)  # one for the whole config: every suite's typos share it
    try:
        config = Config.model_validate({**data, "root": root, "source": where})
    except ValidationError as exc:
        raise ConfigError(*_capped(_problems(exc, data, where, suggestions))) from None
    problems = []
    for index, suite in enumerate(config.suites):  # each kind's own keys, checked up front with the rest
        try:
            suite.kind_options(where, index, suggestions)
        except ConfigError as exc:
            problems += exc.problems
    if problems:
        raise ConfigError(*_capped(problems))
    return config


MAX_CONFIG_PROBLEMS = 100


def _capped(problems: list[str]) -> list[str]:
    """At most MAX_CONFIG_PROBLEMS of a config's problems, then how many more: a config of thousands of unknown keys
    printed as many lines, each an annotation on a runner."""
    more = len(problems) - MAX_CONFIG_PROBLEMS
    if more <= 0:
        return problems
    return [*problems[:MAX_CONFIG_PROBLEMS], f"... and {more:,} more problems in the config; fix these first"]


def _problems(exc: ValidationError, data: dict[str, Any], where: str, suggestions: Suggestions) -> list[str]:
    """The problems of a config that failed to validate, each suite's unknown keys (which pydantic left to the
    kinds) placed after that suite's other problems, before the next suite's. The suites with unknown keys are
    sorted once and taken in turn as the errors pass them: pydantic lists a list's errors by index."""
    problems = []
    extras = _extra_key_problems(data, where, suggestions)
    pending = sorted(extras)
    taken = 0  # pending[:taken] are placed
    for error in exc.errors():
        suite_at = error["loc"][1] if error["loc"][:1] == ("suites",) and len(error["loc"]) > 1 else None
        while taken < len(pending) and (not isinstance(suite_at, int) or pending[taken] < suite_at):
            problems += extras[pending[taken]]
            taken += 1
        loc = ".".join(str(p) for p in error["loc"])
        if error["type"] == "extra_forbidden":
            known = [n for n in field_names_at(Config, error["loc"]) if n not in ("root", "source", "boundary")]
            close = suggestions.closest(str(error["loc"][-1]), known)
            hint = f" (did you mean {close}?)" if close else ""
            problems.append(f"{where}: unknown key '{loc}'{hint}")
        else:
            problems.append(_value_problem(where, loc, error))
    problems += [p for index in pending[taken:] for p in extras[index]]
    return problems


def _in_kernel_tree(resolved: Path) -> bool:
    """Whether a resolved path is in /proc, /sys or /dev (FORBIDDEN_ROOTS)."""
    return resolved.is_absolute() and len(resolved.parts) > 1 and resolved.parts[1] in FORBIDDEN_ROOTS


def load_config(path: Path | None, required: bool = False) -> Config:
    """Read diagbot.yml (paths in it are relative to its folder); fall back to the default suite when absent."""
    config_path = path or Path(DEFAULT_CONFIG)
    try:
        resolved = config_path.resolve()
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a NUL: said by the read below
        resolved = config_path
    kernels = _in_kernel_tree(resolved)
    with contextlib.suppress(OSError):  # one that cannot even be looked at is refused as one there
        kernels = kernels and resolved.is_file()  # a device is refused by the read below, saying what it is
    if kernels:
        raise ConfigError(  # `/proc/self/environ` holds the token: never read, never echoed in a message
            f"{config_path}: the config file resolves to {resolved}, which diagbot never reads; give diagbot.yml itself"
        )
    try:
        text = read_text_bounded(config_path, MAX_CONFIG_BYTES)
    except FileProblem as problem:
        if not problem.missing:
            raise ConfigError(f"{config_path}: the config file {problem.message}") from None
        if required:
            raise ConfigError(
                f"{config_path}: config file not found; fix the path or drop the option to use defaults"
            ) from None
        return default_config(config_path.parent)
    return parse_config(text, str(config_path), config_path.parent)
