"""`python -m ci.bench.affinity [--examples N] [--rounds N] [--workers N]`.

`python -m ci.bench affinity` with 200 derandomized programs and 2 workers
unless told otherwise: the affinity machine, the affinity corpus replayed,
and the machine in two processes at once (see `ci.bench.command`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ci.bench.command import main as bench_main

DEFAULTS = ("--examples", "200", "--workers", "2")


def main(argv: Sequence[str] | None = None) -> int:
    """Print the affinity table's figures."""
    given = sys.argv[1:] if argv is None else list(argv)
    return bench_main(["affinity", *DEFAULTS, *given], "ci.bench.affinity")


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.affinity", main)
