"""A nondeterminism canary: a machine whose programs depend on the hash seed.

`HashOrderMachine` is the affinity machine, model against model, with one
extra rule that draws a session from `list()` of a set of strings. String
hashes are salted per interpreter (`PYTHONHASHSEED`), so the same Hypothesis
seed makes different programs in two processes: every run passes, and no
failure it finds could be replayed. `python -m ci.determinism` must catch it by
comparing the step logs of two runs (STYLE pitfall 4: never iterate a set).
"""

from __future__ import annotations

from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import rule

from model.affinity.table import ModelAffinity
from stateful.affinity_machine import AffinityMachine
from stateful.harness import SutFactory

HASH_ORDERED_SESSIONS: frozenset[str] = frozenset({"a", "b", "c", "d"})
"""Iterated without sorting, on purpose."""


class HashOrderMachine(AffinityMachine):
    """The affinity machine (model against model) drawing from an unsorted set."""

    factory: ClassVar[SutFactory | None] = ModelAffinity
    goals_reached: ClassVar[set[str]] = set()
    goal_counts: ClassVar[dict[str, int]] = {}
    rules_run: ClassVar[set[str]] = set()

    @rule(data=st.data())
    def acquire_from_a_set(self, data: st.DataObject) -> None:
        """Acquire a session picked by position in a set (hash order)."""
        session_id = data.draw(st.sampled_from(list(HASH_ORDERED_SESSIONS)))  # noqa: C414 - the canary's point
        self.acquire(session_id, None)
