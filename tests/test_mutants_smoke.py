"""Building against a local crate tree, and one mutant the suite must catch.

The first test builds the binding with `python -m ci.build_local` against an
unmutated copy of the pinned crate and runs the affinity machine there (the
control). The second builds `dynamo-kv-router` 1.6.1 with query_target's
expiry check flipped from `<=` to `<` (a binding is still served at the exact
instant it expires) into a copy of our Python tree, and runs the affinity
machine there; the failure's `repro.rs` (its minimized counterexample as a
Rust test) then runs under `cargo test` against a copy of the crate with the
same mutant, and must fail at the step the Python replay names. The editable
install is touched by neither. Both run in `.ci/run` (the `ci` settings) and
build with the sweep's `mutants` cargo profile in the machine's one cargo target
folder (`ci/target_dir.py`), where the Rust export builds too: the
dependencies compile once for all three, then each crate copy and the binding
(seconds each without the optimizer). With nothing compiled, the second test
took 5.1 minutes on two cores under a load of 4 to 6 (dependencies, mutated
crate, binding, machine, and the export's copy of the mutated crate); warm,
well under a minute (10 s). `python -m ci.mutants --smoke` runs the second's
machine part.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from command_support import run_module

from ci.build_local import (
    describe_binding,
    pinned_source,
    tree_environment,
)
from ci.mutants.operators import Mutant
from ci.mutants.plan import CARGO_PROFILES, CRATE_DIR_IN_TREE, prepare_crate_tree
from ci.mutants.smoke import SMOKE_PYTEST_ARGS, smoke
from ci.profiles import selected_profile
from ci.replay.rust.cargo import run_exports, work_root
from ci.target_dir import default_work_dir

pytestmark = pytest.mark.pinned  # builds copies of the pinned crate

BUILD_TIMEOUT_S = 1_800


BUILDING_PROFILES = ("ci", "nightly")
"""Where these builds run: `.ci/run` (the `ci` settings) and nightly; not in `dev`."""


def _when_building() -> None:
    if selected_profile() not in BUILDING_PROFILES:
        pytest.skip("builds the crate: runs under the ci and nightly profiles")


@pytest.mark.slow
def test_the_binding_builds_against_a_local_copy_of_the_pinned_crate(
    tmp_path: Path,
) -> None:
    """`ci.build_local --into TREE` gives a path build that the machine accepts."""
    _when_building()
    crate = prepare_crate_tree(default_work_dir() / "build-local-check")
    tree = tmp_path / "tree"
    built = run_module(
        "ci.build_local",
        "--source",
        str(crate),
        "--into",
        str(tree),
        "--cargo-profile",
        CARGO_PROFILES[0],
        timeout_s=BUILD_TIMEOUT_S,
    )
    assert 0 == built.returncode, built.stderr[-3000:]

    binding = describe_binding(tree)
    machine = run_module(
        "pytest",
        *SMOKE_PYTEST_ARGS,
        timeout_s=BUILD_TIMEOUT_S,
        env=tree_environment(tree),
        cwd=tree,
    )

    assert {"source": "path", "version": "1.6.1", "profile": "mutants"} == {
        key: binding[key] for key in ("source", "version", "profile")
    }
    assert str(tree) in binding["module"]
    assert 0 == machine.returncode, machine.stdout[-3000:]
    assert "registry" == describe_binding()["source"]


def mutated_crate(mutant: Mutant) -> Path:
    """A copy of the pinned crate with `mutant` applied, kept for cargo's cache."""
    root = work_root() / "smoke-crate"
    crate = root / CRATE_DIR_IN_TREE
    mutated = mutant.apply((pinned_source() / mutant.file).read_text(encoding="utf-8"))
    path = crate / mutant.file
    if not path.is_file() or path.read_text(encoding="utf-8") != mutated:
        prepare_crate_tree(root)  # pristine, then the one mutated file
        path.write_text(mutated, encoding="utf-8")
    return crate


@pytest.mark.slow
def test_the_machine_catches_a_binding_served_at_its_expiry_instant(
    tmp_path: Path,
) -> None:
    """With `*idle_deadline < now` the machine fails; its repro.rs fails there too.

    The Python replay of the minimized trace against the mutant names the first
    divergent step; the exported test, run by cargo against the same mutant,
    fails with a message naming that step.
    """
    _when_building()
    tree = tmp_path / "tree"

    result = smoke(default_work_dir(), tree)

    assert "path" == result.binding["source"]
    assert str(tree) in result.binding["module"]
    assert "caught" == result.verdict.outcome, result.verdict
    assert result.verdict.test_id.startswith("stateful/test_affinity_machine.py::")
    (folder,) = sorted((tree / "ci" / "artifacts").glob("*/latest"))
    replayed = run_module(
        "ci.replay",
        str(folder / "minimal.json"),
        timeout_s=BUILD_TIMEOUT_S,
        env=tree_environment(tree),
        cwd=tree,
    )
    named = re.search(r"first divergence at step (\d+)", replayed.stdout)
    assert named is not None, replayed.stdout[-3000:]
    repro = (folder / "repro.rs").read_text(encoding="utf-8")

    run = run_exports("smoke-mutant", {"repro": repro}, mutated_crate(result.mutant))

    panic = re.search(r"panicked at [^\n]*\n[^\n]*?step (\d+):", run.output)
    assert run.build_ok, run.output[-3000:]
    assert 1 == run.failed, run.output[-3000:]
    assert panic is not None, run.output[-3000:]
    assert named.group(1) == panic.group(1), run.output[-3000:]
