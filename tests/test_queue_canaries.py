"""Every policy-queue canary (a deliberately broken queue) is caught by the machine."""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.queue import CANARIES, SLOW_CANARIES
from ci.profiles import CANARY_SETTINGS, selected_profile
from stateful.queue_machine import QueueMachine


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=[pytest.mark.slow] if name in SLOW_CANARIES else [])
        for name in sorted(CANARIES)
    ],
)
def test_queue_canary_is_caught(name: str) -> None:
    """The differential queue machine fails on the canary."""
    if name in SLOW_CANARIES and selected_profile() != "nightly":
        pytest.skip("slow canary: runs under the nightly profile")
    machine = type(
        f"QueueCanary_{name}",
        (QueueMachine,),
        {
            "factory": staticmethod(CANARIES[name]),
            "goals_reached": set(),
            "rules_run": set(),
            "steps_run": 0,
        },
    )

    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)

    print(f"{name}: caught after {machine.steps_run} steps: {caught.value!r:.200}")
    assert machine.steps_run > 0
