"""Exact coverage: which of a bound's states and edges Hypothesis visits.

Two machines are measured. `affinity`: the suite's differential machine
(`stateful.affinity_machine.AffinityMachine`) runs with its configuration
pinned to the bound's and every other rule unchanged. Each
step it executes is recorded as (rule, state before, operation, state after);
a state counts as covered when it is a node of the bound's graph, an edge when
the graph holds exactly that (before, after, operation) transition. Steps that
leave the bound (other sessions, pins, clock instants, or past `depth_max`)
cover nothing, so the fractions measure how much of this exhaustively known
space the randomized search reaches, with exact denominators.

The machine runs model against model: its rules draw and guard on the model
only, so the visited model states are the ones a run against the crate visits
(up to a disagreement, which would fail that run anyway), without needing the
binding or its cost.

Per rule, the denominator is the number of graph edges whose operation type the
rule can emit (`RULE_OP_TYPES`); a rule that emits an undeclared type, or a
machine rule missing from the table, raises rather than being miscounted.

`restricted`: a machine with one rule per operation type of the bound, drawing
only the operations the explorer enumerates and stopping at `depth_max`, so
every step it takes is a graph edge. Its fractions separate "Hypothesis leaves
the bound" (the first machine) from "Hypothesis' choices within the bound".

The measurement (`MachineStep`, `MachineRun`, `measure`) and the restricted
machines' rule builder (`run_restricted`) are shared with the policy queue
and the scheduler, whose machines live in `ci.explore.queue_coverage` and
`ci.explore.scheduler_coverage`; `HorizonRestrictedBase` (a restricted machine
that stops at `depth_max`) with the scheduler.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ci.explore.graph import Bound, successors
from ci.explore.search import AnyExploration
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
from stateful.machine import DifferentialMachine, rules_of

RuleTable = Mapping[str, frozenset[type[object]]]
"""Rule name -> the operation types it can apply (the per-rule denominators)."""

StateT = TypeVar("StateT")
OpT = TypeVar("OpT")

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


def check_rule_table(
    machine: type[DifferentialMachine] = AffinityMachine,
    table: RuleTable = RULE_OP_TYPES,
    extra: frozenset[str] = frozenset(),
) -> None:
    """Every machine rule (and `extra` step source) has a row, and none is stale."""
    rules = set(rules_of(machine)) | extra
    missing = sorted(rules - set(table))
    stale = sorted(set(table) - rules)
    if missing or stale:
        raise LookupError(
            f"the rule table of {machine.__name__} is out of date: "
            f"missing {missing}, stale {stale}"
        )


@dataclass(frozen=True)
class MachineStep(Generic[StateT, OpT]):
    """One operation the machine applied, with the model's state around it.

    For a subject whose nodes are canonical forms, `before`, `op` and `after`
    are already in that form (None: a state that is no node's form).
    """

    rule: str
    before: StateT
    op: OpT
    after: StateT


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


@dataclass(frozen=True)
class MachineRun(Generic[StateT, OpT]):
    """The steps of one machine run pinned to a configuration."""

    profile: str
    programs: int
    steps: tuple[MachineStep[StateT, OpT], ...]
    machine: str = "affinity"  # which machine, e.g. "affinity" or "restricted"
    rule_op_types: RuleTable = field(default_factory=lambda: RULE_OP_TYPES)


def run_machine(config: AffinityConfig, profile: str) -> MachineRun[AffinityState, Op]:
    """Run the pinned, recording machine under the named Hypothesis profile."""
    check_rule_table()
    machine = cast(
        "type[_RecordingMachine]",
        type(
            f"Coverage_{profile}",
            (_RecordingMachine,),
            {
                "goals_reached": set(),
                "rules_run": set(),
                "steps_run": 0,
                "pinned_config": config,
                "recorded": [],
                "programs": 0,
            },
        ),
    )
    run_state_machine_as_test(machine, settings=settings.get_profile(profile))
    return MachineRun(profile, int(machine.programs), tuple(machine.recorded))


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


class RestrictedBase(RuleBasedStateMachine):
    """Base of the restricted machines: steps are recorded in class attributes."""

    recorded: ClassVar[list[MachineStep[Any, Any]]]
    programs: ClassVar[int] = 0


class HorizonRestrictedBase(RestrictedBase):
    """A restricted machine over a graph cut at a depth horizon.

    `depth()` counts the operations applied so far; once it reaches the
    bound's `depth_max`, the machine's `enabled` offers nothing and only
    `past_the_horizon` (which applies nothing) is enabled, so every recorded
    step is a graph edge. The affinity and scheduler bounds are cut so.
    """

    bound: ClassVar[Any]  # any bound with a `depth_max`

    def depth(self) -> int:
        """Operations applied in this program so far."""
        raise NotImplementedError

    def past_horizon(self) -> bool:
        """The program is `depth_max` operations long: nothing more applies."""
        depth_max: int = self.bound.depth_max
        return self.depth() >= depth_max

    @precondition(lambda self: self.past_horizon())
    @rule()
    def past_the_horizon(self) -> None:
        """Beyond `depth_max` nothing is applied (the graph ends there)."""


class _Restricting(Protocol):
    """What a restricted machine offers its generated rules."""

    def enabled(self, op_type: type[object]) -> list[Any]:
        """The bound's operations of `op_type` enabled here, inside the bound."""
        ...

    def apply(self, rule_name: str, op: Any) -> None:
        """Apply one enabled operation and record the step."""
        ...


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


def _restricted_rule(op_type: type[object]) -> Any:
    """A rule applying one enabled operation of `op_type`."""
    name = _snake(op_type.__name__)

    def step(self: _Restricting, data: st.DataObject) -> None:
        op = data.draw(st.sampled_from(self.enabled(op_type)), label=name)
        self.apply(name, op)

    step.__name__ = name
    step.__doc__ = f"Apply one of the bound's `{op_type.__name__}` operations."
    guarded = precondition(lambda self: bool(self.enabled(op_type)))(step)
    return rule(data=st.data())(guarded)


def run_restricted(
    base: type[RestrictedBase],
    name: str,
    op_types: Iterable[type[object]],
    profile: str,
    attributes: Mapping[str, object],
) -> MachineRun[Any, Any]:
    """Run `base` with one rule per operation type, under `profile`.

    `attributes` become class attributes of the generated machine (its bound).
    """
    types = sorted(op_types, key=lambda t: t.__name__)
    rule_op_types = {_snake(t.__name__): frozenset({t}) for t in types}
    namespace: dict[str, Any] = {
        "recorded": [],
        "programs": 0,
        **attributes,
        **{_snake(t.__name__): _restricted_rule(t) for t in types},
    }
    machine = cast("type[RestrictedBase]", type(name, (base,), namespace))
    run_state_machine_as_test(machine, settings=settings.get_profile(profile))
    return MachineRun(
        profile,
        int(machine.programs),
        tuple(machine.recorded),
        machine="restricted",
        rule_op_types=dict(sorted(rule_op_types.items())),
    )


def run_restricted_machine(bound: Bound, profile: str) -> MachineRun[Any, Any]:
    """Run a machine whose rules are the bound's operations, under `profile`."""
    return run_restricted(
        _RestrictedMachine,
        f"Restricted_{bound.name}_{profile}",
        bound.op_types,
        profile,
        {"bound": bound},
    )


@dataclass(frozen=True)
class Fraction:
    """Covered out of an exact total."""

    covered: int
    total: int

    @property
    def percent(self) -> float:
        """Covered as a percentage (0 for an empty total)."""
        return 100.0 * self.covered / self.total if self.total else 0.0

    def as_dict(self) -> dict[str, Any]:
        """Plain data for reports."""
        return {
            "covered": self.covered,
            "total": self.total,
            "percent": round(self.percent, 2),
        }


@dataclass(frozen=True)
class Coverage:
    """How much of one bound's graph a machine run covered."""

    bound: str
    machine: str
    profile: str
    programs: int
    steps: int
    steps_in_graph: int
    states: Fraction
    edges: Fraction
    rules: dict[str, Fraction]
    covered_edges: frozenset[tuple[int, int, Any]]

    def as_dict(self) -> dict[str, Any]:
        """Plain data (no sets of edges) for the gate summary."""
        return {
            "bound": self.bound,
            "machine": self.machine,
            "profile": self.profile,
            "programs": self.programs,
            "steps": self.steps,
            "steps_in_graph": self.steps_in_graph,
            "states": self.states.as_dict(),
            "edges": self.edges.as_dict(),
            "rules": {rule: f.as_dict() for rule, f in sorted(self.rules.items())},
        }


def measure(exploration: AnyExploration, run: MachineRun[Any, Any]) -> Coverage:
    """Map the machine's steps onto the graph's nodes and edges."""
    graph, ids = exploration.graph, exploration.ids
    states: set[int] = set()
    edges: set[tuple[int, int, Any]] = set()
    table = run.rule_op_types
    by_rule: dict[str, set[tuple[int, int, Any]]] = {r: set() for r in table}
    in_graph = 0
    for step in run.steps:
        if type(step.op) not in table[step.rule]:
            raise LookupError(
                f"rule {step.rule} applied {type(step.op).__name__}, "
                "which its rule table does not declare"
            )
        source, target = ids.get(step.before), ids.get(step.after)
        if source is not None:
            states.add(source)
        if target is not None:
            states.add(target)
        if (
            source is not None
            and target is not None
            and graph.has_edge(source, target, key=step.op)
        ):
            in_graph += 1
            edges.add((source, target, step.op))
            by_rule[step.rule].add((source, target, step.op))
    totals = {
        rule: sum(1 for _, _, op in graph.edges(keys=True) if type(op) in op_types)
        for rule, op_types in table.items()
    }
    return Coverage(
        bound=exploration.bound.name,
        machine=run.machine,
        profile=run.profile,
        programs=run.programs,
        steps=len(run.steps),
        steps_in_graph=in_graph,
        states=Fraction(len(states), graph.number_of_nodes()),
        edges=Fraction(len(edges), graph.number_of_edges()),
        rules={rule: Fraction(len(by_rule[rule]), totals[rule]) for rule in table},
        covered_edges=frozenset(edges),
    )
