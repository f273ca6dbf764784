"""Reference model of the session-affinity table.

A session id maps to one entry. An entry is either *initializing* (one request
owns the right to bind it) or *bound* to a target. The model's state:

* `now_ns` -- the table's clock, nanoseconds since construction.
* `entries` -- session id -> `Initializing` or `Binding`. Every entry counts
  towards `max_entries` until it is removed, expired or not.
* `handles` -- handle number -> what Python holds: an initialization
  (`InitHandle`), a bound hold or a lease (`LeaseHandle`), a waiter (`WaiterHandle`).
* `notified` -- revisions whose waiters have been woken.
* `next_handle` -- the next handle number (from 1, one per handle handed out).
* `next_revision` -- the next entry revision (from 1, one per new entry instance).
  A revision names one entry instance, so a lease of an older instance never
  touches a newer one.
* `next_sequence`, `writer_id` -- local versions are (sequence, writer); the
  sequence starts at 1 and only grows.
* `replicating` -- a replica sink is installed; `published` is what it received.
* `last_reap_ns` -- when idle bindings were last collected (reaping variants).
* `dropped` -- the table itself is gone; handles outlive it harmlessly.

The boundary rule, stated once (`is_expired_at`): a binding with no active
lease is *expired* when `deadline_ns <= now_ns`. Expired bindings are never
served, whether or not they have been collected yet; collection only frees
their slot.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import blake3

from model.affinity.api import AffinityApi
from model.affinity.types import (
    MILLISECOND_NS,
    REAPER_PERIOD_NS_MAX,
    TTL_NS_MAX,
    TTL_NS_MIN,
    TTL_S_MAX,
    U64_MAX,
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
    DroppedError,
    HandleError,
    InvalidArgumentError,
    ResourceExhaustedError,
)

CLOCK_NS_MAX = 2 * TTL_NS_MAX
"""The furthest a table's clock may move from its origin (the binding's limit)."""

GROUP_ID_PREFIX = "\x01sg:"


@dataclass(frozen=True)
class Initializing:
    """A session being bound by the request that holds its initialization."""

    revision: int


@dataclass(frozen=True)
class Binding:
    """A session pinned to `target`."""

    target: Target
    revision: int
    version: Version
    leases: int  # active uses; while > 0 the binding cannot expire
    deadline_ns: int  # with no lease: live while now_ns < deadline_ns


Entry = Initializing | Binding


def is_expired_at(entry: Entry, now_ns: int) -> bool:
    """A binding is expired when no lease holds it and its deadline is not after now."""
    return (
        isinstance(entry, Binding) and entry.leases == 0 and entry.deadline_ns <= now_ns
    )


@dataclass(frozen=True)
class InitHandle:
    """`Hold::Initialize`: commit it or drop it (abort)."""

    session_id: str
    revision: int
    requested: Target | None


@dataclass(frozen=True)
class LeaseHandle:
    """An `AffinityLease`; with `hold_target` set it is a `Hold::Bound` too."""

    session_id: str
    revision: int
    version: Version
    hold_target: Target | None


@dataclass(frozen=True)
class WaiterHandle:
    """`AcquireStep::Wait`: woken with the initialization of `revision`."""

    session_id: str
    revision: int


Handle = InitHandle | LeaseHandle | WaiterHandle


def handle_kind(handle: Handle) -> str:
    """The binding's name for what a handle is: `init`, `bound`, `lease`, `waiter`."""
    match handle:
        case InitHandle():
            return "init"
        case LeaseHandle(hold_target=None):
            return "lease"
        case LeaseHandle():
            return "bound"
    return "waiter"


@dataclass(frozen=True)
class AffinityState:
    """An immutable, hashable snapshot of the model (for invariants and search)."""

    config: AffinityConfig
    now_ns: int
    entries: tuple[tuple[str, Entry], ...]
    handles: tuple[tuple[int, Handle], ...]
    notified: tuple[int, ...]
    next_handle: int
    next_revision: int
    next_sequence: int
    writer_id: int
    replicating: bool
    published: tuple[Published, ...]
    last_reap_ns: int
    dropped: bool

    def entry(self, session_id: str) -> Entry | None:
        """The entry for `session_id`, if any."""
        return dict(self.entries).get(session_id)

    def is_expired(self, entry: Entry) -> bool:
        """Whether `entry` is expired at this snapshot's clock."""
        return is_expired_at(entry, self.now_ns)


def check_ttl(ttl_ns: int) -> None:
    """Reject a TTL outside [1 s, 31,536,000 s] (inclusive, full precision)."""
    if not TTL_NS_MIN <= ttl_ns <= TTL_NS_MAX:
        raise InvalidArgumentError(
            f"session affinity TTL must be between 1 and {TTL_S_MAX} seconds"
        )


def reaper_period_ns(ttl_ns: int) -> int:
    """The reaper's period, min(ttl, 30 s), as Tokio's 1 ms timer grid rounds it."""
    period_ns = min(ttl_ns, REAPER_PERIOD_NS_MAX)
    return -(-period_ns // MILLISECOND_NS) * MILLISECOND_NS


def cleanup_period_ns(ttl_ns: int) -> int:
    """A manual table's cleanup cadence, min(ttl, 30 s), exact (no timer grid)."""
    return min(ttl_ns, REAPER_PERIOD_NS_MAX)


def group_affinity_id(parent_session_id: str) -> str:
    """A sub-agent group's key: a prefix no header can carry, then blake3 in hex."""
    digest = blake3.blake3(parent_session_id.encode()).hexdigest()
    return GROUP_ID_PREFIX + digest


def check_bound_target(
    session_id: str, bound: Target, requested: Target | None
) -> None:
    """An explicit pin must agree with the binding: same worker, no new rank."""
    if requested is None:
        return
    if bound.worker != requested.worker:
        raise InvalidArgumentError(
            f"session {session_id} is bound to worker {bound.worker}, "
            f"not {requested.worker}"
        )
    if bound.rank is None and requested.rank is not None:
        raise InvalidArgumentError(
            f"session {session_id} has worker-only affinity and cannot add "
            f"DP rank {requested.rank}"
        )
    if bound.rank is not None and requested.rank not in (None, bound.rank):
        raise InvalidArgumentError(
            f"session {session_id} is bound to DP rank {bound.rank}, "
            f"not {requested.rank}"
        )


def check_dispatch_target(session_id: str, bound: Target, dispatched: Target) -> None:
    """Hard mode: a bound session must run where it is bound (rank included)."""
    if bound.worker != dispatched.worker:
        raise InvalidArgumentError(
            f"session {session_id} is bound to worker {bound.worker}, "
            f"not {dispatched.worker}"
        )
    if bound.rank is None or dispatched.rank == bound.rank:
        return
    if dispatched.rank is None:
        raise InvalidArgumentError(
            f"session {session_id} is bound to DP rank {bound.rank}, "
            "but dispatch did not select a DP rank"
        )
    raise InvalidArgumentError(
        f"session {session_id} is bound to DP rank {bound.rank}, not {dispatched.rank}"
    )


def rebound_target(bound: Target, dispatched: Target) -> Target:
    """Soft mode: follow the dispatch, but never change worker-only vs ranked."""
    if bound.rank is None:
        return Target(dispatched.worker, None)
    if dispatched.rank is None:
        return bound
    return dispatched


class ModelAffinity:
    """The reference table; satisfies `model.api.AffinityApi`."""

    def __init__(self, config: AffinityConfig) -> None:
        """Build an empty table at clock time 0; an invalid TTL is rejected."""
        check_ttl(config.ttl_ns)
        if config.max_entries < 0 or config.max_session_id_bytes < 0:
            raise InvalidArgumentError("capacity and id limits must be non-negative")
        if config.clock == "manual" and config.instant_range_ns is not None:
            if config.instant_range_ns < 0:
                raise InvalidArgumentError("the Instant range must be non-negative")
            if config.ttl_ns > config.instant_range_ns:
                raise InvalidArgumentError(
                    "affinity clock plus TTL exceeds the supported Instant range"
                )
        self._config = config
        self._now_ns = 0
        self._entries: dict[str, Entry] = {}
        self._handles: dict[int, Handle] = {}
        self._notified: set[int] = set()
        self._next_handle = 1
        self._next_revision = 1
        self._next_sequence = 1
        self._writer_id = 0
        self._replicating = False
        self._published: list[Published] = []
        self._last_reap_ns = 0
        self._dropped = False

    # ---- observation -------------------------------------------------------

    @property
    def config(self) -> AffinityConfig:
        """The configuration the table was built with."""
        return self._config

    @property
    def now_ns(self) -> int:
        """The table's clock."""
        return self._now_ns

    def state(self) -> AffinityState:
        """An immutable snapshot, sorted for determinism."""
        return AffinityState(
            config=self._config,
            now_ns=self._now_ns,
            entries=tuple(sorted(self._entries.items())),
            handles=tuple(sorted(self._handles.items())),
            notified=tuple(sorted(self._notified)),
            next_handle=self._next_handle,
            next_revision=self._next_revision,
            next_sequence=self._next_sequence,
            writer_id=self._writer_id,
            replicating=self._replicating,
            published=tuple(self._published),
            last_reap_ns=self._last_reap_ns,
            dropped=self._dropped,
        )

    @classmethod
    def from_state(cls, state: AffinityState) -> ModelAffinity:
        """Rebuild a model from a snapshot (the explorer's successor function)."""
        model = cls(state.config)
        model._now_ns = state.now_ns
        model._entries = dict(state.entries)
        model._handles = dict(state.handles)
        model._notified = set(state.notified)
        model._next_handle = state.next_handle
        model._next_revision = state.next_revision
        model._next_sequence = state.next_sequence
        model._writer_id = state.writer_id
        model._replicating = state.replicating
        model._published = list(state.published)
        model._last_reap_ns = state.last_reap_ns
        model._dropped = state.dropped
        return model

    def handle(self, number: int) -> Handle | None:
        """What handle `number` is, if it is live."""
        return self._handles.get(number)

    def live_handles(self) -> list[tuple[int, str]]:
        """Live handles by number: `init`, `bound`, `lease` or `waiter`."""
        return [
            (number, handle_kind(held))
            for number, held in sorted(self._handles.items())
        ]

    # ---- clock -------------------------------------------------------------

    def advance_clock(self, now_ns: int) -> None:
        """Move the clock forward (never back) and collect per the reaping variant."""
        if self._config.clock == "manual":
            self._check_manual_clock(now_ns)
        elif now_ns < self._now_ns:
            raise InvalidArgumentError("affinity clock cannot move backwards")
        elif now_ns > CLOCK_NS_MAX:
            raise InvalidArgumentError(
                "affinity clock beyond the binding's supported range"
            )
        previous_ns, self._now_ns = self._now_ns, now_ns
        self.collect_due(previous_ns)

    def collect_due(self, previous_ns: int) -> None:
        """Collect what the reaping variant collects after a move from `previous_ns`.

        An advance is the clock's move, then this. In a concurrent history the
        two are separate steps: other callers may act between them.
        """
        now_ns = self._now_ns
        reaping = self._config.reaping
        period_ns = reaper_period_ns(self._config.ttl_ns)
        if reaping == "every_advance":
            self._reap(now_ns)
        elif reaping == "runtime_reaper":
            # The reaper wakes at every multiple of the period; between steps
            # nothing changes, so only the last tick in (previous, now] matters.
            last_tick_ns = now_ns // period_ns * period_ns
            if last_tick_ns > previous_ns:
                self._reap(last_tick_ns)
        elif now_ns >= self._last_reap_ns + cleanup_period_ns(self._config.ttl_ns):
            self._reap(now_ns)  # cadence

    def crate_advance_clock(self, now_ns: int) -> None:
        """The crate's own `advance_clock`: a runtime-clock table refuses it."""
        if self._config.clock == "manual":
            self.advance_clock(now_ns)
            return
        # The binding names the instant first (a u64 of nanoseconds), then
        # needs the table; only then can the crate refuse.
        if now_ns < 0:
            raise InvalidArgumentError("affinity clock cannot move backwards")
        if now_ns > U64_MAX:
            raise InvalidArgumentError("affinity clock beyond the binding's range")
        self._check_alive()
        raise InvalidArgumentError("affinity table uses the runtime clock")

    def _check_manual_clock(self, now_ns: int) -> None:
        """Refuse a manual clock update that is not a time the table can hold.

        In this order: an instant the host cannot even name (past the `u64`
        nanoseconds of the binding, or past the platform's `Instant` range), a
        dropped table (its clock went with it), a move backwards, and a time
        whose idle deadline `now + ttl` would leave the `Instant` range (the
        overflow guard, F.4).
        """
        if now_ns < 0:  # before the origin: the binding's u64 cannot say it
            raise InvalidArgumentError("affinity clock cannot move backwards")
        instant_range_ns = self._config.instant_range_ns
        if now_ns > U64_MAX or (
            instant_range_ns is not None and now_ns > instant_range_ns
        ):
            raise InvalidArgumentError(
                "affinity clock beyond the binding's Instant range"
            )
        self._check_alive()  # the crate's clock went with the table
        if now_ns < self._now_ns:
            raise InvalidArgumentError("affinity clock cannot move backwards")
        if instant_range_ns is not None and now_ns + self._config.ttl_ns > (
            instant_range_ns
        ):
            raise InvalidArgumentError(
                "affinity clock plus TTL exceeds the supported Instant range"
            )

    def _reap(self, at_ns: int) -> None:
        """Remove every binding expired at `at_ns`."""
        self._last_reap_ns = at_ns
        for session_id, entry in sorted(self._entries.items()):
            if is_expired_at(entry, at_ns):
                del self._entries[session_id]

    # ---- acquisition -------------------------------------------------------

    def try_acquire(self, session_id: str, requested: Target | None) -> AcquireStep:
        """Initialize a new or expired session, lease a live one, or wait."""
        self._check_alive()
        self._check_id(session_id)
        entry = self._entries.get(session_id)
        if entry is None:
            if len(self._entries) >= self._config.max_entries:
                raise ResourceExhaustedError("session affinity entry limit reached")
            return self._initialize(session_id, requested)
        if isinstance(entry, Initializing):
            return Wait(self._add(WaiterHandle(session_id, entry.revision)))
        if self._expired(entry):
            return self._initialize(session_id, requested)
        check_bound_target(session_id, entry.target, requested)
        self._entries[session_id] = replace(entry, leases=entry.leases + 1)
        lease = LeaseHandle(session_id, entry.revision, entry.version, entry.target)
        return Bound(self._add(lease), entry.target)

    def _initialize(self, session_id: str, requested: Target | None) -> Initialize:
        revision = self._take_revision()
        self._entries[session_id] = Initializing(revision)
        return Initialize(self._add(InitHandle(session_id, revision, requested)))

    def join_initializing(self, session_id: str, target: Target) -> int | None:
        """Bind another request's initialization now, reserving its use."""
        self._check_alive()
        entry = self._entries.get(session_id)
        if not isinstance(entry, Initializing):
            return None
        version = self._take_version()
        self._entries[session_id] = Binding(
            target=target,
            revision=entry.revision,
            version=version,
            leases=2,  # the joiner's lease plus the initializer's reserved use
            deadline_ns=self._now_ns + self._config.ttl_ns,
        )
        self._notified.add(entry.revision)
        self._publish(session_id, target, version)
        return self._add(LeaseHandle(session_id, entry.revision, version, None))

    # ---- commit ------------------------------------------------------------

    def commit(self, handle: int, dispatched: Target) -> int:
        """Consume a hold; bind (or confirm) it where the request was dispatched."""
        held = self._handles.get(handle)
        if isinstance(held, InitHandle):
            del self._handles[handle]
            return self._commit_initialization(held, dispatched)
        if isinstance(held, LeaseHandle) and held.hold_target is not None:
            self._check_alive()
            del self._handles[handle]
            return self._commit_bound(held, held.hold_target, dispatched)
        raise HandleError(f"handle {handle} is not a live hold")

    def _commit_initialization(self, init: InitHandle, dispatched: Target) -> int:
        session_id = init.session_id
        try:
            check_bound_target(session_id, dispatched, init.requested)
        except InvalidArgumentError:
            self._abandon(init)
            raise
        if self._dropped:
            raise DroppedError("session affinity table dropped")
        entry = self._entries.get(session_id)
        if entry is None:
            self._abandon(init)
            raise InvalidArgumentError("session affinity initialization was cancelled")
        if isinstance(entry, Binding) and entry.revision == init.revision:
            # A joiner bound it first; the reserved use becomes this lease.
            if self._config.mode is Mode.HARD:
                try:
                    check_dispatch_target(session_id, entry.target, dispatched)
                except InvalidArgumentError:
                    self._abandon(init)
                    raise
            lease = LeaseHandle(session_id, init.revision, entry.version, None)
            return self._commit_bound(lease, entry.target, dispatched)
        if not isinstance(entry, Initializing) or entry.revision != init.revision:
            self._abandon(init)
            raise InvalidArgumentError("session affinity initialization changed")
        version = self._take_version()
        self._entries[session_id] = Binding(
            target=dispatched,
            revision=init.revision,
            version=version,
            leases=1,
            deadline_ns=self._now_ns + self._config.ttl_ns,
        )
        self._notified.add(init.revision)
        self._publish(session_id, dispatched, version)
        return self._add(LeaseHandle(session_id, init.revision, version, None))

    def _commit_bound(
        self, lease: LeaseHandle, target: Target, dispatched: Target
    ) -> int:
        session_id = lease.session_id
        if self._config.mode is Mode.SOFT:
            moved_to = rebound_target(target, dispatched)
            if moved_to == target:
                self._publish(session_id, target, lease.version)
            else:
                entry = self._binding_of(lease)
                if (
                    entry is not None
                    and entry.version == lease.version
                    and entry.target == target
                ):
                    version = self._take_version()
                    self._entries[session_id] = replace(
                        entry, target=moved_to, version=version
                    )
                    lease = replace(lease, version=version)
                    self._publish(session_id, moved_to, version)
            return self._add(replace(lease, hold_target=None))
        try:
            check_dispatch_target(session_id, target, dispatched)
        except InvalidArgumentError:
            self._invalidate_lease(lease)
            raise
        self._publish(session_id, target, lease.version)
        return self._add(replace(lease, hold_target=None))

    # ---- letting go --------------------------------------------------------

    def abort(self, handle: int) -> None:
        """Drop an uncommitted initialization."""
        held = self._handles.get(handle)
        if not isinstance(held, InitHandle):
            raise HandleError(f"handle {handle} is not a live initialization")
        del self._handles[handle]
        self._abandon(held)

    def _abandon(self, init: InitHandle) -> None:
        """An initialization dropped uncommitted: free its entry or reserved use."""
        if self._dropped:
            return
        entry = self._entries.get(init.session_id)
        if isinstance(entry, Initializing) and entry.revision == init.revision:
            del self._entries[init.session_id]
        elif isinstance(entry, Binding) and entry.revision == init.revision:
            assert entry.leases > 0, "a joined binding lost its reserved use"
            self._entries[init.session_id] = replace(entry, leases=entry.leases - 1)
        self._notified.add(init.revision)

    def release(self, handle: int) -> None:
        """Drop a bound hold or a lease."""
        self._release_lease(self._take_lease(handle))

    def _release_lease(self, lease: LeaseHandle) -> None:
        """One use ends; the deadline restarts only if the version is unchanged."""
        entry = self._binding_of(lease)
        if entry is None or entry.leases == 0:
            return
        entry = replace(entry, leases=entry.leases - 1)
        if entry.version == lease.version:
            entry = replace(entry, deadline_ns=self._now_ns + self._config.ttl_ns)
            self._publish(lease.session_id, entry.target, entry.version)
        self._entries[lease.session_id] = entry

    def invalidate(self, handle: int) -> None:
        """The worker is gone: remove the binding this lease still names."""
        self._invalidate_lease(self._take_lease(handle))

    def _invalidate_lease(self, lease: LeaseHandle) -> None:
        entry = self._binding_of(lease)
        if entry is not None and entry.version == lease.version:
            del self._entries[lease.session_id]
            return
        self._release_lease(lease)

    def _binding_of(self, lease: LeaseHandle) -> Binding | None:
        """The binding instance the lease was taken on, while the table holds it."""
        entry = self._entries.get(lease.session_id)
        if self._dropped or not isinstance(entry, Binding):
            return None
        return entry if entry.revision == lease.revision else None

    def _take_lease(self, handle: int) -> LeaseHandle:
        held = self._handles.get(handle)
        if not isinstance(held, LeaseHandle):
            raise HandleError(f"handle {handle} is not a live lease")
        del self._handles[handle]
        return held

    def waiter_done(self, waiter: int) -> bool:
        """A waiter completes once its initialization commits, aborts or is joined."""
        held = self._handles.get(waiter)
        if not isinstance(held, WaiterHandle):
            raise HandleError(f"handle {waiter} is not a live waiter")
        return held.revision in self._notified

    # ---- reading -----------------------------------------------------------

    def query_target(self, session_id: str, requested: Target | None) -> Target | None:
        """The live binding's target, checked against an explicit pin."""
        self._check_alive()
        self._check_id(session_id)
        entry = self._entries.get(session_id)
        if not isinstance(entry, Binding) or self._expired(entry):
            return None
        check_bound_target(session_id, entry.target, requested)
        return entry.target

    # ---- replication -------------------------------------------------------

    def apply_replica_update(
        self, session_id: str, target: Target, version: Version
    ) -> ReplicaOutcome:
        """Merge a replica's binding; the decision table of SPEC B.13."""
        self._check_alive()
        if len(session_id.encode()) > self._config.max_session_id_bytes:
            return ReplicaOutcome.REJECTED_SESSION_ID
        self.observe_replica_sequence(version.sequence)
        entry = self._entries.get(session_id)
        deadline_ns = self._now_ns + self._config.ttl_ns
        if entry is None:
            if len(self._entries) >= self._config.max_entries:
                return ReplicaOutcome.REJECTED_CAPACITY
            revision = self._take_revision()
            self._entries[session_id] = Binding(
                target, revision, version, 0, deadline_ns
            )
            return ReplicaOutcome.INSERTED
        if isinstance(entry, Initializing):
            return ReplicaOutcome.IGNORED_INITIALIZING
        if self._expired(entry):
            # Versions are not compared: any update revives an expired binding.
            revision = self._take_revision()
            self._entries[session_id] = Binding(
                target, revision, version, 0, deadline_ns
            )
            return ReplicaOutcome.REPLACED_EXPIRED
        if entry.target == target and version >= entry.version:
            self._entries[session_id] = replace(
                entry, version=version, deadline_ns=deadline_ns
            )
            return ReplicaOutcome.REFRESHED
        if version > entry.version:
            self._entries[session_id] = replace(
                entry, target=target, version=version, deadline_ns=deadline_ns
            )
            return ReplicaOutcome.REPLACED_NEWER
        return ReplicaOutcome.IGNORED_CONFLICT

    def observe_replica_sequence(self, sequence: int) -> None:
        """Local sequences move past every sequence seen from a replica."""
        self._check_alive()
        self._next_sequence = max(self._next_sequence, min(sequence + 1, U64_MAX))

    def enable_replication(self, writer_id: int) -> bool:
        """Install the sink and writer id once; later calls change nothing."""
        self._check_alive()
        if self._replicating:
            return False
        self._replicating = True
        self._writer_id = writer_id
        return True

    def drain_published(self) -> list[Published]:
        """What the sink received since the last drain."""
        drained, self._published = self._published, []
        return drained

    def _publish(self, session_id: str, target: Target, version: Version) -> None:
        if self._replicating and not self._dropped:
            self._published.append(Published(session_id, target, version))

    # ---- test hooks and misc -----------------------------------------------

    def entry_count(self) -> int:
        """Entries present, including expired ones not yet collected."""
        self._check_alive()
        return len(self._entries)

    def lease_count(self, session_id: str) -> int | None:
        """Active leases of a session; 0 while initializing; None without entry."""
        self._check_alive()
        entry = self._entries.get(session_id)
        if entry is None:
            return None
        return entry.leases if isinstance(entry, Binding) else 0

    def next_version(self) -> Version:
        """Take the next local version (the crate's test hook)."""
        self._check_alive()
        return self._take_version()

    def _take_version(self) -> Version:
        version = Version(self._next_sequence, self._writer_id)
        self._next_sequence = (self._next_sequence + 1) % (U64_MAX + 1)
        return version

    def subagent_group_affinity_id(self, parent_session_id: str) -> str:
        """The session key a sub-agent group shares, never its parent's binding."""
        return group_affinity_id(parent_session_id)

    def drop_table(self) -> None:
        """The table goes away; outstanding handles become harmless."""
        self._dropped = True
        self._entries.clear()

    # ---- helpers -----------------------------------------------------------

    def _expired(self, entry: Binding) -> bool:
        """Whether `entry` is expired at the table's clock (canaries override it)."""
        return is_expired_at(entry, self._now_ns)

    def _check_alive(self) -> None:
        if self._dropped:
            raise HandleError("the affinity table was dropped")

    def _check_id(self, session_id: str) -> None:
        limit = self._config.max_session_id_bytes
        if len(session_id.encode()) > limit:
            raise InvalidArgumentError(
                f"session affinity ID must not exceed {limit} bytes"
            )

    def _take_revision(self) -> int:
        revision = self._next_revision
        self._next_revision += 1
        return revision

    def _add(self, handle: Handle) -> int:
        number = self._next_handle
        self._next_handle += 1
        self._handles[number] = handle
        return number


def _conforms(table: ModelAffinity) -> AffinityApi:
    """Let mypy prove that the model satisfies `AffinityApi`."""
    return table
