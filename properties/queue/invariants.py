"""Policy-queue invariants and coverage goals.

State properties take a `QueueView`: the model's state together with what a
system under test showed at the same point (for a model-only check, the
model's own observation). Properties about counters and listings are checked
on both; properties about credit, carry and blocked lanes speak about the
model, whose outside behaviour the machine compares with the crate's.

Step properties take a `Step` whose `before`/`after` are model `QueueState`s,
whose `op` is a `model.queue.ops` operation and whose `outcome` is the
model's return value; refusal properties take the `Step` of a refused call,
whose `outcome` is the error kind.

Bounds: the class counters are stated without saturation (the machine keeps
token sums far below `usize::MAX`); the DRR share is checked as its one-pop
core here, and as a whole-cycle ratio in `tests/test_queue_upstream.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.queue.ops import Enqueue, PopNext, Retain
from model.queue.table import (
    ZERO_STATS,
    ClassState,
    Entry,
    QueueState,
    best,
    item_of,
    limit_reached,
    saturating_add,
    saturating_mul,
    saturating_sub,
)
from model.queue.types import (
    LIMIT_KINDS,
    U32_MAX,
    ClassStats,
    Dispatch,
    QueuedItem,
    Rejection,
    Worker,
)
from properties.registry import Step, register

TABLE = "model.queue.table"
CRATE = "scheduling::policy_queue"
QUEUE = f"{CRATE}::PolicyQueue"
CLASS = f"{CRATE}::PolicyClassQueue"
POP_READS = (f"{TABLE}.pop_next", f"{TABLE}.class_candidate", f"{TABLE}._serve")
POP_GUARDS = (f"{QUEUE}::pop_next", f"{QUEUE}::pop_candidate")
ENQUEUE_READS = (f"{TABLE}.enqueue", f"{TABLE}.limit_reached")
ENQUEUE_GUARDS = (f"{QUEUE}::enqueue", f"{CRATE}::queue_rejection")
RETAIN_READS = (f"{TABLE}.retain",)
RETAIN_GUARDS = (f"{QUEUE}::retain", f"{QUEUE}::take_if_entry_in_class")
READER_READS = ("model.queue.api.observe", f"{TABLE}.listing")

if TYPE_CHECKING:
    from model.queue.api import QueueObservation


@dataclass(frozen=True)
class QueueView:
    """The model's state and an observation of a system under test, side by side."""

    state: QueueState
    seen: QueueObservation


# ---- helpers (not properties) --------------------------------------------------


def _stats_of(
    items: list[QueuedItem] | tuple[QueuedItem, ...], index: int
) -> ClassStats:
    mine = [item for item in items if item.class_index == index]
    return ClassStats(
        requests=len(mine),
        raw_isl_tokens=sum(item.raw_isl_tokens for item in mine),
        cached_tokens=sum(item.cached_tokens for item in mine),
    )


def _model_items(state: QueueState) -> list[QueuedItem]:
    return [
        item_of(index, entry)
        for index, cls in enumerate(state.classes)
        for entry in cls.entries
    ]


def _lane_heads(cls: ClassState) -> dict[Worker, Entry]:
    heads: dict[Worker, Entry] = {}
    for worker in cls.lane_workers():
        head = best(cls.lane(worker))
        if head is not None:
            heads[worker] = head
    return heads


def _passing_heads(cls: ClassState, index: int, dispatch: Dispatch) -> list[Entry]:
    """Any head and unblocked lane heads of a class that the predicate accepts."""
    heads = [
        head
        for worker, head in sorted(_lane_heads(cls).items())
        if worker not in cls.blocked and dispatch.allows(index, worker)
    ]
    any_head = best(cls.lane(None))
    if any_head is not None and dispatch.allows(index, None):
        heads.append(any_head)
    return heads


def _popped(step: Step) -> QueuedItem | None:
    if isinstance(step.op, PopNext) and isinstance(step.outcome, QueuedItem):
        return step.outcome
    return None


def _served(step: Step) -> tuple[QueuedItem, Entry] | None:
    """The popped item and its queue entry as it stood before the pop."""
    popped = _popped(step)
    if popped is None:
        return None
    before: QueueState = step.before
    for entry in before.classes[popped.class_index].entries:
        if entry.payload == popped.payload and entry.placement == popped.placement:
            return popped, entry
    return None


def quanta_granted(cost: int, deficit: int, quantum: int) -> int:
    """Return the fewest quanta that raise `deficit` to at least `cost`."""
    return -(-saturating_sub(cost, deficit) // quantum)


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
    return _popped(step) is not None and step.before.pending_count == 1


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
    before = sorted(_model_items(step.before), key=QueuedItem.sort_key)
    after = sorted(_model_items(step.after), key=QueuedItem.sort_key)
    if step.outcome is None:
        return before == after
    return [item for item in before if item != step.outcome] == after


def retain_ran_while_entries_waited(step: Step) -> bool:
    """`retain` ran while entries were queued."""
    return isinstance(step.op, Retain) and step.before.pending_count > 0


def retain_dropped_every_entry(step: Step) -> bool:
    """`retain` dropped every queued entry."""
    return retain_ran_while_entries_waited(step) and all(
        item.payload in step.op.drop for item in _model_items(step.before)
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
    before = _model_items(step.before)
    kept = [item for item in before if item.payload not in step.op.drop]
    return sorted(kept, key=QueuedItem.sort_key) == sorted(
        _model_items(step.after), key=QueuedItem.sort_key
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
    items = _model_items(view.state)
    return all(
        cls.stats == _stats_of(items, index)
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
        stats == _stats_of(view.seen.entries, index)
        for index, stats in enumerate(view.seen.class_stats)
    )


# ---- rejection ---------------------------------------------------------------


def _limits(step: Step) -> list[tuple[int, int]]:
    """(counter, scaled limit) of each limit the enqueued class has."""
    if not isinstance(step.op, Enqueue):
        return []
    index = step.op.class_index
    config = step.before.configs[index]
    stats = step.before.classes[index].stats
    return [
        (getattr(stats, kind), saturating_mul(per_worker, step.op.worker_count))
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
    expected = limit_reached(
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


# ---- order -------------------------------------------------------------------


def a_pop_returned_an_entry(step: Step) -> bool:
    """A pop returned an entry."""
    return _popped(step) is not None


def _ties(entries: list[Entry], chosen: Entry) -> bool:
    """Another entry orders like `chosen` but for its sequence."""
    key = chosen.order_key()[:2]
    return any(e.seq != chosen.seq and e.order_key()[:2] == key for e in entries)


def a_pop_broke_a_tie_in_its_lane(step: Step) -> bool:
    """The popped entry's lane held another of equal priority and score."""
    served = _served(step)
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
    popped = _popped(step)
    if popped is None:
        return True
    cls: ClassState = step.before.classes[popped.class_index]
    head = best(cls.lane(popped.placement))
    return head is not None and head.payload == popped.payload


def a_pop_broke_a_tie_between_heads(step: Step) -> bool:
    """The popped entry tied with another passing head of its class."""
    served = _served(step)
    if served is None:
        return False
    popped, entry = served
    assert isinstance(step.op, PopNext)
    index = popped.class_index
    heads = _passing_heads(step.before.classes[index], index, step.op.dispatch)
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
    popped = _popped(step)
    if popped is None:
        return True
    assert isinstance(step.op, PopNext)
    index = popped.class_index
    passing = _passing_heads(step.before.classes[index], index, step.op.dispatch)
    winner = best(passing)
    return winner is not None and winner.payload == popped.payload


# ---- work conservation -------------------------------------------------------


def _candidates(step: Step) -> int:
    """How many passing heads the pop's predicate left over all classes."""
    assert isinstance(step.op, PopNext)
    return sum(
        len(_passing_heads(cls, index, step.op.dispatch))
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
        _passing_heads(cls, index, dispatch)
        for index, cls in enumerate(step.before.classes)
    )
    return some_candidate == (step.outcome is not None)


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
    reads=(f"{TABLE}.pop_next", f"{TABLE}._Scan.fast_forward"),
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
        not _passing_heads(cls, index, dispatch)
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
    reads=(f"{TABLE}.pop_next", f"{TABLE}._Scan.grant"),
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
        if not _passing_heads(before, index, dispatch)
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
    popped = _popped(step)
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
    return _served(step) is not None


def a_served_head_was_exactly_affordable(step: Step) -> bool:
    """The served head cost exactly the credit its class had after the grant."""
    served = _served(step)
    if served is None:
        return False
    popped, entry = served
    before_deficit: int = step.before.classes[popped.class_index].deficit
    quantum: int = step.before.configs[popped.class_index].quantum
    granted = quanta_granted(entry.cost, before_deficit, quantum)
    return saturating_add(before_deficit, quantum * granted) == entry.cost


@register(
    "queue",
    "always",
    "step",
    antecedent=a_pop_served_an_entry,
    boundary=a_served_head_was_exactly_affordable,
    reads=(f"{TABLE}.pop_next", f"{TABLE}._Scan.grant", f"{TABLE}._Scan.fast_forward"),
    guards=(f"{QUEUE}::pop_next", f"{QUEUE}::pop_candidate"),
)
def a_served_class_gets_the_fewest_quanta_that_cover_its_head(step: Step) -> bool:
    """Serving costs credit: after = before + fewest covering quanta - cost."""
    served = _served(step)
    if served is None:
        return True
    popped, entry = served
    index = popped.class_index
    after_class: ClassState = step.after.classes[index]
    if not after_class.entries:
        return after_class.deficit == 0
    before_deficit: int = step.before.classes[index].deficit
    quantum: int = step.before.configs[index].quantum
    granted = quanta_granted(entry.cost, before_deficit, quantum)
    credit = saturating_add(before_deficit, saturating_mul(quantum, granted))
    return after_class.deficit == saturating_sub(credit, entry.cost)


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
    popped = _popped(step)
    return popped is not None and bool(step.before.classes[popped.class_index].blocked)


def a_pop_served_beside_a_blocked_lane_it_would_accept(step: Step) -> bool:
    """A pop served a class whose blocked lane's worker the predicate accepts."""
    popped = _popped(step)
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
    popped = _popped(step)
    if popped is None or popped.placement is None:
        return True
    return popped.placement not in step.before.classes[popped.class_index].blocked


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
        and getattr(stats, kind) > saturating_mul(per_worker, step.op.worker_count)
        for kind in ("raw_isl_tokens", "cached_tokens")
        for per_worker in [config.limit_per_worker(kind)]
    )


@register(
    "queue",
    "sometimes",
    "step",
    reads=(f"{TABLE}._Scan.fast_forward",),
    guards=(f"{QUEUE}::pop_next",),
)
def a_pop_fast_forwarded_several_rounds(step: Step) -> bool:
    """A served class needed two or more quanta in one pop (fast-forward)."""
    served = _served(step)
    if served is None:
        return False
    popped, entry = served
    index = popped.class_index
    deficit = step.before.classes[index].deficit
    return quanta_granted(entry.cost, deficit, step.before.configs[index].quantum) >= 2


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
    popped = _popped(step)
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
        before.deficit > 0
        and before.entries
        and not _passing_heads(before, i, dispatch)
        for i, before in enumerate(step.before.classes)
    )


def _overtook(step: Step, policy: str) -> bool:
    served = _served(step)
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
    popped = _popped(step)
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
