"""The one interface both systems under test implement.

`model.affinity.ModelAffinity` (the reference) and `impl.adapter.CrateAffinity`
(the crate) satisfy `AffinityApi` structurally; mypy proves it. Machines, replay
and exploration talk only to this Protocol, so model-vs-model runs anywhere and
model-vs-crate is the real check.

Handles: every value the crate hands out by move (an initialization, a bound
hold, a lease, a waiter) is a positive integer, numbered from 1 in creation
order by both sides. A consumed or unknown handle raises `HandleError`.
"""

from __future__ import annotations

from typing import Protocol

from model.affinity.types import (
    AcquireStep,
    AffinityConfig,
    Published,
    ReplicaOutcome,
    Target,
    Version,
)


class AffinityApi(Protocol):
    """`SessionAffinity` as seen from Python."""

    @property
    def config(self) -> AffinityConfig:
        """The configuration the table was built with."""
        ...

    @property
    def now_ns(self) -> int:
        """The table's clock, nanoseconds since construction."""
        ...

    def advance_clock(self, now_ns: int) -> None:
        """Move the clock to `now_ns`; backwards or out-of-range is an error."""
        ...

    def crate_advance_clock(self, now_ns: int) -> None:
        """The crate's `advance_clock` itself: a runtime-clock table refuses it."""
        ...

    def try_acquire(self, session_id: str, requested: Target | None) -> AcquireStep:
        """`try_acquire`: initialize, take a bound lease, or wait."""
        ...

    def join_initializing(self, session_id: str, target: Target) -> int | None:
        """`join_initializing`: bind another request's initialization now."""
        ...

    def commit(self, handle: int, dispatched: Target) -> int:
        """`commit(hold, dispatched)`: consume a hold, return a lease handle."""
        ...

    def abort(self, handle: int) -> None:
        """Drop an uncommitted initialization."""
        ...

    def release(self, handle: int) -> None:
        """Drop a bound hold or a lease."""
        ...

    def invalidate(self, handle: int) -> None:
        """`invalidate` a bound hold or a lease (the worker is gone)."""
        ...

    def waiter_done(self, waiter: int) -> bool:
        """Report whether this `Wait` was notified (commit, abort or join)."""
        ...

    def query_target(self, session_id: str, requested: Target | None) -> Target | None:
        """`query_target`: the live binding, read-only."""
        ...

    def apply_replica_update(
        self, session_id: str, target: Target, version: Version
    ) -> ReplicaOutcome:
        """`apply_replica_update`: merge a replica's binding."""
        ...

    def observe_replica_sequence(self, sequence: int) -> None:
        """`observe_replica_sequence`: local versions move past `sequence`."""
        ...

    def enable_replication(self, writer_id: int) -> bool:
        """`enable_replication` with a recording sink; false if already set."""
        ...

    def drain_published(self) -> list[Published]:
        """What the sink received since the last drain, in order."""
        ...

    def entry_count(self) -> int:
        """`entry_count()` test hook: entries, counted or not yet reaped."""
        ...

    def lease_count(self, session_id: str) -> int | None:
        """`lease_count(id)` test hook: None without an entry."""
        ...

    def next_version(self) -> Version:
        """`next_version()` test hook: consumes one sequence number."""
        ...

    def subagent_group_affinity_id(self, parent_session_id: str) -> str:
        """`subagent_group_affinity_id`: a sub-agent group's session key."""
        ...

    def drop_table(self) -> None:
        """Drop the table; handles outlive it as weak references."""
        ...

    def live_handles(self) -> list[tuple[int, str]]:
        """Live handles by number: `init`, `bound`, `lease` or `waiter`."""
        ...
