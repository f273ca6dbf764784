"""What the benchmarks share: one measured run, timed by wall clock and CPU.

The machine is shared (two cores, other jobs), so wall time alone says little:
every figure carries the process CPU time (user + system, `time.process_time`)
beside it, and steps per CPU second is the figure to compare across runs.
Reading the clocks is fine here: a benchmark reports figures, it asserts none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console
from rich.table import Table

from stateful.machine import DifferentialMachine

COLUMNS = ("workload", "steps", "wall s", "CPU s", "steps/s", "steps/CPU s")


@dataclass(frozen=True)
class Figures:
    """Steps taken by one workload and the time they took."""

    workload: str
    steps: int
    wall_s: float
    cpu_s: float

    @property
    def per_wall_s(self) -> float:
        """Steps per wall-clock second."""
        return self.steps / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def per_cpu_s(self) -> float:
        """Steps per CPU second (user + system of this process)."""
        return self.steps / self.cpu_s if self.cpu_s > 0 else 0.0

    def row(self) -> tuple[str, ...]:
        """The figures as one table row, in `COLUMNS` order."""
        return (
            self.workload,
            f"{self.steps:,}",
            f"{self.wall_s:.2f}",
            f"{self.cpu_s:.2f}",
            f"{self.per_wall_s:,.0f}",
            f"{self.per_cpu_s:,.0f}",
        )


def timed(workload: str, run: Callable[[], int]) -> Figures:
    """Run `run` (which returns the steps it took) and time it both ways."""
    wall_started = time.perf_counter()
    cpu_started = time.process_time()
    steps = run()
    cpu_s = time.process_time() - cpu_started
    wall_s = time.perf_counter() - wall_started
    return Figures(workload, steps, wall_s, cpu_s)


def machine_figures(
    workload: str,
    machine: type[DifferentialMachine],
    factory: Any,
    chosen: settings | None = None,
    worker: int = 0,
) -> Figures:
    """Run a fresh subclass of `machine` over `factory` and time it.

    The subclass's name is part of what a derandomized run draws from, so
    each `worker` number draws programs of its own.
    """
    suffix = f"_{worker}" if worker else ""
    name = f"Bench{machine.__name__}{suffix}"
    bench = type(name, (machine,), {"factory": factory})
    assert issubclass(bench, DifferentialMachine)

    def run() -> int:
        run_state_machine_as_test(bench, settings=chosen)
        return bench.steps_run

    return timed(workload, run)


def parallel_machine_figures(
    workload: str,
    machine: type[DifferentialMachine],
    factory: Any,
    chosen: settings | None,
    workers: int,
) -> Figures:
    """`machine_figures` in `workers` processes at once, each its own programs.

    Steps add up; wall time is the whole run's, CPU time the workers' sum: the
    figure a CI job spread over that many cores sees.
    """
    wall_started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        pending = [
            pool.submit(machine_figures, workload, machine, factory, chosen, worker)
            for worker in range(1, workers + 1)
        ]
        runs = [future.result() for future in pending]
    wall_s = time.perf_counter() - wall_started
    return Figures(
        workload, sum(run.steps for run in runs), wall_s, sum(r.cpu_s for r in runs)
    )


def binding_build() -> str:
    """Which build of the binding the crate's rows measured (its cargo profile)."""
    from impl.adapter import BUILD_PROFILE, OPT_LEVEL  # noqa: PLC0415 - the binding

    return f"binding: {BUILD_PROFILE} profile, opt-level {OPT_LEVEL}"


def print_table(title: str, rows: Iterable[Figures]) -> None:
    """Print the figures as one table, titled with the binding's build."""
    table = Table(title=f"{title}; {binding_build()}")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column == "workload" else "right")
    for figures in rows:
        table.add_row(*figures.row())
    Console().print(table)


def ratio(slow: Figures, fast: Figures) -> float:
    """How many times more CPU a step of `slow` costs than one of `fast`."""
    return fast.per_cpu_s / slow.per_cpu_s if slow.per_cpu_s > 0 else 0.0
