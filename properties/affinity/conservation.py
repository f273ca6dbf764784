"""Accounting properties of the affinity table."""

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
from properties.affinity._cites import AFFINITY, INIT, INNER, TABLE
from properties.affinity._steps import a_refusal_changes_nothing
from properties.registry import Step, register


def some_entry_exists(state: AffinityState) -> bool:
    """The table holds at least one entry."""
    return bool(state.entries)


def the_table_is_exactly_full(state: AffinityState) -> bool:
    """The table holds exactly max_entries entries (and at least one)."""
    return bool(state.entries) and len(state.entries) == state.config.max_entries


@register(
    "affinity",
    "always",
    "state",
    antecedent=some_entry_exists,
    boundary=the_table_is_exactly_full,
    reads=(f"{TABLE}.try_acquire", f"{TABLE}.apply_replica_update"),
    guards=(f"{AFFINITY}::reserve_entry", f"{INNER}::reserve_entry"),
)
def entries_never_exceed_capacity(state: AffinityState) -> bool:
    """The table never holds more entries than max_entries."""
    return len(state.entries) <= state.config.max_entries


def an_entry_has_the_latest_revision(state: AffinityState) -> bool:
    """Some entry holds the latest revision issued."""
    return any(entry.revision == state.next_revision - 1 for _, entry in state.entries)


@register(
    "affinity",
    "always",
    "state",
    antecedent=some_entry_exists,
    boundary=an_entry_has_the_latest_revision,
    reads=(f"{TABLE}._initialize", f"{TABLE}._take_revision"),
    guards=(f"{AFFINITY}::try_acquire", f"{INNER}::apply_replica_update"),
)
def revisions_are_unique_and_already_issued(state: AffinityState) -> bool:
    """Every entry has its own revision, each below the next one to be issued."""
    revisions = [entry.revision for _, entry in state.entries]
    return len(set(revisions)) == len(revisions) and all(
        revision < state.next_revision for revision in revisions
    )


def some_handle_is_live(state: AffinityState) -> bool:
    """Some handle is live."""
    return bool(state.handles)


def the_latest_handle_is_live(state: AffinityState) -> bool:
    """The handle numbered last is still live."""
    return any(number == state.next_handle - 1 for number, _ in state.handles)


@register(
    "affinity",
    "always",
    "state",
    antecedent=some_handle_is_live,
    boundary=the_latest_handle_is_live,
    reads=(f"{TABLE}._add",),
    guards=(f"{AFFINITY}::try_acquire", f"{INIT}::commit"),
)
def handles_are_numbered_in_creation_order(state: AffinityState) -> bool:
    """Every live handle's number is below the next number to be handed out."""
    return all(number < state.next_handle for number, _ in state.handles)


def an_acquisition_named_a_vacant_id(step: Step) -> bool:
    """An acquisition on a live table named a vacant, valid id."""
    return (
        isinstance(step.op, Acquire)
        and step.outcome.error != "InvalidArgument"
        and not step.before.dropped
        and step.before.entry(step.op.session_id) is None
    )


def a_vacant_id_met_a_table_at_the_edge(step: Step) -> bool:
    """A vacant id met a table exactly full or one entry short of full."""
    room = step.before.config.max_entries - len(step.before.entries)
    return an_acquisition_named_a_vacant_id(step) and room in {0, 1}


@register(
    "affinity",
    "always",
    "step",
    antecedent=an_acquisition_named_a_vacant_id,
    boundary=a_vacant_id_met_a_table_at_the_edge,
    reads=(f"{TABLE}.try_acquire",),
    guards=(f"{AFFINITY}::try_acquire", f"{AFFINITY}::reserve_entry"),
)
def a_new_session_is_refused_exactly_at_capacity(step: Step) -> bool:
    """Acquiring a vacant id fails with ResourceExhausted iff the table is full."""
    if not isinstance(step.op, Acquire) or step.outcome.error == "InvalidArgument":
        return True
    if step.before.dropped or step.before.entry(step.op.session_id) is not None:
        return True
    full = len(step.before.entries) >= step.before.config.max_entries
    refused = step.outcome.error == "ResourceExhausted"
    return bool(full == refused)


def an_oversized_id_was_named(step: Step) -> bool:
    """An acquisition, query or replica update on a live table named an oversized id."""
    return (
        isinstance(step.op, Acquire | Query | ApplyReplica)
        and not step.before.dropped
        and len(step.op.session_id.encode()) > step.before.config.max_session_id_bytes
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=an_oversized_id_was_named,
    reads=(f"{TABLE}._check_id", f"{TABLE}.apply_replica_update"),
    guards=(f"{AFFINITY}::validate_session_id", f"{INNER}::apply_replica_update"),
)
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


def a_lookup_was_refused(step: Step) -> bool:
    """An acquisition or query was refused."""
    return isinstance(step.op, Acquire | Query) and not step.outcome.ok


def a_lookup_was_refused_for_capacity(step: Step) -> bool:
    """An acquisition was refused because the table was exactly full."""
    return a_lookup_was_refused(step) and step.outcome.error == "ResourceExhausted"


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_lookup_was_refused,
    boundary=a_lookup_was_refused_for_capacity,
    reads=(f"{TABLE}.try_acquire", f"{TABLE}.query_target"),
    guards=(f"{AFFINITY}::try_acquire", f"{AFFINITY}::query_target"),
)
def a_failed_lookup_changes_nothing(step: Step) -> bool:
    """A rejected acquisition or query leaves the table exactly as it was."""
    return a_refusal_changes_nothing(step, (Acquire, Query))


def the_local_sequence_was_touched(step: Step) -> bool:
    """The next local sequence changed, or a sequence was observed."""
    return isinstance(step.op, ObserveSequence | ApplyReplica) or (
        step.after.next_sequence != step.before.next_sequence
    )


def the_last_issued_sequence_was_observed(step: Step) -> bool:
    """A sequence exactly one below the next local one was observed."""
    return (
        isinstance(step.op, ObserveSequence)
        and step.op.sequence + 1 == step.before.next_sequence
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=the_local_sequence_was_touched,
    boundary=the_last_issued_sequence_was_observed,
    reads=(f"{TABLE}._take_version", f"{TABLE}.observe_replica_sequence"),
    guards=(f"{INNER}::next_version", f"{INNER}::observe_replica_sequence"),
)
def local_sequences_never_decrease(step: Step) -> bool:
    """The next local sequence number never goes down."""
    if isinstance(step.op, NextVersion) and step.before.next_sequence == U64_MAX:
        return True  # the crate's atomic counter wraps past u64::MAX
    return bool(step.after.next_sequence >= step.before.next_sequence)


def _observed_sequence(step: Step) -> int | None:
    """The sequence an accepted step observed, directly or by a replica update."""
    if not step.outcome.ok:
        return None
    if isinstance(step.op, ObserveSequence):
        return int(step.op.sequence)
    if (
        isinstance(step.op, ApplyReplica)
        and step.outcome.value != ReplicaOutcome.REJECTED_SESSION_ID
    ):
        return int(step.op.version.sequence)
    return None


def a_sequence_was_observed(step: Step) -> bool:
    """A sequence was observed, directly or by an accepted replica update."""
    return _observed_sequence(step) is not None


def the_next_local_sequence_was_observed(step: Step) -> bool:
    """The observed sequence was exactly the next local one."""
    return bool(_observed_sequence(step) == step.before.next_sequence)


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_sequence_was_observed,
    boundary=the_next_local_sequence_was_observed,
    reads=(f"{TABLE}.observe_replica_sequence", f"{TABLE}.apply_replica_update"),
    guards=(f"{INNER}::observe_replica_sequence", f"{INNER}::apply_replica_update"),
)
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


def a_version_was_taken(step: Step) -> bool:
    """next_version was taken on a live table."""
    return isinstance(step.op, NextVersion) and step.outcome.ok


def a_version_was_taken_with_a_writer_id(step: Step) -> bool:
    """next_version was taken after replication installed a nonzero writer id."""
    return a_version_was_taken(step) and step.before.writer_id != 0


@register(
    "affinity",
    "always",
    "step",
    antecedent=a_version_was_taken,
    boundary=a_version_was_taken_with_a_writer_id,
    reads=(f"{TABLE}.next_version", f"{TABLE}._take_version"),
    guards=(f"{AFFINITY}::next_version", f"{INNER}::next_version"),
)
def issued_versions_carry_the_writer_id(step: Step) -> bool:
    """A version taken by next_version has the current sequence and writer id."""
    if not isinstance(step.op, NextVersion) or not step.outcome.ok:
        return True
    expected = Version(step.before.next_sequence, step.before.writer_id)
    return bool(step.outcome.value == expected)


def an_acquisition_initialized(step: Step) -> bool:
    """An acquisition initialized a session."""
    return isinstance(step.op, Acquire) and isinstance(step.outcome.value, Initialize)


def an_acquisition_reinitialized_an_expired_binding(step: Step) -> bool:
    """An acquisition initialized a session over its expired, uncollected binding."""
    return (
        an_acquisition_initialized(step)
        and step.before.entry(step.op.session_id) is not None
    )


@register(
    "affinity",
    "always",
    "step",
    antecedent=an_acquisition_initialized,
    boundary=an_acquisition_reinitialized_an_expired_binding,
    reads=(f"{TABLE}.try_acquire", f"{TABLE}._initialize"),
    guards=(f"{AFFINITY}::try_acquire",),
)
def an_initialization_leaves_an_initializing_entry(step: Step) -> bool:
    """An acquisition that initializes leaves the session initializing, counted once."""
    if not isinstance(step.op, Acquire) or not isinstance(
        step.outcome.value, Initialize
    ):
        return True
    grew = len(step.after.entries) - len(step.before.entries)
    return grew == (0 if step.before.entry(step.op.session_id) else 1)
