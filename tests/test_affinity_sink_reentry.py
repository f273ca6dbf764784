"""A replica sink that calls back into its own table, on every publishing path.

`AffinityReplicaSink` is a public trait: a user's sink may read the table it is
installed on from inside `publish` (to log the binding it sends, say). The
binding's reading sink does exactly that, on the publishing thread. So a crate
that publishes while it still holds the session's entry deadlocks here, and
what the sink reads shows whether the table's change was complete when the
sink was called. A deadlock is a failing step: the adapter's crate watchdog
(`impl/adapter/lib.py`) names the call that did not return and ends the
process, which pytest-xdist reports as this test's failure. Mutants OA055 and
OA122 (`drop(entry)` deleted before a publish) are caught this way
(ci/MUTANTS.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from impl.adapter import CrateAffinity
from impl.adapter.affinity import SinkRead
from model.affinity.types import AffinityConfig, Bound, Initialize, Mode, Target

pytestmark = pytest.mark.crate

SECOND_NS = 1_000_000_000
W1, W2 = Target(1), Target(2)


@dataclass(frozen=True)
class Path:
    """One way to make the table publish, after a set-up that publishes nothing."""

    mode: Mode
    act: Callable[[CrateAffinity], None]


def _init_commit(table: CrateAffinity) -> None:
    step = table.try_acquire("s", None)
    assert isinstance(step, Initialize)
    table.commit(step.handle, W1)


def _bound(table: CrateAffinity) -> Bound:
    _init_commit(table)
    table.drain_published()
    table.drain_sink_reads()
    step = table.try_acquire("s", None)
    assert isinstance(step, Bound)
    return step


def _hold_commit(table: CrateAffinity) -> None:
    table.commit(_bound(table).handle, W1)


def _soft_rebind(table: CrateAffinity) -> None:
    table.commit(_bound(table).handle, W2)


def _join(table: CrateAffinity) -> None:
    step = table.try_acquire("s", None)
    assert isinstance(step, Initialize)
    assert table.join_initializing("s", W1) is not None


def _release(table: CrateAffinity) -> None:
    step = table.try_acquire("s", None)
    assert isinstance(step, Initialize)
    lease = table.commit(step.handle, W1)
    table.drain_published()
    table.drain_sink_reads()
    table.release(lease)


PATHS = {
    "initialization_commit": Path(Mode.HARD, _init_commit),
    "hard_hold_commit": Path(Mode.HARD, _hold_commit),
    "soft_hold_commit_rebinds": Path(Mode.SOFT, _soft_rebind),
    "join_initializing": Path(Mode.HARD, _join),
    "release_refreshes": Path(Mode.HARD, _release),
}


@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_sink_reading_its_table_sees_the_call_complete(name: str) -> None:
    """Inside `publish` the sink reads what the caller reads once the call returns."""
    path = PATHS[name]
    table = CrateAffinity(AffinityConfig(ttl_ns=10 * SECOND_NS, mode=path.mode))
    assert table.enable_replication_reading(1)
    path.act(table)
    published = table.drain_published()
    reads = table.drain_sink_reads()
    assert [p.session_id for p in published] == ["s"], "the path publishes once"
    after = SinkRead("s", table.query_target("s", None), table.lease_count("s"))
    assert reads == [after]
    assert reads[0].target == published[0].target, "the sink sees what it was sent"


def test_a_reading_sink_keeps_no_table_alive() -> None:
    """The sink reads through a weak reference: dropping the table still ends it."""
    table = CrateAffinity(AffinityConfig(ttl_ns=10 * SECOND_NS))
    assert table.enable_replication_reading(1)
    weak = table.downgrade()
    table.drop_table()
    assert not table.upgrade(weak)
