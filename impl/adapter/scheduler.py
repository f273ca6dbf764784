"""`CrateScheduler`: the crate's public `LocalScheduler` (`impl/src/scheduler.rs`).

The public scheduler over its admission queue, as Dynamo drives it: workers
`0..n` whose only configuration is their capacity, a paused Tokio clock, due
times set through a request classifier (as far out as the platform's
`Instant` reaches), an availability provider whose answer the caller sets,
callers that can go away.
"""

from __future__ import annotations

from typing import Final

from impl import _native
from impl.adapter.lib import Translation
from model.errors import RustPanicError, SchedulerError
from model.scheduler.api import SchedulerApi
from model.scheduler.ops import Schedule
from model.scheduler.types import (
    BUSY_THRESHOLD_FRAC,
    NOT_FOUND,
    UNKNOWN_REQUEST,
    FateKind,
    SchedulerConfig,
    class_name,
    profile_yaml,
)
from model.scheduler.types import ClassStats as SchedulerClassStats
from model.scheduler.types import Fate as SchedulerFate

NS_PER_MS: Final[int] = 1_000_000
_NOT_FOUND_SUFFIX: Final[str] = " not found"


class _SchedulerErrors(Translation):
    """The scheduler binding's exceptions, and an overflow, as `model.errors` ones.

    Every read of the scheduler goes through one, and a step reads the fate of
    every request the program scheduled (`Translation`: no generator).
    """

    __slots__ = ()

    def translate(self, error: BaseException) -> None:
        """Translate a binding exception or an overflow; others go on."""
        if isinstance(error, _native.SchedulerError):
            message = str(error)
            found = NOT_FOUND if message.endswith(_NOT_FOUND_SUFFIX) else message
            raise SchedulerError(found) from error
        if isinstance(error, _native.SchedulerUsageError):
            message = str(error)
            unknown = message.startswith("unknown request id")
            raise SchedulerError(UNKNOWN_REQUEST if unknown else message) from error
        if isinstance(error, _native.RustPanic):
            raise RustPanicError(str(error)) from error
        if isinstance(error, OverflowError):
            # PyO3 refuses ints outside usize/u64 before the crate is called.
            raise SchedulerError(f"value out of the crate's range: {error}") from error


_ERRORS: Final[_SchedulerErrors] = _SchedulerErrors()


def _scheduler_errors() -> _SchedulerErrors:
    """The context that re-raises the scheduler binding's exceptions."""
    return _ERRORS


_FATE_KINDS: Final[dict[str, FateKind]] = {
    "waiting": "waiting",
    "dispatched": "dispatched",
    "rejected": "rejected",
    "cancelled": "cancelled",
}
"""The binding's word for a fate, as the model's `FateKind`."""


def _ms_of(at_ns: int | None) -> int | None:
    return None if at_ns is None else at_ns // NS_PER_MS


class CrateScheduler:
    """`LocalScheduler` of the pinned crate, behind `SchedulerApi`."""

    def __init__(self, config: SchedulerConfig) -> None:
        """Workers `0..n` with the config's capacities and profile, paused clock.

        The synthetic profile without classes; otherwise the root profile of
        the router policy document `profile_yaml(config.classes)`.
        """
        self._config = config
        yaml_text = profile_yaml(config.classes) if config.classes else None
        with _scheduler_errors():
            self._table = _native.SchedulerTable(
                list(config.capacities_tokens), BUSY_THRESHOLD_FRAC, yaml_text
            )

    def schedule(self, op: Schedule) -> None:
        """A caller awaits `schedule_request` for `op` (due time, class: classifier)."""
        due_ns = None if op.due_ms is None else op.due_ms * NS_PER_MS
        self.schedule_due_ns(op, due_ns)

    def schedule_due_ns(self, op: Schedule, due_ns: int | None) -> None:
        """`schedule` with the due time in ns, the binding's unit (`op.due_ms` unused).

        For due keys finer than a ms, as at the queue's cap (`u64::MAX - 1` ns).
        """
        with _scheduler_errors():
            self._table.schedule(
                op.request_id,
                op.worker,
                op.pinned,
                op.isl_tokens,
                due_ns,
                class_name(self._config, op.class_index),
                op.strict_priority,
                op.leaves,
            )

    def free(self, request_id: str) -> None:
        """`LocalScheduler::free`."""
        with _scheduler_errors():
            self._table.free(request_id)

    def set_capacity(self, worker: int, tokens: int) -> None:
        """A new worker config with `max_num_batched_tokens = tokens`."""
        with _scheduler_errors():
            self._table.set_capacity(worker, tokens)

    def update_queue(self) -> None:
        """`LocalScheduler::update_queue`."""
        with _scheduler_errors():
            self._table.update_queue()

    def advance(self, delta_ms: int) -> None:
        """The paused clock moves forward by `delta_ms`."""
        with _scheduler_errors():
            self._table.advance_clock(self._table.now_ns + delta_ms * NS_PER_MS)

    def set_available(self, workers: frozenset[int] | None) -> None:
        """The binding's availability provider answers `workers` from now on."""
        with _scheduler_errors():
            self._table.set_available(None if workers is None else sorted(workers))

    def cancel(self, request_id: str) -> bool:
        """The caller's future is dropped; whether it was still waiting."""
        with _scheduler_errors():
            return self._table.cancel(request_id)

    def now_ms(self) -> int:
        """The paused clock, in whole ms since construction."""
        return self._table.now_ns // NS_PER_MS

    def fate(self, request_id: str) -> SchedulerFate:
        """What the caller's future returned, and when."""
        with _scheduler_errors():
            kind, detail, at_ns = self._table.fate(request_id)
        return SchedulerFate(_FATE_KINDS[kind], detail, _ms_of(at_ns))

    def has_request(self, request_id: str) -> bool:
        """`LocalScheduler::has_request`."""
        with _scheduler_errors():
            return self._table.has_request(request_id)

    def pending_count(self) -> int:
        """`LocalScheduler::pending_count`."""
        with _scheduler_errors():
            return self._table.pending_count()

    def pending_isl_tokens(self) -> int:
        """`LocalScheduler::pending_isl_tokens`."""
        with _scheduler_errors():
            return self._table.pending_isl_tokens()

    def class_stats(self) -> tuple[SchedulerClassStats, ...]:
        """`LocalScheduler::class_queue_stats(i)` of every class of the profile."""
        stats = []
        with _scheduler_errors():
            for index in range(len(self._config.profile())):
                raw = self._table.class_queue_stats(index)
                if raw is None:
                    raise SchedulerError(f"usage: the profile has no class {index}")
                stats.append(SchedulerClassStats(*raw))
        return tuple(stats)

    def active_requests(self) -> list[tuple[int, int]]:
        """Booked requests per worker (`get_potential_loads`), by worker id."""
        with _scheduler_errors():
            return self._table.active_requests()


def _scheduler_conforms(scheduler: CrateScheduler) -> SchedulerApi:
    """Let mypy prove that the adapter satisfies `SchedulerApi`."""
    return scheduler
