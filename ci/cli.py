"""What every `python -m ci...` command shares: bad arguments are one line.

A command builds its parser from `OneLineParser`; argparse's complaint becomes
a `UsageError`, which the command's `main` prints as one line on stderr before
it exits 2 -- never a traceback, never argparse's own usage dump.
"""

from __future__ import annotations

import argparse
from typing import NoReturn


class UsageError(Exception):
    """The command cannot run; the message is the one line to print."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a `UsageError`."""

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing usage and exiting."""
        raise UsageError(message)


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value
