"""`CrateAffinity`: the crate's `SessionAffinity` (`impl/src/affinity.rs`).

Also the crate's free functions and defaults the suite reads: the group key,
the raw sequence probe, mode parsing and `SessionAffinityConfig::new`.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from model.affinity.api import AffinityApi
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
    InvalidArgumentError,
    UnsupportedError,
)


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


class CrateAffinity:
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
        """The crate's `subagent_group_affinity_id`, where the build has it."""
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


def _affinity_conforms(table: CrateAffinity) -> AffinityApi:
    """Let mypy prove that the adapter satisfies `AffinityApi`."""
    return table
