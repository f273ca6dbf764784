"""How the binding's `advance_clock` moves a runtime table's paused Tokio clock.

The Rust export writes each clock move of a trace as the binding makes it, so
that the exported test's reaper ticks fall where the binding's did.
"""

from __future__ import annotations

from typing import Final

MILLISECOND_NS: Final[int] = 1_000_000
"""Tokio's timer grid."""

ClockMove = tuple[str, int]
"""("sleep_until", ns since the origin) or a step ("to the 1 ms grid" or
"the sub-millisecond rest", by ns): `tokio::time::advance`, no timer fires."""
TO_GRID: Final[str] = "Step to the 1 ms timer grid"
REST: Final[str] = "The sub-millisecond rest"


def clock_moves(from_ns: int, to_ns: int) -> list[ClockMove]:
    """How the binding's `advance_clock` moves the paused clock, in order.

    Tokio's timers fire on a 1 ms grid from the runtime's start, and
    auto-advancing from a point off the grid overshoots. So: step (no
    auto-advance) to the next grid point if off it, sleep until the last grid
    point at or before the new time (auto-advance visits every timer on the way,
    each at its own instant), then step the sub-millisecond rest.
    """
    moves: list[ClockMove] = []
    at = from_ns
    if at % MILLISECOND_NS:
        next_grid = at - at % MILLISECOND_NS + MILLISECOND_NS
        step_to = min(next_grid, to_ns)
        if step_to > at:
            moves.append((TO_GRID if step_to == next_grid else REST, step_to - at))
        at = max(at, step_to)
    grid = to_ns - to_ns % MILLISECOND_NS
    if grid > at:
        moves.append(("sleep_until", grid))
        at = grid
    if to_ns > at:
        moves.append((REST, to_ns - at))
    return moves
