"""Value types of the scheduler subject.

Time is in whole milliseconds since the scheduler was built (`now_ms`,
`due_ms`, `at_ms`). The binding takes nanoseconds; the adapter converts. Whole
milliseconds keep every due time on Tokio's 1 ms timer grid, where the crate's
actor timer fires exactly at the due time (README, `scheduler_binding`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from model.queue.types import ClassConfig, LimitKind, synthetic_profile

FateKind = Literal["waiting", "dispatched", "rejected", "cancelled"]

LeavePoint = Literal["classifying", "admission", "booking"]
"""Where a caller goes away on its own, at a point no call between steps reaches.

* `classifying` -- while the request classifier runs (local.rs:346, the await
  of `classify_request`): the request never reaches the queue.
* `admission` -- once the enqueue command is sent, before the actor
  acknowledged it (queue.rs:798, the await of the acknowledgement): the
  actor handles the request with its response channel closed.
* `booking` -- once the request holds a booking, before the caller took the
  response (local.rs:363, the await of the response): the lease's drop
  hands the booking to the actor's cleanup, which frees it.
"""
LEAVE_POINTS: Final[tuple[LeavePoint, ...]] = ("classifying", "admission", "booking")

DEADLINE_EXCEEDED: Final = "deadline_exceeded"
"""The error kind of `KvSchedulerError::DeadlineExceeded`, as the binding names it."""

NOT_FOUND: Final = "not_found"
"""The kind of `SequenceError::RequestNotFound` from `free`."""

UNKNOWN_REQUEST: Final = "unknown_request"
"""A cancel of an id no caller scheduled (the binding keeps callers by id)."""

NO_ENDPOINTS: Final = "no_endpoints"
"""The error kind of `KvSchedulerError::NoEndpoints`: no eligible worker."""

QUEUE_REJECTED: Final = "queue_rejected"
"""The error kind of `KvSchedulerError::QueueRejected`: a class's queue limit."""

BUSY_THRESHOLD_FRAC: Final = 1.0
"""Every class's `prefill_busy_threshold_frac`: busy means load > capacity."""

SYNTHETIC_CLASSES: Final = synthetic_profile("fcfs")
"""`PolicyProfile::synthetic(Some(1.0), Fcfs)`: one FCFS class, "default"."""

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
    """How to build one scheduler: worker `i` has capacity `capacities_tokens[i]`.

    `classes`: the policy classes of the profile, in order (empty: the synthetic
    profile, `SYNTHETIC_CLASSES`). Class `i` is built in family `f{i}` of a root
    profile whose every class is busy above `BUSY_THRESHOLD_FRAC` of a worker's
    capacity, so a request names class `i` as `f{i}` (`profile_yaml`).
    """

    capacities_tokens: tuple[int, ...]
    classes: tuple[ClassConfig, ...] = ()

    def profile(self) -> tuple[ClassConfig, ...]:
        """The classes the scheduler is built with."""
        return self.classes or SYNTHETIC_CLASSES


def never_queues(config: ClassConfig) -> bool:
    """`PolicyClassConfig::never_queues`: some per-worker limit is zero."""
    return 0 in (
        config.request_queue_limit_per_worker,
        config.raw_isl_token_queue_limit_per_worker,
        config.cached_token_queue_limit_per_worker,
    )


def class_name(config: SchedulerConfig, class_index: int) -> str | None:
    """The policy class a request of class `class_index` asks for (None: none).

    The synthetic profile's one class is the default: no name is set.
    """
    return f"f{class_index}" if config.classes else None


def profile_yaml(classes: tuple[ClassConfig, ...]) -> str:
    """A root profile of the router policy document: class `i` in family `f{i}`."""
    lines = [
        "default_policy_family: f0",
        "uncached_isl_buckets: [{min_tokens: 0, bucket: all}]",
        "policy_classes:",
    ]
    limits: tuple[tuple[str, LimitKind], ...] = (
        ("request_queue_limit_per_worker", "requests"),
        ("raw_isl_token_queue_limit_per_worker", "raw_isl_tokens"),
        ("cached_token_queue_limit_per_worker", "cached_tokens"),
    )
    for index, config in enumerate(classes):
        limit_text = "".join(
            f", {key}: {value}"
            for key, kind in limits
            if (value := config.limit_per_worker(kind)) is not None
        )
        lines.append(
            f"  - {{name: {config.name}, policy_family: f{index}, cache_bucket: all, "
            f"queue_policy: {config.queue_policy}, quantum: {config.quantum}, "
            f"prefill_busy_threshold_frac: {BUSY_THRESHOLD_FRAC}{limit_text}}}"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Request:
    """What a caller asked for: the inputs of one `schedule` call."""

    request_id: str
    worker: int
    pinned: bool  # True: `pinned_worker`; False: `allowed_worker_ids = {worker}`
    isl_tokens: int
    due_ms: int | None  # set through the classifier; None: no due time
    scheduled_at_ms: int
    class_index: int = 0  # set through the classifier (`f{class_index}`)
    strict_priority: int = 0
    leaves: LeavePoint | None = None  # where its caller goes away on its own


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
    """`ClassQueueStats` of one class."""

    pending_count: int
    pending_isl_tokens: int
    pending_cached_tokens: int
    received_total: int
    rejected_due_time_passed_total: int
