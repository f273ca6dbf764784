"""One differential step, for any subject: apply, compare, check every property.

A *subject* is a component under test -- the affinity table, the policy queue
-- described once (`Subject`): how to build its reference model from a
configuration, how an operation is applied and its outcome captured, what its
observable state is, and how two observations differ. `Harness` drives one
subject: an operation goes to the model and to a system under test, the
outcomes and the observable states are compared, and every property the
registry holds for the subject is evaluated.

Machines, trace replay, minimization, the corpus and the explorer's edge
replay all go through `Harness.step`, so a counterexample found by any of them
is judged by the same rules; the trace kinds (`ci/replay/`), the artifact
writer and the gate's statistics work over any subject. Adding a component is
one subject module beside `affinity_subject.py` and `queue_subject.py`, and
one entry of the subject registry `ci/subjects.py`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from properties import Step
from properties.registry import Over, SubjectName, evaluate

C = TypeVar("C")  # a subject's configuration
Op = TypeVar("Op")  # a subject's operation

AGAINST_ENV = "VERIFY_AGAINST"
AGAINST_NAMES = ("crate", "model")
OLD_AGAINST_ENV = "VERIFY_SUT"  # old spelling, refused


def against_name() -> str:
    """The system under test named by `VERIFY_AGAINST` (`crate` unless told).

    The variable's old name is refused, never read: a run that sets it
    expecting the model would otherwise drive the crate without a word.
    """
    if OLD_AGAINST_ENV in os.environ:
        raise ValueError(f"{OLD_AGAINST_ENV} is now {AGAINST_ENV} (crate or model)")
    name = os.environ.get(AGAINST_ENV, "crate")
    if name not in AGAINST_NAMES:
        raise ValueError(
            f"unknown {AGAINST_ENV} {name!r}; known: {', '.join(AGAINST_NAMES)}"
        )
    return name


class Subject(ABC, Generic[C, Op]):
    """What the harness needs to know about one component under test."""

    name: ClassVar[SubjectName]
    """The registry's and the trace envelope's name for the subject."""

    @abstractmethod
    def new_model(self, config: C) -> Any:
        """A fresh reference model."""

    @abstractmethod
    def crate_factory(self) -> Callable[[C], Any]:
        """The crate's adapter (imports the binding only when called)."""

    def model_factory(self) -> Callable[[C], Any]:
        """A second reference model: model-vs-model checks the harness itself."""
        return self.new_model

    def default_factory(self) -> Callable[[C], Any]:
        """The system under test `VERIFY_AGAINST` selects."""
        return (
            self.model_factory() if against_name() == "model" else self.crate_factory()
        )

    @abstractmethod
    def outcome(self, api: Any, op: Op) -> Any:
        """Apply `op` to one side; its value or error kind, comparable by `==`."""

    @abstractmethod
    def snapshot(self, model: Any) -> Any:
        """The model's state, as the step properties read it."""

    @abstractmethod
    def observe(self, api: Any, snapshot: Any) -> Any:
        """Everything observable about one side after a step, comparable by `==`."""

    @abstractmethod
    def difference(self, model_view: Any, crate_view: Any) -> str:
        """The first way two unequal observations differ, in one line."""

    def evaluations(
        self, before: Any, op: Op, outcome: Any, after: Any, crate_view: Any
    ) -> list[tuple[Over, Any]]:
        """What the registry evaluates after a step, as (over, value) pairs."""
        del crate_view
        return [("state", after), ("step", Step(before, op, outcome, after))]

    def carried(self, after: Any) -> Any | None:
        """The model's snapshot once a step's observation is over, from `after`.

        The next step's `before`, without snapshotting the model again. None
        (the default) says that `after` does not tell it: the harness
        snapshots the model again. A subject whose observation changes the
        model (the affinity table drains its publications) says how.
        """
        del after
        return None

    def rebuilds(self, op: Op) -> bool:
        """Whether `op` builds both sides afresh instead of calling them."""
        del op
        return False

    def rebuilt(self) -> Any:
        """The outcome recorded for an operation that rebuilt both sides."""
        return None


@dataclass(frozen=True)
class Evaluated:
    """What the registry said of one step's evaluations, in evaluation order."""

    evaluated: tuple[Over, ...]
    violated: tuple[str, ...]
    reached: tuple[str, ...]
    exercised: tuple[str, ...]
    at_boundary: tuple[str, ...]
    misdeclared: tuple[str, ...]


def evaluate_all(subject: SubjectName, values: Iterable[tuple[Over, Any]]) -> Evaluated:
    """Evaluate a subject's properties over each (kind, value) of one step."""
    evaluated: list[Over] = []
    violated: list[str] = []
    reached: list[str] = []
    exercised: list[str] = []
    at_boundary: list[str] = []
    misdeclared: list[str] = []
    for over, value in values:
        verdict = evaluate(subject, over, value)
        evaluated.append(over)
        violated += verdict.violated
        reached += verdict.reached
        exercised += verdict.exercised
        at_boundary += verdict.at_boundary
        misdeclared += verdict.misdeclared
    return Evaluated(
        tuple(evaluated),
        tuple(violated),
        tuple(reached),
        tuple(exercised),
        tuple(at_boundary),
        tuple(misdeclared),
    )


@dataclass(frozen=True)
class StepReport(Generic[Op]):
    """The verdict on one step."""

    index: int
    op: Op
    expected: Any
    actual: Any
    model_view: Any
    crate_view: Any
    violations: tuple[str, ...]
    reached: tuple[str, ...]
    difference_of: Callable[[Any, Any], str] = field(repr=False, compare=False)
    evaluated: tuple[Over, ...] = ()
    """The kinds of property evaluated after the step (state, step, refusal)."""
    exercised: tuple[str, ...] = ()
    """`always` properties evaluated non-vacuously (their antecedent held)."""
    at_boundary: tuple[str, ...] = ()
    """`always` properties whose boundary held."""
    misdeclared: tuple[str, ...] = ()
    """`always` properties violated while their antecedent was false."""

    @property
    def outcomes_agree(self) -> bool:
        """Model and system under test returned the same value or error kind."""
        return bool(self.expected == self.actual)

    @property
    def states_agree(self) -> bool:
        """Model and system under test look the same from outside."""
        return bool(self.model_view == self.crate_view)

    @property
    def ok(self) -> bool:
        """Agreement and no violated property."""
        return self.outcomes_agree and self.states_agree and not self.violations

    def failed_checks(self) -> tuple[str, ...]:
        """The names of the checks that failed, harness checks first."""
        failed = []
        if not self.outcomes_agree:
            failed.append("outcomes_agree")
        if not self.states_agree:
            failed.append("states_agree")
        return (*failed, *self.violations)

    def first_difference(self) -> str:
        """A one-line description of what went wrong, or '' if nothing did."""
        if not self.outcomes_agree:
            return f"outcome: model {self.expected} != crate {self.actual}"
        if not self.states_agree:
            return self.difference_of(self.model_view, self.crate_view)
        if self.violations:
            unguarded = [
                f"{name} (its antecedent was false)" for name in self.misdeclared
            ]
            shown = [name for name in self.violations if name not in self.misdeclared]
            return "violated: " + ", ".join([*shown, *unguarded])
        return ""


@dataclass
class Harness(Generic[C, Op]):
    """A model and a system under test of one subject, driven in lockstep."""

    subject: Subject[C, Op]
    config: C
    factory: Callable[[C], Any] | None = None
    check_states: bool = True

    def __post_init__(self) -> None:
        """Build both sides from the configuration."""
        if self.factory is None:
            self.factory = self.subject.default_factory()
        self.steps = 0
        self.ops: list[Op] = []  # the program so far, for traces
        self._carried: Any = None
        self._build()

    def _build(self) -> None:
        assert self.factory is not None
        self.model = self.subject.new_model(self.config)
        self.crate = self.factory(self.config)
        self._carried = None

    @property
    def state(self) -> Any:
        """The model's snapshot now (between steps, the model changes only in them).

        After a step, the subject's `carried` snapshot when it has one;
        otherwise (and before the first step) a fresh `snapshot`.
        """
        if self._carried is None:
            return self.subject.snapshot(self.model)
        return self._carried

    def step(self, op: Op) -> StepReport[Op]:
        """Apply `op` to both sides, compare, and check every property."""
        self.ops.append(op)  # first, so that a step that raises is recorded too
        subject = self.subject
        before = self.state
        self._carried = None  # the model is about to change
        if subject.rebuilds(op):
            self._build()
            expected = actual = subject.rebuilt()
        else:
            expected = subject.outcome(self.model, op)
            actual = subject.outcome(self.crate, op)
        after = subject.snapshot(self.model)
        model_view = subject.observe(self.model, after)
        crate_view = (
            subject.observe(self.crate, after) if self.check_states else model_view
        )
        self._carried = subject.carried(after)
        checked = evaluate_all(
            subject.name, subject.evaluations(before, op, expected, after, crate_view)
        )
        self.steps += 1
        return StepReport(
            index=self.steps,
            op=op,
            expected=expected,
            actual=actual,
            model_view=model_view,
            crate_view=crate_view,
            violations=checked.violated,
            reached=checked.reached,
            difference_of=subject.difference,
            evaluated=checked.evaluated,
            exercised=checked.exercised,
            at_boundary=checked.at_boundary,
            misdeclared=checked.misdeclared,
        )
