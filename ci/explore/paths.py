"""Edge-covering paths through any subject's explored graph, and their results.

`edge_cover_paths` derives root paths that together take every edge of the
bounded graph at least once (greedy: for each edge not yet taken, in creation
order, the BFS-tree path to its source, the edge, then untaken out-edges for as
long as there are any). Each subject replays them against the crate in its
`ci.explore.<subject>_replay` and reports a `ReplayResult`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci.explore import search
from ci.explore.search import ExplorationCapError, OpT

PATH_STEPS_MAX = 10_000
"""Cap on one covering path's length (each greedy step takes a new edge)."""


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
