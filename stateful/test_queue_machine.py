"""The policy-queue machine against the crate and against the model itself.

Each test runs the machine under the loaded Hypothesis profile, then fails as
vacuous unless every rule ran and every registered `sometimes` goal of the
queue was reached in that run; the gate's machines table lists both runs.
The model-against-model run checks the harness, not the crate, and rarely
fails: it is `slow` (nightly and `.ci/run`), so the pr gate spends its minutes
on the crate's run.
"""

from __future__ import annotations

import pytest

from stateful.harness import against_name
from stateful.machine import run_and_check
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import model_factory


@pytest.mark.crate
def test_the_crate_agrees_with_the_model_and_every_goal_is_reached() -> None:
    """Every step agrees with the crate, every rule runs, every goal is reached."""

    class QueueMachineRun(QueueMachine):
        """The queue machine over the system under test `VERIFY_AGAINST` selects."""

    machine = QueueMachineRun
    if against_name() == "model":
        machine.factory = model_factory
    run_and_check(machine, "QueueMachine")


@pytest.mark.slow
def test_the_model_agrees_with_a_second_model_and_every_goal_is_reached() -> None:
    """Model against model (no binding needed) checks the harness itself."""

    class QueueModelRun(QueueMachine):
        """The queue machine over a second reference model."""

    machine = QueueModelRun
    machine.factory = model_factory
    run_and_check(machine, "QueueModelMachine")
