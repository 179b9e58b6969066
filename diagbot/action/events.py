"""Which commit and pull request a run is about, from the event payload, the inputs and the checked-out tree."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from diagbot.action.settings import RunMode, Settings
from diagbot.core import values
from diagbot.core.errors import DiagbotError
from diagbot.core.fs import FileProblem, read_bounded
from diagbot.github.port import GitHubPort

EVENT_BYTES = 16 * 1024 * 1024
_SHA = re.compile(r"[0-9a-f]{40}")
PULL_EVENTS = ("pull_request", "pull_request_target")


class Role(StrEnum):
    PULL_REQUEST = "pull_request"  # comment + check run + gate
    PUSH = "push"  # report folder as the next baseline; never gates on a regression


class UnsupportedEvent(DiagbotError):
    """diagbot was triggered by an event it has no meaning for."""


class EventError(DiagbotError):
    """The event payload is missing or lacks a field diagbot needs, or the checkout is not the commit to judge."""


@dataclass(frozen=True)
class Target:
    """What this run evaluates and against which branch's baseline."""

    role: Role
    head_sha: str | None
    ref: str | None
    base_branch: str | None
    base_sha: str | None
    pr_number: int | None = None


def load_event(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(read_bounded(path, EVENT_BYTES))
    except FileProblem as problem:
        raise EventError(f"{path}: the event payload {problem.message}; is GITHUB_EVENT_PATH right?") from None
    except (ValueError, RecursionError) as exc:
        raise EventError(f"{path}: the event payload is not JSON ({exc}); is GITHUB_EVENT_PATH right?") from None
    return data if isinstance(data, dict) else {}


def resolve_target(settings: Settings, port: GitHubPort) -> Target:
    """The PR (head, base) or pushed branch this run is about, from the event payload or the pr-number input."""
    event = settings.event_name
    if event not in (*PULL_EVENTS, "push", "workflow_dispatch") and settings.mode is RunMode.AUTO:
        raise UnsupportedEvent(
            f"diagbot does not handle the '{event}' event; run it on pull_request, push or workflow_dispatch "
            "(or set the mode input with pr-number)"
        )
    payload = load_event(settings.event_path)
    if settings.mode is RunMode.PUSH or (event == "push" and settings.mode is RunMode.AUTO):
        return _push_target(settings, payload)
    if event in PULL_EVENTS and settings.pr_number is None:
        target = _pull_request_target(settings, payload)
        if event == "pull_request_target" and target.pr_number is not None and target.head_sha is not None:
            _require_checkout_of(settings, target.pr_number, target.head_sha)  # it checks out the base by default
        return target
    if settings.pr_number is not None and (
        event in (*PULL_EVENTS, "workflow_dispatch") or settings.mode is RunMode.PULL_REQUEST
    ):
        pull = port.pull(settings.pr_number)
        if event != "pull_request":  # a pull_request run checks out the PR's merge commit, by design
            _require_checkout_of(settings, pull.number, pull.head_sha)
        return Target(Role.PULL_REQUEST, pull.head_sha, pull.head_ref, pull.base_ref, pull.base_sha, pull.number)
    if settings.mode is RunMode.PULL_REQUEST:
        raise EventError("mode is pull-request but no pull request is known; set the pr-number input")
    if event == "workflow_dispatch":
        return _push_target(settings, payload)
    raise UnsupportedEvent(
        f"diagbot does not handle the '{event}' event; run it on pull_request, push or workflow_dispatch "
        "(see the README's workflow example)"
    )


def _pull_request_target(settings: Settings, payload: dict[str, Any]) -> Target:
    if settings.event_path is None:
        raise EventError(
            f"GITHUB_EVENT_PATH is not set, so the {settings.event_name} payload cannot be read; run diagbot as a "
            "workflow step (or set the mode and pr-number inputs)"
        )
    where = f"{settings.event_path}: the {settings.event_name} payload"
    number = _field(payload, "pull_request.number", int, where)
    head_sha = _field(payload, "pull_request.head.sha", str, where)
    base_ref = _field(payload, "pull_request.base.ref", str, where)
    base_sha = _field(payload, "pull_request.base.sha", str, where)
    wrong = (
        "number is not a pull request's number" if number < 1
        else "head.sha is not a 40-digit commit sha" if not _SHA.fullmatch(head_sha)
        else "base.sha is not a 40-digit commit sha" if not _SHA.fullmatch(base_sha)
        else "base.ref is not a branch name (1 to 255 characters of text)" if not _branch_name(base_ref)
        else None
    )  # fmt: skip
    if wrong:
        raise EventError(f"{where}: pull_request.{wrong}")
    return Target(
        Role.PULL_REQUEST,
        head_sha=head_sha,
        ref=_field(payload, "pull_request.head.ref", str, where),
        base_branch=base_ref,
        base_sha=base_sha,
        pr_number=number,
    )


def _branch_name(name: str) -> bool:
    """A name the baseline search can ask GitHub for: 1 to 255 characters, none of them a control character or a
    lone surrogate."""
    return 0 < len(name) <= 255 and values.plain_name(name)


def _field(payload: dict[str, Any], path: str, kind: type[Any], where: str) -> Any:
    """The payload's value at the dotted `path`, of type `kind` (a boolean is no number), or an EventError
    naming the field."""
    value: Any = payload
    keys = path.split(".")
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            missing = ".".join(keys[: depth + 1]) if isinstance(value, dict) else path
            raise EventError(f"{where} lacks {missing}; was the workflow triggered by this event?")
        value = value[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise EventError(f"{where}: {path} is {type(value).__name__}, expected {kind.__name__}")
    return value


def _push_target(settings: Settings, payload: dict[str, Any]) -> Target:
    ref = str(payload.get("ref") or settings.ref or "")
    branch = ref.removeprefix("refs/heads/") if ref.startswith("refs/heads/") else None
    before = payload.get("before")
    base_sha = str(before) if isinstance(before, str) and before.strip("0") else None
    head = payload.get("after")
    return Target(Role.PUSH, str(head) if head else settings.sha, ref or None, branch, base_sha)


def _require_checkout_of(settings: Settings, number: int, head_sha: str) -> None:
    """A run for a pull request named by `pr-number` posts on the PR's head: it must have evaluated that commit."""
    checked_out = checked_out_commit(settings.workspace) or settings.sha
    if checked_out == head_sha:
        return
    raise EventError(
        f"pull request #{number} is at {head_sha[:12]}, but the workspace holds "
        f"{(checked_out or 'an unknown commit')[:12]}: diagbot posts only results of the commit it evaluated; "
        "check out the pull request's head first, e.g. `- uses: actions/checkout@v4` with "
        f"`ref: refs/pull/{number}/head` (`ref: refs/pull/${{{{ inputs.pr-number }}}}/head`)"
    )


def checked_out_commit(workspace: Path, limit: int = 4096) -> str | None:
    """The commit the workspace's git checkout is at, read from `.git` without running git (None if unknown)."""
    git = workspace / ".git"
    try:
        if git.is_file():  # a worktree or submodule: `gitdir: <path>`
            pointer = read_bounded(git, limit, git=True).decode("utf-8", "replace").strip()
            git = (workspace / pointer.removeprefix("gitdir:").strip()).resolve()
        head = read_bounded(git / "HEAD", limit, git=True).decode("utf-8", "replace").strip()
        if _SHA.fullmatch(head):
            return head
        ref = head.removeprefix("ref:").strip()
        if not ref.startswith("refs/") or ".." in ref:
            return None
        loose = git / ref
        if loose.is_file():
            value = read_bounded(loose, limit, git=True).decode("utf-8", "replace").strip()
            return value if _SHA.fullmatch(value) else None
        packed = read_bounded(git / "packed-refs", 16 * 1024 * 1024, git=True).decode("utf-8", "replace")
    except (OSError, FileProblem):
        return None
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name == ref and _SHA.fullmatch(sha):
            return sha
    return None
