"""A request's token snapshot (`QueueSnapshot::new`) agrees between model and crate.

The queue stores only raw and cached tokens and re-derives the rest, so a
snapshot's uncached count is seen only here, where a caller builds one.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from queue_support import SIDES

from model.errors import QueueUsageError
from model.queue.table import token_snapshot
from model.queue.types import USIZE_MAX, TokenSnapshot

Snapshot = Callable[[int, int], TokenSnapshot]


def _snapshot(side: str) -> Snapshot:
    """`QueueSnapshot::new` of the model or of the crate."""
    if side == "model":
        return token_snapshot
    from impl.adapter import token_snapshot as crate  # noqa: PLC0415 - crate side

    return crate


tokens = st.integers(0, 64) | st.integers(0, USIZE_MAX) | st.just(USIZE_MAX)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(
    ("raw", "cached", "expected"),
    [
        (5, 3, TokenSnapshot(5, 3, 2, 2)),
        (3, 5, TokenSnapshot(3, 3, 0, 1)),
        (0, 0, TokenSnapshot(0, 0, 0, 1)),
        (7, 0, TokenSnapshot(7, 0, 7, 7)),
        (USIZE_MAX, 1, TokenSnapshot(USIZE_MAX, 1, USIZE_MAX - 1, USIZE_MAX - 1)),
    ],
    ids=["some_cached", "cached_past_raw", "empty", "nothing_cached", "largest"],
)
def test_a_snapshot_clamps_cached_tokens_and_costs_at_least_one_token(
    side: str, raw: int, cached: int, expected: TokenSnapshot
) -> None:
    """Cached tokens are clamped to raw; uncached is the rest; the cost is >= 1."""
    assert _snapshot(side)(raw, cached) == expected


@pytest.mark.crate
@given(raw=tokens, cached=tokens)
def test_the_crate_builds_the_snapshot_the_model_builds(raw: int, cached: int) -> None:
    """Over the whole `usize` range, the crate's snapshot is the model's."""
    assert _snapshot("crate")(raw, cached) == token_snapshot(raw, cached)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(("raw", "cached"), [(-1, 0), (0, -1), (USIZE_MAX + 1, 0)])
def test_a_token_count_outside_usize_is_a_usage_error(
    side: str, raw: int, cached: int
) -> None:
    """A count the crate's `usize` cannot hold is refused, on both sides."""
    with pytest.raises(QueueUsageError):
        _snapshot(side)(raw, cached)
