"""Deliberately broken machine tests of fuzzing and determinism.

Collected only when named by node id (`ci.trust.machine_tests`): the file is
outside the suite's test paths and every test here is meant to fail or to be
caught by `ci.determinism`. Each runs a machine under the loaded settings, so a
trust command's settings (and shared database) apply.
"""

from __future__ import annotations

from typing import ClassVar

from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.affinity import LateExpiry
from ci.canaries.nondeterminism import HashOrderMachine
from ci.canaries.queue import plain_rotation
from stateful.affinity_machine import AffinityMachine
from stateful.affinity_subject import CrateFactory
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import QueueFactory


class LateExpiryMachine(AffinityMachine):
    """The affinity machine against the `late_expiry` canary (the crate, 1 ns late)."""

    factory: ClassVar[CrateFactory | None] = LateExpiry


class PlainRotationMachine(QueueMachine):
    """The queue machine against the `plain_rotation` canary (no binding)."""

    factory: ClassVar[QueueFactory | None] = plain_rotation


def test_the_late_expiry_canary_agrees_with_the_model() -> None:
    """Fails: the canary serves a binding 1 ns past its deadline."""
    run_state_machine_as_test(LateExpiryMachine)


def test_the_plain_rotation_canary_agrees_with_the_model() -> None:
    """Fails: the canary ignores quanta and deficits."""
    run_state_machine_as_test(PlainRotationMachine)


def test_the_hash_order_canary_runs_the_same_program_twice() -> None:
    """Passes in every run, but its programs depend on `PYTHONHASHSEED`."""
    run_state_machine_as_test(HashOrderMachine)
