"""The invariant registry: every property is a named predicate with a docstring.

A property is registered with a decorator that records its subject (which
component it speaks about), its kind and what it is evaluated on:

* kind `always`: must hold on every state (or every step) a check visits;
* kind `sometimes`: must hold on at least one state (or step) of a run, so
  that a run which never reaches it fails as vacuous.

`over="state"` predicates take one state snapshot; `over="step"` predicates take
a `Step` (state before, operation, outcome, state after); `over="refusal"`
predicates take the `Step` of a call the subject refused (its outcome is the
error kind), for subjects whose step properties speak of accepted calls only.
Registration rejects a duplicate name and a missing docstring at import time.

Evidence that a check meant something:

* every `always` property declares its *antecedent*: a small named predicate
  over the same value, true in the situations where the property could fail
  (a reap ran while an unleased binding had reached its deadline; a pop
  returned an entry). An evaluation with the antecedent true is
  *non-vacuous*; a run that never made a property non-vacuous fails as a
  missed goal does. Where a property has an edge (a deadline exactly now, a
  table exactly full, equal versions), it declares a *boundary* predicate
  too, a special case of the antecedent;
* every property cites the model functions whose behaviour it checks
  (`reads`, dotted Python paths in this repository; it imports the model's
  types but never calls these: `tests/test_hygiene.py`) and the crate items
  it guards (`guards`, Rust
  paths inside `dynamo-kv-router`, e.g.
  `services::selection::affinity::SessionAffinity::try_acquire`);
  `properties.citations` resolves both to file and line.

`unreachable` maps a configuration tag to the reason a goal (or an `always`
property's antecedent) cannot hold in runs over such configurations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

Kind = Literal["always", "sometimes"]
Over = Literal["state", "step", "refusal"]
SubjectName = str
"""A subject's name as the subject registry (`ci.subjects`) declares it.

Properties sit below `ci/` and cannot import the registry; its test
(`tests/test_subjects.py`) fails if a property names an unregistered subject.
"""

_F = TypeVar("_F", bound=Callable[..., bool])


@dataclass(frozen=True)
class Step:
    """One transition: the state before, the operation, its outcome, the state after."""

    before: Any
    op: Any
    outcome: Any
    after: Any


@dataclass(frozen=True)
class Condition:
    """A named predicate with a one-line statement: an antecedent or a boundary."""

    name: str
    statement: str
    predicate: Callable[[Any], bool]


@dataclass(frozen=True)
class Property:
    """One catalogue row."""

    name: str
    kind: Kind
    over: Over
    subject: SubjectName
    statement: str
    predicate: Callable[[Any], bool]
    unreachable: Mapping[str, str] = field(default_factory=dict)
    """Configurations (by tag) where the goal or the antecedent cannot hold, and why."""
    antecedent: Condition | None = None
    """`always` only: when the property can fail (its non-vacuous evaluations)."""
    boundary: Condition | None = None
    """`always` only, optional: the antecedent's edge case."""
    reads: tuple[str, ...] = ()
    """Model functions whose behaviour the property checks (dotted paths)."""
    guards: tuple[str, ...] = ()
    """Crate items the property guards (Rust paths inside the crate)."""

    def applies_to(self, tags: Iterable[str]) -> bool:
        """The goal (or antecedent) can hold in a run over configurations `tags`."""
        return not any(tag in self.unreachable for tag in tags)


@dataclass(frozen=True)
class Verdict:
    """What one value showed about the properties of one subject and kind."""

    violated: tuple[str, ...]
    """`always` properties that failed."""
    reached: tuple[str, ...]
    """`sometimes` goals that held."""
    exercised: tuple[str, ...]
    """`always` properties evaluated non-vacuously (antecedent true, or failed)."""
    at_boundary: tuple[str, ...]
    """`always` properties whose boundary held (a subset of `exercised`)."""
    misdeclared: tuple[str, ...] = ()
    """`always` properties that failed while their antecedent was false."""


_REGISTRY: dict[str, Property] = {}


_Predicate = Callable[[Any], bool]
_Always = tuple[str, _Predicate, _Predicate, _Predicate | None]
"""An `always` property as evaluated: name, predicate, antecedent, boundary."""


@dataclass(frozen=True)
class _Selection:
    """The properties of one subject over one kind, ready to evaluate.

    Built once per (subject, over) after the last registration: `always` as
    (name, predicate, antecedent, boundary or None), `sometimes` as (name,
    predicate), both in name order.
    """

    always: tuple[_Always, ...]
    sometimes: tuple[tuple[str, _Predicate], ...]


_SELECTIONS: dict[tuple[SubjectName, Over], _Selection] = {}


def condition(predicate: Callable[[Any], bool]) -> Condition:
    """A named predicate's condition; TypeError without a docstring."""
    name = predicate.__name__
    doc = (predicate.__doc__ or "").strip()
    if not doc:
        raise TypeError(f"condition {name} has no docstring")
    return Condition(name=name, statement=doc.splitlines()[0], predicate=predicate)


def _checked_citations(name: str, reads: Iterable[str], guards: Iterable[str]) -> None:
    if not reads:
        raise TypeError(f"property {name} cites no model function (reads=...)")
    if not guards:
        raise TypeError(f"property {name} cites no crate item (guards=...)")
    for path in reads:
        if not path.startswith("model.") or "::" in path:
            raise TypeError(f"property {name}: {path!r} is no model function path")
    for path in guards:
        if "::" not in path or "." in path:
            raise TypeError(f"property {name}: {path!r} is no crate item path")


def register(
    subject: SubjectName,
    kind: Kind,
    over: Over,
    *,
    antecedent: Callable[[Any], bool] | None = None,
    boundary: Callable[[Any], bool] | None = None,
    reads: Iterable[str] = (),
    guards: Iterable[str] = (),
    unreachable: Mapping[str, str] | None = None,
) -> Callable[[_F], _F]:
    """Register the decorated predicate under its function name.

    An `always` property needs an `antecedent` and may have a `boundary`; a
    `sometimes` goal is its own antecedent and takes neither. Every property
    cites what it `reads` and what it `guards`. `unreachable` maps a
    configuration tag (an affinity reaping variant such as `every_advance`, or
    a clock kind) to the reason the goal, or the antecedent, cannot hold in
    runs over such configurations.
    """
    if kind == "always" and antecedent is None:
        raise TypeError("an always property declares its antecedent")
    if kind == "sometimes" and (antecedent is not None or boundary is not None):
        raise TypeError("a sometimes goal is its own antecedent")
    reads, guards = tuple(reads), tuple(guards)

    def decorate(predicate: _F) -> _F:
        name = predicate.__name__
        doc = (predicate.__doc__ or "").strip()
        if not doc:
            raise TypeError(f"property {name} has no docstring")
        if name in _REGISTRY:
            raise TypeError(f"property {name} is registered twice")
        _checked_citations(name, reads, guards)
        _REGISTRY[name] = Property(
            name=name,
            kind=kind,
            over=over,
            subject=subject,
            statement=doc.splitlines()[0],
            predicate=predicate,
            unreachable=dict(sorted((unreachable or {}).items())),
            antecedent=None if antecedent is None else condition(antecedent),
            boundary=None if boundary is None else condition(boundary),
            reads=reads,
            guards=guards,
        )
        _SELECTIONS.clear()
        return predicate

    return decorate


def properties(
    subject: SubjectName | None = None,
    kind: Kind | None = None,
    over: Over | None = None,
) -> list[Property]:
    """Registered properties, filtered, sorted by name."""
    return [
        prop
        for _, prop in sorted(_REGISTRY.items())
        if (subject is None or prop.subject == subject)
        and (kind is None or prop.kind == kind)
        and (over is None or prop.over == over)
    ]


def get(name: str) -> Property:
    """The property called `name`; KeyError if there is none."""
    return _REGISTRY[name]


def _selection(subject: SubjectName, over: Over) -> _Selection:
    """The properties of `subject` over `over`, selected once (registration resets)."""
    key = (subject, over)
    selected = _SELECTIONS.get(key)
    if selected is None:
        always: list[_Always] = []
        for prop in properties(subject, "always", over):
            assert prop.antecedent is not None
            boundary = None if prop.boundary is None else prop.boundary.predicate
            always.append(
                (prop.name, prop.predicate, prop.antecedent.predicate, boundary)
            )
        sometimes = tuple(
            (prop.name, prop.predicate)
            for prop in properties(subject, "sometimes", over)
        )
        selected = _SELECTIONS[key] = _Selection(tuple(always), sometimes)
    return selected


def evaluate(subject: SubjectName, over: Over, value: Any) -> Verdict:
    """Check every property of `subject` over `over` on `value`.

    Each `always` property's predicate is evaluated whatever its antecedent
    says; the antecedent only counts. A property that fails while its
    antecedent is false is reported as `misdeclared` as well as violated.
    """
    selected = _selection(subject, over)
    violated: list[str] = []
    exercised: list[str] = []
    at_boundary: list[str] = []
    misdeclared: list[str] = []
    for name, predicate, antecedent, boundary in selected.always:
        holds = predicate(value)
        relevant = antecedent(value)
        if not holds:
            violated.append(name)
            if not relevant:
                misdeclared.append(name)
        if relevant or not holds:
            exercised.append(name)
            if boundary is not None and boundary(value):
                at_boundary.append(name)
    return Verdict(
        violated=tuple(violated),
        reached=tuple(
            name for name, predicate in selected.sometimes if predicate(value)
        ),
        exercised=tuple(exercised),
        at_boundary=tuple(at_boundary),
        misdeclared=tuple(misdeclared),
    )


def violated(subject: SubjectName, over: Over, value: Any) -> list[str]:
    """Names of the `always` properties of `subject` that `value` violates."""
    return [
        name
        for name, predicate, _, _ in _selection(subject, over).always
        if not predicate(value)
    ]


def reached(subject: SubjectName, over: Over, value: Any) -> list[str]:
    """Names of the `sometimes` properties of `subject` that `value` reaches."""
    return [
        name
        for name, predicate in _selection(subject, over).sometimes
        if predicate(value)
    ]


def goals(subject: SubjectName, tags: Iterable[str] = ()) -> list[Property]:
    """The `sometimes` goals of `subject` reachable under configurations `tags`."""
    wanted = tuple(tags)
    return [
        prop
        for prop in properties(subject=subject, kind="sometimes")
        if prop.applies_to(wanted)
    ]


def exercisable(subject: SubjectName, tags: Iterable[str] = ()) -> list[Property]:
    """The `always` properties of `subject` whose antecedent can hold under `tags`."""
    wanted = tuple(tags)
    return [
        prop
        for prop in properties(subject=subject, kind="always")
        if prop.applies_to(wanted)
    ]
