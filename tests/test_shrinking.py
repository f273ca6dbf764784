"""Counterexamples come out short: Hypothesis' shrink, then step deletion.

Each canary of each subject (`ci.subjects`) runs the subject's differential
machine under `SHRINK_SETTINGS` (the canary budget, then Hypothesis'
shrinker) until it fails; the program Hypothesis reports is read twice: as
printed (one `state.RULE(...)` line per rule) and as its final replay,
recorded as a trace, replayed outside Hypothesis and minimized by
`ci.replay.minimize`.

The bounds below come from `python -m ci.bench.shrinking` on the pinned
crate (docs/figures.md has the measured table and its date): each allows the
measured length plus half of it, at least 2 operations more, and never more
than the ceiling, 2 x the shortest counterexample + 2 operations. The
shortest is the explorer's BFS-shortest violation where the subject's
explorer runs the canary as its model and the canary breaks a property; for
the other canaries (those wrapping the crate, those caught only by a
comparison) it is the 1-minimal program step deletion reaches, which is at
least as long. Four canaries miss the ceiling in operations: each is caught
by one scenario rule of 5 to 16 operations (`SCENARIOS`), one rule
Hypothesis cannot split; their bound is in rules (one).

The run is derandomized and the literals Hypothesis mixes in are settled
(`ci.profiles.import_project_modules`), so a length repeats in every process;
any change to the rules or the source's literals may move it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import pytest
from hypothesis.stateful import run_state_machine_as_test

from ci import subjects
from ci.bench.shrinking import printed_rules
from ci.profiles import SHRINK_SETTINGS
from ci.replay.command import replay
from ci.replay.minimize import minimize
from ci.replay.trace import Trace, kind_of
from stateful import capture, stats
from stateful.harness import against_name
from stateful.machine import DifferentialMachine


@dataclass(frozen=True)
class Bound:
    """A canary's longest accepted shrunk program and the ceiling it must meet."""

    steps: int
    """Operations of the program Hypothesis reports, at most."""
    shortest: int
    """The shortest counterexample known: BFS-shortest, else 1-minimal."""
    bfs: bool
    """Whether `shortest` is the explorer's BFS-shortest length."""

    def meets_the_target(self) -> bool:
        """At most 2 x the shortest counterexample + 2 operations."""
        return self.steps <= 2 * self.shortest + 2


SHRUNK: Final[dict[tuple[str, str], Bound]] = {
    ("affinity", "eager_reaper_model"): Bound(6, 4, bfs=False),
    ("affinity", "forgetful_release"): Bound(5, 3, bfs=False),
    ("affinity", "late_expiry"): Bound(4, 2, bfs=False),
    ("affinity", "leaky_release_model"): Bound(5, 3, bfs=True),
    ("affinity", "off_by_one_expiry_model"): Bound(7, 4, bfs=True),
    ("affinity", "sleepy_waiter"): Bound(6, 3, bfs=False),
    ("affinity", "stale_replica_wins"): Bound(4, 2, bfs=False),
    ("queue", "eager_recheck"): Bound(19, 3, bfs=True),
    ("queue", "late_stats"): Bound(6, 2, bfs=False),
    ("queue", "lax_request_limit"): Bound(6, 2, bfs=False),
    ("queue", "lifo_ties"): Bound(8, 3, bfs=False),
    ("queue", "no_carry"): Bound(24, 5, bfs=False),
    ("queue", "plain_rotation"): Bound(6, 2, bfs=True),
    ("queue", "sticky_deficit"): Bound(22, 4, bfs=True),
    ("replica", "writer_blind_replica_model"): Bound(10, 7, bfs=False),
    ("scheduler", "cancelled_stays_counted"): Bound(3, 1, bfs=True),
    ("scheduler", "due_off_by_one"): Bound(7, 1, bfs=True),
    ("scheduler", "lane_never_rechecked"): Bound(5, 3, bfs=True),
    ("scheduler", "leave_at_booking_ignored"): Bound(3, 1, bfs=True),
}
"""Per subject and canary: the bound on the shrunk program's operations."""

SCENARIOS: Final[frozenset[tuple[str, str]]] = frozenset(
    {
        ("queue", "eager_recheck"),
        ("queue", "no_carry"),
        ("queue", "sticky_deficit"),
        ("scheduler", "due_off_by_one"),
    }
)
"""Canaries caught by one scenario rule: the program is that one rule."""

MINIMAL_STEPS_MAX: Final[int] = 10
"""The longest minimized program this test accepts, for every canary."""

CANARIES: Final[list[tuple[str, str]]] = sorted(
    (entry.name, canary)
    for entry in subjects.entries()
    for canary in entry.canary_factories()
)


def test_every_canary_of_every_subject_has_a_shrink_bound() -> None:
    """A new canary needs a measured bound here before it can be merged."""
    assert CANARIES == sorted(SHRUNK)


def test_every_bound_meets_the_target() -> None:
    """Each bound is at most 2 x the shortest + 2, or the canary is one scenario."""
    missed = sorted(
        key for key, bound in SHRUNK.items() if not bound.meets_the_target()
    )

    assert sorted(SCENARIOS) == missed


@dataclass(frozen=True)
class Shrunk:
    """A canary's reported program: its printed rules, its trace, minimized."""

    subject: str
    name: str
    notes: tuple[str, ...]
    rules: int
    trace: Trace
    minimal: Trace


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(key, id=f"{key[0]}-{key[1]}", marks=_marks)
        for key in CANARIES
        for _marks in [
            [pytest.mark.slow]
            if key[1] in subjects.entry(key[0]).slow_canaries()
            else []
        ]
    ],
)
def shrunk(request: pytest.FixtureRequest) -> Shrunk:
    """A canary's shrunk program as printed and as a trace, minimized once."""
    subject, name = request.param
    entry = subjects.entry(subject)
    factory = entry.canary_factories()[name]
    machine: type[DifferentialMachine] = type(
        f"Shrink_{name}", (entry.machine(),), {"factory": staticmethod(factory)}
    )
    capture.reset()
    with pytest.raises(AssertionError) as raised:
        run_state_machine_as_test(machine, settings=SHRINK_SETTINGS)
    notes = tuple(getattr(raised.value, "__notes__", ()))
    run = capture.final_runs()[-1]
    capture.reset()
    trace = kind_of(subject).record_harness(run.harness, f"{name}, shrunk")
    minimal, _ = minimize(trace, factory)
    stats.record_shrink(
        name,
        len(trace.steps),
        SHRUNK[subject, name].steps,
        len(minimal.steps),
        MINIMAL_STEPS_MAX,
    )
    rules = printed_rules(notes, machine)
    return Shrunk(subject, name, notes, rules, trace, minimal)


def test_hypothesis_shrinks_the_canary_within_its_bound(shrunk: Shrunk) -> None:
    """The final program Hypothesis reports is at most the canary's bound long."""
    bound = SHRUNK[shrunk.subject, shrunk.name]

    assert len(shrunk.trace.steps) <= bound.steps
    if (shrunk.subject, shrunk.name) in SCENARIOS:
        assert 1 == shrunk.rules


def test_the_printed_program_is_one_line_per_rule(shrunk: Shrunk) -> None:
    """`state = ...()`, then `state.RULE(...)` per step; no run of rules.

    A canary may fail in its `initialize` step already (no rule at all).
    """
    steps = [note for note in shrunk.notes if note.startswith("state")]

    assert steps[0].startswith("state = Shrink_")
    assert "state.teardown()" == steps[-1]
    assert all(step.startswith("state.") for step in steps[1:])
    assert not any(step.startswith("state.run_rules(") for step in steps)
    assert shrunk.rules <= len(shrunk.trace.steps)


def test_the_shrunk_trace_fails_against_the_canary_outside_hypothesis(
    shrunk: Shrunk,
) -> None:
    """Replayed from the trace alone, the program still exposes the canary."""
    canary = subjects.entry(shrunk.subject).canary_factories()[shrunk.name]

    first = replay(shrunk.trace, canary, shrunk.name).first_failure

    assert first is not None


def test_the_shrunk_trace_passes_against_the_real_system(shrunk: Shrunk) -> None:
    """The same program agrees with the unbroken system: the canary is the cause."""
    kind = shrunk.trace.kind
    real = kind.model_factory() if against_name() == "model" else kind.crate_factory()

    first = replay(shrunk.trace, real, against_name()).first_failure

    assert first is None


def test_minimizing_keeps_the_failure_in_at_most_ten_steps(shrunk: Shrunk) -> None:
    """Step deletion leaves a short program that fails the same check first."""
    canary = subjects.entry(shrunk.subject).canary_factories()[shrunk.name]
    original = replay(shrunk.trace, canary, shrunk.name).first_failure
    first = replay(shrunk.minimal, canary, shrunk.name).first_failure
    assert original is not None

    assert len(shrunk.minimal.steps) <= MINIMAL_STEPS_MAX
    assert first is not None
    assert original.failed == first.failed
