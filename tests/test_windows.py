"""When a history entered one of the crate's known windows, on hand-made histories."""

from __future__ import annotations

from pathlib import Path

from ci.replay import history as history_files
from model.affinity.history import Event, History
from model.affinity.ops import Abort, Acquire, Advance, Commit, Op, Outcome, Release
from model.affinity.types import SECOND_NS, AffinityConfig, Initialize, Target, Wait
from stateful.concurrent_affinity import verdict
from stateful.windows import entered

FULL_AT_ONE = AffinityConfig(ttl_ns=SECOND_NS, max_entries=1)


def call(
    thread: int, span: tuple[int, int], op: Op, outcome: Outcome | None = None
) -> Event:
    """One recorded call over `span` (program index: its invocation instant)."""
    invoked, returned = span
    return Event(thread, invoked, invoked, returned, op, outcome or Outcome())


def windows(*events: Event, config: AffinityConfig = FULL_AT_ONE) -> frozenset[str]:
    """The windows a linearizable two-thread history entered."""
    history = History(config, 2, events, None)
    found = verdict(history)
    assert found.linearizable
    return entered(history, found)


def expiring(advance_span: tuple[int, int]) -> tuple[Event, ...]:
    """Thread 0 binds s0, releases it, and moves the clock onto the first tick."""
    return (
        call(0, (0, 1), Acquire("s0"), Outcome(value=Initialize(1))),
        call(0, (2, 3), Commit(1, Target(1)), Outcome(value=2)),
        call(0, (4, 5), Release(2)),
        call(0, advance_span, Advance(SECOND_NS)),
    )


def test_an_acquisition_at_capacity_during_a_collecting_pass_enters_cleanup() -> None:
    """Refused while the pass that frees the table runs: the window."""
    refused = Outcome(error="ResourceExhausted")
    during = call(1, (7, 9), Acquire("s1"), refused)
    assert windows(*expiring((6, 10)), during) == {"cleanup_at_capacity"}
    before = call(1, (6, 7), Acquire("s1"), refused)
    assert windows(*expiring((8, 10)), before) == frozenset()
    after = call(1, (11, 12), Acquire("s1"), Outcome(value=Initialize(3)))
    assert windows(*expiring((6, 10)), after) == frozenset()


def test_a_pass_that_collects_nothing_opens_no_cleanup_window() -> None:
    """With the lease still held, the pass removes nothing."""
    held = (
        call(0, (0, 1), Acquire("s0"), Outcome(value=Initialize(1))),
        call(0, (2, 3), Commit(1, Target(1)), Outcome(value=2)),
        call(0, (6, 10), Advance(SECOND_NS)),
        call(1, (7, 9), Acquire("s1"), Outcome(error="ResourceExhausted")),
    )
    assert windows(*held) == frozenset()


def test_a_waiter_overlapping_a_commit_or_an_abort_enters_its_window() -> None:
    """A `Wait` that overlaps the initialization's end, on another thread."""
    config = AffinityConfig(ttl_ns=SECOND_NS, max_entries=4)
    start = call(0, (0, 1), Acquire("s0"), Outcome(value=Initialize(1)))
    waiting = call(1, (3, 5), Acquire("s0"), Outcome(value=Wait(2)))
    commit = call(0, (4, 6), Commit(1, Target(1)), Outcome(value=3))
    abort = call(0, (4, 6), Abort(1))
    assert windows(start, waiting, commit, config=config) == {"waiter_at_commit"}
    assert windows(start, waiting, abort, config=config) == {"waiter_at_abort"}
    late = call(0, (6, 8), Abort(1))
    assert windows(start, waiting, late, config=config) == frozenset()


def test_the_cleanup_finding_entered_the_narrow_window() -> None:
    """F4's history is refused in the window only the two-step pass explains."""
    path = (
        Path(__file__).resolve().parent.parent
        / "ci/replay/corpus/histories/reaper_refuses_a_removed_session_at_capacity.json"
    )
    kept = history_files.load(path).history
    assert entered(kept, verdict(kept)) == {"cleanup_at_capacity", "cleanup_refused"}
    refused = Outcome(error="ResourceExhausted")
    during = call(1, (7, 9), Acquire("s1"), refused)
    assert "cleanup_refused" not in windows(*expiring((6, 10)), during)
