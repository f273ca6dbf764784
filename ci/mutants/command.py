"""Mutation sweep: how many source mutants of the pinned crate the suite catches.

The set: cargo-mutants' mutants of `src/services/selection/affinity.rs` and
`src/scheduling/policy_queue.rs` plus our operators' that it does not generate
(`ci/mutants/cargo_mutants.py`, `ci/mutants/operators.py`). A run takes one
shard of it (`--shard K/N`: every N-th mutant of the id-sorted set) or the
`--ids` given (`--shard 2,4-16/16` runs those shards in turn after one set-up,
one report folder each; `--resume DIR` continues an interrupted run in its
folder, keeping its verdicts), and for each mutant, in id order (`--source TREE` mutates
another dynamo-kv-router tree instead of the pinned crate, for example a
manual-clock revision, with the binding features that tree supports)::

    1. apply it to a work copy of the pinned crate;
    2. rebuild the binding against that copy (one CARGO_TARGET_DIR, so the
       rebuild is incremental, ~10-20 s) into a copy of our Python tree; a
       mutant that does not compile is *unviable* and stops here;
    3. at the same time (the crate's test build already starts during step 2)
       a. our suite on that tree: `pytest -x -q -p no:cacheprovider
          --hypothesis-profile=ci <the component's machine and unit tests>`
          (`PYTEST_PATHS_BY_FILE`; `--pytest-paths "stateful tests"` runs
          everything) under a time limit, and
       b. the crate's own `cargo test --lib` for the mutated module and the
          modules that drive it, on the same mutated source;
    4. record, per side, caught / missed / timeout / error (and flaky, for a
       crate failure that does not repeat when rerun alone), our time to
       detect and which check caught it (failing test id and first assertion
       line).

The editable install in `impl/` is never touched: mutant builds go to a copy of
the Python tree in the work folder (`ci/build_local.py`). Before the first
mutant the unmutated copy is built and both sides run once as a baseline;
tests that fail there (for example the check that the extension comes from
crates.io, which a path build cannot pass) are deselected for every mutant and
listed in the report.

Output: `ci/artifacts/mutants/<utc-stamp>-<K>of<N>/report.json`, `report.md`
and `logs/` (`ci/mutants/report.py`), with `ci/artifacts/mutants/latest`
pointing at the newest run; `python -m ci.mutants merge DIR...` joins shards.
Commands and timings: `ci/MUTANTS.md`.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ci.build_local import (
    IMPL,
    REPO,
    LocalBuild,
    build_extension,
    copy_python_tree,
    default_work_dir,
    describe_extension,
    detect_features,
    install_extension,
    pinned_source,
    pinned_version,
    reinstall_pinned,
    seed_target_dir,
    tree_environment,
    write_if_changed,
)
from ci.cli import OneLineParser, UsageError
from ci.mutants.cargo_mutants import (
    MutantSet,
    ToolMissingError,
    mutant_set,
    tool_version,
)
from ci.mutants.operators import TARGET_FILES, Mutant
from ci.mutants.report import (
    OUTCOMES,
    SIDES,
    MergeError,
    MutantRecord,
    Verdict,
    merge,
    partition,
    per_file,
    read_report,
    record_from_json,
    survivors,
    totals,
    write,
)

AFFINITY_RS = "src/services/selection/affinity.rs"
QUEUE_RS = "src/scheduling/policy_queue.rs"
# `-p ci.mutants.noshrink`: report the first failing example unshrunk (see that module).
PYTEST_OPTIONS_DEFAULT = (
    "-x",
    "-q",
    "-p",
    "no:cacheprovider",
    "--hypothesis-profile=ci",
    "-p",
    "ci.mutants.noshrink",
)
# What our suite runs per mutated file (paths, globs or `glob::test` node ids
# inside the tree, in this order, so `-x` stops at the strongest check first):
# the component's differential machine, the unit tests that drive the crate, the
# explorer's replay of every bounded-graph edge through the crate, and the
# clock-variant machine. The rest of the suite never reaches the crate.
# `--pytest-paths "stateful tests"` runs the whole suite instead (slower: the
# rest never reaches the mutated file, so survivors pay for all of it).
PYTEST_PATHS_BY_FILE = {
    AFFINITY_RS: (
        "stateful/test_affinity_machine.py",
        "tests/test_affinity_*.py",
        "tests/test_group_key.py",  # crate against model where the tree has it
        "tests/test_production_under_test.py",
        "tests/test_explore.py::test_the_crate_agrees_on_every_edge_of_a_ci_bound",
        "stateful/test_clock_variants.py",
    ),
    QUEUE_RS: (
        "stateful/test_queue_machine.py",
        "tests/test_queue_*.py",
        # The public scheduler drives the queue's crate-private recheck, due-time
        # and cleanup paths (`recheck_worker`, `take_expired`, `take_if_in_class`).
        "stateful/test_scheduler_machine.py",
        "tests/test_scheduler_corpus.py",
        "tests/test_scheduler_binding.py",
        "tests/test_scheduler_production.py",
    ),
}
# The benchmark's own tests never run inside it.
PYTEST_IGNORED = ("--ignore-glob=*/test_mutants*.py",)
# libtest filters per mutated file: the module's own tests and its drivers'.
CRATE_TEST_FILTERS = {
    AFFINITY_RS: (
        "services::selection::affinity::",
        "services::selection::core::",
        "services::common::replica_sync",
    ),
    QUEUE_RS: ("scheduling::policy_queue::", "scheduling::queue::"),
}
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
# impl/Cargo.toml profiles a mutant build may use; the first is the default.
BINDING_PROFILES = ("mutants", "release")
BASELINE_TIMEOUT_S = 1_800
BASELINE_RERUNS_MAX = 3  # deselection rounds before the baseline is declared broken
DETAIL_CHARS_MAX = 200
PYTEST_ERROR_CODES = {2: "interrupted", 3: "internal error", 4: "usage", 5: "no tests"}

console = Console(highlight=False)


class MutantsError(RuntimeError):
    """The benchmark cannot run (as opposed to a mutant being caught or not)."""


# --- processes ----------------------------------------------------------------

_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class ProcessResult:
    """How one child process ended."""

    returncode: int | None  # None: killed at the time limit
    seconds: float
    output: str


def run_process(
    command: Sequence[str],
    cwd: Path,
    timeout_s: float,
    env: dict[str, str] | None = None,
) -> ProcessResult:
    """Run `command` in its own process group; kill the group at the time limit."""
    started = time.monotonic()
    process = subprocess.Popen(  # noqa: S603 - our own tool invocations
        list(command),
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    with _LIVE_LOCK:
        _LIVE.add(process)
    try:
        output, _ = process.communicate(timeout=timeout_s)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        _kill_group(process)
        output, _ = process.communicate()
        returncode = None
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(process)
    return ProcessResult(returncode, time.monotonic() - started, output)


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _kill_live_children() -> None:
    """Kill the process groups this run started and that are still running."""
    with _LIVE_LOCK:
        for process in list(_LIVE):
            _kill_group(process)


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


# --- one side's verdict -------------------------------------------------------


def _clip(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= DETAIL_CHARS_MAX:
        return text
    return text[: DETAIL_CHARS_MAX - 3] + "..."


def _check_name(message: str) -> str:
    """`outcome`, `states`, `violated: <names>`, ... from an assertion line."""
    text = message.removeprefix("AssertionError:").strip()
    if text.startswith("violated:"):
        return _clip(text)
    prefix = re.match(r"([A-Za-z_][\w '\"]{0,40}):", text)
    if prefix and not prefix.group(1).endswith(("Error", "Exception")):
        return prefix.group(1)
    error = re.match(r"([\w.]+(?:Error|Exception|Panic)\w*)", text)
    if error:
        return error.group(1)
    if text.startswith("assert "):
        return "assert " + _clip(text.removeprefix("assert "))[:60]
    return _clip(text)[:60]


def pytest_failures(output: str) -> list[str]:
    """Node ids from pytest's short summary (`FAILED id` and `ERROR id`)."""
    return re.findall(r"(?m)^(?:FAILED|ERROR) (\S+)", output)


def judge_pytest(result: ProcessResult) -> Verdict:
    """Our side's verdict from pytest's exit code and output."""
    if result.returncode is None:
        return Verdict("timeout", result.seconds)
    if result.returncode == 0:
        return Verdict("missed", result.seconds)
    if result.returncode < 0:
        crash = f"process killed by signal {-result.returncode}"
        return Verdict("caught", result.seconds, check="crash", detail=crash)
    if result.returncode != 1:
        reason = PYTEST_ERROR_CODES.get(result.returncode, "unknown")
        tail = _clip(result.output[-DETAIL_CHARS_MAX:])
        return Verdict("error", result.seconds, check=reason, detail=tail)
    failures = pytest_failures(result.output)
    first_error = re.search(r"(?m)^E +(\S.*)$", result.output)
    line = first_error.group(1) if first_error else ""
    return Verdict(
        "caught",
        result.seconds,
        test_id=failures[0] if failures else "",
        check=_check_name(line) if line else "",
        detail=_clip(line),
    )


def crate_failures(output: str) -> list[str]:
    """Names of the crate's failing tests, from libtest's closing `failures:` list."""
    listed = re.findall(r"(?m)^failures:\n((?:    \S+\n)+)", output)
    if listed:
        return [line.strip() for line in listed[-1].splitlines()]
    # Without the list (a crashed test binary), the per-test lines, both styles.
    return [
        found.group(1) or found.group(2)
        for found in re.finditer(
            r"(?m)^(?:test (\S+) \.\.\. FAILED|(\S+) --- FAILED)$", output
        )
    ]


def judge_crate(result: ProcessResult) -> Verdict:
    """The crate's side from `cargo test`'s exit code and output."""
    if result.returncode is None:
        return Verdict("timeout", result.seconds)
    if result.returncode == 0:
        return Verdict("missed", result.seconds)
    if "could not compile" in result.output:
        detail = _clip(result.output[-DETAIL_CHARS_MAX:])
        return Verdict("error", result.seconds, check="compile", detail=detail)
    failures = crate_failures(result.output)
    panic = re.search(r"panicked at ([^\n]*)\n([^\n]*)", result.output)
    signal_line = re.search(r"signal: \d+, SIG\w+", result.output)
    if panic:
        check = panic.group(1).rstrip(":")
        detail = panic.group(2)
    else:
        check = signal_line.group(0) if signal_line else "failed"
        detail = ""
    return Verdict(
        "caught",
        result.seconds,
        test_id=failures[0] if failures else "",
        check=_clip(check),
        detail=_clip(detail),
    )


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
    binding_profile: str = BINDING_PROFILES[0]

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


# --- the run ------------------------------------------------------------------


@dataclass
class Baseline:
    """The unmutated copy's results, per mutated file."""

    pytest_seconds: float
    pytest_deselected: list[str]
    pytest_timeout_s: float
    crate_seconds: float
    crate_skipped: list[str]


@dataclass
class Run:
    """State of one benchmark run."""

    config: Config
    out: Path
    crate: Path
    build: LocalBuild
    pytree: Path
    mutant_set: MutantSet | None = None
    planned: list[str] = field(default_factory=list)
    git_commit: str = ""
    baselines: dict[str, Baseline] = field(default_factory=dict)
    records: list[MutantRecord] = field(default_factory=list)
    started_at: str = ""
    setup_seconds: float = 0.0
    loop_seconds: float = 0.0
    finished: bool = False
    interrupted: str = ""
    # When the run started or was resumed, at which commit, after how many.
    resumptions: list[dict[str, Any]] = field(default_factory=list)
    setup_shared_with: str = ""  # the sibling run folder that did the set-up


def _crate_env(run: Run) -> dict[str, str]:
    environment = dict(os.environ)
    environment["CARGO_TARGET_DIR"] = str(
        run.config.work_dir / "mutants" / "target-crate"
    )
    # The binding's pinned toolchain, not whatever rustup's default is.
    environment["RUSTUP_TOOLCHAIN"] = pinned_toolchain()
    # No debug info: the test binary links much faster and nothing reads it.
    environment["CARGO_PROFILE_TEST_DEBUG"] = "0"
    environment["CARGO_PROFILE_DEV_DEBUG"] = "0"
    return environment


@dataclass(frozen=True)
class SideCommands:
    """What both sides run for one mutated file."""

    relative: str
    pytest_timeout_s: float
    deselected: Sequence[str]
    skipped: Sequence[str]
    exit_first: bool = True


def _always_ready() -> bool:
    return True


def _both_sides(
    run: Run,
    sides: SideCommands,
    crate_timeout_s: float,
    prepare: Callable[[], bool] = _always_ready,
) -> tuple[ProcessResult | None, ProcessResult]:
    """The crate's tests and our suite, concurrently, on the current source.

    The crate's test build starts at once; `prepare` (the binding's rebuild)
    runs meanwhile, and our suite starts when it returns True. When it returns
    False (the mutant does not compile) our suite does not run.
    """
    ours = pytest_command(
        run.config, sides.relative, run.pytree, sides.deselected, sides.exit_first
    )
    theirs = crate_command(CRATE_TEST_FILTERS[sides.relative], sides.skipped)
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            theirs_future = pool.submit(
                run_process, theirs, run.crate, crate_timeout_s, _crate_env(run)
            )
            if not prepare():
                return None, theirs_future.result()
            ours_result = run_process(
                ours, run.pytree, sides.pytest_timeout_s, tree_environment(run.pytree)
            )
            return ours_result, theirs_future.result()
        except BaseException:
            # Interrupted: end the children so the pool's threads can finish.
            _kill_live_children()
            raise


def _warm_up(run: Run) -> None:
    """Compile the unmutated copy for both sides at once (slow only when cold)."""
    command = ["cargo", "test", "--quiet", "--lib", "--features", CRATE_TEST_FEATURES]
    with ThreadPoolExecutor(max_workers=2) as pool:
        crate_future = pool.submit(
            run_process,
            [*command, "--no-run"],
            run.crate,
            BASELINE_TIMEOUT_S,
            _crate_env(run),
        )
        viable, seconds, output = _build(run)
        crate = crate_future.result()
    _write_log(run, "warm-up.cargo.txt", crate.output)
    if not viable:
        raise MutantsError(f"the unmutated copy does not build:\n{output[-3000:]}")
    if crate.returncode != 0:
        raise MutantsError(f"the crate's tests do not build:\n{crate.output[-3000:]}")
    source = describe_extension(run.pytree)
    if source["source"] != "path":
        raise MutantsError(f"the tree copy does not load the path build: {source}")
    console.print(
        f"built the unmutated copy in {seconds:.0f} s ({source}); "
        f"the crate's tests in {crate.seconds:.0f} s"
    )


def _baseline(run: Run, relative: str) -> Baseline:
    """Run both sides on the unmutated copy; deselect what fails there."""
    deselected: list[str] = []
    skipped: list[str] = []
    for attempt in range(1, BASELINE_RERUNS_MAX + 1):
        sides = SideCommands(
            relative=relative,
            pytest_timeout_s=BASELINE_TIMEOUT_S,
            deselected=deselected,
            skipped=skipped,
            exit_first=False,
        )
        ours, theirs = _both_sides(run, sides, BASELINE_TIMEOUT_S)
        assert ours is not None  # no `prepare` step, so our side always runs
        name = f"baseline-{Path(relative).stem}-{attempt}"
        _write_log(run, f"{name}.pytest.txt", ours.output)
        _write_log(run, f"{name}.cargo.txt", theirs.output)
        if ours.returncode is None or theirs.returncode is None:
            raise MutantsError(f"the baseline for {relative} exceeded its time limit")
        if ours.returncode not in {0, 1}:
            raise MutantsError(
                f"the baseline pytest run failed:\n{ours.output[-3000:]}"
            )
        if "could not compile" in theirs.output:
            raise MutantsError(
                f"the crate's tests do not compile:\n{theirs.output[-3000:]}"
            )
        new_failures = [n for n in pytest_failures(ours.output) if n not in deselected]
        new_skips = [n for n in crate_failures(theirs.output) if n not in skipped]
        if ours.returncode != 0 and not new_failures:
            raise MutantsError(
                f"pytest failed but named no test:\n{ours.output[-3000:]}"
            )
        if theirs.returncode != 0 and not new_skips:
            raise MutantsError(
                f"cargo test failed but named no test:\n{theirs.output[-3000:]}"
            )
        if not new_failures and not new_skips:
            timeout_s = run.config.pytest_timeout_s or max(
                PYTEST_TIMEOUT_S_MIN, 2 * ours.seconds + 30
            )
            return Baseline(
                pytest_seconds=round(ours.seconds, 1),
                pytest_deselected=deselected,
                pytest_timeout_s=round(timeout_s, 1),
                crate_seconds=round(theirs.seconds, 1),
                crate_skipped=skipped,
            )
        deselected += new_failures
        skipped += new_skips
    raise MutantsError(
        f"the baseline for {relative} keeps failing: {deselected} {skipped}"
    )


def _write_log(run: Run, name: str, text: str) -> None:
    path = run.out / "logs" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _build(run: Run) -> tuple[bool, float, str]:
    result = build_extension(run.build)
    if result.ok:
        install_extension(run.build.extension, run.pytree)
        return True, result.seconds, result.output
    if not result.compile_error:
        raise MutantsError(f"maturin failed without a compile error:\n{result.output}")
    return False, result.seconds, result.output


def _test_mutant(run: Run, mutant: Mutant, pristine: str) -> MutantRecord:
    started = time.monotonic()
    apply_mutant(run.crate, mutant, run.config.crate_source())
    # The diff stays in the (uncommitted) logs: reports carry no crate source.
    _write_log(run, f"{mutant.id}.diff", mutant.diff(pristine))
    builds: list[tuple[bool, float, str]] = []

    def rebuild() -> bool:
        builds.append(_build(run))
        return builds[-1][0]

    try:
        baseline = run.baselines[mutant.file]
        sides = SideCommands(
            relative=mutant.file,
            pytest_timeout_s=baseline.pytest_timeout_s,
            deselected=baseline.pytest_deselected,
            skipped=baseline.crate_skipped,
        )
        ours, theirs = _both_sides(run, sides, run.config.crate_timeout_s, rebuild)
        ((viable, build_seconds, build_output),) = builds
        record = MutantRecord(
            id=mutant.id,
            file=mutant.file,
            line=mutant.line,
            operator=mutant.operator,
            description=mutant.describe(),
            viable=viable,
            build_seconds=round(build_seconds, 1),
        )
        if ours is None:
            _write_log(run, f"{mutant.id}.build.txt", build_output)
        else:
            _write_log(run, f"{mutant.id}.pytest.txt", ours.output)
            _write_log(run, f"{mutant.id}.cargo.txt", theirs.output)
            record.ours = judge_pytest(ours)
            record.crate = _confirmed(run, mutant, judge_crate(theirs), theirs)
        record.seconds = round(time.monotonic() - started, 1)
        return record
    finally:
        restore_file(run.crate, mutant.file, run.config.crate_source())


def _confirmed(
    run: Run, mutant: Mutant, verdict: Verdict, result: ProcessResult
) -> Verdict:
    """Rerun the crate's failing tests alone; a failure that does not repeat is flaky.

    Some of the crate's tokio tests fail under CPU contention (our suite runs
    beside them); a mutant's failure repeats, a flake usually does not.
    """
    failures = crate_failures(result.output)
    if verdict.outcome != "caught" or not failures:
        return verdict
    command = crate_command(failures, exact=True)
    rerun = run_process(command, run.crate, run.config.crate_timeout_s, _crate_env(run))
    _write_log(run, f"{mutant.id}.cargo-rerun.txt", rerun.output)
    if rerun.returncode == 0:
        return Verdict(
            "flaky",
            verdict.seconds,
            test_id=verdict.test_id,
            check=verdict.check,
            detail="passed when rerun alone",
        )
    return verdict


def _progress(record: MutantRecord, done: int, planned: int) -> None:
    goal = f"/{planned}"
    if not record.viable:
        console.print(
            f"[dim]{record.id} unviable ({record.build_seconds:.0f} s)  "
            f"{record.description}[/dim]"
        )
        return
    assert record.ours is not None
    assert record.crate is not None
    colour = {"caught": "green", "missed": "red"}
    ours = record.ours.outcome
    crate = record.crate.outcome
    console.print(
        f"[bold]{record.id}[/bold] #{done}{goal}  "
        f"ours [{colour.get(ours, 'yellow')}]{ours}[/] {record.ours.seconds:.0f} s  "
        f"crate [{colour.get(crate, 'yellow')}]{crate}[/]  {record.description}"
    )
    if ours == "caught":
        console.print(f"      [dim]{record.ours.test_id}  {record.ours.check}[/dim]")


def execute(configs: Sequence[Config], resumed: dict[str, Path]) -> list[Run]:
    """Set up once, then test each run's planned mutants, one run folder each.

    `configs` are one `--ids` run or one run per shard of `--shard K,K.../N`;
    they share the crate copy, the warm-up and the baselines, so a sweep of
    many shards pays for the set-up once. `resumed` maps a run's label
    (`shard_label`) to the folder of an interrupted run of it, whose tried
    mutants are kept and whose report the run goes on writing.
    """
    runs = _runs(configs, resumed)
    started: list[Run] = []
    try:
        _set_up(runs, started)
        for run in runs:
            if run not in started:
                _begin(run)
                started.append(run)
            _test_planned(run)
    except BaseException as error:
        if started:
            started[-1].interrupted = (
                "KeyboardInterrupt"
                if isinstance(error, KeyboardInterrupt)
                else f"{type(error).__name__}: {error}"
            )
        _kill_live_children()
        raise
    finally:
        for relative in TARGET_FILES:
            restore_file(runs[0].crate, relative, configs[0].crate_source())
        for run in started:
            write_reports(run)
    return runs


def _runs(configs: Sequence[Config], resumed: dict[str, Path]) -> list[Run]:
    """The runs, sharing one crate copy, binding build and mutant set."""
    first = configs[0]
    work = first.work_dir / "mutants"
    crate = prepare_crate_tree(work / "tree", first.crate_source())
    build = LocalBuild(
        source=crate,
        binding_dir=work / "binding",
        target_dir=work / "target-binding",
        features=detect_features(crate),
        # The snapshot's binding, so edits to impl/ during a sweep that
        # lasts hours never meet the snapshot's Python adapter.
        impl_dir=work / "pytree" / "impl",
        profile=first.binding_profile,
    )
    the_set = mutant_set(crate)
    git_commit = _git("rev-parse", "HEAD")
    runs = [
        Run(
            config=config,
            out=resumed.get(shard_label(config), Path()),
            crate=crate,
            build=build,
            pytree=work / "pytree",
            mutant_set=the_set,
            planned=[mutant.id for mutant in plan(the_set.mutants, config)],
            git_commit=git_commit,
        )
        for config in configs
    ]
    for run in runs:
        if run.out != Path():
            resume_run(run)
    return runs


def shard_label(config: Config) -> str:
    """What names a run among its siblings: `K/N`, or `ids` for an `--ids` run."""
    return "ids" if config.ids else f"{config.shard[0]}/{config.shard[1]}"


def _begin(run: Run) -> None:
    """Give a run its folder (a new one, unless resumed) and point `latest` at it."""
    config = run.config
    if run.out == Path():
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        index, count = config.shard
        run.started_at = stamp
        run.out = config.out_root / (
            f"{stamp}-ids" if config.ids else f"{stamp}-{index}of{count}"
        )
        run.out.mkdir(parents=True, exist_ok=False)
    run.resumptions.append(
        {
            "at": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
            "git_commit": run.git_commit,
            "tried_before": len(run.records),
        }
    )
    config.out_root.mkdir(parents=True, exist_ok=True)
    latest = config.out_root / "latest"
    latest.unlink(missing_ok=True)
    latest.symlink_to(os.path.relpath(run.out, config.out_root))


def resume_run(run: Run) -> None:
    """Take over an interrupted run's folder: its records, times and first commit.

    Refused (`MutantsError`) when the folder's run is of another mutant set,
    another plan or another configuration: its verdicts would not belong here.
    """
    folder = run.out
    data = read_report(folder)
    assert run.mutant_set is not None
    if data["mutant_set"]["fingerprint"] != run.mutant_set.fingerprint:
        raise MutantsError(f"--resume {folder}: a report of another mutant set")
    if data["planned"] != run.planned:
        raise MutantsError(f"--resume {folder}: its plan is not this run's")
    mine = _config_data(run)
    theirs = {key: data["config"].get(key) for key in RESUMABLE_CONFIG}
    ours = {key: json.loads(json.dumps(mine[key])) for key in RESUMABLE_CONFIG}
    if theirs != ours:
        changed = sorted(key for key in RESUMABLE_CONFIG if theirs[key] != ours[key])
        raise MutantsError(f"--resume {folder}: another configuration ({changed})")
    run.records = [record_from_json(entry) for entry in data["mutants"]]
    run.started_at = data["started_at"]
    run.git_commit = data["git_commit"]
    run.setup_seconds = data["setup_seconds"]
    run.loop_seconds = data["mutants_seconds"]
    run.resumptions = list(data.get("resumptions", []))


def _set_up(runs: Sequence[Run], started: list[Run]) -> None:
    """Warm up and take the baselines once, for the files any run mutates."""
    first = runs[0]
    config = first.config
    setup_started = time.monotonic()
    _begin(first)
    started.append(first)
    console.print(f"[bold]setup[/bold]: work folder {config.work_dir / 'mutants'}")
    if first.build.profile == "release" and seed_target_dir(first.build.target_dir):
        console.print("seeded the binding's target dir from impl/target/release")
    copy_python_tree(first.pytree)
    _warm_up(first)
    assert first.mutant_set is not None
    files = {mutant.id: mutant.file for mutant in first.mutant_set.mutants}
    for relative in sorted({files[i] for run in runs for i in run.planned}):
        baseline = _baseline(first, relative)
        for run in runs:
            run.baselines[relative] = baseline
        console.print(
            f"baseline {Path(relative).name}: ours {baseline.pytest_seconds:.0f} s "
            f"(limit {baseline.pytest_timeout_s:.0f} s, deselected "
            f"{baseline.pytest_deselected or 'none'}), crate "
            f"{baseline.crate_seconds:.0f} s "
            f"(skipped {baseline.crate_skipped or 'none'})"
        )
    first.setup_seconds += time.monotonic() - setup_started
    for run in runs[1:]:
        run.setup_shared_with = first.out.name


def _test_planned(run: Run) -> None:
    """Test the run's planned mutants it has not tried yet, in id order."""
    assert run.mutant_set is not None
    by_id = {mutant.id: mutant for mutant in run.mutant_set.mutants}
    pristine = {
        relative: (run.config.crate_source() / relative).read_text(encoding="utf-8")
        for relative in TARGET_FILES
    }
    tried = {record.id for record in run.records}
    loop_started = time.monotonic() - run.loop_seconds
    for mutant_id in run.planned:
        if mutant_id in tried:
            continue
        mutant = by_id[mutant_id]
        record = _test_mutant(run, mutant, pristine[mutant.file])
        run.records.append(record)
        run.loop_seconds = time.monotonic() - loop_started
        _progress(record, len(run.records), len(run.planned))
        write_reports(run)
    run.loop_seconds = time.monotonic() - loop_started
    run.finished = True
    write_reports(run)


# --- reports ------------------------------------------------------------------


def _git(*arguments: str) -> str:
    completed = subprocess.run(  # noqa: S603 - fixed git subcommands
        ["git", *arguments],  # noqa: S607 - git from PATH, as for developers
        cwd=REPO,
        check=False,
        capture_output=True,
        text=True,
    )
    return completed.stdout.strip()


def _versions() -> dict[str, str]:
    import hypothesis  # noqa: PLC0415 - only the report needs it

    return {
        "crate": f"dynamo-kv-router {pinned_version()}",
        "hypothesis": hypothesis.__version__,
        "python": platform.python_version(),
    }


def report_data(run: Run) -> dict[str, Any]:
    """One run's (one shard's) report.json: `ci/mutants/report.py` reads it back."""
    config = run.config
    assert run.mutant_set is not None
    records = run.records
    return {
        "kind": "ids" if config.ids else "shard",
        "started_at": run.started_at,
        "finished": run.finished,
        "interrupted": run.interrupted,
        "git_commit": run.git_commit,
        "versions": _versions(),
        "cpus": os.cpu_count(),
        "command": ["python", "-m", "ci.mutants", *sys.argv[1:]],
        "mutant_set": {
            "tool": run.mutant_set.tool,
            "fingerprint": run.mutant_set.fingerprint,
            "counts": run.mutant_set.counts,
            "ids": [mutant.id for mutant in run.mutant_set.mutants],
        },
        "shard": f"{config.shard[0]}/{config.shard[1]}",
        "config": _config_data(run),
        "baselines": {key: asdict(value) for key, value in run.baselines.items()},
        "setup_seconds": round(run.setup_seconds, 1),
        "setup_shared_with": run.setup_shared_with,
        "resumptions": run.resumptions,
        "mutants_seconds": round(run.loop_seconds, 1),
        "planned": run.planned,
        "totals": totals(records),
        "per_file": per_file(records),
        "survivors": {side: survivors(records, side) for side in SIDES},
        "mutants": [record.as_json() for record in records],
    }


# What a resumed run must share with the run it resumes (`resume_run`).
RESUMABLE_CONFIG = (
    "pytest_options",
    "pytest_paths",
    "pytest_timeout_s",
    "crate_timeout_s",
    "ids",
    "crate_test_filters",
    "crate_test_features",
    "source",
    "binding_features",
    "binding_profile",
)


def _config_data(run: Run) -> dict[str, Any]:
    config = run.config
    return {
        "pytest_options": list(config.pytest_options),
        "pytest_paths": list(config.pytest_paths) or PYTEST_PATHS_BY_FILE,
        "pytest_timeout_s": config.pytest_timeout_s,
        "crate_timeout_s": config.crate_timeout_s,
        "ids": list(config.ids),
        "crate_test_filters": CRATE_TEST_FILTERS,
        "crate_test_features": CRATE_TEST_FEATURES,
        "source": "pinned" if config.source is None else "local tree",
        "binding_features": list(run.build.features),
        "binding_profile": run.build.profile,
    }


def write_reports(run: Run) -> None:
    """Write report.json and report.md for the records so far."""
    title = f"Mutation sweep {run.started_at}"
    write(run.out, report_data(run), title)


def print_summary(run: Run) -> None:
    """A rich table of the kill rates, then the survivors of our suite."""
    t = totals(run.records)
    table = Table(title=f"mutants: {t['viable']} viable, {t['unviable']} unviable")
    for column in ("", "ours", "crate's tests", "union"):
        table.add_column(column)
    table.add_row("kill rate", *(_percent(t[s]["kill_rate"]) for s in SIDES))
    for outcome in OUTCOMES:
        table.add_row(outcome, *(str(t[s]["outcomes"].get(outcome, 0)) for s in SIDES))
    console.print(table)
    for mutant_id in survivors(run.records, "ours"):
        console.print(f"survivor of ours: {mutant_id}")
    console.print(f"report: {run.out / 'report.md'}")


def _percent(rate: float | None) -> str:
    return "n/a" if rate is None else f"{100 * rate:.0f} %"


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
    extension: dict[str, str]  # CRATE_SOURCE etc. as the tree copy imports it
    build_seconds: float
    verdict: Verdict


def smoke(work_dir: Path, tree: Path) -> SmokeResult:
    """Build the expiry mutant into a copy of our tree and run the machine there.

    `tree` receives the copy of our Python tree with the mutant's extension, so
    the editable install is left alone.

    The build is the sweep's (`BINDING_PROFILES[0]`, the `mutants` profile of
    impl/Cargo.toml). The work folder `work_dir/smoke` keeps its own crate copy
    and target dir, so a cold run compiles the dependencies once and a warm
    one only the mutated file (seconds).
    """
    work = work_dir / "smoke"
    with _work_lock(work):
        crate = prepare_crate_tree(work / "tree")
        mutant = expiry_mutant(crate)
        build = LocalBuild(
            source=crate,
            binding_dir=work / "binding",
            target_dir=work / "target-binding",
            profile=BINDING_PROFILES[0],
        )
        apply_mutant(crate, mutant)
        try:
            result = build_extension(build)
        finally:
            restore_file(crate, mutant.file)
        if not result.ok:
            raise MutantsError(f"the smoke mutant does not build:\n{result.output}")
        copy_python_tree(tree)
        install_extension(build.extension, tree)
        extension = describe_extension(tree)
        command = [sys.executable, "-m", "pytest", *SMOKE_PYTEST_ARGS]
        ran = run_process(command, tree, SMOKE_PYTEST_TIMEOUT_S, tree_environment(tree))
    return SmokeResult(mutant, extension, result.seconds, judge_pytest(ran))


# --- restoring the pinned build -----------------------------------------------


def ensure_pinned_install(force: bool) -> None:
    """Leave the editable install on the crates.io crate.

    Mutant builds never touch it, so this normally only checks; it reinstalls
    (`pip install -e .`) when forced or when something left a path build there.
    """
    if not force:
        with contextlib.suppress(Exception):
            if describe_extension()["source"] == "registry":
                return
    console.print("reinstalling the pinned crate: pip install -e .")
    reinstall_pinned()


@contextlib.contextmanager
def _work_lock(folder: Path) -> Iterator[None]:
    """One run per work folder: runs share the crate copy and target dirs."""
    lock_path = folder / ".lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with lock_path.open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as error:
            raise MutantsError(f"another run holds {lock_path}") from error
        yield


# --- command line -------------------------------------------------------------

PROG = "python -m ci.mutants"
EXIT_USAGE = 2


def _shards(text: str) -> tuple[tuple[int, int], ...]:
    """`K/N`, or several shards of one N: `K,K,.../N`, ranges `A-B` (`2,4-16/16`)."""
    problem = f"expected K/N or K,A-B,.../N with 1 <= K <= N, got {text!r}"
    head, slash, tail = text.partition("/")
    if not slash or not tail.isdigit() or not head:
        raise argparse.ArgumentTypeError(problem)
    count = int(tail)
    indices: list[int] = []
    for part in head.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise argparse.ArgumentTypeError(problem)
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if not 1 <= low <= high <= count:
            raise argparse.ArgumentTypeError(problem)
        indices += range(low, high + 1)
    if len(set(indices)) != len(indices):
        raise argparse.ArgumentTypeError(f"a shard is named twice in {text!r}")
    return tuple((index, count) for index in sorted(indices))


def parse_args(argv: Sequence[str] | None) -> tuple[Config, argparse.Namespace]:
    """The run's configuration from the command line (`UsageError`: one line)."""
    parser = OneLineParser(
        prog=PROG,
        description="Mutation sweep of the suite against dynamo-kv-router.",
    )
    parser.add_argument("--list", action="store_true", help="print the plan and diffs")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="only check that the query_target expiry mutant is caught",
    )
    parser.add_argument(
        "--shard",
        type=_shards,
        default=((1, 1),),
        help="K/N: every N-th mutant of the id-sorted set, from the K-th (1-based); "
        "K,A-B,.../N: those shards in turn, one report each, one set-up",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        action="append",
        default=[],
        help="the folder of an interrupted run of one of these shards (or of these "
        "--ids): keep its verdicts, try the rest, go on writing its report "
        "(repeatable)",
    )
    parser.add_argument("--ids", default="", help="comma-separated mutant ids only")
    parser.add_argument(
        "--pytest-options",
        default=shlex.join(PYTEST_OPTIONS_DEFAULT),
        help="our suite's pytest options (profile, -x, ...)",
    )
    parser.add_argument(
        "--pytest-paths",
        default="",
        help="test paths or globs for every mutant (default: per mutated file)",
    )
    parser.add_argument(
        "--pytest-timeout",
        type=float,
        default=None,
        help="seconds per mutant for our suite (default: 2 x baseline + 30)",
    )
    parser.add_argument(
        "--crate-timeout",
        type=float,
        default=CRATE_TIMEOUT_S_DEFAULT,
        help=f"seconds for the crate's test build and run (default: "
        f"{CRATE_TIMEOUT_S_DEFAULT})",
    )
    parser.add_argument("--work-dir", type=Path, default=default_work_dir())
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="a dynamo-kv-router source tree instead of the pinned crate "
        "(binding features detected from it, e.g. manual-clock)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "ci" / "artifacts" / "mutants"
    )
    parser.add_argument(
        "--binding-profile",
        choices=BINDING_PROFILES,
        default=BINDING_PROFILES[0],
        help="cargo profile of the mutant builds: mutants (release semantics, "
        "no optimizer: seconds per rebuild) or release (as installed)",
    )
    parser.add_argument(
        "--restore-pinned",
        action="store_true",
        help="always finish with pip install -e . (default: only if needed)",
    )
    args = parser.parse_args(argv)
    config = Config(
        pytest_options=tuple(shlex.split(args.pytest_options)),
        pytest_paths=tuple(shlex.split(args.pytest_paths)),
        pytest_timeout_s=args.pytest_timeout,
        crate_timeout_s=args.crate_timeout,
        shard=args.shard[0],
        ids=tuple(i for i in args.ids.split(",") if i),
        work_dir=args.work_dir.resolve(),
        out_root=args.out.resolve(),
        source=_source_tree(args.source),
        binding_profile=args.binding_profile,
    )
    if config.ids and len(args.shard) > 1:
        raise UsageError("--ids and several shards do not go together")
    return config, args


def run_configs(config: Config, shards: Sequence[tuple[int, int]]) -> list[Config]:
    """One configuration per run: the `--ids` run, or one per shard."""
    if config.ids:
        return [config]
    return [replace(config, shard=shard) for shard in shards]


def resumed_folders(
    configs: Sequence[Config], folders: Sequence[Path]
) -> dict[str, Path]:
    """`--resume` folders by the run they continue (`UsageError`: one line)."""
    labels = {shard_label(config) for config in configs}
    found: dict[str, Path] = {}
    for folder in folders:
        try:
            data = read_report(folder)
        except MergeError as error:
            raise UsageError(f"--resume: {error}") from None
        label = "ids" if data.get("kind") == "ids" else str(data["shard"])
        if label not in labels:
            wanted = ", ".join(sorted(labels))
            raise UsageError(f"--resume {folder}: a run of {label}, not of {wanted}")
        if label in found:
            raise UsageError(f"--resume: two folders of {label}")
        if data["finished"] and len(data["mutants"]) == len(data["planned"]):
            raise UsageError(f"--resume {folder}: that run is complete")
        found[label] = folder.resolve()
    return found


def _source_tree(path: Path | None) -> Path | None:
    """`--source`, checked: a tree holding both files the sweep mutates."""
    if path is None:
        return None
    missing = [name for name in TARGET_FILES if not (path / name).is_file()]
    if missing:
        raise UsageError(
            f"--source {path}: not a dynamo-kv-router tree (no {missing[0]})"
        )
    return path.resolve()


def list_plan(config: Config) -> None:
    """Print the planned mutants with ids and diffs, then the set's counts."""
    # Its own crate copy: a sweep running meanwhile mutates the one in `mutants/`.
    with _work_lock(config.work_dir / "mutants-list"):
        crate = prepare_crate_tree(
            config.work_dir / "mutants-list" / "tree", config.crate_source()
        )
        listed = mutant_set(crate)
        pristine = {
            relative: (crate / relative).read_text(encoding="utf-8")
            for relative in TARGET_FILES
        }
    for mutant in plan(listed.mutants, config):
        print(f"{mutant.id}  {mutant.operator}  {mutant.describe()}")
        print(mutant.diff(pristine[mutant.file]))
    print(f"# {listed.tool}, fingerprint {listed.fingerprint}")
    for relative, counts in listed.counts.items():
        print(f"# {relative}: {json.dumps(counts, sort_keys=True)}")


def _main_smoke(work_dir: Path) -> int:
    tree = work_dir / "smoke" / "pytree"
    try:
        result = smoke(work_dir, tree)
    except MutantsError as error:
        console.print(f"[red]cannot run the smoke check:[/red] {error}")
        return 1
    verdict = result.verdict
    console.print(
        f"{result.mutant.describe()} built in "
        f"{result.build_seconds:.0f} s against {result.extension['source']}: "
        f"ours {verdict.outcome} in {verdict.seconds:.0f} s "
        f"{verdict.test_id} {verdict.check}"
    )
    return 0 if verdict.outcome == "caught" else 1


def main_merge(argv: Sequence[str]) -> int:
    """`merge DIR... [--out DIR]`: one report from shards' reports; 2 on refusal."""
    parser = OneLineParser(
        prog=f"{PROG} merge", description="Merge shard reports into one."
    )
    parser.add_argument("folders", nargs="+", type=Path, help="shard run folders")
    parser.add_argument(
        "--recheck",
        type=Path,
        action="append",
        default=[],
        help="a later --ids run whose entries replace the shards' (repeatable)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "ci" / "artifacts" / "mutants" / "merged"
    )
    try:
        args = parser.parse_args(argv)
        merged = merge(args.folders, args.recheck)
    except (UsageError, MergeError) as error:
        print(f"{PROG} merge: {error}", file=sys.stderr)
        return EXIT_USAGE
    write(args.out, merged, "Mutation sweep, shards merged")
    totals_ = merged["totals"]
    print(
        f"merged {len(args.folders)} report(s): {totals_['tried']} of "
        f"{merged['coverage']['of']} mutants, kill rate ours "
        f"{_percent(totals_['ours']['kill_rate'])}, crate "
        f"{_percent(totals_['crate']['kill_rate'])}, union "
        f"{_percent(totals_['union']['kill_rate'])}; {args.out / 'report.md'}"
    )
    return 0


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM (a CI job cancelled) ends the run like Ctrl-C: report, clean up."""
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 ran, 1 could not run, 2 bad arguments or tool missing."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["merge"]:
        return main_merge(arguments[1:])
    try:
        config, args = parse_args(arguments)
        configs = run_configs(config, args.shard)
        resumed = resumed_folders(configs, args.resume)
        if not args.smoke:
            tool_version()
    except (UsageError, ToolMissingError) as error:
        print(f"{PROG}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.list:
        list_plan(config)
        return 0
    if args.smoke:
        return _main_smoke(config.work_dir)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with _work_lock(config.work_dir / "mutants"):
            runs = execute(configs, resumed)
        for run in runs:
            print_summary(run)
    except (MutantsError, ToolMissingError) as error:
        console.print(f"[red]cannot run the sweep:[/red] {error}")
        return 1
    except KeyboardInterrupt:
        console.print("[red]interrupted[/red]; the partial report is in the run folder")
        return 130
    finally:
        ensure_pinned_install(force=args.restore_pinned)
    return 0


if __name__ == "__main__":
    sys.exit(main())
