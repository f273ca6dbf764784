"""Lease properties of the affinity table (SPEC D2, D4, D11, D12)."""

from __future__ import annotations

from model.affinity.ops import Commit, DropTable, Invalidate, PollWaiter
from model.affinity.table import (
    AffinityState,
    Binding,
    InitHandle,
    Initializing,
    LeaseHandle,
    WaiterHandle,
)
from model.affinity.types import Mode
from properties.affinity._steps import bindings_survive, kept_bindings
from properties.registry import Step, register


@register("affinity", "always", "state", spec="D2")
def every_active_lease_is_held_by_someone(state: AffinityState) -> bool:
    """A binding's lease count is its live leases plus a joined initializer's use."""
    for session_id, entry in state.entries:
        if not isinstance(entry, Binding):
            continue
        holders = sum(
            1
            for _, handle in state.handles
            if isinstance(handle, LeaseHandle | InitHandle)
            and handle.session_id == session_id
            and handle.revision == entry.revision
        )
        if entry.leases != holders:
            return False
    return True


@register("affinity", "always", "state", spec="D4")
def every_initializing_entry_has_its_initializer(state: AffinityState) -> bool:
    """An initializing entry is owned by a live, uncommitted initialization."""
    initializers = {
        (handle.session_id, handle.revision)
        for _, handle in state.handles
        if isinstance(handle, InitHandle)
    }
    return all(
        (session_id, entry.revision) in initializers
        for session_id, entry in state.entries
        if isinstance(entry, Initializing)
    )


@register("affinity", "always", "step", spec="D4")
def a_leased_binding_is_never_removed_behind_its_back(step: Step) -> bool:
    """Only invalidation or a failed hard commit removes a leased binding."""
    if isinstance(step.op, Invalidate | Commit | DropTable):
        return True
    return bindings_survive(step, lambda binding: binding.leases > 0)


@register("affinity", "always", "step", spec="D11")
def a_soft_commit_never_changes_the_binding_scope(step: Step) -> bool:
    """In soft mode a commit keeps worker-only bindings worker-only, ranked ranked."""
    if step.before.config.mode is not Mode.SOFT or not isinstance(step.op, Commit):
        return True
    return all(
        (after.target.rank is None) == (before.target.rank is None)
        for before, after in kept_bindings(step)
        if after.revision == before.revision
    )


@register("affinity", "always", "step", spec="D11")
def a_hard_commit_never_moves_a_binding(step: Step) -> bool:
    """In hard mode a commit never changes an existing binding's target."""
    if step.before.config.mode is not Mode.HARD or not isinstance(step.op, Commit):
        return True
    return all(after.target == before.target for before, after in kept_bindings(step))


@register("affinity", "always", "step", spec="D12")
def a_waiter_completes_once_its_initialization_settles(step: Step) -> bool:
    """A waiter is done exactly when its initialization committed, aborted or joined."""
    if not isinstance(step.op, PollWaiter) or not step.outcome.ok:
        return True
    waiter = dict(step.before.handles)[step.op.waiter]
    assert isinstance(waiter, WaiterHandle)
    return bool(step.outcome.value == (waiter.revision in step.before.notified))
