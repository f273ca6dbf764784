"""DRR credit: none while blocked, bounds on deficits, the one-pop share.

See `properties/queue/__init__.py` for what the queue's properties take.
"""

from __future__ import annotations

from model.queue.ops import PopNext
from model.queue.table import ClassState
from properties.queue._terms import (
    QUEUE,
    TABLE,
    QueueView,
    capped_product,
    capped_sum,
    cost_of,
    floored_difference,
    passing_heads,
    popped_item,
    quanta_granted,
    served_entry,
)
from properties.queue.coverage import (
    a_class_without_a_candidate_kept_positive_credit,
    retain_emptied_the_carried_class,
)
from properties.registry import Step, register

# ---- no credit when blocked --------------------------------------------------


def a_pop_returned_nothing(step: Step) -> bool:
    """A pop returned nothing."""
    return isinstance(step.op, PopNext) and step.outcome is None


def a_pop_returned_nothing_beside_credit(step: Step) -> bool:
    """A pop returned nothing while some class held positive credit."""
    return a_pop_returned_nothing(step) and any(
        cls.deficit > 0 for cls in step.before.classes
    )


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_returned_nothing,
    boundary=a_pop_returned_nothing_beside_credit,
    reads=(f"{TABLE}.pop_next", f"{TABLE}._fast_forward"),
    guards=(f"{QUEUE}::pop_next",),
)
def a_fruitless_pop_changes_no_credit(step: Step) -> bool:
    """A pop that finds nothing leaves every deficit as it was."""
    if not isinstance(step.op, PopNext) or step.outcome is not None:
        return True
    return [c.deficit for c in step.before.classes] == [
        c.deficit for c in step.after.classes
    ]


def a_pop_returned_nothing_after_a_carry(step: Step) -> bool:
    """A pop returned nothing while a class was carried."""
    return a_pop_returned_nothing(step) and step.before.carry is not None


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_returned_nothing,
    boundary=a_pop_returned_nothing_after_a_carry,
    reads=(f"{TABLE}.pop_next",),
    guards=(f"{QUEUE}::pop_next",),
)
def a_fruitless_pop_clears_the_carry(step: Step) -> bool:
    """A pop that finds nothing leaves no class carried."""
    if not isinstance(step.op, PopNext) or step.outcome is not None:
        return True
    return bool(step.after.carry is None)


def a_pop_passed_a_class_without_a_candidate(step: Step) -> bool:
    """A pop ran while some class had no passing head."""
    if not isinstance(step.op, PopNext):
        return False
    dispatch = step.op.dispatch
    return any(
        not passing_heads(cls, index, dispatch)
        for index, cls in enumerate(step.before.classes)
    )


def a_pop_passed_a_class_in_credit_without_a_candidate(step: Step) -> bool:
    """A pop ran while a class with entries and credit had no passing head."""
    return a_class_without_a_candidate_kept_positive_credit(step)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_passed_a_class_without_a_candidate,
    boundary=a_pop_passed_a_class_in_credit_without_a_candidate,
    reads=(f"{TABLE}.pop_next", f"{TABLE}.drr_choose"),
    guards=(f"{QUEUE}::pop_next",),
)
def a_class_without_a_candidate_keeps_its_credit(step: Step) -> bool:
    """During a pop, a class with no passing head neither gains nor loses credit."""
    if not isinstance(step.op, PopNext):
        return True
    dispatch = step.op.dispatch
    return all(
        before.deficit == after.deficit
        for index, (before, after) in enumerate(
            zip(step.before.classes, step.after.classes, strict=True)
        )
        if not passing_heads(before, index, dispatch)
    )


# ---- deficit bounds ----------------------------------------------------------


def a_class_holds_entries_or_credit(view: QueueView) -> bool:
    """Some class holds entries or nonzero credit."""
    return any(cls.entries or cls.deficit != 0 for cls in view.state.classes)


def a_class_with_entries_holds_no_credit(view: QueueView) -> bool:
    """Some class with entries holds exactly zero credit."""
    return any(cls.entries and cls.deficit == 0 for cls in view.state.classes)


@register(
    "queue",
    "always",
    "state",
    antecedent=a_class_holds_entries_or_credit,
    boundary=a_class_with_entries_holds_no_credit,
    reads=(f"{TABLE}._serve", f"{TABLE}.saturating_sub"),
    guards=(f"{QUEUE}::pop_candidate",),
)
def deficits_are_never_negative(view: QueueView) -> bool:
    """No class's credit is negative."""
    return all(cls.deficit >= 0 for cls in view.state.classes)


def some_class_is_empty(view: QueueView) -> bool:
    """Some class has no entries."""
    return any(not cls.entries for cls in view.state.classes)


@register(
    "queue",
    "always",
    "state",
    antecedent=some_class_is_empty,
    reads=(f"{TABLE}._serve", f"{TABLE}.retain", f"{TABLE}.pop_next"),
    guards=(
        f"{QUEUE}::pop_candidate",
        f"{QUEUE}::take_if_entry_in_class",
        f"{QUEUE}::pop_next",
    ),
)
def an_empty_class_holds_no_credit(view: QueueView) -> bool:
    """A class without entries has zero credit."""
    return all(cls.deficit == 0 for cls in view.state.classes if not cls.entries)


def a_pop_left_a_class_carried(step: Step) -> bool:
    """A pop left a class carried."""
    return isinstance(step.op, PopNext) and step.after.carry is not None


def a_pop_carried_a_class_with_one_entry_left(step: Step) -> bool:
    """A pop carried a class that has exactly one entry left."""
    carry = step.after.carry
    return (
        a_pop_left_a_class_carried(step)
        and carry is not None
        and len(step.after.classes[carry].entries) == 1
    )


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_left_a_class_carried,
    boundary=a_pop_carried_a_class_with_one_entry_left,
    reads=(f"{TABLE}._serve",),
    guards=(f"{QUEUE}::pop_candidate",),
)
def a_pop_carries_only_the_class_it_served_with_credit_left(step: Step) -> bool:
    """After a pop the carry is unset or names the served, non-empty class in credit."""
    if not isinstance(step.op, PopNext) or step.after.carry is None:
        return True
    popped = popped_item(step)
    if popped is None or step.after.carry != popped.class_index:
        return False
    cls: ClassState = step.after.classes[popped.class_index]
    return cls.deficit > 0 and bool(cls.entries)


def a_call_other_than_a_pop_ran(step: Step) -> bool:
    """A call other than a pop ran on a live queue."""
    return not isinstance(step.op, PopNext) and not step.after.drained


def retain_emptied_the_class_the_carry_names(step: Step) -> bool:
    """`retain` removed every entry of the carried class (the carry stays)."""
    return retain_emptied_the_carried_class(step)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_call_other_than_a_pop_ran,
    boundary=retain_emptied_the_class_the_carry_names,
    reads=(f"{TABLE}.enqueue", f"{TABLE}.retain"),
    guards=(f"{QUEUE}::enqueue", f"{QUEUE}::retain"),
)
def only_a_pop_moves_the_carry(step: Step) -> bool:
    """Enqueue and `retain` leave the carry alone, even when `retain` empties it."""
    if isinstance(step.op, PopNext) or step.after.drained:
        return True
    return bool(step.before.carry == step.after.carry)


# ---- DRR share (one-pop core) --------------------------------------------------


def a_pop_served_an_entry(step: Step) -> bool:
    """A pop served an entry it found queued."""
    return served_entry(step) is not None


def a_served_head_was_exactly_affordable(step: Step) -> bool:
    """The served head cost exactly the credit its class had after the grant."""
    served = served_entry(step)
    if served is None:
        return False
    popped, entry = served
    before_deficit: int = step.before.classes[popped.class_index].deficit
    quantum: int = step.before.configs[popped.class_index].quantum
    granted = quanta_granted(cost_of(entry), before_deficit, quantum)
    return capped_sum(before_deficit, quantum * granted) == cost_of(entry)


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_served_an_entry,
    boundary=a_served_head_was_exactly_affordable,
    reads=(f"{TABLE}.pop_next", f"{TABLE}.drr_choose", f"{TABLE}._fast_forward"),
    guards=(f"{QUEUE}::pop_next", f"{QUEUE}::pop_candidate"),
)
def a_served_class_gets_the_fewest_quanta_that_cover_its_head(step: Step) -> bool:
    """Serving costs credit: after = before + fewest covering quanta - cost."""
    served = served_entry(step)
    if served is None:
        return True
    popped, entry = served
    index = popped.class_index
    after_class: ClassState = step.after.classes[index]
    if not after_class.entries:
        return after_class.deficit == 0
    before_deficit: int = step.before.classes[index].deficit
    quantum: int = step.before.configs[index].quantum
    granted = quanta_granted(cost_of(entry), before_deficit, quantum)
    credit = capped_sum(before_deficit, capped_product(quantum, granted))
    return after_class.deficit == floored_difference(credit, cost_of(entry))
