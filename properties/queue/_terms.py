"""What the queue's properties share: citations, the view, and expectations in words.

The properties import the model's types, never its functions
(`tests/test_hygiene.py` checks it): a property that computed its expectation
with `model.queue.table` could not fail on the model. So the serving order,
the listing of an entry, the scaled limits, the saturating arithmetic and the
quanta a pop grants are stated here once more, from the crate's documented
behaviour, in the properties' own words.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from model.queue.ops import PopNext
from model.queue.table import ClassState, Entry, QueueState
from model.queue.types import (
    LIMIT_KINDS,
    USIZE_MAX,
    ClassConfig,
    ClassStats,
    Dispatch,
    QueuedItem,
    Rejection,
    Worker,
)
from properties.registry import Step

if TYPE_CHECKING:
    from model.queue.api import QueueObservation

TABLE: Final[str] = "model.queue.table"
CRATE: Final[str] = "scheduling::policy_queue"
QUEUE: Final[str] = f"{CRATE}::PolicyQueue"
CLASS: Final[str] = f"{CRATE}::PolicyClassQueue"
POP_READS: Final = (f"{TABLE}.pop_next", f"{TABLE}.class_candidate", f"{TABLE}._serve")
POP_GUARDS: Final = (f"{QUEUE}::pop_next", f"{QUEUE}::pop_candidate")
ENQUEUE_READS: Final = (f"{TABLE}.enqueue", f"{TABLE}.limit_reached")
ENQUEUE_GUARDS: Final = (f"{QUEUE}::enqueue", f"{CRATE}::queue_rejection")
RETAIN_READS: Final = (f"{TABLE}.retain",)
RETAIN_GUARDS: Final = (f"{QUEUE}::retain", f"{QUEUE}::take_if_entry_in_class")
READER_READS: Final = ("model.queue.api.observe", f"{TABLE}.listing")

ZERO_STATS: Final[ClassStats] = ClassStats(
    requests=0, raw_isl_tokens=0, cached_tokens=0
)
"""A class that holds nothing counts nothing."""


@dataclass(frozen=True)
class QueueView:
    """The model's state and an observation of a system under test, side by side."""

    state: QueueState
    seen: QueueObservation


# ---- arithmetic: the crate's `usize` saturates -----------------------------------


def capped_sum(left: int, right: int) -> int:
    """`left + right`, held at `usize::MAX`."""
    total = left + right
    return min(total, USIZE_MAX)


def capped_product(left: int, right: int) -> int:
    """`left * right`, held at `usize::MAX`."""
    product = left * right
    return min(product, USIZE_MAX)


def floored_difference(left: int, right: int) -> int:
    """`left - right`, held at zero."""
    return left - right if left > right else 0


# ---- entries as the crate documents them -----------------------------------------


def cost_of(entry: Entry) -> int:
    """The DRR cost of an entry: its uncached tokens, but never less than one."""
    uncached = entry.raw_isl_tokens - entry.cached_tokens
    return max(uncached, 1)


def listed(class_index: int, entry: Entry) -> QueuedItem:
    """An entry as `entries()` should list it: tokens, uncached, cost."""
    return QueuedItem(
        class_index=class_index,
        payload=entry.payload,
        placement=entry.placement,
        raw_isl_tokens=entry.raw_isl_tokens,
        cached_tokens=entry.cached_tokens,
        uncached_tokens=entry.raw_isl_tokens - entry.cached_tokens,
        scheduling_cost_tokens=cost_of(entry),
    )


def _rank(entry: Entry) -> tuple[int, bool, float]:
    """Strict priority, then score, where NaN ranks above every number."""
    nan = math.isnan(entry.score)
    return (entry.strict_priority, nan, 0.0 if nan else entry.score)


def same_rank(first: Entry, second: Entry) -> bool:
    """The two entries tie on strict priority and score (NaN ties with NaN)."""
    return _rank(first) == _rank(second)


def first_served(entries: Iterable[Entry]) -> Entry | None:
    """The entry a lane serves first: highest rank, then the earliest enqueued."""
    chosen: Entry | None = None
    for entry in entries:
        if (
            chosen is None
            or _rank(entry) > _rank(chosen)
            or (_rank(entry) == _rank(chosen) and entry.seq < chosen.seq)
        ):
            chosen = entry
    return chosen


def first_limit_reached(
    config: ClassConfig, stats: ClassStats, worker_count: int
) -> Rejection | None:
    """The first limit (requests, raw, cached) whose counter is already at its cap.

    A per-worker limit scales with the worker count; the counter is compared
    before the new entry is added, so a counter exactly at the cap refuses.
    """
    for kind in LIMIT_KINDS:
        per_worker = config.limit_per_worker(kind)
        if per_worker is None:
            continue
        cap = capped_product(per_worker, worker_count)
        counter: int = getattr(stats, kind)
        if not counter < cap:
            return Rejection(
                policy_class=config.name, limit_kind=kind, current=counter, limit=cap
            )
    return None


def quanta_granted(cost: int, deficit: int, quantum: int) -> int:
    """Return the fewest quanta that raise `deficit` to at least `cost`."""
    missing = floored_difference(cost, deficit)
    return missing // quantum + (1 if missing % quantum else 0)


# ---- reading states and steps --------------------------------------------------


def stats_of(items: Sequence[QueuedItem], index: int) -> ClassStats:
    """The counters class `index` should report for these listed items."""
    mine = [item for item in items if item.class_index == index]
    return ClassStats(
        requests=len(mine),
        raw_isl_tokens=sum(item.raw_isl_tokens for item in mine),
        cached_tokens=sum(item.cached_tokens for item in mine),
    )


def model_items(state: QueueState) -> list[QueuedItem]:
    """Every entry the model holds, as `entries()` should list it."""
    return [
        listed(index, entry)
        for index, cls in enumerate(state.classes)
        for entry in cls.entries
    ]


def _lane(cls: ClassState, placement: Worker | None) -> list[Entry]:
    return [entry for entry in cls.entries if entry.placement == placement]


def lane_heads(cls: ClassState) -> dict[Worker, Entry]:
    """Each worker lane's first-served entry."""
    workers = sorted({e.placement for e in cls.entries if e.placement is not None})
    heads: dict[Worker, Entry] = {}
    for worker in workers:
        head = first_served(_lane(cls, worker))
        if head is not None:
            heads[worker] = head
    return heads


def passing_heads(cls: ClassState, index: int, dispatch: Dispatch) -> list[Entry]:
    """Any head and unblocked lane heads of a class that the predicate accepts."""
    heads = [
        head
        for worker, head in sorted(lane_heads(cls).items())
        if worker not in cls.blocked and dispatch.allows(index, worker)
    ]
    any_head = first_served(_lane(cls, None))
    if any_head is not None and dispatch.allows(index, None):
        heads.append(any_head)
    return heads


def popped_item(step: Step) -> QueuedItem | None:
    """The item a pop returned, or None."""
    if isinstance(step.op, PopNext) and isinstance(step.outcome, QueuedItem):
        return step.outcome
    return None


def served_entry(step: Step) -> tuple[QueuedItem, Entry] | None:
    """The popped item and its queue entry as it stood before the pop."""
    popped = popped_item(step)
    if popped is None:
        return None
    before: QueueState = step.before
    for entry in before.classes[popped.class_index].entries:
        if entry.payload == popped.payload and entry.placement == popped.placement:
            return popped, entry
    return None
