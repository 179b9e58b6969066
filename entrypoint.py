"""The action's entry point: read the environment, build the GitHub client, run the bot, exit with its code.

The only place that reads `os.environ` and constructs a real client. Our own failures are printed as `::error::`
annotations (and to the job summary), never as a traceback.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from pathlib import Path

from diagbot.action import runner
from diagbot.action.bot import run
from diagbot.action.runner import escape
from diagbot.action.settings import Settings
from diagbot.cli import tune_collector
from diagbot.core.errors import DiagbotError
from diagbot.github.client import EXCHANGE_SECONDS, PyGithubPort, make_client


def fail(exc: DiagbotError) -> int:
    """One exit path for our own errors: an annotation per problem plus a job-summary section."""
    for problem in exc.problems:
        print(f"::error::{escape(problem)}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    with contextlib.suppress(OSError):  # the annotations above carry the message all the same
        runner.append(
            Path(summary) if summary else None, "### ⛔ diagbot could not run\n\n" + runner.bullets(exc.problems)
        )
    return exc.exit_code


def hand_back(workspace: Path, folder: Path) -> None:
    """The container runs as root: give what it wrote back to the workspace's owner so later steps can use it.
    Only a real folder reached through real folders from the workspace is walked, and a link in it is handed back
    itself, never followed: a pull request can commit the report folder as a link to `/var/run` or `/`."""
    try:
        owner = workspace.stat()
        at = workspace
        for part in folder.relative_to(workspace).parts:
            at = at / part
            if at.is_symlink() or not at.is_dir():
                return  # diagbot wrote nothing there (it never writes through a link)
        for root, folders, files in os.walk(folder):  # followlinks=False: never into a linked folder
            for name in (*folders, *files):
                os.chown(os.path.join(root, name), owner.st_uid, owner.st_gid, follow_symlinks=False)
        os.chown(folder, owner.st_uid, owner.st_gid, follow_symlinks=False)
    except (OSError, ValueError):
        pass  # not root, or nothing written: later steps can still read the files


def main() -> int:
    tune_collector()
    try:
        settings = Settings.from_env(os.environ)
        # The token lives on in `settings` only: nothing started later (git, a hook) inherits it.
        for name in ("INPUT_GITHUB-TOKEN", "GITHUB_TOKEN"):
            os.environ.pop(name, None)
        github = make_client(settings.api_url, settings.github_token.get_secret_value(), settings.max_wait_seconds)
        try:
            port = PyGithubPort(github, settings.repository, settings.max_wait_seconds + EXCHANGE_SECONDS)
            return run(settings, port)
        finally:
            github.close()
            hand_back(settings.workspace, settings.workspace / settings.report_dir)
    except DiagbotError as exc:
        return fail(exc)
    except Exception as exc:  # a bug of ours: say so plainly, still no traceback in the log, still a verdict
        return fail(
            DiagbotError(
                f"diagbot failed unexpectedly ({type(exc).__name__}: {exc}); this is a bug in diagbot, please "
                "report it with this message; the job fails so that nothing passes unchecked"
            )
        )


if __name__ == "__main__":
    code = main()
    gc.freeze()  # the process ends here: its last collection need not walk what it holds
    sys.exit(code)
