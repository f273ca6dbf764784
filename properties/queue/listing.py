"""Backlog, snapshots and refused calls: what the readers show.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.types import (
    U32_MAX,
)
from properties.queue._terms import (
    CRATE,
    QUEUE,
    READER_READS,
    TABLE,
    QueueView,
)
from properties.registry import Step, register

# ---- backlog and snapshots ----------------------------------------------------


def backlog_is_listed_or_reported(view: QueueView) -> bool:
    """Some entry is listed or some class reports a backlog."""
    return bool(view.seen.entries) or any(view.seen.backlog)


def some_classes_wait_and_others_not(view: QueueView) -> bool:
    """Some class lists entries while another lists none."""
    listed = {item.class_index for item in view.seen.entries}
    return 0 < len(listed) < len(view.seen.backlog)


@register(
    "queue",
    "always",
    "state",
    antecedent=backlog_is_listed_or_reported,
    boundary=some_classes_wait_and_others_not,
    reads=READER_READS,
    guards=(f"{QUEUE}::has_backlog", f"{QUEUE}::entries"),
)
def observed_backlog_matches_the_listed_entries(view: QueueView) -> bool:
    """`has_backlog(i)` is true iff `entries()` lists an entry of class i."""
    listed = {item.class_index for item in view.seen.entries}
    return all(
        flag == (index in listed) for index, flag in enumerate(view.seen.backlog)
    )


def some_entry_is_listed(view: QueueView) -> bool:
    """Some entry is listed."""
    return bool(view.seen.entries)


def a_listed_entry_is_fully_cached(view: QueueView) -> bool:
    """Some listed entry has as many cached tokens as raw ones."""
    return any(i.cached_tokens == i.raw_isl_tokens for i in view.seen.entries)


@register(
    "queue",
    "always",
    "state",
    antecedent=some_entry_is_listed,
    boundary=a_listed_entry_is_fully_cached,
    reads=(f"{TABLE}.enqueue", f"{TABLE}.item_of"),
    guards=(f"{CRATE}::QueueSnapshot::new", f"{CRATE}::make_entry"),
)
def listed_cached_tokens_never_exceed_raw(view: QueueView) -> bool:
    """Every listed entry has `cached <= raw`."""
    return all(i.cached_tokens <= i.raw_isl_tokens for i in view.seen.entries)


@register(
    "queue",
    "always",
    "state",
    antecedent=some_entry_is_listed,
    boundary=a_listed_entry_is_fully_cached,
    reads=(f"{TABLE}.item_of",),
    guards=(f"{CRATE}::QueueSnapshot::new",),
)
def listed_uncached_tokens_are_raw_minus_cached(view: QueueView) -> bool:
    """Every listed entry has `uncached == raw - cached`."""
    return all(
        i.uncached_tokens == i.raw_isl_tokens - i.cached_tokens
        for i in view.seen.entries
    )


def a_listed_cost_sits_at_the_floor(view: QueueView) -> bool:
    """Some listed entry has zero or one uncached tokens (cost 1 either way)."""
    return any(i.uncached_tokens <= 1 for i in view.seen.entries)


@register(
    "queue",
    "always",
    "state",
    antecedent=some_entry_is_listed,
    boundary=a_listed_cost_sits_at_the_floor,
    reads=(f"{TABLE}.item_of",),
    guards=(f"{CRATE}::QueueSnapshot::new",),
)
def listed_costs_are_uncached_tokens_floored_at_one(view: QueueView) -> bool:
    """Every listed entry has `scheduling cost == max(1, uncached)`."""
    return all(
        i.scheduling_cost_tokens == max(1, i.uncached_tokens) for i in view.seen.entries
    )


# ---- refused calls -------------------------------------------------------------


def a_call_was_refused_at_the_edge(step: Step) -> bool:
    """A refused call named the first class index out of range, or u32::MAX + 1."""
    if step.before.drained:
        return False
    class_index = getattr(step.op, "class_index", None)
    first_out = class_index == len(step.before.configs)
    strict = getattr(step.op, "strict_priority", None)
    return step.outcome is not None and (first_out or strict == U32_MAX + 1)


def the_call_was_refused(step: Step) -> bool:
    """A call was refused."""
    return step.outcome is not None


@register(
    "queue",
    "always",
    "refusal",
    antecedent=the_call_was_refused,
    boundary=a_call_was_refused_at_the_edge,
    reads=(f"{TABLE}._check_class", f"{TABLE}._check_range", f"{TABLE}._check_live"),
    guards=(f"{QUEUE}::class_stats", f"{QUEUE}::class_config", f"{QUEUE}::has_backlog"),
)
def a_refused_call_changes_nothing(step: Step) -> bool:
    """A call the crate would panic on is refused and leaves the queue unchanged."""
    return bool(step.before == step.after)


@register(
    "queue",
    "sometimes",
    "refusal",
    reads=(f"{TABLE}._check_class", f"{TABLE}._check_range"),
    guards=(f"{QUEUE}::class_stats", f"{QUEUE}::class_config"),
)
def a_call_was_refused(step: Step) -> bool:
    """Some call was refused (a class index out of range, a value out of range)."""
    return step.outcome is not None
