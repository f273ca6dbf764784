"""Scheduler canaries: each breaks one documented behaviour of `LocalScheduler`.

Each is a `SchedulerApi` built from a `SchedulerConfig`, run by the scheduler
machine in place of the crate; the machine must fail on every one of them, by
the check named in `CAUGHT_BY` (`tests/test_canaries.py`), and the property
named in `PROPERTY` must reject what the canary shows on its own scenario
(`tests/test_scheduler_canaries.py`). They are broken variants of the model
(they run without the binding):

* `lane_never_rechecked` -- a free, a capacity change, `update_queue` and the
  due-time timer dispatch what is dispatchable but never re-test a blocked
  pinned lane;
* `due_off_by_one` -- a due time counts one ms late: a request due now is
  parked, and a parked one is rejected one ms after its due time;
* `cancelled_stays_counted` -- a cancelled request leaves the queue but stays
  in `pending_count`, `pending_isl_tokens` and the class's counters;
* `leave_at_booking_ignored` -- a caller that goes away once its request is
  booked (before it took the response) is seen as gone, but its booking is
  never freed: the worker's capacity does not return (one cancellation point,
  queue.rs:1308-1318, ignored).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from model.errors import SchedulerError
from model.scheduler.ops import Cancel, Schedule, SchedulerOp, SchedulerOutcome
from model.scheduler.table import (
    ModelScheduler,
    SchedulerState,
    apply,
    drain,
    reject_expired,
)
from model.scheduler.types import NOT_FOUND, WAITING, ClassStats

if TYPE_CHECKING:
    from collections.abc import Callable

    from model.scheduler.api import SchedulerApi
    from model.scheduler.types import SchedulerConfig


class _Unchecked(ModelScheduler):
    """The model without its internal invariant checks (a canary breaks them)."""

    def _apply(self, op: SchedulerOp) -> SchedulerOutcome:
        self.state, outcome = apply(self.state, op)
        return outcome


def _without_recheck(state: SchedulerState) -> SchedulerState:
    """Expire and dispatch, leaving every blocked lane blocked."""
    return drain(reject_expired(state))


class _LaneNeverRechecked(_Unchecked):
    """Rechecks nothing: a blocked pinned lane stays blocked for good."""

    def free(self, request_id: str) -> None:
        state = self.state
        if request_id not in state.booked:
            raise SchedulerError(NOT_FOUND)
        booked = {rid: w for rid, w in state.booked.items() if rid != request_id}
        self.state = _without_recheck(replace(state, booked=booked))

    def set_capacity(self, worker: int, tokens: int) -> None:
        capacities = list(self.state.capacities_tokens)
        if capacities[worker] == tokens:
            return
        capacities[worker] = tokens
        state = replace(self.state, capacities_tokens=tuple(capacities))
        self.state = _without_recheck(state)

    def update_queue(self) -> None:
        self.state = _without_recheck(self.state)

    def advance(self, delta_ms: int) -> None:
        state = self.state
        target_ms = state.now_ms + delta_ms
        for _ in range(len(state.parked) + 1):
            due_times = [
                due
                for rid in state.parked
                if (due := state.requests[rid].due_ms) is not None and due <= target_ms
            ]
            if not due_times:
                break
            state = _without_recheck(replace(state, now_ms=min(due_times)))
        self.state = replace(state, now_ms=target_ms)


class _DueOffByOne(_Unchecked):
    """Treats every due time as one ms later than the caller asked."""

    def schedule(self, op: Schedule) -> None:
        late = None if op.due_ms is None else op.due_ms + 1
        super().schedule(replace(op, due_ms=late))


class _CancelledStaysCounted(_Unchecked):
    """Keeps counting cancelled requests as pending."""

    def _cancelled(self) -> list[str]:
        return [
            rid for rid, fate in self.state.fates.items() if fate.kind == "cancelled"
        ]

    def pending_count(self) -> int:
        return super().pending_count() + len(self._cancelled())

    def pending_isl_tokens(self) -> int:
        extra = sum(self.state.requests[rid].isl_tokens for rid in self._cancelled())
        return super().pending_isl_tokens() + extra

    def class_stats(self) -> tuple[ClassStats, ...]:
        stats = list(super().class_stats())
        for rid in self._cancelled():
            request = self.state.requests[rid]
            index = request.class_index
            stats[index] = replace(
                stats[index],
                pending_count=stats[index].pending_count + 1,
                pending_isl_tokens=stats[index].pending_isl_tokens + request.isl_tokens,
            )
        return tuple(stats)


class _LeaveAtBookingIgnored(_Unchecked):
    """Keeps the booking of a caller that left at booking (its fate still says so)."""

    def _apply(self, op: SchedulerOp) -> SchedulerOutcome:
        before = self.state
        self.state, outcome = apply(self.state, op)
        cancelled_by_op = op.request_id if isinstance(op, Cancel) else None
        kept = {
            rid: self.state.requests[rid].worker
            for rid, fate in self.state.fates.items()
            if fate.kind == "cancelled"
            and self.state.requests[rid].leaves == "booking"
            and before.fates.get(rid, WAITING).kind == "waiting"
            and rid != cancelled_by_op
        }
        if kept:
            self.state = replace(self.state, booked={**self.state.booked, **kept})
        return outcome


CANARIES: dict[str, Callable[[SchedulerConfig], SchedulerApi]] = {
    "cancelled_stays_counted": _CancelledStaysCounted,
    "due_off_by_one": _DueOffByOne,
    "lane_never_rechecked": _LaneNeverRechecked,
    "leave_at_booking_ignored": _LeaveAtBookingIgnored,
}

CAUGHT_BY: dict[str, str] = {
    "cancelled_stays_counted": "states_agree",
    "due_off_by_one": "states_agree",
    "lane_never_rechecked": "states_agree",
    "leave_at_booking_ignored": "states_agree",
}
"""The check that reports each canary first in its shrunk counterexample."""

PROPERTY: dict[str, str] = {
    "cancelled_stays_counted": "pending_counters_sum_the_waiting_requests",
    "due_off_by_one": "no_request_waits_at_or_past_its_due_time",
    "lane_never_rechecked": "a_blocked_lane_is_dispatched_on_the_next_recheck",
    "leave_at_booking_ignored": "only_dispatched_requests_hold_bookings",
}
"""The property that rejects what each canary shows, beside the comparison."""
