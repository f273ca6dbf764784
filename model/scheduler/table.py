"""Reference model of `LocalScheduler`: admission, rechecks, due times, cancels.

Written as a specification of what a caller of the public scheduler sees,
with the policy classes of a profile (one FCFS class, or two to four classes
of drawn quanta, queue policies and per-worker limits, every one busy above
its worker's capacity), workers of fixed ids whose only configuration is
their capacity, and requests that each name one worker (pinned to it, or
allowed only it) and one class. Every rule cites the crate (paths under
`src/scheduling/` of dynamo-kv-router 1.6.1). The weighted deficit round
robin across classes is the queue model's (`model.queue.table.drr_choose`,
`served_credit`, `policy_score`, `limit_reached`); this model gives it the
scheduler's candidates (lanes per class, due keys, rechecks).

State (`SchedulerState`, frozen):

* `now_ms` -- the clock, in ms since the scheduler was built.
* `capacities_tokens` -- worker `w`'s `max_num_batched_tokens`.
* `requests` -- every request ever scheduled (its inputs), by id.
* `fates` -- what became of each request (`waiting` while parked).
* `parked` -- the ids of waiting requests, in the order they were parked.
* `booked` -- dispatched requests not yet freed: id -> worker.
* `classes` -- the profile's classes, in order.
* `blocked` -- (class, worker) pairs whose pinned lane failed the dispatch
  test and has not been rechecked since; the lane is skipped until a recheck.
* `available` -- what the availability provider answers (None: no source,
  every worker may be chosen).
* `deadline_origin_ms` -- the queue's deadline origin: when a request with a
  due time was last parked while no parked request had one.
* `received`, `rejected_due` -- per class, `received_total` and
  `rejected_due_time_passed_total`.
* `deficits`, `cursor`, `carry` -- the DRR credit per class, the class where
  the next ring scan starts, the class that spends leftover credit first.

Rules, each with the crate's place:

* Availability: the provider's set is read whenever the scheduler tests or
  selects a worker, and setting it tells the scheduler nothing (no recheck).
  A head whose worker is not available passes the dispatch test, whatever its
  load (queue.rs:1907-1936: `validate_worker_rank` fails for a pinned worker,
  filter.rs:179-195, and no allowed worker is checked for a shared one); it is
  then popped and its selection fails with `NoEndpoints` (queue.rs:1614-1634,
  1736-1743; the crate's own test queue.rs:4397-4402): rejected, not booked,
  and the drain goes on.
* Busy: worker `w` is busy while its active prefill tokens (the `isl_tokens` of
  its booked requests) exceed `busy_threshold_frac * capacity`; the suite uses
  a fraction of 1, so busy means `load > capacity`, and an idle worker is never
  busy, whatever its capacity (policy_config.rs:65-73, `worker_is_busy`;
  queue.rs:1907-1936).
* Classes: the classifier names each request's class (`f{i}`, resolved
  strictly, queue.rs:818-826); its counters are that class's. A class with a
  zero per-worker limit never queues (policy_config.rs:57-61): a request of
  it is admitted at once (queue.rs:1221-1242) unless the class has a backlog
  or its worker fails the dispatch test, and is then refused by the limit.
  Otherwise the class's limits are checked against its waiting requests
  before the add (policy_queue.rs:950-983, scaled by the worker count):
  a refused request is rejected with `QueueRejected`.
* Order inside a class's lane: higher strict priority, then smaller due key,
  then higher policy score (FCFS: earlier arrival; WSPT: fewer prompt tokens),
  then the order they were scheduled (policy_queue.rs:101-115
  `cmp_queue_order`). The due key is the due time's distance from the
  deadline origin, capped (policy_queue.rs:631-639): every due time at least
  `DUE_KEY_CAP_MS` after the origin shares the cap, and a request without a
  due time sorts after all of them. The origin moves to now when a request with
  a due time is parked while none with one waits (:631-633).
* Lanes: a pinned request waits in its worker's lane, an unpinned one in the
  shared lane, of its class (queue.rs:1246-1248). A class's candidate is the
  best of its shared lane's head and its unblocked lanes' heads, among those
  whose worker is not busy (policy_queue.rs:325-416); dispatch serves one
  candidate at a time by weighted deficit round robin across the classes
  (policy_queue.rs:760-862, `drr_choose`), charging the popped request's cost
  (its prompt tokens, at least one) whatever becomes of it. The shared head blocks the
  shared lane while its worker is busy (head-of-line, queue.rs:1496-1498); a
  lane whose head's worker is busy is blocked (policy_queue.rs:392-397) until
  a recheck: of its worker (`recheck_worker`, policy_queue.rs:445) or of all
  (`recheck_all_workers`, policy_queue.rs:458).
* Rechecks: `free` of a booking rechecks its worker (local.rs:645-656,
  queue.rs:1449-1457 with 1424-1447); `update_queue` (local.rs:758), a changed
  worker configuration (local.rs:190-231: an unchanged one does nothing) and
  the due-time timer (queue.rs:1079-1104) recheck every worker
  (queue.rs:1459-1466); a new request rechecks nothing (queue.rs:1470-1477).
* Due times: a request whose due time is at or before `now` is rejected with
  `DeadlineExceeded`, counted once in `rejected_due_time_passed_total`: at
  `schedule` (queue.rs:1196-1202), and while parked at exactly its due time,
  by the actor's timer (queue.rs:1282-1289, policy_queue.rs:682-708: the range
  is inclusive). The boundary: due exactly now is rejected. A due time past
  the cap is rejected when the clock reaches the cap (`expiry_ms`): the timer
  sleeps until the capped key's instant and `now`'s key is capped alike.
* Cancellation, at each point a caller can reach (docs/scheduler.md lists
  them with the crate's lines):
  - while classifying: nothing reaches the queue; not counted.
  - at admission (enqueue sent, not acknowledged): the actor handles the
    request as any other (counted; a due time passed is counted as rejected;
    a limit refuses it) but with its response channel closed: popped at once,
    it is not booked (`book_and_respond`, queue.rs:1808-1814), though its pop
    charged its class's credit; parked, the lease's drop removes it as a
    cancel of a waiting request does.
  - waiting: the lease's drop removes it (queue.rs:451-466; `drain_cleanup`,
    queue.rs:1291-1388). Only if it was the head of its lane (blocked lanes
    included) and some lane's head then passes the dispatch test
    (`has_dispatchable_ready_head`, queue.rs:1384-1414, over every class's
    shared head and pinned lanes' heads) is every lane rechecked and the queue
    drained (`handle_update`); otherwise nothing else happens.
  - at booking (booked, response not taken): once the drain that booked it
    ends, its booking is freed (the lease's drop, `drain_cleanup`'s booking
    branch, queue.rs:1308-1318) and every lane is rechecked (queue.rs:1387,
    `made_ready`): its capacity returns.
  - after the end: nothing; the booking, if any, stays until `free`.
* Counters: every `schedule` that reaches the actor counts in its class's
  `received_total` (queue.rs:1192-1194);
  `pending_count` and `pending_isl_tokens` (global and per class) sum the
  parked requests (queue.rs:1258-1262, 1416-1421); cached tokens are 0 here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from model.errors import SchedulerError
from model.queue.table import drr_choose, limit_reached, policy_score, served_credit
from model.queue.types import ClassStats as QueueClassStats
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
from model.scheduler.types import (
    DEADLINE_EXCEEDED,
    DUE_KEY_CAP_MS,
    NO_ENDPOINTS,
    NOT_FOUND,
    QUEUE_REJECTED,
    UNKNOWN_REQUEST,
    WAITING,
    ClassStats,
    Fate,
    Request,
    SchedulerConfig,
    never_queues,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from model.queue.types import ClassConfig

NO_DUE_KEY_MS = DUE_KEY_CAP_MS + 1
"""Sorts after every due key: a request without one is served after them."""

Lane = tuple[int, int | None]
"""A class and a worker (None: the class's shared lane)."""


@dataclass(frozen=True)
class SchedulerState:
    """The scheduler as a caller sees it (see the module docstring)."""

    now_ms: int
    capacities_tokens: tuple[int, ...]
    classes: tuple[ClassConfig, ...] = ()
    requests: Mapping[str, Request] = field(default_factory=dict)
    fates: Mapping[str, Fate] = field(default_factory=dict)
    parked: tuple[str, ...] = ()
    booked: Mapping[str, int] = field(default_factory=dict)
    blocked: frozenset[tuple[int, int]] = frozenset()
    available: frozenset[int] | None = None
    deadline_origin_ms: int = 0
    received: tuple[int, ...] = ()
    rejected_due: tuple[int, ...] = ()
    deficits: tuple[int, ...] = ()
    cursor: int = 0
    carry: int | None = None

    @property
    def received_total(self) -> int:
        """`received_total` summed over the classes."""
        return sum(self.received)

    @property
    def rejected_due_time_passed_total(self) -> int:
        """`rejected_due_time_passed_total` summed over the classes."""
        return sum(self.rejected_due)

    @property
    def blocked_workers(self) -> frozenset[int]:
        """Workers with a blocked pinned lane in some class."""
        return frozenset(worker for _, worker in self.blocked)

    def load_tokens(self, worker: int) -> int:
        """Active prefill tokens of `worker`: its booked requests' `isl_tokens`."""
        return sum(
            self.requests[rid].isl_tokens
            for rid, booked_on in self.booked.items()
            if booked_on == worker
        )

    def busy(self, worker: int) -> bool:
        """`worker` is busy: its load exceeds its capacity."""
        return self.load_tokens(worker) > self.capacities_tokens[worker]

    def is_available(self, worker: int) -> bool:
        """The availability provider lets `worker` be chosen."""
        return self.available is None or worker in self.available

    def dispatchable(self, worker: int) -> bool:
        """A head for `worker` passes the dispatch test: not busy, or not available."""
        return not self.busy(worker) or not self.is_available(worker)

    def due_key_ms(self, request_id: str) -> int:
        """The due time's distance from the deadline origin, capped (none: last)."""
        due_ms = self.requests[request_id].due_ms
        if due_ms is None:
            return NO_DUE_KEY_MS
        return min(max(due_ms - self.deadline_origin_ms, 0), DUE_KEY_CAP_MS)

    def expiry_ms(self, request_id: str) -> int | None:
        """When the actor's timer rejects the request: the origin plus its key.

        That is its due time, or, for a due time past the cap, the cap's instant
        (policy_queue.rs:543-545 and 682-689: the key of `now` is capped alike).
        """
        if self.requests[request_id].due_ms is None:
            return None
        return self.deadline_origin_ms + self.due_key_ms(request_id)

    def score(self, request_id: str) -> float:
        """The policy score fixed at enqueue (no priority jump): higher first."""
        request = self.requests[request_id]
        return policy_score(
            self.classes[request.class_index].queue_policy,
            max(1, request.isl_tokens),
            request.scheduled_at_ms / 1000,
            0.0,
        )

    def order_key(self, request_id: str) -> tuple[int, int, float, int]:
        """Serve order inside a lane, smallest first: strict, due key, score, seq."""
        return (
            -self.requests[request_id].strict_priority,
            self.due_key_ms(request_id),
            -self.score(request_id),
            self.parked.index(request_id),
        )

    def has_due_parked(self) -> bool:
        """Some waiting request has a due time."""
        return any(self.requests[rid].due_ms is not None for rid in self.parked)

    def lane_of(self, request_id: str) -> Lane:
        """The lane a request waits in: its class, and its worker if pinned."""
        request = self.requests[request_id]
        return (request.class_index, request.worker if request.pinned else None)

    def lane(self, class_index: int, worker: int | None) -> list[str]:
        """The waiting requests of one lane of one class, in serve order."""
        members = [
            rid for rid in self.parked if self.lane_of(rid) == (class_index, worker)
        ]
        return sorted(members, key=self.order_key)

    def lane_workers(self, class_index: int) -> list[int]:
        """Workers with a non-empty pinned lane in the class, sorted."""
        return sorted(
            {
                worker
                for rid in self.parked
                if (lane := self.lane_of(rid))[0] == class_index
                and (worker := lane[1]) is not None
            }
        )

    def lanes(self) -> list[Lane]:
        """Every non-empty lane, sorted (shared lanes first in each class)."""
        return sorted(
            {self.lane_of(rid) for rid in self.parked},
            key=lambda lane: (lane[0], -1 if lane[1] is None else lane[1]),
        )

    def class_waiting(self, class_index: int) -> list[str]:
        """The waiting requests of one class, in parked order."""
        return [
            rid for rid in self.parked if self.requests[rid].class_index == class_index
        ]

    def stats(self) -> tuple[ClassStats, ...]:
        """`class_queue_stats(i)` of every class, in order."""
        return tuple(
            ClassStats(
                pending_count=len(waiting := self.class_waiting(index)),
                pending_isl_tokens=sum(
                    self.requests[rid].isl_tokens for rid in waiting
                ),
                pending_cached_tokens=0,
                received_total=self.received[index],
                rejected_due_time_passed_total=self.rejected_due[index],
            )
            for index in range(len(self.classes))
        )

    def check_valid(self) -> None:
        """Assert the model's internal invariants, one per line."""
        # every parked request is waiting, and every waiting request is parked
        assert sorted(self.parked) == sorted(
            rid for rid, fate in self.fates.items() if fate.kind == "waiting"
        )
        # every booking belongs to a dispatched request
        assert all(self.fates[rid].kind == "dispatched" for rid in self.booked)
        # no caller that leaves at booking holds a booking between steps
        assert all(self.requests[rid].leaves != "booking" for rid in self.booked)
        # a blocked lane has requests
        assert all((c, w) in self.lanes() for c, w in self.blocked)
        # no class is carried between calls: every drain ends with an empty pop,
        # which takes the carry, or with an empty queue (policy_queue.rs:779-784)
        assert self.carry is None
        # an empty class has no credit
        assert all(
            self.class_waiting(c) or self.deficits[c] == 0
            for c in range(len(self.classes))
        )
        # the clock never passes a waiting request's expiry
        expiries_ms = [self.expiry_ms(rid) for rid in self.parked]
        assert all(at_ms is None or at_ms > self.now_ms for at_ms in expiries_ms)


def initial_state(config: SchedulerConfig) -> SchedulerState:
    """A fresh scheduler: no request, the clock at 0, no credit."""
    classes = config.profile()
    zeros = tuple(0 for _ in classes)
    return SchedulerState(
        now_ms=0,
        capacities_tokens=config.capacities_tokens,
        classes=classes,
        received=zeros,
        rejected_due=zeros,
        deficits=zeros,
    )


def _bump(counts: tuple[int, ...], index: int) -> tuple[int, ...]:
    return tuple(count + (i == index) for i, count in enumerate(counts))


def _seal(state: SchedulerState, request_id: str, fate: Fate) -> SchedulerState:
    fates = dict(state.fates)
    fates[request_id] = fate
    return replace(
        state,
        fates=fates,
        parked=tuple(rid for rid in state.parked if rid != request_id),
    )


def _class_candidate(
    state: SchedulerState, class_index: int, blocked: set[tuple[int, int]]
) -> str | None:
    """The request a class would serve; failing lane heads join `blocked`.

    policy_queue.rs:325-416: the shared head is tested on every call; without
    pinned lanes it is the only candidate. Otherwise the unblocked lanes' heads
    are tested best first: one that fails blocks its lane; the first that passes
    competes with the shared head (if it passed), which wins only if it orders
    strictly first.
    """
    shared_lane = state.lane(class_index, None)
    shared = next(
        (
            rid
            for rid in shared_lane[:1]
            if state.dispatchable(state.requests[rid].worker)
        ),
        None,
    )
    heads = sorted(
        (
            state.lane(class_index, worker)[0]
            for worker in state.lane_workers(class_index)
            if (class_index, worker) not in blocked
        ),
        key=state.order_key,
    )
    for head in heads:
        worker = state.requests[head].worker
        if state.dispatchable(worker):
            if shared is not None and state.order_key(shared) < state.order_key(head):
                return shared
            return head
        blocked.add((class_index, worker))
    return shared


def pop_next(state: SchedulerState) -> tuple[SchedulerState, str | None]:
    """One `PolicyQueue::pop_next` over the parked requests (None: nothing ready).

    The class is chosen by `drr_choose`; the popped request leaves `parked`
    (its fate is the caller's to seal) and its class pays its cost.
    """
    if not state.parked:
        return replace(state, carry=None), None
    blocked = set(state.blocked)
    found: dict[int, str | None] = {}

    def visit(class_index: int) -> int | None:
        candidate = found[class_index] = _class_candidate(state, class_index, blocked)
        if candidate is None:
            return None
        return max(1, state.requests[candidate].isl_tokens)

    deficits = list(state.deficits)
    chosen = drr_choose(
        state.cursor,
        state.carry,
        deficits,
        quanta=[config.quantum for config in state.classes],
        visit=visit,
        has_entries=lambda class_index: bool(state.class_waiting(class_index)),
    )
    state = replace(
        state, blocked=frozenset(blocked), deficits=tuple(deficits), carry=None
    )
    request_id = None if chosen is None else found[chosen]
    if chosen is None or request_id is None:
        return state, None
    parked = tuple(rid for rid in state.parked if rid != request_id)
    left_empty = not any(state.requests[rid].class_index == chosen for rid in parked)
    cost = max(1, state.requests[request_id].isl_tokens)
    deficit, carried = served_credit(deficits[chosen], cost, left_empty)
    deficits[chosen] = deficit
    return (
        replace(
            state,
            parked=parked,
            deficits=tuple(deficits),
            cursor=(chosen + 1) % len(state.classes),
            carry=chosen if carried else None,
        ),
        request_id,
    )


def _any_head_dispatchable(state: SchedulerState) -> bool:
    """Some lane's head passes the dispatch test, blocked lanes included.

    queue.rs:1390-1414 (`has_dispatchable_ready_head` over `any_ready_head`,
    policy_queue.rs:529-541: every class's shared head and pinned lanes' heads).
    """
    return any(
        state.dispatchable(state.requests[state.lane(*lane)[0]].worker)
        for lane in state.lanes()
    )


def _admit(state: SchedulerState, request_id: str, *, gone: bool) -> SchedulerState:
    """`admit_one` for a request out of the queue (or admitted directly).

    Selection fails with `NoEndpoints` when its worker is not available
    (queue.rs:1736-1743); a caller gone before the booking is not booked
    (queue.rs:1808-1814); otherwise it is booked on its worker.
    """
    worker = state.requests[request_id].worker
    if gone:
        return _seal(state, request_id, Fate("cancelled", None, state.now_ms))
    if not state.is_available(worker):
        return _seal(state, request_id, Fate("rejected", NO_ENDPOINTS, state.now_ms))
    state = _seal(state, request_id, Fate("dispatched", str(worker), state.now_ms))
    return replace(state, booked={**state.booked, request_id: worker})


def drain(state: SchedulerState, gone: frozenset[str] = frozenset()) -> SchedulerState:
    """Pop and admit while some class has a candidate; then release leavers.

    queue.rs:1479-1594 (`drain_ready`). The last, empty pop has visited every
    class, so every lane whose head fails the test is blocked by then. Callers
    that leave at booking and were booked go away once the drain is over
    (`release_leavers`).
    """
    for _ in range(len(state.parked) + 1):
        state, request_id = pop_next(state)
        if request_id is None:
            return release_leavers(state)
        state = _admit(state, request_id, gone=request_id in gone)
    raise AssertionError("drain dispatched more requests than were parked")


def release_leavers(state: SchedulerState) -> SchedulerState:
    """Free the bookings of callers that leave at booking; recheck if any.

    The lease's drop queues the booking for the actor's cleanup
    (queue.rs:451-466), which frees it (queue.rs:1308-1318) and, the release
    having applied, runs `handle_update` (queue.rs:1387): expire, recheck every
    lane, drain.
    """
    leavers = sorted(
        rid for rid in state.booked if state.requests[rid].leaves == "booking"
    )
    if not leavers:
        return state
    fates = dict(state.fates)
    for rid in leavers:
        fates[rid] = Fate("cancelled", None, state.now_ms)
    booked = {rid: w for rid, w in state.booked.items() if rid not in leavers}
    return recheck_all(replace(state, fates=fates, booked=booked))


def _forget_empty_lanes(state: SchedulerState) -> SchedulerState:
    """Blocked lanes that emptied are forgotten; an emptied class loses its credit.

    policy_queue.rs:711-778 (`take_if_entry_in_class`: `rebuild_worker_heads`
    and the deficit reset).
    """
    lanes = set(state.lanes())
    deficits = tuple(
        deficit if state.class_waiting(c) else 0
        for c, deficit in enumerate(state.deficits)
    )
    return replace(
        state,
        blocked=frozenset(lane for lane in state.blocked if lane in lanes),
        deficits=deficits,
    )


def reject_expired(state: SchedulerState) -> SchedulerState:
    """Reject every parked request whose expiry is at or before now.

    queue.rs:1282-1289 and policy_queue.rs:682-708 (the range is inclusive; the
    key of `now` is capped as the due keys are, :686-689); each counts in its
    class.
    """
    for request_id in sorted(state.parked, key=state.order_key):
        expiry_ms = state.expiry_ms(request_id)
        if expiry_ms is not None and expiry_ms <= state.now_ms:
            fate = Fate("rejected", DEADLINE_EXCEEDED, state.now_ms)
            class_index = state.requests[request_id].class_index
            state = replace(
                _seal(state, request_id, fate),
                rejected_due=_bump(state.rejected_due, class_index),
            )
    return _forget_empty_lanes(state)


def recheck_all(state: SchedulerState) -> SchedulerState:
    """Expire, unblock every lane, dispatch (`handle_update`, queue.rs:1459-1466)."""
    return drain(replace(reject_expired(state), blocked=frozenset()))


def _queue_stats(state: SchedulerState, class_index: int) -> QueueClassStats:
    waiting = state.class_waiting(class_index)
    return QueueClassStats(
        requests=len(waiting),
        raw_isl_tokens=sum(state.requests[rid].isl_tokens for rid in waiting),
        cached_tokens=0,
    )


def schedule(state: SchedulerState, op: Schedule) -> SchedulerState:
    """A caller schedules a request: classify, reject, admit, or park and drain.

    local.rs:332-360 (classify, then enqueue); queue.rs:1184-1270
    (`handle_enqueue`: counted in its class, due check at :1196-1202, the
    direct admission of a class that never queues at :1221-1242, the limits
    at enqueue) and 1470-1477 (`handle_enqueued`: no lane rechecked).
    """
    request = Request(
        request_id=op.request_id,
        worker=op.worker,
        pinned=op.pinned,
        isl_tokens=op.isl_tokens,
        due_ms=op.due_ms,
        scheduled_at_ms=state.now_ms,
        class_index=op.class_index,
        strict_priority=op.strict_priority,
        leaves=op.leaves,
    )
    state = replace(state, requests={**state.requests, op.request_id: request})
    gone = op.leaves == "admission"
    cancelled = Fate("cancelled", None, state.now_ms)
    if op.leaves == "classifying":
        return _seal(state, op.request_id, cancelled)
    class_index = op.class_index
    state = replace(state, received=_bump(state.received, class_index))
    if op.due_ms is not None and op.due_ms <= state.now_ms:
        fate = cancelled if gone else Fate("rejected", DEADLINE_EXCEEDED, state.now_ms)
        return replace(
            _seal(state, op.request_id, fate),
            rejected_due=_bump(state.rejected_due, class_index),
        )
    config = state.classes[class_index]
    if never_queues(config) and not (
        state.class_waiting(class_index) or not state.dispatchable(op.worker)
    ):
        state = _admit(state, op.request_id, gone=gone)
        if op.request_id in state.booked:
            return drain(reject_expired(state))
        return state
    worker_count = len(state.capacities_tokens)
    if limit_reached(config, _queue_stats(state, class_index), worker_count):
        fate = cancelled if gone else Fate("rejected", QUEUE_REJECTED, state.now_ms)
        return _seal(state, op.request_id, fate)
    if op.due_ms is not None and not state.has_due_parked():
        state = replace(state, deadline_origin_ms=state.now_ms)
    state = replace(
        state,
        fates={**state.fates, op.request_id: WAITING},
        parked=(*state.parked, op.request_id),
    )
    leaving = frozenset({op.request_id}) if gone else frozenset()
    state = drain(reject_expired(state), leaving)
    if gone and op.request_id in state.parked:
        state, _ = cancel(state, op.request_id)
    return state


def free(state: SchedulerState, request_id: str) -> tuple[SchedulerState, str | None]:
    """Release a booking and recheck its worker; an id without one is not found.

    local.rs:645-656 (`free`), queue.rs:1449-1457 with 1424-1447
    (`recheck_worker` in every class, policy_queue.rs:445).
    """
    if request_id not in state.booked:
        return state, NOT_FOUND
    worker = state.booked[request_id]
    booked = {rid: w for rid, w in state.booked.items() if rid != request_id}
    state = reject_expired(replace(state, booked=booked))
    unblocked = frozenset(lane for lane in state.blocked if lane[1] != worker)
    return drain(replace(state, blocked=unblocked)), None


def set_capacity(state: SchedulerState, worker: int, tokens: int) -> SchedulerState:
    """A changed capacity rechecks every lane; an unchanged one does nothing.

    local.rs:141-156 (`reconcile_worker_configs`) and 190-231 (the monitor).
    """
    if state.capacities_tokens[worker] == tokens:
        return state
    capacities = list(state.capacities_tokens)
    capacities[worker] = tokens
    return recheck_all(replace(state, capacities_tokens=tuple(capacities)))


def advance(state: SchedulerState, delta_ms: int) -> SchedulerState:
    """Move the clock; at each expiry on the way, expire and recheck all.

    The actor sleeps until the earliest due key's instant (queue.rs:1079-1104,
    policy_queue.rs:543-545).
    """
    target_ms = state.now_ms + delta_ms
    for _ in range(len(state.parked) + 1):
        due_times = [
            at_ms
            for rid in state.parked
            if (at_ms := state.expiry_ms(rid)) is not None and at_ms <= target_ms
        ]
        if not due_times:
            return replace(state, now_ms=target_ms)
        state = recheck_all(replace(state, now_ms=min(due_times)))
    raise AssertionError("more due times than parked requests")


def cancel(state: SchedulerState, request_id: str) -> tuple[SchedulerState, bool]:
    """The caller goes away: a parked request is removed; an ended one stays.

    queue.rs:451-466 (the lease's drop), 1291-1388 (`drain_cleanup`).
    """
    if state.fates[request_id].kind != "waiting":
        return state, False
    was_head = state.lane(*state.lane_of(request_id))[0] == request_id
    state = _forget_empty_lanes(
        _seal(state, request_id, Fate("cancelled", None, state.now_ms))
    )
    if was_head and _any_head_dispatchable(state):
        return recheck_all(state), True
    return state, True


def apply(
    state: SchedulerState, op: SchedulerOp
) -> tuple[SchedulerState, SchedulerOutcome]:
    """One operation on the model state: the new state and the call's outcome."""
    match op:
        case Schedule():
            return schedule(state, op), SchedulerOutcome()
        case Free(request_id=request_id):
            state, error = free(state, request_id)
            return state, SchedulerOutcome(error=error)
        case SetCapacity(worker=worker, tokens=tokens):
            return set_capacity(state, worker, tokens), SchedulerOutcome()
        case UpdateQueue():
            return recheck_all(state), SchedulerOutcome()
        case Advance(delta_ms=delta_ms):
            return advance(state, delta_ms), SchedulerOutcome()
        case Cancel(request_id=request_id) if request_id not in state.requests:
            return state, SchedulerOutcome(error=UNKNOWN_REQUEST)
        case Cancel(request_id=request_id):
            state, was_waiting = cancel(state, request_id)
            return state, SchedulerOutcome(value=was_waiting)
        case SetAvailable(workers=workers):
            return replace(state, available=workers), SchedulerOutcome()


class ModelScheduler:
    """The reference scheduler behind `SchedulerApi`: one method per operation."""

    def __init__(self, config: SchedulerConfig) -> None:
        """A fresh scheduler over `config`'s workers."""
        self.state = initial_state(config)

    def _apply(self, op: SchedulerOp) -> SchedulerOutcome:
        self.state, outcome = apply(self.state, op)
        self.state.check_valid()
        return outcome

    def schedule(self, op: Schedule) -> None:
        """`Schedule`."""
        self._apply(op)

    def free(self, request_id: str) -> None:
        """`Free`; SchedulerError(`not_found`) for an id without a booking."""
        error = self._apply(Free(request_id)).error
        if error is not None:
            raise SchedulerError(error)

    def set_capacity(self, worker: int, tokens: int) -> None:
        """`SetCapacity`."""
        self._apply(SetCapacity(worker, tokens))

    def update_queue(self) -> None:
        """`UpdateQueue`."""
        self._apply(UpdateQueue())

    def advance(self, delta_ms: int) -> None:
        """`Advance`."""
        self._apply(Advance(delta_ms))

    def set_available(self, workers: frozenset[int] | None) -> None:
        """`SetAvailable`."""
        self._apply(SetAvailable(workers))

    def cancel(self, request_id: str) -> bool:
        """`Cancel`: whether the caller was still waiting."""
        outcome = self._apply(Cancel(request_id))
        if outcome.error is not None:
            raise SchedulerError(outcome.error)
        return bool(outcome.value)

    def now_ms(self) -> int:
        """The clock."""
        return self.state.now_ms

    def fate(self, request_id: str) -> Fate:
        """What became of `request_id`."""
        return self.state.fates[request_id]

    def has_request(self, request_id: str) -> bool:
        """Whether `request_id` holds a booking (dispatched, not freed)."""
        return request_id in self.state.booked

    def pending_count(self) -> int:
        """`pending_count()`."""
        return len(self.state.parked)

    def pending_isl_tokens(self) -> int:
        """`pending_isl_tokens()`."""
        return sum(self.state.requests[rid].isl_tokens for rid in self.state.parked)

    def class_stats(self) -> tuple[ClassStats, ...]:
        """`class_queue_stats(i)` of every class of the profile."""
        return self.state.stats()

    def active_requests(self) -> list[tuple[int, int]]:
        """Booked requests per worker, for every worker, by worker id."""
        workers = range(len(self.state.capacities_tokens))
        return [(w, list(self.state.booked.values()).count(w)) for w in workers]


def parked_in_order(state: SchedulerState) -> Iterable[str]:
    """The parked ids by class, then in serve order inside the class (for traces)."""
    return sorted(
        state.parked,
        key=lambda rid: (state.requests[rid].class_index, *state.order_key(rid)),
    )
