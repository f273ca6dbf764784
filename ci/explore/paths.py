"""Edge-covering paths through an explored graph, replayed against the crate.

`edge_cover_paths` derives root paths that together take every edge of the
bounded graph at least once (greedy: for each edge not yet taken, in creation
order, the BFS-tree path to its source, the edge, then untaken out-edges for as
long as there are any). `replay_paths` drives each path through
`AffinityHarness`: the model and the system under test receive every operation,
the harness compares outcomes and observable state and checks every property,
and the harness' model must land on exactly the state the graph recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci.explore import search
from ci.explore.graph import Exploration
from ci.explore.search import ExplorationCapError, OpT
from model.affinity.ops import Op
from stateful.affinity_subject import AffinityHarness, CrateFactory

PATH_STEPS_MAX = 10_000
"""Cap on one covering path's length (each greedy step takes a new edge)."""

Edge = tuple[int, int, Op]


def edge_cover_paths(
    exploration: search.Exploration[Any, Any, OpT],
) -> list[list[tuple[int, int, OpT]]]:
    """Root paths that together take every edge at least once, in creation order.

    Any subject's graph: the queue's tests walk its paths too.
    """
    graph = exploration.graph
    taken: set[tuple[int, int, OpT]] = set()
    paths: list[list[tuple[int, int, OpT]]] = []
    for edge in graph.edges(keys=True):
        if edge in taken:
            continue
        path = [*exploration.path_to(edge[0]), edge]
        taken.update(path)
        node = edge[1]
        for _ in range(PATH_STEPS_MAX):
            following = next(
                (e for e in graph.out_edges(node, keys=True) if e not in taken),
                None,
            )
            if following is None:
                break
            path.append(following)
            taken.add(following)
            node = following[1]
        else:
            raise ExplorationCapError(
                f"a covering path exceeded PATH_STEPS_MAX={PATH_STEPS_MAX} steps"
            )
        paths.append(path)
    assert len(taken) == graph.number_of_edges(), "every edge is covered"
    return paths


@dataclass(frozen=True)
class ReplayFailure:
    """The first step of a covering path on which the two sides disagreed."""

    path: tuple[object, ...]  # from the initial state; the last op failed
    difference: str
    trace: Path | None = None  # where the failing path was written, if it was


@dataclass(frozen=True)
class ReplayResult:
    """How the covering paths fared against the system under test."""

    paths: int
    steps: int
    edges: int
    failures: tuple[ReplayFailure, ...]


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
