"""The workspace suite: judge the folder a multi-agent run left behind, bucket by bucket, with hard gates.

A case (`CASES/<id>/case.yaml`) names checks per bucket; its run is `FIXTURES/<id>/` (or `workspace:`,
always inside FIXTURES). In `evidence_only` mode a fixed `mode_contract` bucket proves the run stopped at the
evidence stage; in `diagnosis` mode five buckets run from workflow to diagnosis. Verdicts follow a fixed
precedence, and the score band keeps `invalid` at 0, `fail` in 1..69 and `pass` at 70 or more.
"""

from __future__ import annotations

import gc
import os
import stat
from collections.abc import Iterable, Sequence
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic import SerializerFunctionWrapHandler as SerializeNext
from pydantic.dataclasses import dataclass
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from diagbot.core import values
from diagbot.core.fs import IN_GIT, FileProblem, in_git_folder, read_text_bounded
from diagbot.core.models import Output, StrictInput, field_names_at
from diagbot.core.query import quoted_text_slips
from diagbot.core.rates import rate
from diagbot.core.report import RunInfo, SuiteName, with_rate
from diagbot.core.text import Suggestions
from diagbot.kinds.workspace.checks import CheckKind, CheckSpec, Outcome, SafeGlob, Workspace, run_check


class Mode(StrEnum):
    DIAGNOSIS = "diagnosis"
    EVIDENCE_ONLY = "evidence_only"


class Verdict(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    INVALID = "invalid"


class Status(StrEnum):
    PASS = "pass"
    PARTIAL = "partial"
    FAIL = "fail"


class Bucket(StrEnum):
    MODE_CONTRACT = "mode_contract"
    WORKFLOW = "workflow"
    EVIDENCE_COLLECTION = "evidence_collection"
    CRITICAL_EVIDENCE = "critical_evidence"
    EVIDENCE_ROUTING = "evidence_routing"
    DIAGNOSIS = "diagnosis"


class Reason(StrEnum):
    ARTIFACT_RESOLUTION_FAILED = "artifact_resolution_failed"
    EVIDENCE_ONLY_STAGE_BOUNDARY_FAILED = "evidence_only_stage_boundary_failed"
    EVIDENCE_ONLY_ARTIFACTS_MISSING = "evidence_only_artifacts_missing"
    WORKFLOW_INCOMPLETE = "workflow_incomplete"
    EVIDENCE_COLLECTION_INCOMPLETE = "evidence_collection_incomplete"
    EVIDENCE_COLLECTION_PARTIAL = "evidence_collection_partial"
    CRITICAL_EVIDENCE_MISSING = "critical_evidence_missing"
    CRITICAL_EVIDENCE_PARTIAL = "critical_evidence_partial"
    EVIDENCE_ROUTING_MISSING = "evidence_routing_missing"
    EVIDENCE_ROUTING_PARTIAL = "evidence_routing_partial"
    DIAGNOSIS_MISSING = "diagnosis_missing"
    DIAGNOSIS_PARTIAL = "diagnosis_partial"


EVIDENCE_ONLY_POINTS = {
    Bucket.MODE_CONTRACT: 10.0,
    Bucket.EVIDENCE_COLLECTION: 30.0,
    Bucket.CRITICAL_EVIDENCE: 60.0,
}
DIAGNOSIS_POINTS = {
    Bucket.WORKFLOW: 10.0,
    Bucket.EVIDENCE_COLLECTION: 20.0,
    Bucket.CRITICAL_EVIDENCE: 30.0,
    Bucket.EVIDENCE_ROUTING: 10.0,
    Bucket.DIAGNOSIS: 30.0,
}
STAGE_BOUNDARY_CHECK = "diagnosis_agent_not_invoked"
PASS_FLOOR, FAIL_CEILING = 70.0, 69.0
WORKSPACE_SCHEMA_VERSION = 1
MAX_CASE_BYTES = 1024 * 1024
MAX_CASE_FOLDERS = 10_000
MAX_SUGGESTIONS = 50  # distinct misspelt keys of one case.yaml given the closest known name


class Evaluation(StrictInput):
    mode: Mode = Mode.DIAGNOSIS
    summary_glob: SafeGlob = "evidences/*summary*"
    weights: dict[Bucket, Annotated[float, Field(allow_inf_nan=False)]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _weights_total_100(self) -> Evaluation:
        if self.weights and self.mode is Mode.EVIDENCE_ONLY:
            raise ValueError("weights apply only in diagnosis mode; remove evaluation.weights or set mode: diagnosis")
        if Bucket.MODE_CONTRACT in self.weights or any(points < 0 for points in self.weights.values()):
            raise ValueError(f"weights take points >= 0 for {', '.join(DIAGNOSIS_POINTS)} only")
        total = sum(self.points().values())
        if abs(total - 100) > 1e-9:
            raise ValueError(f"bucket points total {total:g}, not 100; adjust evaluation.weights so they add up")
        return self

    def points(self) -> dict[Bucket, float]:
        """The buckets this mode judges, in verdict order, with their points."""
        if self.mode is Mode.EVIDENCE_ONLY:
            return dict(EVIDENCE_ONLY_POINTS)
        return {bucket: self.weights.get(bucket, points) for bucket, points in DIAGNOSIS_POINTS.items()}


class Judge(StrictInput):
    workflow: list[CheckSpec] = Field(default_factory=list)
    evidence_collection: list[CheckSpec] = Field(default_factory=list)
    critical_evidence: list[CheckSpec] = Field(default_factory=list)
    evidence_routing: list[CheckSpec] = Field(default_factory=list)
    diagnosis: list[CheckSpec] = Field(default_factory=list)

    @field_validator("*")
    @classmethod
    def _unique_ids(cls, checks: list[CheckSpec]) -> list[CheckSpec]:
        seen: set[str] = set()
        for check in checks:
            if check.id in seen:
                raise ValueError(f"check id {check.id!r} is used twice; ids must be unique within a bucket")
            seen.add(check.id)
        return checks


class WorkspaceCase(StrictInput):
    """One case.yaml: what to judge in a run folder, and where that folder is."""

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    title: str
    prompt: str = ""
    workspace: SafeGlob | None = None
    evaluation: Evaluation = Field(default_factory=Evaluation)
    judge: Judge


@lru_cache(maxsize=64)
def _mode_contract(summary_glob: str) -> tuple[CheckSpec, ...]:
    """The fixed evidence-only gate: hand-off artifacts are there and the diagnosis agent never ran."""
    return (
        CheckSpec(id="workspace_evidence_report_valid", json_valid="workspace_evidence_report.json"),
        CheckSpec(id="evidence_agent_artifact_present", json_valid="evidences/agent-runs/evidence-agent.json"),
        CheckSpec(id="summary_artifact_present", file_exists=summary_glob),
        CheckSpec(id=STAGE_BOUNDARY_CHECK, file_absent="evidences/agent-runs/diagnosis-analyst.json"),
    )


def contract_needs(summary_glob: str = Evaluation.model_fields["summary_glob"].default) -> str:
    """What evidence-only mode requires of a run folder, in words, from the contract's own checks."""
    parts = []
    for check in _mode_contract(summary_glob):
        if check.kind is CheckKind.JSON_VALID:
            parts.append(f"{check.payload} (valid JSON)")
        elif check.kind is CheckKind.FILE_EXISTS:
            parts.append(f"a file matching evaluation.summary_glob ({check.payload} by default)")
        else:
            parts.append(f"no {check.payload} (the diagnosis agent must not have run)")
    return f"evidence-only mode needs {', '.join(parts[:-1])}, and {parts[-1]}"


def contract_failures(result: WorkspaceResult) -> list[str]:
    """The details of the mode_contract checks a run failed: which required files were missing, invalid or present."""
    bucket = result.packet.buckets.get(Bucket.MODE_CONTRACT.value)
    return [check.detail for check in bucket.checks if not check.passed] if bucket else []


# ---- loading -------------------------------------------------------------------------------------------

_CHECK_KEYS = "id, required, weight, description and exactly one of " + ", ".join(CheckKind)


def authoring_slips(case: WorkspaceCase) -> list[str]:
    """What in a case most likely checks otherwise than its author meant (`validate` warns): a query comparing with
    a double-quoted text, which JMESPath reads as a field name, and a bucket whose checks are all optional, which
    passes whatever they find."""
    found = []
    for bucket in Judge.model_fields:
        checks: list[CheckSpec] = getattr(case.judge, bucket)
        for check in checks:
            if check.json_query is not None:
                found += quoted_text_slips(f"judge.{bucket}.{values.one_line(check.id, 100)}", check.json_query.expr)
        if checks and not any(check.required for check in checks):
            found.append(
                f"judge.{bucket}: every check is required: false, so the bucket passes whatever they find (its score "
                "still counts them); make the ones it cannot do without required"
            )
    return found


def load_workspace_suite(cases_dir: Path, fixtures_dir: Path) -> tuple[list[WorkspaceCase], list[str]]:
    """Every case that validates, and every problem found (file, case, bucket, check, field, what to do)."""
    if not cases_dir.is_dir():
        what = "is a file, not a folder" if cases_dir.exists() else "cases folder not found"
        return [], [f"{cases_dir}: {what}; pass the folder that holds <case-id>/case.yaml"]
    problems = [] if fixtures_dir.is_dir() else [f"{fixtures_dir}: fixtures folder not found; every run is invalid"]
    cases = []
    folders: list[Path] = []
    for count, path in enumerate(cases_dir.iterdir()):
        if count >= MAX_CASE_FOLDERS:
            problems.append(f"{cases_dir}: more than {MAX_CASE_FOLDERS:,} entries; split the suite")
            break
        if path.name.startswith(".") or not path.is_dir():
            continue
        if not values.plain_name(path.name):
            shown = path.name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
            problems.append(f"{cases_dir}: case folder '{shown}' is not a UTF-8 name without control characters")
            continue
        folders.append(path)
    for folder in sorted(folders):
        case, found = _load_case(folder / "case.yaml", folder.name)
        problems += found
        if case is not None:
            cases.append(case)
    return cases, problems


def _load_case(path: Path, folder: str) -> tuple[WorkspaceCase | None, list[str]]:
    try:
        text = read_text_bounded(path, MAX_CASE_BYTES)
        if not text or text.isspace():
            return None, [f"{path}: case {folder}: case.yaml is empty; write its id, title, evaluation and judge"]
        raw = values.load_yaml(text)
    except FileProblem as problem:
        if problem.missing:
            return None, [f"{path}: case {folder}: no case.yaml; add one or remove the folder"]
        return None, [f"{path}: case {folder}: case.yaml {problem.message}"]
    except yaml.MarkedYAMLError as exc:
        where = f"line {exc.problem_mark.line + 1}: " if exc.problem_mark else ""
        return None, [f"{path}: case {folder}: not valid YAML ({where}{exc.problem}); fix the syntax"]
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, [f"{path}: case {folder}: cannot be read ({exc}); fix the file"]
    except RecursionError:
        return None, [f"{path}: case {folder}: nested too deeply to be a case; fix the file"]
    except ValueError as exc:  # PyYAML's int() of a number with thousands of digits
        return None, [f"{path}: case {folder}: holds a value diagbot cannot read ({str(exc)[:80]}); fix the file"]
    if not isinstance(raw, dict):
        return None, [f"{path}: case {folder}: top level must be a mapping with id, title, evaluation, judge"]
    bad_text = values.surrogate_paths(raw)
    if bad_text:
        return None, [f"{path}: case {folder}: {', '.join(bad_text)} holds a lone surrogate, not Unicode text"]
    case_id = raw["id"] if isinstance(raw.get("id"), str) else folder
    problems = [_problem(path, case_id, loc, message, raw) for loc, message in _case_rules(raw, folder)]
    try:
        case = WorkspaceCase.model_validate(raw)
    except ValidationError as exc:
        suggestions = Suggestions(MAX_SUGGESTIONS)  # one budget for the case: each lookup is a difflib pass
        errors = [(err["loc"], _explain(err, suggestions)) for err in exc.errors()]
        return None, [_problem(path, case_id, loc, message, raw) for loc, message in errors] + problems
    return (None if problems else case), problems


def _case_rules(raw: dict[str, Any], folder: str) -> list[tuple[tuple[int | str, ...], str]]:
    """Rules across fields, checked on the raw mapping so they are reported alongside shape errors."""
    found: list[tuple[tuple[int | str, ...], str]] = []
    if isinstance(raw.get("id"), str) and raw["id"] != folder:
        found.append((("id",), f"{raw['id']!r} differs from its folder name {folder!r}; make them the same"))
    judge = raw.get("judge")
    try:
        evaluation = Evaluation.model_validate(raw.get("evaluation") or {})
    except ValidationError:
        return found  # reported with the shape errors
    for bucket, points in evaluation.points().items():
        if bucket is Bucket.MODE_CONTRACT or points == 0 or not isinstance(judge, dict):
            continue
        if not judge.get(bucket.value):
            fix = "or give it 0 points in evaluation.weights" if evaluation.mode is Mode.DIAGNOSIS else ""
            message = f"{evaluation.mode} mode needs at least one check here; add one {fix}"
            found.append((("judge", bucket.value), message.strip()))
    return found


def _explain(err: Any, suggestions: Suggestions) -> str:
    kind, message = err["type"], str(err["msg"])
    if kind == "extra_forbidden":
        loc = tuple(err["loc"])
        close = suggestions.closest(str(loc[-1]), field_names_at(WorkspaceCase, loc))
        if close is not None:
            return f"unknown key; did you mean {close}?"
        hint = f" (a check takes {_CHECK_KEYS})" if len(loc) == 4 and loc[0] == "judge" else ""
        return f"unknown key; remove it or fix its spelling{hint}"
    if kind == "missing":
        return "is required; add it"
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    return f"{message} (got {err['input']!r:.80})"


def _problem(path: Path, case_id: str, loc: Iterable[int | str], message: str, raw: dict[str, Any]) -> str:
    where, rest = [f"case {case_id}"], list(loc)
    if len(rest) >= 2 and rest[0] == "judge":
        bucket, rest = str(rest[1]), rest[2:]
        where.append(f"bucket {bucket}")
        if rest and isinstance(index := rest[0], int):
            rest = rest[1:]
            checks = (raw.get("judge") or {}).get(bucket)
            check = checks[index] if isinstance(checks, list) and index < len(checks) else None
            name = repr(check["id"]) if isinstance(check, dict) and "id" in check else f"#{index + 1}"
            where.append(f"check {name}")
    if rest:
        where.append(f"field {'.'.join(map(str, rest))}")
    return f"{path}: {': '.join(where)}: {' '.join(message.split())}"


# ---- judging -------------------------------------------------------------------------------------------


# The packet's leaves are slotted pydantic dataclasses: their names need no camelCase alias, and a suite of
# thousands of packets then keeps half as many objects for the memory manager and cycle collector to track.
_LEAF = ConfigDict(extra="ignore")
Points = Annotated[float, Field(ge=0, le=100)]  # a bucket's points and scores, and a case's score, are of 100


@dataclass(frozen=True, slots=True, config=_LEAF)
class CheckResult:
    id: str
    passed: bool
    required: bool
    weight: float
    detail: str


@dataclass(frozen=True, slots=True, config=_LEAF)
class BucketResult:
    status: Status
    points: Points
    score: Points
    checks: list[CheckResult]


@dataclass(frozen=True, slots=True, config=_LEAF)
class Scoring:
    raw: float
    final: float
    verdict: Verdict
    reason: Reason | None


class Packet(Output):
    """On the wire each bucket sits beside `scoring` (`packet.critical_evidence`); in Python, in a dict."""

    buckets: dict[str, BucketResult]
    scoring: Scoring

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        if isinstance(data, dict) and "buckets" not in data:
            return {
                "buckets": {k: v for k, v in data.items() if k != "scoring"},
                "scoring": data.get("scoring"),
            }
        return data

    @model_serializer(mode="wrap")
    def _flatten(self, serialize: SerializeNext) -> dict[str, Any]:
        data = serialize(self)
        return {**data.pop("buckets"), **data}

    @classmethod
    def __get_pydantic_json_schema__(cls, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The published schema says the wire's shape: `scoring` beside the buckets, each under its own name."""
        schema = handler.resolve_ref_schema(handler(core))
        properties = schema["properties"]
        schema["additionalProperties"] = properties.pop("buckets")["additionalProperties"]
        schema["required"] = ["scoring"]
        return schema


class WorkspaceResult(Output):
    case_id: str
    title: str
    mode: Mode
    verdict: Verdict
    reason: Reason | None
    score: Points
    packet: Packet


def judge_case(case: WorkspaceCase, fixtures_dir: Path) -> WorkspaceResult:
    """Judge one run folder; whatever the folder holds becomes check results, never an exception. The packet is
    assembled as plain data and validated once, in one pass through pydantic-core rather than one per check. The
    case's checks share the work budget of the workspace made for it here (`checks.MAX_CASE_STEPS`), so no other
    case's checks can use any of it."""
    root, problem = _resolve(case, fixtures_dir)
    workspace = None
    if root is not None:
        try:
            workspace = Workspace(root)
        except OSError as exc:
            root, problem = None, f"workspace folder {case.workspace or case.id!r} cannot be read ({exc.strerror})"
    buckets = {}
    for bucket, points in case.evaluation.points().items():
        if bucket is Bucket.MODE_CONTRACT:
            checks = _mode_contract(case.evaluation.summary_glob)
        else:
            checks = getattr(case.judge, bucket.value)
        if workspace is None:
            outcomes = [Outcome(False, f"not run: {problem}")] * len(checks)
        else:
            outcomes = [run_check(workspace, check) for check in checks]
        buckets[bucket.value] = _bucket(points, checks, outcomes)
    verdict, reason = (Verdict.INVALID, Reason.ARTIFACT_RESOLUTION_FAILED) if root is None else _decide(case, buckets)
    # each bucket's score is rounded, so weights of 100 can sum to 100.01: a score is of 100
    raw = min(100.0, round(sum(bucket["score"] for bucket in buckets.values()), 2))
    final = _band(verdict, raw)
    scoring = {"raw": raw, "final": final, "verdict": verdict, "reason": reason}
    return WorkspaceResult.model_validate(
        {
            "case_id": case.id,
            "title": case.title,
            "mode": case.evaluation.mode,
            "verdict": verdict,
            "reason": reason,
            "score": final,
            "packet": {"buckets": buckets, "scoring": scoring},
        }
    )


def judge_suite(
    cases: list[WorkspaceCase], fixtures_dir: Path, suite: str | None = None, run: RunInfo | None = None
) -> WorkspaceReport:
    """Judge every case and aggregate the report. The cycle collector is paused meanwhile: judging makes no
    reference cycles (a test holds it to that), and sparing the collector repeated passes over the growing
    results saves about 3% on the bench."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        results = [judge_case(case, fixtures_dir) for case in cases]
    finally:
        if collecting:
            gc.enable()
    return build_workspace_report(results, suite, run)


def _resolve(case: WorkspaceCase, fixtures_dir: Path) -> tuple[str | None, str]:
    """The run folder, or why there is none. The name cannot hold `..`, so only a link on the way can lead
    out of the fixtures folder; real paths are compared only then (realpath is slow on the hot path)."""
    name = case.workspace or case.id
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if not parts:
        return None, f"workspace {name!r} names the fixtures folder itself; name a folder inside it"
    base = target = os.fspath(fixtures_dir)
    linked = False
    try:
        for part in parts:
            target = os.path.join(target, part)
            mode = os.lstat(target).st_mode
            linked = linked or stat.S_ISLNK(mode)
    except (FileNotFoundError, NotADirectoryError):
        return None, f"workspace folder {name!r} not found in the fixtures folder"
    except OSError as exc:
        return None, f"workspace folder {name!r} cannot be read ({exc.strerror})"
    if linked:
        real_base, real = os.path.realpath(base), os.path.realpath(target)
        if real == real_base or os.path.commonpath([real_base, real]) != real_base:
            return None, f"workspace {name!r} resolves outside the fixtures folder"
        if in_git_folder(real):
            return None, f"workspace {name!r} {IN_GIT}"
        try:
            mode = os.stat(target).st_mode
        except OSError:  # a dangling link, or a loop
            mode = 0
    if not stat.S_ISDIR(mode):
        return None, f"workspace folder {name!r} not found in the fixtures folder"
    if not os.access(target, os.R_OK | os.X_OK):  # listable but not enterable would pass file_exists checks
        return None, f"workspace folder {name!r} cannot be read (permission denied)"
    return target, ""


def _bucket(points: float, checks: Sequence[CheckSpec], outcomes: list[Outcome]) -> dict[str, Any]:
    """pass: every required check passed; fail: none did; score: points times the passed share of weight."""
    rows, required, total, gained = [], [], 0.0, 0.0
    for check, (passed, detail) in zip(checks, outcomes, strict=True):
        rows.append(
            {"id": check.id, "passed": passed, "required": check.required, "weight": check.weight, "detail": detail}
        )
        total += check.weight
        gained += check.weight if passed else 0.0
        if check.required:
            required.append(passed)
    status = Status.PASS if all(required) else Status.FAIL if not any(required) else Status.PARTIAL
    share = gained / total if total else float(status is Status.PASS)
    return {"status": status, "points": points, "score": round(points * share, 2), "checks": rows}


def _decide(case: WorkspaceCase, buckets: dict[str, dict[str, Any]]) -> tuple[Verdict, Reason | None]:
    """The hard gates make a run invalid (not comparable); after them the first short bucket makes it fail."""
    status: dict[str, Status] = {name: bucket["status"] for name, bucket in buckets.items()}
    if case.evaluation.mode is Mode.EVIDENCE_ONLY:
        contract = buckets[Bucket.MODE_CONTRACT]["checks"]
        if not all(row["passed"] for row in contract if row["id"] == STAGE_BOUNDARY_CHECK):
            return Verdict.INVALID, Reason.EVIDENCE_ONLY_STAGE_BOUNDARY_FAILED
        if status[Bucket.MODE_CONTRACT] is not Status.PASS:
            return Verdict.INVALID, Reason.EVIDENCE_ONLY_ARTIFACTS_MISSING
    elif status[Bucket.WORKFLOW] is not Status.PASS:
        return Verdict.INVALID, Reason.WORKFLOW_INCOMPLETE
    if status[Bucket.EVIDENCE_COLLECTION] is Status.FAIL:
        return Verdict.INVALID, Reason.EVIDENCE_COLLECTION_INCOMPLETE
    for name in (
        Bucket.EVIDENCE_COLLECTION,
        Bucket.CRITICAL_EVIDENCE,
        Bucket.EVIDENCE_ROUTING,
        Bucket.DIAGNOSIS,
    ):
        if name in status and status[name] is not Status.PASS:
            return Verdict.FAIL, Reason(f"{name}_{'missing' if status[name] is Status.FAIL else 'partial'}")
    return Verdict.PASS, None


def _band(verdict: Verdict, raw: float) -> float:
    if verdict is Verdict.INVALID:
        return 0.0
    if verdict is Verdict.PASS:
        return max(PASS_FLOOR, raw)
    return min(FAIL_CEILING, max(1.0, raw))


# ---- report and diff -----------------------------------------------------------------------------------


class WorkspaceReport(Output):
    schema_version: int = WORKSPACE_SCHEMA_VERSION
    kind: Literal["workspace"] = "workspace"
    suite: SuiteName | None = None
    total_cases: int
    passed_cases: int
    pass_rate: float
    verdict_distribution: dict[Verdict, int]
    average_score: float
    average_bucket_scores: dict[str, float]
    results: list[WorkspaceResult]
    run: RunInfo | None = None

    @model_validator(mode="before")
    @classmethod
    def _rate(cls, data: Any) -> Any:
        return with_rate(data)


def build_workspace_report(
    results: list[WorkspaceResult], suite: str | None = None, run: RunInfo | None = None
) -> WorkspaceReport:
    """Aggregate results; a bucket's average counts only the cases whose mode has that bucket."""
    passed = sum(result.verdict is Verdict.PASS for result in results)
    scores: dict[str, list[float]] = {bucket.value: [] for bucket in Bucket}
    for result in results:
        for name, bucket in result.packet.buckets.items():
            scores.setdefault(name, []).append(bucket.score)
    return WorkspaceReport(
        suite=suite,
        total_cases=len(results),
        passed_cases=passed,
        pass_rate=rate(passed, len(results)),
        verdict_distribution={v: sum(result.verdict is v for result in results) for v in Verdict},
        average_score=_mean(result.score for result in results),
        average_bucket_scores={name: _mean(values) for name, values in scores.items() if values},
        results=results,
        run=run,
    )


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return round(sum(items) / len(items), 2) if items else 0.0
