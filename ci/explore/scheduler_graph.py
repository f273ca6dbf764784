"""Breadth-first enumeration of the public scheduler model's states in a bound.

A `SchedulerBound` declares a small world: the workers and their capacities at
construction, the prompt sizes (`isl_tokens`) and due offsets a request may
carry, the capacities a worker may be set to, the clock steps, how many
requests may be scheduled in all, and how far from the initial state to look.
`explore` describes that world as a `ci.explore.search.Space` and enumerates it
with the search the other subjects use.

**Nodes** are `SchedulerNode`s: the model's exact `SchedulerState` beside the
requests its callers made (`inputs`, in scheduling order). For the reference
model the two agree, so a node is its state; a broken model (a canary) may
record a request other than the one asked for, and the properties read the
callers' inputs, as the differential machine reads them from the reference.
Nothing is renamed or shifted: request ids are `r000`, `r001`, ... in
scheduling order (as the machine names them), time is absolute, so every edge
label is the concrete call the crate receives and any path from the root is a
trace of the scheduler kind, replayable verbatim (`ci.explore.scheduler_replay`).
The price, as for the affinity table, is that the graph is finite only
because of the depth horizon and `requests_max` (time and the fates of ended
requests only grow): the claim of a run is "no property violated in any state
within `depth_max` steps of a fresh scheduler, under this alphabet" -- never
"verified".

**Alphabet** from a node (`bound_ops`, in this order):

* `Schedule` of the next id for each declared lane (a worker, pinned to it or
  as its only allowed worker, through the shared lane), each prompt size
  and each due offset (None: no due time; -1: due one ms ago, and 0: due
  exactly now, both rejected at once; 1, 2: due one or two ms ahead; no due
  time before t = 0), while fewer than `requests_max` requests were
  scheduled (past that: excluded, and counted);
* `Free` of every booked id, then of the first id without a booking (refused
  as `not_found`, changing nothing);
* `SetCapacity` of each worker to each declared capacity (its own value
  included: an unchanged configuration must do nothing);
* `UpdateQueue`;
* `Advance` by each declared step, and by the steps that land one ms before,
  exactly on and one ms after each waiting request's due time. Times are whole
  milliseconds, so every due time lies on the 1 ms timer grid on which the
  crate's actor timer fires exactly (`scheduler_timer_grid`); a due time
  between two ticks is outside the model's domain, not an omission here;
* `Cancel` of every scheduled id: a waiting one is removed, an ended one's
  caller goes away after the end (nothing changes).

A bound may declare policy classes (`classes`: the profile of a router
policy document, `SchedulerConfig.classes`), the classes a request may name
(`class_choices`) and the points at which its caller may go away on its own
(`leave_points`, None: it stays); each multiplies the `Schedule`s above.

**Properties.** Every `always` scheduler property is checked on every node
(state properties) and every edge (step properties), as the machine checks
them after every step, refused calls included; each `sometimes` goal must be
reached unless the bound declares it out of reach, with a reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeAlias

from ci.explore import search
from model.queue.types import ClassConfig
from model.scheduler.api import observe, outcome_of
from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SchedulerOp,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.table import ModelScheduler, SchedulerState, initial_state
from model.scheduler.types import LeavePoint, Request, SchedulerConfig
from properties import Step
from properties.registry import goals
from properties.scheduler.invariants import SchedulerView


@dataclass(frozen=True, eq=False)
class SchedulerBound:
    """One exhaustively explored scheduler world: workers, alphabet and limits."""

    name: str
    capacities_tokens: tuple[int, ...]  # worker i's capacity at construction
    lanes: tuple[tuple[int, bool], ...]  # (worker, pinned) a request may name
    isl_tokens: tuple[int, ...]  # the prompt sizes a request may carry
    due_offsets_ms: tuple[int | None, ...]  # due time - now; None: no due time
    capacity_choices_tokens: tuple[int, ...]  # what `SetCapacity` may set
    advance_steps_ms: tuple[int, ...]  # clock steps beside the due-relative ones
    requests_max: int  # requests scheduled in all; more is outside the bound
    depth_max: int  # horizon: states this many steps out are not expanded
    states_max: int  # safety cap: more distinct states raises
    goals_out_of_reach: Mapping[str, str] = field(default_factory=dict)
    """`sometimes` goals this bound cannot reach, each with the reason."""
    classes: tuple[ClassConfig, ...] = ()  # the profile (none: synthetic)
    class_choices: tuple[int, ...] = (0,)  # the classes a request may name
    leave_points: tuple[LeavePoint | None, ...] = (None,)  # where callers leave

    @property
    def config(self) -> SchedulerConfig:
        """The scheduler every path starts from."""
        return SchedulerConfig(
            capacities_tokens=self.capacities_tokens, classes=self.classes
        )

    def describe(self) -> str:
        """One line naming the bound's workers, alphabet and limits."""
        dues = ["none" if d is None else f"{d:+d}" for d in self.due_offsets_ms]
        lanes = [f"w{w} {'pinned' if p else 'shared'}" for w, p in self.lanes]
        return (
            f"capacities={list(self.capacities_tokens)} lanes=[{', '.join(lanes)}] "
            f"isl_tokens={list(self.isl_tokens)} due_in_ms=[{', '.join(dues)}] "
            f"set_capacity={list(self.capacity_choices_tokens)} "
            f"advance_ms={list(self.advance_steps_ms)} and -1/0/+1 of each due "
            f"requests_max={self.requests_max} depth_max={self.depth_max}"
            + self._classes_text()
        )

    def _classes_text(self) -> str:
        if not self.classes:
            return ""
        classes = ", ".join(
            f"{c.name} {c.queue_policy} q{c.quantum}" for c in self.classes
        )
        leaves = ["stays" if p is None else p for p in self.leave_points]
        return (
            f" classes=[{classes}] class_choices={list(self.class_choices)} "
            f"leaves=[{', '.join(leaves)}]"
        )


@dataclass(frozen=True)
class SchedulerNode:
    """One explored state: the scheduler's state and its callers' requests."""

    key: tuple[object, ...]  # what identifies the node (hash and equality)
    state: SchedulerState = field(compare=False)
    inputs: tuple[Request, ...] = field(compare=False)  # in scheduling order


def node_of(state: SchedulerState, inputs: tuple[Request, ...] | None = None) -> Node:
    """`state` as a node; `inputs` default to the requests the state recorded."""
    asked = tuple(state.requests.values()) if inputs is None else inputs
    key = (
        state.now_ms,
        state.capacities_tokens,
        tuple(state.requests.items()),
        tuple(sorted(state.fates.items())),
        state.parked,
        tuple(sorted(state.booked.items())),
        tuple(sorted(state.blocked)),
        state.received,
        state.rejected_due,
        state.deficits,
        state.cursor,
        state.carry,
        asked,
    )
    return SchedulerNode(key=key, state=state, inputs=asked)


Node: TypeAlias = SchedulerNode
SchedulerExploration: TypeAlias = search.Exploration[SchedulerBound, Node, SchedulerOp]
"""One scheduler bound, enumerated."""
SchedulerTransition: TypeAlias = search.Transition[Node, SchedulerOp]

SchedulerModel = Callable[[SchedulerConfig], ModelScheduler]
"""Builds the model explored: the reference, or a broken model (a canary)."""


# ---- alphabet and successors ----------------------------------------------------


def request_id(index: int) -> str:
    """The id of the `index`-th request scheduled (as the machine names them)."""
    return f"r{index:03d}"


def advance_steps_ms(bound: SchedulerBound, state: SchedulerState) -> list[int]:
    """The declared steps and one ms before, on and after each waiting due time."""
    steps = set(bound.advance_steps_ms)
    for rid in state.parked:
        due_ms = state.requests[rid].due_ms
        if due_ms is not None:
            ahead_ms = due_ms - state.now_ms
            steps.update(s for s in (ahead_ms - 1, ahead_ms, ahead_ms + 1) if s >= 0)
    return sorted(steps)


def bound_ops(bound: SchedulerBound, node: Node) -> list[SchedulerOp]:
    """The operations enumerated from `node`, in a fixed order."""
    state = node.state
    fresh = request_id(len(node.inputs))
    workers = range(len(state.capacities_tokens))
    ops: list[SchedulerOp] = [
        Schedule(
            fresh,
            worker,
            pinned,
            isl,
            None if offset is None else state.now_ms + offset,
            class_index=class_index,
            leaves=leaves,
        )
        for worker, pinned in bound.lanes
        for isl in bound.isl_tokens
        for offset in bound.due_offsets_ms
        if offset is None or state.now_ms + offset >= 0  # no instant before 0
        for class_index in bound.class_choices
        for leaves in bound.leave_points
    ]
    asked = [request.request_id for request in node.inputs]
    ops += [Free(rid) for rid in sorted(state.booked)]
    ops += [Free(rid) for rid in asked if rid not in state.booked][:1]
    ops += [
        SetCapacity(worker, tokens)
        for worker in workers
        for tokens in bound.capacity_choices_tokens
    ]
    ops.append(UpdateQueue())
    ops += [Advance(step_ms) for step_ms in advance_steps_ms(bound, state)]
    ops += [Cancel(rid) for rid in asked]
    return ops


def _asked(node: Node, op: SchedulerOp) -> tuple[Request, ...]:
    """The callers' requests after `op` (a `Schedule` adds one)."""
    if not isinstance(op, Schedule):
        return node.inputs
    request = Request(
        request_id=op.request_id,
        worker=op.worker,
        pinned=op.pinned,
        isl_tokens=op.isl_tokens,
        due_ms=op.due_ms,
        scheduled_at_ms=node.state.now_ms,
        class_index=op.class_index,
        strict_priority=op.strict_priority,
        leaves=op.leaves,
    )
    return (*node.inputs, request)


def _api(
    config: SchedulerConfig, state: SchedulerState, model: SchedulerModel
) -> ModelScheduler:
    scheduler = model(config)
    scheduler.state = state
    return scheduler


def view(
    config: SchedulerConfig, node: Node, model: SchedulerModel = ModelScheduler
) -> SchedulerView:
    """What the properties read: the callers' requests beside the model's answers."""
    requests = {request.request_id: request for request in node.inputs}
    scheduler = _api(config, node.state, model)
    return SchedulerView(
        state=replace(node.state, requests=requests),
        seen=observe(scheduler, list(requests)),
    )


def successors(
    bound: SchedulerBound, node: Node, model: SchedulerModel = ModelScheduler
) -> Iterator[SchedulerTransition | None]:
    """Apply each operation of the alphabet to `node`, in `bound_ops` order.

    Yields None for a `Schedule` past `requests_max`. Every call, a refused one
    included, is checked by the step properties (as in the machine).
    """
    config = bound.config
    before = view(config, node, model)
    for op in bound_ops(bound, node):
        if isinstance(op, Schedule) and len(node.inputs) >= bound.requests_max:
            yield None
            continue
        scheduler = _api(config, node.state, model)
        outcome = outcome_of(scheduler, op)
        after = node_of(scheduler.state, _asked(node, op))
        checked = Step(before, op, outcome, view(config, after, model))
        yield search.Transition(op=op, outcome=outcome, after=after, step=checked)


def space(
    bound: SchedulerBound, model: SchedulerModel = ModelScheduler
) -> search.Space[SchedulerBound, Node, SchedulerOp]:
    """The scheduler model (or a broken model) inside `bound`, for the search."""
    return search.Space(
        bound=bound,
        subject="scheduler",
        root=node_of(initial_state(bound.config)),
        successors=partial(successors, bound, model=model),
        state_view=partial(view, bound.config, model=model),
        goals=tuple(goal.name for goal in goals("scheduler")),
    )


def explore(
    bound: SchedulerBound,
    model: SchedulerModel = ModelScheduler,
    stop_at_first_violation: bool = False,
) -> SchedulerExploration:
    """Enumerate every state of `bound`, checking every scheduler property.

    With `stop_at_first_violation`, the search ends at the first violated
    property; breadth-first order makes its path a shortest counterexample.
    """
    return search.explore_space(space(bound, model), stop_at_first_violation)


# ---- the declared bounds ----------------------------------------------------------

_DUES_MS = (None, 0, 1, 2)
"""No due time; due now (rejected at once); one and two ms ahead."""

_DUES_AND_PAST_MS = (None, -1, *_DUES_MS[1:])
"""The same, and due one ms ago (rejected at once; from t = 1 ms on): a
scheduler machine never asks for that."""

_THREE_LANES = ((0, True), (0, False), (1, False))
"""Worker 0 pinned and shared, worker 1 shared: a blocked pinned lane, and a
shared head for worker 0 with a request for worker 1 behind it."""

_EVERY_LANE = ((0, True), (0, False), (1, True), (1, False))

_FOUR_STEPS = (
    "a busy worker, a shared head for it with a due time and a request behind "
    "it, then the head's end: 4 steps"
)

_NO_CLOCK = "no due times and no clock steps: the bound is about classes and leavers"
_TWO_CLASSES_OUT_OF_REACH: dict[str, str] = {
    **dict.fromkeys(
        (
            "a_request_due_in_one_ms_is_parked",
            "a_request_due_now_is_rejected_at_schedule",
            "an_advance_lands_exactly_on_a_due_time",
            "an_advance_passes_a_due_time",
            "an_advance_stops_one_ms_before_a_due_time",
            "an_expiry_lets_a_waiting_request_through",
        ),
        _NO_CLOCK,
    ),
    "a_capacity_change_dispatches_a_waiting_pinned_request": "no capacity changes",
    "a_cancel_lets_the_next_shared_request_through": "one worker: no request "
    "for another worker behind a shared head",
    "the_shared_lane_waits_behind_its_head": "one worker: no request for a free "
    "worker behind a shared head",
}
"""Goals of due times, capacities and a second worker, left to the other bounds."""

_ONE_CLASS_NO_LEAVERS = "one class and no caller that leaves on its own"
_CLASS_AND_LEAVER_GOALS = dict.fromkeys(
    (
        "a_caller_left_at_admission",
        "a_caller_left_at_booking_and_its_capacity_returned",
        "a_caller_left_while_classified",
        "a_class_limit_refused_a_request",
        "requests_of_two_classes_wait_together",
    ),
    _ONE_CLASS_NO_LEAVERS,
)
"""Goals only `two_classes` reaches among the every-push bounds."""

_LANES = SchedulerBound(
    name="lanes",
    capacities_tokens=(0, 0),
    lanes=_THREE_LANES,
    isl_tokens=(1,),
    due_offsets_ms=_DUES_AND_PAST_MS,
    capacity_choices_tokens=(2,),
    advance_steps_ms=(1,),
    requests_max=3,
    depth_max=3,
    states_max=10_000,
    goals_out_of_reach={
        **dict.fromkeys(
            (
                "a_cancel_lets_the_next_shared_request_through",
                "an_expiry_lets_a_waiting_request_through",
            ),
            _FOUR_STEPS,
        ),
        **_CLASS_AND_LEAVER_GOALS,
    },
)

SCHEDULER_BOUNDS: tuple[SchedulerBound, ...] = (
    _LANES,
    replace(
        _LANES,
        name="handoff",
        due_offsets_ms=(None, -1, 0, 2),
        depth_max=4,
        states_max=20_000,
        goals_out_of_reach={
            "a_request_due_in_one_ms_is_parked": "no request is due 1 ms ahead",
            **_CLASS_AND_LEAVER_GOALS,
        },
    ),
    SchedulerBound(
        name="two_classes",
        capacities_tokens=(0,),
        lanes=((0, True), (0, False)),
        isl_tokens=(1,),
        due_offsets_ms=(None,),
        capacity_choices_tokens=(),
        advance_steps_ms=(),
        requests_max=3,
        depth_max=3,
        states_max=20_000,
        classes=(
            ClassConfig("c0", "fcfs", 1, request_queue_limit_per_worker=1),
            ClassConfig("c1", "wspt", 2),
        ),
        class_choices=(0, 1),
        leave_points=(None, "classifying", "admission", "booking"),
        goals_out_of_reach=_TWO_CLASSES_OUT_OF_REACH,
    ),
    SchedulerBound(
        name="wide",
        capacities_tokens=(1, 0),
        lanes=_EVERY_LANE,
        isl_tokens=(0, 1),
        due_offsets_ms=_DUES_MS,
        capacity_choices_tokens=(0, 1, 2),
        advance_steps_ms=(1,),
        requests_max=3,
        depth_max=4,
        states_max=500_000,
        goals_out_of_reach=_CLASS_AND_LEAVER_GOALS,
    ),
)
"""The declared scheduler bounds, smallest first: `lanes` (two workers of
capacity 0, three lanes, due offsets none, -1 to 2, 3 steps), `handoff` (the
same lanes, 4 steps, due offsets none, -1, 0 and 2), `two_classes` (one worker
of capacity 0, pinned and shared, two classes -- FCFS quantum 1 with one
request per worker, WSPT quantum 2 -- every leave point, 3 steps: 4,525
states) and `wide` (capacities 1 and 0,
every lane, prompts of 0 and 1 token, capacities 0 to 2, every due offset,
4 steps: 431,201 states)."""

CI_SCHEDULER_BOUNDS = ("lanes", "handoff", "two_classes")
"""Scheduler bounds small enough for every push; the others run nightly."""


def scheduler_bound_named(name: str) -> SchedulerBound:
    """The declared scheduler bound called `name`; KeyError if there is none."""
    for bound in SCHEDULER_BOUNDS:
        if bound.name == name:
            return bound
    known = [b.name for b in SCHEDULER_BOUNDS]
    raise KeyError(f"no scheduler bound named {name!r}; known: {known}")
