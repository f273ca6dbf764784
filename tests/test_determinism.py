"""Double-run determinism: same seed, fresh interpreter, another hash seed, same steps.

Runs `python -m ci.determinism` on small samples (a few programs each); the
nightly job runs it with the defaults (`ci/github-workflow-example.yml`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ci.determinism.command import first_difference

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 900


def _determinism(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - our own interpreter and module
        [
            sys.executable,
            "-m",
            "ci.determinism",
            "--artifacts",
            str(tmp_path),
            *arguments,
        ],
        cwd=REPO_ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )


def test_the_first_difference_names_the_line_that_differs() -> None:
    """Equal logs have none; otherwise the first differing line, or the shorter end."""
    assert "" == first_difference(b"a\nb\n", b"a\nb\n")
    assert "line 2: 'b' != 'c'" == first_difference(b"a\nb\n", b"a\nc\n")
    assert "line 2: one log ends (1 vs 2 lines)" == first_difference(b"a\n", b"a\nb\n")


def test_the_hash_order_canary_is_caught(tmp_path: Path) -> None:
    """A machine that iterates a set of strings logs different steps: exit 1."""
    result = _determinism(tmp_path, "--tests", "canary-hash-order", "--examples", "3")

    assert 1 == result.returncode, result.stdout + result.stderr
    assert result.stdout.startswith("DIFFERENT canary-hash-order (passing): line ")


@pytest.mark.slow
@pytest.mark.crate
def test_the_crate_machines_log_the_same_steps_in_two_interpreters(
    tmp_path: Path,
) -> None:
    """Affinity and queue against the crate: byte-identical step logs."""
    result = _determinism(tmp_path, "--tests", "affinity,queue", "--examples", "3")
    lines = result.stdout.splitlines()

    assert 0 == result.returncode, result.stdout + result.stderr
    assert lines[0].startswith("SAME affinity (passing): step logs identical: 3 ")
    assert lines[1].startswith("SAME queue (passing): step logs identical: 3 ")


@pytest.mark.slow
@pytest.mark.crate
def test_a_failing_canary_reproduces_its_trace_and_first_divergence(
    tmp_path: Path,
) -> None:
    """Found twice: the same trace, failing check and replay output."""
    result = _determinism(tmp_path, "--tests", "", "--failing", "canary-late-expiry")

    assert 0 == result.returncode, result.stdout + result.stderr
    assert result.stdout.startswith("SAME canary-late-expiry (failing): same trace (")
