"""Operations on the scheduler, one per adapter method, in a closed union."""

from __future__ import annotations

from dataclasses import dataclass, field

from model.scheduler.types import LeavePoint


@dataclass(frozen=True)
class Schedule:
    """`schedule(request_id, worker, pinned, isl_tokens, due_ms, ...)`.

    `class_index`: the policy class the classifier names; `strict_priority`:
    the request's; `leaves`: where its caller goes away on its own (None: it
    stays until the request ends or `Cancel`).
    """

    request_id: str
    worker: int
    pinned: bool
    isl_tokens: int
    due_ms: int | None = None
    class_index: int = 0
    strict_priority: int = 0
    leaves: LeavePoint | None = None


@dataclass(frozen=True)
class Free:
    """`free(request_id)`: `LocalScheduler::free`."""

    request_id: str


@dataclass(frozen=True)
class SetCapacity:
    """`set_capacity(worker, tokens)`: a worker-config update the scheduler watches."""

    worker: int
    tokens: int


@dataclass(frozen=True)
class UpdateQueue:
    """`update_queue()`: `LocalScheduler::update_queue`."""


@dataclass(frozen=True)
class Advance:
    """`advance(delta_ms)`: the clock moves forward by `delta_ms`."""

    delta_ms: int


@dataclass(frozen=True)
class Cancel:
    """`cancel(request_id)`: the caller goes away (its future is dropped)."""

    request_id: str


@dataclass(frozen=True)
class SetAvailable:
    """`set_available(workers)`: the availability provider's answer from now on.

    `None`: no availability source (every worker may be chosen). The scheduler
    is not told of the change; it reads the set when it next asks.
    """

    workers: frozenset[int] | None


SchedulerOp = (
    Schedule | Free | SetCapacity | UpdateQueue | Advance | Cancel | SetAvailable
)
SCHEDULER_OP_TYPES: tuple[type[SchedulerOp], ...] = (
    Schedule,
    Free,
    SetCapacity,
    UpdateQueue,
    Advance,
    Cancel,
    SetAvailable,
)


@dataclass(frozen=True)
class SchedulerOutcome:
    """A call's value (`cancel`'s bool, else None) or its error kind.

    Equality ignores the message: the kind and the value are the contract.
    """

    value: bool | None = None
    error: str | None = None
    message: str = field(default="", compare=False)
