"""The differential policy-queue machine: Hypothesis drives the model and the crate.

Every rule builds operations of `model.queue.ops` and steps them through the
queue's `Harness` (`stateful/queue_subject.py`), which compares outcomes and
observable states and checks every queue property. Preconditions and drawn
keys depend on the model (and on the machine's own record of which workers are
saturated) only. Profiles are drawn as YAML the crate parses, so profile
resolution is under test too.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize

from model.queue.ops import (
    Drain,
    Enqueue,
    PopNext,
    ReadBacklog,
    ReadConfig,
    ReadStats,
    Rebuild,
    Retain,
)
from model.queue.types import (
    LIMIT_KINDS,
    U32_MAX,
    ClassConfig,
    Dispatch,
    LimitKind,
    QueuePolicy,
    Rejection,
    Worker,
    synthetic_profile,
)
from stateful.machine import (
    DRAW,
    DifferentialMachine,
    Draw,
    precondition,
    rule,
    sampled_from,
)
from stateful.queue_subject import (
    ProfileSpec,
    QueueFactory,
    QueueHarness,
    QueueSubject,
    indented,
    profile_yaml,
    request,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from model.queue.ops import QueueOp, QueueOutcome
    from model.queue.table import ModelPolicyQueue

WORKERS = (Worker(1, 0), Worker(1, 1), Worker(2, 0))
QUANTA = (1, 2, 3, 5, 8, 40)
ARRIVALS_S = (0.0, 1.0, 2.0, 3.5, -1.0, math.inf, math.nan)
JUMPS = (0.0, 0.0, 1.0, 10.0, -5.0, math.inf, math.nan)
STRICT = (0, 0, 0, 1, 2, U32_MAX)
WORKER_COUNTS = (1, 1, 2, 3, 0)
STEPS_BEFORE_DRAIN_MIN = 25
OPENING_PAIR = ((40, 0.0), (5, 1.0))
"""Each program's first two requests: (raw tokens, arrival in seconds)."""
TEARDOWN_POPS_MAX = 500
"""Cap on the teardown drain loop; reaching it fails the run."""


# ---- profiles --------------------------------------------------------------------


@st.composite
def class_lists(draw: st.DrawFn) -> tuple[tuple[ClassConfig, ...], tuple[bool, ...]]:
    """One to four YAML-expressible classes and which are explicit (no family)."""
    count = draw(st.integers(1, 4))
    configs = [
        ClassConfig(
            name=f"c{index}",
            queue_policy=draw(st.sampled_from(("fcfs", "wspt"))),
            quantum=draw(st.sampled_from(QUANTA)),
            request_queue_limit_per_worker=draw(
                st.none() | st.none() | st.integers(0, 4)
            ),
            raw_isl_token_queue_limit_per_worker=draw(
                st.none() | st.none() | st.integers(0, 40)
            ),
            cached_token_queue_limit_per_worker=draw(
                st.none() | st.none() | st.integers(0, 20)
            ),
        )
        for index in range(count)
    ]
    explicit = tuple(draw(st.booleans()) for _ in range(count))
    return tuple(configs), explicit


@st.composite
def profile_specs(draw: st.DrawFn) -> ProfileSpec:
    """A synthetic profile, a root profile, a model profile, or a fallback."""
    kind = draw(st.sampled_from(("synthetic", "root", "root", "model", "fallback")))
    policy: QueuePolicy = draw(st.sampled_from(("fcfs", "wspt", "lcfs")))
    if kind == "synthetic":
        return ProfileSpec(synthetic_profile(policy), None, None, policy)
    configs, explicit = draw(class_lists())
    body = profile_yaml(configs, explicit)
    if kind == "root":
        return ProfileSpec(configs, body, draw(st.sampled_from((None, "m"))), policy)
    if kind == "model":
        root_configs, root_explicit = draw(class_lists())
        text = profile_yaml(root_configs, root_explicit) + "models:\n  m:\n"
        return ProfileSpec(configs, text + indented(body, 4), "m", policy)
    text = "models:\n  m:\n" + indented(body, 4)
    return ProfileSpec(synthetic_profile(policy), text, "other", policy)


# ---- the machine -----------------------------------------------------------------


class QueueMachine(DifferentialMachine):
    """Model and system under test side by side, over one profile per run."""

    subject = QueueSubject
    factory: ClassVar[QueueFactory | None] = None

    def __init__(self) -> None:
        """Start with no queue; `build` makes one."""
        super().__init__()
        self.saturated: set[Worker] = set()
        self.any_dispatchable = True
        self.paused: set[int] = set()
        self.next_payload = 1
        self.steps_since_build = 0

    # -- plumbing --

    @property
    def model(self) -> ModelPolicyQueue:
        """The reference queue."""
        model: ModelPolicyQueue = self.harness.model
        return model

    def _apply(self, rule_name: str, op: QueueOp) -> QueueOutcome:
        self.steps_since_build += 1
        outcome: QueueOutcome = self._run(rule_name, op).expected
        return outcome

    def _dispatch(self) -> Dispatch:
        return Dispatch(
            saturated=frozenset(self.saturated),
            any_dispatchable=self.any_dispatchable,
            paused_classes=frozenset(self.paused),
        )

    def _class_count(self) -> int:
        return len(self.model.state.configs)

    def _draw_class(self, data: Draw) -> int:
        """A class index of the run's profile, drawn as every rule draws it."""
        class_index: int = data.draw(
            st.integers(0, self._class_count() - 1), label="class"
        )
        return class_index

    def _payloads(self) -> list[int]:
        return sorted(item.payload for item in self.model.entries())

    # -- preconditions (model and machine records only) --

    def has_entries(self) -> bool:
        """The model holds at least one entry."""
        return self.model.state.pending_count > 0

    def may_drain(self) -> bool:
        """Enough steps ran on this queue that draining it is worth a restart."""
        return self.steps_since_build >= STEPS_BEFORE_DRAIN_MIN

    # -- rules --

    @initialize(spec=profile_specs())
    def build(self, spec: ProfileSpec) -> None:
        """Build the queue on both sides from one profile spec, then order a pair.

        On the fresh queue, two requests of the first class (the later one
        cheaper) and a pop with every worker free: the class's policy alone
        decides which is served (FCFS the first; WSPT and LCFS the second).
        Every program checks that ordering, whichever rules Hypothesis enables
        in it (it enables a random subset per program), so no run leaves a
        policy's ordering unchecked when its profile has that policy.
        """
        note(f"profile: {spec}")
        self._start(QueueHarness(spec, type(self).factory))
        for tokens, arrival in OPENING_PAIR:
            payload = self._next_payload()
            self._apply("build", request(payload, raw=tokens, arrival=arrival))
        self._apply("build", PopNext(dispatch=Dispatch()))
        self.steps_since_build = 0

    @rule(
        data=DRAW,
        worker_count=st.sampled_from(WORKER_COUNTS),
        raw=st.integers(0, 40) | st.sampled_from((0, 1, 100, 1000)),
        cached=st.integers(0, 30),
        arrival=st.sampled_from(ARRIVALS_S),
        jump=st.sampled_from(JUMPS),
        strict=st.sampled_from(STRICT),
        placement=st.none() | st.sampled_from(WORKERS),
    )
    def enqueue(  # noqa: PLR0917 - Hypothesis passes rule arguments by keyword
        self,
        data: Draw,
        worker_count: int,
        raw: int,
        cached: int,
        arrival: float,
        jump: float,
        strict: int,
        placement: Worker | None,
    ) -> None:
        """Enqueueing gives the same rejection (or none) on both sides."""
        class_index = self._draw_class(data)
        self._apply(
            "enqueue",
            Enqueue(
                class_index=class_index,
                worker_count=worker_count,
                raw_isl_tokens=raw,
                cached_tokens=cached,
                arrival_offset_secs=arrival,
                priority_jump=jump,
                strict_priority=strict,
                placement=placement,
                payload=self._next_payload(),
            ),
        )

    @rule(
        data=DRAW,
        raw=st.sampled_from(((10, 10), (40, 5), (5, 40))),
        arrivals=st.sampled_from(((0.0, 1.0), (1.0, 0.0))),
    )
    def two_requests_then_a_pop(
        self, data: Draw, raw: tuple[int, int], arrivals: tuple[float, float]
    ) -> None:
        """Two requests of one class and tier, then a pop with all free, agree.

        The class's policy alone decides which one is served: the scenario that
        makes FCFS, WSPT and LCFS differ, in every program.
        """
        class_index = self._draw_class(data)
        for tokens, arrival in zip(raw, arrivals, strict=True):
            self._apply(
                "two_requests_then_a_pop",
                request(self._next_payload(), class_index, raw=tokens, arrival=arrival),
            )
        self._apply("two_requests_then_a_pop", PopNext(dispatch=Dispatch()))

    @rule(data=DRAW, lanes=st.permutations(WORKERS))
    def pop_beside_a_blocked_lane(self, data: Draw, lanes: list[Worker]) -> None:
        """A lane blocked while its worker was saturated is passed by, alike.

        One entry on the first worker's lane, two on the second's; a pop with
        the first worker saturated blocks its lane, and a pop with every
        worker free serves the second lane again, beside the blocked one.
        """
        blocked, served = lanes[0], lanes[1]
        class_index = self._draw_class(data)
        rule_name = "pop_beside_a_blocked_lane"
        for placement in (blocked, served, served):
            self._apply(
                rule_name,
                request(self._next_payload(), class_index, placement=placement),
            )
        self._apply(rule_name, PopNext(Dispatch(saturated=frozenset({blocked}))))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))

    @rule(data=DRAW, worker=st.sampled_from(WORKERS))
    def a_carry_across_an_emptied_queue(self, data: Draw, worker: Worker) -> None:
        """Credit carried past a queue that `retain` emptied is dropped by a pop, alike.

        The queue is emptied; two cheap requests of one class and a pop (its
        leftover credit is carried when its quantum exceeds one token); the
        other request is dropped, and the empty queue is popped (which forgets
        the carry). Then one request on a worker's lane of that class and one
        of another class; a pop with that worker saturated serves the other
        class -- a carried class would be visited first and its lane blocked
        -- and a pop with every worker free serves the lane.
        """
        rule_name = "a_carry_across_an_emptied_queue"
        count = self._class_count()
        carried = data.draw(st.integers(0, count - 1), label="class")
        others = [index for index in range(count) if index != carried]
        self._apply(rule_name, Retain(drop=frozenset(self._payloads())))
        first, second = self._next_payload(), self._next_payload()
        for payload in (first, second):
            self._apply(rule_name, request(payload, carried))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, Retain(drop=frozenset(self._payloads())))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, request(self._next_payload(), carried, placement=worker))
        if others:
            other = data.draw(sampled_from(others), label="other class")
            self._apply(rule_name, request(self._next_payload(), other))
        self._apply(rule_name, PopNext(Dispatch(saturated=frozenset({worker}))))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))

    @rule(data=DRAW, kind=st.sampled_from(LIMIT_KINDS))
    def a_limit_refuses_an_enqueue(self, data: Draw, kind: LimitKind) -> None:
        """A class's limit of one kind refuses an enqueue once reached, alike.

        In a class whose `kind` limit is set and whose limits checked before it
        are not, requests (one worker) that each bring more than the limit of
        that counter are enqueued until one is refused. Self-contained, so the
        three kinds of refusal are reached in a run even where other rules
        keep emptying the queue.
        """
        rule_name = "a_limit_refuses_an_enqueue"
        eligible = [
            index
            for index, config in enumerate(self.model.state.configs)
            if config.limit_per_worker(kind) is not None
            and all(
                config.limit_per_worker(earlier) is None
                for earlier in LIMIT_KINDS[: LIMIT_KINDS.index(kind)]
            )
        ]
        if not eligible:
            return
        class_index = data.draw(sampled_from(eligible), label="class")
        limit = self.model.state.configs[class_index].limit_per_worker(kind)
        assert limit is not None
        tokens = 1 if kind == "requests" else limit + 1
        cached = tokens if kind == "cached_tokens" else 0
        for _ in range(limit + 1):
            outcome = self._apply(
                rule_name,
                request(self._next_payload(), class_index, raw=tokens, cached=cached),
            )
            if isinstance(outcome.value, Rejection) or not outcome.ok:
                return

    @rule(data=DRAW)
    def a_carry_into_a_class_that_retain_emptied(self, data: Draw) -> None:
        """A carried class that `retain` emptied gets no credit from the carry, alike.

        Two cheap requests of one class and a pop carry that class's leftover
        credit (its quantum exceeds one token); a request of another class
        arrives and `retain` drops the carried class's other request. A pop
        serves the other class before the ring comes back to the emptied one.
        Then two requests of the emptied class and one of the other: the
        emptied class starts again from no credit, so its first pop grants it
        a quantum and carries the rest, and the next pop serves it again.
        """
        rule_name = "a_carry_into_a_class_that_retain_emptied"
        configs = self.model.state.configs
        if len(configs) < 2:
            return
        generous = [i for i, config in enumerate(configs) if config.quantum > 1]
        carried = data.draw(
            st.sampled_from(generous or range(len(configs))), label="carried class"
        )
        other = data.draw(
            sampled_from([i for i in range(len(configs)) if i != carried]),
            label="other class",
        )
        self._apply(rule_name, Retain(drop=frozenset(self._payloads())))
        first, second = self._next_payload(), self._next_payload()
        for payload in (first, second):
            self._apply(rule_name, request(payload, carried))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, request(self._next_payload(), other))
        self._apply(rule_name, Retain(drop=frozenset({second})))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        for class_index in (carried, carried, other):
            self._apply(rule_name, request(self._next_payload(), class_index))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))

    @rule(data=DRAW)
    def credit_of_a_class_that_a_pop_emptied(self, data: Draw) -> None:
        """A class that a pop emptied comes back with no credit, alike.

        With the queue empty, a class whose quantum exceeds one token is given
        two one-token requests and popped twice: the second pop spends carried
        credit and empties the class, which must drop what is left. The class
        just before it in the ring is served once, so the ring starts at the
        emptied class next. Then a request costing one token more than its
        quantum and a one-token request of the class before: one quantum does
        not pay for the first, so the pop serves the other class; leftover
        credit from before would pay for it and serve it first.
        """
        rule_name = "credit_of_a_class_that_a_pop_emptied"
        configs = self.model.state.configs
        generous = [i for i, config in enumerate(configs) if config.quantum > 1]
        if len(configs) < 2 or not generous:
            return
        emptied = data.draw(sampled_from(generous), label="emptied class")
        before = (emptied - 1) % len(configs)
        quantum = configs[emptied].quantum
        self._apply(rule_name, Retain(drop=frozenset(self._payloads())))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        for class_index in (emptied, emptied):
            self._apply(rule_name, request(self._next_payload(), class_index))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, request(self._next_payload(), before))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))
        self._apply(rule_name, request(self._next_payload(), emptied, raw=quantum + 1))
        self._apply(rule_name, request(self._next_payload(), before))
        self._apply(rule_name, PopNext(dispatch=Dispatch()))

    @rule()
    def pop(self) -> None:
        """Popping under the current saturation gives the same entry (or none)."""
        self._apply("pop", PopNext(dispatch=self._dispatch()))

    @rule()
    def pop_with_every_worker_free(self) -> None:
        """Popping with everything dispatchable gives the same entry (or none)."""
        self._apply("pop_with_every_worker_free", PopNext(dispatch=Dispatch()))

    @rule(worker=st.sampled_from(WORKERS))
    def toggle_worker(self, worker: Worker) -> None:
        """A worker becomes saturated, or frees up (no queue call)."""
        self._ran("toggle_worker")
        self.saturated ^= {worker}

    @rule()
    def toggle_any_work(self) -> None:
        """Shared (Any-lane) work becomes undispatchable, or dispatchable again."""
        self._ran("toggle_any_work")
        self.any_dispatchable = not self.any_dispatchable

    @rule(data=DRAW)
    def toggle_class_pause(self, data: Draw) -> None:
        """A class is paused (its predicate refuses all), or resumed."""
        self._ran("toggle_class_pause")
        class_index = self._draw_class(data)
        self.paused ^= {class_index}

    @precondition(has_entries)
    @rule(data=DRAW, unknown=st.booleans())
    def retain(self, data: Draw, unknown: bool) -> None:
        """Dropping some payloads leaves the same entries on both sides."""
        payloads = self._payloads()
        drop = set(data.draw(st.sets(st.sampled_from(payloads)), label="drop"))
        if unknown:
            drop.add(self.next_payload + 1_000)
        self._apply("retain", Retain(drop=frozenset(drop)))

    @precondition(may_drain)
    @rule()
    def drain_and_rebuild(self) -> None:
        """Draining yields the same entries alike; then both queues restart."""
        self._apply("drain_and_rebuild", Drain())
        self._apply("drain_and_rebuild", Rebuild())
        self.steps_since_build = 0

    @rule(call=st.sampled_from(("class_stats", "has_backlog", "class_config")))
    def read_a_class_out_of_range(self, call: str) -> None:
        """A read of a class the profile lacks is refused alike, changing nothing."""
        bad = self._class_count()
        reads: dict[str, Callable[[int], QueueOp]] = {
            "class_stats": ReadStats,
            "has_backlog": ReadBacklog,
        }
        read = reads.get(call, ReadConfig)
        outcome = self._apply("read_a_class_out_of_range", read(bad))
        assert outcome.error == "QueueUsageError", f"the model allowed {call}({bad})"

    @rule(out_of_range=st.sampled_from(("class_index", "strict_priority")))
    def enqueue_out_of_range(self, out_of_range: str) -> None:
        """An enqueue with a value the crate cannot take is refused alike."""
        op = request(self._next_payload())
        if out_of_range == "class_index":
            op = replace(op, class_index=self._class_count())
        else:
            op = replace(op, strict_priority=U32_MAX + 1)
        outcome = self._apply("enqueue_out_of_range", op)
        assert outcome.error == "QueueUsageError", f"the model allowed {op}"

    def _next_payload(self) -> int:
        payload = self.next_payload
        self.next_payload += 1
        return payload

    def teardown(self) -> None:
        """Everything not in a blocked lane leaves within a capped drain."""
        if self.harness is None:
            return
        for _ in range(TEARDOWN_POPS_MAX):
            popped = self._apply("teardown", PopNext(dispatch=Dispatch()))
            if popped.value is None:
                break
        else:
            raise AssertionError(f"queue not drained in {TEARDOWN_POPS_MAX} pops")
        stranded = {
            (index, entry.placement)
            for index, cls in enumerate(self.model.state.classes)
            for entry in cls.entries
        }
        blocked = {
            (index, worker)
            for index, cls in enumerate(self.model.state.classes)
            for worker in cls.blocked
        }
        assert set() == stranded - blocked, "entries stranded outside blocked lanes"
        self._apply("teardown", Drain())
