"""Facts of a manual-clock table that the adapter's normalisation would hide.

The adapter moves every table's local sequence to a fixed offset (so a runtime
table, seeded from the wall clock, is deterministic); that also hides where a
manual table starts counting. These checks read the crate's own first
sequence where the build has a manual clock (a source tree built with the
`manual-clock` feature) and skip, saying so, on crates.io 1.6.1.
"""

from __future__ import annotations

import pytest

from impl import adapter
from model.affinity.table import ModelAffinity
from model.affinity.types import SECOND_NS, AffinityConfig, Version

MANUAL = AffinityConfig(ttl_ns=SECOND_NS, reaping="every_advance")


def test_a_manual_model_table_counts_local_versions_from_one() -> None:
    """The model's first local version of a manual table has sequence 1."""
    assert Version(1, 0) == ModelAffinity(MANUAL).next_version()


@pytest.mark.skipif(
    not adapter.HAS_MANUAL_CLOCK,
    reason="the build has no manual clock (crates.io 1.6.1 has none)",
)
def test_a_manual_crate_table_counts_local_versions_from_one() -> None:
    """The crate's manual table starts its sequence at 1, not at the wall clock."""
    assert 1 == adapter.raw_next_sequence_probe(MANUAL)
