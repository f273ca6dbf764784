"""What every `python -m ci...` command shares: bad arguments are one line.

A command builds its parser from `OneLineParser`; argparse's complaint becomes
a `UsageError`, which the command's `main` prints as one line on stderr
(`MODULE: error: WHY`) before it exits 2 -- never a traceback, never argparse's
own usage dump. `positive_int` and `positive_seconds` are the argument types of
counts and time limits; `output_folder` and `output_file` check, before any
work and without creating anything, that an output path can be written.
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
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


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds above 0 (no NaN, no infinity)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite number above 0: {text!r}")
    return value


def _nearest_existing(path: Path) -> Path:
    """`path` itself if it exists, else its closest ancestor that does."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(path.anchor or ".")


def _writable_below(folder: Path, flag: str, named: Path) -> None:
    """Refuse unless the folders up to `folder` exist or can be made, writably."""
    found = _nearest_existing(folder)
    if not found.is_dir():
        raise UsageError(f"{flag} {named}: {found} is not a folder")
    if not os.access(found, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {named}: {found} is not writable")


def output_folder(path: Path, flag: str) -> Path:
    """Check, before any work, that the folder `path` can be made and written.

    Nothing is created: a refused command changes no file. Raises `UsageError`
    (one line naming `flag`, the path and the obstacle).
    """
    _writable_below(path, flag, path)
    return path


def output_file(path: Path, flag: str) -> Path:
    """Check, before any work, that the file `path` can be written.

    It may exist (as a file, writable) or not (its folder must be makeable).
    Nothing is created. Raises `UsageError` naming `flag`, the path and why.
    """
    if path.is_dir():
        raise UsageError(f"{flag} {path}: is a folder, not a file")
    if path.exists():
        if not os.access(path, os.W_OK):
            raise UsageError(f"{flag} {path}: is not writable")
        return path
    _writable_below(path.parent, flag, path)
    return path
