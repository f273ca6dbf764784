"""Queued entries compare equal only to themselves, as callers see them.

`PolicyQueueEntry` is public and implements `PartialEq` (two entries are equal
when their priority and enqueue sequence are); the queue hands entries to its
caller (`pop_next`, `drain`, `entries`), which may keep and compare them. In
one queue every entry has its own enqueue sequence, so an entry equals itself
and no other, even a request identical in every field, class and arrival
included. Mutants CQ015-CQ019 (`eq` always true or false, `&&` as `||`, an
`==` as `!=`) are observable through this, so none of them is equivalent.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from queue_support import cls, maker, put

from model.queue.types import Dispatch

pytestmark = pytest.mark.crate

CLASSES = (cls("a", 1), cls("b", 2, policy="wspt"))

enqueues = st.lists(
    st.tuples(
        st.sampled_from(range(len(CLASSES))),
        st.integers(min_value=1, max_value=3),  # raw tokens: repeats are likely
        st.booleans(),  # pop once after this enqueue
    ),
    min_size=1,
    max_size=8,
)


def _identity(size: int) -> list[list[bool]]:
    return [[row == column for column in range(size)] for row in range(size)]


@given(enqueues)
def test_an_entry_equals_itself_and_no_other(
    steps: list[tuple[int, int, bool]],
) -> None:
    """After every enqueue and pop, the crate's `==` over entries is the identity."""
    from impl.adapter import CratePolicyQueue  # noqa: PLC0415 - needs the binding

    queue = maker("crate")(CLASSES)
    assert isinstance(queue, CratePolicyQueue)
    for payload, (class_index, raw, pop) in enumerate(steps):
        assert put(queue, class_index, payload, raw=raw) is None
        assert queue.entries_equal() == _identity(queue.pending_count())
        if pop:
            queue.pop_next(Dispatch())
            assert queue.entries_equal() == _identity(queue.pending_count())


def test_identical_requests_are_distinct_entries() -> None:
    """Two requests equal in every field still differ by their enqueue sequence."""
    queue = maker("crate")(CLASSES)
    assert put(queue, 0, 1, raw=2) is None
    assert put(queue, 0, 2, raw=2) is None
    from impl.adapter import CratePolicyQueue  # noqa: PLC0415 - needs the binding

    assert isinstance(queue, CratePolicyQueue)
    assert queue.entries_equal() == [[True, False], [False, True]]
