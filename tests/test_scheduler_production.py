"""The pinned crate's scheduler behaves as the `scheduler_*` rows of the table say."""

from __future__ import annotations

import pytest

from ci import production
from impl.adapter.scheduler import NS_PER_MS, CrateScheduler
from model.errors import SchedulerError
from model.scheduler.ops import Schedule
from model.scheduler.types import (
    DEADLINE_EXCEEDED,
    DUE_KEY_CAP_MS,
    NO_ENDPOINTS,
    Fate,
    SchedulerConfig,
)

pytestmark = [pytest.mark.pinned, pytest.mark.crate]

CONFIG = SchedulerConfig(capacities_tokens=(5, 5))


def _blocked_lane() -> CrateScheduler:
    """Worker 0 busy with `big` (6 of 5 tokens); `small` waits pinned to it."""
    scheduler = CrateScheduler(CONFIG)
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))
    scheduler.schedule(Schedule("small", 0, pinned=True, isl_tokens=1))
    assert Fate("waiting") == scheduler.fate("small")
    return scheduler


def test_every_scheduler_row_is_declared() -> None:
    """The table holds the seven scheduler rows these tests check."""
    keys = {row.key for row in production.rows() if row.key.startswith("scheduler_")}

    assert {
        "scheduler_availability",
        "scheduler_binding",
        "scheduler_cancel",
        "scheduler_due_key_cap",
        "scheduler_due_time",
        "scheduler_recheck",
        "scheduler_timer_grid",
    } == keys


def test_scheduler_recheck_a_free_dispatches_the_freed_workers_lane() -> None:
    """`free` rechecks the freed worker: its waiting pinned request is dispatched."""
    scheduler = _blocked_lane()

    scheduler.free("big")

    assert Fate("dispatched", "0", 0) == scheduler.fate("small")


def test_scheduler_recheck_a_changed_capacity_rechecks_every_lane() -> None:
    """An unchanged capacity does nothing; a capacity equal to the load dispatches."""
    scheduler = _blocked_lane()

    scheduler.set_capacity(0, 5)
    unchanged = scheduler.fate("small")
    scheduler.set_capacity(0, 6)

    assert Fate("waiting") == unchanged
    assert Fate("dispatched", "0", 0) == scheduler.fate("small")


def test_scheduler_due_time_is_enforced_at_enqueue_and_exactly_at_the_due_time() -> (
    None
):
    """Due now: rejected at once; due at 3 ms: waits at 2 ms, rejected at 3 ms."""
    scheduler = _blocked_lane()
    scheduler.schedule(Schedule("now", 0, pinned=True, isl_tokens=1, due_ms=0))
    scheduler.schedule(Schedule("later", 0, pinned=True, isl_tokens=1, due_ms=3))

    scheduler.advance(2)
    at_two = scheduler.fate("later")
    scheduler.advance(1)

    assert Fate("rejected", DEADLINE_EXCEEDED, 0) == scheduler.fate("now")
    assert Fate("waiting") == at_two
    assert Fate("rejected", DEADLINE_EXCEEDED, 3) == scheduler.fate("later")
    assert 2 == scheduler.class_stats()[0].rejected_due_time_passed_total


def test_scheduler_timer_grid_rounds_a_due_time_up_to_the_next_ms() -> None:
    """Due at 4.5 ms: still waiting at 4.5 ms, rejected at 5 ms."""
    scheduler = _blocked_lane()
    table = scheduler._table
    table.schedule("due", 0, True, 1, 4_500_000)  # noqa: FBT003 - binding call

    table.advance_clock(4_500_000)
    at_due = table.fate("due")
    table.advance_clock(5 * NS_PER_MS)

    assert ("waiting", None, None) == at_due
    assert ("rejected", DEADLINE_EXCEEDED, 5 * NS_PER_MS) == table.fate("due")


def test_scheduler_cancel_removes_a_parked_request_and_nothing_after_dispatch() -> None:
    """A waiting caller going away is removed; a dispatched one keeps its booking.

    (Its future already returned: the booking was committed.)
    """
    scheduler = _blocked_lane()

    removed = scheduler.cancel("small")
    kept = scheduler.cancel("big")

    assert removed
    assert 0 == scheduler.pending_count()
    assert not kept
    assert scheduler.has_request("big")


def test_scheduler_binding_keeps_its_fixed_workers_and_clock_range() -> None:
    """Workers are `0..n` from construction; the clock stops at 600 years."""
    scheduler = CrateScheduler(CONFIG)

    with pytest.raises(SchedulerError, match="unknown worker"):
        scheduler.set_capacity(2, 1)
    with pytest.raises(SchedulerError, match="supported range"):
        scheduler.advance(600 * 31_557_600_000 + 1)

    assert [(0, 0), (1, 0)] == scheduler.active_requests()


def test_scheduler_availability_a_changed_answer_rechecks_nothing() -> None:
    """A blocked lane's worker that goes away is refused at the next recheck only."""
    scheduler = _blocked_lane()
    scheduler.set_available(frozenset({1}))

    scheduler.schedule(Schedule("other", 1, pinned=True, isl_tokens=1))
    before_recheck = scheduler.fate("small")
    scheduler.update_queue()

    assert Fate("waiting") == before_recheck
    assert Fate("rejected", NO_ENDPOINTS, 0) == scheduler.fate("small")


def test_scheduler_due_key_cap_far_due_times_tie_before_requests_without_one() -> None:
    """Due times past the cap sort alike, by arrival, and before no due time."""
    scheduler = _blocked_lane()
    far_ms = 2 * DUE_KEY_CAP_MS
    scheduler.schedule(Schedule("later", 0, pinned=True, isl_tokens=6, due_ms=far_ms))
    capped = Schedule("capped", 0, pinned=True, isl_tokens=6, due_ms=DUE_KEY_CAP_MS)
    scheduler.schedule(capped)

    scheduler.free("big")

    assert Fate("waiting") == scheduler.fate("small")
    assert Fate("dispatched", "0", 0) == scheduler.fate("later")
    assert Fate("waiting") == scheduler.fate("capped")
