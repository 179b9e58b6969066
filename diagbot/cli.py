"""The command line: the thin shell that reads files and flags, calls the pure core, writes files.

Commands import what only they need, so `diagbot eval` on a big suite does not pay for templates and GitHub.

Exit codes: 0 done (a report was written), 1 a regression was found, 2 the input is unusable.
Colour and the progress bar appear only on a terminal (`terminal.py`); what a pipe or a CI log gets is plain.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import io
import itertools
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from pydantic import ValidationError

from diagbot import __version__
from diagbot.core.errors import CaseFileError, DiagbotError, OutputError, ReportFormatError
from diagbot.core.gate import GateSettings
from diagbot.core.models import error_message
from diagbot.core.rates import timestamp
from diagbot.core.report import SUITE_NAME, RunInfo, dump_model
from diagbot.core.text import with_article
from diagbot.core.values import one_line
from diagbot.io.config import DEFAULT_CONFIG, Config, checked_fixture_bytes, given_thresholds, load_config
from diagbot.io.files import write_file
from diagbot.kinds.base import SuiteInput
from diagbot.kinds.trace.fixture import DEFAULT_MAX_FIXTURE_BYTES
from diagbot.kinds.workers import MAX_WORKERS, default_workers
from diagbot.terminal import GREEN, RED, YELLOW, Painter, colour_allowed, progress_bar

if TYPE_CHECKING:
    from diagbot.pipeline import Outcome
    from diagbot.render.markdown import CurrentInfo


def tune_collector() -> None:
    """For the process of a run (the CLI, and the action's entrypoint). A suite keeps tens of thousands of small
    objects alive (cases, results) and makes no cycles to speak of; with the default thresholds the cycle collector
    rescans all of them again and again, half the time of loading 10,000 agent cases. It still runs, only rarely."""
    gc.set_threshold(100_000, 50, 100)


def run_info() -> RunInfo:
    """The commit, ref and time of this run, from the runner's variables or the local git checkout."""
    sha = os.environ.get("GITHUB_SHA") or _git("rev-parse", "HEAD")
    ref = os.environ.get("GITHUB_REF") or _git("rev-parse", "--abbrev-ref", "HEAD")
    return RunInfo(git_sha=sha, ref=ref, time=timestamp(dt.datetime.now(dt.UTC)))


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def print_errors(problems: list[str]) -> None:
    """Each problem as one `error:` line on stderr (escaped, cut to 4,000 characters)."""
    for problem in problems:
        print(f"error: {one_line(problem, 4000)}", file=sys.stderr)


def say(text: str) -> None:
    """Print to stdout; a reader that left early (`diagbot run | head`) must not change the exit code (the gate),
    so a closed pipe silences stdout for the rest of the run instead of raising. A stdout that cannot take the
    output otherwise (a full disk) is an error: what was asked for was not delivered."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _silence_stdout()
    except OSError as exc:
        _silence_stdout()  # or Python's own flush at exit fails again
        raise OutputError(f"stdout cannot be written ({exc.strerror or exc})") from None


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


class _Diagnostics(io.TextIOBase):
    """stderr as the command line uses it: warnings, errors, the progress bar. A stderr that cannot take them
    (full, closed) drops them instead of raising, for they must never change the exit code, the gate's verdict."""

    def __init__(self, stream: TextIO | None) -> None:
        # None when the process started with stderr closed: then nothing is shown
        self._stream = stream if stream is not None else open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, text: str) -> int:
        with contextlib.suppress(OSError, ValueError):  # ValueError: a closed file
            self._stream.write(text)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def isatty(self) -> bool:
        try:
            return self._stream.isatty()
        except (OSError, ValueError):
            return False

    def fileno(self) -> int:
        return self._stream.fileno()


DEFAULT_OUT = "build/diagbot"
DEFAULT_SUITE_NOTE = (
    f"note: there is no {DEFAULT_CONFIG} here, so the built-in default suite was used: one trace suite, diagnosis, "
    f"from cases/diagnosis-cases.json and fixtures/ (diagbot init writes a {DEFAULT_CONFIG} to start from)"
)


def _default_suite_note() -> str:
    """DEFAULT_SUITE_NOTE, and the nearest diagbot.yml of a folder above, if any (run from a subfolder, the built-in
    suite ran and its advice pointed the wrong way)."""
    here = Path.cwd()
    for up, folder in enumerate(here.parents):
        if up >= 8:  # as far up as a run from inside a repository plausibly is
            break
        found = folder / DEFAULT_CONFIG
        with contextlib.suppress(OSError):
            if found.is_file():
                shown = os.path.relpath(found, here)
                return f"{DEFAULT_SUITE_NOTE}; {shown} exists: run diagbot from its folder, or give --config {shown}"
    return DEFAULT_SUITE_NOTE


def _default_suite_used(args: argparse.Namespace) -> bool:
    """No --config and no ./diagbot.yml: `load_config` then falls back to the built-in suite."""
    return getattr(args, "config", None) is None and not Path(DEFAULT_CONFIG).exists()


def _config(args: argparse.Namespace) -> Config:
    """diagbot.yml (or --config), with the threshold flags applied and checked as diagbot.yml's values are."""
    given = getattr(args, "config", None)
    config = load_config(Path(given) if given else None, required=given is not None)
    thresholds = config.thresholds.override(given_thresholds(args), "--{name}")
    return config.model_copy(update={"thresholds": thresholds})


def _gate(config: Config, args: argparse.Namespace) -> GateSettings:
    return GateSettings(
        fail_on_regression=config.gate.fail_on_regression and not args.no_fail,
        require_baseline=config.gate.require_baseline,
        fail_on_blocking=not args.no_fail,
    )


def _other_kind(cases: Path, label: str) -> str | None:
    """Why `eval` cannot read this --cases (a workspace or an agent suite), or None when it may be a trace case
    file. `eval` stays the trace kind's command; the other kinds run through diagbot.yml and `run`."""
    if cases.is_dir():
        entries = [entry for _, entry in zip(range(1000), cases.iterdir(), strict=False)]
        if any((entry / "case.yaml").is_file() for entry in entries):
            kind, what = "workspace", "a folder of <case-id>/case.yaml"
        elif any(entry.suffix in (".yaml", ".yml") for entry in entries):
            kind, what = "agent", "a folder of YAML case files"
        else:
            return None
    elif cases.name == "case.yaml":
        kind, what = "workspace", "a workspace case.yaml"
    elif cases.suffix in (".yaml", ".yml"):
        kind, what = "agent", "a YAML case file"
    elif _agent_json(cases):
        kind, what = "agent", "a JSON case file of agent cases (case_id)"
    else:
        return None
    return (
        f"{label}: {what} is {with_article(kind)} suite, and diagbot eval reads only a trace case file (JSON); add "
        f"the suite to diagbot.yml with kind: {kind} and use diagbot run (diagbot init --kind {kind} writes an example)"
    )


_AGENT_KEY = re.compile(rb'"case_id"\s*:')


def _agent_json(cases: Path) -> bool:
    """Whether a JSON case file names its cases by `case_id`, as agent cases do (a trace case's is `id`): its first
    64 KiB is looked at, and a file that cannot be read is left to the trace kind to say so."""
    from diagbot.core.fs import FileProblem, read_bounded

    try:
        return _AGENT_KEY.search(read_bounded(cases, 64 * 1024, head=True)) is not None
    except FileProblem:
        return False


def cmd_eval(args: argparse.Namespace) -> int:
    from diagbot.kinds.trace import TraceKind

    max_fixture_bytes = checked_fixture_bytes(args.max_fixture_bytes)
    other = _other_kind(Path(args.cases), args.cases)
    if other is not None:
        raise CaseFileError(other)
    kind = TraceKind()
    suite = SuiteInput(
        name=args.suite,
        cases=Path(args.cases),
        fixtures=Path(args.fixtures),
        cases_label=args.cases,
        fixtures_label=args.fixtures,
        max_fixture_bytes=max_fixture_bytes,
        run=run_info(),
    )
    report = kind.evaluate(suite)
    write_file(Path(args.output), dump_model(report))
    say(Painter(colour_allowed(sys.stdout, os.environ)).console(kind.console(report)))
    say(f"report written to {args.output}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from diagbot.core.gate import SuiteFacts, decide
    from diagbot.io.baselines import read_report_file
    from diagbot.kinds.registry import blocking, diff_reports, gating

    config = _config(args)
    baseline = read_report_file(Path(args.baseline))
    current = read_report_file(Path(args.current))
    diff = diff_reports(baseline, current, config.thresholds.to_thresholds(), args.baseline)
    write_file(Path(args.output), dump_model(diff))
    say(
        f"{diff.regression_count} regressions, {diff.improvement_count} improvements, {diff.changed_count} changes; "
        f"diff written to {args.output}"
    )
    failing = blocking(current)  # a gating P0 failure fails the gate whatever the baseline says, as in `run`
    for blocked in failing:
        say(f"blocking: {one_line(blocked.line, 4000)}")
    facts = SuiteFacts(
        name=current.suite or "suite", evaluated=True, cases=current.total_cases, compared=True,
        regressions=diff.gating_regressions, blocking=len(failing), baseline_cases=baseline.total_cases,
        gating=gating(current), baseline_gating=gating(baseline),
    )  # fmt: skip
    decision = decide([facts], _gate(config, args))
    if decision.exit_code:  # why it fails, as `run` says it (a suite emptied or demoted fails with no regression)
        print(f"diagbot: {decision.reason}", file=sys.stderr)
    return decision.exit_code


def cmd_render(args: argparse.Namespace) -> int:
    from diagbot.core.diff import parse_diff
    from diagbot.core.fs import FileProblem, read_text_bounded
    from diagbot.io.baselines import REPORT_BYTES, read_report_file
    from diagbot.kinds.registry import view
    from diagbot.render.markdown import COMMENT_LIMIT, BaselineInfo, render_markdown

    current = read_report_file(Path(args.current))
    diff = None
    if args.diff:
        try:
            diff = parse_diff(read_text_bounded(Path(args.diff), REPORT_BYTES), args.diff)
        except FileProblem as problem:
            raise ReportFormatError(f"{args.diff}: the diff {problem.message}") from None
    info = BaselineInfo(source="none", missing_reason="no baseline was given") if diff is None else BaselineInfo()
    if args.baseline_info:
        try:
            text = read_text_bounded(Path(args.baseline_info), 1024 * 1024)
        except FileProblem as problem:
            raise ReportFormatError(f"{args.baseline_info}: the baseline info {problem.message}") from None
        if not text or text.isspace():
            raise ReportFormatError(
                f"{args.baseline_info}: the file is empty; give the baseline info as a JSON object (source, branch, "
                "sha, runUrl, ...)"
            )
        try:
            info = BaselineInfo.model_validate_json(text)
        except ValidationError as exc:  # what and where: "ageDays: Input should be less than or equal to 1000000"
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "top level"
            raise ReportFormatError(
                f"{args.baseline_info}: not readable baseline info ({one_line(where, 100)}: "
                f"{one_line(error_message(first), 200)})"
            ) from None
    name = args.suite or current.suite or "diagnosis"
    body = render_markdown(
        "comment.md.j2", [view(name, current, diff)], info, _current_info(), f"diagbot:{name}", COMMENT_LIMIT
    )
    write_file(Path(args.output), body)
    say(f"comment written to {args.output} ({len(body)} characters)")
    return 0


def _current_info(run: RunInfo | None = None) -> CurrentInfo:
    from diagbot.render.markdown import CurrentInfo

    run = run or run_info()
    return CurrentInfo(sha=run.git_sha, ref=run.ref)


def cmd_run(args: argparse.Namespace) -> int:
    from diagbot.core.outcome import unusable
    from diagbot.io.baselines import find_baselines
    from diagbot.kinds import registry
    from diagbot.pipeline import MAX_CLEARED, clear_outputs, run_config, run_outcome, write_outputs
    from diagbot.render.markdown import BaselineInfo

    default_suite = _default_suite_used(args)
    if default_suite and not args.quiet:
        print(_default_suite_note(), file=sys.stderr)
    used = None if default_suite else args.config or DEFAULT_CONFIG
    location = Path(args.baseline) if args.baseline else None
    try:
        config = _config(args)
        baselines = find_baselines(location, [s.name for s in config.suites])
    except DiagbotError as exc:
        try:  # an earlier run's outputs would read as this run's; but not the reports of the baseline given
            baseline = location is not None and _same_folder(location, Path(args.out))
            listed = (Path(args.out) / "reports").glob("*.json") if baseline else iter(())
            kept = frozenset(itertools.islice(listed, MAX_CLEARED))  # no more are ever cleared
            clear_outputs(Path(args.out), keep=kept)
        except OutputError as stale:
            print_errors(stale.problems)
        if args.format != "json":
            raise
        print_errors(exc.problems)
        say(dump_model(unusable(list(exc.problems), args.out, used, args.baseline)).rstrip("\n"))
        return 2
    if baselines.reports:
        first = next(iter(baselines.reports.values()))
        info = BaselineInfo(source="file", label=str(location), sha=first.run.git_sha if first.run else None)
    elif location is None:
        info = BaselineInfo(source="none", missing_reason="no --baseline was given")
    else:
        info = BaselineInfo(source="none", missing_reason=f"{location} holds no usable report for these suites")
    replaced = _replaced_baseline(location, Path(args.out)) if baselines.reports else []
    info = info.model_copy(update={"warnings": [*info.warnings, *replaced]})  # the comment and --format json say it
    bar = None if args.quiet else progress_bar(sys.stderr)
    try:
        run = run_info()  # asks git, so once for the comment's footer and the reports
        outcome = run_config(config, baselines, info, _current_info(run), run, _gate(config, args),
                             progress=bar.suite if bar is not None else None,
                             workers=args.jobs or default_workers())  # fmt: skip
    finally:
        if bar is not None:
            bar.close()
    out = Path(args.out)
    try:
        too_big = write_outputs(outcome, out)
    except OutputError as exc:  # main() lists these problems; a JSON reader still gets the outcome
        if args.format == "json":
            say(dump_model(run_outcome(outcome, out, used, args.baseline, exc.problems)).rstrip("\n"))
        print_errors(outcome.problems)  # the run's own, which no written file holds now
        raise
    if args.format == "json":
        say(dump_model(run_outcome(outcome, out, used, args.baseline)).rstrip("\n"))
    elif not args.quiet:
        say(outcome.comment)
    for suite in outcome.suites:  # what a kind says of its input as a whole (the comment lists it under the suite)
        for warning in registry.warnings(suite.report) if suite.report is not None else []:
            print(f"warning: {suite.name}: {one_line(warning, 4000)}", file=sys.stderr)
    for warning in outcome.warnings + replaced + too_big:
        print(f"warning: {one_line(warning, 4000)}", file=sys.stderr)
    print_errors(outcome.problems)
    if not args.quiet or outcome.exit_code == 1:  # a failed gate says why, quiet or not: its reason is no error line
        paint = Painter(colour_allowed(sys.stderr, os.environ))
        failing = _uncompared(outcome)  # a first run whose cases fail is no green light
        clean = outcome.exit_code == 0 and outcome.reason == "no regression" and not failing
        colour = RED if outcome.exit_code else GREEN if clean else YELLOW
        said = paint(f"diagbot: {outcome.reason}", colour)
        print(f"{said}{_regressed(outcome)}{failing}; report folder {out}", file=sys.stderr)
    return outcome.exit_code


def _uncompared(outcome: Outcome) -> str:
    """How many cases fail, when no suite was compared with a baseline and the gate passed: "no regression" alone
    read as a green light over a first run whose cases failed, or whose runs were missing, that then became the
    baseline (a case failing there can never be seen to regress)."""
    from diagbot.kinds.registry import outcomes

    if outcome.exit_code or outcome.reason != "no regression":
        return ""
    alone = [s for s in outcome.suites if s.report is not None and s.diff is None]
    cases = [case for s in alone if s.report is not None for case in outcomes(s.report).values()]
    failing = sum(case.failed for case in cases)
    if not failing:
        return ""
    counted = f"{failing} of {len(cases)} " + ("case fails" if len(cases) == 1 else "cases fail")
    if len(alone) == sum(s.report is not None for s in outcome.suites):
        return f" (nothing compared: no baseline; {counted})"
    return f" (no baseline for {', '.join(s.name for s in alone)}, where {counted})"


def _replaced_baseline(location: Path | None, out: Path) -> list[str]:
    """Said when the run wrote its reports over the baseline it was compared with: the next run compared with
    that folder then finds no regression that this one found."""
    if location is None or not _same_folder(location, out):
        return []
    return [
        f"the report folder {out} is also the baseline: this run's reports replaced the ones it was compared with, so "
        "a later run compared with it will not show what regressed here; keep the baseline in a folder of its own "
        "(unless accepting this run as the new baseline was the point)"
    ]


def _same_folder(location: Path, out: Path) -> bool:
    """Whether the baseline at `location` (a report folder, or a report file in one's reports/, through any link)
    is in the report folder `out`, which a run clears and writes."""
    try:
        found, written = location.resolve(), out.resolve()
    except (OSError, RuntimeError):  # a loop of links: nothing is read there, so nothing is replaced
        return False
    return written == (found.parent.parent if found.is_file() and found.parent.name == "reports" else found)


def _regressed(outcome: Outcome) -> str:
    """The cases that fail a failed gate, for a log that shows no comment (`--quiet`, CI): its failing gating P0
    cases and the cases of its gating regressions, each list labelled, at most `_NAMED` names each."""
    from diagbot.core.diff import ItemType
    from diagbot.kinds.registry import blocking

    if outcome.exit_code != 1:
        return ""
    failing = [
        f"{suite.name}/{blocked.case_id}"
        for suite in outcome.suites
        if suite.report is not None
        for blocked in blocking(suite.report)
    ]
    regressed = dict.fromkeys(  # a case once, however many of its items regressed
        f"{suite.name}/{item.case_id}"
        for suite in outcome.suites
        if suite.diff is not None
        for item in suite.diff.items
        if item.type is ItemType.REGRESSION and item.gating and item.case_id
    )
    lists = (("failing P0", failing), ("regressed", list(regressed)))
    said = [f"{label}: {_names(cases)}" for label, cases in lists if cases]
    return f" ({'; '.join(said)})" if said else ""


def _names(cases: list[str]) -> str:
    shown = ", ".join(one_line(case, 120) for case in cases[:_NAMED])
    return shown + (f" and {len(cases) - _NAMED} more cases" if len(cases) > _NAMED else "")


_NAMED = 5  # cases the last line names, of each list


def cmd_validate(args: argparse.Namespace) -> int:
    from diagbot.kinds import registry

    if _default_suite_used(args):
        print(_default_suite_note(), file=sys.stderr)
    config = _config(args)
    errors = warnings = 0
    run = run_info()  # asks git, so once for all suites
    for suite in config.suites:
        try:
            found = registry.validate(suite.kind, config.suite_input(suite, run))
        except DiagbotError as exc:
            print_errors(exc.problems)
            errors += len(exc.problems)
            found = exc.warnings if isinstance(exc, CaseFileError) else []  # the usable cases', still worth fixing
        for warning in found:
            print(f"warning: {one_line(warning, 4000)}", file=sys.stderr)
        warnings += len(found)
    suites = len(config.suites)
    say(
        f"diagbot validate: {suites} suite{'s' * (suites != 1)}, {errors} error{'s' * (errors != 1)}, "
        f"{warnings} warning{'s' * (warnings != 1)}"
    )
    return 2 if errors else 0


def cmd_init(args: argparse.Namespace) -> int:
    from diagbot.scaffold import next_steps, starter, write_starter

    target = Path(args.dir)
    plan = starter(args.kind)
    written = write_starter(target, plan)
    say(next_steps(target, plan, written))
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    import json

    from diagbot.kinds.schemas import SCHEMAS

    schema: dict[str, object] = SCHEMAS[args.name]()
    say(json.dumps(schema, indent=2, ensure_ascii=False))
    return 0


def _jobs(text: str) -> int:
    try:
        jobs = int(text)
    except ValueError:
        jobs = 0
    if not 1 <= jobs <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {MAX_WORKERS}, got {text!r}")
    return jobs


def _number(text: str) -> int | float | str:
    """A flag's text as YAML would read it in diagbot.yml (a whole number, another number, or text), so that the
    value is refused, when it is, with the message diagbot.yml gives (`checked_fixture_bytes`)."""
    for read in (int, float):
        try:
            return read(text)
        except ValueError:
            pass
    return text


def _add_threshold_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("thresholds (override diagbot.yml)")
    group.add_argument("--tool-calls-pct", type=float, help="rise in tool calls that counts, percent (default 20)")
    group.add_argument("--tool-calls-min", type=float, help="... and at least this many calls (default 1)")
    group.add_argument("--duration-pct", type=float, help="rise in duration that counts, percent (default 20)")
    group.add_argument("--duration-min-ms", type=float, help="... and at least this many ms (default 500)")
    group.add_argument("--score-points", type=float, help="workspace score drop that counts (default 5)")


def _suite_name(value: str) -> str:
    """A `--suite` name, held to diagbot.yml's rule: it is recorded in the report and names the comment's marker."""
    if not re.fullmatch(SUITE_NAME, value):
        raise argparse.ArgumentTypeError(
            f"'{one_line(value, 100)}' is not a suite name: use letters, digits, '.', '_' and '-', starting "
            "with a letter or digit (at most 100)"
        )
    return value


def _path(value: str) -> str:
    """A path argument: never empty, since `Path("")` is the working folder (and `--out "$UNSET"` would write
    there, `--baseline "$UNSET"` would read as no baseline)."""
    if not value:
        raise argparse.ArgumentTypeError("is empty; give a path (is a variable in the command not set?)")
    return value


def build_parser() -> argparse.ArgumentParser:
    from diagbot.scaffold import INIT_KIND, KINDS

    parser = argparse.ArgumentParser(prog="diagbot", description="Deterministic regression gate for LLM agents.")
    parser.add_argument("--version", action="version", version=f"diagbot {__version__}", help="print the version")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    it = commands.add_parser("init", help="write a diagbot.yml, two example cases and the GitHub workflow")
    where = "the folder to write to, made when missing (default: the current folder)"
    it.add_argument("dir", nargs="?", default=".", metavar="DIR", type=_path, help=where)
    which = f"the suite kind to start with (default: {INIT_KIND}, for any tool-calling agent)"
    it.add_argument("--kind", choices=KINDS, default=INIT_KIND, help=which)
    it.set_defaults(handler=cmd_init)

    ev = commands.add_parser("eval", help="evaluate a case file against trace fixtures and write a report")
    ev.add_argument("--cases", required=True, type=_path, help="the case file (JSON)")
    ev.add_argument("--fixtures", required=True, type=_path, help="the folder of trace fixtures")
    ev.add_argument("--output", required=True, type=_path, help="where to write the report JSON")
    ev.add_argument("--suite", default="diagnosis", type=_suite_name, help="the suite name recorded in the report")
    size = "the largest fixture read, in bytes; a larger one fails its case (default: %(default)s)"
    ev.add_argument("--max-fixture-bytes", type=_number, default=DEFAULT_MAX_FIXTURE_BYTES, help=size)
    ev.set_defaults(handler=cmd_eval)

    df = commands.add_parser("diff", help="compare two reports; exit 1 on a regression")
    df.add_argument("--baseline", required=True, type=_path, help="the baseline report (JSON)")
    df.add_argument("--current", required=True, type=_path, help="the current report (JSON)")
    df.add_argument("--output", required=True, type=_path, help="where to write the diff JSON")
    df.add_argument("--no-fail", action="store_true", help="exit 0 even when there is a regression")
    df.add_argument(
        "--config", type=_path, help=f"the config whose thresholds and gate apply (default ./{DEFAULT_CONFIG})"
    )
    _add_threshold_flags(df)
    df.set_defaults(handler=cmd_diff)

    rd = commands.add_parser("render", help="render the PR comment for one suite")
    rd.add_argument("--current", required=True, type=_path, help="the current report")
    rd.add_argument("--diff", type=_path, help="the diff against the baseline (omit when there is no baseline)")
    rd.add_argument("--baseline-info", help="JSON describing the baseline's source (branch, sha, runUrl, ...)")
    rd.add_argument("--suite", type=_suite_name, help="the suite name shown and used in the comment marker")
    rd.add_argument("--output", required=True, type=_path, help="where to write the comment (Markdown)")
    rd.set_defaults(handler=cmd_render)

    rn = commands.add_parser("run", help="evaluate every suite of diagbot.yml, diff, render; exit 1 on regression")
    rn.add_argument(
        "--config", type=_path, help="the config file (default ./diagbot.yml; none means the default suite)"
    )
    rn.add_argument(
        "--baseline",
        type=_path,
        help="a previous run's report folder (its --out), or one report file for a one-suite config",
    )
    rn.add_argument("--out", default=DEFAULT_OUT, type=_path, help="the report folder to write (default: %(default)s)")
    rn.add_argument("--no-fail", action="store_true", help="report regressions but exit 0")
    shown = "what stdout gets: the PR comment (text, the default) or the outcome as JSON (diagbot schema run-outcome)"
    rn.add_argument("--format", choices=("text", "json"), default="text", help=shown)
    quiet = (
        "print only warnings, errors and why a failed gate failed (and the JSON outcome with --format json); no "
        "progress bar"
    )
    rn.add_argument("--quiet", "-q", action="store_true", help=quiet)
    jobs = (
        "processes an agent suite of 200 cases or more is judged in (default: the CPUs this process may use, at "
        f"most {MAX_WORKERS}; 1 judges in this process); the reports are the same whatever the number"
    )
    rn.add_argument("--jobs", "-j", type=_jobs, default=None, metavar="N", help=jobs)
    _add_threshold_flags(rn)
    rn.set_defaults(handler=cmd_run)

    va = commands.add_parser("validate", help="check every suite's cases without running anything; exit 2 on errors")
    va.add_argument(
        "--config", type=_path, help="the config file (default ./diagbot.yml; none means the default suite)"
    )
    va.set_defaults(handler=cmd_validate)

    from diagbot.kinds.schemas import SCHEMAS

    sc = commands.add_parser("schema", help="print a JSON Schema diagbot publishes (also under schemas/)")
    sc.add_argument("name", choices=sorted(SCHEMAS), help="which schema")
    sc.set_defaults(handler=cmd_schema)
    return parser


def entry() -> NoReturn:
    """The `diagbot` command and `python -m diagbot`: `main`, then exit. What the process still holds is frozen
    first, so that the interpreter's last collection does not walk it (after a suite of 10,000 cases, tens of
    milliseconds of a run's time)."""
    code = main()
    gc.freeze()
    sys.exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    tune_collector()
    for stream in (sys.stdout, sys.stderr):  # a character UTF-8 cannot carry is written escaped, never a crash
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")
    args = build_parser().parse_args(argv)
    stderr, sys.stderr = sys.stderr, _Diagnostics(sys.stderr)
    try:
        code: int = args.handler(args)
    except DiagbotError as exc:
        print_errors(exc.problems)
        return exc.exit_code
    except Exception as exc:  # a bug of ours, not bad input: one clear line and exit 2, never a silent pass
        print(f"error: diagbot failed unexpectedly ({type(exc).__name__}: {exc}); please report it", file=sys.stderr)
        return 2
    finally:
        sys.stderr.flush()
        sys.stderr = stderr
    return code
