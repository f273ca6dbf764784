"""Properties of affinity replicas over a faulty network.

Subject `replica`: each predicate reads a `Step` whose states are
`model.replica.network.NetworkState` snapshots (every replica's reference
table and every link) and whose operation is a `model.replica.ops` step.
Per-replica properties of the affinity table are checked as well, on each
table call a network step makes (subject `affinity`).

Convergence, and what 1.6.1 lets us promise (`replicas_agree_after_a_heal_and_flush`).
A version is (sequence, writer); each writer's sequences only grow
(`next_sequence.fetch_add`, and `fetch_max` past every sequence a replica
update carries: affinity.rs:629-639), so a version names one binding and one
target. An applied update never lowers a live binding's version: an equal or
greater version of the same target refreshes it, a strictly greater one moves
it, anything else is a conflict; only an expired binding is replaced whatever
the version (affinity.rs:641-708). So once every replica has received every
live binding of every other, all live copies of a session carry the greatest
live version -- the greatest, not the latest: a replica that used more
sequences while partitioned wins over a binding made later elsewhere. Three
things stop a replica from holding that copy, and the check excuses exactly
these: the session is initializing there (the update is ignored,
affinity.rs:669); the replica has no entry for it and is full
(`RejectedCapacity`, expired entries count until the reaper collects them,
affinity.rs:654-656); or the session is live nowhere. Leases do not stop
agreement: a newer version moves a leased binding and keeps its leases. Soft
and hard mode only change what is published (a soft commit elsewhere
publishes a new version; a refused hard commit removes the binding). Nothing
is promised without the flush: the crate publishes on commit, join and
release only (affinity.rs:842-846, 888-921), never re-sends a dropped update,
and publishes nothing on invalidation (affinity.rs:925-965) or expiry, so an
invalidated binding stays live elsewhere and a flush brings it back.
"""

from __future__ import annotations

from model.affinity.ops import ApplyReplica
from model.affinity.table import Binding, Initializing
from model.affinity.types import ReplicaOutcome
from model.replica.network import Message, NetworkState
from model.replica.ops import Call, Deliver, Duplicate, HealAndFlush, NetworkOutcome
from properties.affinity._cites import AFFINITY, INNER, LEASE, TABLE
from properties.affinity._terms import live_binding
from properties.registry import Step, register

READS = (
    f"{TABLE}.apply_replica_update",
    "model.replica.network.NetworkState.live_binding",
)
GUARDS = (
    f"{AFFINITY}::apply_replica_update",
    f"{INNER}::apply_replica_update",
    f"{LEASE}::publish",
)

_APPLIED = frozenset(
    {
        ReplicaOutcome.INSERTED,
        ReplicaOutcome.REFRESHED,
        ReplicaOutcome.REPLACED_EXPIRED,
        ReplicaOutcome.REPLACED_NEWER,
    }
)


def _deliveries(step: Step) -> list[Call]:
    """The replica updates a step applied (a delivery, a duplicate or a flush)."""
    if not isinstance(step.op, Deliver | Duplicate | HealAndFlush):
        return []
    outcome: NetworkOutcome = step.outcome
    return [call for call in outcome.calls if isinstance(call.op, ApplyReplica)]


def _delivered_message(step: Step) -> tuple[Message, ReplicaOutcome] | None:
    """The message a `Deliver` or `Duplicate` step applied, and its outcome."""
    if not isinstance(step.op, Deliver | Duplicate):
        return None
    calls = _deliveries(step)
    message = step.before.message(step.op.source, step.op.dest, step.op.position)
    if not calls or message is None:
        return None
    value = calls[0].outcome.value
    return (message, value) if isinstance(value, ReplicaOutcome) else None


def live_sessions(state: NetworkState) -> dict[str, list[int]]:
    """Session id -> the replicas serving it live, for every session live somewhere."""
    found: dict[str, list[int]] = {}
    for replica, table in enumerate(state.replicas):
        for session_id, _ in table.entries:
            if live_binding(state.replicas[replica], session_id) is not None:
                found.setdefault(session_id, []).append(replica)
    return dict(sorted(found.items()))


def replicated_sessions(state: NetworkState) -> list[str]:
    """Sessions served live by at least two replicas (a non-vacuous agreement)."""
    return [s for s, replicas in live_sessions(state).items() if len(replicas) >= 2]


def _excused(state: NetworkState, replica: int, session_id: str) -> str:
    """Why `replica` may lack `session_id`'s live binding after a flush, or ''."""
    table = state.replicas[replica]
    entry = table.entry(session_id)
    if isinstance(entry, Initializing):
        return "initializing"
    if entry is None and len(table.entries) >= table.config.max_entries:
        return "full"
    return ""


def _excuses(state: NetworkState) -> set[str]:
    """The excuses a flush's agreement check used, over every live session."""
    return {
        _excused(state, replica, session_id)
        for session_id, serving in live_sessions(state).items()
        for replica in range(len(state.replicas))
        if replica not in serving
    }


def _flushed(step: Step) -> bool:
    return isinstance(step.op, HealAndFlush) and bool(step.outcome.ok)


def a_step_applied_a_replica_update(step: Step) -> bool:
    """A delivery, a duplicate or a flush applied at least one replica update."""
    return bool(_deliveries(step))


def a_delivery_met_a_leased_binding(step: Step) -> bool:
    """A replica update was applied while some replica's binding held a lease."""
    if not _deliveries(step):
        return False
    before: NetworkState = step.before
    return any(
        isinstance(entry, Binding) and entry.leases > 0
        for table in before.replicas
        for _, entry in table.entries
    )


def a_heal_and_flush_completed(step: Step) -> bool:
    """Every link was healed and every update in flight delivered."""
    return _flushed(step)


def a_flush_left_a_session_live_on_two_replicas(step: Step) -> bool:
    """After the flush a session was live on at least two replicas."""
    return _flushed(step) and bool(replicated_sessions(step.after))


@register(
    "replica",
    "always",
    "step",
    antecedent=a_step_applied_a_replica_update,
    reads=READS,
    guards=GUARDS,
)
def a_delivery_never_lowers_a_live_version(step: Step) -> bool:
    """A delivery leaves every live binding live, with a version at least as high."""
    if not _deliveries(step):
        return True
    before: NetworkState = step.before
    after: NetworkState = step.after
    for replica in range(len(before.replicas)):
        for session_id, _ in before.replicas[replica].entries:
            was = live_binding(before.replicas[replica], session_id)
            now = live_binding(after.replicas[replica], session_id)
            if was is not None and (now is None or now.version < was.version):
                return False
    return True


@register(
    "replica",
    "always",
    "step",
    antecedent=a_delivery_met_a_leased_binding,
    reads=READS,
    guards=GUARDS,
)
def a_delivery_keeps_every_lease(step: Step) -> bool:
    """A delivery never removes a leased binding nor changes its lease count."""
    if not _deliveries(step):
        return True
    before: NetworkState = step.before
    after: NetworkState = step.after
    for table_before, table_after in zip(before.replicas, after.replicas, strict=True):
        for session_id, entry in table_before.entries:
            if not isinstance(entry, Binding) or entry.leases == 0:
                continue
            kept = table_after.entry(session_id)
            if not isinstance(kept, Binding):
                return False
            if (kept.revision, kept.leases) != (entry.revision, entry.leases):
                return False
    return True


@register(
    "replica",
    "always",
    "step",
    antecedent=a_heal_and_flush_completed,
    boundary=a_flush_left_a_session_live_on_two_replicas,
    reads=READS,
    guards=GUARDS,
)
def replicas_agree_after_a_heal_and_flush(step: Step) -> bool:
    """After heal and flush, every live copy of a session matches; only excused gaps."""
    if not _flushed(step):
        return True
    after: NetworkState = step.after
    if any(link.cut or link.in_flight for link in after.links):
        return False
    for session_id, serving in live_sessions(after).items():
        copies = set()
        for replica in serving:
            binding = live_binding(after.replicas[replica], session_id)
            assert binding is not None
            copies.add((binding.target, binding.version))
        if len(copies) != 1:
            return False
        for replica in range(len(after.replicas)):
            if replica not in serving and not _excused(after, replica, session_id):
                return False
    return True


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_delivery_replaced_a_live_binding_with_a_newer_version(step: Step) -> bool:
    """A delivered update moved a live binding to its newer version and target."""
    return any(
        call.outcome.value == ReplicaOutcome.REPLACED_NEWER
        for call in _deliveries(step)
    )


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_stale_delivery_was_ignored_as_a_conflict(step: Step) -> bool:
    """A delivered update lost to the receiver's live binding and changed nothing."""
    return any(
        call.outcome.value == ReplicaOutcome.IGNORED_CONFLICT
        for call in _deliveries(step)
    )


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_message_was_delivered_twice(step: Step) -> bool:
    """A message whose copy had already been applied was delivered again."""
    delivered = _delivered_message(step)
    return delivered is not None and delivered[0].deliveries >= 1


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_message_was_delivered_out_of_order(step: Step) -> bool:
    """A message was delivered while an older one waited on the same link."""
    return _delivered_message(step) is not None and step.op.position > 0


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_delivery_revived_an_expired_binding(step: Step) -> bool:
    """A delivered update replaced a binding that had expired on the receiver."""
    delivered = _delivered_message(step)
    return delivered is not None and delivered[1] == ReplicaOutcome.REPLACED_EXPIRED


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_delivery_arrived_a_ttl_after_it_was_sent(step: Step) -> bool:
    """An update delivered a full TTL or more after it was sent was still applied."""
    delivered = _delivered_message(step)
    if delivered is None:
        return False
    message, outcome = delivered
    table = step.before.replicas[message.dest]
    return outcome in _APPLIED and table.now_ns >= message.sent_ns + table.config.ttl_ns


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_convergence_check_compared_a_binding_on_two_replicas(step: Step) -> bool:
    """After a heal and flush, some session was served live by two replicas or more."""
    return _flushed(step) and bool(replicated_sessions(step.after))


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_convergence_check_excused_a_full_replica(step: Step) -> bool:
    """After a heal and flush, a full replica lacked a session live elsewhere."""
    return _flushed(step) and "full" in _excuses(step.after)


@register(
    "replica",
    "sometimes",
    "step",
    reads=READS,
    guards=GUARDS,
)
def a_convergence_check_excused_an_initializing_session(step: Step) -> bool:
    """After a heal and flush, a session live elsewhere was initializing on another."""
    return _flushed(step) and "initializing" in _excuses(step.after)
