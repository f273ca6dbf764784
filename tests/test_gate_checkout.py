"""`ci.gate --source` on the trees a Dynamo engineer has, built at run time.

A Dynamo checkout is a cargo workspace (`checkout_support.lay_out_checkout`
lays one out from the published packages, outside the repository): the gate
builds through its root and through its `lib/kv-router` (nightly: a build and
a whole `pr` gate each). A lone copy of `lib/kv-router` has no workspace root
to inherit from: refused in one line before any compile. A tree the binding
does not compile against ends in one line per crate item that differs, read
from cargo's JSON diagnostics (slow: it compiles the tree's crate).
"""

from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Final

import pytest
from checkout_support import copy_pinned_crate, edit_source, lay_out_checkout
from command_support import run_module

from ci.build_local import SOURCE_ENV
from ci.gate import EXIT_INFRA, EXIT_PASS, GATE_TIMEOUT_S
from ci.profiles import selected_profile
from ci.replay.artifacts import BUILD_TREE_ENV

OUTPUT_SHOWN_MAX: Final[int] = 6_000
REFUSAL_TIMEOUT_S: Final[int] = 120
BUILD_TIMEOUT_S: Final[int] = 1_800
AFFINITY_RS: Final[Path] = Path("src/services/selection/affinity.rs")
RUN_RS: Final[Path] = Path("src/services/selection/core/run.rs")


def _environment() -> dict[str, str]:
    return {
        name: value
        for name, value in os.environ.items()
        if name not in {SOURCE_ENV, BUILD_TREE_ENV}
    }


def test_a_lone_kv_router_folder_is_refused_before_any_compile(tmp_path: Path) -> None:
    """A copy of lib/kv-router without its workspace root: one line, exit 2."""
    checkout = lay_out_checkout(tmp_path / "dynamo")
    lone = tmp_path / "kv-router"
    shutil.copytree(checkout / "lib" / "kv-router", lone)

    completed = run_module(
        "ci.gate",
        "--job",
        "pr",
        "--source",
        str(lone),
        "--artifacts",
        str(tmp_path / "artifacts"),
        timeout_s=REFUSAL_TIMEOUT_S,
        env=_environment(),
    )

    lines = completed.stderr.strip().splitlines()
    assert EXIT_INFRA == completed.returncode
    assert 1 == len(lines), completed.stderr
    assert lines[0].startswith("ci.gate: error: ")
    assert "workspace" in lines[0]
    assert "pass the Dynamo checkout's root" in lines[0]
    assert "" == completed.stdout
    assert not (tmp_path / "artifacts").exists()


def test_the_checkout_root_names_each_member_the_router_inherits(
    tmp_path: Path,
) -> None:
    """The laid-out root lists the four crates and their sibling paths."""
    checkout = lay_out_checkout(tmp_path / "dynamo")

    manifest = (checkout / "Cargo.toml").read_text(encoding="utf-8")

    for folder in ("kv-hashing", "kv-router", "tokens", "truthy"):
        assert (checkout / "lib" / folder / "Cargo.toml").is_file()
        assert f'path = "lib/{folder}"' in manifest
    assert "version.workspace = true" in (
        checkout / "lib" / "kv-router" / "Cargo.toml"
    ).read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_tree_whose_join_lost_its_target_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """join_initializing without a target: one line naming it, exit 2, log kept."""
    crate = copy_pinned_crate(tmp_path / "crate")
    edit_source(
        crate,
        AFFINITY_RS,
        "        session_id: &str,\n        target: AffinityTarget,\n"
        "    ) -> Option<AffinityLease> {\n",
        "        session_id: &str,\n    ) -> Option<AffinityLease> {\n"
        "        let target = AffinityTarget::new(0, None);\n",
    )
    edit_source(
        crate,
        RUN_RS,
        "table.join_initializing(session_id, dispatched)",
        "table.join_initializing(session_id)",
    )
    artifacts = tmp_path / "artifacts"

    completed = run_module(
        "ci.gate",
        "--job",
        "pr",
        "--source",
        str(crate),
        "--artifacts",
        str(artifacts),
        timeout_s=BUILD_TIMEOUT_S,
        env=_environment(),
    )

    lines = completed.stderr.strip().splitlines()
    assert EXIT_INFRA == completed.returncode, completed.stderr[-OUTPUT_SHOWN_MAX:]
    assert 1 == len(lines), completed.stderr[-OUTPUT_SHOWN_MAX:]
    assert lines[0].startswith("ci.gate: error: join_initializing: ")
    assert "the binding passes 2 arguments, the tree's takes 1" in lines[0]
    assert "impl/src/affinity.rs:" in lines[0]
    assert "pending-join signature" in lines[0]
    assert len(list(artifacts.glob("build/*/build.log"))) == 1
    assert len(list(artifacts.glob("build/*/diagnostics.jsonl"))) == 1


def _gate_passes(source: Path, tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"

    completed = run_module(
        "ci.gate",
        "--job",
        "pr",
        "--source",
        str(source),
        "--junit",
        str(junit),
        "--artifacts",
        str(tmp_path / "artifacts"),
        timeout_s=GATE_TIMEOUT_S,
        env=_environment(),
    )

    output = completed.stdout[-OUTPUT_SHOWN_MAX:] + completed.stderr[-OUTPUT_SHOWN_MAX:]
    assert EXIT_PASS == completed.returncode, output
    assert "gate PASS (pytest exit 0)" in completed.stdout, output
    suites = list(ET.parse(junit).getroot().iter("testsuite"))  # noqa: S314 - ours
    assert 0 < sum(int(suite.get("tests", "0")) for suite in suites)
    assert 0 == sum(int(suite.get("failures", "0")) for suite in suites)
    assert 0 == sum(int(suite.get("errors", "0")) for suite in suites)


@pytest.mark.slow
@pytest.mark.crate
@pytest.mark.pinned
@pytest.mark.parametrize("inside", ["", "lib/kv-router"])
def test_the_gate_passes_a_dynamo_checkout(tmp_path: Path, inside: str) -> None:
    """The laid-out checkout gates PASS through its root and its lib/kv-router."""
    if selected_profile() != "nightly":
        pytest.skip("builds and gates a whole tree: runs under the nightly settings")
    checkout = lay_out_checkout(tmp_path / "dynamo")

    _gate_passes(checkout / inside, tmp_path)
