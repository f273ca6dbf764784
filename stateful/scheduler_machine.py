"""The differential scheduler machine: Hypothesis drives the model and the crate.

Each run builds one profile: the synthetic one-class profile, or two to four
policy classes of drawn quanta, queue policies and per-worker limits (as the
queue machine draws them), every request naming a drawn class and strict
priority. Rules interleave scheduling (pinned or shared, with or without a
due time, due times centuries out where the queue caps its due keys, callers
that go away while classified, at admission or at booking), frees, capacity
changes, `update_queue`, clock advances that land before, on and after due
times, cancellations, and changes of the set of available workers (which the
scheduler is not told of). Every rule builds operations of
`model.scheduler.ops` and steps them through the scheduler's `Harness`
(`stateful/scheduler_subject.py`). Preconditions and drawn keys depend on the
model only, and are drawn from sorted lists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize

from model.queue.types import ClassConfig
from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SetAvailable,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.types import (
    DUE_KEY_CAP_MS,
    LEAVE_POINTS,
    LeavePoint,
    SchedulerConfig,
)
from stateful.machine import DRAW, DifferentialMachine, Draw, precondition, rule
from stateful.scheduler_subject import (
    SchedulerFactory,
    SchedulerHarness,
    SchedulerSubject,
)

if TYPE_CHECKING:
    from model.scheduler.ops import SchedulerOutcome
    from model.scheduler.table import ModelScheduler, SchedulerState

CAPACITIES_TOKENS = (0, 5, 10, 20)
ISL_TOKENS = (0, 1, 5, 10, 11, 20)
WORKER_COUNTS = (1, 2, 3)
DUE_OFFSETS_MS = (None, None, 0, 1, 2, 5, 20)
"""A due time relative to now (None: no due time; 0: due exactly now)."""
ADVANCE_KINDS = ("zero", "one", "to_due", "before_due", "past_due", "far")
ADVANCE_REACH_MS = 60_000
"""Advances aim at due times at most this far ahead: due times centuries out
are for ordering here (a corpus scenario moves the clock onto the cap)."""
FAR_DUE_KINDS = ("none", "cap-1", "cap", "cap+1", "twice the cap")
"""A due time relative to the queue's deadline origin: none, one ms before the
first capped due key, on it, after it, or far beyond it."""
CLASS_COUNTS = (1, 1, 2, 3, 4)
"""1: the synthetic profile; otherwise that many classes of a root profile."""
QUANTA = (1, 2, 3, 5, 8, 40)
STRICT = (0, 0, 0, 1, 2)
TEARDOWN_FREES_PER_REQUEST = 1
"""Teardown frees at most this many bookings per request scheduled (each request
is booked at most once), plus one: the cap of its loop."""


@st.composite
def class_configs(draw: st.DrawFn, index: int) -> ClassConfig:
    """One class of a root profile: quantum, queue policy, per-worker limits."""
    return ClassConfig(
        name=f"c{index}",
        queue_policy=draw(st.sampled_from(("fcfs", "wspt"))),
        quantum=draw(st.sampled_from(QUANTA)),
        request_queue_limit_per_worker=draw(st.none() | st.none() | st.integers(0, 4)),
        raw_isl_token_queue_limit_per_worker=draw(
            st.none() | st.none() | st.integers(0, 40)
        ),
        cached_token_queue_limit_per_worker=draw(
            st.none() | st.none() | st.none() | st.integers(0, 20)
        ),
    )


class SchedulerMachine(DifferentialMachine):
    """Model and system under test side by side, over one worker set per run."""

    subject = SchedulerSubject
    factory: ClassVar[SchedulerFactory | None] = None

    def __init__(self) -> None:
        """Start with no scheduler; `build` makes one."""
        super().__init__()
        self.next_request = 0

    # -- plumbing --

    @property
    def model(self) -> ModelScheduler:
        """The reference scheduler."""
        model: ModelScheduler = self.harness.model
        return model

    @property
    def state(self) -> SchedulerState:
        """The reference scheduler's state."""
        return self.model.state

    def _apply(self, rule_name: str, op: object) -> SchedulerOutcome:
        outcome: SchedulerOutcome = self._run(rule_name, op).expected
        return outcome

    def _new_id(self) -> str:
        request_id = f"r{self.next_request:03d}"
        self.next_request += 1
        return request_id

    def _workers(self) -> int:
        return len(self.state.capacities_tokens)

    def _with_kind(self, kind: str) -> list[str]:
        return sorted(
            rid for rid, fate in self.state.fates.items() if fate.kind == kind
        )

    def _due_times_ahead(self) -> list[int]:
        """Due times of waiting requests the clock may reach (far ones left out)."""
        reach_ms = self.state.now_ms + ADVANCE_REACH_MS
        return sorted(
            due
            for rid in self.state.parked
            if (due := self.state.requests[rid].due_ms) is not None and due <= reach_ms
        )

    # -- preconditions (model only) --

    def has_bookings(self) -> bool:
        """Some request holds a booking."""
        return bool(self.state.booked)

    def has_waiting(self) -> bool:
        """Some request waits."""
        return bool(self.state.parked)

    def has_requests(self) -> bool:
        """Some request was scheduled."""
        return bool(self.state.requests)

    # -- rules --

    def _classes(self) -> int:
        return len(self.state.classes)

    def _draw_class(self, data: Draw) -> tuple[int, int]:
        """A class of the run's profile and a strict priority, drawn alike."""
        if self._classes() == 1:
            return 0, 0
        class_index = data.draw(st.integers(0, self._classes() - 1), label="class")
        strict = data.draw(st.sampled_from(STRICT), label="strict priority")
        return class_index, strict

    @initialize(
        count=st.sampled_from(WORKER_COUNTS),
        class_count=st.sampled_from(CLASS_COUNTS),
        data=st.data(),
    )
    def build(self, count: int, class_count: int, data: st.DataObject) -> None:
        """Build both schedulers over `count` workers and a drawn profile."""
        capacities = tuple(
            data.draw(st.sampled_from(CAPACITIES_TOKENS), label=f"capacity {w}")
            for w in range(count)
        )
        classes: tuple[ClassConfig, ...] = ()
        if class_count > 1:
            classes = tuple(
                data.draw(class_configs(index), label=f"class {index}")
                for index in range(class_count)
            )
        config = SchedulerConfig(capacities_tokens=capacities, classes=classes)
        note(f"config: {config}")
        self._start(SchedulerHarness(config, type(self).factory))

    @rule(
        data=DRAW,
        pinned=st.booleans(),
        isl=st.sampled_from(ISL_TOKENS),
        due_offset_ms=st.sampled_from(DUE_OFFSETS_MS),
    )
    def schedule(
        self,
        data: Draw,
        pinned: bool,
        isl: int,
        due_offset_ms: int | None,
    ) -> None:
        """Scheduling a request gives the same fate on both sides."""
        worker = data.draw(st.integers(0, self._workers() - 1), label="worker")
        class_index, strict = self._draw_class(data)
        due_ms = None if due_offset_ms is None else self.state.now_ms + due_offset_ms
        self._apply(
            "schedule",
            Schedule(self._new_id(), worker, pinned, isl, due_ms, class_index, strict),
        )

    @rule(
        data=DRAW,
        pinned=st.booleans(),
        isl=st.sampled_from(ISL_TOKENS),
        due_offset_ms=st.sampled_from(DUE_OFFSETS_MS),
        leaves=st.sampled_from(LEAVE_POINTS),
    )
    def schedule_a_caller_that_leaves(
        self,
        data: Draw,
        pinned: bool,
        isl: int,
        due_offset_ms: int | None,
        leaves: LeavePoint,
    ) -> None:
        """A caller goes away while classified, at admission or at booking, alike.

        At booking it leaves once its request is booked, now or on a later
        step: the booking is freed and the worker's capacity returns.
        """
        worker = data.draw(st.integers(0, self._workers() - 1), label="worker")
        class_index, strict = self._draw_class(data)
        due_ms = None if due_offset_ms is None else self.state.now_ms + due_offset_ms
        op = Schedule(
            self._new_id(), worker, pinned, isl, due_ms, class_index, strict, leaves
        )
        self._apply("schedule_a_caller_that_leaves", op)

    @precondition(has_bookings)
    @rule(data=DRAW)
    def free(self, data: Draw) -> None:
        """Freeing a booking rechecks its worker alike."""
        request_id = data.draw(st.sampled_from(sorted(self.state.booked)), label="id")
        self._apply("free", Free(request_id))

    @precondition(has_requests)
    @rule(data=DRAW)
    def free_without_a_booking(self, data: Draw) -> None:
        """Freeing an id that holds no booking is refused alike, changing nothing."""
        unbooked = sorted(set(self.state.requests) - set(self.state.booked))
        if not unbooked:
            return
        request_id = data.draw(st.sampled_from(unbooked), label="id")
        outcome = self._apply("free_without_a_booking", Free(request_id))
        assert outcome.error is not None, f"the model freed {request_id}"

    @rule(data=DRAW, kind=st.sampled_from(("drawn", "same", "load", "load-1")))
    def set_capacity(self, data: Draw, kind: str) -> None:
        """A worker's capacity changes (or is set to its value) alike.

        `load` sets it to exactly the worker's booked tokens (not busy at the
        edge), `load-1` one below (busy), `same` leaves it unchanged.
        """
        worker = data.draw(st.integers(0, self._workers() - 1), label="worker")
        load = self.state.load_tokens(worker)
        tokens = {
            "same": self.state.capacities_tokens[worker],
            "load": load,
            "load-1": max(load - 1, 0),
        }.get(kind)
        if tokens is None:
            tokens = data.draw(st.sampled_from(CAPACITIES_TOKENS), label="tokens")
        self._apply("set_capacity", SetCapacity(worker, tokens))

    @rule(data=DRAW, source=st.booleans())
    def set_available(self, data: Draw, source: bool) -> None:
        """The set of available workers changes, unannounced, alike."""
        workers = None
        if source:
            every = list(range(self._workers()))
            chosen = data.draw(st.lists(st.sampled_from(every), unique=True), "set")
            workers = frozenset(chosen)
        self._apply("set_available", SetAvailable(workers))

    @rule(
        data=DRAW,
        recheck=st.booleans(),
        due=st.sampled_from(("none", "dispatched", "waiting")),
    )
    def a_blocked_lane_whose_worker_goes_away(
        self, data: Draw, recheck: bool, due: str
    ) -> None:
        """A blocked lane's worker stops being available; only a recheck tells.

        A request larger than the worker's capacity makes it busy (with a due
        time in 1 ms: `dispatched`), a second waits in its pinned lane (with a
        due time in 5 ms: `waiting`), `update_queue` optionally rechecks, the
        worker leaves the available set, the clock passes 2 ms, and a shared
        request for that worker is refused: the blocked lane must stay blocked
        until the next recheck, alike.
        """
        rule_name = "a_blocked_lane_whose_worker_goes_away"
        worker = data.draw(st.integers(0, self._workers() - 1), label="worker")
        now_ms = self.state.now_ms
        big = self.state.capacities_tokens[worker] + 1
        first_due = now_ms + 1 if due == "dispatched" else None
        waiting_due = now_ms + 5 if due == "waiting" else None
        self._apply(
            rule_name,
            Schedule(
                self._new_id(), worker, pinned=True, isl_tokens=big, due_ms=first_due
            ),
        )
        self._apply(
            rule_name,
            Schedule(
                self._new_id(), worker, pinned=True, isl_tokens=1, due_ms=waiting_due
            ),
        )
        if recheck:
            self._apply(rule_name, UpdateQueue())
        others = frozenset(range(self._workers())) - {worker}
        self._apply(rule_name, SetAvailable(others))
        self._apply(rule_name, Advance(2))
        self._apply(
            rule_name, Schedule(self._new_id(), worker, pinned=False, isl_tokens=0)
        )

    @rule(
        data=DRAW,
        first=st.sampled_from(FAR_DUE_KINDS),
        second=st.sampled_from(FAR_DUE_KINDS),
        step=st.booleans(),
    )
    def two_far_due_times_in_one_lane(
        self, data: Draw, first: str, second: str, step: bool
    ) -> None:
        """Two requests due centuries out wait in one lane and leave in key order.

        The clock optionally moves 1 ms (so the deadline origin is not the
        scheduler's start); a request larger than the worker's capacity makes
        it busy; two more, each as large, wait in its pinned lane with due times
        around the cap of the due key (relative to the deadline origin they will
        share); the first is freed and one of the two is dispatched, alike.
        """
        rule_name = "two_far_due_times_in_one_lane"
        worker = data.draw(st.integers(0, self._workers() - 1), label="worker")
        if step:
            self._apply(rule_name, Advance(1))
        big = self.state.capacities_tokens[worker] + 1
        holder = self._new_id()
        self._apply(rule_name, Schedule(holder, worker, pinned=True, isl_tokens=big))
        state = self.state
        origin_ms = state.deadline_origin_ms if state.has_due_parked() else state.now_ms
        offsets = {
            "cap-1": DUE_KEY_CAP_MS - 1,
            "cap": DUE_KEY_CAP_MS,
            "cap+1": DUE_KEY_CAP_MS + 1,
            "twice the cap": 2 * DUE_KEY_CAP_MS,
        }
        for kind in (first, second):
            offset = offsets.get(kind)
            due_ms = None if offset is None else origin_ms + offset
            far = Schedule(
                self._new_id(), worker, pinned=True, isl_tokens=big, due_ms=due_ms
            )
            self._apply(rule_name, far)
        if holder in self.state.booked:
            self._apply(rule_name, Free(holder))

    @rule()
    def update_queue(self) -> None:
        """`update_queue` rechecks everything alike."""
        self._apply("update_queue", UpdateQueue())

    @rule(kind=st.sampled_from(ADVANCE_KINDS))
    def advance(self, kind: str) -> None:
        """The clock moves: by 0 or 1 ms, onto, just before or past a due time."""
        now_ms = self.state.now_ms
        ahead = self._due_times_ahead()
        next_due = ahead[0] if ahead else now_ms + 3
        delta = {
            "zero": 0,
            "one": 1,
            "to_due": next_due - now_ms,
            "before_due": max(next_due - now_ms - 1, 0),
            "past_due": next_due - now_ms + 2,
            "far": 50,
        }[kind]
        self._apply("advance", Advance(delta))

    @precondition(has_waiting)
    @rule(data=DRAW)
    def cancel(self, data: Draw) -> None:
        """The caller of a waiting request goes away alike."""
        request_id = data.draw(st.sampled_from(sorted(self.state.parked)), label="id")
        outcome = self._apply("cancel", Cancel(request_id))
        assert outcome.value is True, f"the model did not cancel {request_id}"

    @precondition(has_requests)
    @rule(data=DRAW)
    def cancel_after_the_end(self, data: Draw) -> None:
        """The caller of an ended request goes away: nothing changes, alike."""
        ended = sorted(set(self.state.requests) - set(self.state.parked))
        if not ended:
            return
        request_id = data.draw(st.sampled_from(ended), label="id")
        outcome = self._apply("cancel_after_the_end", Cancel(request_id))
        assert outcome.value is False, f"the model cancelled {request_id} again"

    @rule(data=DRAW, release=st.sampled_from(("free", "capacity")))
    def a_blocked_lane_then_a_recheck(self, data: Draw, release: str) -> None:
        """A pinned request waits behind a busy worker until a recheck, alike.

        A request larger than the worker's capacity makes it busy; a second,
        pinned to it, waits in its lane. Then either the first is freed, or the
        worker's capacity grows to the load: both recheck the lane, which must
        dispatch the waiting request.
        """
        rule_name = "a_blocked_lane_then_a_recheck"
        worker = data.draw(st.integers(0, self._workers() - 1), label="worker")
        big = self.state.capacities_tokens[worker] + 1
        first = self._new_id()
        self._apply(rule_name, Schedule(first, worker, pinned=True, isl_tokens=big))
        self._apply(
            rule_name, Schedule(self._new_id(), worker, pinned=True, isl_tokens=1)
        )
        if release == "free" and first in self.state.booked:
            self._apply(rule_name, Free(first))
        else:
            load = self.state.load_tokens(worker)
            self._apply(rule_name, SetCapacity(worker, load))

    @rule(
        data=DRAW,
        end=st.sampled_from(("cancel", "expire")),
        pinned_head=st.booleans(),
    )
    def a_shared_head_then_its_end(
        self, data: Draw, end: str, pinned_head: bool
    ) -> None:
        """A shared request waits behind a head for a busy worker, until it ends.

        Worker A is made busy; a shared request for A (due in 2 ms) heads the
        shared lane, and a shared request for another worker waits behind it.
        Cancelling the head, or letting the clock reach its due time, lets the
        second through, alike.
        """
        rule_name = "a_shared_head_then_its_end"
        if self._workers() < 2:  # a head and a worker behind it
            return
        busy = data.draw(st.integers(0, self._workers() - 1), label="busy worker")
        other = (busy + 1) % self._workers()
        big = self.state.capacities_tokens[busy] + 1
        self._apply(rule_name, Schedule(self._new_id(), busy, pinned_head, big))
        head = self._new_id()
        now_ms = self.state.now_ms
        self._apply(
            rule_name,
            Schedule(head, busy, pinned=False, isl_tokens=1, due_ms=now_ms + 2),
        )
        self._apply(
            rule_name, Schedule(self._new_id(), other, pinned=False, isl_tokens=0)
        )
        if end == "cancel" and head in self.state.parked:
            self._apply(rule_name, Cancel(head))
        else:
            self._apply(rule_name, Advance(2))

    def teardown(self) -> None:
        """Every waiting request is dispatched once bookings are freed (capped)."""
        if self.harness is None:
            return
        frees_max = TEARDOWN_FREES_PER_REQUEST * len(self.state.requests) + 1
        for _ in range(frees_max):
            if not self.state.parked:
                break
            if not self.state.booked:
                self._apply("teardown", UpdateQueue())
                break
            self._apply("teardown", Free(min(self.state.booked)))
        else:
            raise AssertionError(f"requests still wait after {frees_max} frees")
        type(self).rules_run.discard("teardown")  # not a rule
        waiting = sorted(self.state.parked)
        assert [] == waiting, "requests wait with every worker idle"
