"""Counterexamples come out short: Hypothesis' shrink, then step deletion.

Each canary runs the differential machine under `CANARY_SETTINGS` until it
fails; its final replay (Hypothesis' shrunk program) is recorded as a trace,
replayed outside Hypothesis, and minimized by `ci.minimize`.

Measured on dynamo-kv-router 1.6.1 (December 2026, with every project module
imported before the first test, see `ci.profiles.import_project_modules`),
shrunk / minimized steps:

| canary                  | Hypothesis | minimized |
|-------------------------|-----------:|----------:|
| eager_reaper_model      |         37 |         5 |
| forgetful_release       |         28 |         3 |
| late_expiry             |         32 |         4 |
| leaky_release_model     |         13 |         3 |
| off_by_one_expiry_model |         71 |         6 |
| sleepy_waiter           |          4 |         3 |
| stale_replica_wins      |          6 |         2 |

The run is derandomized and the literals Hypothesis mixes in are settled, so
these lengths repeat in every process; they still move whenever the machine's
rules or the project's source change, so the bounds allow about 2.5 times the
measured length. Minimized programs are 1-minimal (no single step can go), so
their bound is tight: 8 steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci import failures, stats
from ci.canaries.affinity import CANARIES
from ci.minimize import minimize
from ci.profiles import CANARY_SETTINGS
from ci.replay import replay
from ci.trace_affinity import AffinityTrace, record
from stateful.affinity_machine import AffinityMachine
from stateful.harness import default_factory, sut_name

SHRUNK_STEPS_MAX: Final[dict[str, int]] = {
    "eager_reaper_model": 90,
    "forgetful_release": 70,
    "late_expiry": 80,
    "leaky_release_model": 35,
    "off_by_one_expiry_model": 180,
    "sleepy_waiter": 15,
    "stale_replica_wins": 20,
}
"""Per canary: the longest Hypothesis-shrunk program this test accepts."""

MINIMAL_STEPS_MAX: Final[int] = 8
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
    trace: AffinityTrace
    minimal: AffinityTrace


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
            "goals_reached": set(),
            "rules_run": set(),
            "steps_run": 0,
        },
    )
    failures.reset()
    with pytest.raises(AssertionError):
        run_state_machine_as_test(machine, settings=CANARY_SETTINGS)
    (run,) = failures.final_runs()
    failures.reset()
    harness = run.harness
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


def test_minimizing_keeps_the_failure_in_at_most_eight_steps(shrunk: Shrunk) -> None:
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
