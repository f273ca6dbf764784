"""Benchmark the affinity machine: differential vs model-only steps per second.

`python -m ci.bench.affinity [--examples N]` runs the affinity machine under
the loaded Hypothesis profile (derandomized here, so both runs draw the same
programs) twice -- the model against the crate, then the model against a second
model -- and prints steps per second for each and their ratio. Reading the
clock is fine here: this is a report, not a test.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console
from rich.table import Table

from ci.cli import OneLineParser, UsageError, positive_int
from model.affinity.table import ModelAffinity
from stateful.affinity_machine import AffinityMachine

if TYPE_CHECKING:
    from stateful.affinity_subject import SutFactory


def _rate(factory: SutFactory, examples: int) -> tuple[int, float]:
    class BenchAffinityMachine(AffinityMachine):
        """The affinity machine over the benchmarked table."""

    machine = BenchAffinityMachine
    machine.factory = factory
    started = time.perf_counter()
    run_state_machine_as_test(
        machine,
        settings=settings(max_examples=examples, derandomize=True, database=None),
    )
    elapsed = time.perf_counter() - started
    return machine.steps_run, elapsed


def main(argv: Sequence[str] | None = None) -> int:
    """Print steps per second for model-vs-crate and model-vs-model."""
    parser = OneLineParser(prog="python -m ci.bench.affinity")
    parser.add_argument("--examples", type=positive_int, default=200)
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(f"ci.bench.affinity: error: {error}", file=sys.stderr)
        return 2
    from impl.adapter import NativeAffinity  # noqa: PLC0415 - after argument parsing

    table = Table(title="affinity machine throughput")
    for column in ("system under test", "steps", "seconds", "steps/s"):
        table.add_column(column)
    rates = {}
    for name, factory in (("crate", NativeAffinity), ("model", ModelAffinity)):
        steps, elapsed = _rate(factory, args.examples)
        rates[name] = steps / elapsed
        table.add_row(name, str(steps), f"{elapsed:.1f}", f"{rates[name]:.0f}")
    Console().print(table)
    print(f"differential / model-only: {rates['crate'] / rates['model']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
