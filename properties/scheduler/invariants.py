"""Scheduler invariants and coverage goals.

State properties take a `SchedulerView`: the requests the callers made (their
inputs, as the model recorded them) beside what a system under test showed
after the step (`seen`). Step properties take a `Step` whose `before` and
`after` are such views, whose `op` is a `model.scheduler.ops` operation and
whose `outcome` is the model's `SchedulerOutcome`.

Each property states its expectation in its own words -- a count, a sum, a
comparison of times -- from the callers' inputs and the observation; none asks
the model what should have happened. Times are whole milliseconds since the
scheduler was built; "busy" is the crate's test with the suite's fraction of 1:
a worker's booked prompt tokens exceed its capacity.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.types import (
    DEADLINE_EXCEEDED,
    DUE_KEY_CAP_MS,
    QUEUE_REJECTED,
    Fate,
    Request,
)
from properties.registry import Step, register

if TYPE_CHECKING:
    from model.scheduler.api import SchedulerObservation
    from model.scheduler.table import SchedulerState

TABLE = "model.scheduler.table"
QUEUE = "scheduling::queue::SchedulerQueueActor"
LOCAL = "scheduling::local::LocalScheduler"
POLICY = "scheduling::policy_queue::PolicyQueue"
CLASS = "scheduling::policy_queue::PolicyClassQueue"
DUE_READS = (f"{TABLE}.schedule", f"{TABLE}.advance", f"{TABLE}.reject_expired")
DUE_GUARDS = (
    f"{QUEUE}::handle_enqueue",
    f"{QUEUE}::reject_expired",
    f"{POLICY}::take_expired",
)
DRAIN_READS = (f"{TABLE}.drain", f"{TABLE}.pop_next")
DRAIN_GUARDS = (f"{QUEUE}::drain_ready", f"{CLASS}::next_dispatchable_worker")


@dataclass(frozen=True)
class SchedulerView:
    """The model's state (for the callers' inputs) and an observation, side by side."""

    state: SchedulerState
    seen: SchedulerObservation


# ---- helpers (not properties) --------------------------------------------------


def _fates(view: SchedulerView) -> dict[str, Fate]:
    return dict(view.seen.fates)


def _request(view: SchedulerView, request_id: str) -> Request:
    return view.state.requests[request_id]


def _with_kind(view: SchedulerView, kind: str) -> list[str]:
    return [rid for rid, fate in view.seen.fates if fate.kind == kind]


def _due_rejections(view: SchedulerView) -> list[str]:
    return [
        rid
        for rid, fate in view.seen.fates
        if fate.kind == "rejected" and fate.detail == DEADLINE_EXCEEDED
    ]


def _load_tokens(view: SchedulerView, worker: int) -> int:
    """Prompt tokens of the requests the system under test shows booked on `worker`."""
    return sum(
        _request(view, rid).isl_tokens
        for rid in view.seen.booked
        if _request(view, rid).worker == worker
    )


def _busy(view: SchedulerView, worker: int) -> bool:
    return _load_tokens(view, worker) > view.state.capacities_tokens[worker]


def _scheduled_order(view: SchedulerView) -> dict[str, int]:
    return {rid: index for index, rid in enumerate(view.state.requests)}


def _shared_head(view: SchedulerView, class_index: int = 0) -> str | None:
    """A class's waiting unpinned request served first.

    Higher strict priority first, then earlier due, then the class's policy
    (FCFS: scheduled earlier; WSPT: fewer prompt tokens, at least one), then
    scheduled earlier. Due times at least `DUE_KEY_CAP_MS` after the queue's
    deadline origin (at or before now) share one capped key; one that may or
    may not be capped, by where the origin lies, leaves the head unnamed (None).
    """
    order = _scheduled_order(view)
    policy = view.state.classes[class_index].queue_policy
    waiting = [
        rid
        for rid in _with_kind(view, "waiting")
        if not _request(view, rid).pinned
        and _request(view, rid).class_index == class_index
    ]
    capped_from_ms = view.seen.now_ms + DUE_KEY_CAP_MS

    def key(rid: str) -> tuple[int, int, int, int, int]:
        request = _request(view, rid)
        cost = max(1, request.isl_tokens)
        by_policy = cost if policy == "wspt" else request.scheduled_at_ms
        due_ms = request.due_ms
        if due_ms is None:
            due = (2, 0)
        elif due_ms >= capped_from_ms:
            due = (1, 0)
        else:
            due = (0, due_ms)
        return (-request.strict_priority, *due, by_policy, order[rid])

    dues = [_request(view, rid).due_ms for rid in waiting]
    if any(d is not None and DUE_KEY_CAP_MS <= d < capped_from_ms for d in dues):
        return None
    return min(waiting, key=key) if waiting else None


def _shared_heads(view: SchedulerView) -> list[str]:
    """Every class's shared head that can be named, by class."""
    heads = (_shared_head(view, index) for index in range(len(view.state.classes)))
    return [head for head in heads if head is not None]


def _pinned_waiting_workers(view: SchedulerView) -> set[int]:
    return {
        _request(view, rid).worker
        for rid in _with_kind(view, "waiting")
        if _request(view, rid).pinned
    }


def _a_pinned_request_was_dispatched(step: Step) -> bool:
    """A request pinned to its worker was dispatched by this step."""
    return any(
        _request(step.after, rid).pinned for rid in _newly_ended(step, "dispatched")
    )


def _newly_ended(step: Step, kind: str) -> list[str]:
    before = _fates(step.before)
    return [
        rid
        for rid, fate in step.after.seen.fates
        if fate.kind == kind and before.get(rid, Fate("waiting")).kind == "waiting"
    ]


# ---- due times -----------------------------------------------------------------


def a_dispatched_request_had_a_due_time(view: SchedulerView) -> bool:
    """Some dispatched request carried a due time."""
    return any(
        _request(view, rid).due_ms is not None for rid in _with_kind(view, "dispatched")
    )


def a_request_was_dispatched_one_ms_before_its_due_time(view: SchedulerView) -> bool:
    """Some request was dispatched exactly one ms before its due time."""
    fates = _fates(view)
    return any(
        _request(view, rid).due_ms == (fates[rid].at_ms or 0) + 1
        for rid in _with_kind(view, "dispatched")
    )


@register(
    "scheduler",
    "always",
    "state",
    antecedent=a_dispatched_request_had_a_due_time,
    boundary=a_request_was_dispatched_one_ms_before_its_due_time,
    reads=(*DUE_READS, *DRAIN_READS),
    guards=(*DUE_GUARDS, f"{QUEUE}::drain_ready"),
)
def no_request_is_dispatched_at_or_after_its_due_time(view: SchedulerView) -> bool:
    """A request with a due time is dispatched strictly before it, if at all."""
    fates = _fates(view)
    for rid in _with_kind(view, "dispatched"):
        due_ms = _request(view, rid).due_ms
        at_ms = fates[rid].at_ms
        if due_ms is not None and (at_ms is None or at_ms >= due_ms):
            return False
    return True


def some_due_time_has_come(view: SchedulerView) -> bool:
    """Some request's due time is at or before now."""
    return any(
        request.due_ms is not None and request.due_ms <= view.seen.now_ms
        for request in view.state.requests.values()
    )


def some_due_time_is_exactly_now(view: SchedulerView) -> bool:
    """Some request's due time is exactly now."""
    return any(
        request.due_ms == view.seen.now_ms for request in view.state.requests.values()
    )


@register(
    "scheduler",
    "always",
    "state",
    antecedent=some_due_time_has_come,
    boundary=some_due_time_is_exactly_now,
    reads=DUE_READS,
    guards=(*DUE_GUARDS, "scheduling::queue::SchedulerQueueActor::run"),
)
def no_request_waits_at_or_past_its_due_time(view: SchedulerView) -> bool:
    """No request is still waiting once the clock has reached its due time."""
    return all(
        _request(view, rid).due_ms is None
        or view.seen.now_ms < (_request(view, rid).due_ms or 0)
        for rid in _with_kind(view, "waiting")
    )


def a_request_was_rejected_for_its_due_time(view: SchedulerView) -> bool:
    """Some request was rejected because its due time had come."""
    return bool(_due_rejections(view))


def a_parked_request_was_rejected_at_its_due_time(view: SchedulerView) -> bool:
    """Some request was rejected at its due time after waiting for it."""
    return any(
        (_request(view, rid).due_ms or 0) > _request(view, rid).scheduled_at_ms
        for rid in _due_rejections(view)
    )


@register(
    "scheduler",
    "always",
    "state",
    antecedent=a_request_was_rejected_for_its_due_time,
    boundary=a_parked_request_was_rejected_at_its_due_time,
    reads=DUE_READS,
    guards=(*DUE_GUARDS, f"{QUEUE}::reject_due_time_passed"),
)
def a_due_time_rejection_happens_exactly_at_the_due_time(view: SchedulerView) -> bool:
    """A request rejected for its due time is rejected at it (or at once if past).

    A due time past the queue's due-key cap is rejected earlier, when the clock
    reaches the cap: at least `DUE_KEY_CAP_MS` after the start and at most that
    long after it was scheduled (the deadline origin lies between).
    """
    fates = _fates(view)
    for rid in _due_rejections(view):
        request = _request(view, rid)
        at_ms = fates[rid].at_ms
        if request.due_ms is None or at_ms is None:
            return False
        at_due = at_ms == max(request.due_ms, request.scheduled_at_ms)
        at_cap = (
            DUE_KEY_CAP_MS <= at_ms < request.due_ms
            and at_ms <= request.scheduled_at_ms + DUE_KEY_CAP_MS
        )
        if not (at_due or at_cap):
            return False
    return True


@register(
    "scheduler",
    "always",
    "state",
    antecedent=a_request_was_rejected_for_its_due_time,
    boundary=a_parked_request_was_rejected_at_its_due_time,
    reads=DUE_READS,
    guards=(f"{QUEUE}::reject_due_time_passed", f"{LOCAL}::class_queue_stats"),
)
def due_time_rejections_are_counted_once_each(view: SchedulerView) -> bool:
    """Each class's `rejected_due_time_passed_total` counts its due-time rejections.

    A request rejected for its due time counts in its class, and so does one
    already due when its caller went away at admission (the actor rejects it
    all the same, to a caller that no longer listens).
    """
    rejected = set(_due_rejections(view))
    late_leavers = {
        rid
        for rid, request in view.state.requests.items()
        if request.leaves == "admission"
        and request.due_ms is not None
        and request.due_ms <= request.scheduled_at_ms
    }
    counted = rejected | late_leavers
    return all(
        stats.rejected_due_time_passed_total
        == sum(1 for rid in counted if _request(view, rid).class_index == index)
        for index, stats in enumerate(view.seen.stats)
    )


# ---- every request ends once ---------------------------------------------------


def requests_were_scheduled(view: SchedulerView) -> bool:
    """At least one request was scheduled."""
    return bool(view.state.requests)


def a_request_ended_other_than_dispatched(view: SchedulerView) -> bool:
    """Some request was rejected or cancelled."""
    return bool(_with_kind(view, "rejected") or _with_kind(view, "cancelled"))


@register(
    "scheduler",
    "always",
    "state",
    antecedent=requests_were_scheduled,
    boundary=a_request_ended_other_than_dispatched,
    reads=(f"{TABLE}.schedule",),
    guards=(f"{QUEUE}::handle_enqueue", f"{LOCAL}::class_queue_stats"),
)
def received_total_counts_every_scheduled_request(view: SchedulerView) -> bool:
    """Each class's `received_total` counts the requests that reached the queue.

    Every request the callers scheduled in the class, except those whose caller
    went away while the classifier ran (they never reach the actor).
    """
    return all(
        stats.received_total
        == sum(
            1
            for request in view.state.requests.values()
            if request.class_index == index and request.leaves != "classifying"
        )
        for index, stats in enumerate(view.seen.stats)
    )


def a_request_was_cancelled(view: SchedulerView) -> bool:
    """Some request's caller went away while it waited."""
    return bool(_with_kind(view, "cancelled"))


@register(
    "scheduler",
    "always",
    "state",
    antecedent=requests_were_scheduled,
    boundary=a_request_was_cancelled,
    reads=(f"{TABLE}.schedule", f"{TABLE}.cancel", f"{TABLE}.drain"),
    guards=(
        f"{QUEUE}::subtract_pending_counters",
        f"{QUEUE}::drain_cleanup",
        f"{LOCAL}::pending_count",
    ),
)
def pending_counters_sum_the_waiting_requests(view: SchedulerView) -> bool:
    """`pending_count` and each class's count and tokens are the waiting requests'."""
    waiting = _with_kind(view, "waiting")
    tokens = sum(_request(view, rid).isl_tokens for rid in waiting)
    per_class = all(
        stats.pending_count == len(mine)
        and stats.pending_isl_tokens
        == sum(_request(view, rid).isl_tokens for rid in mine)
        for index, stats in enumerate(view.seen.stats)
        for mine in [
            [rid for rid in waiting if _request(view, rid).class_index == index]
        ]
    )
    return (
        view.seen.pending_count == len(waiting)
        and view.seen.pending_isl_tokens == tokens
        and per_class
    )


@register(
    "scheduler",
    "always",
    "state",
    antecedent=a_request_ended_other_than_dispatched,
    boundary=a_request_was_cancelled,
    reads=(f"{TABLE}.drain", f"{TABLE}.free", f"{TABLE}.cancel"),
    guards=(
        f"{QUEUE}::book_and_respond",
        f"{QUEUE}::drain_cleanup",
        f"{LOCAL}::has_request",
    ),
)
def only_dispatched_requests_hold_bookings(view: SchedulerView) -> bool:
    """Every booking belongs to a dispatched request, and the workers count them."""
    fates = _fates(view)
    booked_per_worker = sum(count for _, count in view.seen.active_requests)
    return all(
        fates[rid].kind == "dispatched" for rid in view.seen.booked
    ) and booked_per_worker == len(view.seen.booked)


def a_request_had_ended_before_the_step(step: Step) -> bool:
    """Some request had already ended (dispatched, rejected or cancelled)."""
    return any(fate.kind != "waiting" for _, fate in step.before.seen.fates)


def a_cancel_came_after_the_end(step: Step) -> bool:
    """The step cancelled a request that had already ended."""
    if not isinstance(step.op, Cancel):
        return False
    fate = _fates(step.before).get(step.op.request_id)
    return fate is not None and fate.kind != "waiting"


@register(
    "scheduler",
    "always",
    "step",
    antecedent=a_request_had_ended_before_the_step,
    boundary=a_cancel_came_after_the_end,
    reads=(f"{TABLE}.cancel", f"{TABLE}.free", f"{TABLE}.reject_expired"),
    guards=(f"{LOCAL}::schedule_request", f"{QUEUE}::book_and_respond"),
)
def an_ended_request_keeps_its_fate(step: Step) -> bool:
    """A request that was dispatched, rejected or cancelled never ends again."""
    after = _fates(step.after)
    return all(
        after.get(rid) == fate
        for rid, fate in step.before.seen.fates
        if fate.kind != "waiting"
    )


# ---- rechecks ------------------------------------------------------------------


def _is_recheck(step: Step) -> bool:
    if isinstance(step.op, Free):
        return step.outcome.error is None
    return isinstance(step.op, (SetCapacity, UpdateQueue))


def a_recheck_followed_a_blocked_lane(step: Step) -> bool:
    """A recheck ran while a pinned request waited on a worker it leaves free."""
    if not _is_recheck(step):
        return False
    return any(
        not _busy(step.after, worker) for worker in _pinned_waiting_workers(step.before)
    )


def a_freed_worker_sits_exactly_at_capacity(step: Step) -> bool:
    """A worker that had a waiting lane ends the recheck exactly at its capacity."""
    return any(
        _load_tokens(step.after, w) == step.after.state.capacities_tokens[w]
        for w in _pinned_waiting_workers(step.before)
    ) and a_recheck_followed_a_blocked_lane(step)


@register(
    "scheduler",
    "always",
    "step",
    antecedent=a_recheck_followed_a_blocked_lane,
    boundary=a_freed_worker_sits_exactly_at_capacity,
    reads=(f"{TABLE}.free", f"{TABLE}.set_capacity", f"{TABLE}.recheck_all"),
    guards=(
        f"{QUEUE}::recheck_capacity_updates",
        f"{CLASS}::recheck_worker",
        f"{CLASS}::recheck_all_workers",
        f"{LOCAL}::free",
    ),
)
def a_blocked_lane_is_dispatched_on_the_next_recheck(step: Step) -> bool:
    """After a recheck, no pinned request waits on a worker that is not busy."""
    if not _is_recheck(step):
        return True
    return all(_busy(step.after, w) for w in _pinned_waiting_workers(step.after))


def some_request_waits(view: SchedulerView) -> bool:
    """At least one request is waiting (a head exists)."""
    return bool(_with_kind(view, "waiting"))


def a_waiting_head_worker_is_one_token_over_capacity(view: SchedulerView) -> bool:
    """A worker some request waits for holds one token more than its capacity."""
    heads = _shared_heads(view)
    workers = _pinned_waiting_workers(view) | {
        _request(view, head).worker for head in heads
    }
    return any(
        _load_tokens(view, w) == view.state.capacities_tokens[w] + 1 for w in workers
    )


@register(
    "scheduler",
    "always",
    "state",
    antecedent=some_request_waits,
    boundary=a_waiting_head_worker_is_one_token_over_capacity,
    reads=DRAIN_READS,
    guards=(*DRAIN_GUARDS, f"{QUEUE}::all_workers_prefill_busy_with"),
)
def no_waiting_head_has_a_free_worker(view: SchedulerView) -> bool:
    """Every waiting lane head (shared or pinned, any class) waits for a busy worker."""
    if any(
        not _busy(view, _request(view, head).worker) for head in _shared_heads(view)
    ):
        return False
    return all(_busy(view, w) for w in _pinned_waiting_workers(view))


# ---- goals ---------------------------------------------------------------------


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.schedule",),
    guards=(f"{QUEUE}::handle_enqueue",),
)
def a_request_due_now_is_rejected_at_schedule(step: Step) -> bool:
    """A request whose due time is exactly now is rejected when scheduled."""
    if not isinstance(step.op, Schedule) or step.op.due_ms is None:
        return False
    fate = _fates(step.after).get(step.op.request_id)
    return (
        step.op.due_ms == step.after.seen.now_ms
        and fate is not None
        and fate.detail == DEADLINE_EXCEEDED
    )


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.schedule", f"{TABLE}.drain"),
    guards=(f"{QUEUE}::handle_enqueue",),
)
def a_request_due_in_one_ms_is_parked(step: Step) -> bool:
    """A request due one ms from now is parked rather than rejected."""
    if not isinstance(step.op, Schedule) or step.op.due_ms is None:
        return False
    fate = _fates(step.after).get(step.op.request_id)
    return (
        step.op.due_ms == step.after.seen.now_ms + 1
        and fate is not None
        and fate.kind == "waiting"
    )


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.advance",),
    guards=(f"{POLICY}::take_expired",),
)
def an_advance_lands_exactly_on_a_due_time(step: Step) -> bool:
    """The clock stops exactly on a waiting request's due time, which rejects it."""
    if not isinstance(step.op, Advance):
        return False
    now_ms = step.after.seen.now_ms
    return any(
        _request(step.after, rid).due_ms == now_ms
        for rid in _newly_ended(step, "rejected")
    )


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.advance",),
    guards=(f"{POLICY}::take_expired",),
)
def an_advance_stops_one_ms_before_a_due_time(step: Step) -> bool:
    """The clock stops one ms before a waiting request's due time."""
    if not isinstance(step.op, Advance):
        return False
    now_ms = step.after.seen.now_ms
    return any(
        _request(step.after, rid).due_ms == now_ms + 1
        for rid in _with_kind(step.after, "waiting")
    )


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.advance",),
    guards=(f"{QUEUE}::run", f"{POLICY}::next_due_at"),
)
def an_advance_passes_a_due_time(step: Step) -> bool:
    """The clock moves past a due time, which rejects at the due time, not the end."""
    if not isinstance(step.op, Advance):
        return False
    fates = _fates(step.after)
    return any(
        (fates[rid].at_ms or 0) < step.after.seen.now_ms
        for rid in _newly_ended(step, "rejected")
    )


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.advance", f"{TABLE}.recheck_all"),
    guards=(f"{QUEUE}::handle_update",),
)
def an_expiry_lets_a_waiting_request_through(step: Step) -> bool:
    """A due-time rejection during an advance lets another request be dispatched."""
    return isinstance(step.op, Advance) and bool(_newly_ended(step, "dispatched"))


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.free",),
    guards=(f"{CLASS}::recheck_worker", f"{LOCAL}::free"),
)
def a_free_dispatches_a_waiting_pinned_request(step: Step) -> bool:
    """Freeing a booking dispatches a request pinned to that worker."""
    return isinstance(step.op, Free) and _a_pinned_request_was_dispatched(step)


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.set_capacity",),
    guards=(f"{CLASS}::recheck_all_workers", f"{LOCAL}::new"),
)
def a_capacity_change_dispatches_a_waiting_pinned_request(step: Step) -> bool:
    """A larger capacity dispatches a request pinned to a blocked lane."""
    return isinstance(step.op, SetCapacity) and _a_pinned_request_was_dispatched(step)


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.cancel",),
    guards=(f"{QUEUE}::drain_cleanup",),
)
def a_cancel_removes_a_waiting_request(step: Step) -> bool:
    """A caller that goes away removes its waiting request."""
    return isinstance(step.op, Cancel) and bool(_newly_ended(step, "cancelled"))


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.cancel", f"{TABLE}.drain"),
    guards=(f"{QUEUE}::drain_cleanup", f"{QUEUE}::has_dispatchable_ready_head"),
)
def a_cancel_lets_the_next_shared_request_through(step: Step) -> bool:
    """Removing a cancelled head lets the request behind it be dispatched."""
    return isinstance(step.op, Cancel) and bool(_newly_ended(step, "dispatched"))


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.cancel",),
    guards=("scheduling::queue::RequestLifecycleLease::drop",),
)
def a_cancel_comes_after_the_request_ended(step: Step) -> bool:
    """A caller goes away after its request already ended; nothing changes."""
    return a_cancel_came_after_the_end(step)


@register(
    "scheduler",
    "sometimes",
    "state",
    reads=DRAIN_READS,
    guards=(f"{QUEUE}::drain_ready",),
)
def the_shared_lane_waits_behind_its_head(view: SchedulerView) -> bool:
    """An unpinned request for a free worker waits behind its class's shared head."""
    return any(
        rid != head
        and not _request(view, rid).pinned
        and _request(view, rid).class_index == _request(view, head).class_index
        and not _busy(view, _request(view, rid).worker)
        for head in _shared_heads(view)
        for rid in _with_kind(view, "waiting")
    )


@register(
    "scheduler",
    "sometimes",
    "state",
    reads=DRAIN_READS,
    guards=(f"{QUEUE}::all_workers_prefill_busy_with",),
)
def a_worker_at_exactly_its_capacity_took_a_request(view: SchedulerView) -> bool:
    """A request was dispatched to a worker whose load equalled its capacity."""
    fates = _fates(view)
    dispatched = _with_kind(view, "dispatched")
    return any(
        fates[rid].at_ms == view.seen.now_ms
        and _load_tokens(view, _request(view, rid).worker)
        - _request(view, rid).isl_tokens
        == view.state.capacities_tokens[_request(view, rid).worker]
        and rid in view.seen.booked
        for rid in dispatched
    )


# ---- classes and callers that leave -------------------------------------------


def _left_at(step: Step, point: str) -> list[str]:
    """Requests whose caller, leaving at `point`, was newly cancelled by the step."""
    before = _fates(step.before)
    return [
        rid
        for rid, fate in step.after.seen.fates
        if fate.kind == "cancelled"
        and _request(step.after, rid).leaves == point
        and (rid not in before or before[rid].kind == "waiting")
    ]


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.schedule",),
    guards=(f"{LOCAL}::classify_request",),
)
def a_caller_left_while_classified(step: Step) -> bool:
    """A caller went away while the classifier ran: nothing reached the queue."""
    return bool(_left_at(step, "classifying"))


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.schedule", f"{TABLE}.drain"),
    guards=(f"{QUEUE}::book_and_respond",),
)
def a_caller_left_at_admission(step: Step) -> bool:
    """A caller went away before the actor acknowledged its request."""
    return bool(_left_at(step, "admission"))


@register(
    "scheduler",
    "sometimes",
    "step",
    reads=(f"{TABLE}.release_leavers",),
    guards=(
        f"{QUEUE}::drain_cleanup",
        "scheduling::queue::RequestLifecycleLease::drop",
    ),
)
def a_caller_left_at_booking_and_its_capacity_returned(step: Step) -> bool:
    """A booked caller went away before taking the response; no booking stays."""
    return any(rid not in step.after.seen.booked for rid in _left_at(step, "booking"))


@register(
    "scheduler",
    "sometimes",
    "state",
    reads=(f"{TABLE}.schedule",),
    guards=(f"{POLICY}::enqueue_with_due_at",),
)
def a_class_limit_refused_a_request(view: SchedulerView) -> bool:
    """A request was rejected by its class's queue limit."""
    return any(
        fate.kind == "rejected" and fate.detail == QUEUE_REJECTED
        for _, fate in view.seen.fates
    )


@register(
    "scheduler",
    "sometimes",
    "state",
    reads=DRAIN_READS,
    guards=(f"{POLICY}::pop_next",),
)
def requests_of_two_classes_wait_together(view: SchedulerView) -> bool:
    """Waiting requests belong to two classes or more."""
    waiting = _with_kind(view, "waiting")
    return len({_request(view, rid).class_index for rid in waiting}) >= 2
