"""A nondeterminism canary: a machine whose programs depend on the hash seed.

`HashOrderMachine` is the affinity machine, model against model, with one
extra rule that acquires every session of a set of strings, in set order. String
hashes are salted per interpreter (`PYTHONHASHSEED`), so the same Hypothesis
seed makes the same program take different steps in two processes: every run
passes, and no failure it finds could be replayed. `python -m ci.determinism`
must catch it by comparing the step logs of two runs (never iterate a set).
"""

from __future__ import annotations

from typing import ClassVar

from model.affinity.table import ModelAffinity
from stateful.affinity_machine import AffinityMachine
from stateful.affinity_subject import CrateFactory
from stateful.machine import precondition, rule

HASH_ORDERED_SESSIONS: frozenset[str] = frozenset({"a", "b", "c", "d"})
"""Iterated without sorting, on purpose."""


class HashOrderMachine(AffinityMachine):
    """The affinity machine (model against model) drawing from an unsorted set."""

    factory: ClassVar[CrateFactory | None] = ModelAffinity

    def is_built(self) -> bool:
        """The tables exist."""
        return self.harness is not None

    @precondition(is_built)
    @rule()
    def acquire_each_session_of_a_set(self) -> None:
        """Acquire every session of a set, in the set's (hash) order."""
        for session_id in HASH_ORDERED_SESSIONS:
            self.acquire(session_id, None)
