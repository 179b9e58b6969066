"""Posting results to a pull request: the one comment and the check run. Shared by the bot and the fork relay.

GitHub failures here never change the gate's exit code: a refusal (403: a fork's token, a missing permission)
is a warning, anything else an error annotation, and the step still exits with the gate's verdict. A write that
failed with an unknown effect is read back and retried once by the client, so an error here means it truly failed.
The comment records the head commit on a hidden second line, so a run overtaken by a newer push leaves the newer
results alone; the check run gets an `external_id` naming this run's attempt, so it can be found again.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from typing import Any

from diagbot.github.port import CannotCheck, CannotComment, GitHubError, GitHubPort
from diagbot.io.files import scrub


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
    run_id: int | None = None  # the workflow run posting; goes into the check run's external_id

    def external_id(self, nonce: str) -> str:
        """`diagbot:<marker id>:<head sha>:<run id or ->:<nonce>`: unique per attempt (a re-run keeps the run id)."""
        return f"diagbot:{self.marker_id}:{self.head_sha}:{self.run_id or '-'}:{nonce}"


def publish(port: GitHubPort, post: Post, notes: Notes) -> str | None:
    """Write or update the comment, then create the check run; returns the comment's URL (None if none)."""
    annotations = [{**a, "message": scrub(str(a.get("message", "")))} for a in post.annotations]
    post = replace(
        post, comment=scrub(post.comment), summary=scrub(post.summary), title=scrub(post.title), annotations=annotations
    )
    comment_url: str | None = None
    marker = f"<!-- diagbot:{post.marker_id} -->"
    try:
        comment_url = port.upsert_comment(
            post.number, marker, post.comment, post.comment_mode, post.comment_author, post.head_sha, notes.warnings
        )
    except CannotComment as exc:
        notes.warnings.extend(exc.problems)
    except GitHubError as exc:
        notes.errors.extend(exc.problems)
    try:
        port.create_check_run(
            post.head_sha,
            f"diagbot ({post.marker_id})",
            post.conclusion,
            post.title,
            post.summary,
            post.annotations,
            post.external_id(secrets.token_hex(4)),
        )
    except CannotCheck as exc:
        notes.warnings.extend(exc.problems)
    except GitHubError as exc:
        notes.errors.extend(exc.problems)
    return comment_url
