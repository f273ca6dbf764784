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
import errno
import math
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, NoReturn

EXIT_WRITE_FAILED: Final[int] = 1
"""The work ran, but its result could not be written where asked."""
EXIT_CLOSED_STDOUT: Final[int] = 141
"""A reader closed our standard output (`| head`): 128 + SIGPIPE, the status a
shell reports for git or cargo ended by the closed pipe. Nothing is printed."""
KEPT_PREFIX: Final[str] = "dynamo-verify-kept-"
KERNEL_FOLDERS: Final[tuple[Path, ...]] = (Path("/proc"), Path("/sys"))
"""Kernel file systems: nothing a command writes belongs there (as root,
`os.access` says yes to them, and the first write fails)."""


def one_line(text: str) -> str:
    r"""`text` with every control character escaped, so that it prints as one line.

    Only control characters change (a newline becomes `\n`, an escape
    `\x1b`), so escaping twice changes nothing more.
    """
    return "".join(
        char if char.isprintable() or char == " " else ascii(char)[1:-1]
        for char in text
    )


class UsageError(Exception):
    """The command cannot run; the message is the one line to print."""

    def __init__(self, message: object = "") -> None:
        """Keep `message` with its control characters escaped (one line)."""
        super().__init__(one_line(str(message)))


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a `UsageError`.

    No prefix of an option stands for it (`allow_abbrev=False`, inherited by
    subcommands' parsers): an abbreviation is refused as an unknown option,
    never taken for a destructive flag that happens to start with it.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """An `argparse.ArgumentParser` that takes no abbreviations."""
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        """Raise instead of printing usage and exiting."""
        raise UsageError(message)

    def renamed(self, old: str, new: str) -> None:
        """Refuse the option's old spelling `old` in one line that names `new`.

        The old option is hidden from `--help` and takes at most one value, so
        `OLD VALUE` and `OLD=VALUE` are refused alike, before any check of the
        other arguments.
        """
        self.add_argument(
            old, action=_Renamed, nargs="?", const=new, help=argparse.SUPPRESS
        )


class _Renamed(argparse.Action):
    """An option's old spelling: using it is a `UsageError` naming the new one."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> NoReturn:
        """Refuse the old spelling."""
        del parser, namespace, values
        raise UsageError(f"{option_string} is now {self.const}")


def run_command(prog: str, main: Callable[[], int]) -> NoReturn:
    """Exit with `main()`'s status; a failing standard output is not a crash.

    A closed reader (`| head`) ends the command quietly with
    `EXIT_CLOSED_STDOUT`; a full disk (`> /dev/full`) is one line and exit 1.
    Standard output is flushed here, so a failure shows while we can answer it.
    """
    rich_console = sys.modules.get("rich.console")
    if rich_console is not None:  # rich would exit 1 on its own: answer it here
        rich_console.Console.on_broken_pipe = _closed_pipe
    try:
        try:
            status: str | int | None = main()
        except SystemExit as exit_:  # argparse's --help: flushed here too
            status = exit_.code
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        os._exit(EXIT_CLOSED_STDOUT)
    except OSError as error:
        if error.errno not in {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}:
            raise
        _silence_stdout()
        reason = error.strerror or str(error)
        print(f"{prog}: error: cannot write: {one_line(reason)}", file=sys.stderr)
        sys.stderr.flush()
        os._exit(EXIT_WRITE_FAILED)
    sys.exit(status)


def _closed_pipe(console: object) -> NoReturn:
    """A rich console's closed pipe, raised on to `run_command` like print's."""
    del console
    raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that no later flush fails again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


def input_file(path: Path, flag: str) -> Path:
    """Refuse, before anything opens it, an input that is not a regular file.

    `os.stat` does not open: a FIFO is refused here instead of blocking a read.
    """
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise UsageError(f"{flag} {path}: {error.strerror or error}") from None
    if not stat.S_ISREG(mode):
        raise UsageError(f"{flag} {path}: {file_kind(mode)}, not a regular file")
    return path


def input_folder(path: Path, flag: str) -> Path:
    """Refuse, before any read, an input folder that is not a folder."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise UsageError(f"{flag} {path}: {error.strerror or error}") from None
    if not stat.S_ISDIR(mode):
        raise UsageError(f"{flag} {path}: {file_kind(mode)}, not a folder")
    return path


def file_kind(mode: int) -> str:
    """What `os.stat`'s mode says a path is, in words."""
    kinds = (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    )
    return next((name for test, name in kinds if test(mode)), "a special file")


def separate(inputs: Iterable[Path], outputs: Iterable[tuple[str, Path]]) -> None:
    """Refuse an output that is, contains or lies inside one of the inputs.

    Paths are compared resolved (symbolic links followed, `..` taken), before
    any work: a refused command has read and written nothing. Raises
    `UsageError` naming the flag, the output and the input it would overwrite.
    """
    resolved = [(path, path.resolve()) for path in inputs]
    for flag, output in outputs:
        out = output.resolve()
        for given, source in resolved:
            if out == source:
                why = "is"
            elif out in source.parents:
                why = "contains"
            elif source in out.parents:
                why = "lies inside"
            else:
                continue
            raise UsageError(
                f"{flag} {output}: {why} the input {given}; "
                "an output never overwrites an input"
            )


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1, in ASCII digits."""
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {value}")
    return value


def whole_number(text: str) -> int:
    """An argparse type: a whole number written in ASCII digits (and a sign).

    `int()` also reads other scripts' digits (`int("\u0663")` is 3); a seed
    or a count on a command line is ASCII, so those are refused.
    """
    if not text.isascii():
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}")
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


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
    absolute = folder.resolve()
    for kernel in KERNEL_FOLDERS:
        if absolute == kernel or kernel in absolute.parents:
            raise UsageError(f"{flag} {named}: lies in {kernel}, a kernel file system")
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
    print(f"{prog}: error: {one_line(str(error))}", file=sys.stderr)
    return EXIT_WRITE_FAILED


def summary_command(
    argv: Sequence[str],
    *,
    prog: str,
    description: str,
    folder_help: str,
    report: str,
    default_out: Path,
    summarize: Callable[[Path], dict[str, Any]],
    render: Callable[[dict[str, Any]], str],
    counted: Callable[[dict[str, Any]], str],
    refused: tuple[type[Exception], ...],
) -> int:
    """`PROG DIR [--out FILE]`: the committed summary of the report in folder DIR.

    `description` and `folder_help` are the help's words for the command and DIR;
    `summarize` reads DIR's file `report` and raises one of `refused` (or a
    `UsageError`) when it is no such report; `render` is the summary's text and
    `counted` what it holds, for the closing line. Exit 0 written; 2 on a
    refusal, in one line, before anything is written (an `--out` that is the
    report among them); 1 when the final write fails.
    """
    parser = OneLineParser(prog=f"python -m {prog}", description=description)
    parser.add_argument("folder", type=Path, help=folder_help)
    parser.add_argument("--out", type=Path, default=default_out, help="summary file")
    refusals: tuple[type[Exception], ...] = (UsageError, *refused)
    try:
        args: argparse.Namespace = parser.parse_args(list(argv))
        output_file(args.out, "--out")
        folder = input_folder(args.folder, "summary")
        separate([folder / report], [("--out", args.out)])
        summary = summarize(folder / report)
    except refusals as error:
        print(f"{prog}: error: {one_line(str(error))}", file=sys.stderr)
        return 2
    try:
        write_results({args.out: render(summary)})
    except WriteFailed as error:
        return write_failed(prog, error)
    print(f"{prog}: {counted(summary)} -> {args.out}")
    return 0
