"""Shortest counterexamples for broken models, and how well Hypothesis shrinks.

A broken model (`ci.canaries.affinity.MODEL_CANARIES`) is explored in place of
the reference; breadth-first order makes the first violated property's path a
shortest counterexample within the bound. `shortest_violation` is that search
over several bounds for any subject (the scheduler's canaries use it too).
`shrink_quality` sets it beside the program Hypothesis reports for the same
canary: the differential machine runs with the canary as its system under
test under `CANARY_SETTINGS`, and the failing program's length is read from
the harness' step counter at teardown (Hypothesis replays the shrunk program
last, so the last teardown is its).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

from hypothesis.stateful import run_state_machine_as_test

from ci.explore.graph import Bound, explore
from ci.explore.search import BoundLike, Exploration, Violation
from ci.profiles import CANARY_SETTINGS
from ci.replay.affinity import record
from ci.replay.trace import save
from model.affinity.ops import Op
from model.affinity.table import ModelAffinity
from stateful.affinity_machine import AffinityMachine


@dataclass(frozen=True)
class Counterexample:
    """A shortest path from the initial state to a violated property."""

    canary: str
    bound: Bound
    prop: str
    ops: tuple[Op, ...]


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


def shortest_counterexample(
    canary: str, model_type: type[ModelAffinity], bounds: Sequence[Bound]
) -> Counterexample | None:
    """The shortest violation over `bounds` (the first bound wins a tie)."""

    def find(bound: Bound, depth_max: int) -> Exploration[Bound, Any, Any]:
        return explore(
            replace(bound, depth_max=depth_max),
            model_type,
            stop_at_first_violation=True,
        )

    best = shortest_violation(bounds, find)
    if best is None:
        return None
    bound, violation = best
    return Counterexample(canary, bound, violation.prop, violation.path)


# ---- trace files -------------------------------------------------------------


def write_trace(path: Path, example: Counterexample) -> Path:
    """Write `example` as a trace that `python -m ci.replay` accepts.

    The trace records the reference model's answers (as every trace does);
    replayed with `--canary NAME` it shows where the broken model diverges.
    """
    last = len(example.ops)
    comments = [""] * (last - 1) + [
        f"{example.canary} violates {example.prop} here (BFS-shortest)"
    ]
    trace = record(
        example.bound.config,
        example.bound.session_ids,
        example.ops,
        description=(
            f"Shortest counterexample for model canary {example.canary} in bound "
            f"{example.bound.name}: {last} steps to a violation of {example.prop}"
        ),
        comments=comments,
    )
    return save(trace, path)


def replay_command(path: Path, example: Counterexample) -> str:
    """The one line that replays `path` against the canary it was found on."""
    return f"python -m ci.replay {path} --canary {example.canary}"


# ---- Hypothesis' shrunk length ---------------------------------------------------


class _CountingMachine(AffinityMachine):
    """The differential machine, remembering each program's harness step count."""

    last_program_steps: ClassVar[int] = 0

    def teardown(self) -> None:
        """Record how many operations this program applied."""
        if self.harness is not None:
            type(self).last_program_steps = self.harness.steps
        super().teardown()


def hypothesis_shrunk_steps(canary: str, model_type: type[ModelAffinity]) -> int:
    """Operations in the program Hypothesis reports for `model_type` as the crate."""
    machine = cast(
        "type[_CountingMachine]",
        type(
            f"Shrink_{canary}",
            (_CountingMachine,),
            {
                "factory": model_type,
                "goals_reached": set(),
                "rules_run": set(),
                "steps_run": 0,
                "last_program_steps": 0,
            },
        ),
    )
    try:
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)
    except AssertionError:
        return int(machine.last_program_steps)
    raise AssertionError(f"canary {canary} survived the differential machine")


@dataclass(frozen=True)
class ShrinkQuality:
    """Hypothesis' reported program length over the BFS-shortest one."""

    canary: str
    bound: str
    prop: str
    bfs_steps: int
    hypothesis_steps: int

    @property
    def ratio(self) -> float:
        """1.0 means Hypothesis found a shortest counterexample."""
        return self.hypothesis_steps / self.bfs_steps


def shrink_quality(
    canary: str, model_type: type[ModelAffinity], bounds: Sequence[Bound]
) -> ShrinkQuality:
    """Compare Hypothesis' shrunk program with the shortest counterexample."""
    example = shortest_counterexample(canary, model_type, bounds)
    if example is None:
        raise AssertionError(f"canary {canary} survived every bound")
    return ShrinkQuality(
        canary=canary,
        bound=example.bound.name,
        prop=example.prop,
        bfs_steps=len(example.ops),
        hypothesis_steps=hypothesis_shrunk_steps(canary, model_type),
    )
