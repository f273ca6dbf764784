"""Breadth-first enumeration of the affinity model's reachable states in a bound.

A `Bound` declares a small world: one table configuration, the session ids and
targets that operations may name, which operation types are enumerated, how
many handles may be live at once, and how far from the initial state to look.
`explore` describes that world as a `ci.explore.search.Space` and builds a
`networkx.MultiDiGraph` (a `DiGraph` whose parallel edges are kept apart by
their operation) breadth-first from the initial state:

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

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from typing import TypeAlias

from ci.explore import search
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
from model.affinity.types import SECOND_NS, AffinityConfig, Target, Version
from properties import Step
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


Exploration: TypeAlias = search.Exploration[Bound, AffinityState, Op]
"""One affinity bound, enumerated."""

Violation: TypeAlias = search.Violation[Op]
Transition: TypeAlias = search.Transition[AffinityState, Op]


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


def successors(
    bound: Bound, state: AffinityState, model_type: type[ModelAffinity]
) -> Iterator[Transition | None]:
    """Apply each enumerated operation to a copy of `state`, in sorted order.

    Yields None for a transition that leaves the bound (too many live handles).
    The sink's output during the step is the edge's `published` label.
    """
    for op in bound_ops(bound, state):
        model = model_type.from_state(state)
        outcome = outcome_of(model, op)
        published = tuple(model.drain_published())
        after = model.state()
        if len(after.handles) > bound.handles_max:
            yield None
            continue
        yield search.Transition(
            op=op,
            outcome=outcome,
            after=after,
            step=Step(state, op, outcome, after),
            labels=(("published", published),),
        )


def space(
    bound: Bound, model_type: type[ModelAffinity] = ModelAffinity
) -> search.Space[Bound, AffinityState, Op]:
    """The affinity model (or a broken model) inside `bound`, for the search."""
    config = bound.config
    return search.Space(
        bound=bound,
        subject="affinity",
        root=model_type(config).state(),
        successors=partial(successors, bound, model_type=model_type),
        state_view=_the_state_itself,
        goals=tuple(g.name for g in goals("affinity", (config.clock, config.reaping))),
    )


def _the_state_itself(state: AffinityState) -> AffinityState:
    """Affinity state properties read the model's state as it is."""
    return state


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
    return search.explore_space(space(bound, model_type), stop_at_first_violation)
