"""The version properties of concurrent histories, and the gate's row for them."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rich.console import Console

from ci.gate import GateRun, summarize
from model.affinity.history import Census, Event, History
from model.affinity.ops import Acquire, ApplyReplica, Commit, Join, Op, Outcome, Value
from model.affinity.types import (
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Published,
    ReplicaOutcome,
    Target,
    Version,
)
from stateful import stats, version_order
from stateful.concurrent_affinity import verdict
from stateful.concurrent_runs import Tally

WRITER = 9
CONFIG = AffinityConfig(ttl_ns=1_000_000_000, max_entries=4)


def call(
    thread: int,
    span: tuple[int, int],
    op: Op,
    value: Value = None,
    *published: Published,
) -> Event:
    """A call that returned `value` and published `published` right after its start."""
    invoked, returned = span
    return Event(
        thread,
        invoked,
        invoked,
        returned,
        op,
        Outcome(value=value),
        published=published,
        published_at=tuple(invoked + 1 + k for k in range(len(published))),
    )


def local(sequence: int) -> Version:
    """A version of the table's own writer."""
    return Version(sequence, WRITER)


def history(*events: Event, census: Census | None = None) -> History:
    """Two threads with a sink."""
    return History(CONFIG, 2, events, census, writer_id=WRITER)


def names(found: list[version_order.Violation]) -> list[str]:
    """The names of the properties broken, in order."""
    return [violation.name for violation in found]


def two_commits(first: int, second: int) -> History:
    """s0 then s1 committed one after the other, taking `first` and `second`."""
    return history(
        call(0, (0, 1), Acquire("s0"), Initialize(1)),
        call(
            0, (2, 4), Commit(1, Target(1)), 3, Published("s0", Target(1), local(first))
        ),
        call(1, (5, 6), Acquire("s1"), Initialize(2)),
        call(
            1,
            (7, 9),
            Commit(2, Target(2)),
            4,
            Published("s1", Target(2), local(second)),
        ),
    )


def test_a_history_as_the_crate_makes_it_breaks_nothing() -> None:
    """Versions taken in order, below the counter, one binding each."""
    run = replace(
        two_commits(1, 2),
        census=Census(0, 2, (), targets=(), next_version=local(3)),
    )
    assert version_order.violations(run) == []
    assert verdict(run).linearizable


def test_a_run_without_a_sink_is_not_judged() -> None:
    """No writer id: nothing was published, nothing is checked."""
    assert version_order.violations(replace(two_commits(2, 1), writer_id=None)) == []


def test_two_bindings_under_one_version_are_caught() -> None:
    """Two sessions published at one local version."""
    assert "one_binding_per_local_version" in names(
        version_order.violations(two_commits(1, 1))
    )


def test_versions_against_real_time_are_caught() -> None:
    """The later commit took the smaller version."""
    assert names(version_order.violations(two_commits(2, 1))) == [
        "takers_follow_real_time"
    ]


def test_a_version_at_or_below_an_earlier_replica_update_is_caught() -> None:
    """A replica update of sequence 5 returned before a commit took sequence 3."""
    run = history(
        call(
            1,
            (0, 1),
            ApplyReplica("s1", Target(2), Version(5, 1)),
            ReplicaOutcome.INSERTED,
        ),
        call(0, (2, 3), Acquire("s0"), Initialize(1)),
        call(0, (4, 6), Commit(1, Target(1)), 2, Published("s0", Target(1), local(3))),
    )
    assert names(version_order.violations(run)) == ["takers_follow_replica_updates"]
    fixed = replace(
        run,
        events=(
            *run.events[:2],
            call(
                0, (4, 6), Commit(1, Target(1)), 2, Published("s0", Target(1), local(6))
            ),
        ),
    )
    assert version_order.violations(fixed) == []
    assert verdict(fixed).linearizable


def test_a_version_at_the_counter_is_caught() -> None:
    """The census's counter must be above every published local version."""
    run = replace(
        two_commits(1, 2), census=Census(0, 2, (), targets=(), next_version=local(2))
    )
    assert names(version_order.violations(run)) == ["local_versions_below_the_counter"]


def test_who_took_a_version() -> None:
    """Joins and fresh or moving commits take versions; a joined commit does not."""
    joined = history(
        call(0, (0, 1), Acquire("s0"), Initialize(1)),
        call(1, (2, 4), Join("s0", Target(1)), 2, Published("s0", Target(1), local(1))),
        call(0, (5, 7), Commit(1, Target(1)), 3, Published("s0", Target(1), local(1))),
    )
    assert [e.call for e, _ in version_order.takers(joined)] == [Join("s0", Target(1))]
    assert verdict(joined).linearizable
    soft = replace(CONFIG, mode=Mode.SOFT)
    moved = History(
        soft,
        1,
        (
            call(0, (0, 1), Acquire("s0"), Initialize(1)),
            call(
                0, (2, 4), Commit(1, Target(1)), 2, Published("s0", Target(1), local(1))
            ),
            call(0, (5, 6), Acquire("s0"), Bound(3, Target(1))),
            call(
                0, (7, 9), Commit(3, Target(2)), 4, Published("s0", Target(2), local(2))
            ),
        ),
        None,
        writer_id=WRITER,
    )
    assert [v for _, v in version_order.takers(moved)] == [local(1), local(2)]
    assert verdict(moved).linearizable


def test_the_gate_summary_shows_publications_and_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `concurrency` record becomes a row with its windows per thousand."""
    monkeypatch.setenv(stats.STATS_ENV, str(tmp_path))
    tally = Tally(histories=800, calls=8_000, publications=1_234)
    tally.windows["cleanup_at_capacity"] = 57
    tally.windows["waiter_at_abort"] = 4
    tally.record("window-cleanup", "observe_first")
    console = Console(record=True, width=400)

    summarize(console, GateRun("pr", 0, None, stats.read_all(tmp_path), []))
    text = console.export_text()
    (row,) = (line for line in text.splitlines() if "window-cleanup" in line)

    assert "concurrent histories checked for linearizability" in text
    assert "1,234" in row
    assert "cleanup_at_capacity 71.2" in row
    assert "waiter_at_abort 5.0" in row
    assert "waiter_at_commit 0.0" in row
    assert "cleanup_refused 0.0" in row


def test_a_joined_initialization_commits_without_taking_a_version() -> None:
    """Joined, then moved by a soft commit: the initializer republishes the move's."""
    soft = replace(CONFIG, mode=Mode.SOFT)
    moved = Published("s0", Target(1), local(2))
    run = History(
        soft,
        2,
        (
            call(0, (0, 1), Acquire("s0"), Initialize(1)),
            call(
                1,
                (2, 4),
                Join("s0", Target(2)),
                2,
                Published("s0", Target(2), local(1)),
            ),
            call(1, (5, 6), Acquire("s0"), Bound(3, Target(2))),
            call(1, (7, 9), Commit(3, Target(1)), 4, moved),
            call(0, (10, 12), Commit(1, Target(1, 0)), 5, moved),
        ),
        None,
        writer_id=WRITER,
    )
    assert verdict(run).linearizable
    assert [v for _, v in version_order.takers(run)] == [local(1), local(2)]
    assert version_order.violations(run) == []
