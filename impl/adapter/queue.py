"""`CratePolicyQueue`: the crate's `PolicyQueue` (`impl/src/queue.rs`).

The binding speaks tuples; this module turns them into the model's value types
and the binding's exceptions into `model.errors`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from impl import _native
from impl.adapter.lib import (
    CRATE_VERSION,
)
from model.errors import (
    PolicyConfigError,
    QueueUsageError,
    RustPanicError,
    UnsupportedError,
)
from model.queue.api import PolicyQueueApi
from model.queue.ops import Enqueue
from model.queue.types import (
    ClassConfig,
    ClassStats,
    Dispatch,
    LimitKind,
    QueuedItem,
    QueuePolicy,
    Rejection,
    TokenSnapshot,
    Worker,
)

HAS_QUEUE_RECHECK: Final[bool] = bool(_native.HAS_QUEUE_RECHECK)
"""Built with feature `queue-recheck` (a crate whose recheck calls are public)."""

_QUEUE_POLICIES: Final[dict[str, QueuePolicy]] = {
    "fcfs": "fcfs",
    "wspt": "wspt",
    "lcfs": "lcfs",
}
_LIMIT_KINDS: Final[dict[str, LimitKind]] = {
    "requests": "requests",
    "raw_isl_tokens": "raw_isl_tokens",
    "cached_tokens": "cached_tokens",
}


@contextmanager
def _queue_errors() -> Iterator[None]:
    """Re-raise the queue binding's exceptions as `model.errors` classes."""
    try:
        yield
    except _native.PolicyConfigError as error:
        stage, message = error.args
        raise PolicyConfigError(str(stage), str(message)) from error
    except _native.QueueUsageError as error:
        raise QueueUsageError(str(error)) from error
    except _native.RustPanic as error:
        raise RustPanicError(str(error)) from error
    except OverflowError as error:
        # PyO3 refuses ints outside usize/u64/u32 before the crate is called.
        raise QueueUsageError(f"value out of the crate's range: {error}") from error


def _worker_in(raw: tuple[int, int] | None) -> Worker | None:
    return None if raw is None else Worker(worker_id=int(raw[0]), dp_rank=int(raw[1]))


def _item_in(
    raw: tuple[int, int, tuple[int, int] | None, int, int, int, int],
) -> QueuedItem:
    class_index, payload, placement, raw_tokens, cached, uncached, cost = raw
    return QueuedItem(
        class_index=int(class_index),
        payload=int(payload),
        placement=_worker_in(placement),
        raw_isl_tokens=int(raw_tokens),
        cached_tokens=int(cached),
        uncached_tokens=int(uncached),
        scheduling_cost_tokens=int(cost),
    )


def token_snapshot(raw_isl_tokens: int, cached_tokens: int) -> TokenSnapshot:
    """`QueueSnapshot::new(raw, cached)` of the crate."""
    with _queue_errors():
        raw, cached, uncached, cost = _native.PolicyQueueTable.snapshot(
            raw_isl_tokens, cached_tokens
        )
    return TokenSnapshot(int(raw), int(cached), int(uncached), int(cost))


def _limit(raw: int | None) -> int | None:
    return None if raw is None else int(raw)


class CratePolicyQueue:
    """`PolicyQueue<Ticket>` of the pinned crate, behind `PolicyQueueApi`."""

    def __init__(self, table: _native.PolicyQueueTable) -> None:
        """Wrap a binding table; use `from_yaml`, `from_path` or `synthetic`."""
        self._table = table

    @classmethod
    def from_yaml(
        cls,
        yaml_text: str,
        model_name: str | None = None,
        fallback_threshold: float | None = None,
        fallback_policy: QueuePolicy = "fcfs",
    ) -> CratePolicyQueue:
        """`RouterPolicyConfig::from_yaml` + `resolve_profile` + `PolicyQueue::new`."""
        with _queue_errors():
            table = _native.PolicyQueueTable.from_yaml(
                yaml_text, model_name, fallback_threshold, fallback_policy
            )
        return cls(table)

    @classmethod
    def from_path(
        cls,
        path: str,
        model_name: str | None = None,
        fallback_threshold: float | None = None,
        fallback_policy: QueuePolicy = "fcfs",
    ) -> CratePolicyQueue:
        """`RouterPolicyConfig::from_path` + `resolve_profile` + `PolicyQueue::new`."""
        with _queue_errors():
            table = _native.PolicyQueueTable.from_path(
                path, model_name, fallback_threshold, fallback_policy
            )
        return cls(table)

    @classmethod
    def synthetic(
        cls, threshold: float | None, queue_policy: QueuePolicy
    ) -> CratePolicyQueue:
        """`PolicyProfile::synthetic(threshold, policy)` + `PolicyQueue::new`."""
        with _queue_errors():
            table = _native.PolicyQueueTable.synthetic(threshold, queue_policy)
        return cls(table)

    def class_count(self) -> int:
        """`PolicyQueue::class_count`."""
        with _queue_errors():
            return int(self._table.class_count())

    def class_config(self, class_index: int) -> ClassConfig:
        """`PolicyQueue::class_config(i)`, queue-relevant fields."""
        with _queue_errors():
            name, policy, quantum, requests, raw, cached = self._table.class_config(
                class_index
            )
        return ClassConfig(
            name=str(name),
            queue_policy=_QUEUE_POLICIES[policy],
            quantum=int(quantum),
            request_queue_limit_per_worker=_limit(requests),
            raw_isl_token_queue_limit_per_worker=_limit(raw),
            cached_token_queue_limit_per_worker=_limit(cached),
        )

    def enqueue(self, op: Enqueue) -> Rejection | None:
        """`PolicyQueue::enqueue` with `QueueSnapshot::new(raw, cached)`."""
        placement = op.placement
        raw_placement = (
            None if placement is None else (placement.worker_id, placement.dp_rank)
        )
        with _queue_errors():
            rejected = self._table.enqueue(
                op.class_index,
                op.worker_count,
                op.raw_isl_tokens,
                op.cached_tokens,
                op.arrival_offset_secs,
                op.priority_jump,
                op.strict_priority,
                raw_placement,
                op.payload,
            )
        if rejected is None:
            return None
        policy_class, kind, current, limit = rejected
        if kind not in _LIMIT_KINDS:
            raise AssertionError(f"the crate names a limit kind {kind!r}")
        return Rejection(
            policy_class=str(policy_class),
            limit_kind=_LIMIT_KINDS[kind],
            current=int(current),
            limit=int(limit),
        )

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        """`PolicyQueue::pop_next` with the predicate `dispatch` describes."""
        saturated = [(w.worker_id, w.dp_rank) for w in sorted(dispatch.saturated)]
        with _queue_errors():
            popped = self._table.pop_next(
                saturated, dispatch.any_dispatchable, sorted(dispatch.paused_classes)
            )
        return None if popped is None else _item_in(popped)

    def retain(self, drop: frozenset[int]) -> None:
        """`PolicyQueue::retain(|payload| !drop.contains(payload))`."""
        with _queue_errors():
            self._table.retain(sorted(drop))

    def pending_count(self) -> int:
        """`PolicyQueue::pending_count`."""
        with _queue_errors():
            return int(self._table.pending_count())

    def class_stats(self, class_index: int) -> ClassStats:
        """`PolicyQueue::class_stats(i)`."""
        with _queue_errors():
            requests, raw, cached = self._table.class_stats(class_index)
        return ClassStats(
            requests=int(requests), raw_isl_tokens=int(raw), cached_tokens=int(cached)
        )

    def has_backlog(self, class_index: int) -> bool:
        """`PolicyQueue::has_backlog(i)`."""
        with _queue_errors():
            return bool(self._table.has_backlog(class_index))

    def entries(self) -> list[QueuedItem]:
        """`PolicyQueue::entries()`, sorted by `QueuedItem.sort_key`."""
        with _queue_errors():
            raw_items = self._table.entries()
        return sorted((_item_in(raw) for raw in raw_items), key=QueuedItem.sort_key)

    def entries_equal(self) -> list[list[bool]]:
        """The crate's `==` between every pair of queued entries.

        Rows and columns follow one order: the binding's sort of `entries()`.
        """
        with _queue_errors():
            return [[bool(cell) for cell in row] for row in self._table.entries_equal()]

    def drain(self) -> list[QueuedItem]:
        """`PolicyQueue::drain()`, sorted; the table is consumed."""
        with _queue_errors():
            raw_items = self._table.drain()
        return sorted((_item_in(raw) for raw in raw_items), key=QueuedItem.sort_key)

    def recheck_worker(self, worker: Worker) -> None:
        """`PolicyQueue::recheck_worker`: only in builds where it is public."""
        if not HAS_QUEUE_RECHECK:
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} keeps recheck_worker pub(crate)"
            )
        with _queue_errors():
            self._table.recheck_worker((worker.worker_id, worker.dp_rank))

    def recheck_all_workers(self) -> None:
        """`PolicyQueue::recheck_all_workers`: only in builds where it is public."""
        if not HAS_QUEUE_RECHECK:
            raise UnsupportedError(
                f"dynamo-kv-router {CRATE_VERSION} keeps recheck_all_workers pub(crate)"
            )
        with _queue_errors():
            self._table.recheck_all_workers()


def _conforms(queue: CratePolicyQueue) -> PolicyQueueApi:
    """Let mypy prove that the adapter satisfies `PolicyQueueApi`."""
    return queue
