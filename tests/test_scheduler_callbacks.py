"""Availability that changes unannounced, and due times centuries out.

Each test runs on the model and on the crate (through the binding) and states
the expected fates itself: a blocked lane's worker that leaves the available
set is noticed only at the next recheck, and the queue's capped due keys order
far due times (policy_queue.rs:631-639).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from impl.adapter.scheduler import NS_PER_MS, CrateScheduler
from model.errors import SchedulerError
from model.scheduler.ops import Schedule
from model.scheduler.table import ModelScheduler
from model.scheduler.types import (
    DUE_KEY_CAP_MS,
    NO_ENDPOINTS,
    Fate,
    SchedulerConfig,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from model.scheduler.api import SchedulerApi

FIVE = SchedulerConfig(capacities_tokens=(5, 5))
BUILDERS: dict[str, Callable[[SchedulerConfig], SchedulerApi]] = {
    "model": ModelScheduler,
    "crate": CrateScheduler,
}


@pytest.fixture(params=sorted(BUILDERS))
def build(request: pytest.FixtureRequest) -> Callable[[SchedulerConfig], SchedulerApi]:
    """The model's scheduler, then the crate's (marked crate)."""
    if request.param == "crate":
        request.applymarker(pytest.mark.crate)
    return BUILDERS[request.param]


def _lane_blocked_on_worker_zero(scheduler: SchedulerApi) -> None:
    """Worker 0 (capacity 5) books six tokens; `waits` is parked in its lane."""
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))
    scheduler.schedule(Schedule("waits", 0, pinned=True, isl_tokens=1))


def test_a_blocked_lane_whose_worker_goes_away_waits_for_a_recheck(
    build: Callable[[SchedulerConfig], SchedulerApi],
) -> None:
    """Without a recheck the lane stays blocked; `update_queue` then refuses it."""
    scheduler = build(FIVE)
    _lane_blocked_on_worker_zero(scheduler)
    scheduler.set_available(frozenset({1}))

    scheduler.schedule(Schedule("other", 1, pinned=True, isl_tokens=1))
    before_recheck = scheduler.fate("waits")
    scheduler.update_queue()

    assert Fate("dispatched", "1", 0) == scheduler.fate("other")
    assert Fate("waiting") == before_recheck
    assert Fate("rejected", NO_ENDPOINTS, 0) == scheduler.fate("waits")


def test_a_lane_once_rechecked_is_not_rescanned_on_a_later_dispatch(
    build: Callable[[SchedulerConfig], SchedulerApi],
) -> None:
    """After `update_queue` rescans the blocked lanes, a later arrival does not."""
    scheduler = build(FIVE)
    _lane_blocked_on_worker_zero(scheduler)
    scheduler.update_queue()
    scheduler.set_available(frozenset())

    scheduler.schedule(Schedule("shared", 0, pinned=False, isl_tokens=0))

    assert Fate("rejected", NO_ENDPOINTS, 0) == scheduler.fate("shared")
    assert Fate("waiting") == scheduler.fate("waits")


def test_a_passed_due_time_of_a_dispatched_request_rechecks_nothing(
    build: Callable[[SchedulerConfig], SchedulerApi],
) -> None:
    """The due time of a request already dispatched fires no recheck later."""
    scheduler = build(FIVE)
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6, due_ms=1))
    scheduler.schedule(Schedule("waits", 0, pinned=True, isl_tokens=1))
    scheduler.set_available(frozenset({1}))

    scheduler.advance(2)

    assert Fate("dispatched", "0", 0) == scheduler.fate("big")
    assert Fate("waiting") == scheduler.fate("waits")


def test_the_due_timer_of_a_waiting_request_fires_only_at_its_due_time(
    build: Callable[[SchedulerConfig], SchedulerApi],
) -> None:
    """A waiting due time rechecks nothing before it comes, then expires its request."""
    scheduler = build(FIVE)
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))
    scheduler.schedule(Schedule("waits", 0, pinned=True, isl_tokens=1, due_ms=5))
    scheduler.set_available(frozenset({1}))

    scheduler.advance(4)
    before_due = scheduler.fate("waits")
    scheduler.advance(1)

    assert Fate("waiting") == before_due
    assert Fate("rejected", "deadline_exceeded", 5) == scheduler.fate("waits")


@pytest.mark.parametrize(
    ("first_due_ms", "second_due_ms", "served"),
    [
        (None, DUE_KEY_CAP_MS, "second"),
        (DUE_KEY_CAP_MS, None, "first"),
        (DUE_KEY_CAP_MS + 1, DUE_KEY_CAP_MS, "first"),
        (2 * DUE_KEY_CAP_MS, DUE_KEY_CAP_MS - 1, "second"),
        (DUE_KEY_CAP_MS - 1, DUE_KEY_CAP_MS - 2, "second"),
    ],
)
def test_due_times_beyond_the_cap_share_one_key_after_the_deadline_origin(
    build: Callable[[SchedulerConfig], SchedulerApi],
    first_due_ms: int | None,
    second_due_ms: int | None,
    served: str,
) -> None:
    """Capped due times tie (arrival decides) and come before requests without one.

    The clock stands at 1 ms when the first due time is parked, so the deadline
    origin is 1 ms and every due time below is counted from it.
    """
    scheduler = build(FIVE)
    scheduler.advance(1)
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))
    for name, due_ms in (("first", first_due_ms), ("second", second_due_ms)):
        due = None if due_ms is None else 1 + due_ms
        scheduler.schedule(Schedule(name, 0, pinned=True, isl_tokens=6, due_ms=due))

    scheduler.free("big")

    assert Fate("dispatched", "0", 1) == scheduler.fate(served)
    other = "second" if served == "first" else "first"
    assert Fate("waiting") == scheduler.fate(other)


def test_a_due_time_past_the_cap_is_rejected_when_the_clock_reaches_the_cap(
    build: Callable[[SchedulerConfig], SchedulerApi],
) -> None:
    """The timer fires at the capped key's instant, 584 years out, not at the due time.

    The deadline origin is 0; the due time lies twice the cap out. One ms before
    the cap the request waits; on it, it is rejected for its due time.
    """
    scheduler = build(FIVE)
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))
    far = Schedule("far", 0, pinned=True, isl_tokens=1, due_ms=2 * DUE_KEY_CAP_MS)
    scheduler.schedule(far)

    scheduler.advance(DUE_KEY_CAP_MS - 1)
    before_cap = scheduler.fate("far")
    scheduler.advance(1)

    assert Fate("waiting") == before_cap
    assert Fate("rejected", "deadline_exceeded", DUE_KEY_CAP_MS) == scheduler.fate(
        "far"
    )
    assert 1 == scheduler.class_stats()[0].rejected_due_time_passed_total


@pytest.mark.crate
def test_one_ns_under_the_cap_sorts_before_the_cap() -> None:
    """A due key of `u64::MAX - 2` ns is not capped and comes first (ns due times)."""
    scheduler = CrateScheduler(FIVE)
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))
    on_cap = Schedule("on_cap", 0, pinned=True, isl_tokens=6)
    under = Schedule("under", 0, pinned=True, isl_tokens=6)
    scheduler.schedule_due_ns(on_cap, 2**64 - 2)
    scheduler.schedule_due_ns(under, 2**64 - 3)

    scheduler.free("big")

    assert Fate("dispatched", "0", 0) == scheduler.fate("under")
    assert Fate("waiting") == scheduler.fate("on_cap")


@pytest.mark.crate
def test_a_due_time_beyond_the_platforms_instant_is_refused_and_changes_nothing() -> (
    None
):
    """A due time no `Instant` can hold is refused before the crate sees it."""
    scheduler = CrateScheduler(FIVE)
    too_far_ms = 10**30 // NS_PER_MS

    with pytest.raises(SchedulerError, match="beyond the platform's Instant"):
        scheduler.schedule(
            Schedule("far", 0, pinned=True, isl_tokens=1, due_ms=too_far_ms)
        )

    assert 0 == scheduler.class_stats()[0].received_total
    with pytest.raises(SchedulerError):
        scheduler.fate("far")
