"""The differential affinity machine: Hypothesis drives the model and the crate.

Every rule builds one operation, applies it to both sides through
`AffinityHarness.step`, and asserts: same outcome, same observable state, no
violated property. Preconditions and drawn keys depend on the model only.
"""

from __future__ import annotations

from typing import ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize

from model.affinity.ops import (
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
)
from model.affinity.table import (
    CLOCK_NS_MAX,
    AffinityState,
    Binding,
    InitHandle,
    Initializing,
    LeaseHandle,
    WaiterHandle,
    reaper_period_ns,
)
from model.affinity.types import (
    MILLISECOND_NS,
    SECOND_NS,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Target,
    Version,
    Wait,
)
from properties.affinity.coverage import next_cleanup_ns
from stateful.affinity_subject import AffinityHarness, AffinitySubject, CrateFactory
from stateful.machine import (
    DRAW,
    DifferentialMachine,
    Draw,
    precondition,
    rule,
    sampled_from,
)

SESSION_POOL = ("a", "b", "c", "ßß", "ßßß", "x" * 300)
"""Ids by UTF-8 size: 1, 1, 1, 4 (2 chars), 6 (3 chars) and 300 bytes."""

TTL_NS_CHOICES = (
    SECOND_NS,
    SECOND_NS + 1,  # the reaper's period rounds up onto Tokio's 1 ms grid
    3 * SECOND_NS // 2,
    10 * SECOND_NS,
    60 * SECOND_NS,  # reaper period 30 s, half the TTL
)
ENTRIES_CHOICES = (0, 1, 2, 3, 6)
ID_BYTES_CHOICES = (4, 256)
WORKERS = (1, 2)
RANKS = (None, 0, 1)
WRITERS = (0, 1, 2)
STEPS_BEFORE_DROP_MIN = 40
CHANGES_UNDER_A_HOLD = (
    "another_hold_moved_it",
    "a_replica_refreshed_it",
    "it_was_invalidated",
    "it_is_initializing_again",
)
"""What befalls a bound session while a hold of it waits to be committed."""

TARGETS = tuple(Target(worker, rank) for worker in WORKERS for rank in RANKS)
"""Every target a rule draws, simplest first (one choice per draw)."""
targets = st.sampled_from(TARGETS)
pins = st.sampled_from((None, *TARGETS))
sessions = st.sampled_from(SESSION_POOL)


def configs(reaping: str = "runtime_reaper") -> st.SearchStrategy[AffinityConfig]:
    """Table configurations worth exploring: small TTLs and capacities."""
    return st.builds(
        AffinityConfig,
        ttl_ns=st.sampled_from(TTL_NS_CHOICES),
        mode=st.sampled_from(Mode),
        max_entries=st.sampled_from(ENTRIES_CHOICES),
        max_session_id_bytes=st.sampled_from(ID_BYTES_CHOICES),
        reaping=st.just(reaping),
    )


def _next_tick_ns(state: AffinityState) -> int:
    """The next cleanup instant; on every-advance tables, the reaper's grid."""
    cleanup_ns = next_cleanup_ns(state)
    if cleanup_ns is not None:
        return cleanup_ns
    period_ns = reaper_period_ns(state.config.ttl_ns)
    return (state.now_ns // period_ns + 1) * period_ns


class AffinityMachine(DifferentialMachine):
    """Model vs system under test, step by step."""

    subject = AffinitySubject
    factory: ClassVar[CrateFactory | None] = None

    def _harness(self) -> AffinityHarness:
        assert isinstance(self.harness, AffinityHarness)
        return self.harness

    def _state(self) -> AffinityState:
        """The model's state between steps (`Harness.state`: no fresh snapshot)."""
        state: AffinityState = self._harness().state
        return state

    # ---- guards (model only) -----------------------------------------------

    def _handles(self, *kinds: type) -> list[int]:
        state = self._state()
        return [number for number, handle in state.handles if isinstance(handle, kinds)]

    def has_holds(self) -> bool:
        """Some initialization or bound hold is live."""
        return bool(self._holds())

    def _holds(self) -> list[int]:
        state = self._state()
        return [
            number
            for number, handle in state.handles
            if isinstance(handle, InitHandle)
            or (isinstance(handle, LeaseHandle) and handle.hold_target is not None)
        ]

    def has_initializations(self) -> bool:
        """Some initialization is live."""
        return bool(self._handles(InitHandle))

    def has_leases(self) -> bool:
        """Some bound hold or lease is live."""
        return bool(self._handles(LeaseHandle))

    def has_waiters(self) -> bool:
        """Some waiter is live."""
        return bool(self._handles(WaiterHandle))

    def has_consumed_handles(self) -> bool:
        """Some handle number was handed out and is gone now."""
        state = self._state()
        return state.next_handle - 1 > len(state.handles)

    def may_drop(self) -> bool:
        """Late in a program, the table may be dropped once."""
        harness = self._harness()
        return harness.steps >= STEPS_BEFORE_DROP_MIN and not self._state().dropped

    # ---- rules -------------------------------------------------------------

    @initialize(config=configs())
    def build(self, config: AffinityConfig) -> None:
        """Build the model and the system under test with the same configuration."""
        self._start(AffinityHarness(config, SESSION_POOL, type(self).factory))
        note(f"config: {config}")

    @rule(session_id=sessions, requested=pins)
    def acquire(self, session_id: str, requested: Target | None) -> None:
        """Acquiring gives the same step (initialize, bound, wait or error)."""
        self._run("acquire", Acquire(session_id, requested))

    @rule(session_id=sessions, bind_to=targets)
    def join(self, session_id: str, bind_to: Target) -> None:
        """Joining an initialization gives the same lease or none."""
        self._run("join", Join(session_id, bind_to))

    @precondition(has_holds)
    @rule(data=DRAW, dispatched=targets)
    def commit(self, data: Draw, dispatched: Target) -> None:
        """Committing a hold to a dispatched target gives the same lease or error."""
        handle = data.draw(sampled_from(self._holds()), label="hold")
        self._run("commit", Commit(handle, dispatched))

    @precondition(has_holds)
    @rule(data=DRAW)
    def commit_where_bound(self, data: Draw) -> None:
        """Committing a hold where it is bound (the common path) agrees."""
        handle = data.draw(sampled_from(self._holds()), label="hold")
        held = self._harness().model.handle(handle)
        state = self._state()
        target = Target(1, None)
        if isinstance(held, LeaseHandle) and held.hold_target is not None:
            target = held.hold_target
        elif isinstance(held, InitHandle):
            entry = state.entry(held.session_id)
            if isinstance(entry, Binding):
                target = entry.target
            elif held.requested is not None:
                target = held.requested
        self._run("commit_where_bound", Commit(handle, target))

    @rule(
        session_id=sessions,
        dispatched=targets,
        then=st.sampled_from(("keep", "release")),
    )
    def request_turn(self, session_id: str, dispatched: Target, then: str) -> None:
        """A whole turn (acquire, commit, maybe release) agrees step by step."""
        self._turn("request_turn", session_id, dispatched, release=then == "release")

    def _turn(
        self, rule_name: str, session_id: str, dispatched: Target, *, release: bool
    ) -> None:
        """Acquire, commit where dispatched, release if asked (as far as allowed)."""
        step = self._run(rule_name, Acquire(session_id, None)).expected.value
        if isinstance(step, Initialize | Bound):
            lease = self._run(rule_name, Commit(step.handle, dispatched)).expected.value
            if release and isinstance(lease, int):
                self._run(rule_name, Release(lease))

    @rule(
        session_id=sessions,
        bind_to=targets,
        dispatched=targets,
        initializer=st.sampled_from(("commit", "abort")),
    )
    def racing_requests(
        self, session_id: str, bind_to: Target, dispatched: Target, initializer: str
    ) -> None:
        """A request joins another's initialization, which then commits or aborts."""
        report = self._run("racing_requests", Acquire(session_id, None))
        step = report.expected.value
        if not isinstance(step, Initialize):
            return
        self._run("racing_requests", Join(session_id, bind_to))
        if initializer == "commit":
            self._run("racing_requests", Commit(step.handle, dispatched))
        else:
            self._run("racing_requests", Abort(step.handle))

    @rule(
        session_id=sessions,
        bind_to=targets,
        settle=st.sampled_from(("commit", "abort", "join")),
    )
    def waiting_request(self, session_id: str, bind_to: Target, settle: str) -> None:
        """A second request waits; settling the first wakes it, alike (D12)."""
        first = self._run("waiting_request", Acquire(session_id, None)).expected
        if not isinstance(first.value, Initialize):
            return
        second = self._run("waiting_request", Acquire(session_id, None)).expected
        if not isinstance(second.value, Wait):
            return
        self._run("waiting_request", PollWaiter(second.value.waiter))
        settlings: dict[str, Op] = {
            "commit": Commit(first.value.handle, bind_to),
            "abort": Abort(first.value.handle),
            "join": Join(session_id, bind_to),
        }
        settling = settlings[settle]
        self._run("waiting_request", settling)
        self._run("waiting_request", PollWaiter(second.value.waiter))

    @precondition(has_initializations)
    @rule(data=DRAW)
    def abort(self, data: Draw) -> None:
        """Dropping an initialization frees its slot (or reserved use) alike."""
        handle = data.draw(sampled_from(self._handles(InitHandle)), label="init")
        self._run("abort", Abort(handle))

    @precondition(has_leases)
    @rule(data=DRAW)
    def release(self, data: Draw) -> None:
        """Releasing a lease restarts the idle TTL alike."""
        handle = data.draw(sampled_from(self._handles(LeaseHandle)), label="lease")
        self._run("release", Release(handle))

    @precondition(has_leases)
    @rule(data=DRAW)
    def invalidate(self, data: Draw) -> None:
        """Invalidating a lease removes (or releases) alike."""
        handle = data.draw(sampled_from(self._handles(LeaseHandle)), label="lease")
        self._run("invalidate", Invalidate(handle))

    @precondition(has_waiters)
    @rule(data=DRAW)
    def poll_waiter(self, data: Draw) -> None:
        """A waiter is woken at the same step on both sides."""
        waiter = data.draw(sampled_from(self._handles(WaiterHandle)), label="waiter")
        self._run("poll_waiter", PollWaiter(waiter))

    @precondition(has_consumed_handles)
    @rule(data=DRAW, use=st.sampled_from(("commit", "abort", "release")))
    def reuse_consumed_handle(self, data: Draw, use: str) -> None:
        """Reusing a consumed handle is the same clear error on both sides."""
        state = self._state()
        live = {number for number, _ in state.handles}
        consumed = [n for n in range(1, state.next_handle) if n not in live]
        handle = data.draw(sampled_from(consumed), label="consumed")
        uses: dict[str, Op] = {
            "commit": Commit(handle, Target(1, None)),
            "abort": Abort(handle),
            "release": Release(handle),
        }
        op = uses[use]
        self._run("reuse_consumed_handle", op)

    @rule(session_id=sessions, requested=pins)
    def query(self, session_id: str, requested: Target | None) -> None:
        """Querying gives the same target, none, or error."""
        self._run("query", Query(session_id, requested))

    @rule(data=DRAW)
    def advance(self, data: Draw) -> None:
        """Moving the clock (onto and around deadlines and reaper ticks) agrees."""
        now_ns = data.draw(sampled_from(self._clock_targets()), label="now_ns")
        self._run("advance", Advance(now_ns))

    def _clock_targets(self) -> list[int]:
        state = self._state()
        now_ns, ttl_ns = state.now_ns, state.config.ttl_ns
        next_tick_ns = _next_tick_ns(state)
        candidates = {
            now_ns,
            now_ns + 1,
            now_ns + MILLISECOND_NS - 1,
            now_ns + MILLISECOND_NS,
            now_ns + ttl_ns,
            now_ns + 3 * ttl_ns,
            next_tick_ns - 1,
            next_tick_ns,
            next_tick_ns + 1,
            now_ns - 1,  # backwards
            CLOCK_NS_MAX + 1,  # beyond the supported range
            2**64,  # overflows the binding's u64
        }
        instant_range_ns = state.config.instant_range_ns
        if instant_range_ns is not None:
            limit_ns = instant_range_ns - ttl_ns  # the last time a deadline fits
            candidates |= {limit_ns, limit_ns + 1, instant_range_ns + 1}
        for _, entry in state.entries:
            if isinstance(entry, Binding):
                candidates |= {
                    entry.deadline_ns - 1,
                    entry.deadline_ns,
                    entry.deadline_ns + 1,
                }
        return sorted(c for c in candidates if c >= 0)

    @rule(offset_ns=st.sampled_from((-1, 0, 1)))
    def reaper_tick(self, offset_ns: int) -> None:
        """Moving to the next reaper tick (or 1 ns either side) agrees."""
        next_tick_ns = _next_tick_ns(self._state())
        self._run("reaper_tick", Advance(next_tick_ns + offset_ns))

    @rule(data=DRAW, session_id=sessions, bind_to=targets)
    def apply_replica(self, data: Draw, session_id: str, bind_to: Target) -> None:
        """A replica update (older, equal, newer, conflicting) agrees."""
        version = data.draw(sampled_from(self._versions(session_id)), label="version")
        self._run("apply_replica", ApplyReplica(session_id, bind_to, version))

    def _versions(self, session_id: str) -> list[Version]:
        state = self._state()
        entry = state.entry(session_id)
        base = entry.version if isinstance(entry, Binding) else Version(1, 0)
        sequences = {0, 1, base.sequence - 1, base.sequence, base.sequence + 1}
        sequences.add(state.next_sequence + 5)
        return sorted(
            Version(sequence, writer)
            for sequence in sequences
            if sequence >= 0
            for writer in {*WRITERS, base.writer}
        )

    def _sessions(self, *kinds: type) -> list[str]:
        state = self._state()
        return [s for s, entry in state.entries if isinstance(entry, kinds)]

    def has_bindings(self) -> bool:
        """Some session is bound (live or expired)."""
        return bool(self._sessions(Binding))

    def has_initializing(self) -> bool:
        """Some session is initializing."""
        return bool(self._sessions(Initializing))

    @precondition(has_bindings)
    @rule(
        data=DRAW,
        change=st.sampled_from(("same", "newer", "newer_elsewhere", "older")),
    )
    def replica_for_a_bound_session(self, data: Draw, change: str) -> None:
        """A replica update of a bound session (refresh, newer, older) agrees."""
        session_id = data.draw(sampled_from(self._sessions(Binding)), label="id")
        entry = self._state().entry(session_id)
        assert isinstance(entry, Binding)
        version, target = entry.version, entry.target
        if change in ("newer", "newer_elsewhere"):
            version = Version(version.sequence + 1, version.writer)
        elif change == "older":
            version = Version(max(0, version.sequence - 1), version.writer)
        if change == "newer_elsewhere":
            target = Target(3 - target.worker, target.rank)
        self._run(
            "replica_for_a_bound_session", ApplyReplica(session_id, target, version)
        )

    def _expired_sessions(self) -> list[str]:
        state = self._state()
        return [s for s, entry in state.entries if state.is_expired(entry)]

    def _live_bound_sessions(self) -> list[str]:
        state = self._state()
        return [
            s
            for s, entry in state.entries
            if isinstance(entry, Binding) and not state.is_expired(entry)
        ]

    @rule(data=DRAW, bind_to=targets, dispatched=targets)
    def replica_for_an_expired_session(
        self, data: Draw, bind_to: Target, dispatched: Target
    ) -> None:
        """Even an older replica update revives an expired binding (G.8), alike.

        Self-contained, so it runs in every program: an expired binding lives
        only until the reaper or an advance collects it, so with none at hand
        a vacant id is bound, released and left to reach its deadline first.
        """
        rule_name = "replica_for_an_expired_session"
        expired = self._an_expired_binding_at_hand(rule_name, data, dispatched)
        if expired:
            session_id = data.draw(sampled_from(expired), label="id")
            self._run(rule_name, ApplyReplica(session_id, bind_to, Version(0, 0)))

    @precondition(has_initializing)
    @rule(data=DRAW, bind_to=targets)
    def replica_during_initialization(self, data: Draw, bind_to: Target) -> None:
        """A replica update for an initializing session is ignored alike."""
        session_id = data.draw(sampled_from(self._sessions(Initializing)), label="id")
        version = Version(self._state().next_sequence, 1)
        self._run(
            "replica_during_initialization", ApplyReplica(session_id, bind_to, version)
        )

    @precondition(has_leases)
    @rule(data=DRAW)
    def release_after_a_replica_refresh(self, data: Draw) -> None:
        """A lease released after a replica bumped its binding's version (F.2)."""
        handle = data.draw(sampled_from(self._handles(LeaseHandle)), label="lease")
        held = self._harness().model.handle(handle)
        assert isinstance(held, LeaseHandle)
        entry = self._state().entry(held.session_id)
        if isinstance(entry, Binding):
            newer = Version(entry.version.sequence + 1, entry.version.writer)
            self._run(
                "release_after_a_replica_refresh",
                ApplyReplica(held.session_id, entry.target, newer),
            )
        self._run("release_after_a_replica_refresh", Release(handle))

    def _vacant_ids(self) -> list[str]:
        state = self._state()
        limit = state.config.max_session_id_bytes
        return [
            s
            for s in SESSION_POOL
            if state.entry(s) is None and len(s.encode()) <= limit
        ]

    @rule(data=DRAW, dispatched=targets)
    def new_session_against_uncollected_expiry(
        self, data: Draw, dispatched: Target
    ) -> None:
        """A new id beside an expired, uncollected binding (refused if full), alike.

        Self-contained, so it runs in every program: with no expired binding at
        hand, it binds a vacant id, releases it, and moves the clock onto that
        binding's deadline first (the reaper may collect it on the way, alike).
        """
        rule_name = "new_session_against_uncollected_expiry"
        self._an_expired_binding_at_hand(rule_name, data, dispatched)
        candidates = self._vacant_ids() or self._expired_sessions()
        if candidates:
            session_id = data.draw(sampled_from(candidates), label="id")
            self._run(rule_name, Acquire(session_id, None))

    def _an_expired_binding_at_hand(
        self, rule_name: str, data: Draw, dispatched: Target
    ) -> list[str]:
        """The expired sessions; with none, one is made first (the rules' preamble).

        Scenario rules that need an expired binding are self-contained: with
        none at hand they expire a vacant id (`_expire_a_vacant_binding`).
        """
        if not self._expired_sessions():
            self._expire_a_vacant_binding(rule_name, data, dispatched)
        return self._expired_sessions()

    def _expire_a_vacant_binding(
        self, rule_name: str, data: Draw, dispatched: Target
    ) -> None:
        """Bind a vacant id, release it, and move the clock onto its deadline."""
        vacant = self._vacant_ids()
        if not vacant:
            return
        first = data.draw(sampled_from(vacant), label="expiring id")
        self._turn(rule_name, first, dispatched, release=True)
        entry = self._state().entry(first)
        if isinstance(entry, Binding):
            self._run(rule_name, Advance(entry.deadline_ns))

    @rule(data=DRAW, dispatched=targets, revived_to=targets)
    def stale_lease_across_a_revival(
        self, data: Draw, dispatched: Target, revived_to: Target
    ) -> None:
        """A stale lease stays stale when its id is rebound after a revival, alike.

        A session holds two leases; a replica revives another, expired binding;
        one lease invalidates the session; the id is bound afresh; then the
        other, stale lease is released. It must not count against the new
        binding: every binding's revision is new (the crate's `next_revision`).
        """
        rule_name = "stale_lease_across_a_revival"
        self._an_expired_binding_at_hand(rule_name, data, dispatched)
        vacant = self._vacant_ids()
        if not vacant or not self._expired_sessions():
            return
        session_id = data.draw(sampled_from(vacant), label="id")
        first = self._run(rule_name, Acquire(session_id, None)).expected.value
        if not isinstance(first, Initialize):
            return
        committed = self._run(rule_name, Commit(first.handle, dispatched)).expected
        second = self._run(rule_name, Acquire(session_id, None)).expected.value
        if not isinstance(committed.value, int) or not isinstance(second, Bound):
            return
        expired = data.draw(sampled_from(self._expired_sessions()), label="revive")
        self._run(rule_name, ApplyReplica(expired, revived_to, Version(0, 0)))
        self._run(rule_name, Invalidate(committed.value))
        again = self._run(rule_name, Acquire(session_id, None)).expected.value
        if isinstance(again, Initialize):
            self._run(rule_name, Commit(again.handle, dispatched))
        self._run(rule_name, Release(second.handle))

    @rule(data=DRAW, dispatched=targets, revived_to=targets)
    def leases_across_a_revived_binding(
        self, data: Draw, dispatched: Target, revived_to: Target
    ) -> None:
        """Two leases on a revived binding outlive its rebinding alike.

        A replica revives an expired binding; two requests lease it; one lease
        invalidates it; the id is bound afresh; then the other, stale lease is
        released. The revival must take a new revision (the crate's
        `next_revision`), or the fresh binding shares it and the stale release
        takes the new binding's lease away.
        """
        rule_name = "leases_across_a_revived_binding"
        self._an_expired_binding_at_hand(rule_name, data, dispatched)
        if not self._expired_sessions():
            return
        session_id = data.draw(sampled_from(self._expired_sessions()), label="id")
        self._run(rule_name, ApplyReplica(session_id, revived_to, Version(0, 0)))
        first = self._run(rule_name, Acquire(session_id, None)).expected.value
        second = self._run(rule_name, Acquire(session_id, None)).expected.value
        if not isinstance(first, Bound) or not isinstance(second, Bound):
            return
        self._run(rule_name, Invalidate(first.handle))
        again = self._run(rule_name, Acquire(session_id, None)).expected.value
        if isinstance(again, Initialize):
            self._run(rule_name, Commit(again.handle, dispatched))
        self._run(rule_name, Release(second.handle))

    def _bound_holds(self, rule_name: str, session_id: str, count: int) -> list[int]:
        """Acquire `session_id` `count` times; the handles of the bound holds."""
        steps = [
            self._run(rule_name, Acquire(session_id, None)).expected.value
            for _ in range(count)
        ]
        return [step.handle for step in steps if isinstance(step, Bound)]

    def _a_freshly_revised_lease(
        self,
        rule_name: str,
        data: Draw,
        origin: str,
        dispatched: Target,
        replica_to: Target,
    ) -> tuple[str, int] | None:
        """A lease on a binding made by `origin`: (its id, its handle), if made."""
        if origin == "replica_insert":
            vacant = self._vacant_ids()
            if not vacant:
                return None
            session_id = data.draw(sampled_from(vacant), label="id")
            self._run(rule_name, ApplyReplica(session_id, replica_to, Version(0, 0)))
            held = self._run(rule_name, Acquire(session_id, None)).expected.value
            return (session_id, held.handle) if isinstance(held, Bound) else None
        expired = self._an_expired_binding_at_hand(rule_name, data, dispatched)
        if not expired:
            return None
        session_id = data.draw(sampled_from(expired), label="id")
        held = self._run(rule_name, Acquire(session_id, None)).expected.value
        if not isinstance(held, Initialize):
            return None
        lease = self._run(rule_name, Commit(held.handle, dispatched)).expected.value
        return (session_id, lease) if isinstance(lease, int) else None

    @rule(
        data=DRAW,
        origin=st.sampled_from(("expiry_at_acquire", "replica_insert")),
        dispatched=targets,
        replica_to=targets,
    )
    def stale_leases_across_two_rebindings(
        self, data: Draw, origin: str, dispatched: Target, replica_to: Target
    ) -> None:
        """Stale leases stay stale while their id is bound afresh twice, alike.

        A binding is made by re-initializing an expired one at acquire, or by a
        replica update of an unknown id; it is leased three times; one lease
        invalidates it; then twice over the id is bound afresh and one of the
        stale leases released (the fresh binding invalidated in between). Each
        binding must take a revision never handed out before (the crate's
        `next_revision`), or a stale release takes a fresh binding's lease;
        two rounds catch a counter that steps back as well as one that stalls.
        """
        rule_name = "stale_leases_across_two_rebindings"
        bound = self._a_freshly_revised_lease(
            rule_name, data, origin, dispatched, replica_to
        )
        if bound is None:
            return
        session_id, lease = bound
        stale = self._bound_holds(rule_name, session_id, 2)
        self._run(rule_name, Invalidate(lease))
        for number, stale_lease in enumerate(stale):
            again = self._run(rule_name, Acquire(session_id, None)).expected.value
            fresh = None
            if isinstance(again, Initialize):
                commit = Commit(again.handle, dispatched)
                fresh = self._run(rule_name, commit).expected.value
            self._run(rule_name, Release(stale_lease))
            if number == 0 and isinstance(fresh, int):
                self._run(rule_name, Invalidate(fresh))

    @rule(
        data=DRAW,
        change=st.sampled_from(CHANGES_UNDER_A_HOLD),
        bound_to=targets,
        moved_to=targets,
        dispatched=targets,
    )
    def bound_holds_dispatched_elsewhere_after_a_change(
        self,
        data: Draw,
        change: str,
        bound_to: Target,
        moved_to: Target,
        dispatched: Target,
    ) -> None:
        """A hold whose binding changed since it was taken does not move it, alike.

        A vacant id is bound, or a live binding is taken as it is (a full table
        or used-up ids leave no vacant one), and held twice; then one hold is
        committed elsewhere (in soft mode it moves the binding), or a replica refreshes
        the binding's version, or the hold invalidates the binding (with a
        replica sink installed, so that a wrong publication shows; then maybe
        a new request starts initializing the id); then the other hold is
        committed to `dispatched`. In soft mode the binding follows a dispatch
        only when it is still bound with the revision, version and target the
        hold saw.
        """
        rule_name = "bound_holds_dispatched_elsewhere_after_a_change"
        candidates = self._vacant_ids() + self._live_bound_sessions()
        if not candidates:
            return
        session_id = data.draw(sampled_from(candidates), label="id")
        if self._state().entry(session_id) is None:
            self._turn(rule_name, session_id, bound_to, release=True)
        holds = self._bound_holds(rule_name, session_id, 2)
        if len(holds) < 2:
            return
        entry = self._state().entry(session_id)
        if change == "another_hold_moved_it":
            self._run(rule_name, Commit(holds[0], moved_to))
        elif change in ("it_was_invalidated", "it_is_initializing_again"):
            if not self._state().replicating:
                self._run(rule_name, EnableReplication(WRITERS[1]))
            self._run(rule_name, Invalidate(holds[0]))
            if change == "it_is_initializing_again":
                self._run(rule_name, Acquire(session_id, None))
        elif isinstance(entry, Binding):
            newer = Version(entry.version.sequence + 1, entry.version.writer)
            self._run(rule_name, ApplyReplica(session_id, entry.target, newer))
        self._run(rule_name, Commit(holds[1], dispatched))

    @rule(delta=st.sampled_from((-1, 0, 1, 10)))
    def observe_sequence(self, delta: int) -> None:
        """Observing a replica sequence moves local versions alike."""
        sequence = max(0, self._state().next_sequence + delta)
        self._run("observe_sequence", ObserveSequence(sequence))

    @rule(writer_id=st.sampled_from(WRITERS))
    def enable_replication(self, writer_id: int) -> None:
        """Installing the sink works once, alike."""
        self._run("enable_replication", EnableReplication(writer_id))

    @rule()
    def next_version(self) -> None:
        """The test hook's next version agrees (it consumes a sequence)."""
        self._run("next_version", NextVersion())

    @precondition(may_drop)
    @rule()
    def drop_table(self) -> None:
        """Dropping the table leaves outstanding handles harmless, alike."""
        self._run("drop_table", DropTable())
