"""Every canary (a deliberately broken system) is caught by its subject's machine.

Each is caught by the check its module's `CAUGHT_BY` names: a comparison of the
harness (`outcomes_agree`, `states_agree`) or a registered property, as the
final, shrunk replay reports it first.
"""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries import affinity, queue, replica, scheduler
from ci.profiles import CANARY_SETTINGS, selected_profile
from stateful import capture
from stateful.affinity_machine import AffinityMachine
from stateful.machine import DifferentialMachine
from stateful.queue_machine import QueueMachine
from stateful.replica_network import ReplicaNetworkMachine
from stateful.scheduler_machine import SchedulerMachine

SUBJECTS = {
    "affinity": (affinity, AffinityMachine),
    "queue": (queue, QueueMachine),
    "replica": (replica, ReplicaNetworkMachine),
    "scheduler": (scheduler, SchedulerMachine),
}
QUEUE_NATIVE = frozenset({"late_stats", "lax_request_limit", "lifo_ties"})


def _case(subject: str, name: str) -> object:
    marks = []
    if subject == "queue" and name in queue.SLOW_CANARIES:
        marks.append(pytest.mark.slow)
    if subject == "affinity" or name in QUEUE_NATIVE:
        marks.append(pytest.mark.native)
    return pytest.param(subject, name, marks=marks, id=f"{subject}-{name}")


@pytest.mark.parametrize(
    ("subject", "name"),
    [
        _case(subject, name)
        for subject, (module, _) in sorted(SUBJECTS.items())
        for name in sorted(module.CANARIES)
    ],
)
def test_a_canary_is_caught_by_its_check(subject: str, name: str) -> None:
    """The differential machine fails on the canary, by the named check."""
    module, base = SUBJECTS[subject]
    slow = subject == "queue" and name in queue.SLOW_CANARIES
    if slow and selected_profile() != "nightly":
        pytest.skip("slow canary: runs under the nightly profile")
    machine: type[DifferentialMachine] = type(
        f"Canary_{name}", (base,), {"factory": module.CANARIES[name]}
    )
    capture.reset()

    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)

    failed = [run.failed for run in capture.final_runs() if run.failed is not None]
    print(f"{name}: {[(f.check, f.step, f.difference[:120]) for f in failed]}")
    assert [module.CAUGHT_BY[name]] == [f.check for f in failed][:1]


@pytest.mark.parametrize("subject", sorted(SUBJECTS))
def test_every_canary_names_the_check_that_catches_it(subject: str) -> None:
    """`CAUGHT_BY` covers exactly the canaries."""
    module, _ = SUBJECTS[subject]
    assert sorted(module.CANARIES) == sorted(module.CAUGHT_BY)
