"""Exact coverage of the affinity bounds: which states and edges Hypothesis visits.

Two machines are measured (`ci.explore.coverage` holds the shared
measurement):

* `affinity`: the suite's differential machine
  (`stateful.affinity_machine.AffinityMachine`), model against model, with its
  configuration pinned to the bound's and every other rule unchanged. Its
  rules draw and guard on the model only, so the visited model states are the
  ones a run against the crate visits (up to a disagreement, which would fail
  that run anyway), without needing the binding or its cost. Steps that
  leave the bound (other sessions, pins, clock instants, or past `depth_max`)
  cover nothing. Its rules' denominators are `RULE_OP_TYPES`.
* `restricted`: one rule per operation type of the bound, drawing only the
  operations the explorer enumerates and stopping at `depth_max`.

`AFFINITY_RUNNERS` names both for the registry's explorer entry.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any, ClassVar

from hypothesis.stateful import initialize

from ci.explore.affinity_graph import Bound, successors
from ci.explore.coverage import (
    HorizonRestrictedBase,
    MachineRun,
    MachineStep,
    check_rule_table,
    run_recording,
    run_restricted,
)
from model.affinity.ops import (
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    DropTable,
    EnableReplication,
    Invalidate,
    Join,
    NextVersion,
    ObserveSequence,
    Op,
    PollWaiter,
    Query,
    Release,
)
from model.affinity.table import AffinityState, ModelAffinity
from model.affinity.types import AffinityConfig
from stateful.affinity_machine import SESSION_POOL, AffinityMachine
from stateful.affinity_subject import AffinityHarness
from stateful.harness import StepReport

RULE_OP_TYPES: dict[str, frozenset[type[Op]]] = {
    "abort": frozenset({Abort}),
    "acquire": frozenset({Acquire}),
    "advance": frozenset({Advance}),
    "apply_replica": frozenset({ApplyReplica}),
    "bound_holds_dispatched_elsewhere_after_a_change": frozenset(
        {Acquire, Commit, Release, ApplyReplica, EnableReplication, Invalidate}
    ),
    "commit": frozenset({Commit}),
    "commit_where_bound": frozenset({Commit}),
    "drop_table": frozenset({DropTable}),
    "enable_replication": frozenset({EnableReplication}),
    "invalidate": frozenset({Invalidate}),
    "leases_across_a_revived_binding": frozenset(
        {Acquire, Commit, Release, Advance, ApplyReplica, Invalidate}
    ),
    "join": frozenset({Join}),
    "next_version": frozenset({NextVersion}),
    "observe_sequence": frozenset({ObserveSequence}),
    "poll_waiter": frozenset({PollWaiter}),
    "query": frozenset({Query}),
    "racing_requests": frozenset({Acquire, Join, Commit, Abort}),
    "reaper_tick": frozenset({Advance}),
    "release": frozenset({Release}),
    "request_turn": frozenset({Acquire, Commit, Release}),
    "reuse_consumed_handle": frozenset({Commit, Abort, Release}),
    "replica_for_a_bound_session": frozenset({ApplyReplica}),
    "replica_for_an_expired_session": frozenset(
        {Acquire, Commit, Release, Advance, ApplyReplica}
    ),
    "replica_during_initialization": frozenset({ApplyReplica}),
    "release_after_a_replica_refresh": frozenset({ApplyReplica, Release}),
    "new_session_against_uncollected_expiry": frozenset(
        {Acquire, Commit, Release, Advance}
    ),
    "stale_leases_across_two_rebindings": frozenset(
        {Acquire, Commit, Release, Advance, ApplyReplica, Invalidate}
    ),
    "stale_lease_across_a_revival": frozenset(
        {Acquire, Commit, Release, Advance, ApplyReplica, Invalidate}
    ),
    "waiting_request": frozenset({Acquire, PollWaiter, Commit, Abort, Join}),
}
"""Which operation types each machine rule can apply (the per-rule denominators)."""


class _RecordingMachine(AffinityMachine):
    """The affinity machine pinned to one configuration, recording every step."""

    pinned_config: ClassVar[AffinityConfig]
    recorded: ClassVar[list[MachineStep[AffinityState, Op]]]
    programs: ClassVar[int] = 0

    @initialize()
    def build(self) -> None:
        """Build model and second model with the bound's configuration."""
        type(self).programs += 1
        self.harness = AffinityHarness(
            config=type(self).pinned_config,
            session_pool=SESSION_POOL,
            factory=ModelAffinity,
            check_states=False,  # the second model cannot disagree; skip reading it
        )

    def _run(self, rule_name: str, op: Op) -> StepReport[Op]:
        harness = self._harness()
        before = harness.model.state()
        try:
            return super()._run(rule_name, op)
        finally:
            after = harness.model.state()
            type(self).recorded.append(MachineStep(rule_name, before, op, after))


def run_machine(bound: Bound, profile: str) -> MachineRun[AffinityState, Op]:
    """Run the machine pinned to the bound's configuration under `profile`."""
    check_rule_table(AffinityMachine, RULE_OP_TYPES)
    name = f"Coverage_{profile}"
    attributes = {"pinned_config": bound.config}
    return run_recording(_RecordingMachine, name, profile, RULE_OP_TYPES, attributes)


class _RestrictedMachine(HorizonRestrictedBase):
    """Hypothesis choosing only among a bound's own operations, within its depth.

    One rule per operation type of the bound draws from exactly the operations
    the explorer enumerates (`bound_ops`) that keep the state inside the bound
    (`handles_max`). Once a program is `depth_max` steps long, only
    `past_the_horizon` (which applies nothing) is enabled, so every recorded
    step is a graph edge and the fractions measure the search alone.
    """

    bound: ClassVar[Bound]

    def __init__(self) -> None:
        """A fresh model pair at the bound's configuration."""
        super().__init__()
        type(self).programs += 1
        self.harness = AffinityHarness(
            config=self.bound.config,
            session_pool=self.bound.session_ids,
            factory=ModelAffinity,
            check_states=False,  # the second model cannot disagree; skip reading it
        )
        self._enabled_step = -1
        self._enabled: dict[type[object], list[Op]] = {}

    def enabled(self, op_type: type[object]) -> list[Op]:
        """The bound's operations of `op_type` from here that stay in the bound."""
        if self.past_horizon():
            return []
        if self._enabled_step != self.harness.steps:
            self._enabled_step = self.harness.steps
            self._enabled = defaultdict(list)
            for transition in successors(
                self.bound, self.harness.model.state(), ModelAffinity
            ):
                if transition is not None:
                    self._enabled[type(transition.op)].append(transition.op)
        return self._enabled.get(op_type, [])

    def apply(self, rule_name: str, op: Op) -> None:
        """Step the model pair, record the step, and require no violation."""
        before = self.harness.model.state()
        report = self.harness.step(op)
        type(self).recorded.append(
            MachineStep(rule_name, before, op, self.harness.model.state())
        )
        assert not report.violations, report.first_difference()

    def depth(self) -> int:
        """The harness' step count."""
        steps: int = self.harness.steps
        return steps


def run_restricted_machine(bound: Bound, profile: str) -> MachineRun[Any, Any]:
    """Run a machine whose rules are the bound's operations, under `profile`."""
    return run_restricted(
        _RestrictedMachine,
        f"Restricted_{bound.name}_{profile}",
        bound.op_types,
        profile,
        {"bound": bound},
    )


AFFINITY_RUNNERS: dict[str, Callable[[Bound, str], MachineRun[Any, Any]]] = {
    "affinity": run_machine,
    "restricted": run_restricted_machine,
}
"""`affinity`: the suite's machine, config pinned; `restricted`: the bound's ops."""
