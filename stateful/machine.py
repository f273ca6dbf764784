"""What every differential machine shares: one harness step per rule, checked.

A machine draws operations; `DifferentialMachine._run` hands each to the
subject's `Harness`, counts the rule, the step and every coverage goal it
reached, and asserts the harness's verdict in the order the checks are
named: `outcomes_agree`, `states_agree`, then the violated properties. Every
step also feeds the machine's `Evidence` (`stateful.evidence`): per property,
evaluations, non-vacuous evaluations, boundary hits and a short witness. The
final replay of a failing example is remembered (`stateful.capture`) so that
the artifact writer can turn it into a trace.

A machine's rules are methods marked with this module's `rule` (and
`precondition`), which read as Hypothesis' own but are drawn by the machine:
Hypothesis' stateful engine sees one rule, `run_rules`, which applies a run
of up to `RUN_RULES_MAX` rules drawn with plain choices: the rule among those
enabled (preconditions and this program's swarm), then its arguments. Drawing
each rule as a Hypothesis rule cost more than applying it (a filtered draw
over every rule with a swarm flag each, and a draw through `st.data()` per
argument); a run draws the same things with one choice each, and still
shrinks rule by rule (every rule is a span of choices behind a continuation
choice). A rule applies one operation or several (a scenario); every
operation is one harness step, checked.

Each machine class (and each subclass a test makes) counts on its own.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, ClassVar, Final, Protocol, TypeVar

from hypothesis import event, note, stateful
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

RUN_RULES_MAX = 8
"""Rules one `run_rules` step applies at most (about 5.5 on average)."""
CONTINUE_CHOICES = 8
"""A run goes on while a choice in `range(CONTINUE_CHOICES)` is not 0."""
SWARM_LEVELS = 255
"""A program leaves each rule out with chance level / `SWARM_LEVELS` (swarm)."""

_T = TypeVar("_T")
_F = TypeVar("_F", bound=Callable[..., Any])


class Draw(Protocol):
    """What a rule draws its state-dependent arguments with."""

    def draw(self, strategy: st.SearchStrategy[_T], label: str | None = None) -> _T:
        """A value of `strategy`; `label` names it in a reading of the program."""
        ...


class _DrawSentinel:
    """The type of `DRAW`."""

    def __repr__(self) -> str:
        return "DRAW"


DRAW: Final = _DrawSentinel()
"""`@rule(data=DRAW)`: the rule draws further values itself, through `Draw`."""


@dataclass(frozen=True, eq=False)
class MachineRule:
    """One rule of a machine: its method, argument strategies and preconditions.

    Compared and hashed by identity: a run's choice of rule is drawn from a
    cached `sampled_from` keyed by the rules enabled.
    """

    name: str
    function: Callable[..., None]
    arguments: tuple[tuple[str, st.SearchStrategy[Any] | _DrawSentinel], ...]
    guards: tuple[Callable[[Any], bool], ...] = ()


_RULE = "verify_rule"
_GUARDS = "verify_guards"


def rule(
    **arguments: st.SearchStrategy[Any] | _DrawSentinel,
) -> Callable[[_F], _F]:
    """Mark a method as a rule of its machine, its arguments drawn from `arguments`."""

    def mark(function: _F) -> _F:
        guards: tuple[Callable[[Any], bool], ...] = getattr(function, _GUARDS, ())
        found = MachineRule(
            function.__name__, function, tuple(arguments.items()), guards
        )
        setattr(function, _RULE, found)
        return function

    return mark


def precondition(guard: Callable[[Any], bool]) -> Callable[[_F], _F]:
    """Enable a rule only while `guard(machine)` holds (stackable, in any order)."""

    def mark(function: _F) -> _F:
        guards = (*getattr(function, _GUARDS, ()), guard)
        setattr(function, _GUARDS, guards)
        found: MachineRule | None = getattr(function, _RULE, None)
        if found is not None:
            setattr(
                function,
                _RULE,
                MachineRule(found.name, found.function, found.arguments, guards),
            )
        return function

    return mark


@cache
def machine_rules(machine: type) -> tuple[MachineRule, ...]:
    """A machine's rules: fewest arguments first, then by name.

    Shrinking moves a choice of rule towards the first, so the simplest rules
    come first.
    """
    found = [
        getattr(getattr(machine, name), _RULE)
        for name in dir(machine)
        if hasattr(getattr(machine, name), _RULE)
    ]
    return tuple(sorted(found, key=lambda rule: (len(rule.arguments), rule.name)))


class _Drawer:
    """`Draw` over a composite strategy's draw function."""

    __slots__ = ("_draw",)

    def __init__(self, draw: st.DrawFn) -> None:
        self._draw = draw

    def draw(self, strategy: st.SearchStrategy[_T], label: str | None = None) -> _T:
        """A value of `strategy` (the label is for readers only)."""
        del label
        return self._draw(strategy)


_CONTINUE = st.integers(0, CONTINUE_CHOICES - 1)
_LEVEL = st.integers(0, SWARM_LEVELS - 1)
_SEED = st.integers(0, 2**32 - 1)


@st.composite
def _rules_run(draw: st.DrawFn, machine: DifferentialMachine) -> int:
    """Apply a run of rules drawn for `machine`; how many it applied."""
    return machine._apply_rules(draw)


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
        self._rules = machine_rules(type(self))
        self._guards = tuple(dict.fromkeys(g for r in self._rules for g in r.guards))
        self._swarm: frozenset[str] | None = None
        self._run_strategy = _rules_run(self)

    @stateful.rule(data=st.data())
    def run_rules(self, data: st.DataObject) -> None:
        """Apply a run of rules (see the module's docstring)."""
        data.draw(self._run_strategy, label="rules")

    def _apply_rules(self, draw: st.DrawFn) -> int:
        """Draw and apply up to `RUN_RULES_MAX` rules."""
        drawer = _Drawer(draw)
        if self._swarm is None:
            self._swarm = self._draw_swarm(draw)
        applied = 0
        while applied == 0 or (applied < RUN_RULES_MAX and draw(_CONTINUE) != 0):
            held = {guard: guard(self) for guard in self._guards}  # each once
            enabled = [
                rule for rule in self._rules if all(held[g] for g in rule.guards)
            ]
            if not enabled:
                raise AssertionError(f"no rule of {type(self).__name__} is enabled")
            chosen = [rule for rule in enabled if rule.name not in self._swarm]
            picked = draw(sampled_from(chosen or enabled))
            arguments = {
                name: drawer if isinstance(strategy, _DrawSentinel) else draw(strategy)
                for name, strategy in picked.arguments
            }
            note(_RuleNote(picked.name, arguments))
            picked.function(self, **arguments)
            applied += 1
        return applied

    def _draw_swarm(self, draw: st.DrawFn) -> frozenset[str]:
        """The rules this program leaves out (swarm testing).

        Two choices: a level, and a seed that spreads it over the rules
        (each is left out with chance level / `SWARM_LEVELS`). Shrinking moves
        the level to 0 first, which leaves nothing out.
        """
        level = draw(_LEVEL)
        if level == 0:
            return frozenset()
        spread = random.Random(draw(_SEED))  # noqa: S311 - a choice, not a secret
        return frozenset(
            rule.name for rule in self._rules if spread.randrange(SWARM_LEVELS) < level
        )

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


class _RuleNote:
    """`state.RULE(ARGUMENTS)`, as Hypothesis prints a rule it ran (lazily).

    A rule drawing further values itself shows `data=data(...)`; the steps
    it took follow as `_StepNote`s.
    """

    __slots__ = ("arguments", "name")

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        """Remember the rule and its arguments."""
        self.name = name
        self.arguments = arguments

    def __repr__(self) -> str:
        """The note as Hypothesis prints it."""
        shown = ", ".join(
            f"{key}=data(...)" if isinstance(value, _Drawer) else f"{key}={value!r}"
            for key, value in self.arguments.items()
        )
        return f"state.{self.name}({shown})"


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
    return sorted(rule.name for rule in machine_rules(machine))


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
