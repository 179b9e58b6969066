"""The action's entry point: read the environment, build the GitHub client, run the bot, exit with its code.

The only place that reads `os.environ` and constructs a real client. Our own failures are printed as `::error::`
annotations (and to the job summary), never as a traceback.
"""

from __future__ import annotations

import os
import sys

from diagbot.bot import escape, run
from diagbot.errors import DiagbotError
from diagbot.github import make_client
from diagbot.settings import Settings


def fail(exc: DiagbotError) -> int:
    """One exit path for our own errors: an annotation per problem plus a job-summary section."""
    for problem in exc.problems:
        print(f"::error::{escape(problem)}")
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        lines = "\n".join(f"- {p}" for p in exc.problems)
        try:
            with open(summary, "a", encoding="utf-8") as handle:
                handle.write(f"### ⛔ diagbot could not run\n\n{lines}\n")
        except OSError:
            pass  # the annotations above already carry the message
    return exc.exit_code


def main() -> int:
    try:
        settings = Settings.from_env(os.environ)
        github = make_client(settings.api_url, settings.github_token.get_secret_value(), settings.max_wait_seconds)
        try:
            return run(settings, github)
        finally:
            github.close()
    except DiagbotError as exc:
        return fail(exc)


if __name__ == "__main__":
    sys.exit(main())
