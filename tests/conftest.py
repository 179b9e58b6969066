"""Shared factories: a valid case and a passing trace, each adjustable with **overrides."""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"


def case_dict(**overrides: Any) -> dict[str, Any]:
    """A case that `trace_dict()` passes, in the case file's camelCase."""
    case: dict[str, Any] = {
        "id": "payment-timeout",
        "title": "Payment API timeout",
        "question": "Why does the payment API time out?",
        "traceFixture": "payment-timeout.json",
        "expectedRootCauseKeywords": ["timeout", "connection pool"],
        "requiredEvidenceTools": ["query_logs", "query_metrics"],
        "allowedVerdicts": ["PASS", "LOW_CONFID"],
        "forbiddenAnswerKeywords": ["certainly caused by"],
        "degradationKeywords": ["insufficient evidence"],
    }
    case.update(overrides)
    return case


def trace_dict(**overrides: Any) -> dict[str, Any]:
    """A passing V2-complete trace; overrides replace top-level keys, or nested ones via dotted paths."""
    trace: dict[str, Any] = {
        "session": {
            "answer": "Payment calls timeout because the DB connection pool is exhausted; raise the pool size.",
            "totalDurationMs": 8000,
            "selfEvaluation": {
                "verifier_evaluation": {
                    "verdict": "PASS",
                    "tool_trace_summary": [{"tool_name": "query_metrics"}],
                    "executor_structured_output": {
                        "claims": [{"claim_id": "c1", "status": "confirmed", "evidence_bindings": [{"ref": "log:1"}]}]
                    },
                    "gatekeeper_result": {"status": "pass", "rule_set_version": "gatekeeper-rules-v1"},
                    "claim_checks": [{"claim_id": "c1", "verification": "direct_observation", "detail": "seen"}],
                    "composer_output": {"status": "valid"},
                }
            },
        },
        "toolInvocations": [
            {"toolName": "query_logs", "success": True},
            {"toolName": "lookup_knowledge", "success": True},
        ],
    }
    trace = copy.deepcopy(trace)
    for dotted, value in overrides.items():
        *parents, leaf = dotted.split(".")
        node = trace
        for key in parents:
            node = node[key]
        if value is DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return trace


DELETE = object()
VERIFIER = "session.selfEvaluation.verifier_evaluation"


HANG_SECONDS = 120  # far above what any test's block takes: only a hang reaches it


@contextmanager
def hang_guard(seconds: int = HANG_SECONDS) -> Iterator[None]:
    """Fail the block as hung if it is still running after `seconds` (main thread only). A guard against a hang,
    not an assertion on speed: how fast diagbot is, bench/ measures."""

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"still running after {seconds} s: hung")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/NAME; UPDATE_GOLDEN=1 rewrites it (then read the diff before committing)."""
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"golden file {path} missing: run `make golden` and review it"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs from its golden file (make golden, then review)"


@pytest.fixture
def repo_root() -> Path:
    return ROOT


def bundled_workspace(where: Path, kinds: tuple[str, ...] = ("trace", "workspace")) -> Path:
    """A GitHub workspace holding this repository's bundled suites and its diagbot.yml cut to the suites of
    `kinds`, as a checkout would. The bot's tests use the trace and workspace suites; the agent suite's failing P0
    case would fail every run of theirs, and has its own tests."""
    ws = where / "workspace"
    ws.mkdir()
    shutil.copytree(ROOT / "cases", ws / "cases")
    shutil.copytree(ROOT / "fixtures", ws / "fixtures")
    kept: list[str] = []
    keep = True
    for line in (ROOT / "diagbot.yml").read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("  - name: "):
            keep = True
        elif line.startswith("    kind: "):
            keep = line.split(":", 1)[1].split("#")[0].strip() in kinds
            if not keep:
                kept.pop()  # the suite's `- name:` line
        elif not line.startswith("    "):
            keep = True
        if keep:
            kept.append(line)
    (ws / "diagbot.yml").write_text("".join(kept), encoding="utf-8")
    return ws


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return bundled_workspace(tmp_path)


def made_at(data: bytes, sha: str) -> bytes:
    """A report's bytes as a run of commit `sha` would have made them (its run.gitSha); others kept as they are."""
    try:
        report = json.loads(data)
    except ValueError:
        return data  # an unreadable report stays one
    if isinstance(report, dict) and isinstance(report.get("run"), dict) and report["run"].get("gitSha"):
        report["run"]["gitSha"] = sha
        return json.dumps(report).encode()
    return data
