"""The pinned crate behaves as docs/production.md's table says."""

from __future__ import annotations

from pathlib import Path

import pytest

from ci import production
from impl import adapter
from impl.adapter import CrateAffinity, crate_default_config
from model.affinity.api import AffinityApi
from model.affinity.table import ModelAffinity
from model.affinity.types import (
    SECOND_NS,
    AffinityConfig,
    Initialize,
    Mode,
    Target,
    Wait,
)
from model.errors import InvalidArgumentError, ResourceExhaustedError, UnsupportedError

pytestmark = pytest.mark.pinned

PAGE = Path(__file__).resolve().parent.parent / "docs" / "production.md"


def _bind_and_release(table: AffinityApi, session_id: str) -> None:
    step = table.try_acquire(session_id, None)
    assert isinstance(step, Initialize)
    table.release(table.commit(step.handle, Target(1, None)))


def test_the_production_table_is_generated_from_the_declared_rows() -> None:
    """docs/production.md embeds exactly the table `python -m ci.production` prints."""
    text = PAGE.read_text(encoding="utf-8")

    assert production.markdown() in text


def test_the_binding_is_built_against_the_pinned_crates_io_version() -> None:
    """The binding reports the crate version and source the table declares."""
    assert production.CRATE_VERSION == adapter.CRATE_VERSION
    assert adapter.CRATE_SOURCE == "registry"


def test_the_pinned_crate_has_no_manual_clock() -> None:
    """Only the runtime clock exists; manual-clock reaping variants are refused."""
    config = AffinityConfig(ttl_ns=SECOND_NS, reaping="every_advance")

    assert adapter.HAS_MANUAL_CLOCK is False
    with pytest.raises(UnsupportedError):
        CrateAffinity(config)


def test_the_reaper_collects_on_its_cadence_not_on_every_advance() -> None:
    """SPEC B.14 probe: a new id is refused at t0+89 s and accepted after t0+90 s."""
    table = CrateAffinity(AffinityConfig(ttl_ns=60 * SECOND_NS, max_entries=1))
    table.advance_clock(29 * SECOND_NS)
    _bind_and_release(table, "a")  # idle deadline t0 + 89 s
    table.advance_clock(60 * SECOND_NS)
    table.advance_clock(89 * SECOND_NS)

    with pytest.raises(ResourceExhaustedError):
        table.try_acquire("b", None)
    assert 1 == table.entry_count()
    assert table.query_target("a", None) is None
    table.advance_clock(90 * SECOND_NS)
    assert 0 == table.entry_count()
    assert isinstance(table.try_acquire("b", None), Initialize)


def test_reaper_ticks_fall_on_the_one_millisecond_timer_grid() -> None:
    """With a TTL of 1 s + 1 ns the first collection happens at 1.001 s."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS + 1))
    _bind_and_release(table, "a")
    table.advance_clock(SECOND_NS + 999_999)

    assert 1 == table.entry_count()
    table.advance_clock(SECOND_NS + 1_000_000)
    assert 0 == table.entry_count()


def test_the_last_clone_stops_the_reaper_before_its_next_tick() -> None:
    """One reaper task from construction; none once the table is dropped."""
    table = CrateAffinity(AffinityConfig(ttl_ns=90 * SECOND_NS))
    assert 1 == table.runtime_tasks()

    table.drop_table()

    assert 0 == table.runtime_tasks()
    assert 0 == table.now_ns


def test_a_join_binds_at_once_with_a_reserved_initializer_use() -> None:
    """AFF-reserved-join: joining gives two active leases before the commit."""
    table = CrateAffinity(AffinityConfig(ttl_ns=10 * SECOND_NS))
    step = table.try_acquire("a", None)
    assert isinstance(step, Initialize)

    joined = table.join_initializing("a", Target(2, 0))

    assert joined is not None
    assert 2 == table.lease_count("a")
    assert Target(2, 0) == table.query_target("a", None)


def test_the_testing_hooks_are_available() -> None:
    """The `testing` feature's hooks answer (entry and lease counts)."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))
    step = table.try_acquire("a", None)

    assert isinstance(step, Initialize)
    assert 1 == table.entry_count()
    assert 0 == table.lease_count("a")
    assert isinstance(table.try_acquire("a", None), Wait)


def test_the_runtime_table_seeds_its_sequence_from_the_wall_clock() -> None:
    """A fresh runtime table's first sequence is not 1 but far beyond 10**18."""
    first = adapter.raw_next_sequence_probe(AffinityConfig(ttl_ns=SECOND_NS))

    assert first > 10**18
    assert first < adapter.SEQUENCE_OFFSET


def test_the_pinned_crate_has_no_group_id_function() -> None:
    """`subagent_group_affinity_id` is absent from 1.6.1."""
    table = CrateAffinity(AffinityConfig(ttl_ns=SECOND_NS))

    with pytest.raises(UnsupportedError):
        table.subagent_group_affinity_id("parent")


def test_the_crate_defaults_are_hard_mode_65536_entries_and_256_byte_ids() -> None:
    """`SessionAffinityConfig::new(ttl)` gives the defaults the model assumes."""
    defaults = crate_default_config(SECOND_NS)

    assert AffinityConfig(ttl_ns=SECOND_NS) == defaults
    assert (Mode.HARD, 65_536, 256) == (
        defaults.mode,
        defaults.max_entries,
        defaults.max_session_id_bytes,
    )


@pytest.mark.parametrize("side", ["model", "crate"])
def test_a_default_table_takes_65536_sessions_of_up_to_256_bytes(side: str) -> None:
    """At the crate's defaults, session 65,537 and a 257-byte id are refused."""
    config = crate_default_config(SECOND_NS)
    table: AffinityApi = (
        ModelAffinity(config) if side == "model" else CrateAffinity(config)
    )
    with pytest.raises(InvalidArgumentError):
        table.try_acquire("x" * 257, None)
    _bind_and_release(table, "x" * 256)
    for number in range(1, 65_536):
        _bind_and_release(table, f"s{number}")

    assert 65_536 == table.entry_count()
    with pytest.raises(ResourceExhaustedError):
        table.try_acquire("one-too-many", None)
    assert 65_536 == table.entry_count()
