"""Shortest counterexamples: a canary explored in place of the reference model.

A broken model is explored in place of the reference; breadth-first order
makes the first violated property's path a shortest counterexample within the
bound. `shortest_violation` is that search over several bounds for any
subject; `shortest_in` runs it with a subject's explorer and returns a
`Counterexample` that records itself as a trace of the subject's kind, and
`print_counterexamples` writes and prints them (`python -m ci.explore
--counterexamples`). Each subject's use is in `ci.explore.<subject>_replay`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console

from ci.explore.search import BoundLike, Exploration, Violation
from ci.replay.trace import Trace, save

BoundT = TypeVar("BoundT", bound=BoundLike)


def shortest_violation(
    bounds: Sequence[BoundT],
    find: Callable[[BoundT, int], Exploration[BoundT, Any, Any]],
) -> tuple[BoundT, Violation[Any]] | None:
    """The shortest first violation over `bounds` (the first bound wins a tie).

    `find(bound, depth_max)` explores `bound` no deeper than `depth_max`,
    stopping at its first violation; any subject's explorer fits.
    """
    best: tuple[BoundT, Violation[Any]] | None = None
    for bound in bounds:
        # Once a counterexample is known, only a strictly shorter one matters.
        depth_max = bound.depth_max if best is None else len(best[1].path) - 1
        if depth_max < 1:
            continue
        found = find(bound, min(bound.depth_max, depth_max))
        if not found.violations:
            continue
        violation = found.violations[0]
        if best is None or len(violation.path) < len(best[1].path):
            best = (bound, violation)
    return best


TraceRecorder = Callable[[Any, Sequence[Any], str, Sequence[str]], Trace]
"""(bound, operations, description, comments) -> the path from the bound's
initial state recorded on the reference model (`TraceKind.record`)."""


@dataclass(frozen=True)
class Counterexample:
    """A canary's shortest path from the initial state to a violated property."""

    canary: str
    bound: Any
    prop: str
    ops: tuple[Any, ...]
    record: TraceRecorder = field(compare=False, repr=False)
    noun: str = "canary"  # what the canary is, in the trace's description

    def trace(self) -> Trace:
        """The path as a trace; its replay with `--canary` diverges at the end."""
        last = len(self.ops)
        comments = [""] * (last - 1) + [
            f"{self.canary} violates {self.prop} here (BFS-shortest)"
        ]
        description = (
            f"Shortest counterexample for {self.noun} {self.canary} in bound "
            f"{self.bound.name}: {last} steps to a violation of {self.prop}"
        )
        return self.record(self.bound, self.ops, description, comments)


def shortest_in(
    canary: str,
    bounds: Sequence[BoundT],
    explore_bound: Callable[..., Exploration[BoundT, Any, Any]],
    model: Any,
    record: TraceRecorder,
    *,
    noun: str = "canary",
) -> Counterexample | None:
    """The canary's shortest violation over `bounds` (None: it survived them).

    `explore_bound(bound, model, stop_at_first_violation=True)` is the
    subject's explorer with `model` (the canary) in place of the reference.
    """

    def find(bound: BoundT, depth_max: int) -> Exploration[BoundT, Any, Any]:
        shallower = replace(bound, depth_max=depth_max)  # type: ignore[type-var]
        return explore_bound(shallower, model, stop_at_first_violation=True)

    best = shortest_violation(bounds, find)
    if best is None:
        return None
    bound, violation = best
    return Counterexample(
        canary, bound, violation.prop, tuple(violation.path), record, noun
    )


def print_counterexamples(
    examples: Mapping[str, Counterexample | None],
    out: Path,
    console: Console,
    show_op: Callable[[Any], str] = repr,
) -> bool:
    """Write each canary's counterexample as `out/<canary>/trace.json`, print it.

    True when a canary survived every bound (it is printed in red).
    """
    survived = False
    for name, example in examples.items():
        if example is None:
            survived = True
            console.print(f"[red]{name}: survived every bound[/red]")
            continue
        path = save(example.trace(), out / name / "trace.json")
        console.print(
            f"{name}: {len(example.ops)} steps in {example.bound.name}, "
            f"violates {example.prop}"
        )
        for op in example.ops:
            console.print(f"    {show_op(op)}", markup=False)
        console.print(f"  replay: python -m ci.replay {path} --canary {name}")
    return survived
