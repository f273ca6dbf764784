"""Coverage goals of the affinity machine: states and steps a run must reach.

Each is a `sometimes` property; a CI run in which one is never observed fails
as vacuous (a green run that never, say, filled the table proves little).
"""

from __future__ import annotations

from model.affinity.ops import (
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    CrateAdvance,
    Join,
    PollWaiter,
    Query,
    Release,
)
from model.affinity.table import (
    AffinityState,
    Binding,
    InitHandle,
    LeaseHandle,
)
from model.affinity.types import Mode, ReplicaOutcome, Wait
from properties.affinity._cites import AFFINITY, CRATE, INIT, INNER, LEASE, MODEL, TABLE
from properties.affinity._terms import cleanup_period_ns, expired, reaper_period_ns
from properties.registry import Step, register

NO_CLEANUP_INSTANT = "every advance is a cleanup instant"
RUNTIME_RANGE = (
    "a runtime table's clock is the binding's paused Tokio clock, bounded by "
    "CLOCK_NS_MAX; no Instant range is placed near its end"
)


REAP_READS = (f"{TABLE}.advance_clock", f"{TABLE}._reap")
REAP_GUARDS = (f"{AFFINITY}::spawn_reaper",)
CLOCK_READS = (f"{TABLE}.advance_clock", f"{TABLE}.crate_advance_clock")
CLOCK_GUARDS = (f"{AFFINITY}::with_config", f"{AFFINITY}::spawn_reaper")
REPLICA_READS = (f"{TABLE}.apply_replica_update",)
REPLICA_GUARDS = (f"{AFFINITY}::apply_replica_update", f"{INNER}::apply_replica_update")


def _moves_clock(step: Step) -> bool:
    return isinstance(step.op, Advance | CrateAdvance)


@register(
    "affinity",
    "sometimes",
    "state",
    reads=(f"{TABLE}._reap", f"{MODEL}.is_expired_at"),
    guards=(f"{AFFINITY}::spawn_reaper", f"{LEASE}::release"),
)
def a_lease_kept_a_binding_past_its_ttl(state: AffinityState) -> bool:
    """A binding with an active lease outlived its idle deadline."""
    return any(
        isinstance(entry, Binding)
        and entry.leases > 0
        and entry.deadline_ns <= state.now_ns
        for _, entry in state.entries
    )


@register("affinity", "sometimes", "state", reads=REAP_READS, guards=REAP_GUARDS)
def an_expired_binding_awaited_collection(state: AffinityState) -> bool:
    """An expired, unleased binding was still counted, waiting for the reaper."""
    return any(expired(state, entry) for _, entry in state.entries)


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}.try_acquire",),
    guards=(f"{AFFINITY}::reserve_entry",),
)
def the_table_was_full(step: Step) -> bool:
    """Acquiring a new session was refused because the table was full."""
    return isinstance(step.op, Acquire) and step.outcome.error == "ResourceExhausted"


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}.try_acquire", f"{TABLE}._reap"),
    guards=(f"{AFFINITY}::reserve_entry", f"{AFFINITY}::spawn_reaper"),
)
def an_uncollected_expired_binding_blocked_a_new_session(step: Step) -> bool:
    """The table was full only because an expired binding had not been reaped yet."""
    return (
        isinstance(step.op, Acquire)
        and step.outcome.error == "ResourceExhausted"
        and any(expired(step.before, entry) for _, entry in step.before.entries)
    )


@register("affinity", "sometimes", "step", reads=REAP_READS, guards=REAP_GUARDS)
def the_reaper_collected_a_binding(step: Step) -> bool:
    """A clock advance collected at least one expired binding."""
    return _moves_clock(step) and len(step.after.entries) < len(step.before.entries)


@register("affinity", "sometimes", "step", reads=REAP_READS, guards=REAP_GUARDS)
def the_clock_landed_exactly_on_a_deadline(step: Step) -> bool:
    """A clock advance stopped exactly on an unleased binding's idle deadline."""
    return _moves_clock(step) and any(
        isinstance(entry, Binding)
        and entry.leases == 0
        and entry.deadline_ns == step.after.now_ns
        for _, entry in step.before.entries
    )


@register("affinity", "sometimes", "step", reads=REAP_READS, guards=REAP_GUARDS)
def the_clock_stopped_one_nanosecond_before_a_deadline(step: Step) -> bool:
    """A clock advance stopped one nanosecond before an idle deadline."""
    return _moves_clock(step) and any(
        isinstance(entry, Binding) and entry.deadline_ns == step.after.now_ns + 1
        for _, entry in step.before.entries
    )


@register("affinity", "sometimes", "step", reads=REPLICA_READS, guards=REPLICA_GUARDS)
def a_replica_update_replaced_an_expired_binding(step: Step) -> bool:
    """A replica update revived a session whose binding had expired."""
    return bool(step.outcome.value == ReplicaOutcome.REPLACED_EXPIRED)


@register("affinity", "sometimes", "step", reads=REPLICA_READS, guards=REPLICA_GUARDS)
def a_replica_update_replaced_a_live_binding(step: Step) -> bool:
    """A newer replica version moved a live binding to another target."""
    return bool(step.outcome.value == ReplicaOutcome.REPLACED_NEWER)


@register("affinity", "sometimes", "step", reads=REPLICA_READS, guards=REPLICA_GUARDS)
def a_replica_update_was_ignored_as_a_conflict(step: Step) -> bool:
    """A replica update lost to the live binding's version."""
    return bool(step.outcome.value == ReplicaOutcome.IGNORED_CONFLICT)


@register("affinity", "sometimes", "step", reads=REPLICA_READS, guards=REPLICA_GUARDS)
def a_replica_update_refreshed_a_binding(step: Step) -> bool:
    """A replica update refreshed a live binding's deadline."""
    return bool(step.outcome.value == ReplicaOutcome.REFRESHED)


@register("affinity", "sometimes", "step", reads=REPLICA_READS, guards=REPLICA_GUARDS)
def a_replica_update_met_an_initialization(step: Step) -> bool:
    """A replica update arrived while the session was initializing."""
    return bool(step.outcome.value == ReplicaOutcome.IGNORED_INITIALIZING)


@register("affinity", "sometimes", "step", reads=REPLICA_READS, guards=REPLICA_GUARDS)
def a_replica_update_was_refused_for_capacity(step: Step) -> bool:
    """A replica insert was refused because the table was full."""
    return bool(step.outcome.value == ReplicaOutcome.REJECTED_CAPACITY)


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}.try_acquire",),
    guards=(f"{AFFINITY}::try_acquire", f"{AFFINITY}::acquire"),
)
def a_request_had_to_wait(step: Step) -> bool:
    """An acquisition found the session initializing and had to wait."""
    return isinstance(step.op, Acquire) and isinstance(step.outcome.value, Wait)


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}.waiter_done",),
    guards=(f"{INIT}::commit", f"{INIT}::drop"),
)
def a_waiter_was_woken(step: Step) -> bool:
    """A waiter's notification arrived."""
    return isinstance(step.op, PollWaiter) and step.outcome.value is True


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}.join_initializing",),
    guards=(f"{AFFINITY}::join_initializing",),
)
def a_join_bound_an_initialization(step: Step) -> bool:
    """A request joined another's initialization and bound the session."""
    return isinstance(step.op, Join) and isinstance(step.outcome.value, int)


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}._commit_initialization",),
    guards=(f"{INIT}::commit",),
)
def a_joined_initializer_committed(step: Step) -> bool:
    """An initializer committed after a joiner had already bound its session."""
    if not isinstance(step.op, Commit) or not step.outcome.ok:
        return False
    held = dict(step.before.handles).get(step.op.handle)
    if not isinstance(held, InitHandle):
        return False
    entry = step.before.entry(held.session_id)
    return isinstance(entry, Binding) and entry.revision == held.revision


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}._release_lease",),
    guards=(f"{LEASE}::release",),
)
def a_stale_lease_was_released(step: Step) -> bool:
    """A lease whose binding had since changed version was released."""
    if not isinstance(step.op, Release):
        return False
    held = dict(step.before.handles).get(step.op.handle)
    if not isinstance(held, LeaseHandle):
        return False
    entry = step.before.entry(held.session_id)
    return (
        isinstance(entry, Binding)
        and entry.revision == held.revision
        and entry.version != held.version
    )


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}._commit_bound", f"{MODEL}.rebound_target"),
    guards=(f"{AFFINITY}::commit", f"{LEASE}::rebind"),
)
def a_soft_commit_moved_a_binding(step: Step) -> bool:
    """A soft-mode commit rebound a session to where it was dispatched."""
    if step.before.config.mode is not Mode.SOFT or not isinstance(step.op, Commit):
        return False
    held = dict(step.before.handles).get(step.op.handle)
    if not isinstance(held, LeaseHandle):
        return False
    before = step.before.entry(held.session_id)
    after = step.after.entry(held.session_id)
    return (
        isinstance(before, Binding)
        and isinstance(after, Binding)
        and before.target != after.target
    )


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}._commit_bound", f"{MODEL}.check_dispatch_target"),
    guards=(f"{AFFINITY}::commit", f"{CRATE}::validate_dispatch_target"),
)
def a_hard_commit_elsewhere_was_refused(step: Step) -> bool:
    """A hard-mode commit to another worker or rank failed and dropped the binding."""
    return (
        step.before.config.mode is Mode.HARD
        and isinstance(step.op, Commit)
        and step.outcome.error == "InvalidArgument"
        and isinstance(dict(step.before.handles).get(step.op.handle), LeaseHandle)
    )


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}._check_id",),
    guards=(f"{AFFINITY}::validate_session_id",),
)
def an_oversized_id_was_refused(step: Step) -> bool:
    """An id over the byte limit was refused."""
    return (
        isinstance(step.op, Acquire | ApplyReplica)
        and len(step.op.session_id.encode()) > step.before.config.max_session_id_bytes
    )


@register("affinity", "sometimes", "step", reads=REAP_READS, guards=REAP_GUARDS)
def the_clock_stopped_one_nanosecond_after_a_deadline(step: Step) -> bool:
    """A clock advance stopped one nanosecond after an idle deadline."""
    return _moves_clock(step) and any(
        isinstance(entry, Binding) and entry.deadline_ns + 1 == step.after.now_ns
        for _, entry in step.before.entries
    )


@register("affinity", "sometimes", "step", reads=CLOCK_READS, guards=CLOCK_GUARDS)
def the_clock_advanced_by_zero(step: Step) -> bool:
    """A clock update to the current time was accepted."""
    return (
        _moves_clock(step)
        and step.outcome.ok
        and step.before.now_ns == step.after.now_ns
    )


@register("affinity", "sometimes", "step", reads=CLOCK_READS, guards=CLOCK_GUARDS)
def a_backwards_clock_update_was_refused(step: Step) -> bool:
    """A clock update to an earlier time was refused."""
    return (
        _moves_clock(step)
        and not step.outcome.ok
        and step.op.now_ns < step.before.now_ns
    )


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}._check_manual_clock",),
    guards=(f"{AFFINITY}::with_config",),
    unreachable={"runtime": RUNTIME_RANGE},
)
def a_clock_update_with_an_unrepresentable_deadline_was_refused(step: Step) -> bool:
    """A manual clock update whose deadline leaves the Instant range was refused."""
    instant_range_ns = step.before.config.instant_range_ns
    return (
        _moves_clock(step)
        and not step.outcome.ok
        and instant_range_ns is not None
        and step.before.now_ns <= step.op.now_ns <= instant_range_ns
        and step.op.now_ns + step.before.config.ttl_ns > instant_range_ns
    )


def next_cleanup_ns(state: AffinityState) -> int | None:
    """The next instant idle bindings are collected at, under the table's variant.

    The runtime reaper ticks at every multiple of its period; the cadence
    variant collects at the first advance reaching one period after its last
    collection; collecting on every advance has no such instant (None).
    """
    period_ns = reaper_period_ns(state.config.ttl_ns)
    if state.config.reaping == "runtime_reaper":
        return (state.now_ns // period_ns + 1) * period_ns
    if state.config.reaping == "cadence":
        return state.last_reap_ns + cleanup_period_ns(state.config.ttl_ns)
    return None


_cleanup_goal = register(
    "affinity",
    "sometimes",
    "step",
    reads=(
        f"{TABLE}.advance_clock",
        f"{MODEL}.reaper_period_ns",
        f"{MODEL}.cleanup_period_ns",
    ),
    guards=(f"{AFFINITY}::spawn_reaper",),
    unreachable={"every_advance": NO_CLEANUP_INSTANT},
)


def _stopped_near_cleanup(step: Step, offset_ns: int) -> bool:
    if not (_moves_clock(step) and step.outcome.ok):
        return False
    cleanup_ns = next_cleanup_ns(step.before)
    return cleanup_ns is not None and step.after.now_ns == cleanup_ns + offset_ns


@_cleanup_goal
def the_clock_stopped_exactly_on_a_cleanup_instant(step: Step) -> bool:
    """A clock advance stopped exactly on the next cleanup instant."""
    return _stopped_near_cleanup(step, 0)


@_cleanup_goal
def the_clock_stopped_one_nanosecond_before_a_cleanup_instant(step: Step) -> bool:
    """A clock advance stopped one nanosecond before the next cleanup instant."""
    return _stopped_near_cleanup(step, -1)


@_cleanup_goal
def the_clock_stopped_one_nanosecond_after_a_cleanup_instant(step: Step) -> bool:
    """A clock advance stopped one nanosecond after the next cleanup instant."""
    return _stopped_near_cleanup(step, 1)


@register(
    "affinity",
    "sometimes",
    "step",
    reads=(f"{TABLE}.try_acquire", f"{TABLE}.query_target", f"{MODEL}.is_expired_at"),
    guards=(f"{AFFINITY}::try_acquire", f"{AFFINITY}::query_target"),
)
def a_lookup_met_an_uncollected_binding_at_its_exact_deadline(step: Step) -> bool:
    """Acquisition or lookup met an unleased, uncollected binding at its deadline."""
    if not isinstance(step.op, Acquire | Query):
        return False
    entry = step.before.entry(step.op.session_id)
    return (
        isinstance(entry, Binding)
        and entry.leases == 0
        and entry.deadline_ns == step.before.now_ns
    )
