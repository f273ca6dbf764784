"""Planning a sweep: what each mutated file runs, the configuration, the plan.

The work copy of the crate (a pristine copy, a mutant written into it, the
file put back), the run's `Config`, which mutants it tries (`plan`), and the
command lines of both sides: our suite (`pytest_command`) and the crate's own
tests (`crate_command`). `ci.mutants.command` documents the sweep.
"""

from __future__ import annotations

import contextlib
import fcntl
import sys
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ci import subjects
from ci.build_local import CARGO_PROFILES as CARGO_PROFILES  # noqa: PLC0414 - export
from ci.build_local import IMPL, pinned_source, write_if_changed
from ci.mutants.operators import Mutant
from ci.mutants.report import partition

AFFINITY_RS = "src/services/selection/affinity.rs"  # the smoke test's file
# `-p ci.mutants.noshrink`: report the first failing example unshrunk (see that module).
# `-p no:ci.order`: the gate's order (slow tests, then every machine, longest
# first) is for finishing a whole run early; a mutant wants the test most likely
# to catch it first, so the tests run in `PYTEST_PATHS_BY_FILE`'s order.
PYTEST_OPTIONS_DEFAULT = (
    "-x",
    "-q",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:ci.order",
    "--hypothesis-profile=ci",
    "-p",
    "ci.mutants.noshrink",
)
# What our suite runs per mutated file, in this order (detection order,
# `-p no:ci.order` keeps it, so `-x` stops at the strongest check first): the
# tests each subject's `crate_files` in the registry names -- the machines that
# drive the crate (their crate runs only), the file's own unit tests, the
# corpus, the explorer's edge replay through the crate, the clock variants.
# The rest of the suite never reaches the crate. `--pytest-paths "stateful
# tests"` runs the whole suite instead (slower: survivors pay for all of it).
PYTEST_PATHS_BY_FILE: Mapping[str, tuple[str, ...]] = subjects.CrateFileView(
    lambda file: file.tests
)
# The benchmark's own tests never run inside it.
PYTEST_IGNORED = ("--ignore-glob=*/test_mutants*.py",)
# libtest filters per mutated file: the module's own tests and its drivers'.
CRATE_TEST_FILTERS: Mapping[str, tuple[str, ...]] = subjects.CrateFileView(
    lambda file: file.crate_filters
)
CRATE_TEST_FEATURES = "standalone-selection,testing"
# A crates.io copy lacks this workspace file, which one unit test outside our
# filters include_str!s; the placeholder only lets the test binary compile.
WORKSPACE_STUBS = {
    "examples/router/policy-class-queues.yaml": (
        "# Placeholder written by ci/mutants/command.py: the crates.io package of\n"
        "# dynamo-kv-router omits this workspace file; no filtered test reads it.\n"
    ),
}
CRATE_DIR_IN_TREE = Path("lib") / "kv-router"  # mirrors the upstream workspace
PYTEST_TIMEOUT_S_MIN = 60
# The crate's side: its test build (15-35 s per mutant with the mutants
# profile beside our suite; 74 s at most with release builds) and its filtered
# tests (1-3 s unmutated). A mutant that makes them loop stops here.
CRATE_TIMEOUT_S_DEFAULT = 90
BASELINE_TIMEOUT_S = 1_800
BASELINE_RERUNS_MAX = 3  # deselection rounds before the baseline is declared broken


class MutantsError(RuntimeError):
    """The benchmark cannot run (as opposed to a mutant being caught or not)."""


def pinned_toolchain() -> str:
    """The channel impl/rust-toolchain.toml pins."""
    text = (IMPL / "rust-toolchain.toml").read_text(encoding="utf-8")
    return str(tomllib.loads(text)["toolchain"]["channel"])


# --- the work copy of the crate -----------------------------------------------


def prepare_crate_tree(root: Path, source: Path | None = None) -> Path:
    """A pristine copy of `source` (default: the pinned crate), plus stubs.

    The copy sits at `root/lib/kv-router`.
    Only files whose content differs are rewritten, so cargo's fingerprints
    stay valid and a leftover mutant from an interrupted run is undone.
    """
    source = source if source is not None else pinned_source()
    crate = root / CRATE_DIR_IN_TREE
    for path in sorted(source.rglob("*")):
        if path.is_file():
            write_if_changed(crate / path.relative_to(source), path.read_bytes())
    for relative, text in WORKSPACE_STUBS.items():
        write_if_changed(root / relative, text.encode("utf-8"))
    return crate


def apply_mutant(crate: Path, mutant: Mutant, source: Path | None = None) -> None:
    """Write the mutated file into the work copy (which must be pristine)."""
    path = crate / mutant.file
    source = source if source is not None else pinned_source()
    pristine = (source / mutant.file).read_text(encoding="utf-8")
    path.write_text(mutant.apply(pristine), encoding="utf-8")


def restore_file(crate: Path, relative: str, source: Path | None = None) -> None:
    """Put `source`'s (the pinned crate's) `relative` back into the work copy."""
    source = source if source is not None else pinned_source()
    write_if_changed(crate / relative, (source / relative).read_bytes())


# --- configuration and plan ---------------------------------------------------


@dataclass(frozen=True)
class Config:
    """Everything that decides what a run does."""

    pytest_options: tuple[str, ...]
    pytest_paths: tuple[str, ...]  # empty: PYTEST_PATHS_BY_FILE
    pytest_timeout_s: float | None  # None: twice the baseline plus 30 s
    crate_timeout_s: float
    shard: tuple[int, int]  # (k, n), 1-based: `report.partition`
    ids: tuple[str, ...]
    work_dir: Path
    out_root: Path
    source: Path | None = None  # None: the pinned crate as cargo downloaded it
    cargo_profile: str = CARGO_PROFILES[0]  # the install's: its dependencies reused

    def crate_source(self) -> Path:
        """The dynamo-kv-router tree whose mutants this run tries."""
        return self.source if self.source is not None else pinned_source()


def plan(mutants: Sequence[Mutant], config: Config) -> list[Mutant]:
    """The mutants this run tries, in id order: its shard, or the `--ids` given."""
    by_id = {mutant.id: mutant for mutant in mutants}
    if config.ids:
        unknown = set(config.ids) - set(by_id)
        if unknown:
            raise MutantsError(f"unknown mutant ids: {sorted(unknown)}")
        return [by_id[i] for i in sorted(set(config.ids))]
    return [by_id[i] for i in partition(list(by_id), config.shard)]


def pytest_paths(config: Config, relative: str, tree: Path) -> list[str]:
    """The test paths our suite runs for mutants of `relative`, checked in `tree`."""
    patterns = config.pytest_paths or PYTEST_PATHS_BY_FILE[relative]
    paths: list[str] = []
    for pattern in patterns:
        files, separator, node = pattern.partition("::")
        found = sorted(p.relative_to(tree).as_posix() for p in tree.glob(files))
        if not found:
            raise MutantsError(f"no test path matches {pattern!r} in {tree}")
        paths += [path + separator + node for path in found]
    return paths


def pytest_command(
    config: Config,
    relative: str,
    tree: Path,
    deselected: Sequence[str],
    exit_first: bool = True,
) -> list[str]:
    """Our suite's command line for `relative`; the baseline runs without `-x`."""
    options = [
        option
        for option in config.pytest_options
        if exit_first or option not in {"-x", "--exitfirst"}
    ]
    command = [sys.executable, "-m", "pytest", *options, *PYTEST_IGNORED]
    command += pytest_paths(config, relative, tree)
    for node in deselected:
        command += ["--deselect", node]
    return command


def crate_command(
    filters: Sequence[str], skipped: Sequence[str] = (), exact: bool = False
) -> list[str]:
    """The crate's own tests matching `filters`, minus `skipped` (baseline failures)."""
    command = ["cargo", "test", "--quiet", "--lib", "--features", CRATE_TEST_FEATURES]
    command += ["--", *filters]
    if exact:
        command.append("--exact")
    for name in skipped:
        command += ["--skip", name]
    return command


@contextlib.contextmanager
def work_lock(folder: Path) -> Iterator[None]:
    """One run per work folder: runs share the crate copy and target dirs."""
    lock_path = folder / ".lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise MutantsError(f"another run holds {lock_path}") from error
        yield
