"""Benchmark the scheduler machine: differential vs model-only steps/s.

`python -m ci.bench.scheduler` runs the scheduler machine under the loaded
Hypothesis profile twice -- the model against the crate's `LocalScheduler`,
then against a second model -- and prints steps per wall and per CPU second
(`ci.bench.figures`) and the differential overhead. A report, not a test.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ci.bench.figures import machine_figures, print_table, ratio
from ci.cli import OneLineParser, UsageError
from stateful.scheduler_machine import SchedulerMachine
from stateful.scheduler_subject import crate_factory, model_factory


def main(argv: Sequence[str] | None = None) -> int:
    """Print steps/s for each configuration (the command takes no arguments)."""
    try:
        OneLineParser(prog="python -m ci.bench.scheduler").parse_args(argv)
    except UsageError as error:
        print(f"ci.bench.scheduler: error: {error}", file=sys.stderr)
        return 2
    import ci.profiles  # noqa: F401, PLC0415 - loads the selected Hypothesis profile

    crate = machine_figures("machine, model vs crate", SchedulerMachine, crate_factory)
    model = machine_figures("machine, model vs model", SchedulerMachine, model_factory)
    print_table("scheduler", (crate, model))
    print(f"differential / model-only, CPU per step: {ratio(crate, model):.2f}")
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.scheduler", main)
