"""Run concurrent scenarios under Hypothesis and tally what was checked.

`check_scenarios` draws scenarios, runs each on the crate (or a canary) a few
times with different schedule seeds, and checks every history; the first
history that is not linearizable, or that breaks a version property
(`stateful.version_order`), is remembered for the artifact writer
(`stateful.capture.capture_history`) and fails the test with its shortest
failing prefix (or, for a version property, the whole history). How many
threads and steps a scenario has, and how often it reruns, follow the loaded
Hypothesis profile: `ci` (the pr gate) stays small, `nightly` checks more than
ten times as many, longer histories.

Each run is recorded for the gate's summary (`stateful.stats`, kind
`concurrency`): histories checked, calls per history, threads, search states,
publications, version-order failures, and how many histories entered each of
the crate's known windows (`stateful.windows`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Final

from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from model.affinity.history import History, ThreadOp
from model.affinity.types import AffinityConfig, Reaping
from stateful import capture, stats, version_order, windows
from stateful.concurrent_affinity import (
    CRATE_REPLICA_APPLY,
    Action,
    ReplicaApply,
    Scenario,
    scenarios,
    shortest_failure,
    verdict,
)
from stateful.linearizability import Verdict

Runner = Callable[[AffinityConfig, Sequence[Sequence[ThreadOp]], int], History]
"""Runs programs on threads against one fresh table, with a schedule seed."""

SEED_MASK: Final[int] = 2**64 - 1
PR_EXAMPLES_MAX: Final[int] = 400
"""Profiles with at most this many examples get the pr sizes."""


@dataclass(frozen=True)
class Sizes:
    """How large scenarios are and how often each reruns."""

    threads_max: int
    ops_max: int
    repeats: int


PR_SIZES: Final[Sizes] = Sizes(threads_max=4, ops_max=6, repeats=2)
NIGHTLY_SIZES: Final[Sizes] = Sizes(threads_max=8, ops_max=12, repeats=8)


def sizes() -> Sizes:
    """The sizes for the loaded profile."""
    current = settings.default
    assert current is not None
    return PR_SIZES if current.max_examples <= PR_EXAMPLES_MAX else NIGHTLY_SIZES


@dataclass
class Tally:
    """What one test checked."""

    histories: int = 0
    calls: int = 0
    calls_max: int = 0
    threads_max: int = 0
    search_states: int = 0
    search_states_max: int = 0
    undecided: int = 0
    not_linearizable: int = 0
    publications: int = 0
    version_violations: int = 0
    windows: dict[str, int] = field(
        default_factory=lambda: dict.fromkeys(windows.WINDOWS, 0)
    )

    def add(self, history: History, found: Verdict[Action]) -> None:
        """Count one checked history."""
        self.histories += 1
        self.calls += len(history.events)
        self.calls_max = max(self.calls_max, len(history.events))
        self.threads_max = max(self.threads_max, history.threads)
        self.search_states += found.explored
        self.search_states_max = max(self.search_states_max, found.explored)
        self.undecided += found.undecided
        self.not_linearizable += found.decided and not found.linearizable
        self.publications += len(history.publications())
        for window in windows.entered(history, found):
            self.windows[window] += 1

    def record(self, name: str, reading: ReplicaApply) -> None:
        """Write the tally for the gate's summary."""
        stats.write("concurrency", name, asdict(self) | {"reading": reading})


def describe(history: History) -> str:
    """A failing prefix, one call per line, for the assertion message."""
    lines = [
        f"not linearizable; shortest failing prefix ({len(history.events)} calls):"
    ]
    for event in history.events:
        result = "(pending)" if event.pending else event.outcome
        lines.append(
            f"  t{event.thread} [{event.invoked},{event.returned}] "
            f"{event.call} -> {result}"
        )
    return "\n".join(lines)


def check_history(
    history: History, reading: ReplicaApply, tally: Tally
) -> Verdict[Action]:
    """Check one history; remember and fail on one that is not linearizable."""
    found = verdict(history, reading)
    tally.add(history, found)
    if found.decided and not found.linearizable:
        capture.capture_history(history, "linearizable", reading)
        raise AssertionError(describe(shortest_failure(history, reading)))
    broken = version_order.violations(history)
    if broken:
        tally.version_violations += 1
        capture.capture_history(history, "version_order", reading)
        lines = [f"{violation.name}: {violation.detail}" for violation in broken]
        raise AssertionError("\n".join(["versions out of order:", *lines]))
    return found


DETECTION_PHASES: Final[tuple[Phase, ...]] = (
    Phase.explicit,
    Phase.reuse,
    Phase.generate,
)
"""Hypothesis' phases when a check only has to detect a failure."""


ScenarioFamily = Callable[[int, int], st.SearchStrategy[Scenario]]
"""Scenarios of up to (threads, steps per thread)."""


def check_scenarios(
    runner: Runner,
    name: str,
    reading: ReplicaApply = CRATE_REPLICA_APPLY,
    reapings: Sequence[Reaping] = ("runtime_reaper",),
    family: ScenarioFamily | None = None,
    *,
    detect_only: bool = False,
) -> Tally:
    """Draw scenarios under the loaded settings; every history must linearize.

    `reapings`: the clock variants the build can make (for the general
    scenarios); `family`: scenarios aimed at a window instead
    (`stateful.windows`); `detect_only`: stop at the first failing history,
    without Hypothesis' shrink (threads interleave anew on every run, so it
    mostly ends as flaky; the history minimizer shortens the failure instead).
    """
    size = sizes()
    tally = Tally()
    drawn = (
        scenarios(size.threads_max, size.ops_max, reapings)
        if family is None
        else family(size.threads_max, size.ops_max)
    )

    @given(drawn)
    def run(scenario: Scenario) -> None:
        for repeat in range(size.repeats):
            seed = (scenario.schedule_seed + repeat) & SEED_MASK
            check_history(
                runner(scenario.config, scenario.programs, seed), reading, tally
            )

    test = settings(phases=DETECTION_PHASES)(run) if detect_only else run
    try:
        test()
    finally:  # the gate wants the figures of a failed run too
        tally.record(name, reading)
    return tally
