"""Policy-queue canaries: each breaks one documented behaviour on purpose.

Each is a `PolicyQueueApi` built from a `ProfileSpec`, run by the queue
machine in place of the crate; the machine must fail on every one of them,
by the check named in `CAUGHT_BY` (`tests/test_canaries.py`). Two
families:

* wrappers around the crate's queue (`CratePolicyQueue`), built from the
  spec's YAML like the real system under test: the tie-break reversed, a
  limit off by one worker, counters read one call late;
* broken model variants (they run without the binding): what a wrong
  implementation of SPEC C.5-C.7 would get wrong.

`CANARIES` maps a name to its factory. `SLOW_CANARIES` are caught too, but
only after long programs whose shrinking exceeds the ci budget; they run in
the nightly job (marker `slow`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from model.queue.table import (
    ClassState,
    ModelPolicyQueue,
    QueueState,
    class_candidate,
    item_of,
)
from stateful.queue_subject import crate_factory

if TYPE_CHECKING:
    from collections.abc import Callable

    from model.queue.api import PolicyQueueApi
    from model.queue.ops import Enqueue
    from model.queue.types import ClassStats, Dispatch, QueuedItem, Rejection
    from stateful.queue_subject import ProfileSpec


class _ModelCanary(ModelPolicyQueue):
    """A broken model, built from the spec's classes as the model is."""

    def __init__(self, spec: ProfileSpec) -> None:
        super().__init__(spec.configs)


class _PlainRotation(_ModelCanary):
    """Serves classes in plain rotation: the next class with a candidate wins."""

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        state = self.state
        if state.pending_count == 0:
            return None
        classes = list(state.classes)
        count = len(classes)
        for offset in range(count):
            index = (state.round_cursor + offset) % count
            classes[index], candidate = class_candidate(classes[index], index, dispatch)
            if candidate is None:
                continue
            cls = classes[index]
            classes[index] = replace(
                cls, entries=tuple(e for e in cls.entries if e.seq != candidate.seq)
            )
            self.state = replace(
                state,
                classes=tuple(classes),
                round_cursor=(index + 1) % count,
                pending_count=state.pending_count - 1,
            )
            return item_of(index, candidate)
        self.state = replace(state, classes=tuple(classes))
        return None


def plain_rotation(spec: ProfileSpec) -> PolicyQueueApi:
    """Round robin over classes, ignoring quanta and deficits."""
    return _PlainRotation(spec)


class _StickyDeficit(_ModelCanary):
    """Forgets to reset a class's credit when the class runs empty."""

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        before = self.state
        popped = super().pop_next(dispatch)
        self.state = _keep_credit(before, self.state)
        return popped

    def retain(self, drop: frozenset[int]) -> None:
        before = self.state
        super().retain(drop)
        self.state = _keep_credit(before, self.state)


def _keep_credit(before: QueueState, after: QueueState) -> QueueState:
    """Give each class that emptied during a call its credit from before it."""
    classes: list[ClassState] = []
    for old, new in zip(before.classes, after.classes, strict=True):
        emptied = old.entries and not new.entries
        classes.append(replace(new, deficit=old.deficit) if emptied else new)
    return replace(after, classes=tuple(classes))


class _EagerRecheck(_ModelCanary):
    """Re-tests blocked lanes at every pop, as if recheck were public and called."""

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        self.state = replace(
            self.state,
            classes=tuple(replace(c, blocked=frozenset()) for c in self.state.classes),
        )
        return super().pop_next(dispatch)


class _NoCarry(_ModelCanary):
    """Forgets which class was served last: leftover credit waits for its turn."""

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        self.state = replace(self.state, carry=None)
        return super().pop_next(dispatch)


# ---- wrappers around the crate -------------------------------------------------


class _Wrapped:
    """Forwards every call to the crate's queue built from the spec."""

    def __init__(self, spec: ProfileSpec) -> None:
        self.inner = crate_factory(spec)

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


class _LifoTies(_Wrapped):
    """Serves the latest of equally ranked entries first (the tie-break reversed).

    When the crate serves an entry and a later enqueued entry of the same
    class, lane and request fields is still queued, the wrapper takes that
    twin out instead and puts the served entry back (it re-enters last).
    """

    def __init__(self, spec: ProfileSpec) -> None:
        super().__init__(spec)
        self.enqueued: dict[int, Enqueue] = {}

    def enqueue(self, op: Enqueue) -> Rejection | None:
        rejection = self.inner.enqueue(op)
        if rejection is None:
            self.enqueued[op.payload] = op
        return rejection

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        served = self.inner.pop_next(dispatch)
        if served is None:
            return None
        first = self.enqueued.pop(served.payload)
        twins = [
            item
            for item in self.inner.entries()
            if replace(self.enqueued[item.payload], payload=first.payload) == first
        ]
        if not twins:
            return served
        twin = max(twins, key=lambda item: item.payload)
        self.inner.retain(frozenset({twin.payload}))
        self.enqueue(first)
        del self.enqueued[twin.payload]
        return twin


class _LaxRequestLimit(_Wrapped):
    """Counts one worker too many when it scales a per-worker limit."""

    def enqueue(self, op: Enqueue) -> Rejection | None:
        return self.inner.enqueue(replace(op, worker_count=op.worker_count + 1))


class _LateStats(_Wrapped):
    """Reports a class's counters as they were before the last pop."""

    def __init__(self, spec: ProfileSpec) -> None:
        super().__init__(spec)
        self.before_pop: dict[int, ClassStats] = {}

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        count = self.inner.class_count()
        self.before_pop = {i: self.inner.class_stats(i) for i in range(count)}
        return self.inner.pop_next(dispatch)

    def enqueue(self, op: Enqueue) -> Rejection | None:
        self.before_pop = {}
        return self.inner.enqueue(op)

    def retain(self, drop: frozenset[int]) -> None:
        self.before_pop = {}
        self.inner.retain(drop)

    def class_stats(self, class_index: int) -> ClassStats:
        stats = self.inner.class_stats(class_index)
        return self.before_pop.get(class_index, stats)


def lifo_ties(spec: ProfileSpec) -> PolicyQueueApi:
    """The crate with its FIFO tie-break reversed."""
    return _LifoTies(spec)  # type: ignore[return-value]


def lax_request_limit(spec: ProfileSpec) -> PolicyQueueApi:
    """The crate with every per-worker limit scaled by one worker too many."""
    return _LaxRequestLimit(spec)  # type: ignore[return-value]


def late_stats(spec: ProfileSpec) -> PolicyQueueApi:
    """The crate whose counters lag one pop behind."""
    return _LateStats(spec)  # type: ignore[return-value]


CANARIES: dict[str, Callable[[ProfileSpec], PolicyQueueApi]] = {
    "eager_recheck": _EagerRecheck,
    "late_stats": late_stats,
    "lax_request_limit": lax_request_limit,
    "lifo_ties": lifo_ties,
    "no_carry": _NoCarry,
    "plain_rotation": plain_rotation,
    "sticky_deficit": _StickyDeficit,
}

CRATE_CANARIES: frozenset[str] = frozenset(
    {"late_stats", "lax_request_limit", "lifo_ties"}
)
"""The queue canaries that wrap the crate's queue (the others wrap the model)."""

SLOW_CANARIES: frozenset[str] = frozenset()
"""Canaries whose counterexamples are too long for the ci budget: none (the
machine's rule `credit_of_a_class_that_a_pop_emptied` makes an emptied class's
stale credit change the very next pop, so `sticky_deficit` is caught quickly)."""

CAUGHT_BY: dict[str, str] = {
    "eager_recheck": "outcomes_agree",
    "late_stats": "states_agree",
    "lax_request_limit": "outcomes_agree",
    "lifo_ties": "outcomes_agree",
    "no_carry": "outcomes_agree",
    "plain_rotation": "states_agree",
    "sticky_deficit": "outcomes_agree",
}
"""The check that reports each canary first in its shrunk counterexample."""
