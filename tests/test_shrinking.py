"""Counterexamples come out short: Hypothesis' shrink, then step deletion.

Each canary runs the differential machine under `CANARY_SETTINGS` until it
fails; its final replay (Hypothesis' shrunk program) is recorded as a trace,
replayed outside Hypothesis, and minimized by `ci.replay.minimize`.

Measured on dynamo-kv-router 1.6.1 (December 2026), shrunk / minimized steps,
with every project module imported before the first test (see
`ci.profiles.import_project_modules`): before and after the machine gained
its `stale_lease_across_a_revival` rule, then after machines drew runs of
rules (`stateful.machine.run_rules`):

| canary                  |      Hypothesis | minimized |
|-------------------------|----------------:|----------:|
| eager_reaper_model      |    37 / 49 / 32 | 5 / 9 / 3 |
| forgetful_release       |     28 / 29 / 8 | 3 / 3 / 3 |
| late_expiry             |    32 / 20 / 13 | 4 / 3 / 4 |
| leaky_release_model     |      13 / 4 / 4 | 3 / 3 / 3 |
| off_by_one_expiry_model |    71 / 28 / 27 | 6 / 5 / 5 |
| sleepy_waiter           |      4 / 35 / 6 | 3 / 3 / 3 |
| stale_replica_wins      |      6 / 2 / 31 | 2 / 2 / 2 |

The run is derandomized and the literals Hypothesis mixes in are settled, so a
length repeats in every process; but any change to the rules or the source's
literals moves it, by up to nine times (sleepy_waiter). The bounds allow 2.5
times the longest of the measurements, and at least 40 steps. Minimized
programs are 1-minimal (no single step can go), but handle numbers tie an
acquire to its later commit or release, so a 1-minimal program can keep a pair
that only deleting both would remove: their bound is 10 steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.affinity import CANARIES
from ci.profiles import CANARY_SETTINGS
from ci.replay.affinity import record
from ci.replay.command import replay
from ci.replay.minimize import minimize
from ci.replay.trace import Trace
from stateful import capture, stats
from stateful.affinity_machine import AffinityMachine
from stateful.affinity_subject import AffinityHarness, default_factory
from stateful.harness import sut_name

SHRUNK_STEPS_MAX: Final[dict[str, int]] = {
    "eager_reaper_model": 125,
    "forgetful_release": 75,
    "late_expiry": 80,
    "leaky_release_model": 40,
    "off_by_one_expiry_model": 180,
    "sleepy_waiter": 90,
    "stale_replica_wins": 78,
}
"""Per canary: the longest Hypothesis-shrunk program this test accepts."""

MINIMAL_STEPS_MAX: Final[int] = 10
"""The longest minimized program this test accepts, for every canary."""


def test_every_canary_has_a_shrink_bound() -> None:
    """A new canary needs a measured bound here before it can be merged."""
    assert sorted(CANARIES) == sorted(SHRUNK_STEPS_MAX)


SLOW_CANARIES: Final[frozenset[str]] = frozenset()
"""Canaries whose shrunk program takes minutes to replay, so they run nightly.

None at present: `late_expiry` used to accept the machine's move to
`CLOCK_NS_MAX`, two years of reaper ticks; it now refuses out-of-range moves
exactly as the crate does.
"""


@dataclass(frozen=True)
class Shrunk:
    """A canary's Hypothesis-shrunk trace and its minimized form."""

    name: str
    trace: Trace
    minimal: Trace


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(name, marks=pytest.mark.slow) if name in SLOW_CANARIES else name
        for name in sorted(CANARIES)
    ],
)
def shrunk(request: pytest.FixtureRequest) -> Shrunk:
    """A canary's shrunk program as a trace, minimized once for all tests."""
    name: str = request.param
    machine = type(
        f"Shrink_{name}",
        (AffinityMachine,),
        {
            "factory": CANARIES[name],
        },
    )
    capture.reset()
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)
    (run,) = capture.final_runs()
    capture.reset()
    harness = run.harness
    assert isinstance(harness, AffinityHarness)
    trace = record(harness.config, harness.session_pool, harness.ops, name)
    minimal, _ = minimize(trace, CANARIES[name])
    stats.record_shrink(
        name,
        len(trace.steps),
        SHRUNK_STEPS_MAX[name],
        len(minimal.steps),
        MINIMAL_STEPS_MAX,
    )
    return Shrunk(name, trace, minimal)


def test_hypothesis_shrinks_the_canary_within_its_bound(shrunk: Shrunk) -> None:
    """The final program Hypothesis reports is at most the canary's bound long."""
    assert len(shrunk.trace.steps) <= SHRUNK_STEPS_MAX[shrunk.name]


def test_the_shrunk_trace_fails_against_the_canary_outside_hypothesis(
    shrunk: Shrunk,
) -> None:
    """Replayed from the trace alone, the program still exposes the canary."""
    first = replay(shrunk.trace, CANARIES[shrunk.name], shrunk.name).first_failure

    assert first is not None


def test_the_shrunk_trace_passes_against_the_real_system(shrunk: Shrunk) -> None:
    """The same program agrees with the unbroken system: the canary is the cause."""
    first = replay(shrunk.trace, default_factory(), sut_name()).first_failure

    assert first is None


def test_minimizing_keeps_the_failure_in_at_most_ten_steps(shrunk: Shrunk) -> None:
    """Step deletion leaves a short program that fails the same check first."""
    canary = CANARIES[shrunk.name]
    original = replay(shrunk.trace, canary, shrunk.name).first_failure
    first = replay(shrunk.minimal, canary, shrunk.name).first_failure
    assert original is not None

    assert len(shrunk.minimal.steps) <= MINIMAL_STEPS_MAX
    assert first is not None
    assert original.failed == first.failed


def test_a_minimized_trace_still_agrees_with_the_real_system(shrunk: Shrunk) -> None:
    """Deleting steps never turns the canary's failure into a real one."""
    first = replay(shrunk.minimal, default_factory(), sut_name()).first_failure

    assert first is None
