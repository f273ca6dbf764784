"""Every policy-queue canary (a deliberately broken queue) is caught by the machine.

Each is caught by the check `CAUGHT_BY` names: a comparison of the harness
(`outcomes_agree`, `states_agree`) or a registered property, as the final,
shrunk replay reports it first.
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.queue import CANARIES, CAUGHT_BY, SLOW_CANARIES
from ci.profiles import CANARY_SETTINGS, selected_profile
from stateful import capture
from stateful.queue_machine import QueueMachine

NATIVE = frozenset({"late_stats", "lax_request_limit", "lifo_ties"})


def _marks(name: str) -> list[pytest.MarkDecorator]:
    marks = [pytest.mark.slow] if name in SLOW_CANARIES else []
    return marks + ([pytest.mark.native] if name in NATIVE else [])


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=_marks(name)) for name in sorted(CANARIES)]
)
def test_queue_canary_is_caught_by_its_check(name: str) -> None:
    """The differential queue machine fails on the canary, by the named check."""
    if name in SLOW_CANARIES and selected_profile() != "nightly":
        pytest.skip("slow canary: runs under the nightly profile")
    machine = type(f"QueueCanary_{name}", (QueueMachine,), {"factory": CANARIES[name]})
    capture.reset()

    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)

    failed = [run.failed for run in capture.final_runs() if run.failed is not None]
    print(f"{name}: {[(f.check, f.step, f.difference[:120]) for f in failed]}")
    assert [CAUGHT_BY[name]] == [f.check for f in failed][:1]


def test_every_queue_canary_names_the_check_that_catches_it() -> None:
    """`CAUGHT_BY` covers exactly the canaries."""
    assert sorted(CANARIES) == sorted(CAUGHT_BY)
