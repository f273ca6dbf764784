"""Per-worker limits: which enqueue is refused, and what a refusal leaves.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.ops import Enqueue
from model.queue.types import (
    LIMIT_KINDS,
    Rejection,
)
from properties.queue._terms import (
    ENQUEUE_GUARDS,
    ENQUEUE_READS,
    capped_product,
    first_limit_reached,
)
from properties.queue.counters import an_enqueue_was_rejected
from properties.registry import Step, register

# ---- rejection ---------------------------------------------------------------


def _limits(step: Step) -> list[tuple[int, int]]:
    """(counter, scaled limit) of each limit the enqueued class has."""
    if not isinstance(step.op, Enqueue):
        return []
    index = step.op.class_index
    config = step.before.configs[index]
    stats = step.before.classes[index].stats
    return [
        (getattr(stats, kind), capped_product(per_worker, step.op.worker_count))
        for kind in LIMIT_KINDS
        for per_worker in [config.limit_per_worker(kind)]
        if per_worker is not None
    ]


def an_enqueue_met_a_limited_class(step: Step) -> bool:
    """An enqueue named a class with at least one per-worker limit."""
    return bool(_limits(step))


def an_enqueue_met_a_counter_exactly_at_its_limit(step: Step) -> bool:
    """An enqueue met a class whose counter sat exactly at its scaled limit."""
    return any(counter == limit for counter, limit in _limits(step))


@register(
    "queue",
    "always",
    "step",
    antecedent=an_enqueue_met_a_limited_class,
    boundary=an_enqueue_met_a_counter_exactly_at_its_limit,
    reads=ENQUEUE_READS,
    guards=ENQUEUE_GUARDS,
)
def enqueue_is_rejected_by_the_first_limit_already_reached(step: Step) -> bool:
    """An enqueue is refused iff a limit's pre-add counter reached it; first wins."""
    if not isinstance(step.op, Enqueue):
        return True
    index = step.op.class_index
    expected = first_limit_reached(
        step.before.configs[index],
        step.before.classes[index].stats,
        step.op.worker_count,
    )
    return expected == (step.outcome if isinstance(step.outcome, Rejection) else None)


def a_rejection_was_at_the_limit_exactly(step: Step) -> bool:
    """An enqueue was rejected with its counter exactly at the limit."""
    outcome = step.outcome
    return isinstance(outcome, Rejection) and outcome.current == outcome.limit


@register(
    "queue",
    "always",
    "step",
    antecedent=an_enqueue_was_rejected,
    boundary=a_rejection_was_at_the_limit_exactly,
    reads=ENQUEUE_READS,
    guards=ENQUEUE_GUARDS,
)
def a_rejected_enqueue_leaves_no_trace(step: Step) -> bool:
    """A rejected enqueue changes nothing, not even the sequence counter."""
    if not isinstance(step.outcome, Rejection):
        return True
    return bool(step.before == step.after)
