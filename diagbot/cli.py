"""The command line: the thin shell that reads files and flags, calls the pure core, writes files.

Commands import what only they need, so `diagbot eval` on a big suite does not pay for templates and GitHub.

Exit codes: 0 done (a report was written), 1 a regression was found, 2 the input is unusable.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from diagbot.cases import load_case_file
from diagbot.config import ThresholdConfig, given_thresholds, load_config
from diagbot.diff import DiffReport
from diagbot.errors import DiagbotError, ReportFormatError
from diagbot.evaluate import evaluate_suite
from diagbot.report import RunInfo, TraceReport, dump_model, write_file
from diagbot.trace import DEFAULT_MAX_FIXTURE_BYTES

if TYPE_CHECKING:
    from diagbot.render import CurrentInfo


def run_info() -> RunInfo:
    """The commit, ref and time of this run, from the runner's variables or the local git checkout."""
    sha = os.environ.get("GITHUB_SHA") or _git("rev-parse", "HEAD")
    ref = os.environ.get("GITHUB_REF") or _git("rev-parse", "--abbrev-ref", "HEAD")
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return RunInfo(git_sha=sha, ref=ref, time=now)


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def console_summary(report: TraceReport, limit: int = 20) -> str:
    """One screen: the pass rate, then each failing case with its first failed check."""
    name = report.suite or "suite"
    lines = [f"{name}: {report.passed_cases}/{report.total_cases} cases passed ({report.pass_rate:.1%})"]
    failing = [r for r in report.results if not r.passed]
    for result in failing[:limit]:
        first = result.failed_checks[0] if result.failed_checks else "failed"
        more = f" (+{len(result.failed_checks) - 1} more)" if len(result.failed_checks) > 1 else ""
        lines.append(f"  FAIL {result.case_id}: {first}{more}")
    if len(failing) > limit:
        lines.append(f"  ... and {len(failing) - limit} more failing cases (see the report)")
    return "\n".join(lines)


def cmd_eval(args: argparse.Namespace) -> int:
    suite = load_case_file(Path(args.cases))
    report = evaluate_suite(
        suite, Path(args.fixtures), name=args.suite, run=run_info(), max_fixture_bytes=args.max_fixture_bytes
    )
    write_file(Path(args.output), dump_model(report))
    print(console_summary(report))
    print(f"report written to {args.output}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from diagbot.suites import diff_reports, load_report_file

    baseline = load_report_file(Path(args.baseline))
    current = load_report_file(Path(args.current))
    thresholds = ThresholdConfig().override(given_thresholds(args)).to_thresholds()
    diff = diff_reports(baseline, current, thresholds, args.baseline)
    write_file(Path(args.output), dump_model(diff))
    print(
        f"{diff.regression_count} regressions, {diff.improvement_count} improvements, {diff.changed_count} changes; "
        f"diff written to {args.output}"
    )
    return 1 if diff.has_regression and not args.no_fail else 0


def cmd_render(args: argparse.Namespace) -> int:
    from diagbot.render import COMMENT_LIMIT, BaselineInfo, render_markdown
    from diagbot.suites import load_report_file, view

    current = load_report_file(Path(args.current))
    diff = None
    if args.diff:
        try:
            diff = DiffReport.model_validate_json(Path(args.diff).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReportFormatError(f"{args.diff}: not a readable diff ({str(exc).splitlines()[0]})") from None
    info = BaselineInfo(source="none", missing_reason="no baseline was given") if diff is None else BaselineInfo()
    if args.baseline_info:
        try:
            info = BaselineInfo.model_validate_json(Path(args.baseline_info).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ReportFormatError(
                f"{args.baseline_info}: not readable baseline info ({str(exc).splitlines()[0]})"
            ) from None
    name = args.suite or getattr(current, "suite", None) or "diagnosis"
    body = render_markdown(
        "comment.md.j2", [view(name, current, diff)], info, _current_info(), f"diagbot:{name}", COMMENT_LIMIT
    )
    write_file(Path(args.output), body)
    print(f"comment written to {args.output} ({len(body)} characters)")
    return 0


def _current_info() -> CurrentInfo:
    from diagbot.render import CurrentInfo

    run = run_info()
    return CurrentInfo(sha=run.git_sha, ref=run.ref)


def cmd_run(args: argparse.Namespace) -> int:
    from diagbot.pipeline import find_baselines, run_config, write_outputs
    from diagbot.render import BaselineInfo

    config = load_config(Path(args.config) if args.config else None, required=args.config is not None)
    config = config.model_copy(update={"thresholds": config.thresholds.override(given_thresholds(args))})
    location = Path(args.baseline) if args.baseline else None
    baselines, problems = find_baselines(location, config)
    if baselines:
        first = next(iter(baselines.values()))
        sha = first.run.git_sha if isinstance(first, TraceReport) and first.run else None
        info = BaselineInfo(source="file", label=str(location), sha=sha)
    elif location is None:
        info = BaselineInfo(source="none", missing_reason="no --baseline was given")
    else:
        info = BaselineInfo(source="none", missing_reason=f"{location} holds no usable report for these suites")
    fail = config.gate.fail_on_regression and not args.no_fail
    outcome = run_config(config, baselines, info, _current_info(), run_info(), fail, baseline_problems=problems)
    out = Path(args.out)
    write_outputs(outcome, out)
    print(outcome.comment)
    for problem in outcome.problems:
        print(f"error: {problem}", file=sys.stderr)
    print(f"diagbot: {outcome.reason}; report folder {out}", file=sys.stderr)
    return outcome.exit_code


def _add_threshold_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("thresholds (override diagbot.yml)")
    group.add_argument("--tool-calls-pct", type=float, help="rise in tool calls that counts, percent (default 20)")
    group.add_argument("--tool-calls-min", type=float, help="... and at least this many calls (default 1)")
    group.add_argument("--duration-pct", type=float, help="rise in duration that counts, percent (default 20)")
    group.add_argument("--duration-min-ms", type=float, help="... and at least this many ms (default 500)")
    group.add_argument("--score-points", type=float, help="workspace score drop that counts (default 5)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="diagbot", description="Deterministic regression gate for diagnosis agents.")
    commands = parser.add_subparsers(dest="command", required=True)

    ev = commands.add_parser("eval", help="evaluate a case file against trace fixtures and write a report")
    ev.add_argument("--cases", required=True, help="the case file (JSON)")
    ev.add_argument("--fixtures", required=True, help="the folder of trace fixtures")
    ev.add_argument("--output", required=True, help="where to write the report JSON")
    ev.add_argument("--suite", default="diagnosis", help="the suite name recorded in the report")
    ev.add_argument("--max-fixture-bytes", type=int, default=DEFAULT_MAX_FIXTURE_BYTES)
    ev.set_defaults(handler=cmd_eval)

    df = commands.add_parser("diff", help="compare two reports; exit 1 on a regression")
    df.add_argument("--baseline", required=True)
    df.add_argument("--current", required=True)
    df.add_argument("--output", required=True)
    df.add_argument("--no-fail", action="store_true", help="exit 0 even when there is a regression")
    _add_threshold_flags(df)
    df.set_defaults(handler=cmd_diff)

    rd = commands.add_parser("render", help="render the PR comment for one suite")
    rd.add_argument("--current", required=True, help="the current report")
    rd.add_argument("--diff", help="the diff against the baseline (omit when there is no baseline)")
    rd.add_argument("--baseline-info", help="JSON describing the baseline's source (branch, sha, runUrl, ...)")
    rd.add_argument("--suite", help="the suite name shown and used in the comment marker")
    rd.add_argument("--output", required=True)
    rd.set_defaults(handler=cmd_render)

    rn = commands.add_parser("run", help="evaluate every suite of diagbot.yml, diff, render; exit 1 on regression")
    rn.add_argument("--config", help="the config file (default ./diagbot.yml; none means the default suite)")
    rn.add_argument("--baseline", help="a folder of <suite>.json reports, or one report for a single suite")
    rn.add_argument("--out", default="build/diagbot", help="the report folder to write")
    rn.add_argument("--no-fail", action="store_true", help="report regressions but exit 0")
    _add_threshold_flags(rn)
    rn.set_defaults(handler=cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except DiagbotError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return exc.exit_code
    except Exception as exc:  # a bug of ours, not bad input: one clear line and exit 2, never a silent pass
        print(f"error: diagbot failed unexpectedly ({type(exc).__name__}: {exc}); please report it", file=sys.stderr)
        return 2
    return code
