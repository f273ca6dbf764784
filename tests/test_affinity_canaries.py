"""Every affinity canary (a deliberately broken system) is caught by the machine.

Each is caught by the check `CAUGHT_BY` names: a comparison of the harness
(`outcomes_agree`, `states_agree`) or a registered property, as the final,
shrunk replay reports it first.
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.affinity import CANARIES, CAUGHT_BY
from ci.profiles import CANARY_SETTINGS
from stateful import capture
from stateful.affinity_machine import AffinityMachine


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_canary_is_caught_by_its_check(name: str) -> None:
    """The differential machine fails on the canary, by the named check."""
    machine = type(f"Canary_{name}", (AffinityMachine,), {"factory": CANARIES[name]})
    capture.reset()

    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)

    failed = [run.failed for run in capture.final_runs() if run.failed is not None]
    print(f"{name}: {[(f.check, f.step, f.difference[:120]) for f in failed]}")
    assert [CAUGHT_BY[name]] == [f.check for f in failed][:1]


def test_every_canary_names_the_check_that_catches_it() -> None:
    """`CAUGHT_BY` covers exactly the canaries."""
    assert sorted(CANARIES) == sorted(CAUGHT_BY)
