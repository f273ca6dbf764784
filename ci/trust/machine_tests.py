"""The machine tests `ci.fuzz`, `ci.soak` and `ci.determinism` run by name.

A machine test is one pytest test that runs a machine under the loaded
Hypothesis settings. Each subject declares its own in the subject registry
(`ci.subjects`): the machines' own tests (`stateful/`) and the subject's
canary tests (`ci/trust/canary_tests.py`, broken on purpose). The hash-order
canary belongs to no subject and is declared here.
"""

from __future__ import annotations

from typing import Final

from ci import subjects
from ci.cli import UsageError
from ci.subjects import MachineTest

__all__ = [
    "CANARY_FILE",
    "CRATE_TESTS",
    "MACHINE_TESTS",
    "MachineTest",
    "UnknownMachineTestError",
    "resolve",
]

CANARY_FILE: Final[str] = "ci/trust/canary_tests.py"

_UNOWNED: Final[tuple[MachineTest, ...]] = (
    MachineTest(
        "canary-hash-order",
        f"{CANARY_FILE}::test_the_hash_order_canary_runs_the_same_program_twice",
        "canary: programs drawn from a set of strings (hash order)",
        canary=True,
    ),
)

MACHINE_TESTS: Final[dict[str, MachineTest]] = {
    test.name: test for test in (*subjects.machine_tests(), *_UNOWNED)
}
CRATE_TESTS: Final[tuple[str, ...]] = tuple(
    test.name for test in MACHINE_TESTS.values() if test.default
)
"""What fuzzing and the soak run by default: the machines against the crate."""


class UnknownMachineTestError(UsageError):
    """A name that is not in `MACHINE_TESTS`: a usage error of the command."""


def resolve(names: str) -> tuple[MachineTest, ...]:
    """Machine tests from a comma-separated list of names, in the order given."""
    chosen: list[MachineTest] = []
    for name in (part.strip() for part in names.split(",")):
        if name not in MACHINE_TESTS:
            known = ", ".join(sorted(MACHINE_TESTS))
            raise UnknownMachineTestError(
                f"unknown machine test {name!r}; known: {known}"
            )
        if MACHINE_TESTS[name] not in chosen:
            chosen.append(MACHINE_TESTS[name])
    return tuple(chosen)
