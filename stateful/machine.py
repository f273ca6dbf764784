"""What every differential machine shares: one harness step per rule, checked.

A machine draws operations; `DifferentialMachine._run` hands each to the
subject's `Harness`, counts the rule, the step and every coverage goal it
reached, and asserts the harness's verdict in the order the checks are
named: `outcomes_agree`, `states_agree`, then the violated properties. Every
step also feeds the machine's `Evidence` (`stateful.evidence`): per property,
evaluations, non-vacuous evaluations, boundary hits and a short witness. The
final replay of a failing example is remembered (`stateful.capture`) so that
the artifact writer can turn it into a trace.

Each machine class (and each subclass a test makes) counts on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, ClassVar, TypeVar

from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from properties.registry import exercisable, goals
from stateful import capture, stats
from stateful.evidence import Evidence
from stateful.harness import Harness, StepReport, Subject

STEPS_MIN = 1_000
"""A machine test that ran fewer steps under the loaded profile fails as vacuous."""
SETUP_STEPS = frozenset({"build", "teardown"})
"""Names of the steps an `initialize` rule or `teardown` takes: steps, not rules."""
SAMPLED_STRATEGIES_MAX = 4_096
"""Distinct `sampled_from` strategies kept built (least recently used go first)."""

_T = TypeVar("_T")


@lru_cache(maxsize=SAMPLED_STRATEGIES_MAX)
def _sampled(values: tuple[Any, ...], types: tuple[type, ...]) -> Any:
    del types  # part of the key only: 1, 1.0 and True are equal, but not alike
    return st.sampled_from(list(values))


def sampled_from(values: Sequence[_T]) -> st.SearchStrategy[_T]:
    """`st.sampled_from(values)`, built once per distinct sequence of values.

    Rules draw from lists computed from the model (live handles, clock
    targets); building a strategy and its label anew for every draw cost a
    third of the draw. The strategy is the same, so the choices and the
    programs drawn are the same.
    """
    key = tuple(values)
    strategy: st.SearchStrategy[_T] = _sampled(key, tuple(map(type, key)))
    return strategy


class DifferentialMachine(RuleBasedStateMachine):
    """A Hypothesis machine that drives one subject's harness."""

    subject: ClassVar[type[Subject[Any, Any]]]
    """The harness's subject class: its `name` is the registry's word for it."""
    goals_reached: ClassVar[set[str]] = set()
    goal_counts: ClassVar[dict[str, int]] = {}
    rules_run: ClassVar[set[str]] = set()
    steps_run: ClassVar[int] = 0
    evidence: ClassVar[Evidence] = Evidence()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give every machine class counters of its own."""
        super().__init_subclass__(**kwargs)
        cls.goals_reached = set()
        cls.goal_counts = {}
        cls.rules_run = set()
        cls.steps_run = 0
        cls.evidence = Evidence()

    def __init__(self) -> None:
        """Nothing exists until the machine's `initialize` rule starts a harness."""
        super().__init__()
        self.harness: Any = None

    def _start(self, harness: Harness[Any, Any]) -> None:
        """Drive `harness` from now on; a final replay becomes a trace."""
        self.harness = harness
        capture.track(self, harness)

    def _ran(self, rule_name: str) -> None:
        """Count a rule that made no call (it changed the machine's own record)."""
        type(self).rules_run.add(rule_name)

    def _run(self, rule_name: str, op: Any) -> StepReport[Any]:
        """Step the harness with `op` and assert its verdict."""
        report: StepReport[Any] = self.harness.step(op)
        machine = type(self)
        machine.steps_run += 1
        if rule_name not in SETUP_STEPS:
            machine.rules_run.add(rule_name)
        for goal in report.reached:
            machine.goals_reached.add(goal)
            machine.goal_counts[goal] = machine.goal_counts.get(goal, 0) + 1
            event(f"reached {goal}")
        machine.evidence.add(report, self.harness)
        note(_StepNote(report))
        if not report.ok:
            capture.capture(rule_name, report)  # the artifact names this check
        assert report.outcomes_agree, report.first_difference()
        assert report.states_agree, report.first_difference()
        assert not report.violations, report.first_difference()
        return report


class _StepNote:
    """`step N: OP -> OUTCOME`, formatted only if Hypothesis shows the note.

    `note` renders a non-string with `repr` when it reports (the final replay
    of a failing example, or verbose runs) and drops it unread otherwise, so
    the steps of passing examples never pay for formatting.
    """

    __slots__ = ("report",)

    def __init__(self, report: StepReport[Any]) -> None:
        """Remember the step."""
        self.report = report

    def __repr__(self) -> str:
        """The note as Hypothesis prints it."""
        report = self.report
        return f"step {report.index}: {report.op} -> {report.expected}"


def rules_of(machine: type[DifferentialMachine]) -> list[str]:
    """The names of a machine's rules, sorted."""
    return sorted(
        name
        for name in dir(machine)
        if hasattr(getattr(machine, name), "hypothesis_stateful_rule")
    )


def run_and_check(
    machine: type[DifferentialMachine], name: str, tags: tuple[str, ...] = ()
) -> None:
    """Run `machine` under the loaded profile and record what it covered.

    Every step must agree; then every rule must have run, every coverage goal
    of the subject reachable under `tags` must have been reached, every
    `always` property whose antecedent can hold under `tags` must have been
    evaluated non-vacuously, and at least `STEPS_MIN` steps must have run. The
    gate's machines table and dossier read the record, which is written for a
    failed run too.
    """
    machine.goals_reached.clear()
    machine.goal_counts.clear()
    machine.rules_run.clear()
    machine.steps_run = 0
    machine.evidence.clear()
    rules = rules_of(machine)
    try:
        run_state_machine_as_test(machine)
    finally:  # the gate's summary wants the numbers of a failed run too
        stats.record_machine(machine.subject.name, machine, rules, name, tags)

    print(f"steps: {machine.steps_run}")
    for goal, count in sorted(machine.goal_counts.items()):
        print(f"goal {goal}: {count}")
    found = machine.evidence
    for prop in sorted(found.exercised.keys() - set(machine.goal_counts)):
        print(
            f"property {prop}: {found.exercised[prop]} non-vacuous, "
            f"{found.boundary.get(prop, 0)} at its boundary"
        )
    wanted = {p.name for p in goals(machine.subject.name, tags)}
    vacuous = [
        p.name
        for p in exercisable(machine.subject.name, tags)
        if p.name not in machine.evidence.exercised
    ]
    problems = [
        f"goal never reached: {name}" for name in sorted(wanted - machine.goals_reached)
    ]
    problems += [f"property never exercised non-vacuously: {name}" for name in vacuous]
    assert not problems, "; ".join(problems)
    never_run = sorted(set(rules) - machine.rules_run)
    assert not never_run, f"rules never run: {', '.join(never_run)}"
    no_rules = sorted(machine.rules_run - set(rules))
    assert not no_rules, f"steps counted under names of no rule: {', '.join(no_rules)}"
    assert machine.steps_run >= STEPS_MIN, (
        f"only {machine.steps_run} steps ran (at least {STEPS_MIN} wanted)"
    )
