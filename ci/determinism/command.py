"""Double-run determinism: the same seed gives the same steps in a fresh interpreter.

    python -m ci.determinism [--tests affinity,queue] [--failing canary-late-expiry]
                             [--seed S] [--examples N] [--hash-seeds A,B]

Every run is a fresh `python -m pytest` process on one machine test
(`ci.trust.machine_tests`) under `ci-seeded` (the `ci` settings' sizes, randomized)
with `--hypothesis-seed=S`; the two runs of a pair differ only in
`PYTHONHASHSEED` (default 0 and 1), as two machines would.

* A sample of passing runs (`--tests`, `--examples` programs each): both runs
  write a step log (per program: the program Hypothesis ran and every note the
  machine made -- each step's operation and the model's answer, which the crate
  matched). The logs must be byte-identical. This catches hidden wall-clock
  reads, hash-order iteration and timer nondeterminism in the harness, the
  model or the crate (`--tests canary-hash-order` must be caught).
* Failing examples (`--failing`): both runs must find a counterexample with the
  same `trace.json` and the same failing check (`meta.json`), and
  `python -m ci.replay` of the first run's artifact, in a fresh interpreter
  under the second hash seed, must fail with the same output as under the
  first.

The report is printed and kept as `<artifacts>/determinism/<utc-stamp>/report.json`.
Exit status: 0 every pair agrees; 1 a pair differs (named, with the first
differing line); 2 bad arguments (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    positive_int,
    write_failed,
    write_results,
)
from ci.profiles import EXAMPLES
from ci.replay.artifacts import ARTIFACTS_ENV
from ci.trust import runner
from ci.trust.machine_tests import CRATE_TESTS, MACHINE_TESTS, MachineTest, resolve
from ci.trust.options import add_tests_option, checked_artifacts, run_folder
from ci.trust.plugin import RunConfig

PROG: Final[str] = "ci.determinism"
DEFAULT_TESTS: Final[str] = ",".join(CRATE_TESTS)
DEFAULT_EXAMPLES: Final[int] = 20
DEFAULT_SEED: Final[int] = 1
HASH_SEED_MAX: Final[int] = 4_294_967_295
REPLAY_TIMEOUT_S: Final[int] = 600
FAILING_PHASES: Final[tuple[str, ...]] = ("explicit", "reuse", "generate", "shrink")
"""No explain phase: it traces every shrink step (slow on 3.11) and adds nothing
to the trace or the failing check."""
EXIT_SAME: Final[int] = 0
EXIT_DIFFERENT: Final[int] = 1
EXIT_USAGE: Final[int] = 2


def _hash_seeds(text: str) -> tuple[str, str]:
    parts = text.split(",")
    valid = len(parts) == 2 and all(
        part.isdigit() and int(part) <= HASH_SEED_MAX for part in parts
    )
    if not valid:
        raise argparse.ArgumentTypeError(
            f"want two PYTHONHASHSEED values A,B: {text!r}"
        )
    if int(parts[0]) == int(parts[1]):  # one seed twice proves nothing
        raise argparse.ArgumentTypeError(
            f"the two PYTHONHASHSEED values must differ: {text!r}"
        )
    return parts[0], parts[1]


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = OneLineParser(
        prog=f"python -m {PROG}", description=__doc__.splitlines()[0]
    )
    add_tests_option(parser, DEFAULT_TESTS, "passing sample")
    parser.add_argument("--failing", default="", help="machine tests that must fail")
    parser.add_argument("--seed", type=positive_int, default=DEFAULT_SEED)
    parser.add_argument(
        "--examples",
        type=positive_int,
        default=None,
        help=f"per passing machine test (default {DEFAULT_EXAMPLES})",
    )
    parser.add_argument("--hash-seeds", type=_hash_seeds, default=("0", "1"))
    parser.add_argument("--artifacts", type=Path, default=None)
    return parser


@dataclass(frozen=True)
class Pair:
    """Two runs of one machine test under one seed, and whether they agree."""

    test: str
    kind: str  # "passing" (step logs) or "failing" (trace, check, replay)
    detail: str  # what was compared, or the first difference
    test_cases: tuple[int, int]
    same: bool


def first_difference(first: bytes, second: bytes) -> str:
    """The first differing line of two logs, or '' if they are equal."""
    if first == second:
        return ""
    left, right = first.splitlines(), second.splitlines()
    for number, (one, two) in enumerate(zip(left, right, strict=False), start=1):
        if one != two:
            return f"line {number}: {one.decode(errors='replace')!r} != " + repr(
                two.decode(errors="replace")
            )
    shorter = min(len(left), len(right))
    return f"line {shorter + 1}: one log ends ({len(left)} vs {len(right)} lines)"


def _run(
    machine_test: MachineTest,
    config: RunConfig,
    seed: int,
    hash_seed: str,
    work: Path,
) -> runner.PytestRun:
    work.mkdir(parents=True)
    env = {"PYTHONHASHSEED": hash_seed, ARTIFACTS_ENV: str(work / "artifacts")}
    return runner.run([machine_test.nodeid], config, seed=seed, env=env, work=work)


def _counterexample(
    run: runner.PytestRun, machine_test: MachineTest
) -> runner.TestResult | None:
    test = run.test(machine_test.nodeid)
    if test is None or not (test.outcome == "failed" and test.counterexample):
        return None
    return test


def passing_pair(
    machine_test: MachineTest,
    examples: int,
    seed: int,
    hash_seeds: tuple[str, str],
    work: Path,
) -> Pair:
    """Run twice; the step logs must be byte-identical."""
    pair = partial(Pair, machine_test.name, "passing")
    logs: list[bytes] = []
    counts: list[int] = []
    for index, hash_seed in enumerate(hash_seeds):
        folder = work / f"{machine_test.name}-run{index + 1}"
        config = RunConfig(
            base="ci-seeded",
            max_examples=examples,
            step_log=str(folder / "steps.log"),
        )
        run = _run(machine_test, config, seed, hash_seed, folder)
        test = run.test(machine_test.nodeid)
        if test is None:
            return pair(f"run {index + 1} did not run", (0, 0), same=False)
        if test.counterexample:
            found = f"run {index + 1} found a counterexample: {test.message}"
            return pair(found, (test.test_cases, 0), same=False)
        logs.append((folder / "steps.log").read_bytes())
        counts.append(test.test_cases)
    difference = first_difference(logs[0], logs[1])
    lines = len(logs[0].splitlines())
    detail = difference or (
        f"step logs identical: {counts[0]} programs, {len(logs[0])} bytes, "
        f"{lines} lines"
    )
    return pair(detail, (counts[0], counts[1]), same=not difference)


def _replay_output(folder: Path, canary: str | None, hash_seed: str) -> tuple[int, str]:
    command = [sys.executable, "-m", "ci.replay", str(folder)]
    if canary is not None:
        command += ["--canary", canary]
    done = subprocess.run(  # noqa: S603 - our own interpreter and module
        command,
        cwd=runner.REPO_ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=REPLAY_TIMEOUT_S,
        check=False,
    )
    return done.returncode, done.stdout


def _artifact(test: runner.TestResult) -> runner.Artifact | None:
    """The first artifact of `test` that holds a trace."""
    found = (runner.artifact(line) for line in test.replay)
    return next((a for a in found if a and (a.folder / "trace.json").exists()), None)


def failing_pair(
    machine_test: MachineTest, seed: int, hash_seeds: tuple[str, str], work: Path
) -> Pair:
    """Run twice; the same trace and failing check; the same replay verdict."""
    pair = partial(Pair, machine_test.name, "failing")
    found: list[runner.TestResult] = []
    for index, hash_seed in enumerate(hash_seeds):
        folder = work / f"{machine_test.name}-run{index + 1}"
        config = RunConfig(
            base="ci-seeded", max_examples=EXAMPLES["ci"], phases=FAILING_PHASES
        )
        run = _run(machine_test, config, seed, hash_seed, folder)
        test = _counterexample(run, machine_test)
        if test is None:
            return pair(f"run {index + 1}: no counterexample", (0, 0), same=False)
        found.append(test)
    counts = (found[0].test_cases, found[1].test_cases)
    first, second = (_artifact(test) for test in found)
    if first is None or second is None:
        same = found[0].message == found[1].message
        detail = f"no trace; failure: {found[0].message!r} vs {found[1].message!r}"
        return pair(detail, counts, same=same)
    difference = first_difference(
        (first.folder / "trace.json").read_bytes(),
        (second.folder / "trace.json").read_bytes(),
    )
    if difference:
        return pair(f"trace.json {difference}", counts, same=False)
    checks = [first.meta["failing_check"], second.meta["failing_check"]]
    if checks[0] != checks[1]:
        return pair(f"failing check {checks}", counts, same=False)
    replays = [_replay_output(first.folder, first.canary, seed) for seed in hash_seeds]
    if replays[0][0] != 1 or replays[0] != replays[1]:
        codes = f"exit {replays[0][0]} and {replays[1][0]}"
        what = first_difference(replays[0][1].encode(), replays[1][1].encode())
        return pair(f"ci.replay: {codes}; {what}", counts, same=False)
    step = checks[0].get("step", "?")
    trace = json.loads((first.folder / "trace.json").read_text(encoding="utf-8"))
    detail = (
        f"same trace ({len(trace['steps'])} steps), same first divergence "
        f"(step {step}, {checks[0]['check']}), same ci.replay output"
    )
    return pair(detail, counts, same=True)


def _check(
    arguments: argparse.Namespace,
    passing: Sequence[MachineTest],
    failing: Sequence[MachineTest],
) -> None:
    if not passing and not failing:
        raise UsageError("nothing to check: give --tests or --failing")
    if arguments.examples is not None and not passing:
        raise UsageError("--examples sizes the passing tests' runs: there are none")
    if arguments.examples is None:
        arguments.examples = DEFAULT_EXAMPLES


def main(argv: Sequence[str] | None = None) -> int:
    """Run the pairs; exit 0 all agree, 1 a difference, 2 usage."""
    try:
        arguments = build_parser().parse_args(argv)
        passing = resolve(arguments.tests) if arguments.tests else ()
        failing = resolve(arguments.failing) if arguments.failing else ()
        _check(arguments, passing, failing)
        checked_artifacts(arguments)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    folder = run_folder(arguments, "determinism")
    pairs: list[Pair] = []
    for run_pair in (
        *(partial(passing_pair, test, arguments.examples) for test in passing),
        *(partial(failing_pair, test) for test in failing),
    ):
        pairs.append(run_pair(arguments.seed, arguments.hash_seeds, folder))
        print(_line(pairs[-1]), flush=True)
    report: dict[str, Any] = {
        "seed": arguments.seed,
        "hash_seeds": list(arguments.hash_seeds),
        "examples": arguments.examples,
        "pairs": [asdict(pair) for pair in pairs],
        "different": sum(not pair.same for pair in pairs),
        "tests": {pair.test: MACHINE_TESTS[pair.test].nodeid for pair in pairs},
    }
    text = json.dumps(report, indent=2, sort_keys=True)
    try:
        write_results({folder / "report.json": text})
    except WriteFailed as error:
        return write_failed(PROG, error)
    print(f"report: {folder / 'report.json'}")
    return EXIT_SAME if all(pair.same for pair in pairs) else EXIT_DIFFERENT


def _line(pair: Pair) -> str:
    verdict = "SAME" if pair.same else "DIFFERENT"
    return f"{verdict} {pair.test} ({pair.kind}): {pair.detail}"
