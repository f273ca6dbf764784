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

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, TypeVar

from impl import _native
from model.errors import (
    AffinityError,
    DroppedError,
    HandleError,
    InvalidArgumentError,
    ResourceExhaustedError,
    RustPanicError,
    UnsupportedError,
)
from model.types import (
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

CRATE_VERSION: Final[str] = _native.CRATE_VERSION
CRATE_SOURCE: Final[str] = _native.CRATE_SOURCE
HAS_MANUAL_CLOCK: Final[bool] = _native.HAS_MANUAL_CLOCK
CLOCK_NS_MAX: Final[int] = _native.CLOCK_NS_MAX
SEQUENCE_OFFSET: Final[int] = 2**62
"""Crate sequence = model sequence + SEQUENCE_OFFSET (see the module docstring)."""
SEQUENCE_MODEL_MAX: Final[int] = 2**64 - 1 - SEQUENCE_OFFSET
"""The largest model-side sequence that maps onto a crate `u64`."""

_T = TypeVar("_T")

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
        raise InvalidArgumentError(f"value out of the crate's range: {error}") from error


def _target_out(target: Target) -> tuple[int, int | None]:
    return (target.worker, target.rank)


def _target_in(raw: tuple[int, int | None]) -> Target:
    return Target(worker=raw[0], rank=raw[1])


def _sequence_in(crate_sequence: int) -> int:
    return crate_sequence - SEQUENCE_OFFSET


class NativeAffinity:
    """`SessionAffinity::with_config` of the pinned crate, under a paused clock."""

    def __init__(self, config: AffinityConfig) -> None:
        """Build the crate's runtime-clock table at clock time 0."""
        if config.reaping != "runtime_reaper":
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} has no manual clock; "
                f"reaping {config.reaping!r} needs a source tree that has one"
            )
        self._config = config
        with _translated():
            self._table = _native.RuntimeAffinityTable(
                config.ttl_ns,
                config.mode is Mode.SOFT,
                config.max_entries,
                config.max_session_id_bytes,
            )
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
        """Move the paused clock to `now_ns`, letting the reaper run on the way."""
        if now_ns < 0:
            raise InvalidArgumentError("affinity clock cannot move backwards")
        with _translated():
            self._table.advance_clock(now_ns)

    def try_acquire(self, session_id: str, requested: Target | None) -> AcquireStep:
        """`SessionAffinity::try_acquire`."""
        raw = None if requested is None else _target_out(requested)
        with _translated():
            kind, handle, target = self._table.try_acquire(session_id, raw)
        if kind == "init":
            return Initialize(handle=handle)
        if kind == "bound":
            assert target is not None
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
        """Not in the pinned crate: `subagent_group_affinity_id` arrived later."""
        raise UnsupportedError(
            f"dynamo-kv-router {CRATE_VERSION} has no subagent_group_affinity_id "
            f"(asked for {parent_session_id!r})"
        )

    def drop_table(self) -> None:
        """Drop the binding's `SessionAffinity`; handles keep weak references."""
        with _translated():
            self._table.drop_table()

    def expire_for_test(self, session_id: str) -> None:
        """`SessionAffinity::expire_for_test`; the crate panics on misuse."""
        with _translated():
            self._table.expire_for_test(session_id)

    def live_handles(self) -> list[tuple[int, str]]:
        """The binding's live handles and their kinds, by number."""
        return self._table.live_handles()


def raw_next_sequence_probe(config: AffinityConfig) -> int:
    """A fresh table's first local sequence, without the adapter's offset.

    Used by the "Production under test" checks: the runtime table seeds its
    sequence from the wall clock, a manual-clock table from 1.
    """
    with _translated():
        table = _native.RuntimeAffinityTable(
            config.ttl_ns,
            config.mode is Mode.SOFT,
            config.max_entries,
            config.max_session_id_bytes,
        )
        sequence, _writer = table.next_version()
    return sequence


# ---- policy queue adapter (below this line) ----
