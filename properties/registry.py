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
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

Kind = Literal["always", "sometimes"]
Over = Literal["state", "step", "refusal"]
Subject = Literal["affinity", "queue", "replica"]

_F = TypeVar("_F", bound=Callable[..., bool])


@dataclass(frozen=True)
class Step:
    """One transition: the state before, the operation, its outcome, the state after."""

    before: Any
    op: Any
    outcome: Any
    after: Any


@dataclass(frozen=True)
class Property:
    """One catalogue row."""

    name: str
    kind: Kind
    over: Over
    subject: Subject
    spec: str
    statement: str
    predicate: Callable[[Any], bool]
    unreachable: Mapping[str, str] = field(default_factory=dict)
    """Configurations (by tag) where a `sometimes` goal cannot be reached, and why."""

    def applies_to(self, tags: Iterable[str]) -> bool:
        """The goal is reachable in a run over configurations with these tags."""
        return not any(tag in self.unreachable for tag in tags)


_REGISTRY: dict[str, Property] = {}


def register(
    subject: Subject,
    kind: Kind,
    over: Over,
    spec: str = "",
    unreachable: Mapping[str, str] | None = None,
) -> Callable[[_F], _F]:
    """Register the decorated predicate under its function name.

    `unreachable` maps a configuration tag (an affinity reaping variant such as
    `every_advance`, or a clock kind) to the reason a `sometimes` goal cannot be
    reached in runs over such configurations.
    """
    if unreachable and kind != "sometimes":
        raise TypeError("only a sometimes property can be declared unreachable")

    def decorate(predicate: _F) -> _F:
        name = predicate.__name__
        doc = (predicate.__doc__ or "").strip()
        if not doc:
            raise TypeError(f"property {name} has no docstring")
        if name in _REGISTRY:
            raise TypeError(f"property {name} is registered twice")
        _REGISTRY[name] = Property(
            name=name,
            kind=kind,
            over=over,
            subject=subject,
            spec=spec,
            statement=doc.splitlines()[0],
            predicate=predicate,
            unreachable=dict(sorted((unreachable or {}).items())),
        )
        return predicate

    return decorate


def properties(
    subject: Subject | None = None,
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


def violated(subject: Subject, over: Over, value: Any) -> list[str]:
    """Names of the `always` properties of `subject` that `value` violates."""
    return [
        prop.name
        for prop in properties(subject=subject, kind="always", over=over)
        if not prop.predicate(value)
    ]


def reached(subject: Subject, over: Over, value: Any) -> list[str]:
    """Names of the `sometimes` properties of `subject` that `value` reaches."""
    return [
        prop.name
        for prop in properties(subject=subject, kind="sometimes", over=over)
        if prop.predicate(value)
    ]


def goals(subject: Subject, tags: Iterable[str] = ()) -> list[Property]:
    """The `sometimes` goals of `subject` reachable under configurations `tags`."""
    wanted = tuple(tags)
    return [
        prop
        for prop in properties(subject=subject, kind="sometimes")
        if prop.applies_to(wanted)
    ]
