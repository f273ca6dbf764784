"""The sweep: set up once, run a baseline, then test every planned mutant.

Each mutant is written into the work copy, the binding rebuilt against it,
and both sides run at once (`ci.processes` runs and ends the children); the
verdicts go to the run's report (`report.json`, `report.md`, `logs/`), and an
interrupted run resumes in its folder. `ci.mutants.command` documents it.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ci import processes
from ci.build_local import (
    LocalBuild,
    build_extension,
    copy_python_tree,
    describe_binding,
    detect_features,
    install_binding,
    pinned_version,
    seed_target_dir,
    tree_environment,
)
from ci.mutants.cargo_mutants import MutantSet, mutant_set
from ci.mutants.judge import crate_failures, judge_crate, judge_pytest, pytest_failures
from ci.mutants.operators import TARGET_FILES, Mutant
from ci.mutants.plan import (
    BASELINE_RERUNS_MAX,
    BASELINE_TIMEOUT_S,
    CRATE_TEST_FEATURES,
    CRATE_TEST_FILTERS,
    PYTEST_PATHS_BY_FILE,
    PYTEST_TIMEOUT_S_MIN,
    Config,
    MutantsError,
    apply_mutant,
    crate_command,
    pinned_toolchain,
    plan,
    prepare_crate_tree,
    pytest_command,
    restore_file,
)
from ci.mutants.report import (
    OUTCOMES,
    SIDES,
    MutantRecord,
    Verdict,
    per_file,
    percent,
    read_report,
    record_from_json,
    survivors,
    totals,
    write,
)
from ci.processes import ProcessResult, run_process
from ci.target_dir import shared_target_dir

console = Console(highlight=False)


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
            processes.kill_all()
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
    source = describe_binding(run.pytree)
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
        install_binding(run.build.binding, run.pytree)
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
        processes.kill_all()
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
        target_dir=shared_target_dir(first.work_dir),
        features=detect_features(crate),
        # The snapshot's binding, so edits to impl/ during a sweep that
        # lasts hours never meet the snapshot's Python adapter.
        impl_dir=work / "pytree" / "impl",
        profile=first.cargo_profile,
    )
    the_set = mutant_set(crate)
    from ci.replay.artifacts import git_state  # noqa: PLC0415 - pulls in pytest

    git_commit, _ = git_state()
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
    if seed_target_dir(first.build.target_dir, first.build.profile):
        console.print(
            f"seeded the binding's target dir from impl/target/{first.build.profile}"
        )
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
    "cargo_profile",
)


def _config_data(run: Run) -> dict[str, Any]:
    config = run.config
    return {
        "pytest_options": list(config.pytest_options),
        "pytest_paths": list(config.pytest_paths) or dict(PYTEST_PATHS_BY_FILE),
        "pytest_timeout_s": config.pytest_timeout_s,
        "crate_timeout_s": config.crate_timeout_s,
        "ids": list(config.ids),
        "crate_test_filters": dict(CRATE_TEST_FILTERS),
        "crate_test_features": CRATE_TEST_FEATURES,
        "source": "pinned" if config.source is None else "local tree",
        "binding_features": list(run.build.features),
        "cargo_profile": run.build.profile,
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
    table.add_row("kill rate", *(percent(t[s]["kill_rate"]) for s in SIDES))
    for outcome in OUTCOMES:
        table.add_row(outcome, *(str(t[s]["outcomes"].get(outcome, 0)) for s in SIDES))
    console.print(table)
    for mutant_id in survivors(run.records, "ours"):
        console.print(f"survivor of ours: {mutant_id}")
    console.print(f"report: {run.out / 'report.md'}")
