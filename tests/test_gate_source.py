"""`ci.gate --source` on a local copy of the pinned crate: the gate judges the tree.

The gate builds the binding against the copy (minutes of Rust compilation),
copies the Python tree beside the build (a plain folder, no git checkout) and
runs the `pr` job there with the tests marked `pinned` left out. The copy is
the pinned crate byte for byte, so every test that runs must pass: a failure
would be a test judging something other than the tree (the checkout, the
installed build), which is what a Dynamo developer gating a correct change
would see as a false FAIL. It runs under the nightly settings only: the build
and a whole `pr` gate take longer than `.ci/run` should.
"""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from command_support import run_module

from ci import build_local
from ci.build_local import SOURCE_ENV
from ci.gate import EXIT_PASS, GATE_TIMEOUT_S
from ci.profiles import selected_profile
from ci.replay.artifacts import BUILD_TREE_ENV

OUTPUT_SHOWN_MAX = 6_000
"""Characters of the gate's output an assertion message carries."""


@pytest.mark.slow
@pytest.mark.crate
@pytest.mark.pinned
def test_the_gate_passes_a_local_copy_of_the_pinned_crate(tmp_path: Path) -> None:
    """A verbatim copy of the pinned crate's source gates PASS, exit 0, no failure."""
    if selected_profile() != "nightly":
        pytest.skip("builds and gates a whole tree: runs under the nightly settings")
    crate = tmp_path / "dynamo-kv-router"
    shutil.copytree(build_local.pinned_source(), crate)
    junit = tmp_path / "junit.xml"
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {SOURCE_ENV, BUILD_TREE_ENV}
    }

    completed = run_module(
        "ci.gate",
        "--job",
        "pr",
        "--source",
        str(crate),
        "--junit",
        str(junit),
        "--artifacts",
        str(tmp_path / "artifacts"),
        timeout_s=GATE_TIMEOUT_S,
        env=environment,
    )

    output = completed.stdout[-OUTPUT_SHOWN_MAX:] + completed.stderr[-OUTPUT_SHOWN_MAX:]
    assert EXIT_PASS == completed.returncode, output
    assert "gate PASS (pytest exit 0)" in completed.stdout, output
    suites = list(ET.parse(junit).getroot().iter("testsuite"))  # noqa: S314 - ours
    assert 0 < sum(int(suite.get("tests", "0")) for suite in suites)
    assert 0 == sum(int(suite.get("failures", "0")) for suite in suites)
    assert 0 == sum(int(suite.get("errors", "0")) for suite in suites)
