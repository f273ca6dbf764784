"""Replica-update properties of the affinity table."""

from __future__ import annotations

from model.affinity.ops import ApplyReplica
from model.affinity.table import Binding, Entry, Initializing
from model.affinity.types import ReplicaOutcome
from properties.affinity._cites import AFFINITY, INNER, TABLE
from properties.affinity._terms import expired
from properties.registry import Step, register

READS = (f"{TABLE}.apply_replica_update",)
GUARDS = (f"{AFFINITY}::apply_replica_update", f"{INNER}::apply_replica_update")


def _live_updates(step: Step) -> list[tuple[Binding, Entry | None]]:
    """The live binding a replica update met and its entry after; else nothing."""
    if not isinstance(step.op, ApplyReplica):
        return []
    before = step.before.entry(step.op.session_id)
    if not isinstance(before, Binding) or expired(step.before, before):
        return []
    return [(before, step.after.entry(step.op.session_id))]


def a_replica_update_named_an_initializing_session(step: Step) -> bool:
    """A replica update named a session that was initializing."""
    return isinstance(step.op, ApplyReplica) and isinstance(
        step.before.entry(step.op.session_id), Initializing
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_replica_update_named_an_initializing_session,
    reads=READS,
    guards=GUARDS,
)
def a_replica_update_never_touches_an_initializing_entry(step: Step) -> bool:
    """Replica updates leave an initializing entry exactly as it was."""
    if not isinstance(step.op, ApplyReplica):
        return True
    before = step.before.entry(step.op.session_id)
    if not isinstance(before, Initializing):
        return True
    return bool(step.after.entry(step.op.session_id) == before)


def a_replica_update_met_a_live_binding(step: Step) -> bool:
    """A replica update named a session with a live binding."""
    return bool(_live_updates(step))


def a_replica_update_carried_the_live_version(step: Step) -> bool:
    """A replica update carried exactly the live binding's version."""
    return any(step.op.version == before.version for before, _ in _live_updates(step))


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_replica_update_met_a_live_binding,
    boundary=a_replica_update_carried_the_live_version,
    reads=READS,
    guards=GUARDS,
)
def a_replica_update_never_lowers_a_live_version(step: Step) -> bool:
    """On a live binding a replica update never lowers the version."""
    return all(
        isinstance(after, Binding) and after.version >= before.version
        for before, after in _live_updates(step)
    )


def a_replica_update_tied_with_another_target(step: Step) -> bool:
    """A replica update carried the live version but named another target."""
    return any(
        step.op.version == before.version and step.op.target != before.target
        for before, _ in _live_updates(step)
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_replica_update_met_a_live_binding,
    boundary=a_replica_update_tied_with_another_target,
    reads=READS,
    guards=GUARDS,
)
def a_live_binding_moves_only_for_a_newer_version(step: Step) -> bool:
    """A replica update moves a live binding only with a strictly greater version."""
    return all(
        isinstance(after, Binding)
        and (after.target == before.target or step.op.version > before.version)
        for before, after in _live_updates(step)
    )


def a_newer_replica_update_met_a_leased_binding(step: Step) -> bool:
    """A newer replica update met a live binding that had active leases."""
    return any(
        before.leases > 0 and step.op.version > before.version
        for before, _ in _live_updates(step)
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_replica_update_met_a_live_binding,
    boundary=a_newer_replica_update_met_a_leased_binding,
    reads=READS,
    guards=GUARDS,
)
def a_replica_update_keeps_the_leases(step: Step) -> bool:
    """A replica update of a live binding keeps its revision and lease count."""
    return all(
        isinstance(after, Binding)
        and after.revision == before.revision
        and after.leases == before.leases
        for before, after in _live_updates(step)
    )


def a_replica_update_repeated_a_live_binding(step: Step) -> bool:
    """A replica update repeated a live binding's own target and version."""
    return any(
        (before.target, before.version) == (step.op.target, step.op.version)
        for before, _ in _live_updates(step)
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_replica_update_repeated_a_live_binding,
    reads=READS,
    guards=GUARDS,
)
def reapplying_a_binding_refreshes_it(step: Step) -> bool:
    """Re-applying a live binding's own target and version answers Refreshed."""
    return all(
        step.outcome.value == ReplicaOutcome.REFRESHED
        for before, _ in _live_updates(step)
        if (before.target, before.version) == (step.op.target, step.op.version)
    )
