"""Run a subject's machine against one of its canaries and name what caught it.

The canary test (`tests/test_canaries.py`) and the registry's own test run
every registered subject's canaries through `first_failed_check`: the
subject's machine (`ci.subjects`, `machine`) is subclassed with the canary as
its system under test, run under `CANARY_SETTINGS`, and the final, shrunk
replay names the first check that failed -- a comparison of the harness
(`outcomes_agree`, `states_agree`) or a registered property.
"""

from __future__ import annotations

from hypothesis import settings as Settings  # noqa: N812 - the type, not a profile
from hypothesis.stateful import run_state_machine_as_test

from ci.profiles import CANARY_SETTINGS
from ci.subjects import SubjectEntry
from stateful import capture
from stateful.machine import DifferentialMachine


class CanarySurvivedError(AssertionError):
    """The machine passed against a deliberately broken system."""


def first_failed_check(
    entry: SubjectEntry, canary: str, settings: Settings = CANARY_SETTINGS
) -> list[str]:
    """The checks that failed first in each final replay, in replay order.

    Raises `CanarySurvivedError` if the machine passed against the canary.
    """
    factory = entry.canary_factories()[canary]
    machine: type[DifferentialMachine] = type(
        f"Canary_{canary}", (entry.machine(),), {"factory": staticmethod(factory)}
    )
    capture.reset()
    try:
        run_state_machine_as_test(machine, settings=settings)
    except AssertionError:
        failed = [run.failed for run in capture.final_runs() if run.failed]
        print(f"{canary}: {[(f.check, f.step, f.difference[:120]) for f in failed]}")
        return [found.check for found in failed]
    raise CanarySurvivedError(f"the {entry.name} machine passed against {canary}")
