"""`run_concurrent`: the binding's multi-threaded driver (`impl/src/concurrent.rs`).

The driver records each call with its instants; this module reads the record
back in the model's vocabulary as a `History`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from impl import _native
from impl.adapter.lib import (
    CRATE_VERSION,
    HAS_MANUAL_CLOCK,
    SEQUENCE_OFFSET,
    _sequence_in,
    _target_in,
    _target_out,
    _translated,
)
from model.affinity.history import Census, Event, History, ThreadOp
from model.affinity.ops import (
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    Invalidate,
    Join,
    Op,
    Outcome,
    PollWaiter,
    Query,
    Release,
    Value,
)
from model.affinity.types import (
    AcquireStep,
    AffinityConfig,
    Bound,
    Initialize,
    Published,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)
from model.errors import (
    UnsupportedError,
)

CONCURRENT_THREADS_MAX: Final[int] = _native.CONCURRENT_THREADS_MAX
"""Most threads one concurrent run may have (a limit of the binding's own)."""
CONCURRENT_OPS_MAX: Final[int] = _native.CONCURRENT_OPS_MAX
"""Most steps one thread's program may have (a limit of the binding's own)."""

_RawTarget = tuple[int, int | None]
_RawCall = tuple[str, str, _RawTarget | None, int | None, tuple[int, int] | None, int]
_RawResult = tuple[str, _RawTarget | None, int | None]
_RawPublished = tuple[int, int, str, _RawTarget, tuple[int, int]]
_ERROR_KINDS: Final[frozenset[str]] = frozenset(
    {"InvalidArgument", "ResourceExhausted", "Dropped"}
)


def _thread_op_out(
    op: ThreadOp,
) -> tuple[str, str, _RawTarget | None, int, tuple[int, int] | None, int]:
    version = op.version
    return (
        op.kind,
        op.session_id,
        None if op.target is None else _target_out(op.target),
        op.slot,
        None
        if version is None
        else (version.sequence + SEQUENCE_OFFSET, version.writer),
        op.delta_ns,
    )


def _acquired(name: str, target: _RawTarget | None, new: int | None) -> AcquireStep:
    """The `AcquireStep` a recorded acquisition returned."""
    assert new is not None, "the driver numbers every handle it records"
    if name == "init":
        return Initialize(new)
    if name == "wait":
        return Wait(new)
    assert target is not None, "a bound acquisition records its target"
    return Bound(new, _target_in(target))


_HANDLE_CALLS: Final[dict[str, Callable[[int], Op]]] = {
    "abort": Abort,
    "release": Release,
    "invalidate": Invalidate,
    "poll": PollWaiter,
}
"""Recorded calls that name only a handle, by the driver's name for them."""


def _call_in(raw_call: _RawCall) -> Op:
    """The call the driver recorded, in the model's vocabulary.

    A name the driver may record but this adapter cannot read (`drop`, when
    dropping a handle panicked, says not which of abort, release or
    invalidate it was) is a `ValueError`, never some other operation.
    """
    kind, session_id, raw_target, raw_handle, raw_version, now_ns = raw_call
    target = None if raw_target is None else _target_in(raw_target)
    handle = raw_handle or 0
    dispatched = target or Target(0)
    if kind in _HANDLE_CALLS:
        return _HANDLE_CALLS[kind](handle)
    match kind:
        case "acquire":
            return Acquire(session_id, target)
        case "join":
            return Join(session_id, dispatched)
        case "commit":
            return Commit(handle, dispatched)
        case "query":
            return Query(session_id, target)
        case "replica":
            sequence, writer = raw_version or (SEQUENCE_OFFSET, 0)
            version = Version(_sequence_in(sequence), writer)
            return ApplyReplica(session_id, dispatched, version)
        case "advance":
            return Advance(now_ns)
        case _:
            raise ValueError(
                f"the driver recorded a call this adapter cannot read: {kind!r}"
            )


def _event_in(raw_call: _RawCall, raw_result: _RawResult) -> tuple[Op, Outcome]:
    """The driver's record of one call and its result, in the model's vocabulary."""
    op = _call_in(raw_call)
    name, result_target, new = raw_result
    if name.startswith("RustPanic"):
        return op, Outcome(error="RustPanic", message=name)
    if name in _ERROR_KINDS:
        return op, Outcome(error=name)
    value: Value
    match op:
        case Acquire():
            value = _acquired(name, result_target, new)
        case Join() | Commit():
            value = new
        case PollWaiter():
            value = name == "true"
        case Query():
            value = None if result_target is None else _target_in(result_target)
        case ApplyReplica():
            value = ReplicaOutcome(name)
        case _:
            value = None
    return op, Outcome(value=value)


CONCURRENT_WRITER_ID: Final[int] = 9
"""The writer id of the recording sink a concurrent run installs; the
scenarios' replica updates come from other writers."""
CONCURRENT_CANARIES: Final[tuple[str, ...]] = (
    "split_commit",
    "torn_version",
    "lost_publication",
    "stray_version",
)
"""The driver's deliberately broken variants (`impl/src/concurrent.rs`)."""


def _attach(events: list[Event], raw_published: Sequence[_RawPublished]) -> list[Event]:
    """Each publication on the call of its thread whose interval holds its tick."""
    by_call: dict[int, list[tuple[int, Published]]] = {}
    for thread, tick, session_id, raw_target, (sequence, writer) in raw_published:
        published = Published(
            session_id, _target_in(raw_target), Version(_sequence_in(sequence), writer)
        )
        owner = next(
            (
                position
                for position, event in enumerate(events)
                if event.thread == thread and event.invoked < tick < event.returned
            ),
            None,
        )
        if owner is None:  # the driver's own invariant, not the crate's
            raise RuntimeError(
                f"thread {thread} published {published} at tick {tick}, "
                "outside every call it made"
            )
        by_call.setdefault(owner, []).append((tick, published))
    attached = list(events)
    for position, found in sorted(by_call.items()):
        ordered = sorted(found, key=lambda item: item[0])
        attached[position] = replace(
            events[position],
            published=tuple(published for _, published in ordered),
            published_at=tuple(tick for tick, _ in ordered),
        )
    return attached


def run_concurrent(
    config: AffinityConfig,
    programs: Sequence[Sequence[ThreadOp]],
    schedule_seed: int,
    sessions: Sequence[str],
    canary: str | None = None,
) -> History:
    """Run one program per thread against one fresh runtime-clock table.

    The GIL is released while the threads run; see `impl/src/concurrent.rs`.
    A manual reaping variant needs a crate with the manual clock. The table
    publishes to a recording sink of writer `CONCURRENT_WRITER_ID`; every
    publication is attached to the call that made it. `sessions` are the ids
    whose `lease_count` and `query_target` the census reads. `canary` may
    name one of `CONCURRENT_CANARIES`.
    """
    manual = config.clock == "manual"
    if manual and not HAS_MANUAL_CLOCK:
        raise UnsupportedError(
            f"dynamo-kv-router {CRATE_VERSION} has no manual clock; "
            f"reaping {config.reaping!r} needs a source tree that has one"
        )
    raw_programs = [[_thread_op_out(op) for op in program] for program in programs]
    with _translated():
        raw_events, now_ns, raw_census, raw_published = _native.run_concurrent_affinity(
            config.ttl_ns,
            str(config.mode),
            config.max_entries,
            config.max_session_id_bytes,
            SEQUENCE_OFFSET,
            CONCURRENT_WRITER_ID,
            raw_programs,
            schedule_seed,
            list(sessions),
            canary,
            manual,
        )
    events = []
    for thread, index, invoked, returned, raw_call, raw_result in raw_events:
        call_op, outcome = _event_in(raw_call, raw_result)
        events.append(Event(thread, index, invoked, returned, call_op, outcome))
    entry_count, lease_counts, raw_targets, (counter, writer) = raw_census
    census = Census(
        now_ns,
        entry_count,
        tuple(lease_counts),
        targets=tuple(
            (session_id, None if raw is None else _target_in(raw))
            for session_id, raw in raw_targets
        ),
        next_version=Version(_sequence_in(counter), writer),
    )
    return History(
        config,
        len(programs),
        tuple(_attach(events, raw_published)),
        census,
        writer_id=CONCURRENT_WRITER_ID,
    )
