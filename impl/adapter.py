"""The adapter: the crate's tables behind the model's Protocols.

This is the only module that imports the compiled `impl._native` extension. It
converts Python values to the binding's tuples and back, maps the binding's
exceptions onto `model.errors`, and hides one nondeterminism of the crate:

* Sequence numbers. A runtime-clock table starts its version sequence at the
  UNIX time in nanoseconds (the wall clock). Right after construction the
  adapter calls `observe_replica_sequence(SEQUENCE_OFFSET)`, which moves the
  crate's next sequence to exactly `SEQUENCE_OFFSET + 1`, and reports every
  sequence shifted down by `SEQUENCE_OFFSET` (and shifts replica sequences up),
  so the model sees local sequences 1, 2, 3, ... as on a manual-clock table.
  `SEQUENCE_OFFSET` (2**62) exceeds the wall clock in nanoseconds until 2116.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Final

from impl import _native
from model.affinity.api import AffinityApi
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
    Mode,
    Published,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)
from model.errors import (
    AffinityError,
    DroppedError,
    HandleError,
    InvalidArgumentError,
    ResourceExhaustedError,
    RustPanicError,
    UnsupportedError,
)

CRATE_VERSION: Final[str] = _native.CRATE_VERSION
CRATE_SOURCE: Final[str] = _native.CRATE_SOURCE
HAS_MANUAL_CLOCK: Final[bool] = _native.HAS_MANUAL_CLOCK
CLOCK_NS_MAX: Final[int] = _native.CLOCK_NS_MAX
SEQUENCE_OFFSET: Final[int] = 2**62
"""Crate sequence = model sequence + SEQUENCE_OFFSET (see the module docstring)."""
SEQUENCE_MODEL_MAX: Final[int] = 2**64 - 1 - SEQUENCE_OFFSET
"""The largest model-side sequence that maps onto a crate `u64`."""

_ERRORS: Final[tuple[tuple[type[BaseException], Callable[[str], Exception]], ...]] = (
    (_native.InvalidArgument, InvalidArgumentError),
    (_native.ResourceExhausted, ResourceExhaustedError),
    (_native.Dropped, DroppedError),
    (_native.HandleError, HandleError),
    (_native.RustPanic, RustPanicError),
)


@contextmanager
def _translated() -> Iterator[None]:
    """Re-raise the binding's exceptions as `model.errors` classes."""
    try:
        yield
    except _native.AffinityError as error:
        for native, ours in _ERRORS:
            if isinstance(error, native):
                raise ours(str(error)) from error
        raise AffinityError(str(error)) from error
    except (_native.HandleError, _native.RustPanic) as error:
        for native, ours in _ERRORS:
            if isinstance(error, native):
                raise ours(str(error)) from error
        raise
    except OverflowError as error:
        raise InvalidArgumentError(
            f"value out of the crate's range: {error}"
        ) from error


def _target_out(target: Target) -> tuple[int, int | None]:
    return (target.worker, target.rank)


def _target_in(raw: tuple[int, int | None]) -> Target:
    return Target(worker=raw[0], rank=raw[1])


def _sequence_in(crate_sequence: int) -> int:
    return crate_sequence - SEQUENCE_OFFSET


def _new_table(config: AffinityConfig, *, manual: bool) -> _native.RuntimeAffinityTable:
    """The binding's table for `config`: manual clock or paused runtime clock."""
    fields = (
        config.ttl_ns,
        str(config.mode),
        config.max_entries,
        config.max_session_id_bytes,
    )
    if manual:
        return _native.RuntimeAffinityTable.manual(*fields, config.instant_range_ns)
    return _native.RuntimeAffinityTable(*fields)


@dataclass(frozen=True)
class SinkRead:
    """What a sink that calls back into its table read inside one `publish`."""

    session_id: str
    target: Target | None
    leases: int | None


class NativeAffinity:
    """`SessionAffinity::with_config` of the pinned crate, under a paused clock."""

    def __init__(self, config: AffinityConfig) -> None:
        """Build the crate's runtime-clock table at clock time 0."""
        manual = config.clock == "manual"
        if manual and not HAS_MANUAL_CLOCK:
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} has no manual clock; "
                f"reaping {config.reaping!r} needs a source tree that has one"
            )
        self._config = config
        with _translated():
            self._table = _new_table(config, manual=manual)
            self._table.observe_replica_sequence(SEQUENCE_OFFSET)

    @property
    def config(self) -> AffinityConfig:
        """The configuration the table was built with."""
        return self._config

    @property
    def now_ns(self) -> int:
        """The paused Tokio clock, nanoseconds since construction."""
        return self._table.now_ns

    def advance_clock(self, now_ns: int) -> None:
        """Move the table's clock to `now_ns`.

        A runtime table: the paused Tokio clock moves and the reaper runs on
        the way. A manual table: the crate's `advance_clock(origin + now_ns)`.
        """
        if now_ns < 0:  # the binding counts nanoseconds in a u64
            raise InvalidArgumentError("affinity clock cannot move backwards")
        with _translated():
            self._table.advance_clock(now_ns)

    def crate_advance_clock(self, now_ns: int) -> None:
        """The crate's `advance_clock` on either kind of table."""
        if not HAS_MANUAL_CLOCK:
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} has no advance_clock"
            )
        if now_ns < 0:
            raise InvalidArgumentError("affinity clock cannot move backwards")
        with _translated():
            self._table.crate_advance_clock(now_ns)

    def try_acquire(self, session_id: str, requested: Target | None) -> AcquireStep:
        """`SessionAffinity::try_acquire`."""
        raw = None if requested is None else _target_out(requested)
        with _translated():
            kind, handle, target = self._table.try_acquire(session_id, raw)
        if kind == "init":
            if target is not None:
                raise AssertionError(f"Hold::target of an initialization is {target}")
            return Initialize(handle=handle)
        if kind == "bound":
            if target is None:
                raise AssertionError("Hold::target of a bound hold is None")
            return Bound(handle=handle, target=_target_in(target))
        return Wait(waiter=handle)

    def join_initializing(self, session_id: str, target: Target) -> int | None:
        """`SessionAffinity::join_initializing`."""
        with _translated():
            return self._table.join_initializing(session_id, _target_out(target))

    def commit(self, handle: int, dispatched: Target) -> int:
        """`SessionAffinity::commit`."""
        with _translated():
            return self._table.commit(handle, _target_out(dispatched))

    def abort(self, handle: int) -> None:
        """Drop an `AffinityInitialization`."""
        with _translated():
            self._table.abort(handle)

    def release(self, handle: int) -> None:
        """Drop a bound hold's or a commit's `AffinityLease`."""
        with _translated():
            self._table.release(handle)

    def invalidate(self, handle: int) -> None:
        """`Hold::invalidate` / `AffinityLease::invalidate`."""
        with _translated():
            self._table.invalidate(handle)

    def waiter_done(self, waiter: int) -> bool:
        """Poll a `Wait` once, without blocking."""
        with _translated():
            return self._table.waiter_done(waiter)

    def query_target(self, session_id: str, requested: Target | None) -> Target | None:
        """`SessionAffinity::query_target`."""
        raw = None if requested is None else _target_out(requested)
        with _translated():
            found = self._table.query_target(session_id, raw)
        return None if found is None else _target_in(found)

    def apply_replica_update(
        self, session_id: str, target: Target, version: Version
    ) -> ReplicaOutcome:
        """`SessionAffinity::apply_replica_update`."""
        crate_version = (version.sequence + SEQUENCE_OFFSET, version.writer)
        with _translated():
            outcome = self._table.apply_replica_update(
                session_id, _target_out(target), crate_version
            )
        return ReplicaOutcome(outcome)

    def observe_replica_sequence(self, sequence: int) -> None:
        """`SessionAffinity::observe_replica_sequence`."""
        with _translated():
            self._table.observe_replica_sequence(sequence + SEQUENCE_OFFSET)

    def enable_replication(self, writer_id: int) -> bool:
        """`SessionAffinity::enable_replication` with a recording sink."""
        with _translated():
            return self._table.enable_replication(writer_id)

    def drain_published(self) -> list[Published]:
        """Publications the sink recorded since the last drain."""
        return [
            Published(
                session_id=session_id,
                target=_target_in(target),
                version=Version(sequence=_sequence_in(sequence), writer=writer),
            )
            for session_id, target, (sequence, writer) in self._table.drain_published()
        ]

    def enable_replication_reading(self, writer_id: int) -> bool:
        """Replication with a sink that reads the session back inside `publish`.

        A user's `AffinityReplicaSink` may call into the table it is installed
        on; a crate that publishes while holding the session's entry deadlocks.
        """
        with _translated():
            return self._table.enable_replication_reading(writer_id)

    def drain_sink_reads(self) -> list[SinkRead]:
        """What the reading sink saw inside each `publish`, in order."""
        return [
            SinkRead(
                session_id=session_id,
                target=None if target is None else _target_in(target),
                leases=leases,
            )
            for session_id, target, leases in self._table.drain_sink_reads()
        ]

    def entry_count(self) -> int:
        """`SessionAffinity::entry_count` (feature `testing`)."""
        with _translated():
            return self._table.entry_count()

    def lease_count(self, session_id: str) -> int | None:
        """`SessionAffinity::lease_count` (feature `testing`)."""
        with _translated():
            return self._table.lease_count(session_id)

    def next_version(self) -> Version:
        """`SessionAffinity::next_version` (feature `testing`)."""
        with _translated():
            sequence, writer = self._table.next_version()
        return Version(sequence=_sequence_in(sequence), writer=writer)

    def subagent_group_affinity_id(self, parent_session_id: str) -> str:
        """The crate's `subagent_group_affinity_id`, where the target has it."""
        return subagent_group_affinity_id(parent_session_id)

    def drop_table(self) -> None:
        """Drop the binding's `SessionAffinity`; handles keep weak references."""
        with _translated():
            self._table.drop_table()

    def expire_for_test(self, session_id: str) -> None:
        """`SessionAffinity::expire_for_test`; the crate panics on misuse."""
        with _translated():
            self._table.expire_for_test(session_id)

    def live_handles(self) -> list[tuple[int, str]]:
        """Live handles by number: `init`, `bound`, `lease` or `waiter`."""
        return sorted(self._table.live_handles())

    def runtime_tasks(self) -> int:
        """Tasks alive in the table's runtime after ready ones ran: the reaper.

        Not part of `AffinityApi`: the model has no runtime. The crate's
        reaper is the only task the binding lets run there.
        """
        with _translated():
            return self._table.runtime_tasks()

    def ttl_ns(self) -> int:
        """`SessionAffinity::ttl()` in nanoseconds (not in `AffinityApi`)."""
        with _translated():
            return self._table.ttl_ns()

    def mode(self) -> Mode:
        """`SessionAffinity::mode()` (not in `AffinityApi`)."""
        with _translated():
            return Mode(self._table.mode())

    def downgrade(self) -> int:
        """`SessionAffinity::downgrade()`: the number of a weak reference."""
        with _translated():
            return self._table.downgrade()

    def upgrade(self, weak: int) -> bool:
        """`WeakSessionAffinity::upgrade()` of weak reference `weak` yields a table."""
        with _translated():
            return self._table.upgrade(weak)


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


def _call_in(raw_call: _RawCall) -> Op:
    """The call the driver recorded, in the model's vocabulary."""
    kind, session_id, raw_target, raw_handle, raw_version, now_ns = raw_call
    target = None if raw_target is None else _target_in(raw_target)
    handle = raw_handle or 0
    dispatched = target or Target(0)
    match kind:
        case "acquire":
            return Acquire(session_id, target)
        case "join":
            return Join(session_id, dispatched)
        case "commit":
            return Commit(handle, dispatched)
        case "abort":
            return Abort(handle)
        case "release":
            return Release(handle)
        case "invalidate":
            return Invalidate(handle)
        case "poll":
            return PollWaiter(handle)
        case "query":
            return Query(session_id, target)
        case "replica":
            sequence, writer = raw_version or (SEQUENCE_OFFSET, 0)
            version = Version(_sequence_in(sequence), writer)
            return ApplyReplica(session_id, dispatched, version)
        case _:
            return Advance(now_ns)


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


def subagent_group_affinity_id(parent_session_id: str) -> str:
    """`subagent_group_affinity_id(parent)`; UnsupportedError where it is absent."""
    function = getattr(_native, "subagent_group_affinity_id", None)
    if function is None:
        raise UnsupportedError(
            f"dynamo-kv-router {CRATE_VERSION} has no subagent_group_affinity_id "
            f"(asked for {parent_session_id!r})"
        )
    with _translated():
        return str(function(parent_session_id))


def raw_next_sequence_probe(config: AffinityConfig) -> int:
    """A fresh table's first local sequence, without the adapter's offset.

    Used by the "Production under test" checks and the capability probe: the
    runtime table seeds its sequence from the wall clock, a manual-clock table
    (where there is one) from 1.
    """
    with _translated():
        table = _new_table(config, manual=config.clock == "manual")
        sequence, _writer = table.next_version()
    return sequence


def parse_mode(text: str) -> Mode:
    """`SessionAffinityMode::from_str(text)`: the mode, or the crate's refusal."""
    with _translated():
        return Mode(_native.RuntimeAffinityTable.parse_mode(text))


def crate_default_config(ttl_ns: int) -> AffinityConfig:
    """`SessionAffinityConfig::new(ttl)` as the model's configuration.

    The machines always pass every field, so the crate's own defaults (mode,
    `MAX_SESSION_AFFINITY_ENTRIES`, `MAX_SESSION_AFFINITY_ID_BYTES`) are read
    only here.
    """
    with _translated():
        mode, max_entries, max_id_bytes = _native.RuntimeAffinityTable.crate_defaults(
            ttl_ns
        )
    return AffinityConfig(
        ttl_ns=ttl_ns,
        mode=Mode(mode),
        max_entries=max_entries,
        max_session_id_bytes=max_id_bytes,
    )


# ---- policy queue adapter (below this line) ----
#
# `NativePolicyQueue` puts the binding's `PolicyQueueTable` behind
# `model.queue_api.PolicyQueueApi`. The binding speaks tuples; this section
# turns them into the model's value types and the binding's exceptions into
# `model.errors`. Imports sit here, not at the top, so the affinity half above
# and this half can be edited independently.

from model.errors import PolicyConfigError, QueueUsageError  # noqa: E402
from model.queue.api import PolicyQueueApi  # noqa: E402
from model.queue.ops import Enqueue  # noqa: E402
from model.queue.types import (  # noqa: E402
    ClassConfig,
    ClassStats,
    Dispatch,
    LimitKind,
    QueuedItem,
    QueuePolicy,
    Rejection,
    TokenSnapshot,
    Worker,
)

HAS_QUEUE_RECHECK: Final[bool] = bool(_native.HAS_QUEUE_RECHECK)
"""Built with feature `queue-recheck` (a crate whose recheck calls are public)."""

_QUEUE_POLICIES: Final[dict[str, QueuePolicy]] = {
    "fcfs": "fcfs",
    "wspt": "wspt",
    "lcfs": "lcfs",
}
_LIMIT_KINDS: Final[dict[str, LimitKind]] = {
    "requests": "requests",
    "raw_isl_tokens": "raw_isl_tokens",
    "cached_tokens": "cached_tokens",
}


@contextmanager
def _queue_errors() -> Iterator[None]:
    """Re-raise the queue binding's exceptions as `model.errors` classes."""
    try:
        yield
    except _native.PolicyConfigError as error:
        stage, message = error.args
        raise PolicyConfigError(str(stage), str(message)) from error
    except _native.QueueUsageError as error:
        raise QueueUsageError(str(error)) from error
    except _native.RustPanic as error:
        raise RustPanicError(str(error)) from error
    except OverflowError as error:
        # PyO3 refuses ints outside usize/u64/u32 before the crate is called.
        raise QueueUsageError(f"value out of the crate's range: {error}") from error


def _worker_in(raw: tuple[int, int] | None) -> Worker | None:
    return None if raw is None else Worker(worker_id=int(raw[0]), dp_rank=int(raw[1]))


def _item_in(
    raw: tuple[int, int, tuple[int, int] | None, int, int, int, int],
) -> QueuedItem:
    class_index, payload, placement, raw_tokens, cached, uncached, cost = raw
    return QueuedItem(
        class_index=int(class_index),
        payload=int(payload),
        placement=_worker_in(placement),
        raw_isl_tokens=int(raw_tokens),
        cached_tokens=int(cached),
        uncached_tokens=int(uncached),
        scheduling_cost_tokens=int(cost),
    )


def token_snapshot(raw_isl_tokens: int, cached_tokens: int) -> TokenSnapshot:
    """`QueueSnapshot::new(raw, cached)` of the crate."""
    with _queue_errors():
        raw, cached, uncached, cost = _native.PolicyQueueTable.snapshot(
            raw_isl_tokens, cached_tokens
        )
    return TokenSnapshot(int(raw), int(cached), int(uncached), int(cost))


def _limit(raw: int | None) -> int | None:
    return None if raw is None else int(raw)


class NativePolicyQueue:
    """`PolicyQueue<Ticket>` of the pinned crate, behind `PolicyQueueApi`."""

    def __init__(self, table: _native.PolicyQueueTable) -> None:
        """Wrap a binding table; use `from_yaml`, `from_path` or `synthetic`."""
        self._table = table

    @classmethod
    def from_yaml(
        cls,
        yaml_text: str,
        model_name: str | None = None,
        fallback_threshold: float | None = None,
        fallback_policy: QueuePolicy = "fcfs",
    ) -> NativePolicyQueue:
        """`RouterPolicyConfig::from_yaml` + `resolve_profile` + `PolicyQueue::new`."""
        with _queue_errors():
            table = _native.PolicyQueueTable.from_yaml(
                yaml_text, model_name, fallback_threshold, fallback_policy
            )
        return cls(table)

    @classmethod
    def from_path(
        cls,
        path: str,
        model_name: str | None = None,
        fallback_threshold: float | None = None,
        fallback_policy: QueuePolicy = "fcfs",
    ) -> NativePolicyQueue:
        """`RouterPolicyConfig::from_path` + `resolve_profile` + `PolicyQueue::new`."""
        with _queue_errors():
            table = _native.PolicyQueueTable.from_path(
                path, model_name, fallback_threshold, fallback_policy
            )
        return cls(table)

    @classmethod
    def synthetic(
        cls, threshold: float | None, queue_policy: QueuePolicy
    ) -> NativePolicyQueue:
        """`PolicyProfile::synthetic(threshold, policy)` + `PolicyQueue::new`."""
        with _queue_errors():
            table = _native.PolicyQueueTable.synthetic(threshold, queue_policy)
        return cls(table)

    def class_count(self) -> int:
        """`PolicyQueue::class_count`."""
        with _queue_errors():
            return int(self._table.class_count())

    def class_config(self, class_index: int) -> ClassConfig:
        """`PolicyQueue::class_config(i)`, queue-relevant fields."""
        with _queue_errors():
            name, policy, quantum, requests, raw, cached = self._table.class_config(
                class_index
            )
        return ClassConfig(
            name=str(name),
            queue_policy=_QUEUE_POLICIES[policy],
            quantum=int(quantum),
            request_queue_limit_per_worker=_limit(requests),
            raw_isl_token_queue_limit_per_worker=_limit(raw),
            cached_token_queue_limit_per_worker=_limit(cached),
        )

    def enqueue(self, op: Enqueue) -> Rejection | None:
        """`PolicyQueue::enqueue` with `QueueSnapshot::new(raw, cached)`."""
        placement = op.placement
        raw_placement = (
            None if placement is None else (placement.worker_id, placement.dp_rank)
        )
        with _queue_errors():
            rejected = self._table.enqueue(
                op.class_index,
                op.worker_count,
                op.raw_isl_tokens,
                op.cached_tokens,
                op.arrival_offset_secs,
                op.priority_jump,
                op.strict_priority,
                raw_placement,
                op.payload,
            )
        if rejected is None:
            return None
        policy_class, kind, current, limit = rejected
        if kind not in _LIMIT_KINDS:
            raise AssertionError(f"the crate names a limit kind {kind!r}")
        return Rejection(
            policy_class=str(policy_class),
            limit_kind=_LIMIT_KINDS[kind],
            current=int(current),
            limit=int(limit),
        )

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        """`PolicyQueue::pop_next` with the predicate `dispatch` describes."""
        saturated = [(w.worker_id, w.dp_rank) for w in sorted(dispatch.saturated)]
        with _queue_errors():
            popped = self._table.pop_next(
                saturated, dispatch.any_dispatchable, sorted(dispatch.paused_classes)
            )
        return None if popped is None else _item_in(popped)

    def retain(self, drop: frozenset[int]) -> None:
        """`PolicyQueue::retain(|payload| !drop.contains(payload))`."""
        with _queue_errors():
            self._table.retain(sorted(drop))

    def pending_count(self) -> int:
        """`PolicyQueue::pending_count`."""
        with _queue_errors():
            return int(self._table.pending_count())

    def class_stats(self, class_index: int) -> ClassStats:
        """`PolicyQueue::class_stats(i)`."""
        with _queue_errors():
            requests, raw, cached = self._table.class_stats(class_index)
        return ClassStats(
            requests=int(requests), raw_isl_tokens=int(raw), cached_tokens=int(cached)
        )

    def has_backlog(self, class_index: int) -> bool:
        """`PolicyQueue::has_backlog(i)`."""
        with _queue_errors():
            return bool(self._table.has_backlog(class_index))

    def entries(self) -> list[QueuedItem]:
        """`PolicyQueue::entries()`, sorted by `QueuedItem.sort_key`."""
        with _queue_errors():
            raw_items = self._table.entries()
        return sorted((_item_in(raw) for raw in raw_items), key=QueuedItem.sort_key)

    def entries_equal(self) -> list[list[bool]]:
        """The crate's `==` between every pair of queued entries.

        Rows and columns follow one order: the binding's sort of `entries()`.
        """
        with _queue_errors():
            return [[bool(cell) for cell in row] for row in self._table.entries_equal()]

    def drain(self) -> list[QueuedItem]:
        """`PolicyQueue::drain()`, sorted; the table is consumed."""
        with _queue_errors():
            raw_items = self._table.drain()
        return sorted((_item_in(raw) for raw in raw_items), key=QueuedItem.sort_key)

    def recheck_worker(self, worker: Worker) -> None:
        """`PolicyQueue::recheck_worker`: only in builds where it is public."""
        if not HAS_QUEUE_RECHECK:
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} keeps recheck_worker pub(crate)"
            )
        with _queue_errors():
            self._table.recheck_worker((worker.worker_id, worker.dp_rank))

    def recheck_all_workers(self) -> None:
        """`PolicyQueue::recheck_all_workers`: only in builds where it is public."""
        if not HAS_QUEUE_RECHECK:
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} keeps recheck_all_workers pub(crate)"
            )
        with _queue_errors():
            self._table.recheck_all_workers()


def _conforms(queue: NativePolicyQueue) -> PolicyQueueApi:
    """Let mypy prove that the adapter satisfies `PolicyQueueApi`."""
    return queue


def _affinity_conforms(table: NativeAffinity) -> AffinityApi:
    """Let mypy prove that the adapter satisfies `AffinityApi`."""
    return table
