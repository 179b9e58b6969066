"""The gate: one pure decision from per-suite facts and the gate settings, used by every command and the relay.

Order matters and is fixed: unusable input first, then a missing required baseline, so that no other suite's
outcome (a regression that does not gate, an empty suite) can let a required-but-missing baseline pass. A
blocking failure (a gating P0 case that failed) comes next: it fails whatever the baseline says, even with
`fail-on-regression: false`, since it is not a regression but a case that must never fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Conclusion(StrEnum):
    SUCCESS = "success"
    FAILURE = "failure"
    NEUTRAL = "neutral"


@dataclass(frozen=True)
class GateSettings:
    fail_on_regression: bool = True
    require_baseline: bool = False
    fail_on_blocking: bool = True  # False only for `--no-fail` runs, which report everything and exit 0


@dataclass(frozen=True)
class SuiteFacts:
    """What the gate needs to know of one suite (or of the run, for problems that belong to no suite)."""

    name: str
    problems: int = 0
    evaluated: bool = False  # a report was made
    cases: int = 0
    compared: bool = False  # a diff against a baseline was made
    regressions: int = 0  # regressions of gating cases
    blocking: int = 0  # failures that fail the gate with or without a baseline (gating P0 agent cases)
    baseline_cases: int = 0  # cases in the baseline's report of the suite (0 without one)
    gating: int = 0  # cases that gate (agent cases by their governance; every case of the other kinds)
    baseline_gating: int = 0  # cases that gated in the baseline's report of the suite (0 without one)


@dataclass(frozen=True)
class Decision:
    conclusion: Conclusion
    exit_code: int  # 0 pass, 1 regression or missing required baseline, 2 unusable input
    reason: str  # one line: the check run's title
    waived: bool = False  # a finding that would fail the check, which the gate settings let pass (the reason says)


def decide(suites: list[SuiteFacts], gate: GateSettings) -> Decision:
    """Unusable input fails (2); a missing required baseline fails (1); a blocking failure fails (1); a suite
    emptied of the cases its baseline had, or of the cases that gated there, fails (1), as a regression does,
    when regressions gate."""
    broken = [s.name for s in suites if s.problems]
    if broken:
        return Decision(Conclusion.FAILURE, 2, f"input could not be used: {_names(broken)}")
    uncompared = [s.name for s in suites if s.evaluated and not s.compared]
    if gate.require_baseline and uncompared:
        return Decision(Conclusion.FAILURE, 1, f"no baseline for {_names(uncompared)}, and require-baseline is set")
    blocking = sum(s.blocking for s in suites)
    if blocking:
        return _found(
            f"{blocking} gating P0 case{'' if blocking == 1 else 's'} failed",
            gate.fail_on_blocking,
            "not failing: --no-fail",
        )
    emptied = [s for s in suites if s.evaluated and s.cases == 0 and s.baseline_cases]
    if emptied:  # every case of a suite deleted: nothing left to regress, which is no pass
        first = emptied[0]
        what = f"suite {first.name} has no cases, and its baseline had {first.baseline_cases}{_alike(emptied)}"
        fix = "restore them, or remove the suite and list it in gate.retired-suites"
        return _found(f"{what}: {fix}", gate.fail_on_regression, "not gating")
    ungated = [s for s in suites if s.evaluated and s.cases and not s.gating and s.baseline_gating]
    if ungated:  # every case demoted to informational (gate.roles, usage rights, review): nothing left that gates
        first = ungated[0]
        what = f"no case of suite {first.name} gates, and {first.baseline_gating} did in its baseline{_alike(ungated)}"
        fix = "each case's notGatingBecause in the report says why (gate.roles, gate.usage-rights, review)"
        return _found(f"{what}: {fix}", gate.fail_on_regression, "not gating")
    if all(s.cases == 0 for s in suites):
        return Decision(Conclusion.NEUTRAL, 0, "nothing was evaluated")
    regressions = sum(s.regressions for s in suites)
    if regressions:
        return _found(
            f"{regressions} regression{'' if regressions == 1 else 's'}", gate.fail_on_regression, "not gating"
        )
    return Decision(Conclusion.SUCCESS, 0, "no regression")


def _found(what: str, fails: bool, waived: str) -> Decision:
    """A finding that fails the check (1) unless the gate settings waive it; then it is a success that says so."""
    if fails:
        return Decision(Conclusion.FAILURE, 1, what)
    return Decision(Conclusion.SUCCESS, 0, f"{what} ({waived})", waived=True)


def _alike(found: list[SuiteFacts]) -> str:
    return f" ({len(found) - 1} more suites alike)" if len(found) > 1 else ""


def _names(names: list[str], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more
