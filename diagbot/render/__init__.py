"""Markdown for people: the PR comment, the check run's summary and the job summary, from package templates."""
