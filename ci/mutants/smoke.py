"""The smoke check: one mutant of the expiry boundary that the suite must catch.

Built into a copy of our tree (the editable install is left alone) and
judged like a sweep's mutant; `python -m ci.mutants --smoke` runs it.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from ci.build_local import (
    LocalBuild,
    build_extension,
    copy_python_tree,
    describe_binding,
    install_binding,
    tree_environment,
)
from ci.mutants.judge import judge_pytest
from ci.mutants.operators import Mutant
from ci.mutants.plan import (
    AFFINITY_RS,
    CARGO_PROFILES,
    PYTEST_OPTIONS_DEFAULT,
    MutantsError,
    apply_mutant,
    prepare_crate_tree,
    restore_file,
    work_lock,
)
from ci.mutants.report import Verdict
from ci.processes import run_process
from ci.target_dir import shared_target_dir

console = Console(highlight=False)


# --- smoke: one mutant that must be caught ------------------------------------

# query_target serves a binding whose idle deadline is exactly now.
SMOKE_LINE = "*idle_deadline <= Instant::now()"
SMOKE_PYTEST_ARGS = (*PYTEST_OPTIONS_DEFAULT, "stateful/test_affinity_machine.py")
SMOKE_PYTEST_TIMEOUT_S = 600


def expiry_mutant(crate: Path) -> Mutant:
    """The mutant that flips query_target's `*idle_deadline <= now` to `<`.

    Written out here, not looked up in the set, so the smoke needs neither
    cargo-mutants nor the operators; it is the minimal form of our
    `cmp_boundary` mutant at that line (`<=` loses its `=`).
    """
    text = (crate / AFFINITY_RS).read_text(encoding="utf-8")
    found = [m.start() for m in re.finditer(re.escape(SMOKE_LINE), text)]
    if len(found) != 1:
        raise MutantsError(f"expected one smoke site, found {len(found)}")
    start = found[0] + SMOKE_LINE.index("<=") + 1
    return Mutant(
        file=AFFINITY_RS,
        start=start,
        end=start + 1,
        operator="cmp_boundary",
        original="=",
        replacement="",
        line=text.count("\n", 0, start) + 1,
        id="smoke",
        name=f"affinity.rs:{text.count(chr(10), 0, start) + 1} replace <= with <",
    )


@dataclass(frozen=True)
class SmokeResult:
    """What the smoke run saw."""

    mutant: Mutant
    binding: dict[str, str]  # CRATE_SOURCE etc. as the tree copy imports it
    build_seconds: float
    verdict: Verdict


def smoke(work_dir: Path, tree: Path) -> SmokeResult:
    """Build the expiry mutant into a copy of our tree and run the machine there.

    `tree` receives the copy of our Python tree with the mutant's binding, so
    the editable install is left alone.

    The build is the sweep's (`CARGO_PROFILES[0]`, the `mutants` cargo profile of
    impl/Cargo.toml). The work folder `work_dir/smoke` keeps its own crate copy;
    the target dir is the machine's shared one (`ci/target_dir.py`), so the
    dependencies compile once for the sweep, the smoke and the Rust export, and
    a warm run compiles only the mutated file (seconds).
    """
    work = work_dir / "smoke"
    with work_lock(work):
        crate = prepare_crate_tree(work / "tree")
        mutant = expiry_mutant(crate)
        build = LocalBuild(
            source=crate,
            binding_dir=work / "binding",
            target_dir=shared_target_dir(work_dir),
            profile=CARGO_PROFILES[0],
        )
        apply_mutant(crate, mutant)
        try:
            result = build_extension(build)
        finally:
            restore_file(crate, mutant.file)
        if not result.ok:
            raise MutantsError(f"the smoke mutant does not build:\n{result.output}")
        copy_python_tree(tree)
        install_binding(build.binding, tree)
        binding = describe_binding(tree)
        command = [sys.executable, "-m", "pytest", *SMOKE_PYTEST_ARGS]
        ran = run_process(command, tree, SMOKE_PYTEST_TIMEOUT_S, tree_environment(tree))
    return SmokeResult(mutant, binding, result.seconds, judge_pytest(ran))
