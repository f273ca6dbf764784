"""Queue parity between two builds: the same programs, every result compared.

A change to `dynamo-kv-router` that touches only the affinity table (or that
makes `recheck_worker` public) must not change how `PolicyQueue` orders and
selects. The parity run shows it: a fixed set of generated queue programs
(seeded, no Hypothesis: the same programs in every process and build) runs on
the installed binding, and every step's result is written down. Recorded on
the pinned build and compared on a local tree's build, any difference names
the first program and step where the two builds disagree.

    python -m ci.queue_parity --record FILE [--programs N]
    python -m ci.queue_parity --compare FILE

Exit codes: 0 recorded / identical, 1 a difference, 2 bad arguments or file.
`ci.gate --source` runs both halves (pinned, then the tree) before its tests.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    output_file,
    whole_number,
    write_failed,
    write_results,
)
from ci.inputs import InputError, read_json
from model.queue.api import outcome_of
from model.queue.ops import Drain, Enqueue, PopNext, QueueOp, Retain
from model.queue.types import ClassConfig, Dispatch
from stateful.queue_machine import ARRIVALS_S, JUMPS, QUANTA, STRICT, WORKERS
from stateful.queue_subject import ProfileSpec, profile_yaml

PROGRAMS_DEFAULT: Final[int] = 2_000
PROGRAMS_MAX: Final[int] = 20_000
"""A record of 2,000 programs is 8.5 MB; ten times that is the most we run."""
RECORD_BYTES_MAX: Final[int] = 256 * 1024 * 1024
"""Above any record of at most PROGRAMS_MAX programs; a larger file is not one."""
STEPS_PER_PROGRAM: Final[int] = 60
FORMAT: Final[str] = "queue-parity/1"


def _profile(rng: random.Random) -> ProfileSpec:
    count = rng.randint(1, 3)
    configs = tuple(
        ClassConfig(
            name=f"c{index}",
            queue_policy=rng.choice(("fcfs", "wspt")),
            quantum=rng.choice(QUANTA),
            request_queue_limit_per_worker=rng.choice((None, None, 2, 4)),
        )
        for index in range(count)
    )
    if rng.random() < 0.3:
        return ProfileSpec(configs, None, None, rng.choice(("fcfs", "wspt", "lcfs")))
    explicit = tuple(rng.random() < 0.5 for _ in configs)
    return ProfileSpec(configs, profile_yaml(configs, explicit), None, "fcfs")


def _op(rng: random.Random, classes: int, payload: int) -> QueueOp:
    roll = rng.random()
    if roll < 0.55:
        return Enqueue(
            class_index=rng.randrange(classes),
            worker_count=rng.choice((1, 1, 2, 3, 0)),
            raw_isl_tokens=rng.choice((0, 1, 5, 10, 40, 100)),
            cached_tokens=rng.choice((0, 0, 3, 30)),
            arrival_offset_secs=rng.choice(ARRIVALS_S),
            priority_jump=rng.choice(JUMPS),
            strict_priority=rng.choice(STRICT),
            placement=rng.choice((None, *WORKERS)),
            payload=payload,
        )
    if roll < 0.93:
        saturated = frozenset(w for w in WORKERS if rng.random() < 0.3)
        return PopNext(
            Dispatch(
                saturated=saturated,
                any_dispatchable=rng.random() < 0.8,
                paused_classes=frozenset(
                    i for i in range(classes) if rng.random() < 0.1
                ),
            )
        )
    if roll < 0.99:
        return Retain(frozenset(rng.sample(range(1, payload + 1), min(payload, 2))))
    return Drain()


def programs(count: int) -> list[tuple[ProfileSpec, list[QueueOp]]]:
    """`count` programs, each from its own seed (program i uses seed i)."""
    result = []
    for seed in range(count):
        rng = random.Random(seed)  # noqa: S311 - reproducible programs, not secrets
        spec = _profile(rng)
        ops = [
            _op(rng, len(spec.configs), payload)
            for payload in range(1, STEPS_PER_PROGRAM + 1)
        ]
        result.append((spec, ops))
    return result


def run(count: int) -> list[list[str]]:
    """Every step's result (repr) of every program, on the installed binding."""
    from stateful.queue_subject import crate_factory  # noqa: PLC0415 - crate

    results = []
    for spec, ops in programs(count):
        queue = crate_factory(spec)
        steps = []
        for op in ops:
            steps.append(repr(outcome_of(queue, op)))
            if isinstance(op, Drain):
                break
        results.append(steps)
    return results


def first_difference(
    recorded: list[list[str]], current: list[list[str]]
) -> tuple[int, int, str, str] | None:
    """(program, step, recorded, current) of the first difference, if any."""
    for program, (theirs, ours) in enumerate(zip(recorded, current, strict=True)):
        for step, (a, b) in enumerate(zip(theirs, ours, strict=False)):
            if a != b:
                return program, step + 1, a, b
        if len(theirs) != len(ours):
            return program, min(len(theirs), len(ours)) + 1, "(end)", "(more steps)"
    return None


def _load(path: Path) -> dict[str, Any]:
    try:
        document = read_json(path, RECORD_BYTES_MAX)
    except InputError as error:
        raise UsageError(str(error)) from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise UsageError(f"{path} is not a {FORMAT} record")
    results = document.get("results")
    if not isinstance(results, list) or not all(
        isinstance(steps, list) and all(isinstance(step, str) for step in steps)
        for steps in results
    ):
        raise UsageError(f"{path}: results: not a list of programs' step results")
    if not results:  # an empty record would compare equal to anything
        raise UsageError(f"{path}: results: no programs recorded")
    if len(results) > PROGRAMS_MAX:  # --record's cap holds for --compare too
        raise UsageError(
            f"{path}: results: {len(results)} programs exceed the cap of {PROGRAMS_MAX}"
        )
    if not isinstance(document.get("build"), str):
        raise UsageError(f"{path}: build: not a text naming the recorded build")
    return document


def _check_count(arguments: argparse.Namespace) -> None:
    """--programs counts what --record runs; --compare replays the recorded count."""
    if arguments.compare is not None and arguments.programs is not None:
        raise UsageError("--compare replays the recorded programs: drop --programs")
    if arguments.programs is None:
        arguments.programs = PROGRAMS_DEFAULT
    if arguments.programs < 1:
        raise UsageError("--programs must be at least 1")
    if arguments.programs > PROGRAMS_MAX:
        raise UsageError(f"--programs must be at most {PROGRAMS_MAX}")


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = OneLineParser(prog="python -m ci.queue_parity", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", type=Path, metavar="FILE")
    mode.add_argument("--compare", type=Path, metavar="FILE")
    parser.add_argument(
        "--programs", type=whole_number, default=None, help="with --record"
    )
    try:
        arguments = parser.parse_args(argv)
        _check_count(arguments)
        if arguments.record is not None:
            output_file(arguments.record, "--record")
        recorded = _load(arguments.compare) if arguments.compare else None
    except UsageError as error:
        print(f"ci.queue_parity: error: {error}", file=sys.stderr)
        return 2
    from impl import adapter  # noqa: PLC0415 - loads the binding

    build = f"{adapter.CRATE_SOURCE} dynamo-kv-router {adapter.CRATE_VERSION}"
    count = arguments.programs if recorded is None else len(recorded["results"])
    results = run(count)
    steps = sum(len(steps) for steps in results)
    if recorded is None:
        document = {"format": FORMAT, "build": build, "results": results}
        try:
            write_results({arguments.record: json.dumps(document) + "\n"})
        except WriteFailed as error:
            return write_failed("ci.queue_parity", error)
        print(f"queue parity: recorded {count} programs, {steps} steps on {build}")
        return 0
    difference = first_difference(recorded["results"], results)
    if difference is not None:
        program, step, theirs, ours = difference
        print(
            f"queue parity: program {program} step {step} differs: "
            f"{recorded['build']} gave {theirs}, {build} gives {ours}"
        )
        return 1
    print(
        f"queue parity: {count} programs, {steps} steps identical on "
        f"{recorded['build']} and {build}"
    )
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.queue_parity", main)
