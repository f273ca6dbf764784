"""The affinity table's rules as the properties state them, in their own words.

The properties import the model's types, never its functions
(`tests/test_hygiene.py` checks it): a property that asked the model whether
a binding has expired, or when the reaper ticks, could not fail on the model.
These are the rules as the crate documents them, stated once more here.
"""

from __future__ import annotations

from typing import Final

from model.affinity.table import AffinityState, Binding, Entry
from model.affinity.types import SECOND_NS

CLEANUP_PERIOD_NS_MAX: Final[int] = 30 * SECOND_NS
"""Idle bindings are collected at least every 30 s, or every TTL if shorter."""
TIMER_GRID_NS: Final[int] = 1_000_000
"""Tokio's timers fire on a 1 ms grid: a period is rounded up to whole ms."""


def expired_at(entry: Entry, now_ns: int) -> bool:
    """An unleased binding whose idle deadline is now or past is expired."""
    if not isinstance(entry, Binding) or entry.leases > 0:
        return False
    return not now_ns < entry.deadline_ns


def expired(state: AffinityState, entry: Entry) -> bool:
    """`entry` is expired at `state`'s clock."""
    return expired_at(entry, state.now_ns)


def live_binding(state: AffinityState, session_id: str) -> Binding | None:
    """The binding `state` serves for `session_id`: bound and not expired."""
    entry = state.entry(session_id)
    if isinstance(entry, Binding) and not expired(state, entry):
        return entry
    return None


def cleanup_period_ns(ttl_ns: int) -> int:
    """A manual table's collection cadence: the TTL, at most 30 s, exactly."""
    return min(CLEANUP_PERIOD_NS_MAX, ttl_ns)


def reaper_period_ns(ttl_ns: int) -> int:
    """The runtime reaper's period: the cadence rounded up to Tokio's 1 ms grid."""
    period_ns = cleanup_period_ns(ttl_ns)
    whole, part = divmod(period_ns, TIMER_GRID_NS)
    return (whole + (1 if part else 0)) * TIMER_GRID_NS
