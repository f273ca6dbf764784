"""Counts and class counters: what the model holds, lists and sums.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.ops import Enqueue, PopNext, Retain
from model.queue.types import (
    QueuedItem,
    Rejection,
)
from properties.queue._terms import (
    CLASS,
    CRATE,
    ENQUEUE_GUARDS,
    ENQUEUE_READS,
    POP_READS,
    QUEUE,
    READER_READS,
    RETAIN_GUARDS,
    RETAIN_READS,
    TABLE,
    ZERO_STATS,
    QueueView,
    model_items,
    popped_item,
    stats_of,
)
from properties.registry import Step, register

# ---- count -------------------------------------------------------------------


def the_model_holds_entries(view: QueueView) -> bool:
    """The model holds an entry or counts one."""
    return view.state.pending_count > 0 or any(c.entries for c in view.state.classes)


def the_model_holds_exactly_one_entry(view: QueueView) -> bool:
    """The model holds exactly one entry."""
    return sum(len(c.entries) for c in view.state.classes) == 1


@register(
    "queue",
    "always",
    "state",
    antecedent=the_model_holds_entries,
    boundary=the_model_holds_exactly_one_entry,
    reads=(f"{TABLE}.enqueue", f"{TABLE}._serve", f"{TABLE}.retain"),
    guards=(f"{QUEUE}::pending_count", f"{QUEUE}::enqueue", f"{QUEUE}::pop_candidate"),
)
def model_pending_count_equals_its_entries(view: QueueView) -> bool:
    """The model's pending counter equals the number of entries it holds."""
    return view.state.pending_count == sum(len(c.entries) for c in view.state.classes)


def entries_are_listed_or_counted(view: QueueView) -> bool:
    """The system under test lists an entry or counts one."""
    return view.seen.pending_count > 0 or bool(view.seen.entries)


def exactly_one_entry_is_listed(view: QueueView) -> bool:
    """The system under test lists exactly one entry."""
    return len(view.seen.entries) == 1


@register(
    "queue",
    "always",
    "state",
    antecedent=entries_are_listed_or_counted,
    boundary=exactly_one_entry_is_listed,
    reads=READER_READS,
    guards=(f"{QUEUE}::pending_count", f"{QUEUE}::entries"),
)
def observed_pending_count_equals_the_listed_entries(view: QueueView) -> bool:
    """`pending_count()` equals the number of entries `entries()` lists."""
    return view.seen.pending_count == len(view.seen.entries)


def an_enqueue_ran(step: Step) -> bool:
    """An enqueue was accepted or rejected by a limit."""
    return isinstance(step.op, Enqueue)


def an_enqueue_was_rejected(step: Step) -> bool:
    """An enqueue was rejected by a limit."""
    return isinstance(step.op, Enqueue) and isinstance(step.outcome, Rejection)


@register(
    "queue",
    "always",
    "step",
    antecedent=an_enqueue_ran,
    boundary=an_enqueue_was_rejected,
    reads=ENQUEUE_READS,
    guards=ENQUEUE_GUARDS,
)
def enqueue_adds_one_entry_unless_rejected(step: Step) -> bool:
    """An accepted enqueue adds exactly one entry; a rejected one adds none."""
    if not isinstance(step.op, Enqueue):
        return True
    added = 0 if isinstance(step.outcome, Rejection) else 1
    return bool(step.after.pending_count == step.before.pending_count + added)


def a_pop_ran_while_entries_waited(step: Step) -> bool:
    """A pop ran while entries were queued."""
    return isinstance(step.op, PopNext) and step.before.pending_count > 0


def a_pop_took_the_last_entry(step: Step) -> bool:
    """A pop returned the only queued entry."""
    return popped_item(step) is not None and step.before.pending_count == 1


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_ran_while_entries_waited,
    boundary=a_pop_took_the_last_entry,
    reads=POP_READS,
    guards=(f"{QUEUE}::pop_next", f"{CLASS}::pop_lane"),
)
def pop_removes_exactly_the_entry_it_returns(step: Step) -> bool:
    """A pop that returns an entry removes that entry and nothing else."""
    if not isinstance(step.op, PopNext):
        return True
    before = sorted(model_items(step.before), key=QueuedItem.sort_key)
    after = sorted(model_items(step.after), key=QueuedItem.sort_key)
    if step.outcome is None:
        return before == after
    return [item for item in before if item != step.outcome] == after


def retain_ran_while_entries_waited(step: Step) -> bool:
    """`retain` ran while entries were queued."""
    return isinstance(step.op, Retain) and step.before.pending_count > 0


def retain_dropped_every_entry(step: Step) -> bool:
    """`retain` dropped every queued entry."""
    return retain_ran_while_entries_waited(step) and all(
        item.payload in step.op.drop for item in model_items(step.before)
    )


@register(
    "queue",
    "always",
    "step",
    antecedent=retain_ran_while_entries_waited,
    boundary=retain_dropped_every_entry,
    reads=RETAIN_READS,
    guards=RETAIN_GUARDS,
)
def retain_removes_exactly_the_dropped_payloads(step: Step) -> bool:
    """`retain` removes the entries whose payload it drops, and only those."""
    if not isinstance(step.op, Retain):
        return True
    before = model_items(step.before)
    kept = [item for item in before if item.payload not in step.op.drop]
    return sorted(kept, key=QueuedItem.sort_key) == sorted(
        model_items(step.after), key=QueuedItem.sort_key
    )


# ---- stats -------------------------------------------------------------------


def a_class_holds_entries_or_counts(view: QueueView) -> bool:
    """Some class of the model holds entries or nonzero counters."""
    return any(c.entries or c.stats != ZERO_STATS for c in view.state.classes)


@register(
    "queue",
    "always",
    "state",
    antecedent=a_class_holds_entries_or_counts,
    reads=(f"{TABLE}.enqueue", f"{TABLE}._minus"),
    guards=(f"{CRATE}::add_stats", f"{CRATE}::subtract_stats"),
)
def model_class_stats_sum_their_entries(view: QueueView) -> bool:
    """Each class's counters in the model sum its entries (no saturation)."""
    items = model_items(view.state)
    return all(
        cls.stats == stats_of(items, index)
        for index, cls in enumerate(view.state.classes)
    )


def entries_are_listed_or_counted_by_class(view: QueueView) -> bool:
    """The system under test lists entries or reports nonzero class counters."""
    return bool(view.seen.entries) or any(
        stats != ZERO_STATS for stats in view.seen.class_stats
    )


@register(
    "queue",
    "always",
    "state",
    antecedent=entries_are_listed_or_counted_by_class,
    reads=READER_READS,
    guards=(f"{QUEUE}::class_stats", f"{CRATE}::subtract_stats"),
)
def observed_class_stats_sum_the_listed_entries(view: QueueView) -> bool:
    """`class_stats(i)` sums the entries `entries()` lists for class i."""
    return all(
        stats == stats_of(view.seen.entries, index)
        for index, stats in enumerate(view.seen.class_stats)
    )
