"""`python -m ci.replay.corpus build [--check]`; `... add PATH --name NAME`.

Exit status: 0 on success; 1 when `build --check` finds a file out of step
with its scenario; 2 on a usage error, a malformed trace or a scenario the
model contradicts (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    output_folder,
    separate,
    write_failed,
    write_results,
)
from ci.replay.corpus import CORPUS_DIR, CorpusError, add, build, stale_files
from ci.replay.envelope import trace_path

PROG = "ci.replay.corpus"


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog=f"python -m {PROG}", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="write the scenario files")
    build_command.add_argument(
        "--check", action="store_true", help="compare instead of writing"
    )
    add_command = commands.add_parser("add", help="copy a counterexample in")
    add_command.add_argument("path", type=Path, help="a trace or an artifact folder")
    add_command.add_argument("--name", required=True, help="the corpus file's name")
    add_command.add_argument("--description", default=None, help="replace it")
    add_command.add_argument("--force", action="store_true", help="overwrite")
    add_command.add_argument(
        "--corpus-dir", type=Path, default=CORPUS_DIR, help=argparse.SUPPRESS
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    try:
        arguments = _parser().parse_args(argv)
        if arguments.command == "add":
            output_folder(arguments.corpus_dir, "--corpus-dir")
            separate(
                [trace_path(arguments.path)],
                [("--name", arguments.corpus_dir / f"{arguments.name}.json")],
            )
            target, changed = add(
                arguments.path,
                arguments.name,
                description=arguments.description,
                directory=arguments.corpus_dir,
                force=arguments.force,
            )
            print(f"added {target}")
            if changed:
                steps = ", ".join(str(index) for index in changed)
                print(
                    f"re-recorded with today's model; expectations changed at {steps}"
                )
            print("edit its description to say what it shows, then commit it")
            return 0
        if arguments.check:
            stale = stale_files()
            for path in stale:
                print(f"out of step with its scenario: {path}")
            return 1 if stale else 0
        files = dict(sorted(build().items()))
        write_results(files)
        for path in files:
            print(f"wrote {path}")
    except (UsageError, CorpusError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    except WriteFailed as error:
        return write_failed(PROG, error)
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.replay.corpus", main)
