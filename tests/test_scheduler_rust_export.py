"""Scheduler traces export as Rust tests that cargo runs against the pinned crate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ci.profiles import selected_profile
from ci.replay.corpus.scheduler_scenarios import files
from ci.replay.rust.cargo import run_exports
from ci.replay.rust.emit import Capabilities, export, export_name, rustfmt
from ci.replay.rust.scheduler import exportable
from ci.replay.trace import load

TRACES = [path for path in files() if exportable(load(path))]
"""The traces the export writes (`exportable`: the synthetic profile's)."""
PINNED = Capabilities(crate_version="1.6.1", manual_clock=False)
BUILDING_PROFILES = ("ci", "nightly")


def _export(path: Path) -> str:
    return export(load(path), export_name(path), lambda: PINNED)


@pytest.mark.parametrize("path", TRACES, ids=lambda path: path.stem)
def test_a_scheduler_export_has_one_block_and_one_counter_check_per_step(
    path: Path,
) -> None:
    """Every step is a `// step N:` block that checks the counters after it."""
    text = _export(path)
    steps = re.findall(r"^ *// step (\d+): ", text, flags=re.MULTILINE)

    assert [str(step.index) for step in load(path).steps] == steps
    assert len(steps) == text.count("scheduler.class_queue_stats(0)")
    assert text == rustfmt(text)


def test_every_scheduler_trace_runs_as_a_rust_test_on_the_pinned_crate() -> None:
    """One test binary, every scheduler corpus trace, all pass on =1.6.1."""
    if selected_profile() not in BUILDING_PROFILES:
        pytest.skip("builds the crate: runs under the ci and nightly profiles")
    exports = {export_name(path): _export(path) for path in TRACES}

    run = run_exports("scheduler", exports)

    print(
        f"cargo: {len(exports)} scheduler exports, build {run.build_seconds:.0f} s, "
        f"tests {run.test_seconds:.1f} s"
    )
    assert run.build_ok, run.output[-4000:]
    assert len(exports) == run.passed, run.output[-4000:]
    assert 0 == run.failed
