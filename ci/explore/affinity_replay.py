"""The affinity explorer's own commands: edge replay, counterexamples, picture.

The registry's affinity entry names `AFFINITY_COMMANDS` as its
`Explorer.commands` (`python -m ci.explore --subject affinity` and a flag):

* `--replay`: every edge of a bound covered by root paths
  (`ci.explore.paths`), each driven through `AffinityHarness` (`replay_paths`):
  the model and the system under test receive every operation, the harness
  compares outcomes and observable state and checks every property, and the
  harness' model must land on exactly the state the graph recorded;
* `--counterexamples`: the shortest counterexample of each model canary
  (`ci.canaries.affinity.MODEL_CANARIES`) over the bounds, written as a trace
  (`ci.explore.shrink`), and beside it the length of the program Hypothesis
  reports for the same canary: the differential machine runs with the canary
  as its system under test under `CANARY_SETTINGS`, and the failing program's
  length is read from the harness' step counter at teardown (Hypothesis
  replays the shrunk program last, so the last teardown is its);
* `--picture`: the picture bound's graph, edges marked covered by the
  affinity machine, as `ci/explore/graphs/picture.{dot,svg}`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console
from rich.table import Table

from ci import subjects
from ci.canaries.affinity import MODEL_CANARIES
from ci.cli import write_results
from ci.explore.affinity_bounds import BOUNDS, PICTURE_BOUND, bound_named
from ci.explore.affinity_coverage import run_machine
from ci.explore.affinity_graph import Bound, Exploration, explore
from ci.explore.affinity_picture import to_dot, to_svg
from ci.explore.command import GRAPHS_DIR, artifact_dir, replay_table
from ci.explore.coverage import measure
from ci.explore.paths import ReplayFailure, ReplayResult, edge_cover_paths
from ci.explore.shrink import Counterexample, print_counterexamples, shortest_in
from ci.profiles import CANARY_SETTINGS
from ci.replay.affinity import record
from ci.replay.trace import Trace
from model.affinity.ops import Op
from model.affinity.table import ModelAffinity
from stateful.affinity_machine import AffinityMachine
from stateful.affinity_subject import AffinityHarness, CrateFactory

Edge = tuple[int, int, Op]


def replay_bound(bound: Bound) -> ReplayResult:
    """Cover every edge of `bound` with root paths and replay them on the crate."""
    from impl.adapter import CrateAffinity  # noqa: PLC0415 - only when replaying

    exploration = explore(bound)
    return replay_paths(exploration, edge_cover_paths(exploration), CrateAffinity)


def _replay(bounds: Sequence[Bound], args: argparse.Namespace, console: Console) -> int:
    del args
    return replay_table(
        "Edge-covering replay: model vs dynamo-kv-router",
        ((bound.name, replay_bound(bound)) for bound in bounds),
        console,
        lambda _name, _number, failure: f"  path: {list(failure.path)}",
    )


def counterexamples(bounds: Sequence[Bound]) -> dict[str, Counterexample | None]:
    """The shortest counterexample of each model canary over `bounds`."""
    return {
        name: shortest_counterexample(name, model_type, bounds)
        for name, model_type in sorted(MODEL_CANARIES.items())
    }


def _counterexamples(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    out: Path = args.out or artifact_dir()
    survived = print_counterexamples(counterexamples(bounds), out, console)
    table = Table(title="Shortest counterexamples and Hypothesis' shrinking")
    for column in ("canary", "bound", "property", "BFS", "Hypothesis", "ratio"):
        table.add_column(column, justify="left" if column != "ratio" else "right")
    for name, model_type in sorted(MODEL_CANARIES.items()):
        quality = shrink_quality(name, model_type, bounds)
        table.add_row(
            quality.canary,
            quality.bound,
            quality.prop,
            str(quality.bfs_steps),
            str(quality.hypothesis_steps),
            f"{quality.ratio:.2f}",
        )
    console.print(table)
    return 1 if survived else 0


def picture(profile: str = "ci") -> tuple[str, str]:
    """DOT and SVG of the picture bound, edges marked covered by Hypothesis."""
    bound = bound_named(PICTURE_BOUND)
    exploration = explore(bound)
    covered = measure(exploration, run_machine(bound, profile))
    note = (
        f"bound {bound.name}: {exploration.graph.number_of_nodes()} states, "
        f"{exploration.graph.number_of_edges()} edges, depth {exploration.depth}; "
        f"Hypothesis ({profile} profile) took {covered.edges.covered} edges "
        f"and visited {covered.states.covered} states"
    )
    return (
        to_dot(exploration, covered.covered_edges, note),
        to_svg(exploration, covered.covered_edges, note),
    )


def _picture(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    del bounds, args
    dot, svg = picture()
    files = {
        GRAPHS_DIR / f"{PICTURE_BOUND}.{suffix}": text
        for suffix, text in (("dot", dot), ("svg", svg))
    }
    write_results(files)
    for path in files:
        console.print(f"wrote {path}")
    return 0


AFFINITY_COMMANDS: dict[str, subjects.ExploreCommand] = {
    "replay": _replay,
    "counterexamples": _counterexamples,
    "picture": _picture,
}
"""The affinity explorer's own commands: verbatim edge replay on the crate, the
model canaries' shortest counterexamples, the picture bound."""


def bfs_steps(canary: str) -> int | None:
    """The shortest counterexample's length for a model canary (None: not one)."""
    if canary not in MODEL_CANARIES:
        return None
    found = shortest_counterexample(canary, MODEL_CANARIES[canary], BOUNDS)
    return None if found is None else len(found.ops)


# ---- edge replay through the harness ------------------------------------------


def replay_paths(
    exploration: Exploration,
    paths: list[list[Edge]],
    factory: CrateFactory,
    failures_max: int = 10,
) -> ReplayResult:
    """Replay each path through a fresh harness; stop after `failures_max` failures."""
    bound = exploration.bound
    failures: list[ReplayFailure] = []
    steps = 0
    for path in paths:
        harness = AffinityHarness(
            config=bound.config, session_pool=bound.session_ids, factory=factory
        )
        for position, (_, target, op) in enumerate(path):
            report = harness.step(op)
            steps += 1
            difference = report.first_difference()
            if not difference and harness.model.state() != exploration.states[target]:
                difference = f"harness model left the graph at node {target}"
            if difference:
                ops = tuple(edge_op for _, _, edge_op in path[: position + 1])
                failures.append(ReplayFailure(ops, difference))
                break
        if len(failures) >= failures_max:
            break
    return ReplayResult(
        paths=len(paths),
        steps=steps,
        edges=exploration.graph.number_of_edges(),
        failures=tuple(failures),
    )


# ---- shortest counterexamples and Hypothesis' shrunk length --------------------


def shortest_counterexample(
    canary: str, model_type: type[ModelAffinity], bounds: Sequence[Bound]
) -> Counterexample | None:
    """A model canary's shortest violation over `bounds` (first bound wins a tie)."""
    return shortest_in(
        canary, bounds, explore, model_type, _record, noun="model canary"
    )


def _record(
    bound: Bound, ops: Sequence[Op], description: str, comments: Sequence[str]
) -> Trace:
    return record(bound.config, bound.session_ids, ops, description, comments)


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
    """Operations Hypothesis reports for `model_type` standing in for the crate."""
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
