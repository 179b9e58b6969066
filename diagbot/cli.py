"""The command line: the thin shell that reads files and flags, calls the pure core, writes files.

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

from diagbot.cases import load_case_file
from diagbot.errors import DiagbotError
from diagbot.evaluate import evaluate_suite
from diagbot.report import RunInfo, TraceReport, dump_model
from diagbot.trace import DEFAULT_MAX_FIXTURE_BYTES


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


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def cmd_eval(args: argparse.Namespace) -> int:
    suite = load_case_file(Path(args.cases))
    report = evaluate_suite(
        suite, Path(args.fixtures), name=args.suite, run=run_info(), max_fixture_bytes=args.max_fixture_bytes
    )
    write_text(Path(args.output), dump_model(report))
    print(console_summary(report))
    print(f"report written to {args.output}")
    return 0


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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except DiagbotError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return exc.exit_code
    return code
