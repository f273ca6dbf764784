"""Policy-queue canaries: each breaks one documented behaviour on purpose.

Each is a `PolicyQueueApi` built from a `ProfileSpec`, run by the queue
machine in place of the crate; the machine must fail on every one of them
(`tests/test_queue_canaries.py`). They wrap the reference model, so they run
without the extension; what they break is what a wrong implementation of
SPEC C.5-C.7 would get wrong.

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

if TYPE_CHECKING:
    from collections.abc import Callable

    from model.queue.api import PolicyQueueApi
    from model.queue.types import Dispatch, QueuedItem
    from stateful.queue_subject import ProfileSpec


class _PlainRotation(ModelPolicyQueue):
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


class _StickyDeficit(ModelPolicyQueue):
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


class _EagerRecheck(ModelPolicyQueue):
    """Re-tests blocked lanes at every pop, as if recheck were public and called."""

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        self.state = replace(
            self.state,
            classes=tuple(replace(c, blocked=frozenset()) for c in self.state.classes),
        )
        return super().pop_next(dispatch)


class _NoCarry(ModelPolicyQueue):
    """Forgets which class was served last: leftover credit waits for its turn."""

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        self.state = replace(self.state, carry=None)
        return super().pop_next(dispatch)


def plain_rotation(spec: ProfileSpec) -> PolicyQueueApi:
    """Round robin over classes, ignoring quanta and deficits."""
    return _PlainRotation(spec.configs)


def sticky_deficit(spec: ProfileSpec) -> PolicyQueueApi:
    """DRR that keeps an emptied class's credit."""
    return _StickyDeficit(spec.configs)


def eager_recheck(spec: ProfileSpec) -> PolicyQueueApi:
    """A queue that never remembers a blocked worker lane."""
    return _EagerRecheck(spec.configs)


def no_carry(spec: ProfileSpec) -> PolicyQueueApi:
    """DRR without the carry: a served class never keeps serving on credit."""
    return _NoCarry(spec.configs)


CANARIES: dict[str, Callable[[ProfileSpec], PolicyQueueApi]] = {
    "eager_recheck": eager_recheck,
    "no_carry": no_carry,
    "plain_rotation": plain_rotation,
    "sticky_deficit": sticky_deficit,
}

SLOW_CANARIES: frozenset[str] = frozenset({"sticky_deficit"})
"""Canaries whose counterexamples are long: an emptied class's stale credit
only changes the serving order several pops after it was kept."""
