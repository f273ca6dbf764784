"""Known windows of the crate, scenarios aimed at them, and when a history entered one.

Two places in the crate change shared state in two steps; a caller that
arrives in between sees a state no single step leaves:

* `cleanup_at_capacity` -- the reaper removes expired bindings
  (`entries.retain`) and only afterwards lowers the entry count
  (`entry_count.fetch_sub`, `SessionAffinity::spawn_reaper`). An acquisition
  of a new or just-removed session that arrives in between finds the count
  still full and is refused (`reserve_entry`), although a pass in one step
  leaves room then, or the expired binding to reuse: finding F4 in
  `docs/findings.md`, which the specification now reads the crate's way
  (`CRATE_REAPER_COUNT` in `stateful.concurrent_affinity`).
* `waiter_at_commit`, `waiter_at_abort` -- a request that finds a session
  initializing registers a waiter on the initialization's `Notify`
  (`AcquireStep::Wait`), while the initializer commits
  (`AffinityInitialization::commit`) or aborts (its `Drop`) and wakes the
  waiters. A waiter that registers after the wake-up must still see that the
  initialization finished.

When a history *entered* a window, decided from what it recorded (the driver
cannot see the instant between the crate's two steps, so these are the
necessary conditions the instants can show):

* `cleanup_at_capacity`: a reaper pass removed at least one binding (in the
  witness order the check found, the `reap` half of an advance lowered the
  model's entry count), and a call of another thread that had to reserve an
  entry (an acquisition returning `Initialize` or `ResourceExhausted`, a
  replica update returning `Inserted` or `RejectedCapacity`) overlaps that
  advance in real time: invoked before the advance returned, returned after
  it was invoked. The reaper runs inside the advance's interval, on thread 0.
* `cleanup_refused`: the narrow interleaving itself, observed: the history
  entered `cleanup_at_capacity` and is linearizable only when the pass is
  read the crate's way, in two steps (finding F4), not in one.
* `waiter_at_commit` (`waiter_at_abort`): an acquisition returning `Wait` on
  a session overlaps, on another thread, the commit (abort) of an
  initialization of that session.

A history that is not linearizable has no witness order; it fails the test
before windows are counted.
"""

from __future__ import annotations

from typing import Final

from hypothesis import strategies as st

from model.affinity.history import Event, History, ThreadOp
from model.affinity.ops import Abort, Acquire, ApplyReplica, Commit
from model.affinity.types import (
    AffinityConfig,
    Initialize,
    Mode,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)
from stateful.concurrent_affinity import (
    CRATE_REPLICA_APPLY,
    HALF_PERIOD_NS,
    TTL_NS,
    Action,
    AffinitySpec,
    Scenario,
    verdict,
)
from stateful.linearizability import Verdict

WINDOWS: Final[tuple[str, ...]] = (
    "cleanup_at_capacity",
    "cleanup_refused",
    "waiter_at_commit",
    "waiter_at_abort",
)
"""The windows measured, in the order the gate shows them."""


def _overlap(first: Event, second: Event) -> bool:
    """Neither call returned before the other was invoked."""
    return first.invoked < second.returned and second.invoked < first.returned


def _collecting_advances(history: History, found: Verdict[Action]) -> list[Event]:
    """Advances whose reaper pass removed a binding, in the witness order."""
    spec = AffinitySpec(history.config, None, history.writer_id)
    state = spec.initial()
    collecting = []
    for action in found.order:
        # A pending action (a history cut short) may or may not have acted;
        # the walk takes it as acting, and stops where that contradicts the
        # witness. Whole histories have no pending action.
        options = spec.successors(state, action)
        if not options:
            break
        after = options[-1]
        if action.part == "reap":
            before_count = len(state.table.entries)
            if len(after.table.entries) < before_count:
                collecting.append(action.event)
        state = after
    return collecting


_RESERVING: Final[tuple[object, ...]] = (
    "ResourceExhausted",
    ReplicaOutcome.INSERTED,
    ReplicaOutcome.REJECTED_CAPACITY,
)


def _reserves(event: Event) -> bool:
    """A call that had to reserve an entry against the table's capacity."""
    outcome = event.outcome
    if isinstance(event.call, Acquire):
        return isinstance(outcome.value, Initialize) or outcome.error in _RESERVING
    if isinstance(event.call, ApplyReplica):
        return outcome.value in _RESERVING
    return False


def entered(history: History, found: Verdict[Action]) -> frozenset[str]:
    """The windows `history` entered (see the module docstring)."""
    windows: set[str] = set()
    if not found.linearizable:
        return frozenset()
    for advance in _collecting_advances(history, found):
        if any(
            event.thread != advance.thread
            and _reserves(event)
            and _overlap(event, advance)
            for event in history.events
        ):
            windows.add("cleanup_at_capacity")
    if "cleanup_at_capacity" in windows:
        atomic = verdict(history, CRATE_REPLICA_APPLY, reaper_count="atomic")
        if atomic.decided and not atomic.linearizable:
            windows.add("cleanup_refused")
    initializing = {
        event.outcome.value.handle: event
        for event in history.events
        if isinstance(event.call, Acquire)
        and isinstance(event.outcome.value, Initialize)
    }
    for event in history.events:
        call = event.call
        if not isinstance(call, Commit | Abort) or call.handle not in initializing:
            continue
        acquired = initializing[call.handle].call
        assert isinstance(acquired, Acquire)
        window = "waiter_at_commit" if isinstance(call, Commit) else "waiter_at_abort"
        if any(
            isinstance(other.call, Acquire)
            and other.call.session_id == acquired.session_id
            and isinstance(other.outcome.value, Wait)
            and other.thread != event.thread
            and _overlap(other, event)
            for other in history.events
        ):
            windows.add(window)
    return frozenset(windows)


# ---- scenarios aimed at the windows --------------------------------------------


def _acquirer(draw: st.DrawFn, length: int) -> tuple[ThreadOp, ...]:
    """Acquisitions, mostly of another session than the expiring one, dropped again.

    An acquisition of s0 would lease its binding and push its deadline back,
    so most acquisitions ask for s1, which needs a free entry.
    """
    ops: list[ThreadOp] = []
    slots = 0
    for _ in range(length):
        kind = draw(st.sampled_from(["acquire", "acquire", "acquire", "replica"]))
        session_id = draw(st.sampled_from(["s0", "s1", "s1", "s1"]))
        if kind == "replica":
            version = Version(draw(st.integers(1, 4)), 1)
            ops.append(ThreadOp("replica", session_id, Target(2), version=version))
            continue
        ops.append(ThreadOp("acquire", session_id))
        ops.append(ThreadOp("drop", session_id, None, slots))
        slots += 1
    return tuple(ops)


@st.composite
def cleanup_scenarios(draw: st.DrawFn, threads_max: int, ops_max: int) -> Scenario:
    """A full table whose binding expires while other threads acquire.

    Thread 0, in rounds, binds s0 and releases it at a reaper tick (deadline:
    one TTL later), then moves the clock by two half-periods onto the next
    tick, where the pass removes s0 unless a lease refreshed it. The other
    threads acquire (mostly s1, which needs a free entry), replicate, and drop
    what they got, `ops_max` to three times as many steps each.
    """
    max_entries = draw(st.sampled_from([1, 1, 2]))
    config = AffinityConfig(
        ttl_ns=TTL_NS, mode=Mode.HARD, max_entries=max_entries, reaping="runtime_reaper"
    )
    binder = tuple(
        op
        for slot in range(draw(st.integers(1, 3)))
        for op in (
            ThreadOp("acquire", "s0"),
            ThreadOp("commit", "s0", Target(1), slot),
            ThreadOp("drop", "s0", None, slot),
            ThreadOp("advance", delta_ns=HALF_PERIOD_NS),
            ThreadOp("advance", delta_ns=HALF_PERIOD_NS),
        )
    )
    threads = draw(st.integers(2, threads_max))
    others = tuple(
        _acquirer(draw, draw(st.integers(ops_max, 3 * ops_max)))
        for _ in range(threads - 1)
    )
    return Scenario(config, (binder, *others), draw(st.integers(0, 2**64 - 1)))


@st.composite
def waiter_scenarios(draw: st.DrawFn, threads_max: int, ops_max: int) -> Scenario:
    """One thread initializes s0 again and again; the others wait on it.

    Thread 0, in rounds, initializes s0 and either commits and invalidates the
    binding (so the next round initializes again) or aborts. The other threads
    acquire s0, poll what they got and drop it, `ops_max` to three times as
    many rounds each; a join may finish an initialization first.
    """
    mode = draw(st.sampled_from([Mode.HARD, Mode.SOFT]))
    config = AffinityConfig(ttl_ns=TTL_NS, mode=mode, max_entries=64)
    initializer: list[ThreadOp] = []
    for slot in range(draw(st.integers(2, 2 * ops_max))):
        initializer.append(ThreadOp("acquire", "s0"))
        if draw(st.booleans()):
            initializer.append(ThreadOp("commit", "s0", Target(1), slot))
            initializer.append(ThreadOp("invalidate", "s0", None, slot))
        else:
            initializer.append(ThreadOp("drop", "s0", None, slot))
    threads = draw(st.integers(2, threads_max))
    waiters: list[tuple[ThreadOp, ...]] = []
    for _ in range(threads - 1):
        ops: list[ThreadOp] = []
        for slot in range(draw(st.integers(ops_max, 3 * ops_max))):
            if draw(st.integers(0, 5)) == 0:
                ops.append(ThreadOp("join", "s0", Target(2)))
            else:
                ops.append(ThreadOp("acquire", "s0"))
                ops.append(ThreadOp("poll", "s0", None, slot))
            ops.append(ThreadOp("drop", "s0", None, slot))
        waiters.append(tuple(ops))
    return Scenario(
        config, (tuple(initializer), *waiters), draw(st.integers(0, 2**64 - 1))
    )


def per_thousand(entered_count: int, histories: int) -> float:
    """How often a window was entered, per thousand histories."""
    return 1000 * entered_count / histories if histories else 0.0
