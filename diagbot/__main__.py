"""`python -m diagbot` runs the CLI."""

import sys

from diagbot.cli import main

sys.exit(main())
