"""Reference model of `PolicyQueue<T>` (SPEC C) through its public API only.

Written from SPEC C and checked against dynamo-kv-router 1.6.1, whose queue is
the PQ-deadline variant: due-time keys and the lazy recheck flag exist, but
every call that sets them (`enqueue_with_due_at`, `recheck_worker`,
`recheck_all_workers`) is crate-private. So here nothing has a deadline, and a
worker lane that failed the dispatch test once stays blocked until `retain`
empties it. The model keeps plain lists and recomputes lanes, heads and
candidates from them on every call; it has no head index.

State (`QueueState`, frozen and hashable):

* `configs` -- the profile's classes in order; a class's index is its position.
* `classes` -- one `ClassState` per class:
  * `entries` -- every queued entry of the class, in enqueue order. The Any
    lane is the entries without a placement; worker w's lane is the entries
    placed on w. A lane exists exactly while it has entries.
  * `blocked` -- workers whose lane head failed the dispatch test in some
    `pop_next`; they are not tested again while their lane has entries.
  * `stats` -- counters of requests, raw and cached tokens: added on enqueue
    (saturating), subtracted on removal (saturating at zero).
  * `deficit` -- the class's DRR credit, in scheduling-cost tokens.
* `round_cursor` -- the class where the next ring scan starts.
* `carry` -- the class allowed to spend its leftover credit first at the next
  `pop_next` (the class served last, if it kept credit), or None.
* `next_seq` -- the sequence number the next accepted enqueue gets.
* `pending_count` -- counter of queued entries over all classes.
* `drained` -- `drain` consumed the queue; every later call is refused.

Order inside a lane (greater is served first): higher strict priority, then
higher score, then smaller sequence. Scores clean their inputs to `max(x, 0)`
(NaN counts as 0): FCFS `jump - arrival`, WSPT `(1 + jump) / cost`, LCFS
`jump + arrival`; a NaN score (FCFS with both inputs infinite) sorts above
every number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from model.errors import QueueUsageError
from model.queue.types import (
    LIMIT_KINDS,
    U32_MAX,
    U64_MAX,
    USIZE_MAX,
    ClassConfig,
    ClassStats,
    Dispatch,
    QueuedItem,
    QueuePolicy,
    Rejection,
    TokenSnapshot,
    Worker,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from model.queue.api import PolicyQueueApi
    from model.queue.ops import Enqueue

ZERO_STATS = ClassStats(requests=0, raw_isl_tokens=0, cached_tokens=0)


@dataclass(frozen=True)
class Entry:
    """One queued request, as the model keeps it."""

    seq: int  # enqueue sequence; unique, smaller wins ties
    payload: int
    placement: Worker | None  # None: the Any lane
    raw_isl_tokens: int
    cached_tokens: int  # already clamped to raw_isl_tokens
    strict_priority: int
    score: float  # policy score fixed at enqueue; may be inf or NaN

    @property
    def uncached_tokens(self) -> int:
        """Tokens the prefill must compute."""
        return self.raw_isl_tokens - self.cached_tokens

    @property
    def cost(self) -> int:
        """Scheduling cost charged against DRR credit: at least one token."""
        return max(1, self.uncached_tokens)

    def order_key(self) -> tuple[int, tuple[int, float], int]:
        """Sort key, greatest first served: strict, score (NaN on top), -seq."""
        score = (1, 0.0) if math.isnan(self.score) else (0, self.score)
        return (self.strict_priority, score, -self.seq)


@dataclass(frozen=True)
class ClassState:
    """One class's queued entries, blocked workers, counters and credit."""

    entries: tuple[Entry, ...] = ()
    blocked: frozenset[Worker] = frozenset()
    stats: ClassStats = ZERO_STATS
    deficit: int = 0

    def lane(self, placement: Worker | None) -> tuple[Entry, ...]:
        """Return the entries of one lane, in enqueue order."""
        return tuple(entry for entry in self.entries if entry.placement == placement)

    def lane_workers(self) -> list[Worker]:
        """Return the workers that have a lane in this class, sorted."""
        return sorted({e.placement for e in self.entries if e.placement is not None})


@dataclass(frozen=True)
class QueueState:
    """The whole queue (see the module docstring for each field)."""

    configs: tuple[ClassConfig, ...]
    classes: tuple[ClassState, ...]
    round_cursor: int = 0
    carry: int | None = None
    next_seq: int = 0
    pending_count: int = 0
    drained: bool = False


def initial_state(configs: Iterable[ClassConfig]) -> QueueState:
    """`PolicyQueue::new(profile)`: empty classes, zero credit, cursor at 0."""
    configs = tuple(configs)
    if not configs:
        raise QueueUsageError("a profile has at least one class")
    for config in configs:
        if config.quantum < 1:
            raise QueueUsageError(f"class {config.name!r} has quantum < 1")
    return QueueState(configs=configs, classes=tuple(ClassState() for _ in configs))


# ---- arithmetic as the crate's usize does it -----------------------------------


def saturating_add(left: int, right: int) -> int:
    """`usize::saturating_add`."""
    return min(left + right, USIZE_MAX)


def saturating_mul(left: int, right: int) -> int:
    """`usize::saturating_mul`."""
    return min(left * right, USIZE_MAX)


def saturating_sub(left: int, right: int) -> int:
    """`usize::saturating_sub`."""
    return max(left - right, 0)


def _clean(value: float) -> float:
    """`f64::max(value, 0.0)`: negatives and NaN become 0."""
    return max(0.0, value)  # 0.0 first: max(0.0, nan) is 0.0, max(nan, 0.0) is nan


def policy_score(
    policy: QueuePolicy, cost: int, arrival_offset_secs: float, priority_jump: float
) -> float:
    """Compute the score an entry keeps for life; higher is served first."""
    jump = _clean(float(priority_jump))
    arrival = _clean(float(arrival_offset_secs))
    if policy == "fcfs":
        return jump - arrival
    if policy == "wspt":
        return (1.0 + jump) / float(cost)
    return jump + arrival


def limit_reached(
    config: ClassConfig, stats: ClassStats, worker_count: int
) -> Rejection | None:
    """Return the first limit (requests, raw, cached) its counter already reached."""
    for kind in LIMIT_KINDS:
        per_worker = config.limit_per_worker(kind)
        if per_worker is None:
            continue
        limit = saturating_mul(per_worker, worker_count)
        current = getattr(stats, kind)
        if current >= limit:
            return Rejection(
                policy_class=config.name, limit_kind=kind, current=current, limit=limit
            )
    return None


def item_of(class_index: int, entry: Entry) -> QueuedItem:
    """Show an entry as callers see it."""
    return QueuedItem(
        class_index=class_index,
        payload=entry.payload,
        placement=entry.placement,
        raw_isl_tokens=entry.raw_isl_tokens,
        cached_tokens=entry.cached_tokens,
        uncached_tokens=entry.uncached_tokens,
        scheduling_cost_tokens=entry.cost,
    )


def best(entries: Iterable[Entry]) -> Entry | None:
    """Return the entry served first among `entries`, or None if there are none."""
    return max(entries, key=Entry.order_key, default=None)


# ---- guards --------------------------------------------------------------------


def _check_live(state: QueueState) -> None:
    if state.drained:
        raise QueueUsageError("queue was drained")


def _check_class(state: QueueState, class_index: int) -> None:
    _check_live(state)
    if not 0 <= class_index < len(state.classes):
        raise QueueUsageError(
            f"class index {class_index} out of range for {len(state.classes)} classes"
        )


def _check_range(name: str, value: int, maximum: int) -> None:
    if not 0 <= value <= maximum:
        raise QueueUsageError(f"{name}={value} is outside 0..={maximum}")


def token_snapshot(raw_isl_tokens: int, cached_tokens: int) -> TokenSnapshot:
    """`QueueSnapshot::new`: cached clamped to raw, and a cost of at least one token."""
    _check_range("raw_isl_tokens", raw_isl_tokens, USIZE_MAX)
    _check_range("cached_tokens", cached_tokens, USIZE_MAX)
    cached = min(cached_tokens, raw_isl_tokens)
    uncached = raw_isl_tokens - cached
    return TokenSnapshot(raw_isl_tokens, cached, uncached, max(1, uncached))


# ---- transitions -----------------------------------------------------------------


def enqueue(state: QueueState, op: Enqueue) -> tuple[QueueState, Rejection | None]:
    """Queue one entry unless a limit, checked against pre-add counters, refuses."""
    _check_range("class_index", op.class_index, USIZE_MAX)
    _check_range("worker_count", op.worker_count, USIZE_MAX)
    tokens = token_snapshot(op.raw_isl_tokens, op.cached_tokens)
    _check_range("strict_priority", op.strict_priority, U32_MAX)
    _check_range("payload", op.payload, U64_MAX)
    if op.placement is not None:
        _check_range("worker_id", op.placement.worker_id, U64_MAX)
        _check_range("dp_rank", op.placement.dp_rank, U32_MAX)
    _check_class(state, op.class_index)
    config = state.configs[op.class_index]
    cls = state.classes[op.class_index]
    rejection = limit_reached(config, cls.stats, op.worker_count)
    if rejection is not None:
        return state, rejection
    cached = tokens.cached_tokens
    cost = tokens.scheduling_cost_tokens
    entry = Entry(
        seq=state.next_seq,
        payload=op.payload,
        placement=op.placement,
        raw_isl_tokens=op.raw_isl_tokens,
        cached_tokens=cached,
        strict_priority=op.strict_priority,
        score=policy_score(
            config.queue_policy, cost, op.arrival_offset_secs, op.priority_jump
        ),
    )
    stats = ClassStats(
        requests=cls.stats.requests + 1,
        raw_isl_tokens=saturating_add(cls.stats.raw_isl_tokens, op.raw_isl_tokens),
        cached_tokens=saturating_add(cls.stats.cached_tokens, cached),
    )
    new_class = replace(cls, entries=(*cls.entries, entry), stats=stats)
    return (
        replace(
            state,
            classes=_with(state.classes, op.class_index, new_class),
            next_seq=(state.next_seq + 1) % (U64_MAX + 1),
            pending_count=state.pending_count + 1,
        ),
        None,
    )


def class_candidate(
    cls: ClassState, class_index: int, dispatch: Dispatch
) -> tuple[ClassState, Entry | None]:
    """Find the entry a class would serve; return the class with new blocks too.

    The Any lane's head is tested on every call and never remembered. Without
    worker lanes it is the only candidate. With worker lanes, the heads of the
    lanes not yet blocked are tested best first: a head that fails blocks its
    lane for good; the first that passes competes with the Any head (if that
    passed), and the Any head wins only if it orders strictly above.
    """
    any_head = best(cls.lane(None))
    shared = (
        any_head
        if any_head is not None and dispatch.allows(class_index, None)
        else None
    )
    blocked = set(cls.blocked)
    heads = [
        head
        for worker in cls.lane_workers()
        if worker not in blocked
        for head in [best(cls.lane(worker))]
        if head is not None
    ]
    heads.sort(key=Entry.order_key, reverse=True)
    chosen: Entry | None = shared
    for head in heads:
        if dispatch.allows(class_index, head.placement):
            if shared is None or head.order_key() > shared.order_key():
                chosen = head
            break
        assert head.placement is not None
        blocked.add(head.placement)
    return replace(cls, blocked=frozenset(blocked)), chosen


def _with(
    classes: tuple[ClassState, ...], index: int, cls: ClassState
) -> tuple[ClassState, ...]:
    return (*classes[:index], cls, *classes[index + 1 :])


def served_credit(deficit: int, cost: int, class_left_empty: bool) -> tuple[int, bool]:
    """A served class's credit after paying `cost`, and whether it is carried.

    `pop_candidate`: the cost is charged (saturating); a class left empty loses
    its credit; one that keeps entries and credit spends it first next time.
    """
    deficit = saturating_sub(deficit, cost)
    if class_left_empty:
        return 0, False
    return deficit, deficit > 0


def _serve(
    state: QueueState, classes: list[ClassState], class_index: int, entry: Entry
) -> tuple[QueueState, QueuedItem]:
    """Pop `entry` from its class: charge its cost, move the cursor past it."""
    cls = classes[class_index]
    remaining = tuple(e for e in cls.entries if e.seq != entry.seq)
    deficit, carried = served_credit(cls.deficit, entry.cost, not remaining)
    classes[class_index] = replace(
        cls,
        entries=remaining,
        stats=_minus(cls.stats, [entry]),
        deficit=deficit,
    )
    new_state = replace(
        state,
        classes=tuple(classes),
        round_cursor=(class_index + 1) % len(classes),
        carry=class_index if carried else None,
        pending_count=state.pending_count - 1,
    )
    return new_state, item_of(class_index, entry)


def _minus(stats: ClassStats, removed: Iterable[Entry]) -> ClassStats:
    for entry in removed:
        stats = ClassStats(
            requests=saturating_sub(stats.requests, 1),
            raw_isl_tokens=saturating_sub(stats.raw_isl_tokens, entry.raw_isl_tokens),
            cached_tokens=saturating_sub(stats.cached_tokens, entry.cached_tokens),
        )
    return stats


def drr_choose(
    cursor: int,
    carry: int | None,
    deficits: list[int],
    *,
    quanta: Sequence[int],
    visit: Callable[[int], int | None],
    has_entries: Callable[[int], bool],
) -> int | None:
    """The class `pop_next` serves, by weighted deficit round robin (SPEC C.6).

    `visit(i)` finds class i's candidate (the caller remembers it) and returns
    its scheduling cost, or None when the class has none; it is called at most
    once per class. `deficits` is updated in place.

    1. The carried class goes first and is served if its candidate's cost fits
       its leftover credit (no new quantum).
    2. Ring from the cursor, each class once: no candidate -> skip (an empty
       class's credit drops to 0); credit covers the cost -> serve; else add
       one quantum and serve if it now covers it.
    3. Nobody served: `_fast_forward`.
    """
    count = len(deficits)
    ring = [(cursor + offset) % count for offset in range(count)]
    costs: dict[int, int | None] = {}
    if carry is not None:
        cost = costs[carry] = visit(carry)
        if cost is not None and cost <= deficits[carry]:
            return carry
        if not has_entries(carry):
            deficits[carry] = 0
    for index in ring:
        cost = costs[index] if index == carry else visit(index)
        costs[index] = cost
        if cost is None:
            if not has_entries(index):
                deficits[index] = 0
            continue
        if cost > deficits[index]:
            deficits[index] = saturating_add(deficits[index], quanta[index])
        if cost <= deficits[index]:
            return index
    waiting = {i: c for i, c in sorted(costs.items()) if c is not None}
    return _fast_forward(ring, waiting, deficits, quanta)


def _fast_forward(
    ring: list[int],
    waiting: dict[int, int],
    deficits: list[int],
    quanta: Sequence[int],
) -> int | None:
    """Grant whole rounds to every class with a candidate, then serve one.

    Every class with a candidate gets the same number of rounds -- the fewest
    that let one of them pay -- and the first that can, from the cursor, is
    served; None when no class has a candidate.
    """
    if not waiting:
        return None
    rounds = min(
        -(-saturating_sub(cost, deficits[i]) // quanta[i])
        for i, cost in waiting.items()
    )
    for index in waiting:
        deficits[index] = saturating_add(
            deficits[index], saturating_mul(quanta[index], rounds)
        )
    for index in ring:
        cost = waiting.get(index)
        if cost is not None and cost <= deficits[index]:
            return index
    raise AssertionError("fast-forward granted enough rounds for some class")


def pop_next(
    state: QueueState, dispatch: Dispatch
) -> tuple[QueueState, QueuedItem | None]:
    """Serve one entry by weighted deficit round robin (`drr_choose`).

    Nothing queued: clear the carry, return None. Each class's candidate is
    `class_candidate`, which may block worker lanes on the way.
    """
    _check_live(state)
    if state.pending_count == 0:
        return replace(state, carry=None), None
    classes = list(state.classes)
    found: dict[int, Entry | None] = {}

    def visit(index: int) -> int | None:
        classes[index], candidate = class_candidate(classes[index], index, dispatch)
        found[index] = candidate
        return None if candidate is None else candidate.cost

    deficits = [cls.deficit for cls in classes]
    chosen = drr_choose(
        state.round_cursor,
        state.carry,
        deficits,
        quanta=[config.quantum for config in state.configs],
        visit=visit,
        has_entries=lambda index: bool(classes[index].entries),
    )
    classes = [
        replace(cls, deficit=deficit)
        for cls, deficit in zip(classes, deficits, strict=True)
    ]
    state = replace(state, carry=None)
    entry = None if chosen is None else found[chosen]
    if chosen is None or entry is None:
        return replace(state, classes=tuple(classes)), None
    return _serve(state, classes, chosen, entry)


def retain(state: QueueState, drop: frozenset[int]) -> QueueState:
    """Remove every entry whose payload is in `drop`.

    Only classes that lose an entry change: their counters shrink, blocked
    workers whose lane is now empty are forgotten, and a class left empty
    loses its credit. Cursor and carry stay as they were.
    """
    _check_live(state)
    for payload in sorted(drop):
        _check_range("payload", payload, U64_MAX)
    classes = list(state.classes)
    removed_count = 0
    for index, cls in enumerate(state.classes):
        removed = [entry for entry in cls.entries if entry.payload in drop]
        if not removed:
            continue
        kept = tuple(entry for entry in cls.entries if entry.payload not in drop)
        lanes = {entry.placement for entry in kept}
        classes[index] = ClassState(
            entries=kept,
            blocked=frozenset(w for w in cls.blocked if w in lanes),
            stats=_minus(cls.stats, removed),
            deficit=cls.deficit if kept else 0,
        )
        removed_count += len(removed)
    return replace(
        state,
        classes=tuple(classes),
        pending_count=state.pending_count - removed_count,
    )


def listing(state: QueueState) -> list[QueuedItem]:
    """Every queued entry as callers see it, in `QueuedItem.sort_key` order."""
    items = [
        item_of(index, entry)
        for index, cls in enumerate(state.classes)
        for entry in cls.entries
    ]
    return sorted(items, key=QueuedItem.sort_key)


def drain(state: QueueState) -> tuple[QueueState, list[QueuedItem]]:
    """Hand out every entry once and consume the queue."""
    _check_live(state)
    return replace(state, drained=True), listing(state)


class ModelPolicyQueue:
    """The reference `PolicyQueueApi`: a `QueueState` and the transitions above."""

    def __init__(self, configs: Iterable[ClassConfig]) -> None:
        """Start an empty queue over the profile's classes."""
        self.state = initial_state(configs)

    def class_count(self) -> int:
        """`class_count()`."""
        _check_live(self.state)
        return len(self.state.configs)

    def class_config(self, class_index: int) -> ClassConfig:
        """`class_config(i)`."""
        _check_class(self.state, class_index)
        return self.state.configs[class_index]

    def enqueue(self, op: Enqueue) -> Rejection | None:
        """`enqueue(...)`."""
        self.state, rejection = enqueue(self.state, op)
        return rejection

    def pop_next(self, dispatch: Dispatch) -> QueuedItem | None:
        """`pop_next(pred)`."""
        self.state, popped = pop_next(self.state, dispatch)
        return popped

    def retain(self, drop: frozenset[int]) -> None:
        """`retain(keep)` with `keep = payload not in drop`."""
        self.state = retain(self.state, drop)

    def pending_count(self) -> int:
        """`pending_count()`."""
        _check_live(self.state)
        return self.state.pending_count

    def class_stats(self, class_index: int) -> ClassStats:
        """`class_stats(i)`."""
        _check_class(self.state, class_index)
        return self.state.classes[class_index].stats

    def has_backlog(self, class_index: int) -> bool:
        """`has_backlog(i)`: the class holds an entry in some lane."""
        _check_class(self.state, class_index)
        return bool(self.state.classes[class_index].entries)

    def entries(self) -> list[QueuedItem]:
        """`entries()`, sorted."""
        _check_live(self.state)
        return listing(self.state)

    def drain(self) -> list[QueuedItem]:
        """`drain()`, sorted; the queue is consumed."""
        self.state, items = drain(self.state)
        return items


def _conforms(queue: ModelPolicyQueue) -> PolicyQueueApi:
    """Let mypy prove that the model satisfies `PolicyQueueApi`."""
    return queue
