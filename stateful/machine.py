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
`precondition`), not Hypothesis' own: a machine that uses
`hypothesis.stateful.rule` or `precondition` is refused when its class is
created. Every rule is one Hypothesis stateful step, drawn by `_RuleDraw`
in one draw: the rule by its index among all the machine's rules (a rule
left out now -- by a precondition or by this program's swarm -- is skipped
by drawing again, as Hypothesis' own rule strategy does, so an index names
the same rule in every state), then its arguments. A step is one span, so
Hypothesis' shrinker deletes, reorders and simplifies whole rules. The swarm
(the rules a program leaves out) is drawn once, by the `swarm` initialize
step, one flag per rule. Drawing this way costs no more than applying the
rule: no filtered strategy over the rules, and no `st.data()` per argument.

Hypothesis prints a failing program one rule per line, `state.RULE(ARGS)`;
a rule that draws further values itself (`DRAW`) shows them in the order
drawn, `data=drawn(...)`, so the printed program reruns as it stands
(`ci.replay.program`). A rule applies one operation or several (a
scenario); every operation is one harness step, checked.

Each machine class (and each subclass a test makes) counts on its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol, TypeVar

from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.errors import InvalidDefinition
from hypothesis.stateful import (
    PRECONDITIONS_MARKER,
    RULE_MARKER,
    Rule,
    RuleBasedStateMachine,
    initialize,
    run_state_machine_as_test,
)
from hypothesis.vendor.pretty import pretty

from properties.registry import exercisable, goals
from stateful import capture, stats
from stateful.evidence import Evidence
from stateful.harness import Harness, StepReport, Subject

if TYPE_CHECKING:
    from hypothesis.internal.conjecture.data import ConjectureData

STEPS_MIN = 1_000
"""A machine test that ran fewer steps under the loaded settings fails as vacuous."""
SETUP_STEPS = frozenset({"build", "teardown"})
"""Names of the steps an `initialize` rule or `teardown` takes: steps, not rules."""
SAMPLED_STRATEGIES_MAX = 4_096
"""Distinct `sampled_from` strategies kept built (least recently used go first)."""

RULE_REDRAWS_MAX = 3
"""Draws of a rule index before drawing among the rules enabled (as Hypothesis'
`sampled_from(...).filter(...)` does)."""
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

    Compared and hashed by identity.
    """

    name: str
    function: Callable[..., None]
    arguments: tuple[tuple[str, st.SearchStrategy[Any] | _DrawSentinel], ...]
    guards: tuple[Callable[[Any], bool], ...] = ()


_RULE = "verify_rule"
_GUARDS = "verify_guards"


def _mark(function: _F, found: MachineRule) -> _F:
    """Mark `function` as our rule, and as a stateful step Hypothesis can run.

    Hypothesis' marker makes the method one of the machine's stateful rules
    (it runs and prints it); its arguments and preconditions are ours, drawn
    and checked by `_RuleDraw`, so Hypothesis' own `Rule` has none.
    """
    setattr(function, _RULE, found)
    setattr(function, RULE_MARKER, Rule((), function, {}, ()))
    return function


def rule(
    **arguments: st.SearchStrategy[Any] | _DrawSentinel,
) -> Callable[[_F], _F]:
    """Mark a method as a rule of its machine, its arguments drawn from `arguments`."""

    def mark(function: _F) -> _F:
        guards: tuple[Callable[[Any], bool], ...] = getattr(function, _GUARDS, ())
        found = MachineRule(
            function.__name__, function, tuple(arguments.items()), guards
        )
        return _mark(function, found)

    return mark


def precondition(guard: Callable[[Any], bool]) -> Callable[[_F], _F]:
    """Enable a rule only while `guard(machine)` holds (stackable, in any order)."""

    def mark(function: _F) -> _F:
        guards = (*getattr(function, _GUARDS, ()), guard)
        setattr(function, _GUARDS, guards)
        found: MachineRule | None = getattr(function, _RULE, None)
        if found is not None:
            _mark(
                function,
                MachineRule(found.name, found.function, found.arguments, guards),
            )
        return function

    return mark


def refused_decorator(name: str, value: object) -> str | None:
    """Why a machine's attribute `name` is refused: Hypothesis' own decorators.

    A Hypothesis `@rule` would be drawn beside the machine's rules, through
    Hypothesis' slow path, and a Hypothesis `@precondition` would never be
    checked (the machine draws its rules itself).
    """
    marker: Rule | None = getattr(value, RULE_MARKER, None)
    if getattr(value, PRECONDITIONS_MARKER, None) is not None or (
        marker is not None and marker.preconditions
    ):
        used, wanted = "precondition", "precondition"
    elif marker is not None and marker.function is not value:
        used, wanted = "rule", "rule"
    else:
        return None
    return (
        f"{name} uses hypothesis.stateful.{used}; a differential machine's rules "
        f"use stateful.machine.{wanted}"
    )


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


class Drawn:
    """`Draw` for one rule: its values, drawn now or replayed from a program.

    Drawing, it records each value; printed (`data=drawn(3, 'a')`) it shows
    them in order, and `drawn(3, 'a')` in a printed program hands them back in
    that order.
    """

    __slots__ = ("_data", "_next", "values")

    def __init__(self, data: ConjectureData | None, values: Sequence[Any] = ()) -> None:
        """Draw from `data`, or (None) replay `values`."""
        self._data = data
        self._next = 0
        self.values: list[Any] = list(values)

    def draw(self, strategy: st.SearchStrategy[_T], label: str | None = None) -> _T:
        """A value of `strategy` (the label is for readers only)."""
        del label
        if self._data is None:
            if self._next >= len(self.values):
                raise IndexError(f"{self!r} holds {len(self.values)} values only")
            value: _T = self.values[self._next]
            self._next += 1
            return value
        value = self._data.draw(strategy)
        self.values.append(value)
        return value

    def __repr__(self) -> str:
        """`drawn(V1, V2, ...)`, each value as Hypothesis prints it."""
        shown = ", ".join(_evaluable(pretty(value)) for value in self.values)
        return f"drawn({shown})"


_ENUM_REPR: Final = re.compile(r"<(?P<member>[A-Za-z_]\w*\.[A-Za-z_]\w*): [^<>]*>")
"""`<Mode.HARD: 'hard'>`: how Hypothesis prints a member of a `str` enum."""


def _evaluable(text: str) -> str:
    """`text` with every `<Enum.MEMBER: value>` written as `Enum.MEMBER`.

    Hypothesis prints a plain enum's member as `Enum.MEMBER`, but a `str` (or
    `int`) enum's by its `repr`, which Python cannot read back.
    """
    return _ENUM_REPR.sub(r"\g<member>", text)


def drawn(*values: Any) -> Drawn:
    """The values a rule drew, in order, for a printed program to rerun."""
    return Drawn(None, values)


@lru_cache(maxsize=SAMPLED_STRATEGIES_MAX)
def _sampled(values: tuple[Any, ...], types: tuple[type, ...]) -> Any:
    del types  # part of the key only: 1, 1.0 and True are equal, but not alike
    return st.sampled_from(list(values))


def sampled_from(values: Sequence[_T]) -> st.SearchStrategy[_T]:
    """`st.sampled_from(values)`, built once per distinct sequence of values.

    Rules draw from lists computed from the model (live handles, clock
    instants); building a strategy and its label anew for every draw cost a
    third of the draw. The strategy is the same, so the choices and the
    programs drawn are the same.
    """
    key = tuple(values)
    strategy: st.SearchStrategy[_T] = _sampled(key, tuple(map(type, key)))
    return strategy


class _SwarmDraw(st.SearchStrategy[tuple[str, ...]]):
    """The names of the rules a program leaves out: one flag per rule.

    A level first (each rule is left out with chance level / `SWARM_LEVELS`),
    then every rule's flag in order, as Hypothesis' own feature flags draw:
    each flag shrinks to False (the rule runs) on its own.
    """

    def __init__(self, rules: tuple[MachineRule, ...]) -> None:
        super().__init__()
        self._names = tuple(rule.name for rule in rules)

    def do_draw(self, data: ConjectureData) -> tuple[str, ...]:
        level = data.draw_integer(0, SWARM_LEVELS - 1)
        chance = level / SWARM_LEVELS
        return tuple(name for name in self._names if data.draw_boolean(chance))

    def __repr__(self) -> str:
        return f"swarm_flags({len(self._names)} rules)"


@cache
def _swarm_draw(machine: type) -> _SwarmDraw:
    return _SwarmDraw(machine_rules(machine))


@st.composite
def _swarms(draw: st.DrawFn) -> tuple[str, ...]:
    """The running machine's swarm (`st.runner()` is the machine)."""
    machine: type = type(draw(st.runner()))
    return draw(_swarm_draw(machine))


class _RuleDraw(st.SearchStrategy[tuple[Rule, dict[str, Any]]]):
    """A machine's next rule and its arguments, in one draw (one span).

    The rule is drawn by its index among all the machine's rules; an index
    whose rule is left out now (a precondition fails, or the swarm left it
    out) is drawn again, up to `RULE_REDRAWS_MAX` times, and then one of the
    rules enabled is drawn and its index recorded as the choice made. So a
    rule's choice reads as that rule in any state (Hypothesis'
    `RuleStrategy` draws so too), and a shrunk index names a simpler rule.
    Preconditions are evaluated once per step, each distinct one once.
    """

    def __init__(self, machine: DifferentialMachine) -> None:
        super().__init__()
        self._machine = machine

    def do_draw(self, data: ConjectureData) -> tuple[Rule, dict[str, Any]]:
        machine = self._machine
        rules = machine._rules
        held = {guard: guard(machine) for guard in machine._guards}  # each once
        enabled = [
            index
            for index, found in enumerate(rules)
            if all(held[guard] for guard in found.guards)
        ]
        if not enabled:
            raise AssertionError(f"no rule of {type(machine).__name__} is enabled")
        left_out = machine._left_out
        chosen = [index for index in enabled if index not in left_out] or enabled
        last = len(rules) - 1
        for _ in range(RULE_REDRAWS_MAX):
            index = data.draw_integer(0, last)
            if index in chosen:
                break
        else:
            index = chosen[data.draw_integer(0, len(chosen) - 1)]
            data.draw_integer(0, last, forced=index)
        picked = rules[index]
        arguments = {
            name: Drawn(data)
            if isinstance(strategy, _DrawSentinel)
            else data.draw(strategy)
            for name, strategy in picked.arguments
        }
        step: Rule = getattr(picked.function, RULE_MARKER)
        return step, arguments

    def __repr__(self) -> str:
        return f"rules({type(self._machine).__name__})"


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
        """Give every machine class counters of its own; refuse Hypothesis' rules."""
        super().__init_subclass__(**kwargs)
        for name, value in sorted(vars(cls).items()):
            refused = refused_decorator(f"{cls.__name__}.{name}", value)
            if refused is not None:
                raise InvalidDefinition(refused)
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
        self._left_out: frozenset[int] = frozenset()
        # Hypothesis draws each stateful step from this strategy: ours draws
        # the machine's rules (see the module's docstring), not Hypothesis'.
        self._rules_strategy = _RuleDraw(self)  # type: ignore[assignment]

    @initialize(off=_swarms())
    def swarm(self, off: tuple[str, ...]) -> None:
        """Leave the rules named `off` out of this program (swarm testing).

        Every rule left out, or every rule enabled left out, leaves none out.
        """
        names = set(off)
        self._left_out = frozenset(
            index for index, found in enumerate(self._rules) if found.name in names
        )

    def _pretty_print(self, value: object) -> object:
        """As Hypothesis prints an argument; a rule's own draws when printed.

        Hypothesis formats a step's arguments before it runs the step and
        prints the line after; a `Drawn` is shown as it stands then, with
        every value the rule drew.
        """
        if isinstance(value, Drawn):
            return value
        shown: str = super()._pretty_print(value)  # type: ignore[no-untyped-call]
        return _evaluable(shown)

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
        return f"# step {report.index}: {report.op} -> {report.expected}"


def rules_of(machine: type[DifferentialMachine]) -> list[str]:
    """The names of a machine's rules, sorted."""
    return sorted(rule.name for rule in machine_rules(machine))


def run_and_check(
    machine: type[DifferentialMachine], name: str, tags: tuple[str, ...] = ()
) -> None:
    """Run `machine` under the loaded settings and record what it covered.

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
