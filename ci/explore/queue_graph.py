"""Breadth-first enumeration of the policy-queue model's reachable states in a bound.

A `QueueBound` declares a small world: one profile (its classes), the
placements, token counts and strict priorities an enqueue may carry, the
dispatch predicates a pop may run under, and how many entries may be queued at
once. `explore` describes that world as a `ci.explore.search.Space` and
enumerates it with the search the affinity bounds use.

**Nodes** are the model's `QueueState`s in canonical form (`canonical`):

* sequence numbers are renumbered 0..n-1 in enqueue order and `next_seq` is n:
  the model reads sequences only to order two entries, and a new entry always
  orders after every queued one;
* payloads are renamed 1..n in the same order: the model reads a payload only
  to match `retain`'s drop set and to report it, and the alphabet names
  payloads by their canonical names, so every edge label is a concrete call
  that is valid on its source node;
* every drained queue is one node: a drained queue answers nothing and refuses
  every call.

Everything else is kept as it is: each entry's class, placement, tokens, strict
priority and score, each class's blocked workers, counters and DRR credit, the
ring cursor and the carry.

**Alphabet** from a node holding n entries (`bound_ops`, in this order):
`Enqueue` for each class, placement, (raw, cached) token pair and strict
priority, with the bound's worker count, no arrival offset or jump, and payload
n + 1 (the next canonical name); `PopNext` under each declared `Dispatch`;
`Retain` dropping each queued payload in turn, then dropping nothing; `Drain`.
On the drained node every call is refused: a self-loop whose outcome carries
the error kind `QueueUsageError`.

**Finite and closed.** A transition that would leave more than `entries_max`
entries queued is outside the bound (counted as excluded). Within it, DRR credit
stays below the largest cost plus the largest quantum, so the graph is finite;
breadth-first search runs until no state is left to expand, and `depth_max` is
only a safety net: a bound whose graph is still growing at that depth reports
its horizon states (the pinned counts expect none). The claim of a run is
"no property violated in any state that any program over this alphabet reaches
while never holding more than `entries_max` entries" -- never "verified".

**Properties.** Step properties read the state the operation really left (before
canonical renaming); state properties read a `QueueView` of the node, whose
observation is the model's own (`observe`). The drained node has no state view:
every read of a drained queue is refused, so there is nothing to observe; the
`Drain` edges into it are checked like any other step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TypeAlias

from ci.explore import search
from model.queue.api import observe, outcome_of
from model.queue.ops import Drain, Enqueue, PopNext, QueueOp, QueueOutcome, Retain
from model.queue.table import ModelPolicyQueue, QueueState, initial_state
from model.queue.types import ClassConfig, Dispatch, Worker
from properties import Step
from properties.queue import QueueView
from properties.registry import goals


@dataclass(frozen=True, eq=False)
class QueueBound:
    """One exhaustively explored queue world: profile, alphabet and limits."""

    name: str
    configs: tuple[ClassConfig, ...]  # the profile, class 0 first
    placements: tuple[Worker | None, ...]  # None: the class's Any lane
    tokens: tuple[tuple[int, int], ...]  # (raw_isl_tokens, cached_tokens) pairs
    strict_priorities: tuple[int, ...]
    dispatches: tuple[Dispatch, ...]  # the predicates pops run under
    worker_count: int  # what every enqueue passes (scales per-worker limits)
    entries_max: int  # queued entries a state may hold; more is outside the bound
    depth_max: int  # safety net: the graph is expected to close before this depth
    states_max: int  # safety cap: more distinct states raises
    goals_out_of_reach: Mapping[str, str] = field(default_factory=dict)
    """`sometimes` goals this bound cannot reach, each with the reason."""

    def describe(self) -> str:
        """One line naming the bound's profile, alphabet and limits."""
        classes = ", ".join(_describe_class(config) for config in self.configs)
        places = ", ".join(
            "any" if p is None else f"{p.worker_id}:{p.dp_rank}"
            for p in self.placements
        )
        pops = ", ".join(_describe_dispatch(d) for d in self.dispatches)
        return (
            f"classes=[{classes}] placements=[{places}] tokens={list(self.tokens)} "
            f"strict={list(self.strict_priorities)} worker_count={self.worker_count} "
            f"pops=[{pops}] entries_max={self.entries_max} "
            f"depth_max={self.depth_max}"
        )


def _describe_class(config: ClassConfig) -> str:
    limits = [
        f"{kind}<={limit}"
        for kind in ("requests", "raw_isl_tokens", "cached_tokens")
        for limit in [config.limit_per_worker(kind)]
        if limit is not None
    ]
    return " ".join([config.name, config.queue_policy, f"q={config.quantum}", *limits])


def _describe_dispatch(dispatch: Dispatch) -> str:
    refused = [
        f"{w.worker_id}:{w.dp_rank} saturated" for w in sorted(dispatch.saturated)
    ]
    if not dispatch.any_dispatchable:
        refused.append("any refused")
    refused += [f"class {i} paused" for i in sorted(dispatch.paused_classes)]
    return " & ".join(refused) or "all free"


QueueExploration: TypeAlias = search.Exploration[QueueBound, QueueState, QueueOp]
"""One queue bound, enumerated."""

QueueTransition: TypeAlias = search.Transition[QueueState, QueueOp]


# ---- canonical form ---------------------------------------------------------------


def payload_names(state: QueueState) -> dict[int, int] | None:
    """Each queued payload's canonical name (1, 2, ... in enqueue order).

    None when two queued entries share a payload: no node of any bound has
    that, since the alphabet always enqueues a fresh one.
    """
    order = sorted((e.seq, e.payload) for cls in state.classes for e in cls.entries)
    names = {payload: rank + 1 for rank, (_, payload) in enumerate(order)}
    return names if len(names) == len(order) else None


def canonical(state: QueueState) -> QueueState | None:
    """`state` as a node: sequences and payloads renamed, drained queues merged.

    None when payloads repeat (see `payload_names`).
    """
    if state.drained:
        return replace(initial_state(state.configs), drained=True)
    names = payload_names(state)
    if names is None:
        return None
    classes = tuple(
        replace(
            cls,
            entries=tuple(
                replace(e, seq=names[e.payload] - 1, payload=names[e.payload])
                for e in cls.entries
            ),
        )
        for cls in state.classes
    )
    return replace(state, classes=classes, next_seq=len(names))


def canonical_op(state: QueueState, op: QueueOp) -> QueueOp:
    """`op`, applied to `state`, with payloads named as on `canonical(state)`.

    An enqueue of a payload not queued gets the next name (n + 1); `retain`
    keeps only the queued payloads it drops (dropping others changes nothing);
    on a drained queue nothing counts as queued. An enqueue of a queued
    payload, or any call on a state whose payloads repeat, is returned
    unchanged: it leads to or starts from a state that is no node, so it can
    never match an edge.
    """
    names = {} if state.drained else payload_names(state)  # drained: one empty node
    if names is None:
        return op
    match op:
        case Enqueue(payload=payload) if payload not in names:
            return replace(op, payload=len(names) + 1)
        case Retain(drop=drop):
            return Retain(frozenset(names[p] for p in drop if p in names))
        case _:
            return op


# ---- alphabet and successors ----------------------------------------------------


def bound_ops(bound: QueueBound, state: QueueState) -> list[QueueOp]:
    """The operations enumerated from the node `state`, in a fixed order."""
    fresh = state.pending_count + 1  # a drained node counts nothing: payload 1
    ops: list[QueueOp] = [
        Enqueue(
            class_index=class_index,
            worker_count=bound.worker_count,
            raw_isl_tokens=raw,
            cached_tokens=cached,
            arrival_offset_secs=0.0,
            priority_jump=0.0,
            strict_priority=strict,
            placement=placement,
            payload=fresh,
        )
        for class_index in range(len(bound.configs))
        for placement in bound.placements
        for raw, cached in bound.tokens
        for strict in bound.strict_priorities
    ]
    ops += [PopNext(dispatch) for dispatch in bound.dispatches]
    ops += [Retain(frozenset({payload})) for payload in range(1, fresh)]
    ops += [Retain(frozenset()), Drain()]
    return ops


QueueModel = Callable[[tuple[ClassConfig, ...]], ModelPolicyQueue]
"""Builds the model explored: the reference, or a broken model (a canary)."""


def apply(
    state: QueueState, op: QueueOp, model: QueueModel = ModelPolicyQueue
) -> tuple[QueueState, QueueOutcome]:
    """The state `op` leaves and its outcome, as the queue machine applies it.

    The operation goes through the `PolicyQueueApi` of a model set to `state`;
    a refused call's outcome carries its error kind.
    """
    queue = model(state.configs)
    queue.state = state
    outcome = outcome_of(queue, op)
    return queue.state, outcome


def successors(
    bound: QueueBound, state: QueueState, model: QueueModel = ModelPolicyQueue
) -> Iterator[QueueTransition | None]:
    """Apply each operation of the alphabet to `state`, in `bound_ops` order.

    Yields None for a transition that leaves the bound (too many entries). A
    refused call is a self-loop without step properties, as in the machine.
    """
    for op in bound_ops(bound, state):
        after, outcome = apply(state, op, model)
        if after.pending_count > bound.entries_max and not after.drained:
            yield None
            continue
        node = canonical(after)
        assert node is not None, "the alphabet enqueues fresh payloads only"
        refused = not outcome.ok
        checked = Step(state, op, outcome.error if refused else outcome.value, after)
        yield search.Transition(
            op=op, outcome=outcome, after=node, step=checked, refused=refused
        )


def state_view(state: QueueState) -> QueueView | None:
    """The node with the model's own observation of it (None once drained)."""
    if state.drained:
        return None
    queue = ModelPolicyQueue(state.configs)
    queue.state = state
    return QueueView(state=state, seen=observe(queue))


def space(
    bound: QueueBound, model: QueueModel = ModelPolicyQueue
) -> search.Space[QueueBound, QueueState, QueueOp]:
    """The queue model (or a broken model) inside `bound`, for the search."""
    return search.Space(
        bound=bound,
        subject="queue",
        root=model(bound.configs).state,
        successors=partial(successors, bound, model=model),
        state_view=state_view,
        goals=tuple(goal.name for goal in goals("queue")),
    )


def explore(
    bound: QueueBound,
    model: QueueModel = ModelPolicyQueue,
    stop_at_first_violation: bool = False,
) -> QueueExploration:
    """Enumerate every state of `bound`, checking every queue property.

    With `stop_at_first_violation`, the search ends at the first violated
    property; breadth-first order makes its path a shortest counterexample.
    """
    return search.explore_space(space(bound, model), stop_at_first_violation)


# ---- the declared bounds ----------------------------------------------------------

WORKER = Worker(1, 0)
"""The one worker entries may be placed on (the machine's first worker too)."""

PROFILE = (
    ClassConfig(
        name="c0",
        queue_policy="fcfs",
        quantum=2,
        request_queue_limit_per_worker=2,
        cached_token_queue_limit_per_worker=1,
    ),
    ClassConfig(
        name="c1",
        queue_policy="wspt",
        quantum=3,
        raw_isl_token_queue_limit_per_worker=5,
    ),
)
"""FCFS with a small quantum and request and cached-token limits; WSPT with a
larger quantum and a raw-token limit."""

POPS = (
    Dispatch(),
    Dispatch(saturated=frozenset({WORKER})),
    Dispatch(any_dispatchable=False),
)
"""Every lane free; the worker saturated; the Any lanes not dispatchable."""

PAUSED = Dispatch(paused_classes=frozenset({0}))
"""Class c0 paused: its predicate refuses every entry."""

_NO_LCFS = {"lcfs_served_a_later_entry_first": "the profile has no LCFS class"}

_PAIR = QueueBound(
    name="pair",
    configs=PROFILE,
    placements=(None, WORKER),
    tokens=((1, 0), (4, 1)),  # costs 1 and 3
    strict_priorities=(0,),
    dispatches=POPS,
    worker_count=1,
    entries_max=2,
    depth_max=64,
    states_max=10_000,
    goals_out_of_reach=_NO_LCFS,
)

QUEUE_BOUNDS: tuple[QueueBound, ...] = (
    _PAIR,
    replace(
        _PAIR,
        name="tiers",
        strict_priorities=(0, 1),
        dispatches=(*POPS, PAUSED),
        states_max=20_000,
    ),
    replace(
        _PAIR,
        name="triple",
        dispatches=(*POPS, PAUSED),
        entries_max=3,
        states_max=100_000,
    ),
)
"""The declared queue bounds, smallest first: two entries (`pair`), two entries
in two strict-priority tiers (`tiers`), three entries (`triple`). Three entries
in two tiers exceed 120,000 states (measured), too many for the nightly job."""

CI_QUEUE_BOUNDS = ("pair",)
"""Queue bounds small enough for every push; the others run nightly (`slow`)."""


def queue_bound_named(name: str) -> QueueBound:
    """The declared queue bound called `name`; KeyError if there is none."""
    for bound in QUEUE_BOUNDS:
        if bound.name == name:
            return bound
    known = [b.name for b in QUEUE_BOUNDS]
    raise KeyError(f"no queue bound named {name!r}; known: {known}")


@dataclass(frozen=True)
class _Configs:
    """What a queue canary's factory reads of a profile: its classes."""

    configs: tuple[object, ...]


def bfs_steps(canary: str) -> int | None:
    """The shortest violation's length for a canary that is a model (else None)."""
    from ci.canaries.queue import CANARIES, CRATE_CANARIES  # noqa: PLC0415
    from ci.explore.shrink import shortest_violation  # noqa: PLC0415

    if canary in CRATE_CANARIES:
        return None

    def model(configs: tuple[ClassConfig, ...]) -> ModelPolicyQueue:
        built = CANARIES[canary](_Configs(configs))  # type: ignore[arg-type]
        assert isinstance(built, ModelPolicyQueue), f"{canary} is not a model"
        return built

    def find(bound: QueueBound, depth_max: int) -> QueueExploration:
        shallower = replace(bound, depth_max=depth_max)
        return explore(shallower, model, stop_at_first_violation=True)

    best = shortest_violation(QUEUE_BOUNDS, find)
    return None if best is None else len(best[1].path)
