"""The serving table's reaper lives exactly as long as the table.

The crate starts one background task per serving table (`spawn_reaper`, a
sleep of `min(ttl, 30 s)` per tick) and says "the last clone stops the
reaper": dropping the table cancels it at once, before any tick. The model has
no runtime, so these read the crate's runtime through the adapter
(`runtime_tasks`: tasks alive in the table's own paused runtime, where the
binding spawns none) and move time only through `advance_clock`.
"""

from __future__ import annotations

import pytest

from impl.adapter import CrateAffinity
from model.affinity.types import SECOND_NS, AffinityConfig, Initialize, Mode, Target

pytestmark = pytest.mark.crate

TTLS_NS = (SECOND_NS, 7 * SECOND_NS, 90 * SECOND_NS)
"""Ticks of the shortest TTL (1 s), of another TTL, and of the 30 s cap."""


@pytest.mark.parametrize("ttl_ns", TTLS_NS)
def test_a_serving_table_runs_one_reaper_through_its_ticks(ttl_ns: int) -> None:
    """One task from construction on, still one after several reaping ticks."""
    table = CrateAffinity(AffinityConfig(ttl_ns=ttl_ns, mode=Mode.HARD))
    assert 1 == table.runtime_tasks()

    table.advance_clock(3 * min(ttl_ns, 30 * SECOND_NS) + 1)

    assert 1 == table.runtime_tasks()


@pytest.mark.parametrize("ttl_ns", TTLS_NS)
def test_dropping_the_table_stops_its_reaper_without_a_tick(ttl_ns: int) -> None:
    """The reaper ends when the table goes, not at its next wake-up."""
    table = CrateAffinity(AffinityConfig(ttl_ns=ttl_ns, mode=Mode.SOFT))
    step = table.try_acquire("s", None)
    assert isinstance(step, Initialize)
    table.advance_clock(ttl_ns // 2)

    table.drop_table()

    assert 0 == table.runtime_tasks()
    assert ttl_ns // 2 == table.now_ns


def test_a_handle_outliving_its_table_keeps_no_reaper() -> None:
    """A lease held past the table's drop does not keep the reaper alive."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS, mode=Mode.HARD))
    step = table.try_acquire("s", None)
    assert isinstance(step, Initialize)
    lease = table.commit(step.handle, Target(1))

    table.drop_table()

    assert 0 == table.runtime_tasks()
    table.release(lease)
    assert 0 == table.runtime_tasks()
