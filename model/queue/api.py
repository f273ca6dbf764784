"""The policy-queue interface both systems under test implement.

`model.policy_queue.ModelPolicyQueue` (the reference) and
`impl.adapter.CratePolicyQueue` (the crate) satisfy `PolicyQueueApi`
structurally; mypy proves it. Machines and tests talk only to this Protocol.

Misuse that the crate would panic on (a class index out of range, a value
outside the crate's integer types, any call after `drain`) raises
`model.errors.QueueUsageError` on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from model.errors import PolicyConfigError, QueueUsageError, RustPanicError
from model.queue.ops import (
    Drain,
    Enqueue,
    PopNext,
    QueueOp,
    QueueOutcome,
    QueueValue,
    ReadBacklog,
    ReadConfig,
    ReadStats,
    Rebuild,
    Retain,
)

if TYPE_CHECKING:
    from model.queue.types import (
        ClassConfig,
        ClassStats,
        Dispatch,
        QueuedItem,
        Rejection,
    )


class PolicyQueueApi(Protocol):
    """`PolicyQueue<T>` as seen from Python, with integer payloads."""

    def class_count(self) -> int:
        """`class_count()`: classes of the profile."""
        ...

    def class_config(self, class_index: int) -> ClassConfig:
        """`class_config(i)`: the class's queue-relevant configuration."""
        ...

    def enqueue(self, op: Enqueue) -> Rejection | None:
        """`enqueue(...)` with the fields of `op`: None when queued, else why not."""
        ...

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        """`pop_next(pred)`: the next entry DRR serves, or None."""
        ...

    def retain(self, drop: frozenset[int]) -> None:
        """`retain(keep)` with `keep = payload not in drop`."""
        ...

    def pending_count(self) -> int:
        """`pending_count()`: queued entries in every class."""
        ...

    def class_stats(self, class_index: int) -> ClassStats:
        """`class_stats(i)`: the class's counters."""
        ...

    def has_backlog(self, class_index: int) -> bool:
        """`has_backlog(i)`: whether the class holds a queued entry."""
        ...

    def entries(self) -> list[QueuedItem]:
        """`entries()`, sorted by `QueuedItem.sort_key`."""
        ...

    def drain(self) -> list[QueuedItem]:
        """`drain()`, sorted by `QueuedItem.sort_key`; the queue is consumed."""
        ...


@dataclass(frozen=True)
class QueueObservation:
    """Everything a caller can read from a queue without changing it."""

    pending_count: int
    configs: tuple[ClassConfig, ...]
    class_stats: tuple[ClassStats, ...]
    backlog: tuple[bool, ...]
    entries: tuple[QueuedItem, ...]


def observe(queue: PolicyQueueApi) -> QueueObservation:
    """Read every observer of `queue`, for every class in index order."""
    class_indices = range(queue.class_count())
    return QueueObservation(
        pending_count=queue.pending_count(),
        configs=tuple(queue.class_config(index) for index in class_indices),
        class_stats=tuple(queue.class_stats(index) for index in class_indices),
        backlog=tuple(queue.has_backlog(index) for index in class_indices),
        entries=tuple(queue.entries()),
    )


def call(queue: PolicyQueueApi, op: QueueOp) -> QueueValue:
    """Dispatch `op` to the matching `PolicyQueueApi` method."""
    match op:
        case Enqueue():
            return queue.enqueue(op)
        case PopNext(dispatch):
            return queue.pop_next(dispatch)
        case Retain(drop):
            queue.retain(drop)
            return None
        case Drain():
            return tuple(queue.drain())
        case ReadStats(class_index):
            return queue.class_stats(class_index)
        case ReadBacklog(class_index):
            return queue.has_backlog(class_index)
        case ReadConfig(class_index):
            return queue.class_config(class_index)
        case Rebuild():
            raise TypeError("Rebuild is answered by the harness, not by a queue")


def outcome_of(queue: PolicyQueueApi, op: QueueOp) -> QueueOutcome:
    """Apply `op` and capture its return value or error kind."""
    try:
        return QueueOutcome(value=call(queue, op))
    except (QueueUsageError, PolicyConfigError, RustPanicError) as error:
        return QueueOutcome(error=error.kind, message=str(error))
