"""The table's own accessors: `ttl()`, `mode()`, and weak references.

The model has no counterpart for these (they read back the configuration, or
concern the table's lifetime), so the crate is checked against the
configuration it was built from.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.adapter import CrateAffinity
from model.affinity.types import SECOND_NS, AffinityConfig, Initialize, Mode, Target
from model.errors import HandleError

pytestmark = pytest.mark.crate

TTL_S_MAX = 31_536_000
"""The crate's longest TTL: one year, in seconds."""


@given(
    ttl_ns=st.integers(SECOND_NS, TTL_S_MAX * SECOND_NS),
    mode=st.sampled_from(sorted(Mode)),
)
def test_a_table_reads_back_its_ttl_and_mode(ttl_ns: int, mode: Mode) -> None:
    """`ttl()` and `mode()` are the configuration's, to the nanosecond."""
    table = CrateAffinity(AffinityConfig(ttl_ns=ttl_ns, mode=mode))

    assert ttl_ns == table.ttl_ns()
    assert mode == table.mode()


def test_a_weak_reference_upgrades_exactly_while_the_table_lives() -> None:
    """`downgrade()` then `upgrade()` yields the table, until it is dropped."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))
    weak = table.downgrade()
    assert table.upgrade(weak)
    assert table.upgrade(weak)

    table.drop_table()

    assert not table.upgrade(weak)


def test_a_weak_reference_keeps_neither_the_table_nor_its_reaper() -> None:
    """A weak reference taken while a lease is held outlives nothing it refers to."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))
    step = table.try_acquire("s", None)
    assert isinstance(step, Initialize)
    lease = table.commit(step.handle, Target(1))
    weak = table.downgrade()

    table.drop_table()

    assert not table.upgrade(weak)
    assert 0 == table.runtime_tasks()
    table.release(lease)


def test_accessors_of_a_dropped_table_are_refused() -> None:
    """After `drop_table` there is no table to read or downgrade."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))
    table.drop_table()

    for read in (table.ttl_ns, table.mode, table.downgrade):
        with pytest.raises(HandleError, match="the affinity table was dropped"):
            read()
