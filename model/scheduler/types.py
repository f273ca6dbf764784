"""Value types of the scheduler subject.

Time is in whole milliseconds since the scheduler was built (`now_ms`,
`due_ms`, `at_ms`). The binding takes nanoseconds; the adapter converts. Whole
milliseconds keep every due time on Tokio's 1 ms timer grid, where the crate's
actor timer fires exactly at the due time (README, `scheduler_binding`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

FateKind = Literal["waiting", "dispatched", "rejected", "cancelled"]

DEADLINE_EXCEEDED: Final = "deadline_exceeded"
"""The error kind of `KvSchedulerError::DeadlineExceeded`, as the binding names it."""

NOT_FOUND: Final = "not_found"
"""The kind of `SequenceError::RequestNotFound` from `free`."""

UNKNOWN_REQUEST: Final = "unknown_request"
"""A cancel of an id no caller scheduled (the binding keeps callers by id)."""

NO_ENDPOINTS: Final = "no_endpoints"
"""The error kind of `KvSchedulerError::NoEndpoints`: no eligible worker."""

DUE_KEY_CAP_MS: Final = 18_446_744_073_710
"""The first whole ms at which the queue's due key is capped.

The queue keys a due time by its nanoseconds after the deadline origin, capped
at `u64::MAX - 1` (policy_queue.rs:635-639); `u64::MAX` means "no due time".
(2**64 - 2) ns is 18,446,744,073,709.55 ms, so a due time whole ms after the
origin is capped exactly when it lies this many ms or more after it, and every
capped due time sorts alike, before the requests without one.
"""


@dataclass(frozen=True)
class SchedulerConfig:
    """How to build one scheduler: worker `i` has capacity `capacities_tokens[i]`."""

    capacities_tokens: tuple[int, ...]


@dataclass(frozen=True)
class Request:
    """What a caller asked for: the inputs of one `schedule` call."""

    request_id: str
    worker: int
    pinned: bool  # True: `pinned_worker`; False: `allowed_worker_ids = {worker}`
    isl_tokens: int
    due_ms: int | None  # set through the classifier; None: no due time
    scheduled_at_ms: int


@dataclass(frozen=True)
class Fate:
    """What became of a request, as its caller sees it, and when.

    `detail` is the worker id (dispatched) or the error kind (rejected);
    `at_ms` is when the caller's future returned or was dropped.
    """

    kind: FateKind
    detail: str | None = None
    at_ms: int | None = None


WAITING: Final = Fate("waiting")


@dataclass(frozen=True)
class ClassStats:
    """`ClassQueueStats` of the one class."""

    pending_count: int
    pending_isl_tokens: int
    pending_cached_tokens: int
    received_total: int
    rejected_due_time_passed_total: int
