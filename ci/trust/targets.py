"""The named targets of `ci.fuzz`, `ci.soak` and `ci.determinism`: pytest node ids.

A target is one pytest test that runs a machine under the loaded Hypothesis
settings. Each subject declares its own in the subject registry
(`ci.subjects`): the machines' own tests (`stateful/`) and the subject's
canary targets (`ci/trust/canary_targets.py`, broken on purpose). The
hash-order canary belongs to no subject and is declared here.
"""

from __future__ import annotations

from typing import Final

from ci import subjects
from ci.subjects import MachineTest

__all__ = [
    "CANARY_FILE",
    "CRATE_TARGETS",
    "TARGETS",
    "MachineTest",
    "UnknownTargetError",
    "resolve",
]

CANARY_FILE: Final[str] = "ci/trust/canary_targets.py"

_UNOWNED: Final[tuple[MachineTest, ...]] = (
    MachineTest(
        "canary-hash-order",
        f"{CANARY_FILE}::test_the_hash_order_canary_runs_the_same_program_twice",
        "canary: programs drawn from a set of strings (hash order)",
        canary=True,
    ),
)

TARGETS: Final[dict[str, MachineTest]] = {
    target.name: target for target in (*subjects.targets(), *_UNOWNED)
}
CRATE_TARGETS: Final[tuple[str, ...]] = tuple(
    target.name for target in TARGETS.values() if target.default
)
"""What fuzzing and the soak run by default: the machines against the crate."""


class UnknownTargetError(ValueError):
    """A target name that is not in `TARGETS`; the message is one line."""


def resolve(names: str) -> tuple[MachineTest, ...]:
    """Targets from a comma-separated list of names, in the order given."""
    chosen: list[MachineTest] = []
    for name in (part.strip() for part in names.split(",")):
        if name not in TARGETS:
            known = ", ".join(sorted(TARGETS))
            raise UnknownTargetError(f"unknown target {name!r}; known: {known}")
        if TARGETS[name] not in chosen:
            chosen.append(TARGETS[name])
    return tuple(chosen)
