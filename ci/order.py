"""The order in which a run hands tests to its workers: the longest first.

A pytest plugin (`-p ci.order` in pyproject.toml), so `.ci/run`, the README's
test command and `python -m ci.gate` all run tests in this order.

Collected in `testpaths` order, the state machines of `stateful/` came last:
the tests that catch the crate's bugs, and the longest ones (tens of seconds
each against well under a second for most of `tests/`), started after every
quick test had run, and a run ended waiting for one worker to finish a
machine. Now every test under `stateful/` comes first (collection order within
each group stays), and pytest-xdist hands tests out one at a time
(`--maxschedchunk 1`, unless the command line says otherwise) rather than in
consecutive chunks of a quarter of the run: the long machines spread over the
workers as they free up, and the quick tests fill in the end. A failing
machine is reported in the first minute instead of the last.

Ahead of the machines go the tests marked `slow`, which the pr gate leaves
out: where they run (`.ci/run`, nightly) they are the longest of all (builds
of the crate, the model-against-model runs), and a build started last would
leave one worker compiling while the other sits idle.

The order is a pure function of the collected node ids, so every xdist worker
computes the same one (xdist refuses to run when collections differ).
"""

from __future__ import annotations

from typing import Final

import pytest

SLOW_MARKER: Final[str] = "slow"
"""Tests with this marker run first (the pr gate deselects them)."""
FIRST_FOLDERS: Final[tuple[str, ...]] = ("stateful/",)
"""Tests under these folders run next: the machines against the crate."""
SCHEDULE_CHUNK: Final[int] = 1
"""Tests xdist sends a worker at a time, once the first two are handed out."""


def rank(item: pytest.Item) -> int:
    """0 for a `slow` test, 1 for one under a `FIRST_FOLDERS` folder, 2 else."""
    if item.get_closest_marker(SLOW_MARKER) is not None:
        return 0
    return 1 if item.nodeid.startswith(FIRST_FOLDERS) else 2


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow, then machines, then the rest; a stable sort keeps the order within."""
    items.sort(key=rank)


def pytest_configure(config: pytest.Config) -> None:
    """Hand tests to xdist workers one at a time unless told otherwise."""
    if getattr(config.option, "maxschedchunk", SCHEDULE_CHUNK) is None:
        config.option.maxschedchunk = SCHEDULE_CHUNK
