"""Replica-update properties of the affinity table (SPEC B.13, D10)."""

from __future__ import annotations

from model.affinity.ops import ApplyReplica
from model.affinity.table import Binding, Initializing
from model.affinity.types import ReplicaOutcome
from properties.registry import Step, register


@register("affinity", "always", "step", spec="D10")
def a_replica_update_never_touches_an_initializing_entry(step: Step) -> bool:
    """Replica updates leave an initializing entry exactly as it was."""
    if not isinstance(step.op, ApplyReplica):
        return True
    before = step.before.entry(step.op.session_id)
    if not isinstance(before, Initializing):
        return True
    return bool(step.after.entry(step.op.session_id) == before)


@register("affinity", "always", "step", spec="D10")
def a_replica_update_never_lowers_a_live_version(step: Step) -> bool:
    """On a live binding a replica update never lowers the version."""
    if not isinstance(step.op, ApplyReplica):
        return True
    before = step.before.entry(step.op.session_id)
    after = step.after.entry(step.op.session_id)
    if not isinstance(before, Binding) or step.before.is_expired(before):
        return True
    return isinstance(after, Binding) and after.version >= before.version


@register("affinity", "always", "step", spec="D10")
def a_live_binding_moves_only_for_a_newer_version(step: Step) -> bool:
    """A replica update moves a live binding only with a strictly greater version."""
    if not isinstance(step.op, ApplyReplica):
        return True
    before = step.before.entry(step.op.session_id)
    after = step.after.entry(step.op.session_id)
    if not isinstance(before, Binding) or step.before.is_expired(before):
        return True
    assert isinstance(after, Binding)
    return after.target == before.target or step.op.version > before.version


@register("affinity", "always", "step", spec="D10")
def a_replica_update_keeps_the_leases(step: Step) -> bool:
    """A replica update of a live binding keeps its revision and lease count."""
    if not isinstance(step.op, ApplyReplica):
        return True
    before = step.before.entry(step.op.session_id)
    after = step.after.entry(step.op.session_id)
    if not isinstance(before, Binding) or step.before.is_expired(before):
        return True
    assert isinstance(after, Binding)
    return after.revision == before.revision and after.leases == before.leases


@register("affinity", "always", "step", spec="D10")
def reapplying_a_binding_refreshes_it(step: Step) -> bool:
    """Re-applying a live binding's own target and version answers Refreshed."""
    if not isinstance(step.op, ApplyReplica):
        return True
    before = step.before.entry(step.op.session_id)
    if (
        not isinstance(before, Binding)
        or step.before.is_expired(before)
        or (before.target, before.version) != (step.op.target, step.op.version)
    ):
        return True
    return bool(step.outcome.value == ReplicaOutcome.REFRESHED)
