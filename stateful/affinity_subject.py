"""The affinity table as a subject of the harness.

Obligations of `states_agree` (after every step):

1. Positive space: every session the model serves (query without a pin) is
   served identically by the system under test, with the same lease count.
2. Negative space: nothing the system under test serves or counts lacks a model
   justification -- the same query and lease count for every session of the
   pool, including those the model has no entry for, and the same entry count.
3. Replication: the sink received exactly the publications the model predicts,
   in order.
4. Handles: the same live handles, by number and kind; every live waiter
   reports the same completion.
5. Clock: both sides report the same time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from model.affinity.api import AffinityApi
from model.affinity.ops import Op, Outcome, outcome_of
from model.affinity.table import AffinityState, ModelAffinity, WaiterHandle
from model.affinity.types import AffinityConfig, Published, Target
from model.errors import AffinityError, HandleError
from properties.registry import SubjectName
from stateful.harness import Harness, Subject

CrateFactory = Callable[[AffinityConfig], AffinityApi]


@dataclass(frozen=True)
class SessionView:
    """What one session looks like from outside."""

    session_id: str
    served: Target | str | None  # a target, None, or the error kind
    lease_count: int | str | None


@dataclass(frozen=True)
class Observation:
    """Everything observable about a table after a step."""

    now_ns: int
    entry_count: int | str
    sessions: tuple[SessionView, ...]
    published: tuple[Published, ...]
    handles: tuple[tuple[int, str], ...]
    waiters: tuple[tuple[int, bool | str], ...]


_READ_ERRORS = (AffinityError, HandleError)
"""What a read may answer with instead of a value: observed as the error kind."""


def _session_view(api: AffinityApi, session_id: str) -> SessionView:
    """The session as a query without a pin and a lease count see it."""
    served: Target | str | None
    lease_count: int | str | None
    try:
        served = api.query_target(session_id, None)
    except _READ_ERRORS as error:
        served = error.kind
    try:
        lease_count = api.lease_count(session_id)
    except _READ_ERRORS as error:
        lease_count = error.kind
    return SessionView(session_id, served, lease_count)


def _waiter_view(api: AffinityApi, waiter: int) -> tuple[int, bool | str]:
    try:
        return (waiter, api.waiter_done(waiter))
    except _READ_ERRORS as error:
        return (waiter, error.kind)


def observe(
    api: AffinityApi, session_ids: Sequence[str], waiters: Sequence[int]
) -> Observation:
    """Read everything observable, in sorted order.

    The reads go in a fixed order (the sessions, then the clock, the entry
    count, the publications, the handles and the waiters); a read the table
    refuses is observed as its error kind.
    """
    views = tuple(_session_view(api, session_id) for session_id in sorted(session_ids))
    now_ns = api.now_ns
    entry_count: int | str
    try:
        entry_count = api.entry_count()
    except _READ_ERRORS as error:
        entry_count = error.kind
    return Observation(
        now_ns=now_ns,
        entry_count=entry_count,
        sessions=views,
        published=tuple(api.drain_published()),
        handles=tuple(api.live_handles()),
        waiters=tuple(_waiter_view(api, waiter) for waiter in sorted(waiters)),
    )


def view_difference(model: Observation, crate: Observation) -> str:
    """The first field in which two observations differ, in one line."""
    if model.now_ns != crate.now_ns:
        return f"clock: model {model.now_ns} != crate {crate.now_ns}"
    if model.entry_count != crate.entry_count:
        return f"entry_count: model {model.entry_count} != crate {crate.entry_count}"
    for expected, actual in zip(model.sessions, crate.sessions, strict=True):
        if expected != actual:
            return (
                f"session {expected.session_id!r}: model {expected} != crate {actual}"
            )
    if model.published != crate.published:
        return f"published: model {model.published} != crate {crate.published}"
    if model.handles != crate.handles:
        return f"live handles: model {model.handles} != crate {crate.handles}"
    return f"waiters: model {model.waiters} != crate {crate.waiters}"


class AffinitySubject(Subject[AffinityConfig, Op]):
    """`SessionAffinity`, observed through a fixed pool of session ids."""

    name: ClassVar[SubjectName] = "affinity"

    def __init__(self, session_pool: Sequence[str]) -> None:
        """Observe these sessions after every step."""
        self.session_pool = tuple(session_pool)

    def new_model(self, config: AffinityConfig) -> ModelAffinity:
        """A fresh `ModelAffinity` at clock time 0."""
        return ModelAffinity(config)

    def crate_factory(self) -> CrateFactory:
        """`impl.adapter.CrateAffinity`."""
        from impl.adapter import CrateAffinity  # noqa: PLC0415 - only when selected

        return CrateAffinity

    def outcome(self, api: Any, op: Op) -> Outcome:
        """`model.affinity.ops.outcome_of`."""
        return outcome_of(api, op)

    def snapshot(self, model: Any) -> AffinityState:
        """The model's frozen state."""
        state: AffinityState = model.state()
        return state

    def observe(self, api: Any, snapshot: Any) -> Observation:
        """The pool's sessions, counts, publications, handles and waiters."""
        waiters = sorted(
            number
            for number, handle in snapshot.handles
            if isinstance(handle, WaiterHandle)
        )
        return observe(api, self.session_pool, waiters)

    def difference(self, model_view: Any, crate_view: Any) -> str:
        """`view_difference`."""
        return view_difference(model_view, crate_view)

    def carried(self, after: Any) -> AffinityState:
        """`after` with its publications drained, as the observation left the model."""
        state: AffinityState = after
        return replace(state, published=()) if state.published else state


class AffinityHarness(Harness[AffinityConfig, Op]):
    """The harness over the affinity subject with a session pool."""

    model: ModelAffinity  # what `AffinitySubject.new_model` builds

    def __init__(
        self,
        config: AffinityConfig,
        session_pool: Sequence[str],
        factory: CrateFactory | None = None,
        check_states: bool = True,
    ) -> None:
        """Build both tables at clock time 0."""
        super().__init__(AffinitySubject(session_pool), config, factory, check_states)

    @property
    def session_pool(self) -> tuple[str, ...]:
        """The session ids observed after every step."""
        pool: tuple[str, ...] = self.subject.session_pool  # type: ignore[attr-defined]
        return pool


def default_factory() -> CrateFactory:
    """The affinity system under test `VERIFY_AGAINST` selects."""
    factory: CrateFactory = AffinitySubject(()).default_factory()
    return factory
