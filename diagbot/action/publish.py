"""Posting results to a pull request: the one comment and the check run. Shared by the bot and the fork relay.

GitHub failures here never change the gate's exit code: a refusal (403: a fork's token, a missing permission)
is a warning, anything else an error annotation, and the step still exits with the gate's verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from diagbot.github.port import CannotCheck, CannotComment, GitHubError, GitHubPort


@dataclass
class Notes:
    """Warnings and errors gathered along the run, printed as workflow annotations."""

    warnings: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Post:
    """Everything one pull request gets from one run."""

    number: int
    head_sha: str
    marker_id: str
    comment: str
    comment_mode: str
    comment_author: str
    conclusion: str
    title: str
    summary: str
    annotations: list[dict[str, Any]]


def publish(port: GitHubPort, post: Post, notes: Notes) -> str | None:
    """Write or update the comment, then create the check run; returns the comment's URL (None if none)."""
    comment_url: str | None = None
    marker = f"<!-- diagbot:{post.marker_id} -->"
    try:
        comment_url = port.upsert_comment(post.number, marker, post.comment, post.comment_mode, post.comment_author)
    except CannotComment as exc:
        notes.warnings.extend(exc.problems)
    except GitHubError as exc:
        notes.errors.extend(exc.problems)
    try:
        port.create_check_run(
            post.head_sha, f"diagbot ({post.marker_id})", post.conclusion, post.title, post.summary, post.annotations
        )
    except CannotCheck as exc:
        notes.warnings.extend(exc.problems)
    except GitHubError as exc:
        notes.errors.extend(exc.problems)
    return comment_url
