"""Coverage goals of the policy queue: states and steps worth reaching.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.ops import Enqueue, PopNext, Retain
from model.queue.types import (
    Rejection,
)
from properties.queue._terms import (
    CLASS,
    CRATE,
    ENQUEUE_GUARDS,
    ENQUEUE_READS,
    QUEUE,
    RETAIN_GUARDS,
    RETAIN_READS,
    TABLE,
    capped_product,
    cost_of,
    passing_heads,
    popped_item,
    quanta_granted,
    served_entry,
)
from properties.registry import Step, register

# ---- coverage goals ----------------------------------------------------------------


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.class_candidate",),
    guards=(f"{CLASS}::next_dispatchable_worker",),
)
def a_pop_blocked_a_worker_lane(step: Step) -> bool:
    """A pop found a worker lane's head undispatchable and blocked the lane."""
    return isinstance(step.op, PopNext) and any(
        after.blocked - before.blocked
        for before, after in zip(step.before.classes, step.after.classes, strict=True)
    )


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.class_candidate",),
    guards=(f"{CLASS}::next_dispatchable_worker", f"{QUEUE}::recheck_worker"),
)
def a_blocked_lane_stayed_blocked_though_its_worker_was_free(step: Step) -> bool:
    """A pop skipped a blocked lane whose head the predicate would now accept."""
    if not isinstance(step.op, PopNext):
        return False
    dispatch = step.op.dispatch
    return any(
        dispatch.allows(index, worker) and worker in after.blocked
        for index, (before, after) in enumerate(
            zip(step.before.classes, step.after.classes, strict=True)
        )
        for worker in sorted(before.blocked)
    )


@register(
    "queue",
    "sometimes",
    "step",
    reads=RETAIN_READS,
    guards=(f"{QUEUE}::take_if_entry_in_class", f"{CLASS}::rebuild_worker_heads"),
)
def retain_emptied_and_so_unblocked_a_blocked_lane(step: Step) -> bool:
    """`retain` removed every entry of a blocked lane, which forgets the block."""
    return isinstance(step.op, Retain) and any(
        before.blocked - after.blocked
        for before, after in zip(step.before.classes, step.after.classes, strict=True)
    )


def _rejected_by(step: Step, kind: str) -> bool:
    return isinstance(step.outcome, Rejection) and step.outcome.limit_kind == kind


@register("queue", "sometimes", "step", reads=ENQUEUE_READS, guards=ENQUEUE_GUARDS)
def the_request_limit_rejected_an_enqueue(step: Step) -> bool:
    """An enqueue was refused by the per-worker request limit."""
    return _rejected_by(step, "requests")


@register("queue", "sometimes", "step", reads=ENQUEUE_READS, guards=ENQUEUE_GUARDS)
def the_raw_token_limit_rejected_an_enqueue(step: Step) -> bool:
    """An enqueue was refused by the per-worker raw-token limit."""
    return _rejected_by(step, "raw_isl_tokens")


@register("queue", "sometimes", "step", reads=ENQUEUE_READS, guards=ENQUEUE_GUARDS)
def the_cached_token_limit_rejected_an_enqueue(step: Step) -> bool:
    """An enqueue was refused by the per-worker cached-token limit."""
    return _rejected_by(step, "cached_tokens")


@register("queue", "sometimes", "step", reads=ENQUEUE_READS, guards=ENQUEUE_GUARDS)
def an_enqueue_pushed_a_counter_past_its_limit(step: Step) -> bool:
    """An accepted enqueue took a token counter beyond its scaled limit."""
    if not isinstance(step.op, Enqueue) or step.outcome is not None:
        return False
    index = step.op.class_index
    config = step.after.configs[index]
    stats = step.after.classes[index].stats
    return any(
        per_worker is not None
        and getattr(stats, kind) > capped_product(per_worker, step.op.worker_count)
        for kind in ("raw_isl_tokens", "cached_tokens")
        for per_worker in [config.limit_per_worker(kind)]
    )


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}._fast_forward",),
    guards=(f"{QUEUE}::pop_next",),
)
def a_pop_fast_forwarded_several_rounds(step: Step) -> bool:
    """A served class needed two or more quanta in one pop (fast-forward)."""
    served = served_entry(step)
    if served is None:
        return False
    popped, entry = served
    index = popped.class_index
    deficit = step.before.classes[index].deficit
    return (
        quanta_granted(cost_of(entry), deficit, step.before.configs[index].quantum) >= 2
    )


@register("queue", "sometimes", "step", reads=RETAIN_READS, guards=RETAIN_GUARDS)
def retain_emptied_the_carried_class(step: Step) -> bool:
    """`retain` removed every entry of the class the carry names."""
    carry = step.before.carry
    return (
        isinstance(step.op, Retain)
        and carry is not None
        and not step.after.classes[carry].entries
    )


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.pop_next", f"{TABLE}._serve"),
    guards=(f"{QUEUE}::pop_next", f"{QUEUE}::pop_candidate"),
)
def the_carried_class_was_served_again(step: Step) -> bool:
    """The class served by the previous pop was served again from its credit."""
    popped = popped_item(step)
    return popped is not None and step.before.carry == popped.class_index


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.pop_next",),
    guards=(f"{QUEUE}::pop_next",),
)
def a_class_without_a_candidate_kept_positive_credit(step: Step) -> bool:
    """A pop passed over a class with credit and no passing head; it kept it."""
    if not isinstance(step.op, PopNext):
        return False
    dispatch = step.op.dispatch
    return any(
        before.deficit > 0 and before.entries and not passing_heads(before, i, dispatch)
        for i, before in enumerate(step.before.classes)
    )


def _overtook(step: Step, policy: str) -> bool:
    served = served_entry(step)
    if served is None:
        return False
    popped, entry = served
    if step.before.configs[popped.class_index].queue_policy != policy:
        return False
    lane = step.before.classes[popped.class_index].lane(popped.placement)
    same_tier = [e for e in lane if e.strict_priority == entry.strict_priority]
    return any(other.seq < entry.seq for other in same_tier)


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.policy_score", f"{TABLE}.best"),
    guards=(f"{CRATE}::queue_policy_score", f"{CRATE}::cmp_queue_order"),
)
def wspt_served_a_later_cheaper_entry_first(step: Step) -> bool:
    """A WSPT class served an entry ahead of an earlier one of the same tier."""
    return _overtook(step, "wspt")


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.policy_score", f"{TABLE}.best"),
    guards=(f"{CRATE}::queue_policy_score", f"{CRATE}::cmp_queue_order"),
)
def lcfs_served_a_later_entry_first(step: Step) -> bool:
    """An LCFS class served an entry ahead of an earlier one of the same tier."""
    return _overtook(step, "lcfs")


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.class_candidate",),
    guards=(f"{CLASS}::next_dispatchable",),
)
def the_any_lane_beat_a_dispatchable_worker_lane(step: Step) -> bool:
    """A pop served the Any head over a passing, unblocked worker-lane head."""
    popped = popped_item(step)
    if popped is None or popped.placement is not None:
        return False
    assert isinstance(step.op, PopNext)
    cls = step.before.classes[popped.class_index]
    dispatch = step.op.dispatch
    return any(
        worker not in cls.blocked and dispatch.allows(popped.class_index, worker)
        for worker in cls.lane_workers()
    )


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}.pop_next",),
    guards=(f"{QUEUE}::pop_next",),
)
def a_pop_found_nothing_while_entries_waited(step: Step) -> bool:
    """A pop returned None although entries were queued."""
    return (
        isinstance(step.op, PopNext)
        and step.outcome is None
        and step.before.pending_count > 0
    )
