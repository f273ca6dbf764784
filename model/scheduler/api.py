"""The scheduler interface both systems under test implement, and its observation.

`model.scheduler.table.ModelScheduler` (the reference) and
`impl.adapter.CrateScheduler` (the crate) satisfy `SchedulerApi`
structurally; mypy proves it. An error the scheduler returns is raised as
`model.errors.SchedulerError` with its kind on both sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from model.errors import RustPanicError, SchedulerError
from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SchedulerOp,
    SchedulerOutcome,
    SetAvailable,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.types import ClassStats, Fate


class SchedulerApi(Protocol):
    """`LocalScheduler` as the suite drives it."""

    def schedule(self, op: Schedule) -> None:
        """A caller schedules `op.request_id`; its fate tells what became of it."""
        ...

    def free(self, request_id: str) -> None:
        """`LocalScheduler::free`."""
        ...

    def set_capacity(self, worker: int, tokens: int) -> None:
        """Worker `worker`'s `max_num_batched_tokens` becomes `tokens`."""
        ...

    def update_queue(self) -> None:
        """`LocalScheduler::update_queue`."""
        ...

    def advance(self, delta_ms: int) -> None:
        """The clock moves forward by `delta_ms`."""
        ...

    def cancel(self, request_id: str) -> bool:
        """The caller of `request_id` goes away; whether it was still waiting."""
        ...

    def set_available(self, workers: frozenset[int] | None) -> None:
        """The availability provider answers `workers` from now on (None: no source)."""
        ...

    def now_ms(self) -> int:
        """The clock, in ms since construction."""
        ...

    def fate(self, request_id: str) -> Fate:
        """What became of `request_id`, as its caller sees it."""
        ...

    def has_request(self, request_id: str) -> bool:
        """`LocalScheduler::has_request`: whether it holds a booking."""
        ...

    def pending_count(self) -> int:
        """`LocalScheduler::pending_count`."""
        ...

    def pending_isl_tokens(self) -> int:
        """`LocalScheduler::pending_isl_tokens`."""
        ...

    def class_stats(self) -> tuple[ClassStats, ...]:
        """`LocalScheduler::class_queue_stats(i)` of every class of the profile."""
        ...

    def active_requests(self) -> list[tuple[int, int]]:
        """Booked requests per worker (`get_potential_loads`), by worker id."""
        ...


def outcome_of(api: SchedulerApi, op: SchedulerOp) -> SchedulerOutcome:
    """Apply `op` through the Protocol; a value or the error kind."""
    try:
        match op:
            case Schedule():
                api.schedule(op)
            case Free(request_id=request_id):
                api.free(request_id)
            case SetCapacity(worker=worker, tokens=tokens):
                api.set_capacity(worker, tokens)
            case UpdateQueue():
                api.update_queue()
            case Advance(delta_ms=delta_ms):
                api.advance(delta_ms)
            case Cancel(request_id=request_id):
                return SchedulerOutcome(value=api.cancel(request_id))
            case SetAvailable(workers=workers):
                api.set_available(workers)
    except (SchedulerError, RustPanicError) as error:
        return SchedulerOutcome(error=error.kind)
    return SchedulerOutcome()


@dataclass(frozen=True)
class SchedulerObservation:
    """Everything a caller can read from a scheduler after a step."""

    now_ms: int
    fates: tuple[tuple[str, Fate], ...]  # by request id
    booked: tuple[str, ...]  # ids that hold a booking, sorted
    pending_count: int
    pending_isl_tokens: int
    stats: tuple[ClassStats, ...]  # by class index
    active_requests: tuple[tuple[int, int], ...]  # (worker, booked requests)


def observe(api: SchedulerApi, request_ids: list[str]) -> SchedulerObservation:
    """Read every reader, for the request ids scheduled so far (sorted)."""
    ids = sorted(request_ids)
    return SchedulerObservation(
        now_ms=api.now_ms(),
        fates=tuple((rid, api.fate(rid)) for rid in ids),
        booked=tuple(rid for rid in ids if api.has_request(rid)),
        pending_count=api.pending_count(),
        pending_isl_tokens=api.pending_isl_tokens(),
        stats=api.class_stats(),
        active_requests=tuple(api.active_requests()),
    )
