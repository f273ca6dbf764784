"""Calls the crate would panic on are refused alike by model and crate."""

from __future__ import annotations

import pytest
from queue_support import SIDES, cls, maker, put

from model.errors import QueueUsageError
from model.queue.types import U32_MAX, USIZE_MAX, Worker


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("call", ["class_stats", "has_backlog", "class_config"])
def test_an_out_of_range_class_is_a_usage_error(side: str, call: str) -> None:
    """Observers refuse a class index past the last class."""
    queue = maker(side)((cls("a", 1), cls("b", 1)))

    with pytest.raises(QueueUsageError):
        getattr(queue, call)(2)


@pytest.mark.parametrize("side", SIDES)
def test_enqueue_into_an_out_of_range_class_is_a_usage_error(side: str) -> None:
    """Enqueue refuses a class index past the last class and queues nothing."""
    queue = maker(side)((cls("a", 1),))

    with pytest.raises(QueueUsageError):
        put(queue, 1, 1)

    assert 0 == queue.pending_count()


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    "field",
    [
        {"raw": -1},
        {"raw": USIZE_MAX + 1},
        {"strict": U32_MAX + 1},
        {"worker_count": -1},
        {"placement": Worker(1, U32_MAX + 1)},
    ],
    ids=[
        "negative raw",
        "raw past usize",
        "strict past u32",
        "negative workers",
        "rank past u32",
    ],
)
def test_a_value_outside_the_crates_integer_types_is_a_usage_error(
    side: str, field: dict[str, object]
) -> None:
    """Integers the crate's types cannot hold are refused before anything is queued."""
    queue = maker(side)((cls("a", 1),))

    with pytest.raises(QueueUsageError):
        put(queue, 0, 1, **field)  # type: ignore[arg-type]

    assert 0 == queue.pending_count()


@pytest.mark.parametrize("side", SIDES)
def test_every_call_after_drain_is_a_usage_error(side: str) -> None:
    """`drain` consumes the queue; the handle refuses further use."""
    queue = maker(side)((cls("a", 1),))
    put(queue, 0, 1)
    drained = queue.drain()

    with pytest.raises(QueueUsageError):
        queue.pending_count()

    assert [1] == [item.payload for item in drained]
