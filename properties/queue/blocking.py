"""Blocking memory: which worker lanes stay blocked, and until when.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.ops import PopNext
from model.queue.table import QueueState
from properties.queue._terms import (
    CLASS,
    QUEUE,
    TABLE,
    QueueView,
    popped_item,
)
from properties.queue.coverage import (
    a_blocked_lane_stayed_blocked_though_its_worker_was_free,
    a_pop_blocked_a_worker_lane,
)
from properties.registry import Step, register

# ---- blocking memory ---------------------------------------------------------


def some_lane_is_blocked(view: QueueView) -> bool:
    """Some worker lane is blocked."""
    return any(cls.blocked for cls in view.state.classes)


def a_blocked_lane_has_one_entry_left(view: QueueView) -> bool:
    """Some blocked lane holds exactly one entry."""
    return any(
        len(cls.lane(worker)) == 1
        for cls in view.state.classes
        for worker in sorted(cls.blocked)
    )


@register(
    "queue",
    "always",
    "state",
    antecedent=some_lane_is_blocked,
    boundary=a_blocked_lane_has_one_entry_left,
    reads=(f"{TABLE}.class_candidate", f"{TABLE}.retain"),
    guards=(f"{CLASS}::next_dispatchable_worker", f"{CLASS}::rebuild_worker_heads"),
)
def only_workers_with_entries_are_blocked(view: QueueView) -> bool:
    """Every blocked worker still has a lane (entries) in its class."""
    return all(
        set(cls.blocked) <= set(cls.lane_workers()) for cls in view.state.classes
    )


def a_call_ran_while_a_lane_was_blocked(step: Step) -> bool:
    """A call ran on a live queue while some worker lane was blocked."""
    return (
        isinstance(step.before, QueueState)
        and not step.after.drained
        and any(cls.blocked for cls in step.before.classes)
    )


def a_pop_skipped_a_blocked_lane_it_would_accept(step: Step) -> bool:
    """A pop passed over a blocked lane whose worker the predicate now accepts."""
    return a_blocked_lane_stayed_blocked_though_its_worker_was_free(step)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_call_ran_while_a_lane_was_blocked,
    boundary=a_pop_skipped_a_blocked_lane_it_would_accept,
    reads=(f"{TABLE}.class_candidate", f"{TABLE}.retain"),
    guards=(
        f"{CLASS}::next_dispatchable_worker",
        f"{CLASS}::rebuild_worker_heads",
        f"{QUEUE}::recheck_worker",
    ),
)
def blocked_lanes_stay_blocked_until_retain_empties_them(step: Step) -> bool:
    """A blocked lane stays blocked; only `retain` emptying it unblocks it."""
    if not isinstance(step.before, QueueState) or not isinstance(
        step.after, QueueState
    ):
        return True
    if step.after.drained:
        return True
    for before, after in zip(step.before.classes, step.after.classes, strict=True):
        still_queued = set(after.lane_workers())
        if set(before.blocked) & still_queued - set(after.blocked):
            return False
    return True


def a_pop_met_an_unblocked_worker_lane(step: Step) -> bool:
    """A pop ran while some class had an unblocked worker lane."""
    return isinstance(step.op, PopNext) and any(
        set(cls.lane_workers()) - cls.blocked for cls in step.before.classes
    )


def a_pop_blocked_a_lane(step: Step) -> bool:
    """A pop blocked a worker lane whose head the predicate refused."""
    return a_pop_blocked_a_worker_lane(step)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_met_an_unblocked_worker_lane,
    boundary=a_pop_blocked_a_lane,
    reads=(f"{TABLE}.class_candidate",),
    guards=(f"{CLASS}::next_dispatchable_worker",),
)
def a_pop_blocks_only_lanes_whose_head_fails(step: Step) -> bool:
    """A lane newly blocked by a pop had a head the predicate refused."""
    if not isinstance(step.op, PopNext):
        return True
    dispatch = step.op.dispatch
    return all(
        not dispatch.allows(index, worker)
        for index, (before, after) in enumerate(
            zip(step.before.classes, step.after.classes, strict=True)
        )
        for worker in sorted(after.blocked - before.blocked)
    )


def a_pop_served_a_class_with_a_blocked_lane(step: Step) -> bool:
    """A pop returned an entry of a class that had a blocked lane."""
    popped = popped_item(step)
    return popped is not None and bool(step.before.classes[popped.class_index].blocked)


def a_pop_served_beside_a_blocked_lane_it_would_accept(step: Step) -> bool:
    """A pop served a class whose blocked lane's worker the predicate accepts."""
    popped = popped_item(step)
    if popped is None:
        return False
    assert isinstance(step.op, PopNext)
    index = popped.class_index
    return any(
        step.op.dispatch.allows(index, worker)
        for worker in sorted(step.before.classes[index].blocked)
    )


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_served_a_class_with_a_blocked_lane,
    boundary=a_pop_served_beside_a_blocked_lane_it_would_accept,
    reads=(f"{TABLE}.class_candidate",),
    guards=(f"{CLASS}::next_dispatchable_worker", f"{CLASS}::next_dispatchable"),
)
def a_pop_never_serves_a_blocked_lane(step: Step) -> bool:
    """No pop returns an entry from a lane that was blocked before it."""
    popped = popped_item(step)
    if popped is None or popped.placement is None:
        return True
    return popped.placement not in step.before.classes[popped.class_index].blocked
