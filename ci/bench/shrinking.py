"""Measure how short Hypothesis shrinks every canary's program, and how fast.

`python -m ci.bench.shrinking [--subject NAME] [--canary NAME]` runs each
canary of each registered subject (`ci.subjects`) under `SHRINK_SETTINGS`
(`ci.profiles`: the canary budget, then Hypothesis' shrinker) and prints one
row per canary: the rules and the operations of the program Hypothesis
reports (its final replay, recorded as a trace; a scenario rule applies
several operations), the CPU and wall seconds from the first example to the
report (generation and shrinking), the explorer's BFS-shortest
counterexample where the subject's explorer can run the canary as its model
and the canary violates a property (the entry's `Explorer.shortest`), and
the 1-minimal
length step deletion reaches (`ci.replay.minimize`). The ceiling of
`tests/test_shrinking.py`: at most 2 x BFS + 2 operations, the 1-minimal
length standing in where there is no BFS. A report, not a test: it reads
the clocks (`ci.bench.figures`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console
from rich.table import Table

from ci import subjects
from ci.bench.figures import timed
from ci.cli import OneLineParser, UsageError
from ci.profiles import SHRINK_SETTINGS
from ci.replay.minimize import minimize
from ci.replay.trace import Trace, kind_of
from stateful import capture
from stateful.machine import DifferentialMachine


@dataclass(frozen=True)
class Shrunk:
    """One canary's reported program and what it cost."""

    subject: str
    canary: str
    trace: Trace
    rules: int
    cpu_s: float
    wall_s: float


def printed_rules(notes: Sequence[str], machine: type[DifferentialMachine]) -> int:
    """The rules of a printed program: its `state.RULE(...)` steps.

    The `initialize` steps, `teardown` and (in programs of runs of rules)
    `run_rules` are not rules of the machine.
    """
    skipped = {"teardown", "run_rules"} | {
        step.function.__name__ for step in machine.setup_state().initializers
    }
    found = [_STEP.match(note) for note in notes]
    return sum(1 for step in found if step and step.group(1) not in skipped)


_STEP = re.compile(r"^state\.(\w+)\(")


def shrink(subject: str, canary: str) -> Shrunk:
    """Run `canary` under `SHRINK_SETTINGS`; its final replay as a trace."""
    entry = subjects.entry(subject)
    factory = entry.canary_factories()[canary]
    machine: type[DifferentialMachine] = type(
        f"Shrink_{canary}", (entry.machine(),), {"factory": staticmethod(factory)}
    )

    def rules() -> int:
        try:
            run_state_machine_as_test(machine, settings=SHRINK_SETTINGS)
        except AssertionError as error:
            return printed_rules(getattr(error, "__notes__", []), machine)
        raise AssertionError(f"the {subject} machine passed against {canary}")

    capture.reset()
    figures = timed(canary, rules)
    run = capture.final_runs()[-1]
    capture.reset()
    trace = kind_of(subject).record_harness(run.harness, f"{canary}, shrunk")
    return Shrunk(subject, canary, trace, figures.steps, figures.cpu_s, figures.wall_s)


def bfs_steps(subject: str, canary: str) -> int | None:
    """The explorer's shortest counterexample for `canary`, if it can run it."""
    explorer = subjects.entry(subject).explorer
    if explorer is None or explorer.shortest is None:
        return None
    found: int | None = explorer.shortest()(canary)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Print one row per canary (see the module's docstring)."""
    parser = OneLineParser(prog="python -m ci.bench.shrinking")
    parser.add_argument("--subject", choices=subjects.names())
    parser.add_argument("--canary")
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(f"ci.bench.shrinking: error: {error}", file=sys.stderr)
        return 2
    table = Table(title="Hypothesis' shrunk programs, per canary")
    columns = ("subject", "canary", "rules", "steps", "CPU s", "wall s", "BFS", "1-min")
    for column in columns:
        table.add_column(column, justify="left" if column[0].isalpha() else "right")
    for entry in subjects.entries():
        if args.subject not in {None, entry.name}:
            continue
        for canary in sorted(entry.canary_factories()):
            if args.canary not in {None, canary}:
                continue
            found = shrink(entry.name, canary)
            minimal, _ = minimize(found.trace, entry.canary_factories()[canary])
            bfs = bfs_steps(entry.name, canary)
            row = (
                entry.name,
                canary,
                str(found.rules),
                str(len(found.trace.steps)),
                f"{found.cpu_s:.1f}",
                f"{found.wall_s:.1f}",
                "-" if bfs is None else str(bfs),
                str(len(minimal.steps)),
            )
            print(" ".join(row), flush=True)
            table.add_row(*row)
    Console().print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
