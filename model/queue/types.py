"""Value types of the policy queue, shared by the model, the adapter and machines.

Token counts and limits are integers in the crate's `usize` range; the queue
has no clock (arrival offsets are plain seconds chosen by the caller, and the
crate-private deadline path is not bound). A worker is a (worker id, DP rank)
pair; an entry placed on no worker sits in its class's shared "Any" lane.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

USIZE_MAX = 2**64 - 1
U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1

QueuePolicy = Literal["fcfs", "wspt", "lcfs"]
LimitKind = Literal["requests", "raw_isl_tokens", "cached_tokens"]
LIMIT_KINDS: tuple[LimitKind, ...] = ("requests", "raw_isl_tokens", "cached_tokens")
"""The order in which the crate checks limits; the first one reached is reported."""


@dataclass(frozen=True, order=True)
class Worker:
    """A worker and data-parallel rank (`WorkerWithDpRank`); orders by id, rank."""

    worker_id: int
    dp_rank: int


@dataclass(frozen=True)
class ClassConfig:
    """The queue-relevant fields of one `PolicyClassConfig`."""

    name: str
    queue_policy: QueuePolicy
    quantum: int  # DRR credit per ring visit, in scheduling-cost tokens; >= 1
    request_queue_limit_per_worker: int | None = None
    raw_isl_token_queue_limit_per_worker: int | None = None
    cached_token_queue_limit_per_worker: int | None = None

    def limit_per_worker(self, kind: LimitKind) -> int | None:
        """Return the per-worker limit of `kind`, or None when the class has none."""
        if kind == "requests":
            return self.request_queue_limit_per_worker
        if kind == "raw_isl_tokens":
            return self.raw_isl_token_queue_limit_per_worker
        return self.cached_token_queue_limit_per_worker


def synthetic_profile(queue_policy: QueuePolicy) -> tuple[ClassConfig, ...]:
    """`PolicyProfile::synthetic`: one class "default", quantum 1, no limits."""
    return (ClassConfig(name="default", queue_policy=queue_policy, quantum=1),)


@dataclass(frozen=True)
class ClassStats:
    """`PolicyQueueStats` of one class: its queued requests and token sums."""

    requests: int
    raw_isl_tokens: int
    cached_tokens: int


@dataclass(frozen=True)
class Rejection:
    """`QueueRejection`: which limit refused an enqueue, and the numbers."""

    policy_class: str
    limit_kind: LimitKind
    current: int  # the class's counter before the add
    limit: int  # per-worker limit times worker count, saturating


@dataclass(frozen=True)
class TokenSnapshot:
    """`QueueSnapshot`: a request's tokens as the queue accounts for them."""

    raw_isl_tokens: int
    cached_tokens: int
    uncached_tokens: int
    scheduling_cost_tokens: int


@dataclass(frozen=True)
class QueuedItem:
    """One queued or popped entry as seen from outside (`PolicyQueueEntry`)."""

    class_index: int
    payload: int
    placement: Worker | None  # None: the class's Any lane
    raw_isl_tokens: int
    cached_tokens: int
    uncached_tokens: int
    scheduling_cost_tokens: int

    def sort_key(self) -> tuple[int, int, tuple[int, ...], int, int]:
        """Order listings (`entries()`, `drain()`) by class, payload, placement."""
        where = () if self.placement is None else (self.placement.worker_id,)
        rank = () if self.placement is None else (self.placement.dp_rank,)
        return (
            self.class_index,
            self.payload,
            where + rank,
            self.raw_isl_tokens,
            self.cached_tokens,
        )


@dataclass(frozen=True)
class Dispatch:
    """The `pop_next` predicate, as data: who can take work right now.

    An entry is dispatchable unless its class is paused; then an Any-lane entry
    iff `any_dispatchable`, and an entry placed on a worker iff that worker is
    not saturated.
    """

    saturated: frozenset[Worker] = frozenset()
    any_dispatchable: bool = True
    paused_classes: frozenset[int] = frozenset()

    def allows(self, class_index: int, placement: Worker | None) -> bool:
        """Tell whether the predicate accepts an entry of this class and placement."""
        if class_index in self.paused_classes:
            return False
        if placement is None:
            return self.any_dispatchable
        return placement not in self.saturated
