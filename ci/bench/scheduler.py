"""`python -m ci.bench.scheduler`: `python -m ci.bench scheduler` (see there)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ci.bench.command import main as bench_main


def main(argv: Sequence[str] | None = None) -> int:
    """Print the scheduler machine's figures."""
    given = sys.argv[1:] if argv is None else list(argv)
    return bench_main(["scheduler", *given], "ci.bench.scheduler")


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.scheduler", main)
