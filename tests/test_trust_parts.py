"""The small parts of the trust commands, each on its own.

Durations, batch seeds, machine tests, run configurations, and the shared
database's merge of Redis and its local directory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis.database import DirectoryBasedExampleDatabase

from ci.fuzz.command import batch_seed, duration_s
from ci.trust.database import SharedDatabase
from ci.trust.machine_tests import MACHINE_TESTS, UnknownMachineTestError, resolve
from ci.trust.plugin import RunConfig


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90.0), ("90s", 90.0), ("10m", 600.0), ("2h", 7200.0), ("1h30m", 5400.0)],
)
def test_durations_read_hours_minutes_and_seconds(text: str, seconds: float) -> None:
    """`--for` takes 90, 90s, 10m, 2h and 1h30m."""
    assert seconds == duration_s(text)


@pytest.mark.parametrize("text", ["", "soon", "0m", "10x", "m"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    """Empty, zero and unknown units are refused."""
    with pytest.raises(argparse.ArgumentTypeError):
        duration_s(text)


def test_batch_seeds_follow_from_the_base_seed() -> None:
    """The same base, worker and batch give the same seed; another batch another."""
    assert batch_seed(1, 0, 0) == batch_seed(1, 0, 0)
    assert batch_seed(1, 0, 0) != batch_seed(1, 0, 1)
    assert batch_seed(1, 0, 0) != batch_seed(1, 1, 0)
    assert batch_seed(1, 0, 0) != batch_seed(2, 0, 0)


def test_machine_tests_resolve_in_the_order_given_once_each() -> None:
    """A comma-separated list keeps its order and drops repeats."""
    chosen = resolve("queue,affinity,queue")

    assert (MACHINE_TESTS["queue"], MACHINE_TESTS["affinity"]) == chosen


def test_an_unknown_machine_test_names_the_known_ones() -> None:
    """The error is one line listing every machine test."""
    known = "known: affinity, canary-hash-order"
    with pytest.raises(UnknownMachineTestError, match=known):
        resolve("affinity,nope")


def test_a_run_config_survives_the_environment_variable() -> None:
    """What a command asks for is what the plugin reads."""
    config = RunConfig(
        base="fuzz",
        max_examples=7,
        phases=("explicit", "reuse"),
        redis_url="redis://127.0.0.1:1/0",
        database_dir="db",
        fresh_seeds=3,
    )

    assert config == RunConfig.from_env(config.to_env())


def test_the_shared_database_keeps_every_example_in_both_and_reads_each_once(
    tmp_path: Path,
) -> None:
    """Saves go to both; fetch merges without repeats; delete and move reach both."""
    primary = DirectoryBasedExampleDatabase(str(tmp_path / "primary"))
    local = DirectoryBasedExampleDatabase(str(tmp_path / "local"))
    shared = SharedDatabase(primary, local)
    primary.save(b"k", b"only-in-primary")

    shared.save(b"k", b"both")
    shared.move(b"k", b"k2", b"both")
    shared.save(b"k", b"gone")
    shared.delete(b"k", b"gone")

    assert [b"only-in-primary"] == sorted(shared.fetch(b"k"))
    assert [b"both"] == sorted(primary.fetch(b"k2"))
    assert [b"both"] == sorted(local.fetch(b"k2"))
    assert [b"both"] == list(shared.fetch(b"k2"))
    assert shared.fallback_reason is None
