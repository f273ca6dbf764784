"""The options `ci.fuzz`, `ci.soak` and `ci.determinism` share, read one way.

`--tests` names the machine tests a command runs (`ci.trust.machine_tests`);
`--artifacts` is where its runs write, the default artifact root when absent.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ci.cli import OneLineParser, output_folder
from ci.replay.artifacts import artifacts_root, utc_stamp


def add_tests_option(
    parser: OneLineParser, default: str | None, help_text: str | None = None
) -> None:
    """`--tests NAME,...`: the machine tests a command runs, in `arguments.tests`."""
    parser.renamed("--targets", "--tests")  # old spelling, refused
    parser.add_argument("--tests", default=default, help=help_text)


def artifacts(arguments: argparse.Namespace) -> Path:
    """`--artifacts`, else the default artifact root."""
    root: Path = arguments.artifacts or artifacts_root()
    return root


def checked_artifacts(arguments: argparse.Namespace) -> Path:
    """`artifacts(arguments)` if it can be written, else a `UsageError`."""
    return output_folder(artifacts(arguments), "--artifacts")


def run_folder(arguments: argparse.Namespace, command: str) -> Path:
    """A new folder `<artifacts>/<command>/<utc-stamp>` for one run's output."""
    folder = artifacts(arguments) / command / utc_stamp()
    folder.mkdir(parents=True)
    return folder
