"""Serving order and work conservation: which entry a pop takes.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.ops import PopNext
from model.queue.table import ClassState, Entry
from properties.queue._terms import (
    CLASS,
    CRATE,
    POP_READS,
    QUEUE,
    TABLE,
    first_served,
    passing_heads,
    popped_item,
    same_rank,
    served_entry,
)
from properties.queue.counters import a_pop_ran_while_entries_waited
from properties.registry import Step, register

# ---- order -------------------------------------------------------------------


def a_pop_returned_an_entry(step: Step) -> bool:
    """A pop returned an entry."""
    return popped_item(step) is not None


def _ties(entries: list[Entry], chosen: Entry) -> bool:
    """Another entry orders like `chosen` but for its sequence."""
    return any(e.seq != chosen.seq and same_rank(e, chosen) for e in entries)


def a_pop_broke_a_tie_in_its_lane(step: Step) -> bool:
    """The popped entry's lane held another of equal priority and score."""
    served = served_entry(step)
    if served is None:
        return False
    popped, entry = served
    lane = step.before.classes[popped.class_index].lane(popped.placement)
    return _ties(list(lane), entry)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_returned_an_entry,
    boundary=a_pop_broke_a_tie_in_its_lane,
    reads=(f"{TABLE}.best", f"{TABLE}.policy_score"),
    guards=(
        f"{CRATE}::cmp_queue_order",
        f"{CRATE}::queue_policy_score",
        f"{CRATE}::PolicyQueueEntry::cmp",
    ),
)
def a_pop_takes_the_best_entry_of_its_lane(step: Step) -> bool:
    """The popped entry orders first in its lane: strict, score, then sequence."""
    popped = popped_item(step)
    if popped is None:
        return True
    cls: ClassState = step.before.classes[popped.class_index]
    head = first_served(cls.lane(popped.placement))
    return head is not None and head.payload == popped.payload


def a_pop_broke_a_tie_between_heads(step: Step) -> bool:
    """The popped entry tied with another passing head of its class."""
    served = served_entry(step)
    if served is None:
        return False
    popped, entry = served
    assert isinstance(step.op, PopNext)
    index = popped.class_index
    heads = passing_heads(step.before.classes[index], index, step.op.dispatch)
    return _ties(heads, entry)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_returned_an_entry,
    boundary=a_pop_broke_a_tie_between_heads,
    reads=(f"{TABLE}.class_candidate",),
    guards=(f"{CLASS}::next_dispatchable", f"{CLASS}::next_dispatchable_worker"),
)
def a_pop_takes_the_best_dispatchable_head_of_its_class(step: Step) -> bool:
    """The popped entry is the best of its class's passing Any and unblocked heads."""
    popped = popped_item(step)
    if popped is None:
        return True
    assert isinstance(step.op, PopNext)
    index = popped.class_index
    passing = passing_heads(step.before.classes[index], index, step.op.dispatch)
    winner = first_served(passing)
    return winner is not None and winner.payload == popped.payload


# ---- work conservation -------------------------------------------------------


def _candidates(step: Step) -> int:
    """How many passing heads the pop's predicate left over all classes."""
    assert isinstance(step.op, PopNext)
    return sum(
        len(passing_heads(cls, index, step.op.dispatch))
        for index, cls in enumerate(step.before.classes)
    )


def exactly_one_head_could_be_served(step: Step) -> bool:
    """A pop ran while exactly one passing head waited over all classes."""
    return a_pop_ran_while_entries_waited(step) and _candidates(step) == 1


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_ran_while_entries_waited,
    boundary=exactly_one_head_could_be_served,
    reads=POP_READS,
    guards=(f"{QUEUE}::pop_next", f"{CLASS}::next_dispatchable"),
)
def a_pop_finds_nothing_only_when_no_class_has_a_candidate(step: Step) -> bool:
    """`pop_next` returns None iff no class has a passing Any or unblocked head."""
    if not isinstance(step.op, PopNext):
        return True
    dispatch = step.op.dispatch
    some_candidate = any(
        passing_heads(cls, index, dispatch)
        for index, cls in enumerate(step.before.classes)
    )
    return some_candidate == (step.outcome is not None)
