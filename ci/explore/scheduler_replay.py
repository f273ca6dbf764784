"""The scheduler explorer's findings as traces: edge replay and canaries' shortest.

Every path of a scheduler graph is a program of concrete calls from a fresh
scheduler (`ci.explore.scheduler_graph`: nothing is renamed), so it is a trace
of the scheduler kind (`ci.replay.scheduler`) as it stands:

* `replay_bound` covers every edge of a bound with root paths
  (`ci.explore.paths.edge_cover_paths`), records each path as a trace on the
  reference model and replays it with `ci.replay`'s own `replay` against the
  crate (or any factory): the harness compares outcomes and observations and
  checks every property after each step, and the recorded model must land on
  the graph's state after each edge. A path that fails is written as a trace
  file, with the one line that replays it (`python -m ci.replay FILE`).
* `scheduler_counterexamples` explores each scheduler canary in place of the
  model and keeps its shortest violation over the bounds (`shortest_violation`);
  each is written as a trace whose replay with `--canary NAME` diverges.

`SCHEDULER_COMMANDS` offers both to `python -m ci.explore --subject scheduler`
(`--replay`, `--counterexamples`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

from rich.console import Console

from ci import subjects
from ci.canaries.scheduler import CANARIES
from ci.explore.command import artifact_dir, replay_table
from ci.explore.paths import ReplayFailure, ReplayResult, edge_cover_paths
from ci.explore.scheduler_graph import (
    SCHEDULER_BOUNDS,
    SchedulerBound,
    SchedulerExploration,
    SchedulerModel,
    explore,
)
from ci.explore.shrink import Counterexample, print_counterexamples, shortest_in
from ci.replay.command import replay
from ci.replay.scheduler import KIND, project
from ci.replay.trace import Factory, Trace, save
from model.scheduler.ops import SchedulerOp
from model.scheduler.table import ModelScheduler

FAILURES_MAX = 10
"""Replay stops after this many failing paths (each is written as a trace)."""


def path_trace(
    bound: SchedulerBound,
    ops: Sequence[SchedulerOp],
    description: str,
    comments: Sequence[str] = (),
) -> Trace:
    """`ops` from a fresh scheduler of `bound`, recorded on the reference model."""
    return KIND.record(bound.config, ops, description, comments)


def _landed(trace: Trace, exploration: SchedulerExploration, nodes: list[int]) -> str:
    """Where the recorded model left the graph's states, or ''."""
    for recorded, node in zip(trace.steps, nodes, strict=True):
        if recorded.model != project(exploration.states[node].state):
            return f"step {recorded.index}: the recorded model left the graph at {node}"
    return ""


def replay_exploration(
    exploration: SchedulerExploration,
    factory: Factory,
    against: str,
    out: Path | None = None,
) -> ReplayResult:
    """Replay edge-covering paths of `exploration` through `factory`'s scheduler.

    A failing path is written to `out/<bound>-path-<n>.json` when `out` is given.
    """
    bound = exploration.bound
    paths = edge_cover_paths(exploration)
    failures: list[ReplayFailure] = []
    steps = 0
    for number, path in enumerate(paths):
        ops = [op for _, _, op in path]
        trace = path_trace(
            bound, ops, f"edge-covering path {number} of scheduler bound {bound.name}"
        )
        result = replay(trace, factory, against)
        steps += len(result.verdicts)
        verdict = result.first_failure
        difference = "" if verdict is None else verdict.detail or str(verdict.failed)
        failed_at = len(ops) if verdict is None else result.verdicts.index(verdict) + 1
        landed = _landed(trace, exploration, [target for _, target, _ in path])
        if not difference and not landed:
            continue
        written = None
        if out is not None:
            written = save(trace, out / f"{bound.name}-path-{number}.json")
        failures.append(
            ReplayFailure(tuple(ops[:failed_at]), difference or landed, written)
        )
        if len(failures) >= FAILURES_MAX:
            break
    return ReplayResult(
        paths=len(paths),
        steps=steps,
        edges=exploration.graph.number_of_edges(),
        failures=tuple(failures),
    )


def replay_bound(bound: SchedulerBound, out: Path | None = None) -> ReplayResult:
    """Cover every edge of `bound` with paths and replay them on the crate."""
    factory = KIND.crate_factory()
    return replay_exploration(explore(bound), factory, "crate", out)


def _replay(
    bounds: Sequence[SchedulerBound], args: argparse.Namespace, console: Console
) -> int:
    del args
    named = {bound.name: bound for bound in bounds}

    def show(name: str, number: int, failure: ReplayFailure) -> str:
        ops = cast("tuple[SchedulerOp, ...]", failure.path)
        trace = path_trace(named[name], ops, f"failing path of bound {name}")
        path = save(trace, artifact_dir() / f"{name}-failure-{number}.json")
        return f"  replay: python -m ci.replay {path}"

    return replay_table(
        "Edge-covering replay of scheduler traces: model vs crate",
        ((bound.name, replay_bound(bound)) for bound in bounds),
        console,
        show,
    )


# ---- canaries ------------------------------------------------------------------


def canary_model(name: str) -> SchedulerModel:
    """The scheduler canary `name` as a model the explorer can set a state on."""

    def build(config: Any) -> ModelScheduler:
        scheduler = CANARIES[name](config)
        assert isinstance(scheduler, ModelScheduler), f"{name} is not a model"
        return scheduler

    return build


def shortest_scheduler_counterexample(
    canary: str, bounds: Sequence[SchedulerBound]
) -> Counterexample | None:
    """The canary's shortest violation over `bounds` (None: it survived them)."""
    model = canary_model(canary)
    return shortest_in(
        canary, bounds, explore, model, path_trace, noun="scheduler canary"
    )


def scheduler_counterexamples(
    bounds: Sequence[SchedulerBound],
) -> dict[str, Counterexample | None]:
    """Each scheduler canary's shortest counterexample over `bounds`, by name."""
    return {
        name: shortest_scheduler_counterexample(name, bounds)
        for name in sorted(CANARIES)
    }


def _counterexamples(
    bounds: Sequence[SchedulerBound], args: argparse.Namespace, console: Console
) -> int:
    examples = scheduler_counterexamples(bounds)
    out: Path = args.out or artifact_dir()
    return 1 if print_counterexamples(examples, out, console, KIND.show_op) else 0


def bfs_steps(canary: str) -> int | None:
    """The length of the canary's shortest counterexample over every bound."""
    example = shortest_scheduler_counterexample(canary, SCHEDULER_BOUNDS)
    return None if example is None else len(example.ops)


SCHEDULER_COMMANDS: dict[str, subjects.ExploreCommand] = {
    "replay": _replay,
    "counterexamples": _counterexamples,
}
"""The scheduler explorer's own commands: edge replay through scheduler traces,
the canaries' shortest counterexamples."""
