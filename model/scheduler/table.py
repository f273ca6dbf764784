"""Reference model of `LocalScheduler`: admission, rechecks, due times, cancels.

Written as a specification of what a caller of the public scheduler sees,
with one policy class (FCFS), workers of fixed ids whose only configuration is
their capacity, and requests that each name one worker (pinned to it, or
allowed only it). Every rule cites the crate (paths under
`src/scheduling/` of dynamo-kv-router 1.6.1). It does not reuse
`model.queue`: that model has no due times, and with one class the DRR credit
that it models never changes which entry is served.

State (`SchedulerState`, frozen):

* `now_ms` -- the clock, in ms since the scheduler was built.
* `capacities_tokens` -- worker `w`'s `max_num_batched_tokens`.
* `requests` -- every request ever scheduled (its inputs), by id.
* `fates` -- what became of each request (`waiting` while parked).
* `parked` -- the ids of waiting requests, in the order they were parked.
* `booked` -- dispatched requests not yet freed: id -> worker.
* `blocked` -- workers whose pinned lane failed the dispatch test and has not
  been rechecked since; their lane is skipped until a recheck.
* `available` -- what the availability provider answers (None: no source,
  every worker may be chosen).
* `deadline_origin_ms` -- the queue's deadline origin: when a request with a
  due time was last parked while no parked request had one.
* `received_total`, `rejected_due_time_passed_total` -- the class counters.

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
* Order: waiting requests are served by due key, then in the order they were
  scheduled (policy_queue.rs:101-115 `cmp_queue_order`: strict priority, due
  key, FCFS score, sequence). The due key is the due time's distance from the
  deadline origin, capped (policy_queue.rs:631-639): every due time at least
  `DUE_KEY_CAP_MS` after the origin shares the cap, and a request without a
  due time sorts after all of them. The origin moves to now when a request with
  a due time is parked while none with one waits (:631-633).
* Lanes: a pinned request waits in its worker's lane, an unpinned one in the
  shared lane (queue.rs:1246-1248). Dispatch serves, one at a time, the best
  of the shared lane's head and the heads of unblocked lanes, among those whose
  worker is not busy (policy_queue.rs:325-416). The shared head blocks the
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
* Cancellation: a caller that goes away while its request is parked removes
  it (its lease's drop, queue.rs:451-466; `drain_cleanup`, queue.rs:1291-1388).
  Only if it was the head of its lane (blocked lanes included) and some lane's
  head then passes the dispatch test (`has_dispatchable_ready_head`,
  queue.rs:1384-1414, over the shared head and every pinned lane's head) is
  every lane rechecked and the queue drained (`handle_update`); otherwise
  nothing else happens. A caller whose request already ended cancels nothing.
* Counters: every `schedule` counts in `received_total` (queue.rs:1192-1194);
  `pending_count` and `pending_isl_tokens` (global and per class) sum the
  parked requests (queue.rs:1258-1262, 1416-1421); cached tokens are 0 here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from model.errors import SchedulerError
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
    UNKNOWN_REQUEST,
    WAITING,
    ClassStats,
    Fate,
    Request,
    SchedulerConfig,
)

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

NO_DUE_KEY_MS = DUE_KEY_CAP_MS + 1
"""Sorts after every due key: a request without one is served after them."""


@dataclass(frozen=True)
class SchedulerState:
    """The scheduler as a caller sees it (see the module docstring)."""

    now_ms: int
    capacities_tokens: tuple[int, ...]
    requests: Mapping[str, Request] = field(default_factory=dict)
    fates: Mapping[str, Fate] = field(default_factory=dict)
    parked: tuple[str, ...] = ()
    booked: Mapping[str, int] = field(default_factory=dict)
    blocked: frozenset[int] = frozenset()
    available: frozenset[int] | None = None
    deadline_origin_ms: int = 0
    received_total: int = 0
    rejected_due_time_passed_total: int = 0

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

    def order_key(self, request_id: str) -> tuple[int, int]:
        """Serve order: smaller due key first (none last), then parked order."""
        return (self.due_key_ms(request_id), self.parked.index(request_id))

    def has_due_parked(self) -> bool:
        """Some waiting request has a due time."""
        return any(self.requests[rid].due_ms is not None for rid in self.parked)

    def lane(self, worker: int | None) -> list[str]:
        """The waiting requests of a worker's pinned lane (None: shared), in order."""
        members = [
            rid
            for rid in self.parked
            if (self.requests[rid].worker if self.requests[rid].pinned else None)
            == worker
        ]
        return sorted(members, key=self.order_key)

    def lane_workers(self) -> list[int]:
        """Workers with a non-empty pinned lane, sorted."""
        return sorted(
            {
                self.requests[rid].worker
                for rid in self.parked
                if self.requests[rid].pinned
            }
        )

    def stats(self) -> ClassStats:
        """`class_queue_stats(0)`."""
        return ClassStats(
            pending_count=len(self.parked),
            pending_isl_tokens=sum(
                self.requests[rid].isl_tokens for rid in self.parked
            ),
            pending_cached_tokens=0,
            received_total=self.received_total,
            rejected_due_time_passed_total=self.rejected_due_time_passed_total,
        )

    def check_valid(self) -> None:
        """Assert the model's internal invariants, one per line."""
        # every parked request is waiting, and every waiting request is parked
        assert sorted(self.parked) == sorted(
            rid for rid, fate in self.fates.items() if fate.kind == "waiting"
        )
        # every booking belongs to a dispatched request
        assert all(self.fates[rid].kind == "dispatched" for rid in self.booked)
        # a blocked worker has a pinned lane
        assert self.blocked <= set(self.lane_workers())
        # the clock never passes a waiting request's expiry
        expiries_ms = [self.expiry_ms(rid) for rid in self.parked]
        assert all(at_ms is None or at_ms > self.now_ms for at_ms in expiries_ms)


def initial_state(config: SchedulerConfig) -> SchedulerState:
    """A fresh scheduler: no request, the clock at 0."""
    return SchedulerState(now_ms=0, capacities_tokens=config.capacities_tokens)


def _seal(state: SchedulerState, request_id: str, fate: Fate) -> SchedulerState:
    fates = dict(state.fates)
    fates[request_id] = fate
    return replace(
        state,
        fates=fates,
        parked=tuple(rid for rid in state.parked if rid != request_id),
    )


def _next_dispatch(state: SchedulerState) -> str | None:
    """The request dispatch serves next, or None when every head waits.

    The best (`order_key`) of the shared head and the unblocked lane heads that
    pass the dispatch test (policy_queue.rs:325-416; queue.rs:1494-1509).
    """
    candidates = [state.lane(None)[:1]]
    candidates += [
        state.lane(worker)[:1]
        for worker in state.lane_workers()
        if worker not in state.blocked
    ]
    ready = [
        heads[0]
        for heads in candidates
        if heads and state.dispatchable(state.requests[heads[0]].worker)
    ]
    return min(ready, key=state.order_key) if ready else None


def _any_head_dispatchable(state: SchedulerState) -> bool:
    """Some lane's head passes the dispatch test, blocked lanes included.

    queue.rs:1390-1414 (`has_dispatchable_ready_head` over `any_ready_head`,
    policy_queue.rs:529-541: the shared head and every pinned lane's head).
    """
    lanes = [state.lane(None)] + [state.lane(w) for w in state.lane_workers()]
    return any(
        lane and state.dispatchable(state.requests[lane[0]].worker) for lane in lanes
    )


def drain(state: SchedulerState) -> SchedulerState:
    """Pop in order while some head passes the test; then block the other lanes.

    queue.rs:1479-1594 (`drain_ready`): a popped request whose worker is
    available is booked on it; one whose worker is not is rejected with
    `NoEndpoints` (queue.rs:1736-1743). A failing lane head is blocked
    (policy_queue.rs:392-397).
    """
    for _ in range(len(state.parked) + 1):
        request_id = _next_dispatch(state)
        if request_id is None:
            failing = {w for w in state.lane_workers() if not state.dispatchable(w)}
            return replace(state, blocked=state.blocked | failing)
        worker = state.requests[request_id].worker
        if not state.is_available(worker):
            fate = Fate("rejected", NO_ENDPOINTS, state.now_ms)
            state = _seal(state, request_id, fate)
            continue
        state = _seal(state, request_id, Fate("dispatched", str(worker), state.now_ms))
        state = replace(state, booked={**state.booked, request_id: worker})
    raise AssertionError("drain dispatched more requests than were parked")


def _forget_empty_lanes(state: SchedulerState) -> SchedulerState:
    return replace(state, blocked=state.blocked & set(state.lane_workers()))


def reject_expired(state: SchedulerState) -> SchedulerState:
    """Reject every parked request whose expiry is at or before now.

    queue.rs:1282-1289 and policy_queue.rs:682-708 (the range is inclusive; the
    key of `now` is capped as the due keys are, :686-689).
    """
    for request_id in sorted(state.parked, key=state.order_key):
        expiry_ms = state.expiry_ms(request_id)
        if expiry_ms is not None and expiry_ms <= state.now_ms:
            fate = Fate("rejected", DEADLINE_EXCEEDED, state.now_ms)
            state = replace(
                _seal(state, request_id, fate),
                rejected_due_time_passed_total=state.rejected_due_time_passed_total + 1,
            )
    return _forget_empty_lanes(state)


def recheck_all(state: SchedulerState) -> SchedulerState:
    """Expire, unblock every lane, dispatch (`handle_update`, queue.rs:1459-1466)."""
    return drain(replace(reject_expired(state), blocked=frozenset()))


def schedule(state: SchedulerState, op: Schedule) -> SchedulerState:
    """A caller schedules a request: reject it if due, else park it and dispatch.

    queue.rs:1184-1270 (`handle_enqueue`: counted, due check at :1196-1202) and
    1470-1477 (`handle_enqueued`: no lane rechecked).
    """
    request = Request(
        request_id=op.request_id,
        worker=op.worker,
        pinned=op.pinned,
        isl_tokens=op.isl_tokens,
        due_ms=op.due_ms,
        scheduled_at_ms=state.now_ms,
    )
    state = replace(
        state,
        requests={**state.requests, op.request_id: request},
        received_total=state.received_total + 1,
    )
    if op.due_ms is not None and op.due_ms <= state.now_ms:
        fate = Fate("rejected", DEADLINE_EXCEEDED, state.now_ms)
        return replace(
            _seal(state, op.request_id, fate),
            rejected_due_time_passed_total=state.rejected_due_time_passed_total + 1,
        )
    if op.due_ms is not None and not state.has_due_parked():
        state = replace(state, deadline_origin_ms=state.now_ms)
    state = replace(
        state,
        fates={**state.fates, op.request_id: WAITING},
        parked=(*state.parked, op.request_id),
    )
    return drain(reject_expired(state))


def free(state: SchedulerState, request_id: str) -> tuple[SchedulerState, str | None]:
    """Release a booking and recheck its worker; an id without one is not found.

    local.rs:645-656 (`free`), queue.rs:1449-1457 with 1424-1447.
    """
    if request_id not in state.booked:
        return state, NOT_FOUND
    worker = state.booked[request_id]
    booked = {rid: w for rid, w in state.booked.items() if rid != request_id}
    state = reject_expired(replace(state, booked=booked))
    return drain(replace(state, blocked=state.blocked - {worker})), None


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
    request = state.requests[request_id]
    was_head = state.lane(request.worker if request.pinned else None)[0] == request_id
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
        return self.state.stats().pending_isl_tokens

    def class_stats(self) -> ClassStats:
        """`class_queue_stats(0)`."""
        return self.state.stats()

    def active_requests(self) -> list[tuple[int, int]]:
        """Booked requests per worker, for every worker, by worker id."""
        workers = range(len(self.state.capacities_tokens))
        return [(w, list(self.state.booked.values()).count(w)) for w in workers]


def parked_in_order(state: SchedulerState) -> Iterable[str]:
    """The parked ids in serve order (for traces and notes)."""
    return sorted(state.parked, key=state.order_key)
