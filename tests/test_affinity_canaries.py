"""Every affinity canary (a deliberately broken system) is caught by the machine."""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.affinity import CANARIES
from ci.profiles import CANARY_SETTINGS
from stateful.affinity_machine import AffinityMachine


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_canary_is_caught(name: str) -> None:
    """The differential machine fails on the canary, naming what differed."""
    machine = type(f"Canary_{name}", (AffinityMachine,), {"factory": CANARIES[name]})

    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)

    assert str(caught.value) != ""
