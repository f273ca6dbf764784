"""The scheduler binding: thin, deterministic, and refusing bad input unchanged."""

from __future__ import annotations

import pytest

from impl.adapter.scheduler import NS_PER_MS, CrateScheduler
from model.errors import SchedulerError
from model.scheduler.ops import Schedule
from model.scheduler.types import (
    NOT_FOUND,
    UNKNOWN_REQUEST,
    ClassStats,
    Fate,
    SchedulerConfig,
)

pytestmark = pytest.mark.crate

FIVE = SchedulerConfig(capacities_tokens=(5, 5))


def _busy_worker_zero(scheduler: CrateScheduler) -> None:
    """Book six tokens on worker 0 (capacity 5): it is busy from then on."""
    scheduler.schedule(Schedule("big", 0, pinned=True, isl_tokens=6))


def _unchanged_reads(scheduler: CrateScheduler) -> tuple[object, ...]:
    return (
        scheduler.now_ms(),
        scheduler.pending_count(),
        scheduler.pending_isl_tokens(),
        scheduler.class_stats(),
        scheduler.active_requests(),
    )


def test_a_request_for_an_idle_worker_is_dispatched_at_once() -> None:
    """An idle worker takes a request in the same call, whatever its size."""
    scheduler = CrateScheduler(FIVE)

    scheduler.schedule(Schedule("a", 1, pinned=False, isl_tokens=50))

    assert Fate("dispatched", "1", 0) == scheduler.fate("a")
    assert scheduler.has_request("a")
    assert [(0, 0), (1, 1)] == scheduler.active_requests()


def test_a_request_for_a_busy_worker_waits_and_is_counted() -> None:
    """A request pinned to a busy worker waits; the counters show it."""
    scheduler = CrateScheduler(FIVE)
    _busy_worker_zero(scheduler)

    scheduler.schedule(Schedule("small", 0, pinned=True, isl_tokens=2))

    assert Fate("waiting") == scheduler.fate("small")
    assert 1 == scheduler.pending_count()
    assert ClassStats(1, 2, 0, 2, 0) == scheduler.class_stats()[0]


def test_the_actor_timer_rejects_a_waiting_request_exactly_at_its_due_time() -> None:
    """One ns before the due time it waits; at the due time it is rejected."""
    scheduler = CrateScheduler(FIVE)
    _busy_worker_zero(scheduler)
    scheduler.schedule(Schedule("due", 0, pinned=True, isl_tokens=1, due_ms=5))

    scheduler._table.advance_clock(5 * NS_PER_MS - 1)
    before = scheduler.fate("due")
    scheduler._table.advance_clock(5 * NS_PER_MS)

    assert Fate("waiting") == before
    assert Fate("rejected", "deadline_exceeded", 5) == scheduler.fate("due")
    assert 1 == scheduler.class_stats()[0].rejected_due_time_passed_total


def test_a_due_time_off_the_millisecond_grid_is_enforced_at_the_next_ms() -> None:
    """Tokio rounds timers up to 1 ms: due at 4.5 ms, rejected at 5 ms."""
    scheduler = CrateScheduler(FIVE)
    _busy_worker_zero(scheduler)
    table = scheduler._table
    table.schedule("due", 0, True, 1, 4_500_000)  # noqa: FBT003 - positional binding

    table.advance_clock(4_500_000)
    at_due = table.fate("due")
    table.advance_clock(5_000_000)

    assert ("waiting", None, None) == at_due
    assert ("rejected", "deadline_exceeded", 5_000_000) == table.fate("due")


def test_the_clock_refuses_to_move_backwards_and_changes_nothing() -> None:
    """A backwards move is refused; the clock stays where it was."""
    scheduler = CrateScheduler(FIVE)
    scheduler.advance(3)

    with pytest.raises(SchedulerError, match="cannot move backwards"):
        scheduler.advance(-1)

    assert 3 == scheduler.now_ms()


def test_the_clock_refuses_to_leave_the_binding_range() -> None:
    """Beyond 600 years the periodic recheck could fire: the binding refuses."""
    scheduler = CrateScheduler(FIVE)

    with pytest.raises(SchedulerError, match="beyond the binding's supported range"):
        scheduler.advance(600 * 31_557_600_000 + 1)

    assert 0 == scheduler.now_ms()


def test_freeing_an_id_without_a_booking_is_refused_and_changes_nothing() -> None:
    """`free` of a waiting or unknown id is the crate's RequestNotFound."""
    scheduler = CrateScheduler(FIVE)
    _busy_worker_zero(scheduler)
    scheduler.schedule(Schedule("small", 0, pinned=True, isl_tokens=1))
    before = _unchanged_reads(scheduler)

    for request_id in ("small", "nobody"):
        with pytest.raises(SchedulerError) as refused:
            scheduler.free(request_id)
        assert NOT_FOUND == refused.value.kind

    assert before == _unchanged_reads(scheduler)


def test_a_cancel_of_an_unknown_id_is_refused() -> None:
    """Only a caller the binding started can go away."""
    scheduler = CrateScheduler(FIVE)

    with pytest.raises(SchedulerError) as refused:
        scheduler.cancel("nobody")

    assert UNKNOWN_REQUEST == refused.value.kind


def test_a_second_caller_for_one_id_is_refused_before_the_crate_sees_it() -> None:
    """One caller per request id (the binding keeps callers by id)."""
    scheduler = CrateScheduler(FIVE)
    scheduler.schedule(Schedule("a", 0, pinned=True, isl_tokens=1))
    before = _unchanged_reads(scheduler)

    with pytest.raises(SchedulerError, match="already has a caller"):
        scheduler.schedule(Schedule("a", 1, pinned=True, isl_tokens=1))

    assert before == _unchanged_reads(scheduler)


def test_a_capacity_for_a_worker_outside_the_fixed_set_is_refused() -> None:
    """The workers are fixed at construction; nothing is sent for another id."""
    scheduler = CrateScheduler(FIVE)
    before = _unchanged_reads(scheduler)

    with pytest.raises(SchedulerError, match="unknown worker 7"):
        scheduler.set_capacity(7, 10)

    assert before == _unchanged_reads(scheduler)


@pytest.mark.parametrize("isl_tokens", [-1, 2**64])
def test_token_counts_outside_usize_are_refused_and_change_nothing(
    isl_tokens: int,
) -> None:
    """PyO3 refuses a negative or oversized count before the crate is called."""
    scheduler = CrateScheduler(FIVE)
    before = _unchanged_reads(scheduler)

    with pytest.raises(SchedulerError, match="out of the crate's range"):
        scheduler.schedule(Schedule("a", 0, pinned=True, isl_tokens=isl_tokens))

    assert before == _unchanged_reads(scheduler)


def test_a_cancelled_caller_is_removed_and_its_lease_leaves_the_counters() -> None:
    """Dropping a waiting caller's future removes its request from the queue."""
    scheduler = CrateScheduler(FIVE)
    _busy_worker_zero(scheduler)
    scheduler.schedule(Schedule("gone", 0, pinned=False, isl_tokens=3))
    scheduler.advance(2)

    was_waiting = scheduler.cancel("gone")

    assert was_waiting
    assert Fate("cancelled", None, 2) == scheduler.fate("gone")
    assert ClassStats(0, 0, 0, 2, 0) == scheduler.class_stats()[0]
    assert not scheduler.cancel("gone")


def test_dropping_a_scheduler_with_waiting_callers_returns() -> None:
    """The binding shuts the scheduler down and aborts its callers on drop."""
    scheduler = CrateScheduler(FIVE)
    _busy_worker_zero(scheduler)
    scheduler.schedule(Schedule("small", 0, pinned=True, isl_tokens=1, due_ms=9))

    del scheduler

    assert CrateScheduler(FIVE).pending_count() == 0
