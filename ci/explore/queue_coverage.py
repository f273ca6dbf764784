"""Exact coverage of the queue bounds: which states and edges Hypothesis visits.

Two machines are measured, as for affinity (`ci.explore.coverage` holds the
shared measurement):

* `queue`: the suite's differential queue machine
  (`stateful.queue_machine.QueueMachine`), model against model, with its
  profile pinned to the bound's and every rule unchanged. Every operation it
  sends through `_apply` (teardown's pops and drain too, reads and rebuilds)
  is recorded in
  canonical form: the states before and after projected by `canonical`, the
  operation renamed by `canonical_op` against the state before. Its tokens,
  arrivals, jumps, priorities, worker counts and workers are drawn from far
  wider sets than a bound's alphabet, so most of its steps leave the bound and
  cover nothing; what they do cover is counted exactly.
* `restricted`: one rule per operation type, drawing among the operations the
  explorer enumerates from the current node that keep the queue inside the
  bound. It drives a concrete model whose payloads are numbered as the suite's
  machine numbers them (1, 2, 3, ..., never reused), translating each drawn
  operation to those payloads, so each step also exercises the projection:
  renaming the applied operation back must give the drawn one, and every
  step is an edge of the graph. `Drain` is enabled from the first step and
  every call after it is refused, so a large share of its steps are
  self-loops on the drained node: that is Hypothesis' choice, measured as is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from hypothesis.stateful import initialize

from ci.explore.coverage import (
    MachineRun,
    MachineStep,
    RestrictedBase,
    RuleTable,
    check_rule_table,
    run_recording,
    run_restricted,
)
from ci.explore.queue_graph import (
    QueueBound,
    apply,
    canonical,
    canonical_op,
    payload_names,
    successors,
)
from model.queue.ops import (
    Drain,
    Enqueue,
    PopNext,
    QueueOp,
    QueueOutcome,
    ReadBacklog,
    ReadConfig,
    ReadStats,
    Rebuild,
    Retain,
)
from model.queue.table import QueueState, initial_state
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import ProfileSpec, QueueHarness, model_factory

QueueStep = MachineStep["QueueState | None", QueueOp]

QUEUE_RULE_OP_TYPES: RuleTable = {
    "a_carry_across_an_emptied_queue": frozenset({Retain, Enqueue, PopNext}),
    "a_limit_refuses_an_enqueue": frozenset({Enqueue}),
    "a_carry_into_a_class_that_retain_emptied": frozenset({Retain, Enqueue, PopNext}),
    "credit_of_a_class_that_a_pop_emptied": frozenset({Retain, Enqueue, PopNext}),
    "drain_and_rebuild": frozenset({Drain, Rebuild}),
    "enqueue": frozenset({Enqueue}),
    "enqueue_out_of_range": frozenset({Enqueue}),
    "pop": frozenset({PopNext}),
    "pop_beside_a_blocked_lane": frozenset({Enqueue, PopNext}),
    "pop_with_every_worker_free": frozenset({PopNext}),
    "read_a_class_out_of_range": frozenset({ReadStats, ReadBacklog, ReadConfig}),
    "retain": frozenset({Retain}),
    "teardown": frozenset({PopNext, Drain}),
    "toggle_any_work": frozenset(),
    "toggle_class_pause": frozenset(),
    "toggle_worker": frozenset(),
    "two_requests_then_a_pop": frozenset({Enqueue, PopNext}),
}
"""Which operation types each queue machine rule (and its teardown) can apply."""

QUEUE_STEP_SOURCES = frozenset({"teardown"})
"""Where the queue machine applies operations outside a rule."""


def _step(rule: str, before: QueueState, op: QueueOp, after: QueueState) -> QueueStep:
    """One applied operation, in canonical form."""
    return MachineStep(
        rule, canonical(before), canonical_op(before, op), canonical(after)
    )


class _RecordingQueueMachine(QueueMachine):
    """The queue machine pinned to one profile, recording every applied operation."""

    bound: ClassVar[QueueBound]
    recorded: ClassVar[list[QueueStep]]
    programs: ClassVar[int] = 0

    @initialize()
    def build(self) -> None:
        """Build model and second model with the bound's profile."""
        type(self).programs += 1
        spec = ProfileSpec(self.bound.configs, None, None, "fcfs")
        self._start(QueueHarness(spec, type(self).factory))
        self.steps_since_build = 0

    def _apply(self, rule_name: str, op: QueueOp) -> QueueOutcome:
        before = self.model.state
        try:
            return super()._apply(rule_name, op)
        finally:
            type(self).recorded.append(_step(rule_name, before, op, self.model.state))


def run_queue_machine(bound: QueueBound, profile: str) -> MachineRun[Any, Any]:
    """Run the pinned, recording queue machine under the named profile."""
    check_rule_table(QueueMachine, QUEUE_RULE_OP_TYPES, QUEUE_STEP_SOURCES)
    return run_recording(
        _RecordingQueueMachine,
        f"QueueCoverage_{bound.name}_{profile}",
        profile,
        QUEUE_RULE_OP_TYPES,
        {"factory": staticmethod(model_factory), "bound": bound},
    )


@dataclass
class ConcreteQueue:
    """A concrete model driven by node operations, numbering payloads 1, 2, 3, ...

    Payloads are never reused, as in the suite's machine, so after a pop or a
    retain the concrete names differ from the canonical ones; each operation
    drawn on the node is translated to the concrete names, applied, and
    projected back.
    """

    state: QueueState
    next_payload: int = 1

    def concrete(self, op: QueueOp) -> QueueOp:
        """`op`, drawn on the node, with the concrete queue's payloads."""
        names = {} if self.state.drained else payload_names(self.state) or {}
        payload_of = {name: payload for payload, name in names.items()}
        match op:
            case Enqueue():
                self.next_payload += 1
                return replace(op, payload=self.next_payload - 1)
            case Retain(drop=drop) if drop:
                return Retain(frozenset(payload_of[name] for name in drop))
            case Retain():
                return Retain(frozenset({self.next_payload}))  # queued nowhere
            case _:
                return op

    def apply(self, rule_name: str, op: QueueOp) -> tuple[QueueStep, QueueOutcome]:
        """Apply the concrete form of `op`: the step in canonical form, the outcome.

        The outcome is the concrete one; the step's operation must name `op`.
        """
        before = self.state
        concrete = self.concrete(op)
        self.state, outcome = apply(before, concrete)
        step = _step(rule_name, before, concrete, self.state)
        assert op == step.op, f"{op} applied as {concrete} is named {step.op}"
        return step, outcome


class _RestrictedQueueMachine(RestrictedBase):
    """Hypothesis choosing only among a bound's own operations (see the module).

    `run_restricted` adds one rule per operation type.
    """

    bound: ClassVar[QueueBound]

    def __init__(self) -> None:
        """A fresh concrete queue with the bound's profile."""
        super().__init__()
        type(self).programs += 1
        self.queue = ConcreteQueue(initial_state(self.bound.configs))
        self._enabled_at: QueueState | None = None
        self._enabled: dict[type[object], list[QueueOp]] = {}

    def enabled(self, op_type: type[object]) -> list[QueueOp]:
        """The node's operations of `op_type` that keep the queue in the bound."""
        node = canonical(self.queue.state)
        assert node is not None, "the machine enqueues fresh payloads only"
        if node != self._enabled_at:
            self._enabled_at = node
            self._enabled = {}
            for transition in successors(self.bound, node):
                if transition is not None:
                    self._enabled.setdefault(type(transition.op), []).append(
                        transition.op
                    )
        return self._enabled.get(op_type, [])

    def apply(self, rule_name: str, op: QueueOp) -> None:
        """Apply one drawn operation to the concrete queue and record the step."""
        step, _ = self.queue.apply(rule_name, op)
        type(self).recorded.append(step)


def run_restricted_queue_machine(
    bound: QueueBound, profile: str
) -> MachineRun[Any, Any]:
    """Run a machine whose rules are the bound's operation types, under `profile`."""
    return run_restricted(
        _RestrictedQueueMachine,
        f"RestrictedQueue_{bound.name}_{profile}",
        (Enqueue, PopNext, Retain, Drain),
        profile,
        {"bound": bound},
    )


QUEUE_RUNNERS: dict[str, Callable[[QueueBound, str], MachineRun[Any, Any]]] = {
    "queue": run_queue_machine,
    "restricted": run_restricted_queue_machine,
}
"""`queue`: the suite's queue machine, profile pinned; `restricted`: the bound's ops."""
