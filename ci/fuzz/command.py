"""Fuzz the machines on many workers that share one example database.

    python -m ci.fuzz --workers N [--redis URL] [--db DIR] [--for DURATION]
                      [--tests affinity,queue] [--examples N] [--runs N]
                      [--batches N] [--seed S] [--progress-every SECONDS]
    python -m ci.fuzz --replay TEST [--redis URL] [--db DIR]

Each worker runs batches: one fresh `python -m pytest` process on one machine
test (`ci.trust.machine_tests`) under the `fuzz` settings (`ci/profiles.py`), with a
new seed, `--examples` programs of `--runs` runs of operations, and the shared example
database (`ci.trust.database`: Redis if `--redis`, always the local directory
`--db` beside it). Workers take the machine tests in turn. A batch that fails with a
counterexample saves it in the database (Hypothesis does) and leaves an
artifact folder (`ci.replay.artifacts`); that machine test is then done, as every
later batch would only replay it. A batch that fails without a counterexample
(a coverage goal not reached in a small batch) is reported as vacuous, with
the seed that reruns it.

Progress every `--progress-every` seconds: machine tests, examples and examples per
second (per worker too), distinct behaviours (the `event()`s the machines
emit: coverage goals reached) and their growth, failures. On exit (`--for`
elapsed, every worker's `--batches` done, every machine test failed, or Ctrl-C),
each failure is printed with the one-line command that replays it in a fresh
process from the shared database, and the `python -m ci.replay` line of its
artifact.

On a cluster, run `python -m ci.fuzz --workers N --redis redis://HOST:6379/0`
on every machine: they share what they find through Redis.

`--replay TEST` runs machine test TEST once in a fresh process with no
generation, only the database's examples (the reuse phase): it fails as the
fuzzer's batch did, and writes its own artifact folder.

Exit status: 0 no failure; 1 a counterexample found (or replayed); 2 bad
arguments or an unreachable Redis (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import secrets
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from ci.cli import (
    OneLineParser,
    UsageError,
    positive_int,
    positive_seconds,
    whole_number,
)
from ci.profiles import EXAMPLES, RULES_PER_PROGRAM
from ci.replay.artifacts import ARTIFACTS_ENV
from ci.trust import runner
from ci.trust.database import DatabaseUnavailableError, connect
from ci.trust.machine_tests import CRATE_TESTS, MACHINE_TESTS, MachineTest, resolve
from ci.trust.options import add_tests_option, artifacts, checked_artifacts, run_folder
from ci.trust.plugin import RunConfig
from ci.trust.runner import TestResult

PROG: Final[str] = "ci.fuzz"
WORKERS_MAX: Final[int] = 256
BATCHES_MAX: Final[int] = 1_000_000
PROGRESS_EVERY_S: Final[float] = 10.0
ERRORS_PER_TEST_MAX: Final[int] = 3
"""A machine test whose batches crash this often is dropped (named in the summary)."""
SEED_BITS: Final[int] = 63
DEFAULT_DB: Final[str] = "fuzz-db"
EXIT_CLEAN: Final[int] = 0
EXIT_FOUND: Final[int] = 1
EXIT_USAGE: Final[int] = 2
_DURATION = re.compile(r"^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s?)?$")


def duration_s(text: str) -> float:
    """Seconds in `90`, `90s`, `10m`, `2h` or `1h30m`."""
    match = _DURATION.match(text.strip())
    if match is None or not any(match.groupdict().values()):
        raise argparse.ArgumentTypeError(
            f"not a duration (like 90s, 10m, 2h): {text!r}"
        )
    hours, minutes, seconds = (int(match.group(unit) or 0) for unit in "hms")
    total = hours * 3600 + minutes * 60 + seconds
    if total <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive: {text!r}")
    return float(total)


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = OneLineParser(
        prog=f"python -m {PROG}", description=__doc__.splitlines()[0]
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--workers", type=positive_int, help="worker processes here")
    mode.add_argument("--replay", metavar="TEST", help="replay TEST's failure")
    parser.add_argument("--redis", metavar="URL", help="shared Redis example database")
    parser.add_argument(
        "--db", type=Path, default=None, help="local example database directory"
    )
    # Defaults of the fuzzing-only options are filled in by `_check`, so that
    # one given with --replay (which would ignore it) is refused instead.
    parser.add_argument("--for", dest="for_s", type=duration_s, default=None)
    add_tests_option(parser, None)
    parser.add_argument("--examples", type=positive_int, default=None)
    parser.add_argument(
        "--runs",
        type=positive_int,
        default=RULES_PER_PROGRAM["fuzz"],
        help="rules per program (Hypothesis stateful steps)",
    )
    parser.add_argument("--batches", type=positive_int, default=None, help="per worker")
    parser.add_argument(
        "--seed", type=whole_number, default=None, help="derive batch seeds"
    )
    parser.add_argument(
        "--progress-every", type=positive_seconds, default=None, metavar="SECONDS"
    )
    parser.add_argument("--artifacts", type=Path, default=None)
    return parser


@dataclass(frozen=True)
class Failure:
    """A batch that failed with a counterexample."""

    test: str
    worker: int
    seed: int
    divergence: str
    replay: tuple[str, ...]  # python -m ci.replay FOLDER lines


@dataclass
class FuzzedTest:
    """What the workers did to one machine test."""

    test: MachineTest
    batches: int = 0
    examples: int = 0
    behaviours: set[str] = field(default_factory=set)
    failures: list[Failure] = field(default_factory=list)
    vacuous: list[tuple[int, Path]] = field(default_factory=list)  # seed, batch
    errors: list[str] = field(default_factory=list)
    skipped: str | None = None

    @property
    def active(self) -> bool:
        """Workers still take batches of this machine test."""
        return (
            not self.failures
            and self.skipped is None
            and len(self.errors) < ERRORS_PER_TEST_MAX
        )


@dataclass
class Running:
    """A worker's current batch."""

    test: str
    progress: Path


@dataclass
class Fuzz:
    """The shared state of one `ci.fuzz` run."""

    tests: dict[str, FuzzedTest]
    folder: Path
    config: RunConfig
    env: dict[str, str]
    stop: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)
    workers_left: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    running: dict[int, Running] = field(default_factory=dict)
    fallback: str | None = None

    def next_test(self, worker: int, batch: int) -> FuzzedTest | None:
        """The machine test this worker's batch takes (round robin over active ones)."""
        with self.lock:
            active = [state for state in self.tests.values() if state.active]
            if not active:
                return None
            return active[(worker + batch) % len(active)]


def first_divergence(test: TestResult) -> str:
    """What failed first: the artifact's failing check, else the failure's line."""
    for line in test.replay:
        found = runner.artifact(line)
        if found is None:
            continue
        failing = found.meta["failing_check"]
        if "step" in failing:
            return (
                f"step {failing['step']} {failing['operation']} "
                f"({failing['check']}): {failing['difference']}"
            )
        return f"{failing['check']}: {failing['difference']}"
    return test.message


def trace_lines(test: TestResult) -> tuple[str, ...]:
    """The artifacts' replay lines, naming the canary when a canary failed."""
    lines = []
    for line in test.replay:
        found = runner.artifact(line)
        canary = None if found is None else found.canary
        lines.append(line if canary is None else f"{line} --canary {canary}")
    return tuple(lines)


def batch_seed(base: int | None, worker: int, batch: int) -> int:
    """A batch's Hypothesis seed: derived from `--seed`, else fresh randomness."""
    if base is None:
        return secrets.randbits(SEED_BITS)
    return random.Random(f"{base}:{worker}:{batch}").getrandbits(SEED_BITS)  # noqa: S311 - seeds, not secrets


def _run_batch(
    fuzz: Fuzz, worker: int, batch: int, state: FuzzedTest, seed: int
) -> None:
    work = fuzz.folder / "batches" / f"worker{worker}-batch{batch}"
    work.mkdir(parents=True)
    config = runner.with_files(fuzz.config, work)
    progress = Path(str(config.progress))
    with fuzz.lock:
        fuzz.running[worker] = Running(state.test.name, progress)
    config = replace(config, fresh_seeds=seed)
    process = runner.start([state.test.nodeid], config, work, env=fuzz.env)
    try:
        result = runner.collect(process, work)
    finally:
        runner.stop(process)
    test = result.test(state.test.nodeid)
    with fuzz.lock:
        del fuzz.running[worker]
        if result.database_fallback and fuzz.fallback is None:
            fuzz.fallback = result.database_fallback
        if fuzz.stop.is_set() and test is None:  # stopped mid-batch
            examples, behaviours = _last_progress(progress)
            state.examples += examples
            state.behaviours.update(behaviours)
            return
        state.batches += 1
        if test is None:
            state.errors.append(f"batch {work} ended with {result.returncode}")
            return
        state.examples += test.test_cases
        state.behaviours.update(test.behaviours)
        if test.outcome == "skipped":
            state.skipped = test.message
        elif test.outcome == "failed" and test.counterexample:
            state.failures.append(
                Failure(
                    state.test.name, worker, seed, first_divergence(test), test.replay
                )
            )
        elif test.outcome == "failed":
            state.vacuous.append((seed, work))
    if test.outcome == "passed":
        shutil.rmtree(work, ignore_errors=True)


def worker_loop(
    fuzz: Fuzz, worker: int, batches: int | None, base_seed: int | None
) -> None:
    """One worker: batches until stopped, out of budget or out of machine tests."""
    try:
        batch = 0
        while not fuzz.stop.is_set() and (batches is None or batch < batches):
            state = fuzz.next_test(worker, batch)
            if state is None:
                return
            _run_batch(fuzz, worker, batch, state, batch_seed(base_seed, worker, batch))
            batch += 1
    finally:
        with fuzz.lock:
            fuzz.workers_left -= 1
            if fuzz.workers_left == 0:
                fuzz.finished.set()


def _last_progress(progress: Path) -> tuple[int, set[str]]:
    """Examples and behaviours in a batch's last progress line."""
    try:
        lines = progress.read_text(encoding="utf-8").splitlines()
    except OSError:
        return 0, set()
    for line in reversed(lines):
        try:
            last = json.loads(line)
            return int(last["test_cases"]), set(last["behaviours"])
        except (ValueError, KeyError):  # a line being written
            continue
    return 0, set()


def _live_counts(fuzz: Fuzz) -> dict[str, tuple[int, set[str]]]:
    """Examples and behaviours of the batches still running, per machine test."""
    live: dict[str, tuple[int, set[str]]] = {}
    with fuzz.lock:
        running = list(fuzz.running.values())
    for batch in running:
        examples, behaviours = _last_progress(batch.progress)
        before = live.get(batch.test, (0, set()))
        live[batch.test] = (before[0] + examples, before[1] | behaviours)
    return live


def progress_line(
    fuzz: Fuzz, elapsed_s: float, workers: int, behaviours_before: int
) -> tuple[str, int]:
    """One progress report and the behaviour count it shows."""
    live = _live_counts(fuzz)
    parts = []
    total_examples = 0
    all_behaviours: set[str] = set()
    with fuzz.lock:
        for name, state in fuzz.tests.items():
            examples = state.examples + live.get(name, (0, set()))[0]
            behaviours = state.behaviours | live.get(name, (0, set()))[1]
            total_examples += examples
            all_behaviours |= {f"{name}:{b}" for b in behaviours}
            status = (
                "FAILED"
                if state.failures
                else "skipped"
                if state.skipped
                else "running"
            )
            parts.append(f"{name} {examples} ex {len(behaviours)} beh {status}")
        failures = sum(len(state.failures) for state in fuzz.tests.values())
        done = sum(not state.active for state in fuzz.tests.values())
    rate = total_examples / elapsed_s if elapsed_s > 0 else 0.0
    growth = len(all_behaviours) - behaviours_before
    minutes, seconds = divmod(int(elapsed_s), 60)
    line = (
        f"[{minutes:3d}:{seconds:02d}] tests {len(fuzz.tests) - done}/"
        f"{len(fuzz.tests)} live | examples {total_examples} ({rate:.1f}/s, "
        f"{rate / workers:.1f}/s per worker) | behaviours {len(all_behaviours)} "
        f"({growth:+d}) | failures {failures} | " + "; ".join(parts)
    )
    return line, len(all_behaviours)


def replay_command(name: str, redis_url: str | None, db: Path) -> str:
    """The one line that replays machine test `name`'s failure from the database."""
    where = f"--redis {redis_url}" if redis_url else f"--db {db}"
    return f"python -m {PROG} --replay {name} {where}"


def summary(fuzz: Fuzz, redis_url: str | None, db: Path, elapsed_s: float) -> list[str]:
    """The closing report: per machine test, then each failure and its replay lines."""
    lines = [f"fuzzed for {elapsed_s:.0f} s; batches and logs under {fuzz.folder}"]
    if fuzz.fallback:
        lines.append(
            f"Redis was lost ({fuzz.fallback}); the local database {db} has all"
        )
    for name, state in fuzz.tests.items():
        note = ""
        if state.skipped:
            note = f", skipped: {state.skipped}"
        if len(state.errors) >= ERRORS_PER_TEST_MAX:
            crashed = len(state.errors)
            note = f", dropped after {crashed} crashed batches: {state.errors[-1]}"
        lines.append(
            f"  {name}: {state.batches} batches, {state.examples} examples, "
            f"{len(state.behaviours)} behaviours, {len(state.failures)} failures"
            f"{note}"
        )
        lines.extend(
            f"    vacuous batch (a goal not reached in the batch): seed {seed}, "
            f"log {folder}/pytest.log"
            for seed, folder in state.vacuous
        )
    for state in fuzz.tests.values():
        for failure in state.failures:
            lines.append(
                f"FAILURE {failure.test} (worker {failure.worker}, seed "
                f"{failure.seed}): {failure.divergence}"
            )
            lines.append(f"  replay: {replay_command(failure.test, redis_url, db)}")
            lines.extend(f"  trace:  {line}" for line in failure.replay)
    return lines


def fuzz_main(arguments: argparse.Namespace, tests: Sequence[MachineTest]) -> int:
    """Run the workers, report progress, print the failures."""
    db = arguments.db or artifacts(arguments) / DEFAULT_DB
    folder = run_folder(arguments, "fuzz")
    config = RunConfig(
        base="fuzz",
        max_examples=arguments.examples,
        stateful_step_count=arguments.runs,
        redis_url=arguments.redis,
        database_dir=str(db),
    )
    fuzz = Fuzz(
        tests={test.name: FuzzedTest(test) for test in tests},
        folder=folder,
        config=config,
        env={ARTIFACTS_ENV: str(folder / "artifacts")},
    )
    where = f"Redis {arguments.redis} + {db}" if arguments.redis else f"{db}"
    print(
        f"fuzzing {', '.join(fuzz.tests)} on {arguments.workers} workers; "
        f"database {where}; {arguments.examples} examples x {arguments.runs} runs "
        "per batch",
        flush=True,
    )
    started = time.monotonic()
    threads = [
        threading.Thread(
            target=worker_loop,
            args=(fuzz, worker, arguments.batches, arguments.seed),
            name=f"worker{worker}",
            daemon=True,
        )
        for worker in range(arguments.workers)
    ]
    runner.stop_on_sigterm()
    fuzz.workers_left = len(threads)
    for thread in threads:
        thread.start()
    behaviours = 0
    try:
        while not fuzz.finished.is_set():
            elapsed = time.monotonic() - started
            if arguments.for_s is not None and elapsed >= arguments.for_s:
                break
            wait = arguments.progress_every
            if arguments.for_s is not None:
                wait = min(wait, max(arguments.for_s - elapsed, 0.01))
            if fuzz.finished.wait(timeout=wait):
                break
            line, behaviours = progress_line(
                fuzz, time.monotonic() - started, arguments.workers, behaviours
            )
            print(line, flush=True)
    except KeyboardInterrupt:
        print("interrupted: stopping the workers", file=sys.stderr)
    fuzz.stop.set()
    runner.stop_all()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    print(progress_line(fuzz, elapsed, arguments.workers, behaviours)[0])
    for line in summary(fuzz, arguments.redis, db, elapsed):
        print(line)
    found = any(state.failures for state in fuzz.tests.values())
    return EXIT_FOUND if found else EXIT_CLEAN


def replay_main(arguments: argparse.Namespace, machine_test: MachineTest) -> int:
    """Run `machine_test` once from the database only, in a fresh process."""
    db = arguments.db or artifacts(arguments) / DEFAULT_DB
    config = RunConfig(
        base="fuzz",
        stateful_step_count=arguments.runs,
        phases=("explicit", "reuse"),
        redis_url=arguments.redis,
        database_dir=str(db),
    )
    env = {ARTIFACTS_ENV: str(arguments.artifacts)} if arguments.artifacts else {}
    result = runner.run([machine_test.nodeid], config, env=env)
    test = result.test(machine_test.nodeid)
    if test is None:
        print(f"{PROG}: the replay did not run (pytest exit {result.returncode}):")
        print(result.output[-2000:])
        return EXIT_USAGE
    if test.outcome == "failed" and test.counterexample:
        print(f"REPRODUCED {machine_test.name}: {first_divergence(test)}")
        for line in trace_lines(test):
            print(f"  trace: {line}")
        return EXIT_FOUND
    name, outcome = machine_test.name, test.outcome
    print(f"not reproduced: {name} {outcome} with only the stored examples")
    return EXIT_CLEAN


FUZZING_ONLY: Final[tuple[tuple[str, str], ...]] = (
    ("for_s", "--for"),
    ("tests", "--tests"),
    ("examples", "--examples"),
    ("batches", "--batches"),
    ("seed", "--seed"),
    ("progress_every", "--progress-every"),
)
"""(attribute, flag) of the options a --replay run would ignore."""


def _fill_defaults(arguments: argparse.Namespace) -> None:
    """Refuse fuzzing-only options with --replay; else fill in their defaults."""
    if arguments.replay is not None:
        given = [
            flag for name, flag in FUZZING_ONLY if getattr(arguments, name) is not None
        ]
        if given:
            raise UsageError(f"--replay runs no batches: drop {', '.join(given)}")
        return
    if arguments.tests is None:
        arguments.tests = ",".join(CRATE_TESTS)
    if arguments.examples is None:
        arguments.examples = EXAMPLES["fuzz"]
    if arguments.progress_every is None:
        arguments.progress_every = PROGRESS_EVERY_S


def _check(arguments: argparse.Namespace, tests: Sequence[MachineTest]) -> None:
    """Bounds argparse cannot state."""
    if arguments.workers is not None and arguments.workers > WORKERS_MAX:
        raise UsageError(f"--workers must be at most {WORKERS_MAX}")
    if arguments.batches is not None and arguments.batches > BATCHES_MAX:
        raise UsageError(f"--batches must be at most {BATCHES_MAX}")
    if arguments.replay is not None and len(tests) != 1:
        raise UsageError("--replay takes one machine test")
    if arguments.replay is not None and arguments.redis is None:
        db = arguments.db or artifacts(arguments) / DEFAULT_DB
        if not db.is_dir():  # an absent database holds nothing to reproduce
            raise UsageError(f"--db {db}: no example database there")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line; fuzz or replay."""
    try:
        arguments = build_parser().parse_args(argv)
        _fill_defaults(arguments)
        tests = resolve(arguments.replay or arguments.tests)
        _check(arguments, tests)
        checked_artifacts(arguments)
        if arguments.redis is not None:
            connect(arguments.redis).close()
    except (UsageError, DatabaseUnavailableError) as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if arguments.replay is not None:
        return replay_main(arguments, MACHINE_TESTS[arguments.replay])
    return fuzz_main(arguments, tests)
