"""The public scheduler, `LocalScheduler`, as a subject of the harness.

The system under test is built from a `SchedulerConfig` (one capacity per
worker). Every operation goes to the model and to the system under test through
`model.scheduler.api.outcome_of`; after every step both are read whole.

Obligations of `states_agree` (after every step):

1. Positive space: every request the callers scheduled has the same fate on
   both sides (waiting; dispatched to the same worker at the same ms; rejected
   with the same error at the same ms; cancelled at the same ms), and the same
   ids hold bookings.
2. Negative space: the counters (`pending_count`, `pending_isl_tokens`,
   `class_queue_stats(0)`) and the booked requests per worker agree, so the
   system under test holds nothing the model cannot justify.
3. The clocks agree.

Properties: `state` properties read a `SchedulerView` (the callers' inputs as
the model recorded them, beside what the system under test showed); `step`
properties read a `Step` whose `before` and `after` are such views. The
subject keeps the previous observation of the system under test for that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from model.scheduler.api import (
    SchedulerApi,
    SchedulerObservation,
    observe,
    outcome_of,
)
from model.scheduler.ops import SchedulerOp, SchedulerOutcome
from model.scheduler.table import ModelScheduler, SchedulerState
from model.scheduler.types import SchedulerConfig
from properties.registry import Over, Step, SubjectName
from properties.scheduler.invariants import SchedulerView
from stateful.harness import Harness, Subject

SchedulerFactory = Callable[[SchedulerConfig], SchedulerApi]


def model_factory(config: SchedulerConfig) -> SchedulerApi:
    """A second reference model: model-vs-model checks the harness itself."""
    return ModelScheduler(config)


def crate_factory(config: SchedulerConfig) -> SchedulerApi:
    """The crate's `LocalScheduler` through the adapter."""
    from impl.adapter.scheduler import (  # noqa: PLC0415 - only when selected
        CrateScheduler,
    )

    scheduler: SchedulerApi = CrateScheduler(config)
    return scheduler


def scheduler_difference(model: object, crate: object) -> str:
    """The first field in which two scheduler observations differ, in one line."""
    if not isinstance(model, SchedulerObservation) or not isinstance(
        crate, SchedulerObservation
    ):
        return f"state: model {model} != crate {crate}"
    for (rid, expected), (_, actual) in zip(model.fates, crate.fates, strict=False):
        if expected != actual:
            return f"fate of {rid}: model {expected} != crate {actual}"
    for name in (
        "now_ms",
        "fates",
        "booked",
        "pending_count",
        "pending_isl_tokens",
        "stats",
        "active_requests",
    ):
        if getattr(model, name) != getattr(crate, name):
            return (
                f"{name}: model {getattr(model, name)} != crate {getattr(crate, name)}"
            )
    return ""


class SchedulerSubject(Subject[SchedulerConfig, SchedulerOp]):
    """`LocalScheduler` with workers of fixed ids and configurable capacity."""

    name: ClassVar[SubjectName] = "scheduler"

    def __init__(self) -> None:
        """No observation yet."""
        self._previous: SchedulerView | None = None

    def new_model(self, config: SchedulerConfig) -> ModelScheduler:
        """The reference scheduler over the config's workers."""
        self._previous = None
        return ModelScheduler(config)

    def crate_factory(self) -> SchedulerFactory:
        """The crate's scheduler."""
        return crate_factory

    def model_factory(self) -> SchedulerFactory:
        """A second reference scheduler."""
        return model_factory

    def outcome(self, api: Any, op: SchedulerOp) -> SchedulerOutcome:
        """`model.scheduler.api.outcome_of`."""
        return outcome_of(api, op)

    def snapshot(self, model: Any) -> SchedulerState:
        """The model's frozen state."""
        state: SchedulerState = model.state
        return state

    def observe(self, api: Any, snapshot: Any) -> SchedulerObservation:
        """Every reader, for every request the callers scheduled."""
        return observe(api, list(snapshot.requests))

    def difference(self, model_view: Any, crate_view: Any) -> str:
        """`scheduler_difference`."""
        return scheduler_difference(model_view, crate_view)

    def evaluations(
        self,
        before: Any,
        op: SchedulerOp,
        outcome: Any,
        after: Any,
        crate_view: Any,
    ) -> list[tuple[Over, Any]]:
        """The state view after the step, and the step between two views."""
        now = SchedulerView(state=after, seen=crate_view)
        previous = self._previous
        if previous is None or previous.state is not before:
            previous = SchedulerView(state=before, seen=_observe_state(before))
        self._previous = now
        return [("state", now), ("step", Step(previous, op, outcome, now))]


def _observe_state(state: SchedulerState) -> SchedulerObservation:
    """A model state read as an observation (the first step's `before`)."""
    model = ModelScheduler(SchedulerConfig(state.capacities_tokens))
    model.state = state
    return observe(model, list(state.requests))


class SchedulerHarness(Harness[SchedulerConfig, SchedulerOp]):
    """The harness over the scheduler subject."""

    def __init__(
        self,
        config: SchedulerConfig,
        factory: SchedulerFactory | None = None,
        check_states: bool = True,
    ) -> None:
        """Build both schedulers from the config."""
        super().__init__(SchedulerSubject(), config, factory, check_states)
