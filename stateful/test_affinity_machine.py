"""The affinity machine against the crate, and its coverage goals."""

from __future__ import annotations

from hypothesis.stateful import run_state_machine_as_test

from ci import stats
from properties import properties
from stateful.affinity_machine import AffinityMachine

RULES = sorted(
    name
    for name in dir(AffinityMachine)
    if hasattr(getattr(AffinityMachine, name), "hypothesis_stateful_rule")
)


def test_the_crate_agrees_with_the_model_and_every_goal_is_reached() -> None:
    """Every step agrees, every rule runs, and every coverage goal is reached."""
    AffinityMachine.goals_reached.clear()
    AffinityMachine.goal_counts.clear()
    AffinityMachine.rules_run.clear()
    AffinityMachine.steps_run = 0

    try:
        run_state_machine_as_test(AffinityMachine)
    finally:  # the gate's summary wants the numbers of a failed run too
        stats.record_machine("affinity", AffinityMachine, RULES, "AffinityMachine")

    print(f"steps: {AffinityMachine.steps_run}")
    for goal, count in sorted(AffinityMachine.goal_counts.items()):
        print(f"goal {goal}: {count}")
    goals = {p.name for p in properties(subject="affinity", kind="sometimes")}
    assert set() == goals - AffinityMachine.goals_reached
    assert set() == set(RULES) - AffinityMachine.rules_run
    assert AffinityMachine.steps_run >= 1_000
