"""Turn state records into the JSON objects api.github.com sends.

Every object carries the fields GitHub's OpenAPI description marks as required
(ids, node_id, the many *_url links, user objects, timestamps), because the
server checks each response against that description. Links that a client may
follow (``url``, ``archive_download_url``, ``artifacts_url``...) point at the test
server's own ``api`` base; PyGithub refuses to follow links to any other host.
Web links (``html_url``) point at https://github.com as on the real service.
"""

from __future__ import annotations

import base64
import zlib
from datetime import datetime
from typing import Any
from urllib.parse import quote

from .state import Artifact, CheckRun, Comment, CommitStatus, Pull, Repo, Run, fake_sha

HTML = "https://github.com"
Json = dict[str, Any]

# The bots GitHub Actions uses keep their real ids so logs look familiar.
_KNOWN_USER_IDS = {"github-actions[bot]": 41898282, "octocat": 583231}

# URL templates of a repository object: key -> suffix after the repository's API url.
_REPO_LINKS = {
    "forks_url": "/forks",
    "keys_url": "/keys{/key_id}",
    "collaborators_url": "/collaborators{/collaborator}",
    "teams_url": "/teams",
    "hooks_url": "/hooks",
    "issue_events_url": "/issues/events{/number}",
    "events_url": "/events",
    "assignees_url": "/assignees{/user}",
    "branches_url": "/branches{/branch}",
    "tags_url": "/tags",
    "blobs_url": "/git/blobs{/sha}",
    "git_tags_url": "/git/tags{/sha}",
    "git_refs_url": "/git/refs{/sha}",
    "trees_url": "/git/trees{/sha}",
    "statuses_url": "/statuses/{sha}",
    "languages_url": "/languages",
    "stargazers_url": "/stargazers",
    "contributors_url": "/contributors",
    "subscribers_url": "/subscribers",
    "subscription_url": "/subscription",
    "commits_url": "/commits{/sha}",
    "git_commits_url": "/git/commits{/sha}",
    "comments_url": "/comments{/number}",
    "issue_comment_url": "/issues/comments{/number}",
    "contents_url": "/contents/{+path}",
    "compare_url": "/compare/{base}...{head}",
    "merges_url": "/merges",
    "archive_url": "/{archive_format}{/ref}",
    "downloads_url": "/downloads",
    "issues_url": "/issues{/number}",
    "pulls_url": "/pulls{/number}",
    "milestones_url": "/milestones{/number}",
    "notifications_url": "/notifications{?since,all,participating}",
    "labels_url": "/labels{/name}",
    "releases_url": "/releases{/id}",
    "deployments_url": "/deployments",
}


def ts(value: datetime | None) -> str | None:
    """GitHub's timestamp format: ISO 8601 UTC with a trailing Z."""
    return None if value is None else value.strftime("%Y-%m-%dT%H:%M:%SZ")


def node_id(kind: str, ident: int) -> str:
    """A legacy-style global node id, e.g. ``MDQ6VXNlcjE=`` for User 1."""
    return base64.b64encode(f"0{len(kind)}:{kind}{ident}".encode()).decode()


def stable_id(text: str) -> int:
    """A repeatable positive id for things tests name but do not number."""
    return zlib.crc32(text.encode()) % 90_000_000 + 10_000_000


def user(login: str, api: str) -> Json:
    """A simple-user object; logins ending in ``[bot]`` are Bots, as on GitHub."""
    uid = _KNOWN_USER_IDS.get(login, stable_id(login))
    is_bot = login.endswith("[bot]")
    url = f"{api}/users/{quote(login)}"
    return {
        "login": login,
        "id": uid,
        "node_id": node_id("Bot" if is_bot else "User", uid),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": url,
        "html_url": f"{HTML}/apps/{login[:-5]}" if is_bot else f"{HTML}/{login}",
        "followers_url": f"{url}/followers",
        "following_url": f"{url}/following{{/other_user}}",
        "gists_url": f"{url}/gists{{/gist_id}}",
        "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{url}/subscriptions",
        "organizations_url": f"{url}/orgs",
        "repos_url": f"{url}/repos",
        "events_url": f"{url}/events{{/privacy}}",
        "received_events_url": f"{url}/received_events",
        "type": "Bot" if is_bot else "User",
        "user_view_type": "public",
        "site_admin": False,
    }


def repository_minimal(repo: Repo, api: str) -> Json:
    """The short repository shape used inside workflow runs."""
    url = f"{api}/repos/{repo.full_name}"
    out: Json = {
        "id": repo.id,
        "node_id": node_id("Repository", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": user(repo.owner, api),
        "html_url": f"{HTML}/{repo.full_name}",
        "description": None,
        "fork": repo.fork,
        "url": url,
    }
    out.update({key: url + suffix for key, suffix in _REPO_LINKS.items()})
    return out


def repository_full(repo: Repo, api: str) -> Json:
    """The full repository shape of ``GET /repos/{o}/{r}`` and pull request heads/bases."""
    out = repository_minimal(repo, api)
    stamp = ts(repo.created_at)
    out.update(
        {
            "git_url": f"git://github.com/{repo.full_name}.git",
            "ssh_url": f"git@github.com:{repo.full_name}.git",
            "clone_url": f"{HTML}/{repo.full_name}.git",
            "svn_url": f"{HTML}/{repo.full_name}",
            "mirror_url": None,
            "homepage": None,
            "language": "Python",
            "size": 0,
            "default_branch": repo.default_branch,
            "forks": 0,
            "forks_count": 0,
            "stargazers_count": 0,
            "watchers": 0,
            "watchers_count": 0,
            "open_issues": 0,
            "open_issues_count": 0,
            "network_count": 0,
            "subscribers_count": 0,
            "is_template": False,
            "topics": [],
            "has_issues": True,
            "has_projects": True,
            "has_wiki": True,
            "has_pages": False,
            "has_downloads": True,
            "has_discussions": False,
            "archived": False,
            "disabled": False,
            "visibility": "private" if repo.private else "public",
            "license": None,
            "allow_forking": True,
            "web_commit_signoff_required": False,
            "pushed_at": stamp,
            "created_at": stamp,
            "updated_at": stamp,
        }
    )
    return out


def _ref(ref: str, sha: str, repo: Repo, api: str) -> Json:
    """The head/base part of a pull request."""
    return {
        "label": f"{repo.owner}:{ref}",
        "ref": ref,
        "sha": sha,
        "user": user(repo.owner, api),
        "repo": repository_full(repo, api),
    }


def pull_request(pull: Pull, base: Repo, head: Repo, comments: int, api: str) -> Json:
    """The full pull request object of ``GET /repos/{o}/{r}/pulls/{n}``."""
    repo_url = f"{api}/repos/{base.full_name}"
    url = f"{repo_url}/pulls/{pull.number}"
    html = f"{HTML}/{base.full_name}/pull/{pull.number}"
    closed = None if pull.state == "open" else ts(pull.updated_at)
    links = {
        "self": url,
        "html": html,
        "issue": f"{repo_url}/issues/{pull.number}",
        "comments": f"{repo_url}/issues/{pull.number}/comments",
        "review_comments": f"{url}/comments",
        "review_comment": f"{repo_url}/pulls/comments{{/number}}",
        "commits": f"{url}/commits",
        "statuses": f"{repo_url}/statuses/{pull.head_sha}",
    }
    return {
        "url": url,
        "id": pull.id,
        "node_id": node_id("PullRequest", pull.id),
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": links["issue"],
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "number": pull.number,
        "state": pull.state,
        "locked": False,
        "title": pull.title,
        "user": user(pull.user, api),
        "body": pull.body,
        "labels": [],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": ts(pull.created_at),
        "updated_at": ts(pull.updated_at),
        "closed_at": closed,
        "merged_at": closed if pull.merged else None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": _ref(pull.head_ref, pull.head_sha, head, api),
        "base": _ref(pull.base_ref, pull.base_sha, base, api),
        "_links": {rel: {"href": href} for rel, href in links.items()},
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": False,
        "merged": pull.merged,
        "mergeable": True,
        "rebaseable": True,
        "mergeable_state": "clean",
        "merged_by": None,
        "comments": comments,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": 1,
        "additions": 1,
        "deletions": 0,
        "changed_files": 1,
    }


def pull_request_minimal(pull: Pull, base: Repo, head: Repo, api: str) -> Json:
    """The short pull request shape listed inside workflow runs and check runs."""

    def side(ref: str, sha: str, repo: Repo) -> Json:
        repo_part = {"id": repo.id, "url": f"{api}/repos/{repo.full_name}", "name": repo.name}
        return {"ref": ref, "sha": sha, "repo": repo_part}

    return {
        "id": pull.id,
        "number": pull.number,
        "url": f"{api}/repos/{base.full_name}/pulls/{pull.number}",
        "head": side(pull.head_ref, pull.head_sha, head),
        "base": side(pull.base_ref, pull.base_sha, base),
    }


def workflow_run(run: Run, repo: Repo, head: Repo, pulls: list[Json], api: str) -> Json:
    """A workflow run as listed by the runs endpoints."""
    url = f"{api}/repos/{repo.full_name}/actions/runs/{run.id}"
    suite_id = stable_id(f"suite-{run.id}")
    created = ts(run.created_at)
    committer = {"name": run.actor, "email": f"{run.actor}@users.noreply.github.com"}
    return {
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WorkflowRun", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": run.workflow_path,
        "display_title": run.name,
        "run_number": run.run_number,
        "run_attempt": 1,
        "event": run.event,
        "status": run.status,
        "conclusion": run.conclusion,
        "workflow_id": run.workflow_id,
        "check_suite_id": suite_id,
        "check_suite_node_id": node_id("CheckSuite", suite_id),
        "url": url,
        "html_url": f"{HTML}/{repo.full_name}/actions/runs/{run.id}",
        "pull_requests": pulls,
        "created_at": created,
        "updated_at": created,
        "run_started_at": created,
        "actor": user(run.actor, api),
        "triggering_actor": user(run.actor, api),
        "referenced_workflows": [],
        "jobs_url": f"{url}/jobs",
        "logs_url": f"{url}/logs",
        "check_suite_url": f"{api}/repos/{repo.full_name}/check-suites/{suite_id}",
        "artifacts_url": f"{url}/artifacts",
        "cancel_url": f"{url}/cancel",
        "rerun_url": f"{url}/rerun",
        "previous_attempt_url": None,
        "workflow_url": f"{api}/repos/{repo.full_name}/actions/workflows/{run.workflow_id}",
        "head_commit": {
            "id": run.head_sha,
            "tree_id": fake_sha("tree-" + run.head_sha),
            "message": run.name,
            "timestamp": created,
            "author": committer,
            "committer": committer,
        },
        "repository": repository_minimal(repo, api),
        "head_repository": repository_minimal(head, api),
        "head_repository_id": head.id,
    }


def artifact(art: Artifact, run: Run, repo: Repo, head: Repo, api: str) -> Json:
    """An artifact, with the partial ``workflow_run`` GitHub embeds."""
    url = f"{api}/repos/{repo.full_name}/actions/artifacts/{art.id}"
    return {
        "id": art.id,
        "node_id": node_id("Artifact", art.id),
        "name": art.name,
        "size_in_bytes": art.size,
        "url": url,
        "archive_download_url": f"{url}/zip",
        "expired": art.expired,
        "created_at": ts(art.created_at),
        "updated_at": ts(art.created_at),
        "expires_at": ts(art.expires_at),
        "digest": art.digest,
        "workflow_run": {
            "id": run.id,
            "repository_id": repo.id,
            "head_repository_id": head.id,
            "head_branch": run.head_branch,
            "head_sha": run.head_sha,
        },
    }


def issue_comment(comment: Comment, api: str) -> Json:
    """An issue comment; on a pull request its html_url points at the pull page."""
    repo_url = f"{api}/repos/{comment.repo}"
    return {
        "id": comment.id,
        "node_id": node_id("IssueComment", comment.id),
        "url": f"{repo_url}/issues/comments/{comment.id}",
        "html_url": f"{HTML}/{comment.repo}/pull/{comment.issue_number}#issuecomment-{comment.id}",
        "issue_url": f"{repo_url}/issues/{comment.issue_number}",
        "body": comment.body,
        "user": user(comment.user, api) if comment.user is not None else None,
        "created_at": ts(comment.created_at),
        "updated_at": ts(comment.updated_at),
        "author_association": "NONE",
        "performed_via_github_app": None,
    }


def actions_app(api: str) -> Json:
    """The "GitHub Actions" app that owns check runs made with GITHUB_TOKEN (values illustrative)."""
    return {
        "id": 15368,
        "slug": "github-actions",
        "node_id": node_id("App", 15368),
        "owner": user("github", api),
        "name": "GitHub Actions",
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": f"{HTML}/apps/github-actions",
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2019-12-10T19:04:12Z",
        "permissions": {"checks": "write", "contents": "write", "metadata": "read"},
        "events": ["check_run", "check_suite", "push"],
    }


def check_run(check: CheckRun, pulls: list[Json], api: str) -> Json:
    """A check run; ``output.annotations_count`` counts every annotation ever added."""
    url = f"{api}/repos/{check.repo}/check-runs/{check.id}"
    html = f"{HTML}/{check.repo}/runs/{check.id}"
    return {
        "id": check.id,
        "name": check.name,
        "node_id": node_id("CheckRun", check.id),
        "head_sha": check.head_sha,
        "external_id": check.external_id or "",
        "url": url,
        "html_url": html,
        "details_url": check.details_url or html,
        "status": check.status,
        "conclusion": check.conclusion,
        "started_at": ts(check.started_at),
        "completed_at": ts(check.completed_at),
        "output": {
            "title": check.output_title,
            "summary": check.output_summary,
            "text": check.output_text,
            "annotations_count": len(check.annotations),
            "annotations_url": f"{url}/annotations",
        },
        "check_suite": {"id": check.check_suite_id},
        "app": actions_app(api),
        "pull_requests": pulls,
    }


def commit_status(status: CommitStatus, api: str) -> Json:
    """A commit status as returned by ``POST /repos/{o}/{r}/statuses/{sha}``."""
    creator = user(status.creator, api)
    return {
        "url": f"{api}/repos/{status.repo}/statuses/{status.sha}",
        "avatar_url": creator["avatar_url"],
        "id": status.id,
        "node_id": node_id("StatusContext", status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "created_at": ts(status.created_at),
        "updated_at": ts(status.updated_at),
        "creator": creator,
    }


def error(message: str, status: int, errors: list[Json] | None = None) -> Json:
    """GitHub's error body (basic-error, or validation-error when ``errors`` is given)."""
    body: Json = {
        "message": message,
        "documentation_url": "https://docs.github.com/rest",
        "status": str(status),
    }
    if errors is not None:
        body["errors"] = errors
    return body
