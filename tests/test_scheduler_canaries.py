"""Each scheduler canary is rejected by its property, not only by the comparison.

The machine catches every canary first by `states_agree` (the model and the
canary disagree). These tests run one short scenario per canary through the
scheduler's harness and check that the property `PROPERTY` names rejects what
the canary shows: the properties read the system under test's observation, so
they would catch the canary even without a model to compare with.
"""

from __future__ import annotations

import pytest

from ci.canaries import scheduler
from model.scheduler.ops import Advance, Cancel, Free, Schedule, SchedulerOp
from model.scheduler.types import SchedulerConfig
from stateful.scheduler_subject import SchedulerHarness, model_factory

CONFIG = SchedulerConfig(capacities_tokens=(5,))
BUSY = Schedule("big", 0, pinned=True, isl_tokens=6)
"""Six tokens on a worker of capacity five: the worker is busy."""

SCENARIOS: dict[str, tuple[SchedulerOp, ...]] = {
    "lane_never_rechecked": (
        BUSY,
        Schedule("small", 0, pinned=True, isl_tokens=1),
        Free("big"),
    ),
    "due_off_by_one": (
        BUSY,
        Schedule("due", 0, pinned=True, isl_tokens=1, due_ms=2),
        Advance(2),
    ),
    "cancelled_stays_counted": (
        BUSY,
        Schedule("gone", 0, pinned=False, isl_tokens=1),
        Cancel("gone"),
    ),
    "leave_at_booking_ignored": (
        Schedule("gone", 0, pinned=True, isl_tokens=1, leaves="booking"),
    ),
}


def _violations(factory: object, ops: tuple[SchedulerOp, ...]) -> set[str]:
    harness = SchedulerHarness(CONFIG, factory)  # type: ignore[arg-type]
    found: set[str] = set()
    for op in ops:
        found |= set(harness.step(op).violations)
    return found


@pytest.mark.parametrize("name", sorted(scheduler.CANARIES))
def test_a_scheduler_canary_is_rejected_by_its_property(name: str) -> None:
    """The canary's own scenario violates the property `PROPERTY` names."""
    violations = _violations(scheduler.CANARIES[name], SCENARIOS[name])

    assert scheduler.PROPERTY[name] in violations


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_model_passes_each_canary_scenario(name: str) -> None:
    """The same scenarios violate nothing on the reference model."""
    violations = _violations(model_factory, SCENARIOS[name])

    assert set() == violations


def test_every_scheduler_canary_has_a_scenario_and_a_property() -> None:
    """`SCENARIOS` and `PROPERTY` cover exactly the canaries."""
    assert sorted(scheduler.CANARIES) == sorted(SCENARIOS)
    assert sorted(scheduler.CANARIES) == sorted(scheduler.PROPERTY)
