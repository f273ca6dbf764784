"""The scheduler corpus: hand-written scenarios and minimized canary catches.

    python -m ci.replay.corpus.scheduler_scenarios           # rewrite the files
    python -m ci.replay.corpus.scheduler_scenarios --check   # exit 1 if stale

Files live in `ci/replay/corpus/scheduler/`, apart from the affinity and queue
traces (whose tests read every top-level file as one of theirs).
`tests/test_scheduler_corpus.py` replays each against the crate and the model,
checks they are in step with this module, and that every scheduler canary
diverges on at least one of them.

Two families:

* `SCENARIOS` -- one documented behaviour each (cited in its description), as
  a program of `model.scheduler.ops`; `build` records it on the model;
* `canary_*` -- each canary's counterexample: the machine's failing program,
  minimized by `ci.replay.minimize` against the canary (`catch_canaries`
  regenerates them; their programs are then kept as written).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ci.cli import OneLineParser, UsageError, WriteFailed, write_failed, write_results
from ci.replay import corpus
from ci.replay.scheduler import KIND
from ci.replay.trace import Trace
from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SchedulerOp,
    SetAvailable,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.types import DUE_KEY_CAP_MS, SchedulerConfig

DIRECTORY: Final[Path] = Path(__file__).resolve().parent / "scheduler"
ONE: Final[SchedulerConfig] = SchedulerConfig(capacities_tokens=(5,))
TWO: Final[SchedulerConfig] = SchedulerConfig(capacities_tokens=(5, 5))


def _busy(request_id: str, worker: int = 0) -> Schedule:
    """Six tokens, pinned: a worker of capacity five is busy once it is booked."""
    return Schedule(request_id, worker, pinned=True, isl_tokens=6)


@dataclass(frozen=True)
class SchedulerScenario:
    """A named program on one worker set, and what it shows."""

    name: str
    config: SchedulerConfig
    ops: tuple[SchedulerOp, ...]
    description: str


SCENARIOS: Final[tuple[SchedulerScenario, ...]] = (
    SchedulerScenario(
        "scheduler_a_free_rechecks_a_blocked_pinned_lane",
        ONE,
        (
            _busy("big"),
            Schedule("small", 0, pinned=True, isl_tokens=1),
            Free("big"),
        ),
        "A request pinned to a busy worker waits in its lane; freeing the booking "
        "rechecks that worker and dispatches it (local.rs:645, queue.rs:1449).",
    ),
    SchedulerScenario(
        "scheduler_a_capacity_change_rechecks_every_lane",
        ONE,
        (
            _busy("big"),
            Schedule("small", 0, pinned=True, isl_tokens=1),
            SetCapacity(0, 5),
            SetCapacity(0, 6),
        ),
        "An unchanged capacity changes nothing (local.rs:141); a capacity equal to "
        "the load makes the worker not busy and the recheck dispatches the lane.",
    ),
    SchedulerScenario(
        "scheduler_due_times_reject_exactly_at_the_deadline",
        ONE,
        (
            _busy("big"),
            Schedule("now", 0, pinned=True, isl_tokens=1, due_ms=0),
            Schedule("later", 0, pinned=True, isl_tokens=1, due_ms=3),
            Advance(2),
            Advance(1),
            UpdateQueue(),
        ),
        "A request due now is rejected at schedule; one due at 3 ms still waits "
        "at 2 ms and is rejected by the actor's timer exactly at 3 ms, counted "
        "once (queue.rs:1196, 1282; policy_queue.rs:682).",
    ),
    SchedulerScenario(
        "scheduler_earliest_due_time_is_served_first",
        ONE,
        (
            _busy("big"),
            Schedule("no_due", 0, pinned=False, isl_tokens=1),
            Schedule("due", 0, pinned=False, isl_tokens=6, due_ms=50),
            Free("big"),
        ),
        "Waiting requests are served earliest due time first, before any request "
        "without one (policy_queue.rs:101 `cmp_queue_order`): the later request "
        "with a due time is dispatched and makes the worker busy again.",
    ),
    SchedulerScenario(
        "scheduler_an_expired_shared_head_lets_the_next_through",
        TWO,
        (
            _busy("big"),
            Schedule("head", 0, pinned=False, isl_tokens=1, due_ms=2),
            Schedule("behind", 1, pinned=False, isl_tokens=0),
            Advance(5),
        ),
        "The shared lane waits behind its head while the head's worker is busy "
        "(queue.rs:1496); when the head's due time comes the timer rejects it at "
        "2 ms and the request behind it is dispatched at 2 ms, not at 5 ms.",
    ),
    SchedulerScenario(
        "scheduler_a_cancelled_head_lets_the_next_through",
        TWO,
        (
            _busy("big"),
            Schedule("head", 0, pinned=False, isl_tokens=1),
            Schedule("behind", 1, pinned=False, isl_tokens=0),
            Cancel("head"),
            Cancel("head"),
        ),
        "A caller that goes away while its request heads the shared lane removes "
        "it (queue.rs:451, 1291) and the request behind it is dispatched; going "
        "away again changes nothing.",
    ),
    SchedulerScenario(
        "scheduler_a_lane_whose_worker_goes_away_waits_for_a_recheck",
        ONE,
        (
            _busy("big"),
            Schedule("small", 0, pinned=True, isl_tokens=1),
            UpdateQueue(),
            SetAvailable(frozenset()),
            Schedule("shared", 0, pinned=False, isl_tokens=0),
            UpdateQueue(),
        ),
        "A blocked lane is rescanned once per recheck (policy_queue.rs:330-353): "
        "after `update_queue`, the worker leaves the available set unannounced; a "
        "new shared request for it is popped and refused (`NoEndpoints`, "
        "queue.rs:1907-1936, 1736-1743) while the blocked lane is not rescanned; "
        "the next `update_queue` refuses it too.",
    ),
    SchedulerScenario(
        "scheduler_a_due_time_that_left_the_queue_fires_no_timer",
        TWO,
        (
            Schedule("big", 0, pinned=True, isl_tokens=6, due_ms=1),
            Schedule("small", 0, pinned=True, isl_tokens=1),
            Schedule("gone", 0, pinned=True, isl_tokens=1, due_ms=2),
            Cancel("gone"),
            SetAvailable(frozenset({1})),
            Advance(3),
            Schedule("other", 1, pinned=True, isl_tokens=1),
        ),
        "A due time leaves the queue's due set with its request, dispatched "
        "(policy_queue.rs:893) or cancelled (:763), so the actor's timer "
        "(queue.rs:1079-1104) never fires for it: at 3 ms nothing rechecks the "
        "blocked lane whose worker left the available set, and it waits on.",
    ),
    SchedulerScenario(
        "scheduler_a_waiting_due_time_fires_only_when_it_comes",
        ONE,
        (
            _busy("big"),
            Schedule("small", 0, pinned=True, isl_tokens=1, due_ms=5),
            SetAvailable(frozenset()),
            Advance(4),
            Advance(1),
        ),
        "The actor's timer sleeps until the earliest due time (policy_queue.rs:"
        "543-545, queue.rs:1079-1104): the lane whose worker left the available "
        "set is not rechecked before it, and at 5 ms the request is rejected for "
        "its due time, before any recheck (queue.rs:1459-1466).",
    ),
    SchedulerScenario(
        "scheduler_due_times_past_the_cap_tie_before_no_due_time",
        ONE,
        (
            Advance(1),
            _busy("big"),
            Schedule("no_due", 0, pinned=True, isl_tokens=6),
            Schedule("capped", 0, pinned=True, isl_tokens=6, due_ms=1 + DUE_KEY_CAP_MS),
            Schedule("below", 0, pinned=True, isl_tokens=6, due_ms=DUE_KEY_CAP_MS),
            Free("big"),
            Free("below"),
            Free("capped"),
        ),
        "Due keys count from the deadline origin, set to 1 ms when `capped` is "
        "parked into an empty due set (policy_queue.rs:631-633), and are capped "
        "(:635-639): `below` is one ms under the cap and leaves first, `capped` "
        "on it leaves next, and the request without a due time last.",
    ),
)


def build_scenario(scenario: SchedulerScenario) -> Trace:
    """Record a scenario on the reference model."""
    return KIND.record(scenario.config, scenario.ops, scenario.description)


def build(directory: Path = DIRECTORY) -> dict[Path, str]:
    """Every hand-written scenario's file path and JSON text."""
    return {
        directory / f"{scenario.name}.json": build_scenario(scenario).dumps()
        for scenario in SCENARIOS
    }


def stale_files(directory: Path = DIRECTORY) -> list[Path]:
    """Scenario files that are missing or differ from what `build` writes."""
    return corpus.stale_files(build(directory))


def files(directory: Path = DIRECTORY) -> list[Path]:
    """Every scheduler corpus trace, sorted."""
    return sorted(directory.glob("*.json"))


def catch_canaries(
    directory: Path = DIRECTORY, names: Sequence[str] | None = None
) -> list[Path]:
    """Run the machine on each canary (or those named); write its minimized catch."""
    from hypothesis.stateful import run_state_machine_as_test  # noqa: PLC0415

    from ci.canaries.scheduler import CANARIES  # noqa: PLC0415
    from ci.profiles import CANARY_SETTINGS  # noqa: PLC0415
    from ci.replay.minimize import minimize  # noqa: PLC0415
    from stateful import capture  # noqa: PLC0415
    from stateful.scheduler_machine import SchedulerMachine  # noqa: PLC0415

    written = []
    for name, factory in sorted(CANARIES.items()):
        if names is not None and name not in names:
            continue
        machine = type(f"Canary_{name}", (SchedulerMachine,), {"factory": factory})
        capture.reset()
        with contextlib.suppress(AssertionError):  # the catch is what we want
            run_state_machine_as_test(machine, settings=CANARY_SETTINGS)
        failed = [run for run in capture.final_runs() if run.failed is not None]
        if not failed:
            raise AssertionError(f"canary {name} was not caught")
        harness = failed[0].harness
        found = KIND.record_harness(harness, f"The machine's catch of canary {name}.")
        small, _ = minimize(found, factory)
        path = directory / f"canary_{name}.json"
        write_results({path: small.dumps()})
        written.append(path)
    return written


def _check_mode(arguments: argparse.Namespace) -> None:
    """`--check` compares the scenario files only; it catches no canary."""
    if arguments.check and arguments.catch_canaries:
        raise UsageError("--check compares the scenarios only: drop --catch-canaries")


def main(argv: Sequence[str] | None = None) -> int:
    """Write (or with `--check`, compare) the scenario files."""
    parser = OneLineParser(prog="python -m ci.replay.corpus.scheduler_scenarios")
    parser.add_argument("--check", action="store_true", help="exit 1 if stale")
    parser.add_argument(
        "--catch-canaries",
        action="store_true",
        help="also rewrite the minimized canary catches",
    )
    try:
        arguments = parser.parse_args(argv)
        _check_mode(arguments)
    except UsageError as error:
        print(f"ci.replay.corpus.scheduler_scenarios: error: {error}", file=sys.stderr)
        return 2
    if arguments.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.name}", file=sys.stderr)
        return 1 if stale else 0
    try:
        files = build()
        write_results(files)
        for path in files:
            print(f"wrote {path.name}")
        if arguments.catch_canaries:
            for path in catch_canaries():
                print(f"wrote {path.name}")
    except WriteFailed as error:
        return write_failed("ci.replay.corpus.scheduler_scenarios", error)
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.replay.corpus.scheduler_scenarios", main)
