"""Breadth-first enumeration of the affinity model's reachable states in a bound.

A `Bound` declares a small world: one table configuration, the session ids and
targets that operations may name, which operation types are enumerated, how
many handles may be live at once, and how far from the initial state to look.
`explore` builds a `networkx.MultiDiGraph` (a `DiGraph` whose parallel edges
are kept apart by their operation) breadth-first from the initial state:

* nodes are integers in discovery order (0 is the initial state); each carries
  its `AffinityState` and its BFS depth;
* an edge `u -> v` keyed by an operation says: applying that operation to
  state `u` returns `outcome` and leaves state `v`; `published` holds what the
  replica sink received during the step.

States are the model's exact snapshots. The one normalisation is the sink:
`published` is drained after every step, exactly as the differential harness
drains it when it observes both sides. Nothing else is canonicalised -- no
shifting of time relative to `now_ns`, no renumbering of handles, revisions or
sequences. That keeps every edge label the concrete operation the adapter
receives, so any path from the root replays verbatim through the crate, at the
price of a graph that is finite only because of the depth horizon (time, handle
numbers and revisions only grow). The claim of a run is therefore bounded:
"no property violated in any state within `depth_max` steps of the initial
state, under these operations" -- never "verified".

Clock advances are drawn from boundary-relevant instants only: `now`, `now + 1`,
one before, on and one after the next reaper tick and every binding's idle
deadline, one nanosecond backwards, one past the binding's clock range, and
2**64 (beyond a `u64`).

Limits: `depth_max` is the declared horizon of the bounded check; states at that
depth are not expanded and their number is reported (`horizon_states`), never
hidden. `states_max` is a safety cap: reaching it raises `ExplorationCapError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import chain

import networkx as nx  # type: ignore[import-untyped]  # no stubs pinned in [lint]

from model.affinity.ops import (
    OP_TYPES,
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    DropTable,
    EnableReplication,
    Invalidate,
    Join,
    NextVersion,
    ObserveSequence,
    Op,
    Outcome,
    PollWaiter,
    Query,
    Release,
    outcome_of,
)
from model.affinity.table import (
    CLOCK_NS_MAX,
    AffinityState,
    Binding,
    InitHandle,
    LeaseHandle,
    ModelAffinity,
    WaiterHandle,
    reaper_period_ns,
)
from model.affinity.types import SECOND_NS, AffinityConfig, Published, Target, Version
from properties import Property, Step, properties
from properties.registry import goals

CLOCK_OVERFLOW_NS = 2**64
"""An instant no `u64` nanosecond count can hold."""

REPLICA_WRITERS = (0, 1)
"""Writer ids offered to `EnableReplication`."""


def format_ns(value: int) -> str:
    """Nanoseconds, compactly: `1ns`, `1s`, `1s+1ns`, `1s-1ns`, `2^64`."""
    if value == 2**64:
        return "2^64"
    seconds, rest = divmod(value, SECOND_NS)
    if rest > SECOND_NS // 2:
        seconds, rest = seconds + 1, rest - SECOND_NS
    if seconds == 0:
        return f"{value}ns"
    return f"{seconds}s" if rest == 0 else f"{seconds}s{rest:+d}ns"


class ExplorationCapError(RuntimeError):
    """A named cap of the explorer was reached; the run is refused, not truncated."""


@dataclass(frozen=True, eq=False)
class Bound:
    """One exhaustively explored world: configuration, vocabulary and limits."""

    name: str
    config: AffinityConfig
    session_ids: tuple[str, ...]  # ids operations may name (sorted)
    targets: tuple[Target, ...]  # where requests may be pinned, bound, dispatched
    op_types: frozenset[type[Op]]  # the operation types enumerated
    handles_max: int  # live handles a state may hold; more is outside the bound
    depth_max: int  # horizon: states this many steps out are not expanded
    states_max: int  # safety cap: more distinct states raises
    goals_out_of_reach: Mapping[str, str] = field(default_factory=dict)
    """`sometimes` properties this bound cannot reach, each with the reason."""

    def describe(self) -> str:
        """One line naming the bound's vocabulary and limits."""
        ops = ", ".join(sorted(t.__name__ for t in self.op_types))
        targets = ", ".join(str(t) for t in self.targets)
        return (
            f"ttl={format_ns(self.config.ttl_ns)} mode={self.config.mode} "
            f"max_entries={self.config.max_entries} "
            f"id_bytes_max={self.config.max_session_id_bytes} "
            f"sessions={list(self.session_ids)} targets=[{targets}] "
            f"handles_max={self.handles_max} depth_max={self.depth_max} ops=[{ops}]"
        )


@dataclass(frozen=True)
class Violation:
    """An `always` property that failed, with the shortest path that shows it."""

    prop: str
    path: tuple[Op, ...]  # from the initial state; the last op is the failing step


@dataclass
class Exploration:
    """The result of one breadth-first enumeration."""

    bound: Bound
    model_type: type[ModelAffinity]  # the model (or broken model) explored
    graph: nx.MultiDiGraph[int]
    states: list[AffinityState]  # by node id
    ids: dict[AffinityState, int]
    parent: list[tuple[int, Op] | None]  # BFS tree: how each node was first reached
    violations: list[Violation]  # the first (shortest) per property
    reached: dict[str, int]  # sometimes-goal -> depth at which it first held
    excluded: int  # transitions that would exceed `handles_max`
    horizon_states: int  # nodes at `depth_max`, not expanded

    @property
    def depth(self) -> int:
        """The greatest BFS depth of any node."""
        return max(int(self.graph.nodes[n]["depth"]) for n in self.graph.nodes)

    def counts(self) -> dict[str, int]:
        """What `ci/explore/state_counts.json` pins for this bound."""
        return {
            "states": self.graph.number_of_nodes(),
            "edges": self.graph.number_of_edges(),
            "depth": self.depth,
            "horizon_states": self.horizon_states,
            "excluded_transitions": self.excluded,
        }

    def path_to(self, node: int) -> list[tuple[int, int, Op]]:
        """The BFS-tree (shortest) path from the root to `node`, as edges."""
        edges: list[tuple[int, int, Op]] = []
        cursor = node
        for _ in range(self.graph.nodes[node]["depth"]):
            link = self.parent[cursor]
            assert link is not None, f"node {cursor} has no parent"
            previous, op = link
            edges.append((previous, cursor, op))
            cursor = previous
        assert cursor == 0, "a BFS-tree path ends at the root"
        return edges[::-1]

    def unreached_goals(self) -> list[str]:
        """`sometimes` goals of the affinity subject this exploration never met."""
        config = self.bound.config
        return [
            prop.name
            for prop in goals("affinity", (config.clock, config.reaping))
            if prop.name not in self.reached
        ]

    def goal_mismatch(self) -> tuple[list[str], list[str]]:
        """(expected but unreached, declared out of reach but reached)."""
        out_of_reach = self.bound.goals_out_of_reach
        missing = [g for g in self.unreached_goals() if g not in out_of_reach]
        stale = [g for g in sorted(out_of_reach) if g in self.reached]
        return missing, stale


# ---- operations ------------------------------------------------------------


def _value_key(value: object) -> tuple[object, ...]:
    """A total order over operation fields (None first, then by type)."""
    if value is None:
        return (0,)
    if isinstance(value, int):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, Target):
        return (3, *value.sort_key())
    if isinstance(value, Version):
        return (4, value.sequence, value.writer)
    raise TypeError(f"no order for {value!r}")


def op_sort_key(op: Op) -> tuple[object, ...]:
    """Operations sort by type (in `OP_TYPES` order), then field by field."""
    fields = tuple(_value_key(v) for v in vars(op).values())
    return (OP_TYPES.index(type(op)), fields)


def clock_instants(state: AffinityState) -> list[int]:
    """Boundary-relevant instants to advance to from `state` (sorted)."""
    now_ns = state.now_ns
    period_ns = reaper_period_ns(state.config.ttl_ns)
    tick_ns = (now_ns // period_ns + 1) * period_ns
    instants = {now_ns, now_ns + 1, tick_ns - 1, tick_ns, tick_ns + 1}
    for _, entry in state.entries:
        if isinstance(entry, Binding):
            instants |= {
                entry.deadline_ns - 1,
                entry.deadline_ns,
                entry.deadline_ns + 1,
            }
    forward = {instant for instant in instants if instant >= now_ns}
    return sorted({*forward, now_ns - 1, CLOCK_NS_MAX + 1, CLOCK_OVERFLOW_NS})


def replica_versions(state: AffinityState, session_id: str) -> list[Version]:
    """Older, equal and newer than the session's binding (or a first version)."""
    entry = state.entry(session_id)
    if not isinstance(entry, Binding):
        return [Version(1, 0)]
    base = entry.version
    sequences = {base.sequence - 1, base.sequence, base.sequence + 1}
    return [Version(s, base.writer) for s in sorted(sequences) if s >= 0]


def _session_ops(bound: Bound, state: AffinityState) -> Iterator[Op]:
    """Operations naming a session id: acquire, read, join, replicate."""
    pins: tuple[Target | None, ...] = (None, *bound.targets)
    for session_id in bound.session_ids:
        for pin in pins:
            yield Acquire(session_id, pin)
            yield Query(session_id, pin)
        for target in bound.targets:
            yield Join(session_id, target)
            for version in replica_versions(state, session_id):
                yield ApplyReplica(session_id, target, version)


def _handle_ops(bound: Bound, state: AffinityState) -> Iterator[Op]:
    """Operations on live handles, then reuses of consumed ones (a clear error)."""
    live: set[int] = set()
    for number, handle in state.handles:
        live.add(number)
        holds = isinstance(handle, InitHandle) or (
            isinstance(handle, LeaseHandle) and handle.hold_target is not None
        )
        if holds:
            yield from (Commit(number, target) for target in bound.targets)
        if isinstance(handle, InitHandle):
            yield Abort(number)
        if isinstance(handle, LeaseHandle):
            yield from (Release(number), Invalidate(number))
        if isinstance(handle, WaiterHandle):
            yield PollWaiter(number)
    for number in range(1, state.next_handle):
        if number not in live:
            yield from (
                Commit(number, bound.targets[0]),
                Abort(number),
                Release(number),
            )


def _table_ops(state: AffinityState) -> Iterator[Op]:
    """The clock, sequences, replication and dropping the table."""
    yield from (Advance(now_ns) for now_ns in clock_instants(state))
    for sequence in sorted({max(state.next_sequence - 1, 0), state.next_sequence}):
        yield ObserveSequence(sequence)
    yield from (EnableReplication(writer) for writer in REPLICA_WRITERS)
    yield NextVersion()
    if not state.dropped:
        yield DropTable()


def bound_ops(bound: Bound, state: AffinityState) -> list[Op]:
    """The operations enumerated from `state`, deduplicated and sorted."""
    candidates = chain(
        _session_ops(bound, state), _handle_ops(bound, state), _table_ops(state)
    )
    ops = {op for op in candidates if type(op) in bound.op_types}
    return sorted(ops, key=op_sort_key)


@dataclass(frozen=True)
class Transition:
    """One successor: the operation, its outcome, the sink's output, the state."""

    op: Op
    outcome: Outcome
    published: tuple[Published, ...]
    after: AffinityState


def successors(
    bound: Bound, state: AffinityState, model_type: type[ModelAffinity]
) -> Iterator[Transition | None]:
    """Apply each enumerated operation to a copy of `state`, in sorted order.

    Yields None for a transition that leaves the bound (too many live handles).
    """
    for op in bound_ops(bound, state):
        model = model_type.from_state(state)
        outcome = outcome_of(model, op)
        published = tuple(model.drain_published())
        after = model.state()
        if len(after.handles) > bound.handles_max:
            yield None
            continue
        yield Transition(op, outcome, published, after)


# ---- the search ------------------------------------------------------------


@dataclass
class _Checks:
    """The registry's affinity properties, looked up once per exploration."""

    always_state: list[Property] = field(
        default_factory=lambda: properties("affinity", "always", "state")
    )
    always_step: list[Property] = field(
        default_factory=lambda: properties("affinity", "always", "step")
    )
    sometimes_state: list[Property] = field(
        default_factory=lambda: properties("affinity", "sometimes", "state")
    )
    sometimes_step: list[Property] = field(
        default_factory=lambda: properties("affinity", "sometimes", "step")
    )


def explore(
    bound: Bound,
    model_type: type[ModelAffinity] = ModelAffinity,
    stop_at_first_violation: bool = False,
) -> Exploration:
    """Enumerate every state within `bound.depth_max` steps, checking properties.

    Every `always` property is checked on every state (over="state") and every
    edge (over="step"); `sometimes` goals record the depth at which they first
    held. With `stop_at_first_violation`, the search ends at the first violated
    property; breadth-first order makes its path a shortest counterexample.
    """
    checks = _Checks()
    root = model_type(bound.config).state()
    graph: nx.MultiDiGraph[int] = nx.MultiDiGraph(name=bound.name)
    result = Exploration(
        bound=bound,
        model_type=model_type,
        graph=graph,
        states=[root],
        ids={root: 0},
        parent=[None],
        violations=[],
        reached={},
        excluded=0,
        horizon_states=0,
    )
    graph.add_node(0, depth=0)
    _check_state(result, checks, 0, (), 0)
    if stop_at_first_violation and result.violations:
        return result
    frontier: deque[int] = deque([0])
    for _ in range(bound.states_max):  # each iteration expands one node
        if not frontier:
            return result
        node = frontier.popleft()
        depth = graph.nodes[node]["depth"]
        if depth == bound.depth_max:
            result.horizon_states += 1
            continue
        if _expand(result, checks, node, depth, frontier, stop=stop_at_first_violation):
            return result
    if frontier:
        raise ExplorationCapError(
            f"bound {bound.name}: more than states_max={bound.states_max} states"
        )
    return result


def _expand(
    result: Exploration,
    checks: _Checks,
    node: int,
    depth: int,
    frontier: deque[int],
    *,
    stop: bool,
) -> bool:
    """Add `node`'s out-edges; True if the search should stop."""
    bound, graph = result.bound, result.graph
    before = result.states[node]
    for transition in successors(bound, before, result.model_type):
        if transition is None:
            result.excluded += 1
            continue
        target = result.ids.get(transition.after)
        if target is None:
            if len(result.states) >= bound.states_max:
                raise ExplorationCapError(
                    f"bound {bound.name}: more than states_max={bound.states_max} "
                    "states"
                )
            target = len(result.states)
            result.states.append(transition.after)
            result.ids[transition.after] = target
            result.parent.append((node, transition.op))
            graph.add_node(target, depth=depth + 1)
            frontier.append(target)
            new = True
        else:
            new = False
        graph.add_edge(
            node,
            target,
            key=transition.op,
            outcome=transition.outcome,
            published=transition.published,
        )
        step = Step(before, transition.op, transition.outcome, transition.after)
        failed = _check_step(result, checks, node, step, depth + 1)
        if new:
            path = (*_ops_to(result, node), transition.op)
            failed = _check_state(result, checks, target, path, depth + 1) or failed
        if failed and stop:
            return True
    return False


def _ops_to(result: Exploration, node: int) -> tuple[Op, ...]:
    return tuple(op for _, _, op in result.path_to(node))


def _check_state(
    result: Exploration,
    checks: _Checks,
    node: int,
    path: tuple[Op, ...],
    depth: int,
) -> bool:
    state = result.states[node]
    for prop in checks.sometimes_state:
        if prop.name not in result.reached and prop.predicate(state):
            result.reached[prop.name] = depth
    failed = False
    for prop in checks.always_state:
        if not prop.predicate(state):
            failed = True
            _record(result, prop.name, path)
    return failed


def _check_step(
    result: Exploration,
    checks: _Checks,
    node: int,
    step: Step,
    depth: int,
) -> bool:
    for prop in checks.sometimes_step:
        if prop.name not in result.reached and prop.predicate(step):
            result.reached[prop.name] = depth
    failed = False
    for prop in checks.always_step:
        if not prop.predicate(step):
            failed = True
            _record(result, prop.name, (*_ops_to(result, node), step.op))
    return failed


def _record(result: Exploration, name: str, path: tuple[Op, ...]) -> None:
    if all(v.prop != name for v in result.violations):
        result.violations.append(Violation(name, path))
