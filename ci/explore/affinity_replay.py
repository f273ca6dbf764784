"""The affinity explorer's own commands: edge replay, counterexamples, picture.

The registry's affinity entry names `AFFINITY_COMMANDS` as its
`Explorer.commands` (`python -m ci.explore --subject affinity` and a flag):

* `--replay`: every edge of a bound covered by root paths
  (`ci.explore.paths`), each replayed verbatim against the crate;
* `--counterexamples`: the shortest counterexample of each model canary
  (`ci.canaries.affinity.MODEL_CANARIES`) over the bounds, written as a trace,
  and Hypothesis' shrunk length beside it (`ci.explore.shrink`);
* `--picture`: the picture bound's graph, edges marked covered by the
  affinity machine, as `ci/explore/graphs/picture.{dot,svg}`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ci import subjects
from ci.canaries.affinity import MODEL_CANARIES
from ci.cli import write_results
from ci.explore.affinity_bounds import PICTURE_BOUND, bound_named
from ci.explore.affinity_coverage import run_machine
from ci.explore.affinity_graph import Bound, explore
from ci.explore.command import GRAPHS_DIR, artifact_dir, replay_table
from ci.explore.coverage import measure
from ci.explore.paths import ReplayResult, edge_cover_paths, replay_paths
from ci.explore.picture import to_dot, to_svg
from ci.explore.shrink import (
    Counterexample,
    ShrinkQuality,
    replay_command,
    shortest_counterexample,
    shrink_quality,
    write_trace,
)


def replay_bound(bound: Bound) -> ReplayResult:
    """Cover every edge of `bound` with root paths and replay them on the crate."""
    from impl.adapter import NativeAffinity  # noqa: PLC0415 - only when replaying

    exploration = explore(bound)
    return replay_paths(exploration, edge_cover_paths(exploration), NativeAffinity)


def _replay(bounds: Sequence[Bound], console: Console) -> int:
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


def shrink_report(bounds: Sequence[Bound]) -> list[ShrinkQuality]:
    """Hypothesis' shrunk length over the BFS-shortest length, per model canary."""
    return [
        shrink_quality(name, model_type, bounds)
        for name, model_type in sorted(MODEL_CANARIES.items())
    ]


def _counterexamples(bounds: Sequence[Bound], out: Path, console: Console) -> int:
    failed = False
    table = Table(title="Shortest counterexamples and Hypothesis' shrinking")
    for column in ("canary", "bound", "property", "BFS", "Hypothesis", "ratio"):
        table.add_column(column, justify="left" if column != "ratio" else "right")
    for name, example in counterexamples(bounds).items():
        if example is None:
            failed = True
            console.print(f"[red]{name}: survived every bound[/red]")
            continue
        path = write_trace(out / name / "trace.json", example)
        console.print(f"{name}: {len(example.ops)} steps, violates {example.prop}")
        for op in example.ops:
            console.print(f"    {op}")
        console.print(f"  replay: {replay_command(path.parent, example)}")
    for quality in shrink_report(bounds):
        table.add_row(
            quality.canary,
            quality.bound,
            quality.prop,
            str(quality.bfs_steps),
            str(quality.hypothesis_steps),
            f"{quality.ratio:.2f}",
        )
    console.print(table)
    return 1 if failed else 0


def picture(profile: str = "ci") -> tuple[str, str]:
    """DOT and SVG of the picture bound, edges marked covered by Hypothesis."""
    bound = bound_named(PICTURE_BOUND)
    exploration = explore(bound)
    covered = measure(exploration, run_machine(bound.config, profile))
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


def _picture(console: Console) -> int:
    dot, svg = picture()
    files = {
        GRAPHS_DIR / f"{PICTURE_BOUND}.{suffix}": text
        for suffix, text in (("dot", dot), ("svg", svg))
    }
    write_results(files)
    for path in files:
        console.print(f"wrote {path}")
    return 0


def _run_replay(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    del args
    return _replay(bounds, console)


def _run_counterexamples(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    return _counterexamples(bounds, args.out or artifact_dir(), console)


def _run_picture(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    del bounds, args
    return _picture(console)


AFFINITY_COMMANDS: dict[str, subjects.ExploreCommand] = {
    "replay": _run_replay,
    "counterexamples": _run_counterexamples,
    "picture": _run_picture,
}
"""The affinity explorer's own commands: verbatim edge replay on the crate, the
model canaries' shortest counterexamples, the picture bound."""
