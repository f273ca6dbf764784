"""What every `python -m ci...` command shares: bad arguments are one line.

A command builds its parser from `OneLineParser`; argparse's complaint becomes
a `UsageError`, which the command's `main` prints as one line on stderr
(`MODULE: error: WHY`) before it exits 2 -- never a traceback, never argparse's
own usage dump. `positive_int` and `positive_seconds` are the argument types of
counts and time limits; `output_folder` and `output_file` check, before any
work and without creating anything, that an output path can be written.

What the work produced is written through `write_results`, the one final
write of every command: each file whole or not at all (a temporary file
beside it, then a rename), and a write that fails after the work (a full
disk, a folder removed mid-run) is a `WriteFailed` -- one line, exit 1 --
that names the file, the reason, what was written and where the rest was
kept instead, never a traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import secrets
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Final, NoReturn

EXIT_WRITE_FAILED: Final[int] = 1
"""The work ran, but its result could not be written where asked."""
KEPT_PREFIX: Final[str] = "dynamo-verify-kept-"


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


class WriteFailed(Exception):  # noqa: N818 - named for what happened, as UsageError
    """A write after the work failed; the message says what was kept (exit 1)."""


def _write_whole(path: Path, data: bytes) -> None:
    """Write `data` to `path` whole or not at all.

    A regular file (or a new one) is replaced by renaming a finished temporary
    file beside it; anything else that exists (`/dev/stdout`) is written in
    place, since renaming over it would replace the device itself.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and not path.is_file():
        with path.open("wb") as stream:
            stream.write(data)
        return
    # Opened exclusively by a fresh name, so the file gets the umask's mode.
    staging = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    try:
        with staging.open("xb") as stream:
            stream.write(data)
        staging.replace(path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def _keep(files: Mapping[Path, str | bytes]) -> str:
    """Write `files` into a fresh temporary folder; say where, or that nothing was."""
    try:
        folder = Path(tempfile.mkdtemp(prefix=KEPT_PREFIX))
        for path, content in files.items():
            data = content.encode("utf-8") if isinstance(content, str) else content
            (folder / path.name).write_bytes(data)
    except OSError as error:
        return f"nothing kept ({error.strerror or error})"
    names = ", ".join(path.name for path in files)
    return f"kept instead in {folder}: {names}"


def write_results(files: Mapping[Path, str | bytes]) -> None:
    """Write what the work produced, in order; raise `WriteFailed` if one fails.

    The message names the file that failed and why, the files already written,
    and where the rest was kept instead (a temporary folder), so that nothing
    the work produced is lost to a full disk or a removed folder.
    """
    written: list[Path] = []
    for path, content in files.items():
        data = content.encode("utf-8") if isinstance(content, str) else content
        try:
            _write_whole(path, data)
        except OSError as error:
            rest = {name: files[name] for name in list(files)[len(written) :]}
            done = ", ".join(str(name) for name in written) or "nothing"
            reason = error.strerror or str(error)
            raise WriteFailed(
                f"cannot write {path}: {reason}; written: {done}; {_keep(rest)}"
            ) from None
        written.append(path)


def write_failed(prog: str, error: WriteFailed) -> int:
    """Print a failed write as the command's one error line; the exit status."""
    print(f"{prog}: error: {error}", file=sys.stderr)
    return EXIT_WRITE_FAILED
