"""The false-alarm soak: the machines on the unmutated crate over many seeds.

    python -m ci.soak --seeds N [--first-seed S] [--settings ci|nightly]
                      [--jobs J] [--tests affinity,queue] [--examples N]
                      [--artifacts DIR] [--no-recheck]
    python -m ci.soak merge DIR... [--out DIR]

Each seed runs the machine tests once, in a fresh interpreter, under the
profile's sizes with randomization on (`ci-seeded` or `nightly-seeded` in
`ci/profiles.py`) and `--hypothesis-seed=SEED`; `--jobs` processes run at once.
On the pinned crate every failure is a false alarm: a counterexample the crate
does not deserve, or a vacuous run (a coverage goal or rule never reached). A
failed (seed, machine test) is run again with the same seed; if the second run does
not fail the same way, it is also a flaky detection.

The report -- seeds, false alarms, flaky detections, seconds per seed (mean,
median, p95, max), each failure with its replay lines -- is printed and kept as
`<artifacts>/soak/<utc-stamp>/report.json` (`latest` points to the newest),
rewritten after every seed so an interrupted soak keeps what it measured.
Counterexample artifacts of a false alarm go beside it. The report keeps one
row per seed (`per_seed`), so soaks run in pieces -- other seed ranges, other
machines, other sessions -- merge into one report (`ci.soak.merge`) whose
figures are computed from the rows exactly as a single run's are.

Exit status: 0 no false alarm and no flaky detection; 1 otherwise; 2 bad
arguments or a run that could not start (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final

import hypothesis

from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    positive_int,
    write_failed,
    write_results,
)
from ci.profiles import EXAMPLES, RULES_PER_PROGRAM
from ci.replay.artifacts import ARTIFACTS_ENV, git_state, point_latest
from ci.replay.program import crate_versions
from ci.trust import runner
from ci.trust.machine_tests import CRATE_TESTS, MACHINE_TESTS, MachineTest, resolve
from ci.trust.options import add_tests_option, checked_artifacts, run_folder
from ci.trust.plugin import RunConfig

PROG: Final[str] = "ci.soak"
SETTINGS_CHOICES: Final[tuple[str, ...]] = ("ci", "nightly")
SEEDS_MAX: Final[int] = 1_000_000
JOBS_MAX: Final[int] = 64
REPORT_FILE: Final[str] = "report.json"
PERCENTILE: Final[int] = 95
EXIT_CLEAN: Final[int] = 0
EXIT_ALARM: Final[int] = 1
EXIT_USAGE: Final[int] = 2


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = OneLineParser(
        prog=f"python -m {PROG}", description=__doc__.splitlines()[0]
    )
    parser.renamed("--profile", "--settings")  # old spelling, refused
    parser.add_argument("--seeds", type=positive_int, required=True)
    parser.add_argument("--first-seed", type=positive_int, default=1)
    parser.add_argument("--settings", choices=SETTINGS_CHOICES, default="ci")
    parser.add_argument("--jobs", "-j", type=positive_int, default=2)
    add_tests_option(parser, ",".join(CRATE_TESTS))
    parser.add_argument(
        "--examples", type=positive_int, default=None, help="examples per test"
    )
    parser.add_argument("--artifacts", type=Path, default=None)
    parser.add_argument("--no-recheck", dest="recheck", action="store_false")
    return parser


SEED_MAX: Final[int] = 2**64 - 1
"""A Hypothesis seed as the runner passes it on: 64 bits."""
OUTCOMES: Final[tuple[str, ...]] = ("failed", "missing", "passed", "skipped")
"""What a machine test's row can say: pytest's three outcomes, or that it never
ran. The report keeps the keys it was first written with (old spelling, so
that recorded reports load): a row names its machine test `target`, a seed's
rows are `targets`, and so are the settings' tests; totals are `per_target`."""


@dataclass(frozen=True)
class MachineTestRun:
    """One machine test's outcome under one seed."""

    target: str  # the machine test's name (old spelling, the recorded key)
    outcome: str  # passed, failed, skipped or missing
    message: str
    counterexample: bool
    flaky: bool
    test_cases: int
    seconds: float
    replay: tuple[str, ...]


@dataclass(frozen=True)
class SeedRun:
    """All machine tests under one seed, in one interpreter."""

    seed: int
    seconds: float
    returncode: int
    targets: tuple[MachineTestRun, ...]


@dataclass(frozen=True)
class Recheck:
    """A failed (seed, machine test) run again with the same seed."""

    seed: int
    target: str
    first: str
    second: str
    reproduced: bool


@dataclass
class Soak:
    """Everything measured so far (the report is a function of this)."""

    settings: dict[str, Any]
    seeds: list[SeedRun] = field(default_factory=list)
    rechecks: list[Recheck] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _test_runs(
    run: runner.PytestRun, tests: Sequence[MachineTest]
) -> list[MachineTestRun]:
    found = []
    for machine_test in tests:
        test = run.test(machine_test.nodeid)
        if test is None:
            found.append(
                MachineTestRun(
                    target=machine_test.name,
                    outcome="missing",
                    message="did not run",
                    counterexample=False,
                    flaky=False,
                    test_cases=0,
                    seconds=0,
                    replay=(),
                )
            )
            continue
        found.append(
            MachineTestRun(
                target=machine_test.name,
                outcome=test.outcome,
                message=test.message,
                counterexample=test.counterexample,
                flaky=test.flaky,
                test_cases=test.test_cases,
                seconds=round(test.duration_s, 3),
                replay=test.replay,
            )
        )
    return found


def run_seed(
    seed: int, tests: Sequence[MachineTest], config: RunConfig, artifacts: Path
) -> SeedRun:
    """Run every machine test once under `seed` in a fresh interpreter."""
    started = time.monotonic()
    run = runner.run(
        [test.nodeid for test in tests],
        config,
        seed=seed,
        env={ARTIFACTS_ENV: str(artifacts)},
    )
    seconds = time.monotonic() - started
    return SeedRun(
        seed, round(seconds, 3), run.returncode, tuple(_test_runs(run, tests))
    )


def _verdict(run: MachineTestRun) -> str:
    return f"{run.outcome}: {run.message}" if run.outcome != "passed" else "passed"


def failures(soak: Soak) -> list[tuple[int, MachineTestRun]]:
    """Every (seed, machine test) that did not pass, in seed order."""
    return [
        (seed.seed, run)
        for seed in sorted(soak.seeds, key=lambda seed: seed.seed)
        for run in seed.targets
        if run.outcome != "passed"
    ]


def _seed_of(run: SeedRun) -> int:
    return run.seed


def seed_ranges(seeds: Iterable[int]) -> list[str]:
    """The seeds as sorted runs without a gap: 1, 2, 3, 5 is `["1-3", "5-5"]`."""
    ranges: list[list[int]] = []
    for seed in sorted(set(seeds)):
        if ranges and ranges[-1][1] + 1 == seed:
            ranges[-1][1] = seed
        else:
            ranges.append([seed, seed])
    return [f"{first}-{last}" for first, last in ranges]


def seed_row(run: SeedRun) -> dict[str, Any]:
    """One seed's row of the report: enough to recompute every figure."""
    return {
        "seed": run.seed,
        "seconds": run.seconds,
        "returncode": run.returncode,
        "targets": [asdict(test) for test in run.targets],
    }


RETURNCODE_MIN: Final[int] = -(2**31)
"""A process's exit status as subprocess reports it (negative: a signal)."""


def _whole(row: Mapping[str, Any], key: str, minimum: int) -> int:
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{key}: want a whole number of at least {minimum}: {value!r}")
    return value


def _seconds(row: Mapping[str, Any], key: str) -> float:
    value = row[key]
    valid = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not valid or not math.isfinite(value) or value < 0:
        raise ValueError(f"{key}: want a finite number of seconds >= 0: {value!r}")
    return float(value)


def _test_from_row(row: Mapping[str, Any]) -> MachineTestRun:
    texts = ("target", "outcome", "message")
    if not all(isinstance(row[key], str) for key in texts):
        raise ValueError(f"targets: {', '.join(texts)} must be texts")
    flags = ("counterexample", "flaky")
    if not all(isinstance(row[key], bool) for key in flags):
        raise ValueError("targets: counterexample and flaky must be true or false")
    replay = row["replay"]
    if not isinstance(replay, list) or not all(isinstance(r, str) for r in replay):
        raise ValueError("targets: replay must be a list of texts")
    if row["target"] not in MACHINE_TESTS:
        raise ValueError(f"targets: unknown machine test {row['target']!r}")
    if row["outcome"] not in OUTCOMES:
        known = ", ".join(OUTCOMES)
        raise ValueError(f"targets: outcome {row['outcome']!r} is none of {known}")
    return MachineTestRun(
        **{key: row[key] for key in (*texts, *flags)},
        test_cases=_whole(row, "test_cases", 0),
        seconds=_seconds(row, "seconds"),
        replay=tuple(replay),
    )


def seed_from_row(row: dict[str, Any]) -> SeedRun:
    """The inverse of `seed_row`; a `KeyError`, `TypeError` or `ValueError`.

    Raised for a row that `seed_row` cannot have written: seeds count from 1,
    seconds are finite and not negative, flags are booleans, texts are texts.
    """
    if not isinstance(row["targets"], list):
        raise TypeError("targets: want a list")
    tests = tuple(_test_from_row(test) for test in row["targets"])
    if not tests:
        raise ValueError("targets: a seed ran at least one machine test")
    seed = _whole(row, "seed", 1)
    if seed > SEED_MAX:  # Hypothesis seeds the run with a 64-bit integer
        raise ValueError(f"seed: want at most {SEED_MAX}: {seed}")
    return SeedRun(
        seed,
        _seconds(row, "seconds"),
        _whole(row, "returncode", RETURNCODE_MIN),
        tests,
    )


def _percentile(values: Sequence[float], percent: int) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, -(-len(ordered) * percent // 100) - 1))
    return ordered[index]


def report(soak: Soak, *, complete: bool) -> dict[str, Any]:
    """The JSON report of what was measured so far."""
    seconds = [seed.seconds for seed in soak.seeds]
    alarms = failures(soak)
    flaky_rechecks = [check for check in soak.rechecks if not check.reproduced]
    flaky_reported = [run for _, run in alarms if run.flaky]
    per_test: dict[str, dict[str, Any]] = {}
    for seed in soak.seeds:
        for run in seed.targets:
            entry = per_test.setdefault(
                run.target, {"runs": 0, "failed": 0, "seconds": [], "test_cases": 0}
            )
            entry["runs"] += 1
            entry["failed"] += run.outcome != "passed"
            entry["seconds"].append(run.seconds)
            entry["test_cases"] += run.test_cases
    for entry in per_test.values():
        times = entry.pop("seconds")
        entry["seconds_mean"] = round(statistics.fmean(times), 3)
        entry["seconds_max"] = round(max(times), 3)
    commit, dirty = git_state()
    return {
        "complete": complete,
        "settings": soak.settings,
        "seeds_run": len(soak.seeds),
        "seed_ranges": seed_ranges(seed.seed for seed in soak.seeds),
        "false_alarms": len(alarms),
        "false_alarm_seeds": sorted({seed for seed, _ in alarms}),
        "counterexamples": sum(run.counterexample for _, run in alarms),
        "vacuous_or_other": sum(not run.counterexample for _, run in alarms),
        "flaky": len(flaky_rechecks) + len(flaky_reported),
        "seconds_per_seed": {
            "mean": round(statistics.fmean(seconds), 3) if seconds else None,
            "median": round(statistics.median(seconds), 3) if seconds else None,
            f"p{PERCENTILE}": round(_percentile(seconds, PERCENTILE), 3)
            if seconds
            else None,
            "max": round(max(seconds), 3) if seconds else None,
        },
        "wall_seconds": round(time.monotonic() - soak.started, 1),
        "per_target": dict(sorted(per_test.items())),
        "failures": [{"seed": seed, **asdict(run)} for seed, run in alarms],
        "per_seed": [seed_row(seed) for seed in sorted(soak.seeds, key=_seed_of)],
        "rechecks": [asdict(check) for check in soak.rechecks],
        "git_commit": commit,
        "git_dirty": dirty,
        "hypothesis_version": hypothesis.__version__,
        "python_version": platform.python_version(),
    } | crate_versions()


def write_report(folder: Path, document: dict[str, Any]) -> None:
    """Write `report.json` in `folder` whole (a failure is `WriteFailed`)."""
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    write_results({folder / REPORT_FILE: text})


def summary(document: dict[str, Any]) -> list[str]:
    """The report's printed lines."""
    per_seed = document["seconds_per_seed"]
    lines = [
        (
            f"seeds: {document['seeds_run']} "
            f"({', '.join(document['seed_ranges']) or 'none'})  false alarms: "
            f"{document['false_alarms']}  flaky: {document['flaky']}"
        ),
        (
            f"seconds per seed: mean {per_seed['mean']}  median {per_seed['median']}"
            f"  p{PERCENTILE} {per_seed[f'p{PERCENTILE}']}  max {per_seed['max']}"
            f"  (wall {document['wall_seconds']} s, "
            f"{document['settings']['jobs']} jobs)"
        ),
    ]
    for name, entry in document["per_target"].items():
        lines.append(
            f"  {name}: {entry['runs']} runs, {entry['failed']} failed, "
            f"{entry['test_cases']} test cases, mean {entry['seconds_mean']} s"
        )
    for failure in document["failures"]:
        lines.append(
            f"  FALSE ALARM seed {failure['seed']} {failure['target']}: "
            f"{failure['message']}"
        )
        lines.extend(f"    {line}" for line in failure["replay"])
    return lines


def _check(arguments: argparse.Namespace) -> None:
    """Bounds argparse cannot state."""
    if arguments.first_seed + arguments.seeds > SEEDS_MAX:
        raise UsageError(f"seeds must stay below {SEEDS_MAX}")
    if arguments.jobs > JOBS_MAX:
        raise UsageError(f"--jobs must be at most {JOBS_MAX}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the soak; exit 0 clean, 1 false alarm or flaky, 2 usage."""
    try:
        arguments = build_parser().parse_args(argv)
        tests = resolve(arguments.tests)
        _check(arguments)
        checked_artifacts(arguments)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return soak(arguments, tests)
    except WriteFailed as error:
        return write_failed(PROG, error)


def soak(arguments: argparse.Namespace, tests: Sequence[MachineTest]) -> int:
    """Run every seed, recheck the failures, write and print the report."""
    folder = run_folder(arguments, "soak")
    point_latest(folder.parent, folder)
    examples = arguments.examples or EXAMPLES[arguments.settings]
    config = RunConfig(base=f"{arguments.settings}-seeded", max_examples=examples)
    seeds = range(arguments.first_seed, arguments.first_seed + arguments.seeds)
    state = Soak(
        settings={
            "profile": f"{arguments.settings}-seeded",
            "max_examples": examples,
            "stateful_step_count": RULES_PER_PROGRAM[arguments.settings],
            "targets": {test.name: test.nodeid for test in tests},
            "first_seed": arguments.first_seed,
            "seeds": arguments.seeds,
            "jobs": arguments.jobs,
        }
    )
    artifacts = folder / "artifacts"
    print(f"soak: {arguments.seeds} seeds -> {folder / REPORT_FILE}", flush=True)

    stopping = threading.Event()

    def one(seed: int) -> None:
        result = run_seed(seed, tests, config, artifacts)
        if stopping.is_set():  # ended by the interruption: not a verdict
            return
        with state.lock:
            state.seeds.append(result)
            write_report(folder, report(state, complete=False))
            verdicts = ", ".join(
                f"{run.target} {run.outcome} {run.seconds:.1f} s"
                for run in result.targets
            )
            print(
                f"seed {seed}: {verdicts} [{len(state.seeds)}/{arguments.seeds}]",
                flush=True,
            )

    runner.stop_on_sigterm()
    pool = ThreadPoolExecutor(max_workers=arguments.jobs)
    try:
        for done in [pool.submit(one, seed) for seed in seeds]:
            done.result()
    except KeyboardInterrupt:
        stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        runner.stop_all()
        with state.lock:
            write_report(folder, report(state, complete=False))
        print(
            f"interrupted; the report so far: {folder / REPORT_FILE}", file=sys.stderr
        )
        return EXIT_ALARM
    pool.shutdown()
    if arguments.recheck:
        by_name = {test.name: test for test in tests}
        for seed, first in failures(state):
            again = run_seed(seed, [by_name[first.target]], config, artifacts)
            second = again.targets[0]
            state.rechecks.append(
                Recheck(
                    seed=seed,
                    target=first.target,
                    first=_verdict(first),
                    second=_verdict(second),
                    reproduced=_verdict(first) == _verdict(second),
                )
            )
    document = report(state, complete=True)
    write_report(folder, document)
    for line in summary(document):
        print(line)
    print(f"report: {folder / REPORT_FILE}")
    clean = document["false_alarms"] == 0 and document["flaky"] == 0
    return EXIT_CLEAN if clean else EXIT_ALARM
