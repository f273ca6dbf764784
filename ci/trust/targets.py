"""The named targets of `ci.fuzz`, `ci.soak` and `ci.determinism`: pytest node ids.

A target is one pytest test that runs a machine under the loaded Hypothesis
settings. The crate targets are the machines' own tests (`stateful/`); the
canary targets (`ci/trust/canary_targets.py`) are broken on purpose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Target:
    """One test to fuzz, soak or run twice."""

    name: str
    nodeid: str
    description: str
    canary: bool = False


_CANARY_FILE: Final[str] = "ci/trust/canary_targets.py"

TARGETS: Final[dict[str, Target]] = {
    target.name: target
    for target in (
        Target(
            "affinity",
            "stateful/test_affinity_machine.py::"
            "test_the_crate_agrees_with_the_model_and_every_goal_is_reached",
            "the affinity machine against the crate (runtime clock)",
        ),
        Target(
            "queue",
            "stateful/test_queue_machine.py::"
            "test_the_crate_agrees_with_the_model_and_every_goal_is_reached",
            "the policy-queue machine against the crate",
        ),
        Target(
            "queue-model",
            "stateful/test_queue_machine.py::"
            "test_the_model_agrees_with_a_second_model_and_every_goal_is_reached",
            "the policy-queue machine, model against model (no extension)",
        ),
        Target(
            "scheduler",
            "stateful/test_scheduler_machine.py::"
            "test_the_crate_scheduler_agrees_with_the_model_and_every_goal_is_reached",
            "the public scheduler's machine against the crate",
        ),
        Target(
            "scheduler-model",
            "stateful/test_scheduler_machine.py::"
            "test_the_scheduler_model_agrees_with_a_second_model",
            "the public scheduler's machine, model against model (no extension)",
        ),
        Target(
            "canary-late-expiry",
            f"{_CANARY_FILE}::test_the_late_expiry_canary_agrees_with_the_model",
            "canary: the crate serving a binding 1 ns past its deadline",
            canary=True,
        ),
        Target(
            "canary-plain-rotation",
            f"{_CANARY_FILE}::test_the_plain_rotation_canary_agrees_with_the_model",
            "canary: a queue in plain rotation (no extension)",
            canary=True,
        ),
        Target(
            "canary-hash-order",
            f"{_CANARY_FILE}::test_the_hash_order_canary_runs_the_same_program_twice",
            "canary: programs drawn from a set of strings (hash order)",
            canary=True,
        ),
    )
}
CRATE_TARGETS: Final[tuple[str, ...]] = ("affinity", "queue")
"""What fuzzing and the soak run by default: the machines against the crate."""


class UnknownTargetError(ValueError):
    """A target name that is not in `TARGETS`; the message is one line."""


def resolve(names: str) -> tuple[Target, ...]:
    """Targets from a comma-separated list of names, in the order given."""
    chosen: list[Target] = []
    for name in (part.strip() for part in names.split(",")):
        if name not in TARGETS:
            known = ", ".join(sorted(TARGETS))
            raise UnknownTargetError(f"unknown target {name!r}; known: {known}")
        if TARGETS[name] not in chosen:
            chosen.append(TARGETS[name])
    return tuple(chosen)
