"""Many callers of one affinity table: programs, the model as specification.

A *scenario* is a table configuration, one program per thread and a schedule
seed. The binding runs the programs on real threads against one table of the
crate (`impl.adapter.run_concurrent`) and records a `History`; this module
checks it with `stateful.linearizability.check`, the reference model being
the sequential specification, and cuts a failing history down to a shortest
failing sub-history.

Time in a history: only thread 0 advances the clock. On a runtime table the
crate's reaper runs beside the other threads; on a manual table
`advance_clock` sets the clock, lets go of it, then collects. Either way a
successful `Advance` is two actions of thread 0 in the search: the clock's
move, then the collection the reaping variant brings
(`ModelAffinity.collect_due`). Programs move the clock in half-periods, so a
runtime move never passes a reaper tick without landing on it (the reaper would
then collect at the later instant); a history that does is outside the
specification's domain (`OutOfDomainError`).

The reaper's pass: the crate removes expired entries (`entries.retain`) and
lowers its entry count in a second step (`entry_count.fetch_sub`,
`SessionAffinity::spawn_reaper`, affinity.rs:273-286), so an insertion in
between finds the count still full. `ReaperCount` names both readings;
`CRATE_REAPER_COUNT` is the pinned crate's, under which the collection is two
actions of the advance: `reap` (the entries go, their slots stay counted)
and `count` (the slots are freed). While slots stay counted, the model
accepts a call as if its capacity were that many entries smaller.

An abort and an invalidation remove their entry the same way: the entry
goes (`entries.remove_if_mut` / `remove_if`), then the count is lowered
(`Drop for AffinityInitialization`, affinity.rs:803-821;
`AffinityLease::invalidate`, :933-957), so an acquisition in between is
refused at capacity though the entry is gone (finding F6). Under
`count_after` such a call is two actions too: `call` (the entry goes, its
slot stays counted) and `count`.

Replica updates: the crate observes an update's sequence and reads the clock
before it takes the session's entry (`Inner::apply_replica_update`,
affinity.rs:649-653), so a local commit or join between the two takes a
version above the update's, and an update that waits while the clock moves
applies at the clock it read: its idle deadline, and whether it finds the
entry expired, come from that earlier instant (finding F5). `ReplicaApply`
names both readings; `CRATE_REPLICA_APPLY` is the pinned crate's, under which
an update is two actions: `observe` (the sequence and the clock), then `call`.

Handles: the driver numbers handles itself; the specification state carries
the map from the driver's numbers to the model's, extended whenever both sides
hand out a handle.

Publications: what a call published to the replica sink is part of its result.
The model publishes at the call's linearization point; the crate publishes
after it lets go of the entry, on the calling thread, before the call returns.
So the publications of one call are compared, in the sink's order, with what
the model published in that step; the order of publications *between* calls is
not a linearization (two calls may publish in the other order than they took
effect) and is checked separately, by `version_order`.

The census, read after every thread finished, adds each listed session's
`query_target` and the version counter (`next_version`, which takes one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from hypothesis import strategies as st

from model.affinity.history import (
    INSTANT_END,
    Census,
    Event,
    History,
    ThreadOp,
    ThreadOpKind,
)
from model.affinity.ops import (
    Abort,
    Advance,
    ApplyReplica,
    Commit,
    Invalidate,
    Join,
    Op,
    Outcome,
    PollWaiter,
    Release,
    outcome_of,
)
from model.affinity.table import AffinityState, ModelAffinity, reaper_period_ns
from model.affinity.types import (
    SECOND_NS,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Reaping,
    Target,
    Version,
    Wait,
)
from stateful.linearizability import SEARCH_STATES_MAX, Verdict, check

TTL_NS: Final[int] = SECOND_NS
"""Scenarios use a 1 s TTL: the reaper then ticks every second."""
HALF_PERIOD_NS: Final[int] = reaper_period_ns(TTL_NS) // 2
SESSIONS: Final[tuple[str, ...]] = ("s0", "s1")
TARGETS: Final[tuple[Target, ...]] = (Target(1), Target(2), Target(1, 0))

Part = Literal["call", "clock", "reap", "count", "observe"]
ReplicaApply = Literal["atomic", "observe_first"]
"""One linearization point per replica update, or two (sequence, then entry)."""
CRATE_REPLICA_APPLY: Final[ReplicaApply] = "observe_first"
"""What the pinned crate does (see the module docstring)."""
ReaperCount = Literal["atomic", "count_after"]
"""A removal (the reaper's pass, an abort, an invalidation) frees its slots as it
removes the entries, or in a second step."""
CRATE_REAPER_COUNT: Final[ReaperCount] = "count_after"
"""What the pinned crate's reaper, aborts and invalidations do (the docstring)."""
COUNTED_AFTER: Final[tuple[type, ...]] = (Abort, Invalidate)
"""Calls that remove an entry first and lower the count after (finding F6)."""


PART_STEP: Final[dict[Part, int]] = {
    "clock": 0,
    "observe": 0,
    "reap": 1,
    "call": 1,
    "count": 2,
}
"""The order of the parts of one call, which share its instants."""
PENDING_RETURNED: Final[int] = INSTANT_END
"""A pending call's response, later than every instant a history can hold."""


class OutOfDomainError(ValueError):
    """The history does something the specification does not describe."""


@dataclass(frozen=True)
class Action:
    """One step of the search: a call, or half of an advance."""

    event: Event
    part: Part

    @property
    def thread(self) -> int:
        """The thread that acted."""
        return self.event.thread

    @property
    def invoked(self) -> int:
        """When the call was invoked."""
        return self.event.invoked

    @property
    def returned(self) -> int:
        """When the call returned; a pending call returns after every instant."""
        return PENDING_RETURNED if self.event.pending else self.event.returned

    @property
    def step(self) -> int:
        """The clock before the reap, a replica's observation before its entry."""
        return PART_STEP[self.part]


def actions_of(
    history: History,
    replica_apply: ReplicaApply = CRATE_REPLICA_APPLY,
    reaper_count: ReaperCount = CRATE_REAPER_COUNT,
) -> tuple[Action, ...]:
    """The search's actions: every call, advances and replica updates split."""
    actions: list[Action] = []
    for event in history.events:
        call = event.call
        if isinstance(call, Advance) and event.outcome.error is None:
            actions += [Action(event, "clock"), Action(event, "reap")]
            if reaper_count == "count_after":
                actions.append(Action(event, "count"))
            continue
        if isinstance(call, ApplyReplica) and replica_apply == "observe_first":
            actions.append(Action(event, "observe"))
        actions.append(Action(event, "call"))
        if isinstance(call, COUNTED_AFTER) and reaper_count == "count_after":
            actions.append(Action(event, "count"))
    return tuple(actions)


@dataclass(frozen=True)
class SpecState:
    """The model's snapshot and the driver-to-model handle map."""

    table: AffinityState
    handles: tuple[tuple[int, int], ...]
    moved_from: int | None = None  # between an advance's two actions
    uncounted: int = 0  # entries a pass removed whose slots stay counted
    removed_uncounted: tuple[tuple[int, int], ...] = ()
    """Aborts and invalidations, by (thread, index), that removed their entry
    and have not lowered the count yet."""
    clocks_seen: tuple[tuple[tuple[int, int], int], ...] = ()
    """The clock each observed, not yet applied replica update read, by (thread,
    index): the crate reads it with the sequence, before it takes the entry."""


_HANDLE_FIELD: Final[dict[type, str]] = {
    Commit: "handle",
    Abort: "handle",
    Release: "handle",
    Invalidate: "handle",
    PollWaiter: "waiter",
}
"""Calls on a handle, and the field that names it."""


def _with_model_handles(op: Op, handles: dict[int, int]) -> Op | None:
    """`op` with the driver's handle number replaced by the model's."""
    field = _HANDLE_FIELD.get(type(op))
    if field is None:
        return op
    driver_handle = getattr(op, field)
    if driver_handle not in handles:
        return None
    renamed: Op = replace(op, **{field: handles[driver_handle]})  # type: ignore[arg-type]
    return renamed


def _new_handles(
    op: Op, seen: Outcome, modelled: Outcome
) -> list[tuple[int, int]] | None:
    """The handles both sides handed out, if the results agree; else None."""
    if seen.error != modelled.error:
        return None
    if seen.error is not None:
        return []
    mine, theirs = seen.value, modelled.value
    match mine:
        case Initialize(handle) if isinstance(theirs, Initialize):
            return [(handle, theirs.handle)]
        case Wait(waiter) if isinstance(theirs, Wait):
            return [(waiter, theirs.waiter)]
        case Bound(handle, target) if isinstance(theirs, Bound):
            return [(handle, theirs.handle)] if target == theirs.target else None
    if isinstance(op, Join | Commit):  # a lease handle, or no lease
        if mine is None or theirs is None:
            return [] if mine is None and theirs is None else None
        assert isinstance(mine, int)
        assert isinstance(theirs, int)
        return [(mine, theirs)]
    return [] if mine == theirs else None


class AffinitySpec:
    """The reference model as the sequential specification of a history."""

    def __init__(
        self,
        config: AffinityConfig,
        census: Census | None,
        writer_id: int | None,
        reaper_count: ReaperCount = CRATE_REAPER_COUNT,
    ) -> None:
        """Check against `config`'s model; `census` (if any) must match at the end.

        `writer_id`: the recording sink's writer, or None for a run without one.
        """
        self.config = config
        self.census = census
        self.writer_id = writer_id
        self.counts_after = reaper_count == "count_after"
        self.period_ns = reaper_period_ns(config.ttl_ns)

    def initial(self) -> SpecState:
        """A fresh table (replicating if the run had a sink) and no handles."""
        model = ModelAffinity(self.config)
        if self.writer_id is not None:
            model.enable_replication(self.writer_id)
        return SpecState(model.state(), ())

    def successors(self, state: SpecState, action: Action) -> list[SpecState]:
        """Where `action` may lead with the result seen; a pending one may not act."""
        after = self._step(state, action)
        if not action.event.pending:
            return [] if after is None else [after]
        return [state] if after is None else [state, after]

    def _advance(self, state: SpecState, action: Action) -> SpecState | None:
        """An advance's part: the clock's move, the pass, or the freed slots."""
        table = state.table
        call = action.event.call
        if action.part == "clock":
            assert isinstance(call, Advance)
            self._check_clock_move(table.now_ns, call.now_ns)
            moved = replace(table, now_ns=call.now_ns)
            return replace(state, table=moved, moved_from=table.now_ns)
        if action.part == "count":
            return replace(state, uncounted=0)
        if state.moved_from is None:  # a pending advance that did not move
            assert action.event.pending, "a collection follows its move"
            return None
        model = ModelAffinity.from_state(table)
        model.collect_due(state.moved_from)
        after = model.state()
        removed = len(table.entries) - len(after.entries) if self.counts_after else 0
        return replace(state, table=after, moved_from=None, uncounted=removed)

    def _step(self, state: SpecState, action: Action) -> SpecState | None:
        """The state after `action`, if the model gives the result seen."""
        call = action.event.call
        key = (action.event.thread, action.event.index)
        if isinstance(call, Advance):
            return self._advance(state, action)
        if action.part == "count":  # an abort's or invalidation's second step
            left = tuple(k for k in state.removed_uncounted if k != key)
            return replace(state, removed_uncounted=left)
        table = self._counted(state)
        model = ModelAffinity.from_state(table)
        if action.part == "observe":
            assert isinstance(call, ApplyReplica)
            if len(call.session_id.encode()) <= self.config.max_session_id_bytes:
                model.observe_replica_sequence(call.version.sequence)
            seen = (*state.clocks_seen, (key, table.now_ns))
            return replace(state, table=self._restored(model), clocks_seen=seen)
        clock_seen = dict(state.clocks_seen).pop(key, None)
        if clock_seen is not None:  # the update applies at the clock it read
            model = ModelAffinity.from_state(replace(table, now_ns=clock_seen))
        handles = dict(state.handles)
        op = _with_model_handles(call, handles)
        if op is None:
            return None
        modelled = outcome_of(model, op)
        published = tuple(model.drain_published())
        after = replace(
            state,
            table=replace(self._restored(model), now_ns=table.now_ns),
            clocks_seen=tuple(seen for seen in state.clocks_seen if seen[0] != key),
        )
        if self._counts_later(call, table, after.table):
            after = replace(after, removed_uncounted=(*state.removed_uncounted, key))
        if action.event.pending:  # any result: the caller never saw one
            return after
        added = _new_handles(call, action.event.outcome, modelled)
        if added is None or published != action.event.published:
            return None
        handles.update(added)
        return replace(after, handles=tuple(sorted(handles.items())))

    def _counted(self, state: SpecState) -> AffinityState:
        """The table as a call sees it: removed entries' slots still count."""
        counted = state.uncounted + len(state.removed_uncounted)
        if not counted:
            return state.table
        smaller = max(0, self.config.max_entries - counted)
        return replace(state.table, config=replace(self.config, max_entries=smaller))

    def _counts_later(
        self, call: object, before: AffinityState, after: AffinityState
    ) -> bool:
        """An abort or invalidation removed its entry; its count comes after."""
        return (
            self.counts_after
            and isinstance(call, COUNTED_AFTER)
            and len(after.entries) < len(before.entries)
        )

    def _restored(self, model: ModelAffinity) -> AffinityState:
        """The model's state under the table's own configuration."""
        return replace(model.state(), config=self.config)

    def _check_clock_move(self, from_ns: int, to_ns: int) -> None:
        """Refuse a move the programs never make: back, or past a reaper tick."""
        last_tick_ns = to_ns // self.period_ns * self.period_ns
        passes_a_tick = from_ns < last_tick_ns < to_ns
        runtime = self.config.clock == "runtime"
        if to_ns < from_ns or (runtime and passes_a_tick):
            raise OutOfDomainError(
                f"the clock moves from {from_ns} ns to {to_ns} ns past a reaper tick"
            )

    def accepts_final(self, state: SpecState) -> bool:
        """The model's counts and clock equal the census taken after the run."""
        census = self.census
        if census is None:
            return True
        model = ModelAffinity.from_state(state.table)
        return (
            model.now_ns == census.now_ns
            and model.entry_count() == census.entry_count
            and all(
                model.lease_count(session_id) == count
                for session_id, count in census.lease_counts
            )
            and all(
                model.query_target(session_id, None) == target
                for session_id, target in census.targets or ()
            )
            # Read last, as the driver does: it takes a version.
            and (
                census.next_version is None
                or model.next_version() == census.next_version
            )
        )


def verdict(
    history: History,
    replica_apply: ReplicaApply = CRATE_REPLICA_APPLY,
    states_max: int = SEARCH_STATES_MAX,
    reaper_count: ReaperCount = CRATE_REAPER_COUNT,
) -> Verdict[Action]:
    """Whether `history` is linearizable against the model."""
    spec = AffinitySpec(history.config, history.census, history.writer_id, reaper_count)
    actions = actions_of(history, replica_apply, reaper_count)
    return check(actions, spec, states_max)


def prefix(history: History, cut: int) -> History:
    """What had happened by instant `cut`: calls not yet returned are pending."""
    events = tuple(
        event if event.returned <= cut else replace(event, pending=True)
        for event in history.events
        if event.invoked <= cut
    )
    return replace(history, events=events, census=None)


def fails(
    history: History,
    replica_apply: ReplicaApply,
    reaper_count: ReaperCount = CRATE_REAPER_COUNT,
) -> bool:
    """Decidedly not linearizable."""
    found = verdict(history, replica_apply, reaper_count=reaper_count)
    return found.decided and not found.linearizable


def shortest_failure(
    history: History,
    replica_apply: ReplicaApply = CRATE_REPLICA_APPLY,
    reaper_count: ReaperCount = CRATE_REAPER_COUNT,
) -> History:
    """The shortest prefix of `history` that is not linearizable.

    Prefixes of a linearizable history are linearizable, so the first failing
    cut is where the history went wrong. If every prefix passes without the
    census, only the final counts failed: the whole history is returned.
    """
    for cut in sorted({event.returned for event in history.events}):
        candidate = prefix(history, cut)
        if fails(candidate, replica_apply, reaper_count):
            return candidate
    return history


# ---- scenarios ---------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A table configuration, one program per thread, and a schedule seed."""

    config: AffinityConfig
    programs: tuple[tuple[ThreadOp, ...], ...]
    schedule_seed: int

    @property
    def operations(self) -> int:
        """Program steps over all threads."""
        return sum(len(program) for program in self.programs)


_SLOT_KINDS: Final[tuple[ThreadOpKind, ...]] = (
    "commit",
    "commit",
    "drop",
    "invalidate",
    "poll",
)


def _program(draw: st.DrawFn, length: int, *, advances: bool) -> tuple[ThreadOp, ...]:
    """One thread's program: slot steps refer to its own earlier acquisitions."""
    ops: list[ThreadOp] = []
    slots = 0
    kinds: list[str] = ["acquire", "acquire", "query", "replica", "join"]
    if advances:
        kinds.append("advance")
    for _ in range(length):
        kind = draw(st.sampled_from([*kinds, *(["slot"] * 3 if slots else [])]))
        session_id = draw(st.sampled_from(SESSIONS))
        target = draw(st.sampled_from(TARGETS))
        if kind == "slot":
            slot = draw(st.integers(0, slots - 1))
            slot_kind = draw(st.sampled_from(_SLOT_KINDS))
            ops.append(ThreadOp(slot_kind, session_id, target, slot))
        elif kind == "acquire":
            requested = draw(st.sampled_from([None, None, target]))
            ops.append(ThreadOp("acquire", session_id, requested))
            slots += 1
        elif kind == "join":
            ops.append(ThreadOp("join", session_id, target))
            slots += 1
        elif kind == "query":
            ops.append(
                ThreadOp("query", session_id, draw(st.sampled_from([None, target])))
            )
        elif kind == "replica":
            version = Version(draw(st.integers(1, 4)), draw(st.integers(1, 2)))
            ops.append(ThreadOp("replica", session_id, target, version=version))
        else:  # advance: by a half-period, so every tick is landed on
            ops.append(ThreadOp("advance", delta_ns=HALF_PERIOD_NS))
    return tuple(ops)


@st.composite
def scenarios(
    draw: st.DrawFn,
    threads_max: int,
    ops_max: int,
    reapings: Sequence[Reaping] = ("runtime_reaper",),
) -> Scenario:
    """Scenarios of 2 to `threads_max` threads with up to `ops_max` steps each.

    `reapings`: the clock variants the build can make (manual ones only on
    a source tree with the manual clock).
    """
    mode = draw(st.sampled_from([Mode.HARD, Mode.SOFT]))
    max_entries = draw(st.sampled_from([1, 2, 64]))
    reaping = draw(st.sampled_from(reapings))
    config = AffinityConfig(
        ttl_ns=TTL_NS, mode=mode, max_entries=max_entries, reaping=reaping
    )
    threads = draw(st.integers(2, threads_max))
    programs = tuple(
        _program(draw, draw(st.integers(1, ops_max)), advances=thread == 0)
        for thread in range(threads)
    )
    seed = draw(st.integers(0, 2**64 - 1))
    return Scenario(config, programs, seed)


Runner = Callable[
    [AffinityConfig, Sequence[Sequence[ThreadOp]], int, Sequence[str]], History
]
"""Runs one scenario's programs (the crate's driver, or a canary's)."""
