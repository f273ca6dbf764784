"""Accounting properties of the affinity table (SPEC D1, D7, D8, D9)."""

from __future__ import annotations

from model.affinity.ops import (
    Acquire,
    ApplyReplica,
    NextVersion,
    ObserveSequence,
    Query,
)
from model.affinity.table import AffinityState
from model.affinity.types import U64_MAX, Initialize, ReplicaOutcome, Version
from properties.affinity._steps import a_refusal_changes_nothing
from properties.registry import Step, register


@register("affinity", "always", "state", spec="D1")
def entries_never_exceed_capacity(state: AffinityState) -> bool:
    """The table never holds more entries than max_entries."""
    return len(state.entries) <= state.config.max_entries


@register("affinity", "always", "state", spec="B.1")
def revisions_are_unique_and_already_issued(state: AffinityState) -> bool:
    """Every entry has its own revision, each below the next one to be issued."""
    revisions = [entry.revision for _, entry in state.entries]
    return len(set(revisions)) == len(revisions) and all(
        revision < state.next_revision for revision in revisions
    )


@register("affinity", "always", "state", spec="B.1")
def handles_are_numbered_in_creation_order(state: AffinityState) -> bool:
    """Every live handle's number is below the next number to be handed out."""
    return all(number < state.next_handle for number, _ in state.handles)


@register("affinity", "always", "step", spec="D7")
def a_new_session_is_refused_exactly_at_capacity(step: Step) -> bool:
    """Acquiring a vacant id fails with ResourceExhausted iff the table is full."""
    if not isinstance(step.op, Acquire) or step.outcome.error == "InvalidArgument":
        return True
    if step.before.dropped or step.before.entry(step.op.session_id) is not None:
        return True
    full = len(step.before.entries) >= step.before.config.max_entries
    refused = step.outcome.error == "ResourceExhausted"
    return bool(full == refused)


@register("affinity", "always", "step", spec="D8")
def an_oversized_session_id_is_rejected(step: Step) -> bool:
    """Ids longer than max_session_id_bytes in UTF-8 are rejected, never stored."""
    if not isinstance(step.op, Acquire | Query | ApplyReplica) or step.before.dropped:
        return True
    limit = step.before.config.max_session_id_bytes
    if len(step.op.session_id.encode()) <= limit:
        return True
    if isinstance(step.op, ApplyReplica):
        rejected = step.outcome.value == ReplicaOutcome.REJECTED_SESSION_ID
    else:
        rejected = step.outcome.error == "InvalidArgument"
    return bool(rejected and step.before == step.after)


@register("affinity", "always", "step", spec="D8")
def a_failed_lookup_changes_nothing(step: Step) -> bool:
    """A rejected acquisition or query leaves the table exactly as it was."""
    return a_refusal_changes_nothing(step, (Acquire, Query))


@register("affinity", "always", "step", spec="D9")
def local_sequences_never_decrease(step: Step) -> bool:
    """The next local sequence number never goes down."""
    if isinstance(step.op, NextVersion) and step.before.next_sequence == U64_MAX:
        return True  # the crate's atomic counter wraps past u64::MAX
    return bool(step.after.next_sequence >= step.before.next_sequence)


@register("affinity", "always", "step", spec="D9")
def an_observed_sequence_is_overtaken(step: Step) -> bool:
    """After observing sequence s (directly or by replica), local sequences exceed s."""
    if isinstance(step.op, ObserveSequence):
        sequence = step.op.sequence
    elif (
        isinstance(step.op, ApplyReplica)
        and step.outcome.value != ReplicaOutcome.REJECTED_SESSION_ID
        and step.outcome.ok
    ):
        sequence = step.op.version.sequence
    else:
        return True
    if not step.outcome.ok:
        return True
    return bool(step.after.next_sequence > sequence or sequence == U64_MAX)


@register("affinity", "always", "step", spec="D9")
def issued_versions_carry_the_writer_id(step: Step) -> bool:
    """A version taken by next_version has the current sequence and writer id."""
    if not isinstance(step.op, NextVersion) or not step.outcome.ok:
        return True
    expected = Version(step.before.next_sequence, step.before.writer_id)
    return bool(step.outcome.value == expected)


@register("affinity", "always", "step", spec="B.5")
def an_initialization_leaves_an_initializing_entry(step: Step) -> bool:
    """An acquisition that initializes leaves the session initializing, counted once."""
    if not isinstance(step.op, Acquire) or not isinstance(
        step.outcome.value, Initialize
    ):
        return True
    grew = len(step.after.entries) - len(step.before.entries)
    return grew == (0 if step.before.entry(step.op.session_id) else 1)
