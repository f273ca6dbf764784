"""The policy-queue machine against the crate and against the model itself.

Each test runs the machine under the loaded Hypothesis profile, then fails as
vacuous unless every rule ran and every registered `sometimes` goal of the
queue was reached in that run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from hypothesis.stateful import run_state_machine_as_test

from properties.registry import properties
from stateful.harness import sut_name
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import ProfileSpec, model_factory, native_factory

if TYPE_CHECKING:
    from collections.abc import Callable

    from model.queue.api import PolicyQueueApi

RULES = sorted(
    name
    for name in dir(QueueMachine)
    if hasattr(getattr(QueueMachine, name), "hypothesis_stateful_rule")
)
STEPS_MIN = 1_000


def _run(factory: Callable[[ProfileSpec], PolicyQueueApi]) -> type[QueueMachine]:
    machine = type(
        "QueueMachineRun",
        (QueueMachine,),
        {"factory": staticmethod(factory)},
    )
    run_state_machine_as_test(machine)
    print(f"steps: {machine.steps_run}")
    return machine


def _goals() -> set[str]:
    return {p.name for p in properties(subject="queue", kind="sometimes")}


@pytest.mark.native
def test_the_crate_agrees_with_the_model_and_every_goal_is_reached() -> None:
    """Every step agrees with the crate, every rule runs, every goal is reached."""
    factory = native_factory if sut_name() == "native" else model_factory

    machine = _run(factory)

    assert set() == _goals() - machine.goals_reached
    assert set() == set(RULES) - machine.rules_run
    assert machine.steps_run >= STEPS_MIN


def test_the_model_agrees_with_a_second_model_and_every_goal_is_reached() -> None:
    """Model against model (no extension needed) checks the harness itself."""
    machine = _run(model_factory)

    assert set() == _goals() - machine.goals_reached
    assert set() == set(RULES) - machine.rules_run
    assert machine.steps_run >= STEPS_MIN
