"""The two kinds of failure the command line tells apart (exit codes 2 and 1)."""

from __future__ import annotations


class UsageError(ValueError):
    """A setting, argument or input file is wrong: nothing was written or run (exit code 2)."""


class CampaignError(RuntimeError):
    """A campaign cannot go on as asked: its directory is in use, or its log or settings file is
    damaged or belongs to another library (exit code 1). The message names the file and row."""
