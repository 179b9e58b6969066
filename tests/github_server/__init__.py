"""A real HTTP test double of GitHub's REST API for diagbot's tests.

``with GitHubTestServer() as gh:`` starts an API host and a blob host on
127.0.0.1; point PyGithub at ``gh.api_url``. Every request and response is
checked against GitHub's OpenAPI description (``openapi/subset.json``); call
``gh.assert_no_violations()`` at the end of a test.
"""

from .server import GitHubTestServer
from .state import (
    Artifact,
    CheckRun,
    Comment,
    CommitStatus,
    Fault,
    Pull,
    RecordedRequest,
    Repo,
    Run,
)

__all__ = [
    "Artifact",
    "CheckRun",
    "Comment",
    "CommitStatus",
    "Fault",
    "GitHubTestServer",
    "Pull",
    "RecordedRequest",
    "Repo",
    "Run",
]
