"""Exact coverage: which of a bound's states and edges Hypothesis visits.

What every subject's coverage shares (its machines live in
`ci.explore.<subject>_coverage`). A recording machine runs the subject's
differential machine, model against model, pinned to the bound; each step it
executes is recorded as (rule, state before, operation, state after). A state
counts as covered when it is a node of the bound's graph, an edge when the
graph holds exactly that (before, after, operation) transition; steps that
leave the bound cover nothing, so the fractions measure how much of this
exhaustively known space the randomized search reaches, with exact
denominators (`measure`).

Per rule, the denominator is the number of graph edges whose operation type the
rule can emit (a `RuleTable`); a rule that emits an undeclared type, or a
machine rule missing from the table, raises rather than being miscounted
(`check_rule_table`).

A restricted machine (`run_restricted`) has one rule per operation type of the
bound, drawing only the operations the explorer enumerates, so every step it
takes is a graph edge: its fractions separate "Hypothesis leaves the bound"
from "Hypothesis' choices within the bound". `HorizonRestrictedBase` is a
restricted machine that stops at `depth_max`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar, cast

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    precondition,
    rule,
    run_state_machine_as_test,
)

from ci.explore.search import AnyExploration
from stateful.machine import DifferentialMachine, rules_of

RuleTable = Mapping[str, frozenset[type[object]]]
"""Rule name -> the operation types it can apply (the per-rule denominators)."""

StateT = TypeVar("StateT")
OpT = TypeVar("OpT")


def check_rule_table(
    machine: type[DifferentialMachine],
    table: RuleTable,
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


@dataclass(frozen=True)
class MachineRun(Generic[StateT, OpT]):
    """The steps of one machine run pinned to a configuration."""

    profile: str
    programs: int
    steps: tuple[MachineStep[StateT, OpT], ...]
    machine: str  # which machine, e.g. "affinity" or "restricted"
    rule_op_types: RuleTable


def run_recording(
    base: type[DifferentialMachine],
    name: str,
    profile: str,
    table: RuleTable,
    attributes: Mapping[str, object],
) -> MachineRun[Any, Any]:
    """Run a subclass of `base`, a recording machine, under the named profile.

    `base` appends each step to its class's `recorded` and counts its
    `programs`; the subclass starts both afresh, with `attributes` (the bound,
    the factory) beside them. Its `MachineRun` is named for the machine `base`
    pins (`subject`), and its rules' denominators come from `table`.
    """
    namespace: dict[str, Any] = {
        "goals_reached": set(),
        "rules_run": set(),
        "steps_run": 0,
        "recorded": [],
        "programs": 0,
        **attributes,
    }
    machine = cast("type[Any]", type(name, (base,), namespace))
    run_state_machine_as_test(machine, settings=settings.get_profile(profile))
    subject: str = base.subject.name
    return MachineRun(
        profile, int(machine.programs), tuple(machine.recorded), subject, table
    )


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
