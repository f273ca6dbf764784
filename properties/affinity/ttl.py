"""TTL and clock properties of the affinity table (SPEC D5, D6)."""

from __future__ import annotations

from model.affinity.ops import Acquire, Advance, CrateAdvance, Query
from model.affinity.table import AffinityState, Binding, is_expired_at
from model.affinity.types import Bound, Target
from properties.affinity._steps import a_refusal_changes_nothing, bindings_survive
from properties.registry import Step, register


@register("affinity", "always", "state", spec="B.2")
def no_idle_deadline_lies_beyond_one_ttl(state: AffinityState) -> bool:
    """No binding's idle deadline is later than one TTL after the current time."""
    return all(
        entry.deadline_ns <= state.now_ns + state.config.ttl_ns
        for _, entry in state.entries
        if isinstance(entry, Binding)
    )


@register("affinity", "always", "step", spec="D6")
def the_clock_never_moves_backwards(step: Step) -> bool:
    """No operation moves the table's clock backwards."""
    return bool(step.after.now_ns >= step.before.now_ns)


@register("affinity", "always", "step", spec="D6")
def a_rejected_clock_move_changes_nothing(step: Step) -> bool:
    """A rejected advance leaves clock, entries and handles exactly as they were."""
    return a_refusal_changes_nothing(step, (Advance, CrateAdvance))


@register("affinity", "always", "step", spec="D5")
def an_idle_binding_survives_until_its_deadline(step: Step) -> bool:
    """Advancing the clock never removes a binding before its idle deadline."""
    if not isinstance(step.op, Advance | CrateAdvance):
        return True
    return bindings_survive(
        step, lambda binding: binding.deadline_ns > step.after.now_ns
    )


@register("affinity", "always", "step", spec="D5")
def a_reap_collects_every_expired_binding(step: Step) -> bool:
    """After a reap at instant T, no unleased binding with deadline <= T remains."""
    if step.after.last_reap_ns <= step.before.last_reap_ns:
        return True
    reaped_at_ns = step.after.last_reap_ns
    return not any(
        is_expired_at(entry, reaped_at_ns) for _, entry in step.after.entries
    )


def _served(step: Step) -> Target | None:
    value = step.outcome.value
    if isinstance(step.op, Acquire) and isinstance(value, Bound):
        return value.target
    if isinstance(step.op, Query) and isinstance(value, Target):
        return value
    return None


@register("affinity", "always", "step", spec="D3")
def an_expired_binding_is_never_served(step: Step) -> bool:
    """Lookup and acquisition never serve a binding whose idle deadline has passed."""
    if _served(step) is None:
        return True
    entry = step.before.entry(step.op.session_id)
    return isinstance(entry, Binding) and not step.before.is_expired(entry)


@register("affinity", "always", "step", spec="D3")
def a_live_binding_is_always_served(step: Step) -> bool:
    """A query or acquisition of a live, compatible binding returns its target."""
    if not isinstance(step.op, Acquire | Query) or not step.outcome.ok:
        return True
    entry = step.before.entry(step.op.session_id)
    if not isinstance(entry, Binding) or step.before.is_expired(entry):
        return True
    return _served(step) == entry.target
