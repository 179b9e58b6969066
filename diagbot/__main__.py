"""`python -m diagbot` runs the CLI."""

from diagbot.cli import entry

entry()
