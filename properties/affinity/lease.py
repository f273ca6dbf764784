"""Lease properties of the affinity table."""

from __future__ import annotations

from collections import Counter

from model.affinity.ops import Advance, Commit, DropTable, Invalidate, PollWaiter
from model.affinity.table import (
    AffinityState,
    Binding,
    InitHandle,
    Initializing,
    LeaseHandle,
    WaiterHandle,
)
from model.affinity.types import Mode, Target
from properties.affinity._cites import AFFINITY, CRATE, INIT, INNER, LEASE, MODEL, TABLE
from properties.affinity._steps import bindings, bindings_survive, kept_bindings
from properties.registry import Step, register


def _holders(state: AffinityState) -> set[tuple[str, int]]:
    """(session, revision) of every live lease or initialization."""
    return {
        (handle.session_id, handle.revision)
        for _, handle in state.handles
        if isinstance(handle, LeaseHandle | InitHandle)
    }


def a_binding_is_held_or_counted(state: AffinityState) -> bool:
    """Some binding counts a lease, or a live handle names its revision."""
    holders = _holders(state)
    return any(
        entry.leases > 0 or (session_id, entry.revision) in holders
        for session_id, entry in bindings(state).items()
    )


def a_joined_initializer_holds_a_reserved_use(state: AffinityState) -> bool:
    """A live initialization names a binding's revision (a joiner bound it)."""
    initializers = {
        (handle.session_id, handle.revision)
        for _, handle in state.handles
        if isinstance(handle, InitHandle)
    }
    return any(
        (session_id, entry.revision) in initializers
        for session_id, entry in bindings(state).items()
    )


@register(
    "affinity",
    "always",
    "state",
    antecedent=a_binding_is_held_or_counted,
    boundary=a_joined_initializer_holds_a_reserved_use,
    reads=(
        f"{TABLE}.try_acquire",
        f"{TABLE}.join_initializing",
        f"{TABLE}._release_lease",
    ),
    guards=(
        f"{AFFINITY}::try_acquire",
        f"{AFFINITY}::join_initializing",
        f"{LEASE}::release",
    ),
)
def every_active_lease_is_held_by_someone(state: AffinityState) -> bool:
    """A binding's lease count is its live leases plus a joined initializer's use."""
    holders = Counter(
        (handle.session_id, handle.revision)
        for _, handle in state.handles
        if isinstance(handle, LeaseHandle | InitHandle)
    )
    return all(
        entry.leases == holders[session_id, entry.revision]
        for session_id, entry in state.entries
        if isinstance(entry, Binding)
    )


def some_session_is_initializing(state: AffinityState) -> bool:
    """Some session is initializing."""
    return any(isinstance(entry, Initializing) for _, entry in state.entries)


@register(
    "affinity",
    "always",
    "state",
    antecedent=some_session_is_initializing,
    reads=(f"{TABLE}.try_acquire", f"{TABLE}._abandon"),
    guards=(f"{AFFINITY}::try_acquire", f"{INIT}::drop"),
)
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


def a_step_ran_beside_a_leased_binding(step: Step) -> bool:
    """A step other than invalidation, commit or drop ran while a binding was leased."""
    return not isinstance(step.op, Invalidate | Commit | DropTable) and any(
        entry.leases > 0 for entry in bindings(step.before).values()
    )


def the_clock_passed_a_leased_bindings_deadline(step: Step) -> bool:
    """A clock update reached the idle deadline of a leased binding."""
    return isinstance(step.op, Advance) and any(
        entry.leases > 0 and entry.deadline_ns <= step.after.now_ns
        for entry in bindings(step.before).values()
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_step_ran_beside_a_leased_binding,
    boundary=the_clock_passed_a_leased_bindings_deadline,
    reads=(f"{TABLE}._reap", f"{TABLE}.apply_replica_update"),
    guards=(f"{AFFINITY}::spawn_reaper", f"{INNER}::apply_replica_update"),
)
def a_leased_binding_is_never_removed_behind_its_back(step: Step) -> bool:
    """Only invalidation or a failed hard commit removes a leased binding."""
    if isinstance(step.op, Invalidate | Commit | DropTable):
        return True
    return bindings_survive(step, lambda binding: binding.leases > 0)


def _committed_binding(step: Step, mode: Mode) -> Binding | None:
    """The binding a commit in `mode` named, as it stood before the step."""
    if step.before.config.mode is not mode or not isinstance(step.op, Commit):
        return None
    held = dict(step.before.handles).get(step.op.handle)
    if not isinstance(held, LeaseHandle | InitHandle):
        return None
    entry = step.before.entry(held.session_id)
    return entry if isinstance(entry, Binding) else None


def a_soft_commit_named_a_bound_session(step: Step) -> bool:
    """A soft-mode commit named a session that was already bound."""
    return _committed_binding(step, Mode.SOFT) is not None


def _scope_differs(bound: Target, dispatched: Target) -> bool:
    return (bound.rank is None) != (dispatched.rank is None)


def a_soft_commit_was_dispatched_across_scopes(step: Step) -> bool:
    """A soft commit's dispatch had a rank where the binding had none, or back."""
    entry = _committed_binding(step, Mode.SOFT)
    return entry is not None and _scope_differs(entry.target, step.op.dispatched)


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_soft_commit_named_a_bound_session,
    boundary=a_soft_commit_was_dispatched_across_scopes,
    reads=(f"{TABLE}._commit_bound", f"{MODEL}.rebound_target"),
    guards=(f"{AFFINITY}::commit", f"{LEASE}::rebind", f"{LEASE}::rebound_target"),
)
def a_soft_commit_never_changes_the_binding_scope(step: Step) -> bool:
    """In soft mode a commit keeps worker-only bindings worker-only, ranked ranked."""
    if step.before.config.mode is not Mode.SOFT or not isinstance(step.op, Commit):
        return True
    return all(
        (after.target.rank is None) == (before.target.rank is None)
        for before, after in kept_bindings(step)
        if after.revision == before.revision
    )


def a_hard_commit_named_a_bound_session(step: Step) -> bool:
    """A hard-mode commit named a session that was already bound."""
    return _committed_binding(step, Mode.HARD) is not None


def a_hard_commit_was_dispatched_elsewhere(step: Step) -> bool:
    """A hard commit's dispatch named another target than the binding's."""
    entry = _committed_binding(step, Mode.HARD)
    return entry is not None and entry.target != step.op.dispatched


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_hard_commit_named_a_bound_session,
    boundary=a_hard_commit_was_dispatched_elsewhere,
    reads=(f"{TABLE}._commit_bound", f"{MODEL}.check_dispatch_target"),
    guards=(f"{AFFINITY}::commit", f"{CRATE}::validate_dispatch_target"),
)
def a_hard_commit_never_moves_a_binding(step: Step) -> bool:
    """In hard mode a commit never changes an existing binding's target."""
    if step.before.config.mode is not Mode.HARD or not isinstance(step.op, Commit):
        return True
    return all(after.target == before.target for before, after in kept_bindings(step))


def a_live_waiter_was_polled(step: Step) -> bool:
    """A live waiter was polled."""
    return isinstance(step.op, PollWaiter) and step.outcome.ok


def a_settled_waiter_was_polled(step: Step) -> bool:
    """A waiter was polled after its initialization had settled."""
    if not a_live_waiter_was_polled(step):
        return False
    waiter = dict(step.before.handles)[step.op.waiter]
    return isinstance(waiter, WaiterHandle) and waiter.revision in step.before.notified


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_live_waiter_was_polled,
    boundary=a_settled_waiter_was_polled,
    reads=(f"{TABLE}.waiter_done", f"{TABLE}._abandon"),
    guards=(f"{AFFINITY}::try_acquire", f"{INIT}::commit", f"{INIT}::drop"),
)
def a_waiter_completes_once_its_initialization_settles(step: Step) -> bool:
    """A waiter is done exactly when its initialization committed, aborted or joined."""
    if not isinstance(step.op, PollWaiter) or not step.outcome.ok:
        return True
    waiter = dict(step.before.handles)[step.op.waiter]
    assert isinstance(waiter, WaiterHandle)
    return bool(step.outcome.value == (waiter.revision in step.before.notified))
