"""Operations on a policy queue: a closed union of frozen dataclasses.

Each operation names the `PolicyQueueApi` call it makes. The machine, traces,
replay, minimization and exploration all speak this vocabulary, and
`model.queue.api.outcome_of` applies one to any system under test. `Rebuild` is the one
operation no queue method implements: the harness answers it by building both
sides afresh from the run's profile (a drained queue is consumed for good).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.queue.types import (
    ClassConfig,
    ClassStats,
    Dispatch,
    QueuedItem,
    Rejection,
    Worker,
)


@dataclass(frozen=True)
class Enqueue:
    """`enqueue(op)` (`PolicyQueue::enqueue` with `QueueSnapshot::new(raw, cached)`)."""

    class_index: int
    worker_count: int
    raw_isl_tokens: int
    cached_tokens: int
    arrival_offset_secs: float
    priority_jump: float
    strict_priority: int
    placement: Worker | None
    payload: int


@dataclass(frozen=True)
class PopNext:
    """`pop_next(dispatch)` (`PolicyQueue::pop_next`)."""

    dispatch: Dispatch


@dataclass(frozen=True)
class Retain:
    """`retain(drop)`: drop every entry whose payload is in `drop`."""

    drop: frozenset[int]


@dataclass(frozen=True)
class Drain:
    """`drain()` (`PolicyQueue::drain`, consumes the queue)."""


@dataclass(frozen=True)
class ReadStats:
    """`class_stats(class_index)`: a read that panics in the crate when out of range."""

    class_index: int


@dataclass(frozen=True)
class ReadBacklog:
    """`has_backlog(class_index)`."""

    class_index: int


@dataclass(frozen=True)
class ReadConfig:
    """`class_config(class_index)`."""

    class_index: int


@dataclass(frozen=True)
class Rebuild:
    """Build the queue again from the run's profile (answered by the harness)."""


QueueOp = (
    Enqueue | PopNext | Retain | Drain | ReadStats | ReadBacklog | ReadConfig | Rebuild
)
QUEUE_OP_TYPES: tuple[type[QueueOp], ...] = (
    Enqueue,
    PopNext,
    Retain,
    Drain,
    ReadStats,
    ReadBacklog,
    ReadConfig,
    Rebuild,
)

QueueValue = (
    Rejection
    | QueuedItem
    | ClassStats
    | ClassConfig
    | tuple[QueuedItem, ...]
    | bool
    | None
)


@dataclass(frozen=True)
class QueueOutcome:
    """What one queue call returned, or which error kind it raised.

    Equality ignores the message: the kind and the value are the contract.
    """

    value: QueueValue = None
    error: str | None = None
    message: str = field(default="", compare=False)

    @property
    def ok(self) -> bool:
        """The call returned normally."""
        return self.error is None
