"""TTL and clock properties of the affinity table."""

from __future__ import annotations

from model.affinity.ops import Acquire, Advance, CrateAdvance, Query
from model.affinity.table import CLOCK_NS_MAX, AffinityState, Binding
from model.affinity.types import Bound, Target
from properties.affinity._cites import AFFINITY, INIT, LEASE, MODEL, TABLE
from properties.affinity._steps import (
    a_refusal_changes_nothing,
    bindings,
    bindings_survive,
)
from properties.affinity._terms import expired, expired_at
from properties.registry import Step, register


def some_session_is_bound(state: AffinityState) -> bool:
    """Some session is bound."""
    return bool(bindings(state))


def a_deadline_is_exactly_one_ttl_ahead(state: AffinityState) -> bool:
    """Some binding's idle deadline is exactly one TTL after the current time."""
    return any(
        entry.deadline_ns == state.now_ns + state.config.ttl_ns
        for entry in bindings(state).values()
    )


@register(
    "affinity",
    "always",
    "state",
    antecedent=some_session_is_bound,
    boundary=a_deadline_is_exactly_one_ttl_ahead,
    reads=(f"{TABLE}._commit_initialization", f"{TABLE}._release_lease"),
    guards=(f"{INIT}::commit", f"{LEASE}::release"),
)
def no_idle_deadline_lies_beyond_one_ttl(state: AffinityState) -> bool:
    """No binding's idle deadline is later than one TTL after the current time."""
    return all(
        entry.deadline_ns <= state.now_ns + state.config.ttl_ns
        for _, entry in state.entries
        if isinstance(entry, Binding)
    )


def moves_clock(step: Step) -> bool:
    """The operation was a clock update."""
    return isinstance(step.op, Advance | CrateAdvance)


def a_clock_update_named_the_previous_nanosecond(step: Step) -> bool:
    """A clock update asked for 1 ns before the current time."""
    return moves_clock(step) and step.op.now_ns == step.before.now_ns - 1


@register(
    "affinity",
    "always",
    "step",
    antecedent=moves_clock,
    boundary=a_clock_update_named_the_previous_nanosecond,
    reads=(f"{TABLE}.advance_clock", f"{TABLE}.crate_advance_clock"),
    guards=(f"{AFFINITY}::with_config", f"{AFFINITY}::spawn_reaper"),
)
def the_clock_never_moves_backwards(step: Step) -> bool:
    """No operation moves the table's clock backwards."""
    return bool(step.after.now_ns >= step.before.now_ns)


def a_clock_update_was_refused(step: Step) -> bool:
    """A clock update was refused."""
    return moves_clock(step) and not step.outcome.ok


def last_accepted_ns(state: AffinityState) -> int:
    """The latest time the table's clock accepts (past it, updates are refused)."""
    instant_range_ns = state.config.instant_range_ns
    if state.config.clock == "manual" and instant_range_ns is not None:
        return instant_range_ns - state.config.ttl_ns
    return CLOCK_NS_MAX


def a_clock_update_was_refused_by_one_nanosecond(step: Step) -> bool:
    """A refused clock update named 1 ns before now or 1 ns past the last time."""
    return a_clock_update_was_refused(step) and step.op.now_ns in {
        step.before.now_ns - 1,
        last_accepted_ns(step.before) + 1,
    }


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_clock_update_was_refused,
    boundary=a_clock_update_was_refused_by_one_nanosecond,
    reads=(f"{TABLE}.advance_clock", f"{TABLE}._check_manual_clock"),
    guards=(f"{AFFINITY}::with_config", f"{AFFINITY}::spawn_reaper"),
)
def a_rejected_clock_move_changes_nothing(step: Step) -> bool:
    """A rejected advance leaves clock, entries and handles exactly as they were."""
    return a_refusal_changes_nothing(step, (Advance, CrateAdvance))


def a_clock_update_stopped_short_of_a_deadline(step: Step) -> bool:
    """A clock update stopped before some binding's idle deadline."""
    return moves_clock(step) and any(
        entry.deadline_ns > step.after.now_ns
        for entry in bindings(step.before).values()
    )


def a_clock_update_stopped_one_nanosecond_short(step: Step) -> bool:
    """A clock update stopped 1 ns before some binding's idle deadline."""
    return moves_clock(step) and any(
        entry.deadline_ns == step.after.now_ns + 1
        for entry in bindings(step.before).values()
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_clock_update_stopped_short_of_a_deadline,
    boundary=a_clock_update_stopped_one_nanosecond_short,
    reads=(f"{TABLE}.advance_clock", f"{TABLE}._reap", f"{MODEL}.is_expired_at"),
    guards=(f"{AFFINITY}::spawn_reaper",),
)
def an_idle_binding_survives_until_its_deadline(step: Step) -> bool:
    """Advancing the clock never removes a binding before its idle deadline."""
    if not isinstance(step.op, Advance | CrateAdvance):
        return True
    return bindings_survive(
        step, lambda binding: binding.deadline_ns > step.after.now_ns
    )


def a_reap_met_an_expired_binding(step: Step) -> bool:
    """A reap ran while an unleased binding had reached its deadline."""
    reaped_at_ns = step.after.last_reap_ns
    return reaped_at_ns > step.before.last_reap_ns and any(
        expired_at(entry, reaped_at_ns) for _, entry in step.before.entries
    )


def a_reap_ran_exactly_on_a_deadline(step: Step) -> bool:
    """A reap ran at exactly an unleased binding's idle deadline."""
    reaped_at_ns = step.after.last_reap_ns
    return reaped_at_ns > step.before.last_reap_ns and any(
        entry.leases == 0 and entry.deadline_ns == reaped_at_ns
        for entry in bindings(step.before).values()
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_reap_met_an_expired_binding,
    boundary=a_reap_ran_exactly_on_a_deadline,
    reads=(f"{TABLE}._reap", f"{MODEL}.is_expired_at"),
    guards=(f"{AFFINITY}::spawn_reaper",),
)
def a_reap_collects_every_expired_binding(step: Step) -> bool:
    """After a reap at instant T, no unleased binding with deadline <= T remains."""
    if step.after.last_reap_ns <= step.before.last_reap_ns:
        return True
    reaped_at_ns = step.after.last_reap_ns
    return not any(expired_at(entry, reaped_at_ns) for _, entry in step.after.entries)


def _served(step: Step) -> Target | None:
    value = step.outcome.value
    if isinstance(step.op, Acquire) and isinstance(value, Bound):
        return value.target
    if isinstance(step.op, Query) and isinstance(value, Target):
        return value
    return None


def a_lookup_named_a_session_without_a_live_binding(step: Step) -> bool:
    """An acquisition or query named a vacant, initializing or expired session."""
    if not isinstance(step.op, Acquire | Query):
        return False
    entry = step.before.entry(step.op.session_id)
    return not isinstance(entry, Binding) or expired(step.before, entry)


def a_lookup_met_a_binding_at_its_exact_deadline(step: Step) -> bool:
    """An acquisition or query met an unleased binding whose deadline is now."""
    if not isinstance(step.op, Acquire | Query):
        return False
    entry = step.before.entry(step.op.session_id)
    return (
        isinstance(entry, Binding)
        and entry.leases == 0
        and entry.deadline_ns == step.before.now_ns
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_lookup_named_a_session_without_a_live_binding,
    boundary=a_lookup_met_a_binding_at_its_exact_deadline,
    reads=(f"{TABLE}.try_acquire", f"{TABLE}.query_target", f"{TABLE}._expired"),
    guards=(f"{AFFINITY}::try_acquire", f"{AFFINITY}::query_target"),
)
def an_expired_binding_is_never_served(step: Step) -> bool:
    """Lookup and acquisition never serve a binding whose idle deadline has passed."""
    if _served(step) is None:
        return True
    entry = step.before.entry(step.op.session_id)
    return isinstance(entry, Binding) and not expired(step.before, entry)


def an_accepted_lookup_met_a_live_binding(step: Step) -> bool:
    """An accepted acquisition or query named a session with a live binding."""
    if not isinstance(step.op, Acquire | Query) or not step.outcome.ok:
        return False
    entry = step.before.entry(step.op.session_id)
    return isinstance(entry, Binding) and not expired(step.before, entry)


def a_lookup_met_a_binding_in_its_last_nanosecond(step: Step) -> bool:
    """An accepted lookup met an unleased binding 1 ns before its deadline."""
    if not an_accepted_lookup_met_a_live_binding(step):
        return False
    entry = step.before.entry(step.op.session_id)
    return (
        isinstance(entry, Binding)
        and entry.leases == 0
        and entry.deadline_ns == step.before.now_ns + 1
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=an_accepted_lookup_met_a_live_binding,
    boundary=a_lookup_met_a_binding_in_its_last_nanosecond,
    reads=(f"{TABLE}.try_acquire", f"{TABLE}.query_target", f"{TABLE}._expired"),
    guards=(f"{AFFINITY}::try_acquire", f"{AFFINITY}::query_target"),
)
def a_live_binding_is_always_served(step: Step) -> bool:
    """A query or acquisition of a live, compatible binding returns its target."""
    if not isinstance(step.op, Acquire | Query) or not step.outcome.ok:
        return True
    entry = step.before.entry(step.op.session_id)
    if not isinstance(entry, Binding) or expired(step.before, entry):
        return True
    return _served(step) == entry.target
