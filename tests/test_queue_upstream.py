"""Upstream `policy_queue.rs` unit-test scenarios (SPEC E.3), on model and crate.

Each test names the upstream test it re-expresses through the public API.
Upstream assertions on private fields (a class's deficit) become assertions
on pop order that the deficit decides; the model's deficit is asserted too,
on the model side only. Not expressible publicly: 1 (entry sizes), 3-7
(deadlines are crate-private), 11 and 14-16 (recheck is crate-private), 13
(predicate call counts are not part of the contract).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from queue_support import SIDES, cls, maker, pop_payload, put

from model.queue.api import PolicyQueueApi
from model.queue.table import ModelPolicyQueue
from model.queue.types import (
    USIZE_MAX,
    ClassStats,
    Dispatch,
    Rejection,
    Worker,
)

W1 = Worker(1, 0)
W2 = Worker(2, 0)
EVERYONE = Dispatch()
NOBODY = Dispatch(saturated=frozenset({W1, W2}), any_dispatchable=False)


def _deficits(queue: PolicyQueueApi) -> list[int] | None:
    """The model's deficits; None for the crate, which keeps them private."""
    if isinstance(queue, ModelPolicyQueue):
        return [c.deficit for c in queue.state.classes]
    return None


@pytest.mark.parametrize("side", SIDES)
def test_per_worker_caps_scale_and_remain_pre_add(side: str) -> None:
    """Upstream 2: limits scale by worker count and compare pre-add counters."""
    queue = maker(side)((cls("capped", 10, requests=1, raw=5, cached=3),))
    put(queue, 0, 1, raw=8, cached=4, worker_count=2)
    put(queue, 0, 2, raw=100, cached=100, arrival=1.0, worker_count=2)

    rejection = put(queue, 0, 3, raw=1, arrival=2.0, worker_count=2)

    assert Rejection("capped", "requests", current=2, limit=2) == rejection
    assert ClassStats(2, 108, 104) == queue.class_stats(0)


@pytest.mark.parametrize("side", SIDES)
def test_drr_charges_cost_when_the_queue_was_empty(side: str) -> None:
    """Upstream 8: quantum 10 minus cost 7 leaves 3, which pays the next cost-3 head."""
    queue = maker(side)((cls("a", 10), cls("b", 10)))
    put(queue, 0, 1, raw=7)
    put(queue, 0, 2, raw=3, arrival=1.0)
    put(queue, 1, 3, raw=1)

    first = pop_payload(queue)
    deficits = _deficits(queue)
    second = pop_payload(queue)
    third = pop_payload(queue)

    assert [1, 2, 3] == [first, second, third]
    assert deficits in (None, [3, 0])


@pytest.mark.parametrize("side", SIDES)
def test_retain_removes_payload_and_rebuilds_queue_accounting(side: str) -> None:
    """Upstream 9: retain drops an entry and its counters; the rest still pops."""
    queue = maker(side)((cls("default", 10),))
    put(queue, 0, 1, raw=8, cached=4)
    put(queue, 0, 2, raw=16, cached=6, arrival=1.0)

    queue.retain(frozenset({2}))

    assert 1 == queue.pending_count()
    assert ClassStats(1, 8, 4) == queue.class_stats(0)
    assert 1 == pop_payload(queue)


@pytest.mark.parametrize("side", SIDES)
def test_blocked_worker_lane_does_not_block_another_lane(side: str) -> None:
    """Upstream 10: a saturated worker's lane does not hold back another worker's."""
    queue = maker(side)((cls("agents", 10),))
    put(queue, 0, 1, arrival=1.0, worker_count=2, placement=W1)
    put(queue, 0, 2, arrival=2.0, worker_count=2, placement=W2)

    popped = pop_payload(queue, Dispatch(saturated=frozenset({W1})))

    assert 2 == popped
    assert 1 == queue.pending_count()


@pytest.mark.parametrize("side", SIDES)
def test_exact_lane_index_tracks_a_new_higher_priority_head(side: str) -> None:
    """Upstream 12: a later entry with a priority jump becomes its lane's head."""
    queue = maker(side)((cls("agents", 10),))
    put(queue, 0, 1, placement=W1)
    put(queue, 0, 2, arrival=1.0, jump=10.0, placement=W1)

    order = [pop_payload(queue), pop_payload(queue)]

    assert [2, 1] == order


@pytest.mark.parametrize("side", SIDES)
def test_per_worker_token_caps_follow_capacity_without_evicting(side: str) -> None:
    """Upstream 17: limits follow each call's worker count; zero limits reject."""
    queue = maker(side)(
        (
            cls("raw", 1, raw=10),
            cls("cached", 1, cached=5),
            cls("zero", 1, requests=0),
            cls("no-workers", 1, requests=1),
        )
    )
    put(queue, 0, 1, raw=11, worker_count=2)
    raw_rejection = put(queue, 0, 2, raw=1, arrival=1.0, worker_count=1)
    put(queue, 0, 3, raw=10, arrival=2.0, worker_count=2)
    grown_rejection = put(queue, 0, 4, raw=1, arrival=3.0, worker_count=2)
    put(queue, 1, 5, raw=8, cached=6, worker_count=2)
    cached_rejection = put(queue, 1, 6, raw=1, cached=1, worker_count=1)
    zero_rejection = put(queue, 2, 7, raw=1, worker_count=4)
    no_workers_rejection = put(queue, 3, 8, raw=1, worker_count=0)

    assert Rejection("raw", "raw_isl_tokens", 11, 10) == raw_rejection
    assert Rejection("raw", "raw_isl_tokens", 21, 20) == grown_rejection
    assert Rejection("cached", "cached_tokens", 6, 5) == cached_rejection
    assert Rejection("zero", "requests", 0, 0) == zero_rejection
    assert Rejection("no-workers", "requests", 0, 0) == no_workers_rejection
    assert ClassStats(2, 21, 0) == queue.class_stats(0)


@pytest.mark.parametrize("side", SIDES)
def test_per_worker_limit_multiplication_saturates(side: str) -> None:
    """Upstream 18: a usize::MAX per-worker limit times two workers does not wrap."""
    queue = maker(side)((cls("capped", 1, requests=USIZE_MAX),))

    rejection = put(queue, 0, 1, worker_count=2)

    assert rejection is None
    assert 1 == queue.pending_count()


@pytest.mark.parametrize("side", SIDES)
def test_fcfs_and_wspt_order_only_within_each_class(side: str) -> None:
    """Upstream 19: FCFS keeps arrival order; WSPT serves the short job first."""
    queue = maker(side)((cls("fcfs", 50), cls("wspt", 50, "wspt")))
    put(queue, 0, 1, raw=50)
    put(queue, 0, 2, raw=1, arrival=1.0)
    put(queue, 1, 3, raw=50)
    put(queue, 1, 4, raw=1, arrival=1.0)

    order = [pop_payload(queue), pop_payload(queue)]

    assert [1, 4] == order


@pytest.mark.parametrize("side", SIDES)
def test_drr_weights_progress_and_skips_blocked_classes_without_credit(
    side: str,
) -> None:
    """Upstream 20: quantum 3 gets at least half of six pops; a paused class waits."""
    queue = maker(side)((cls("slow", 1), cls("fast", 3)))
    for index in range(6):
        put(queue, 0, 100 + index, arrival=float(index))
        put(queue, 1, 200 + index, arrival=float(index))
    first_six = [pop_payload(queue) for _ in range(6)]
    before = _deficits(queue)

    slow = pop_payload(queue, Dispatch(paused_classes=frozenset({1})))
    after = _deficits(queue)

    kept = None if before is None or after is None else before[1] == after[1]
    assert sum(1 for p in first_six if p is not None and p >= 200) >= 3
    assert slow is not None
    assert slow < 200
    assert kept in (None, True)


def _agents_and_batch(side: str, third_cost: int) -> PolicyQueueApi:
    """Upstream 21's queue: agents (quantum 10) and batch (quantum 1).

    Agents holds costs 5, 1 (on W1) and `third_cost` (on W2); batch one cost 1.
    """
    queue = maker(side)((cls("agents", 10), cls("batch", 1)))
    put(queue, 0, 1, raw=5, worker_count=2)
    put(queue, 0, 2, raw=1, arrival=1.0, worker_count=2, placement=W1)
    put(queue, 0, 3, raw=third_cost, arrival=2.0, worker_count=2, placement=W2)
    put(queue, 1, 4, raw=1, worker_count=2)
    return queue


@pytest.mark.parametrize("side", SIDES)
def test_drr_carry_uses_next_dispatchable_lane(side: str) -> None:
    """Upstream 21: the carried class skips its blocked lane; a cost-10 head waits."""
    queue = _agents_and_batch(side, third_cost=10)
    w1_busy = Dispatch(saturated=frozenset({W1}))

    first = pop_payload(queue, w1_busy)
    deficit_after_first = _deficits(queue)
    second = pop_payload(queue, w1_busy)

    assert [1, 4] == [first, second]
    assert deficit_after_first in (None, [5, 0])
    assert _deficits(queue) in (None, [5, 0])


@pytest.mark.parametrize("side", SIDES)
def test_a_carried_class_keeps_the_deficit_it_cannot_spend_yet(side: str) -> None:
    """C.6 step 3: a carried class with ready work keeps its deficit (21, observed).

    Upstream 21 asserts the kept deficit of 5 on a private field. Here a cost-12
    head makes it visible: with 5 kept, the next visit brings agents to 15 and
    serves it before batch's new head; with the deficit dropped, agents would
    reach only 10 and batch would go first.
    """
    queue = _agents_and_batch(side, third_cost=12)
    w1_busy = Dispatch(saturated=frozenset({W1}))
    first_two = [pop_payload(queue, w1_busy), pop_payload(queue, w1_busy)]
    kept = _deficits(queue)
    put(queue, 1, 5, raw=1, arrival=3.0, worker_count=2)

    last_two = [pop_payload(queue, w1_busy), pop_payload(queue, w1_busy)]

    assert [1, 4] == first_two
    assert kept in (None, [5, 0])
    assert [3, 5] == last_two


@pytest.mark.parametrize("side", SIDES)
def test_drr_serves_exact_quantum_ratio_for_equal_cost_backlogs(side: str) -> None:
    """Upstream 22: quanta 1 and 3 with unit costs serve one, three, three, three."""
    queue = maker(side)((cls("one", 1), cls("three", 3)))
    for index in range(20):
        put(queue, 0, 1, arrival=float(index))
    for index in range(60):
        put(queue, 1, 3, arrival=float(index))

    dispatches = [pop_payload(queue) for _ in range(80)]

    assert [1, 3, 3, 3] * 20 == dispatches


@pytest.mark.parametrize("side", SIDES)
def test_fully_blocked_ring_returns_without_accruing_deficit(side: str) -> None:
    """Upstream 23: 10,000 fruitless pops grant no credit, so order is unchanged."""
    queue = maker(side)((cls("first", 7), cls("second", 11)))
    put(queue, 0, 1, raw=100)
    put(queue, 1, 2, raw=100)

    fruitless = [pop_payload(queue, NOBODY) for _ in range(10_000)]
    deficits = _deficits(queue)
    order = [pop_payload(queue), pop_payload(queue)]

    assert [None] * 10_000 == fruitless
    assert deficits in (None, [0, 0])
    # Fresh credit: 9 fast-forward rounds give "second" 110 >= 100 before
    # "first" reaches 70; any credit kept from the fruitless pops would differ.
    assert [2, 1] == order


@pytest.mark.parametrize("side", SIDES)
def test_oversized_heads_bulk_add_deficit_and_make_progress(side: str) -> None:
    """Upstream 24: a cost-101 head in a quantum-4 class pops in one call."""
    queue = maker(side)((cls("large", 4), cls("blocked", 100)))
    put(queue, 0, 1, raw=101)
    put(queue, 1, 2, raw=1)

    popped = pop_payload(queue, Dispatch(paused_classes=frozenset({1})))

    assert 1 == popped
    assert 1 == queue.pending_count()


@pytest.mark.parametrize("side", SIDES)
def test_a_blocked_lane_stays_blocked_after_its_worker_frees(side: str) -> None:
    """Without a public recheck, a lane blocked once is never tested again."""
    queue = maker(side)((cls("agents", 10),))
    put(queue, 0, 1, placement=W1)
    put(queue, 0, 2, placement=W2)

    blocked = pop_payload(queue, NOBODY)
    freed = pop_payload(queue, EVERYONE)
    pushed = put(queue, 0, 3, arrival=1.0, jump=100.0, placement=W1)
    after_push = pop_payload(queue, EVERYONE)

    assert [None, None, None, None] == [blocked, freed, pushed, after_push]
    assert 3 == queue.pending_count()
    assert queue.has_backlog(0)


@pytest.mark.parametrize("side", SIDES)
def test_retain_emptying_a_blocked_lane_forgets_the_block(side: str) -> None:
    """Once `retain` empties a blocked lane, a new entry for that worker pops."""
    queue = maker(side)((cls("agents", 10),))
    put(queue, 0, 1, placement=W1)
    put(queue, 0, 2, placement=W2)
    pop_payload(queue, NOBODY)

    queue.retain(frozenset({1}))
    put(queue, 0, 3, placement=W1)
    order = [pop_payload(queue), pop_payload(queue)]

    assert [3, None] == order
    assert 1 == queue.pending_count()


@pytest.mark.parametrize("side", SIDES)
def test_the_any_lane_is_never_blocked_by_a_failed_test(side: str) -> None:
    """A refused Any head is tested afresh at the next pop."""
    queue = maker(side)((cls("agents", 10),))
    put(queue, 0, 1)

    refused = pop_payload(queue, Dispatch(any_dispatchable=False))
    accepted = pop_payload(queue, EVERYONE)

    assert [None, 1] == [refused, accepted]


@pytest.mark.parametrize("side", SIDES)
def test_stats_saturate_instead_of_wrapping(side: str) -> None:
    """Two usize::MAX requests saturate the raw counter; a removal subtracts."""
    queue = maker(side)((cls("big", 1),))
    put(queue, 0, 1, raw=USIZE_MAX)
    put(queue, 0, 2, raw=USIZE_MAX, arrival=1.0)
    saturated = queue.class_stats(0)

    queue.retain(frozenset({2}))

    assert ClassStats(2, USIZE_MAX, 0) == saturated
    assert ClassStats(1, 0, 0) == queue.class_stats(0)


@pytest.mark.parametrize("side", SIDES)
@given(
    quanta=st.lists(st.integers(1, 5), min_size=2, max_size=3),
    cycles=st.integers(1, 3),
)
def test_unit_cost_backlogs_share_pops_exactly_by_quantum(
    side: str, quanta: list[int], cycles: int
) -> None:
    """Q9: with unit costs and full backlogs, each cycle serves quantum_i of class i."""
    queue = maker(side)(tuple(cls(f"c{i}", q) for i, q in enumerate(quanta)))
    total = sum(quanta) * cycles
    for index, quantum in enumerate(quanta):
        for n in range(quantum * cycles + 1):
            put(queue, index, index, arrival=float(n))

    served = [pop_payload(queue) for _ in range(total)]

    assert [q * cycles for q in quanta] == [served.count(i) for i in range(len(quanta))]
