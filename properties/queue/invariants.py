"""Policy-queue invariants (SPEC D.b, Q1-Q12; Q13 refused calls) and coverage goals.

State properties take a `QueueView`: the model's state together with what a
system under test showed at the same point (for a model-only check, the
model's own observation). Properties about counters and listings are checked
on both; properties about credit, carry and blocked lanes speak about the
model, whose outside behaviour the machine compares with the crate's.

Step properties take a `Step` whose `before`/`after` are model `QueueState`s,
whose `op` is a `model.queue.ops` operation and whose `outcome` is the
model's return value; refusal properties take the `Step` of a refused call,
whose `outcome` is the error kind.

Bounds: Q2 is stated without saturation (the machine keeps token sums far
below `usize::MAX`); Q9's share is checked as its one-pop core here, and as a
whole-cycle ratio in `tests/test_queue_upstream.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.queue.ops import Enqueue, PopNext, Retain
from model.queue.table import (
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
    ClassStats,
    Dispatch,
    QueuedItem,
    Rejection,
    Worker,
)
from properties.registry import Step, register

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


# ---- Q1 count ------------------------------------------------------------------


@register("queue", "always", "state", spec="Q1")
def model_pending_count_equals_its_entries(view: QueueView) -> bool:
    """The model's pending counter equals the number of entries it holds."""
    return view.state.pending_count == sum(len(c.entries) for c in view.state.classes)


@register("queue", "always", "state", spec="Q1")
def observed_pending_count_equals_the_listed_entries(view: QueueView) -> bool:
    """`pending_count()` equals the number of entries `entries()` lists."""
    return view.seen.pending_count == len(view.seen.entries)


@register("queue", "always", "step", spec="Q1")
def enqueue_adds_one_entry_unless_rejected(step: Step) -> bool:
    """An accepted enqueue adds exactly one entry; a rejected one adds none."""
    if not isinstance(step.op, Enqueue):
        return True
    added = 0 if isinstance(step.outcome, Rejection) else 1
    return bool(step.after.pending_count == step.before.pending_count + added)


@register("queue", "always", "step", spec="Q1")
def pop_removes_exactly_the_entry_it_returns(step: Step) -> bool:
    """A pop that returns an entry removes that entry and nothing else."""
    if not isinstance(step.op, PopNext):
        return True
    before = sorted(_model_items(step.before), key=QueuedItem.sort_key)
    after = sorted(_model_items(step.after), key=QueuedItem.sort_key)
    if step.outcome is None:
        return before == after
    return [item for item in before if item != step.outcome] == after


@register("queue", "always", "step", spec="Q1")
def retain_removes_exactly_the_dropped_payloads(step: Step) -> bool:
    """`retain` removes the entries whose payload it drops, and only those."""
    if not isinstance(step.op, Retain):
        return True
    before = _model_items(step.before)
    kept = [item for item in before if item.payload not in step.op.drop]
    return sorted(kept, key=QueuedItem.sort_key) == sorted(
        _model_items(step.after), key=QueuedItem.sort_key
    )


# ---- Q2 stats ------------------------------------------------------------------


@register("queue", "always", "state", spec="Q2")
def model_class_stats_sum_their_entries(view: QueueView) -> bool:
    """Each class's counters in the model sum its entries (no saturation)."""
    items = _model_items(view.state)
    return all(
        cls.stats == _stats_of(items, index)
        for index, cls in enumerate(view.state.classes)
    )


@register("queue", "always", "state", spec="Q2")
def observed_class_stats_sum_the_listed_entries(view: QueueView) -> bool:
    """`class_stats(i)` sums the entries `entries()` lists for class i."""
    return all(
        stats == _stats_of(view.seen.entries, index)
        for index, stats in enumerate(view.seen.class_stats)
    )


# ---- Q3 rejection --------------------------------------------------------------


@register("queue", "always", "step", spec="Q3")
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


@register("queue", "always", "step", spec="Q3")
def a_rejected_enqueue_leaves_no_trace(step: Step) -> bool:
    """A rejected enqueue changes nothing, not even the sequence counter."""
    if not isinstance(step.outcome, Rejection):
        return True
    return bool(step.before == step.after)


# ---- Q4 / Q5 order -------------------------------------------------------------


@register("queue", "always", "step", spec="Q4")
def a_pop_takes_the_best_entry_of_its_lane(step: Step) -> bool:
    """The popped entry orders first in its lane: strict, score, then sequence."""
    popped = _popped(step)
    if popped is None:
        return True
    cls: ClassState = step.before.classes[popped.class_index]
    head = best(cls.lane(popped.placement))
    return head is not None and head.payload == popped.payload


@register("queue", "always", "step", spec="Q5")
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


# ---- Q6 work conservation ------------------------------------------------------


@register("queue", "always", "step", spec="Q6")
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


# ---- Q7 no credit when blocked -------------------------------------------------


@register("queue", "always", "step", spec="Q7")
def a_fruitless_pop_changes_no_credit(step: Step) -> bool:
    """A pop that finds nothing leaves every deficit as it was."""
    if not isinstance(step.op, PopNext) or step.outcome is not None:
        return True
    return [c.deficit for c in step.before.classes] == [
        c.deficit for c in step.after.classes
    ]


@register("queue", "always", "step", spec="Q7")
def a_fruitless_pop_clears_the_carry(step: Step) -> bool:
    """A pop that finds nothing leaves no class carried."""
    if not isinstance(step.op, PopNext) or step.outcome is not None:
        return True
    return bool(step.after.carry is None)


@register("queue", "always", "step", spec="Q7")
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


# ---- Q8 deficit bounds ---------------------------------------------------------


@register("queue", "always", "state", spec="Q8")
def deficits_are_never_negative(view: QueueView) -> bool:
    """No class's credit is negative."""
    return all(cls.deficit >= 0 for cls in view.state.classes)


@register("queue", "always", "state", spec="Q8")
def an_empty_class_holds_no_credit(view: QueueView) -> bool:
    """A class without entries has zero credit."""
    return all(cls.deficit == 0 for cls in view.state.classes if not cls.entries)


@register("queue", "always", "step", spec="Q8")
def a_pop_carries_only_the_class_it_served_with_credit_left(step: Step) -> bool:
    """After a pop the carry is unset or names the served, non-empty class in credit."""
    if not isinstance(step.op, PopNext) or step.after.carry is None:
        return True
    popped = _popped(step)
    if popped is None or step.after.carry != popped.class_index:
        return False
    cls: ClassState = step.after.classes[popped.class_index]
    return cls.deficit > 0 and bool(cls.entries)


@register("queue", "always", "step", spec="Q8")
def only_a_pop_moves_the_carry(step: Step) -> bool:
    """Enqueue and `retain` leave the carry alone, even when `retain` empties it."""
    if isinstance(step.op, PopNext) or step.after.drained:
        return True
    return bool(step.before.carry == step.after.carry)


# ---- Q9 DRR share (one-pop core) -----------------------------------------------


@register("queue", "always", "step", spec="Q9")
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


# ---- Q10 blocking memory -------------------------------------------------------


@register("queue", "always", "state", spec="Q10")
def only_workers_with_entries_are_blocked(view: QueueView) -> bool:
    """Every blocked worker still has a lane (entries) in its class."""
    return all(
        set(cls.blocked) <= set(cls.lane_workers()) for cls in view.state.classes
    )


@register("queue", "always", "step", spec="Q10")
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


@register("queue", "always", "step", spec="Q10")
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


@register("queue", "always", "step", spec="Q10")
def a_pop_never_serves_a_blocked_lane(step: Step) -> bool:
    """No pop returns an entry from a lane that was blocked before it."""
    popped = _popped(step)
    if popped is None or popped.placement is None:
        return True
    return popped.placement not in step.before.classes[popped.class_index].blocked


# ---- Q11 backlog, Q12 snapshot -------------------------------------------------


@register("queue", "always", "state", spec="Q11")
def observed_backlog_matches_the_listed_entries(view: QueueView) -> bool:
    """`has_backlog(i)` is true iff `entries()` lists an entry of class i."""
    listed = {item.class_index for item in view.seen.entries}
    return all(
        flag == (index in listed) for index, flag in enumerate(view.seen.backlog)
    )


@register("queue", "always", "state", spec="Q12")
def listed_cached_tokens_never_exceed_raw(view: QueueView) -> bool:
    """Every listed entry has `cached <= raw`."""
    return all(i.cached_tokens <= i.raw_isl_tokens for i in view.seen.entries)


@register("queue", "always", "state", spec="Q12")
def listed_uncached_tokens_are_raw_minus_cached(view: QueueView) -> bool:
    """Every listed entry has `uncached == raw - cached`."""
    return all(
        i.uncached_tokens == i.raw_isl_tokens - i.cached_tokens
        for i in view.seen.entries
    )


@register("queue", "always", "state", spec="Q12")
def listed_costs_are_uncached_tokens_floored_at_one(view: QueueView) -> bool:
    """Every listed entry has `scheduling cost == max(1, uncached)`."""
    return all(
        i.scheduling_cost_tokens == max(1, i.uncached_tokens) for i in view.seen.entries
    )


# ---- refused calls -------------------------------------------------------------


@register("queue", "always", "refusal", spec="Q13")
def a_refused_call_changes_nothing(step: Step) -> bool:
    """A call the crate would panic on is refused and leaves the queue unchanged."""
    return bool(step.before == step.after)


@register("queue", "sometimes", "refusal", spec="Q13")
def a_call_was_refused(step: Step) -> bool:
    """Some call was refused (a class index out of range, a value out of range)."""
    return step.outcome is not None


# ---- coverage goals ----------------------------------------------------------------


@register("queue", "sometimes", "step", spec="C.5")
def a_pop_blocked_a_worker_lane(step: Step) -> bool:
    """A pop found a worker lane's head undispatchable and blocked the lane."""
    return isinstance(step.op, PopNext) and any(
        after.blocked - before.blocked
        for before, after in zip(step.before.classes, step.after.classes, strict=True)
    )


@register("queue", "sometimes", "step", spec="G.5")
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


@register("queue", "sometimes", "step", spec="C.7")
def retain_emptied_and_so_unblocked_a_blocked_lane(step: Step) -> bool:
    """`retain` removed every entry of a blocked lane, which forgets the block."""
    return isinstance(step.op, Retain) and any(
        before.blocked - after.blocked
        for before, after in zip(step.before.classes, step.after.classes, strict=True)
    )


def _rejected_by(step: Step, kind: str) -> bool:
    return isinstance(step.outcome, Rejection) and step.outcome.limit_kind == kind


@register("queue", "sometimes", "step", spec="C.3")
def the_request_limit_rejected_an_enqueue(step: Step) -> bool:
    """An enqueue was refused by the per-worker request limit."""
    return _rejected_by(step, "requests")


@register("queue", "sometimes", "step", spec="C.3")
def the_raw_token_limit_rejected_an_enqueue(step: Step) -> bool:
    """An enqueue was refused by the per-worker raw-token limit."""
    return _rejected_by(step, "raw_isl_tokens")


@register("queue", "sometimes", "step", spec="C.3")
def the_cached_token_limit_rejected_an_enqueue(step: Step) -> bool:
    """An enqueue was refused by the per-worker cached-token limit."""
    return _rejected_by(step, "cached_tokens")


@register("queue", "sometimes", "step", spec="C.3")
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


@register("queue", "sometimes", "step", spec="C.6")
def a_pop_fast_forwarded_several_rounds(step: Step) -> bool:
    """A served class needed two or more quanta in one pop (fast-forward)."""
    served = _served(step)
    if served is None:
        return False
    popped, entry = served
    index = popped.class_index
    deficit = step.before.classes[index].deficit
    return quanta_granted(entry.cost, deficit, step.before.configs[index].quantum) >= 2


@register("queue", "sometimes", "step", spec="Q8")
def retain_emptied_the_carried_class(step: Step) -> bool:
    """`retain` removed every entry of the class the carry names."""
    carry = step.before.carry
    return (
        isinstance(step.op, Retain)
        and carry is not None
        and not step.after.classes[carry].entries
    )


@register("queue", "sometimes", "step", spec="C.6")
def the_carried_class_was_served_again(step: Step) -> bool:
    """The class served by the previous pop was served again from its credit."""
    popped = _popped(step)
    return popped is not None and step.before.carry == popped.class_index


@register("queue", "sometimes", "step", spec="C.6")
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


@register("queue", "sometimes", "step", spec="C.4")
def wspt_served_a_later_cheaper_entry_first(step: Step) -> bool:
    """A WSPT class served an entry ahead of an earlier one of the same tier."""
    return _overtook(step, "wspt")


@register("queue", "sometimes", "step", spec="C.4")
def lcfs_served_a_later_entry_first(step: Step) -> bool:
    """An LCFS class served an entry ahead of an earlier one of the same tier."""
    return _overtook(step, "lcfs")


@register("queue", "sometimes", "step", spec="C.5")
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


@register("queue", "sometimes", "step", spec="Q6")
def a_pop_found_nothing_while_entries_waited(step: Step) -> bool:
    """A pop returned None although entries were queued."""
    return (
        isinstance(step.op, PopNext)
        and step.outcome is None
        and step.before.pending_count > 0
    )
