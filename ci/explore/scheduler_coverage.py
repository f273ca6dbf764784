"""Exact coverage of the scheduler bounds: which states and edges Hypothesis visits.

Two machines are measured, as for the other subjects (`ci.explore.coverage`
holds the shared measurement):

* `scheduler`: the suite's differential scheduler machine
  (`stateful.scheduler_machine.SchedulerMachine`), model against model, with
  its workers pinned to the bound's and every rule unchanged. Every operation
  it sends (its scripted rules' and teardown's too) is recorded with the
  model's state before and after it, as nodes (`node_of`). It names requests
  as the graph does (`r000`, `r001`, ... in scheduling order) and keeps time
  absolute, so a step covers an edge exactly when the graph holds that call
  between those two states. Its prompt sizes, due offsets, capacities and
  clock steps are drawn from wider sets than a bound's alphabet, and its
  programs run longer than `depth_max`, so many of its steps leave the bound
  and cover nothing; what they cover is counted exactly.
* `restricted`: one rule per operation type, drawing among the operations the
  explorer enumerates from the current node that stay inside the bound, and
  stopping at `depth_max`: every step it takes is a graph edge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis.stateful import initialize

from ci.explore.coverage import (
    HorizonRestrictedBase,
    MachineRun,
    MachineStep,
    RuleTable,
    check_rule_table,
    run_recording,
    run_restricted,
)
from ci.explore.scheduler_graph import Node, SchedulerBound, node_of, successors
from model.scheduler.api import outcome_of
from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SchedulerOp,
    SetAvailable,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.table import ModelScheduler
from stateful.harness import StepReport
from stateful.scheduler_machine import SchedulerMachine
from stateful.scheduler_subject import SchedulerHarness, model_factory

SchedulerStep = MachineStep[Node, SchedulerOp]

SCHEDULER_RULE_OP_TYPES: RuleTable = {
    "a_blocked_lane_then_a_recheck": frozenset({Schedule, Free, SetCapacity}),
    "a_blocked_lane_whose_worker_goes_away": frozenset(
        {Schedule, UpdateQueue, SetAvailable, Advance}
    ),
    "a_shared_head_then_its_end": frozenset({Schedule, Cancel, Advance}),
    "advance": frozenset({Advance}),
    "cancel": frozenset({Cancel}),
    "cancel_after_the_end": frozenset({Cancel}),
    "free": frozenset({Free}),
    "free_without_a_booking": frozenset({Free}),
    "schedule": frozenset({Schedule}),
    "schedule_a_caller_that_leaves": frozenset({Schedule}),
    "set_available": frozenset({SetAvailable}),
    "set_capacity": frozenset({SetCapacity}),
    "teardown": frozenset({Free, UpdateQueue}),
    "two_far_due_times_in_one_lane": frozenset({Advance, Schedule, Free}),
    "update_queue": frozenset({UpdateQueue}),
}
"""Which operation types each scheduler machine rule (and its teardown) applies."""

SCHEDULER_STEP_SOURCES = frozenset({"teardown"})
"""Where the scheduler machine applies operations outside a rule."""


class _RecordingSchedulerMachine(SchedulerMachine):
    """The scheduler machine pinned to one bound's workers, recording every call."""

    bound: ClassVar[SchedulerBound]
    recorded: ClassVar[list[SchedulerStep]]
    programs: ClassVar[int] = 0

    @initialize()
    def build(self) -> None:  # the workers are pinned: no draws
        """Build model and second model with the bound's workers."""
        type(self).programs += 1
        self._start(SchedulerHarness(self.bound.config, model_factory))

    def _run(self, rule_name: str, op: Any) -> StepReport[Any]:
        before = node_of(self.state)
        try:
            return super()._run(rule_name, op)
        finally:
            step = MachineStep(rule_name, before, op, node_of(self.state))
            type(self).recorded.append(step)


def run_scheduler_machine(bound: SchedulerBound, profile: str) -> MachineRun[Any, Any]:
    """Run the pinned, recording scheduler machine under the named profile."""
    check_rule_table(SchedulerMachine, SCHEDULER_RULE_OP_TYPES, SCHEDULER_STEP_SOURCES)
    return run_recording(
        _RecordingSchedulerMachine,
        f"SchedulerCoverage_{bound.name}_{profile}",
        profile,
        SCHEDULER_RULE_OP_TYPES,
        {"factory": staticmethod(model_factory), "bound": bound},
    )


class _RestrictedSchedulerMachine(HorizonRestrictedBase):
    """Hypothesis choosing only among a bound's own operations, within its depth.

    `run_restricted` adds one rule per operation type; past `depth_max` only
    `past_the_horizon` is enabled (`HorizonRestrictedBase`).
    """

    bound: ClassVar[SchedulerBound]

    def __init__(self) -> None:
        """A fresh model at the bound's workers."""
        super().__init__()
        type(self).programs += 1
        self.node = node_of(ModelScheduler(self.bound.config).state)
        self.steps = 0
        self._enabled_step = -1
        self._enabled: dict[type[object], list[SchedulerOp]] = {}
        self._after: dict[SchedulerOp, Node] = {}

    def enabled(self, op_type: type[object]) -> list[SchedulerOp]:
        """The node's operations of `op_type` that stay in the bound."""
        if self.past_horizon():
            return []
        if self._enabled_step != self.steps:
            self._enabled_step = self.steps
            self._enabled = defaultdict(list)
            self._after = {}
            for transition in successors(self.bound, self.node):
                if transition is not None:
                    self._enabled[type(transition.op)].append(transition.op)
                    self._after[transition.op] = transition.after
        return self._enabled.get(op_type, [])

    def apply(self, rule_name: str, op: SchedulerOp) -> None:
        """Apply one drawn operation to a model and record the step."""
        scheduler = ModelScheduler(self.bound.config)
        scheduler.state = self.node.state
        outcome_of(scheduler, op)
        after = node_of(scheduler.state)
        assert after == self._after[op], f"{op} left the node the graph recorded"
        type(self).recorded.append(MachineStep(rule_name, self.node, op, after))
        self.node = after
        self.steps += 1

    def depth(self) -> int:
        """Operations applied in this program so far."""
        return self.steps


def run_restricted_scheduler_machine(
    bound: SchedulerBound, profile: str
) -> MachineRun[Any, Any]:
    """Run a machine whose rules are the bound's operation types, under `profile`."""
    return run_restricted(
        _RestrictedSchedulerMachine,
        f"RestrictedScheduler_{bound.name}_{profile}",
        (Schedule, Free, SetCapacity, UpdateQueue, Advance, Cancel),
        profile,
        {"bound": bound},
    )


SCHEDULER_RUNNERS: dict[str, Callable[[SchedulerBound, str], MachineRun[Any, Any]]] = {
    "scheduler": run_scheduler_machine,
    "restricted": run_restricted_scheduler_machine,
}
"""`scheduler`: the suite's machine, workers pinned; `restricted`: the bound's ops."""
