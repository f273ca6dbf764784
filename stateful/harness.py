"""One differential step: apply, compare, check every registered property.

An operation goes to the model and to a system under test; the outcomes and
the observable states are compared and every property is evaluated.

Machines, the corpus replay and the explorer's edge replay all go through
`AffinityHarness.step`, so a counterexample found by any of them is judged by
the same rules.

`states_agree` obligations (after every step):

1. Positive space: every session the model serves (query without a pin) is
   served identically by the system under test, with the same lease count.
2. Negative space: nothing the system under test serves or counts lacks a model
   justification -- the same query and lease count for every session of the
   pool, including those the model has no entry for, and the same entry count.
3. Replication: the sink received exactly the publications the model predicts,
   in order.
4. Waiters: every live waiter reports the same completion.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from model.affinity.api import AffinityApi
from model.affinity.ops import Op, Outcome, outcome_of
from model.affinity.table import ModelAffinity, WaiterHandle
from model.affinity.types import AffinityConfig, Published, Target
from model.errors import AffinityError, HandleError
from properties import Step, reached, violated

_T = TypeVar("_T")

SUT_ENV = "VERIFY_SUT"
SUT_NAMES = ("native", "model")

SutFactory = Callable[[AffinityConfig], AffinityApi]


def sut_name() -> str:
    """The system under test named by `VERIFY_SUT` (`native` unless told)."""
    name = os.environ.get(SUT_ENV, "native")
    if name not in SUT_NAMES:
        raise ValueError(f"unknown {SUT_ENV} {name!r}; known: {', '.join(SUT_NAMES)}")
    return name


def default_factory() -> SutFactory:
    """Build the selected system under test (imports the extension only if native)."""
    if sut_name() == "model":
        return ModelAffinity
    from impl.adapter import NativeAffinity  # noqa: PLC0415 - only when selected

    return NativeAffinity


@dataclass(frozen=True)
class SessionView:
    """What one session looks like from outside."""

    session_id: str
    served: Target | str | None  # a target, None, or the error kind
    lease_count: int | str | None


@dataclass(frozen=True)
class Observation:
    """Everything observable about a table after a step."""

    entry_count: int | str
    sessions: tuple[SessionView, ...]
    published: tuple[Published, ...]
    waiters: tuple[tuple[int, bool | str], ...]


def _attempt(read: Callable[[], _T]) -> _T | str:
    try:
        return read()
    except (AffinityError, HandleError) as error:
        return error.kind


def observe(
    api: AffinityApi, session_ids: Sequence[str], waiters: Sequence[int]
) -> Observation:
    """Read everything observable, in sorted order."""
    views = tuple(
        SessionView(
            session_id=session_id,
            served=_attempt(lambda s=session_id: api.query_target(s, None)),
            lease_count=_attempt(lambda s=session_id: api.lease_count(s)),
        )
        for session_id in sorted(session_ids)
    )
    return Observation(
        entry_count=_attempt(api.entry_count),
        sessions=views,
        published=tuple(api.drain_published()),
        waiters=tuple(
            (waiter, _attempt(lambda w=waiter: api.waiter_done(w)))
            for waiter in sorted(waiters)
        ),
    )


@dataclass(frozen=True)
class StepReport:
    """The verdict on one step."""

    index: int
    op: Op
    expected: Outcome
    actual: Outcome
    model_view: Observation
    sut_view: Observation
    violations: tuple[str, ...]
    reached: tuple[str, ...]

    @property
    def outcomes_agree(self) -> bool:
        """Model and system under test returned the same value or error kind."""
        return self.expected == self.actual

    @property
    def states_agree(self) -> bool:
        """Model and system under test look the same from outside."""
        return self.model_view == self.sut_view

    @property
    def ok(self) -> bool:
        """Agreement and no violated property."""
        return self.outcomes_agree and self.states_agree and not self.violations

    def first_difference(self) -> str:
        """A one-line description of what went wrong, or '' if nothing did."""
        if not self.outcomes_agree:
            return f"outcome: model {self.expected} != sut {self.actual}"
        if self.model_view != self.sut_view:
            return _view_difference(self.model_view, self.sut_view)
        if self.violations:
            return "violated: " + ", ".join(self.violations)
        return ""


def _view_difference(model: Observation, sut: Observation) -> str:
    if model.entry_count != sut.entry_count:
        return f"entry_count: model {model.entry_count} != sut {sut.entry_count}"
    for expected, actual in zip(model.sessions, sut.sessions, strict=True):
        if expected != actual:
            return f"session {expected.session_id!r}: model {expected} != sut {actual}"
    if model.published != sut.published:
        return f"published: model {model.published} != sut {sut.published}"
    return f"waiters: model {model.waiters} != sut {sut.waiters}"


@dataclass
class AffinityHarness:
    """A model and a system under test driven in lockstep."""

    config: AffinityConfig
    session_pool: tuple[str, ...]
    factory: SutFactory = field(default_factory=default_factory)
    check_states: bool = True

    def __post_init__(self) -> None:
        """Build both tables at clock time 0."""
        self.model = ModelAffinity(self.config)
        self.sut = self.factory(self.config)
        self.steps = 0
        self.ops: list[
            Op
        ] = []  # the program so far, for traces (ci/replay/envelope.py)

    def step(self, op: Op) -> StepReport:
        """Apply `op` to both sides, compare, and check every property."""
        self.ops.append(op)  # first, so that a step that raises is recorded too
        before = self.model.state()
        expected = outcome_of(self.model, op)
        actual = outcome_of(self.sut, op)
        after = self.model.state()
        transition = Step(before=before, op=op, outcome=expected, after=after)
        violations = violated("affinity", "state", after) + violated(
            "affinity", "step", transition
        )
        goals = reached("affinity", "state", after) + reached(
            "affinity", "step", transition
        )
        waiters = sorted(
            number
            for number, handle in after.handles
            if isinstance(handle, WaiterHandle)
        )
        model_view = observe(self.model, self.session_pool, waiters)
        sut_view = (
            observe(self.sut, self.session_pool, waiters)
            if self.check_states
            else model_view
        )
        self.steps += 1
        return StepReport(
            index=self.steps,
            op=op,
            expected=expected,
            actual=actual,
            model_view=model_view,
            sut_view=sut_view,
            violations=tuple(violations),
            reached=tuple(goals),
        )
