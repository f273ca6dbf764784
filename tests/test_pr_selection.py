"""The pr gate keeps every machine, canary and corpus trace, in `ci.order`'s order.

The pr gate deselects tests marked `slow` (`ci.gate`); what it may leave to
the nightly run and `.ci/run` is our own commands run end to end, builds and
the model-against-model runs, never a check of the crate that catches bugs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from ci.order import rank

REPO: Final[Path] = Path(__file__).resolve().parents[1]
KEPT_FILES: Final[tuple[str, ...]] = (
    "stateful/test_affinity_machine.py",
    "stateful/test_queue_machine.py",
    "stateful/test_scheduler_machine.py",
    "tests/test_replica_network.py",
    "tests/test_canaries.py",
    "tests/test_scheduler_canaries.py",
    "tests/test_corpus.py",
    "tests/test_scheduler_corpus.py",
)
"""Machines against the crate, canaries and the corpus: the pr gate runs them all."""
AGAINST_A_SECOND_MODEL: Final[str] = "second_model"
"""In a test's name: it checks the harness, not the crate; nightly may keep it."""


@pytest.fixture(scope="module")
def slow() -> set[str]:
    """Node ids of the tests marked slow: those the pr gate leaves out."""
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "slow"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    return {line for line in completed.stdout.splitlines() if "::" in line}


def test_the_pr_gate_runs_every_machine_canary_and_corpus_trace(
    slow: set[str],
) -> None:
    """No test of a machine, canary or corpus file is left to the nightly run."""
    left_out = {
        node
        for node in slow
        if node.split("::")[0] in KEPT_FILES and AGAINST_A_SECOND_MODEL not in node
    }

    assert all((REPO / file).is_file() for file in KEPT_FILES)
    assert not left_out, sorted(left_out)


def test_the_pr_gate_leaves_some_tests_to_the_nightly_run(slow: set[str]) -> None:
    """The marker selects: the whole-gate runs of our own gate are among them."""
    assert any(node.startswith("tests/test_gate.py::") for node in slow)


class _Item:
    """What `ci.order.rank` reads of a collected test."""

    def __init__(self, nodeid: str, slow: bool) -> None:
        self.nodeid = nodeid
        self._slow = slow

    def get_closest_marker(self, name: str) -> object | None:
        """A marker object for `slow` when the test has it."""
        return object() if name == "slow" and self._slow else None


def test_slow_tests_run_first_then_the_machines_then_the_rest() -> None:
    """`ci.order.rank` sorts a run: slow, `stateful/`, everything else."""
    items = [
        _Item("tests/test_x.py::test_quick", slow=False),
        _Item("stateful/test_affinity_machine.py::test_machine", slow=False),
        _Item("tests/test_gate.py::test_whole_gate", slow=True),
    ]

    ordered = sorted(items, key=rank)  # type: ignore[arg-type]

    assert [item.nodeid for item in ordered] == [
        "tests/test_gate.py::test_whole_gate",
        "stateful/test_affinity_machine.py::test_machine",
        "tests/test_x.py::test_quick",
    ]
