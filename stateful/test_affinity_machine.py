"""The affinity machine against the crate, and its coverage goals, on both clocks.

Which clocks a build has, and how its manual clock collects idle bindings, is
decided by the capability probe (`impl/probe.py`) of the built binding, never
by its version string. The pinned crates.io crate has only the runtime clock:
there the manual-clock machines run model against model (the clock axis of the
Python side), and the crate's manual-clock run is skipped with the reason.
"""

from __future__ import annotations

import pytest

from model.affinity.table import ModelAffinity
from model.affinity.types import Reaping
from stateful.affinity_clock_machine import (
    RuntimeClockRefusalMachine,
    manual_clock_machine,
)
from stateful.affinity_machine import AffinityMachine
from stateful.harness import against_name
from stateful.machine import run_and_check


def _target_has_manual_clock() -> tuple[bool, Reaping]:
    """(manual clock present, the model variant for it) from the probe."""
    from impl.probe import capabilities  # noqa: PLC0415 - crate builds only

    found = capabilities()
    return found.has_manual_clock, found.model_reaping


def test_the_crate_agrees_with_the_model_and_every_goal_is_reached() -> None:
    """Runtime clock: every step agrees, every rule runs, every goal is reached."""
    machine: type[AffinityMachine] = AffinityMachine
    if against_name() == "crate" and _target_has_manual_clock()[0]:
        machine = RuntimeClockRefusalMachine  # the crate's advance_clock exists
    run_and_check(machine, "AffinityMachine", ("runtime", "runtime_reaper"))


def test_the_crates_manual_clock_agrees_with_the_model() -> None:
    """Manual clock, the build's cleanup schedule: the crate against the model."""
    if against_name() == "model":
        pytest.skip("--against=model: the model-against-model runs below cover it")
    present, reaping = _target_has_manual_clock()
    if not present:
        pytest.skip("the build has no manual clock (crates.io 1.6.1 has none)")
    run_and_check(
        manual_clock_machine(reaping), "ManualClockMachine", ("manual", reaping)
    )


@pytest.mark.parametrize("reaping", ["every_advance", "cadence"])
def test_the_manual_clock_axis_model_against_model(reaping: Reaping) -> None:
    """Manual clock, each schedule: the machine's manual path, model against model."""
    machine = manual_clock_machine(reaping)
    machine.factory = ModelAffinity
    run_and_check(machine, f"ManualClockModel_{reaping}", ("manual", reaping))
