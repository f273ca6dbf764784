"""The bounded explorer of the public scheduler: counts, properties, canaries."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from rich.console import Console

import ci.explore.command as explore_cli
from ci.canaries.scheduler import CANARIES
from ci.explore.command import read_counts
from ci.explore.coverage import MachineRun, MachineStep, measure
from ci.explore.scheduler_coverage import (
    SCHEDULER_RULE_OP_TYPES,
    run_restricted_scheduler_machine,
)
from ci.explore.scheduler_graph import (
    CI_SCHEDULER_BOUNDS,
    SCHEDULER_BOUNDS,
    SchedulerExploration,
    SchedulerNode,
    advance_steps_ms,
    bound_ops,
    node_of,
    scheduler_bound_named,
)
from ci.explore.scheduler_graph import explore as explore_scheduler
from ci.explore.scheduler_replay import (
    canary_model,
    replay_exploration,
    shortest_scheduler_counterexample,
)
from ci.explore.search import ExplorationCapError
from ci.profiles import selected_profile
from ci.replay.command import main as replay_main
from ci.replay.scheduler import KIND
from ci.replay.trace import load, save
from model.scheduler.api import outcome_of
from model.scheduler.ops import Advance, Cancel, Free, Schedule, SchedulerOp
from model.scheduler.table import ModelScheduler, SchedulerState, apply
from model.scheduler.types import SchedulerConfig
from properties import properties
from stateful import stats
from stateful.machine import rules_of
from stateful.scheduler_machine import SchedulerMachine

NIGHTLY_SCHEDULER_BOUNDS = tuple(
    b.name for b in SCHEDULER_BOUNDS if b.name not in CI_SCHEDULER_BOUNDS
)
SHORTEST = {
    "cancelled_stays_counted": ("pending_counters_sum_the_waiting_requests", 1),
    "due_off_by_one": ("no_request_is_dispatched_at_or_after_its_due_time", 1),
    "lane_never_rechecked": ("a_blocked_lane_is_dispatched_on_the_next_recheck", 3),
    "leave_at_booking_ignored": ("only_dispatched_requests_hold_bookings", 1),
}
"""The property each scheduler canary violates first, at its BFS-shortest length
over the every-push bounds."""
CI_BOUNDS = tuple(scheduler_bound_named(name) for name in CI_SCHEDULER_BOUNDS)


def _nightly_only() -> None:
    if selected_profile() != "nightly":
        pytest.skip("larger bound: runs under the nightly settings")


@cache
def _explored(name: str) -> SchedulerExploration:
    """Each scheduler bound is enumerated once per test session."""
    return explore_scheduler(scheduler_bound_named(name))


# ---- counts, properties, goals ------------------------------------------------------


@pytest.mark.parametrize("name", CI_SCHEDULER_BOUNDS)
def test_a_ci_scheduler_bound_has_the_pinned_counts(name: str) -> None:
    """Enumerating the bound gives the counts under `scheduler` in the pinned file."""
    expected = read_counts("scheduler")[name]

    actual = _explored(name).counts()

    assert expected == actual


@pytest.mark.slow
@pytest.mark.parametrize("name", NIGHTLY_SCHEDULER_BOUNDS)
def test_a_nightly_scheduler_bound_has_its_counts_and_is_clean(name: str) -> None:
    """A larger bound has its pinned counts, violates nothing and meets its goals."""
    _nightly_only()
    exploration = explore_scheduler(scheduler_bound_named(name))  # not kept: 1.7 GB

    assert read_counts("scheduler")[name] == exploration.counts()
    assert [] == exploration.violations
    assert ([], []) == exploration.goal_mismatch()


def test_every_scheduler_bound_has_a_row_of_pinned_counts() -> None:
    """The `scheduler` section of the counts file names exactly the declared bounds."""
    raw = json.loads(explore_cli.COUNTS_PATH.read_text())

    assert sorted(b.name for b in SCHEDULER_BOUNDS) == sorted(raw["scheduler"])


@pytest.mark.parametrize("name", CI_SCHEDULER_BOUNDS)
def test_no_scheduler_property_is_violated_within_a_ci_bound(name: str) -> None:
    """Every always property holds on every state and edge, each where it applies."""
    exploration = _explored(name)

    assert [] == exploration.violations
    assert [] == exploration.misdeclared


@pytest.mark.parametrize("name", CI_SCHEDULER_BOUNDS)
def test_a_ci_scheduler_bound_reaches_exactly_the_goals_it_does_not_rule_out(
    name: str,
) -> None:
    """Every goal not declared out of reach is reached, and no declared one is."""
    assert ([], []) == _explored(name).goal_mismatch()


def test_the_ci_bounds_together_reach_every_goal_and_exercise_every_property() -> None:
    """Each goal is reached, and each always property non-vacuous, in some CI bound."""
    explorations = [_explored(name) for name in CI_SCHEDULER_BOUNDS]
    reached = set().union(*(set(e.reached) for e in explorations))
    exercised = {
        prop
        for e in explorations
        for prop, counts in e.exercise().items()
        if counts["non_vacuous"] > 0
    }

    assert {p.name for p in properties("scheduler", "sometimes")} == reached
    assert {p.name for p in properties("scheduler", "always")} == exercised


def test_scheduler_goals_declared_out_of_reach_are_registered_goals() -> None:
    """Every name a scheduler bound rules out is a registered scheduler goal."""
    goals = {p.name for p in properties(subject="scheduler", kind="sometimes")}
    declared = set().union(*(set(b.goals_out_of_reach) for b in SCHEDULER_BOUNDS))

    assert set() == declared - goals


def test_every_edge_label_is_the_call_that_makes_its_transition() -> None:
    """Applying each edge's operation to its source state gives its target state."""
    exploration = _explored("lanes")

    wrong = [
        (source, target, op)
        for source, target, op in exploration.graph.edges(keys=True)
        if node_of(apply(exploration.states[source].state, op)[0])
        != exploration.states[target]
    ]

    assert [] == wrong


def test_request_ids_follow_scheduling_order_as_the_machine_names_them() -> None:
    """The next request's id counts the requests scheduled so far, as the machine's."""
    exploration = _explored("lanes")
    deepest = max(exploration.graph.nodes, key=lambda n: len(exploration.ops_to(n)))

    ids = [op.request_id for op in exploration.ops_to(deepest) if type(op) is Schedule]
    machine = SchedulerMachine()
    expected = [machine._new_id() for _ in ids]

    assert expected == ids


def _waiting_due_in(offset_ms: int) -> SchedulerState:
    """Worker 0 busy at t = 5 ms; a request pinned to it waits, due `offset_ms` on."""
    model = ModelScheduler(SchedulerConfig((0, 0)))
    model.advance(5)
    model.schedule(Schedule("r000", 0, pinned=True, isl_tokens=1))
    model.schedule(Schedule("r001", 0, pinned=True, isl_tokens=1, due_ms=5 + offset_ms))
    return model.state


def test_clock_steps_land_before_on_and_after_each_waiting_due_time() -> None:
    """The alphabet's advances stop 1 ms before, on and 1 ms after a due time."""
    bound = scheduler_bound_named("lanes")

    steps = advance_steps_ms(bound, _waiting_due_in(3))

    assert [1, 2, 3, 4] == steps


def test_a_due_time_one_ms_ahead_never_asks_for_a_negative_step() -> None:
    """One ms before a due time one ms ahead is no step at all (0), never -1."""
    bound = scheduler_bound_named("lanes")

    steps = advance_steps_ms(bound, _waiting_due_in(1))

    assert [0, 1, 2] == steps


def test_a_due_time_in_the_past_is_asked_for_only_once_the_clock_has_moved() -> None:
    """Due one ms ago is offered from t = 1 ms, never as an instant before 0."""
    bound = scheduler_bound_named("lanes")
    root = node_of(ModelScheduler(bound.config).state)
    later = ModelScheduler(bound.config)
    later.advance(1)

    def dues(node: SchedulerNode) -> set[int | None]:
        return {op.due_ms for op in bound_ops(bound, node) if type(op) is Schedule}

    assert {None, 0, 1, 2} == dues(root)
    assert {None, 0, 1, 2, 3} == dues(node_of(later.state))


def test_the_alphabet_frees_every_booking_and_one_id_without_one() -> None:
    """Frees name each booked id, then the first id holding none (a refusal)."""
    bound = scheduler_bound_named("lanes")
    state = _waiting_due_in(3)

    frees = [op for op in bound_ops(bound, node_of(state)) if type(op) is Free]
    cancels = [op for op in bound_ops(bound, node_of(state)) if type(op) is Cancel]

    assert [Free("r000"), Free("r001")] == frees
    assert [Cancel("r000"), Cancel("r001")] == cancels


def test_reaching_states_max_raises_instead_of_truncating() -> None:
    """A scheduler bound larger than its cap is refused, not cut short."""
    small = replace(scheduler_bound_named("lanes"), states_max=100)

    with pytest.raises(ExplorationCapError, match="states_max=100"):
        explore_scheduler(small)


# ---- canaries --------------------------------------------------------------------


def test_every_scheduler_canary_has_a_pinned_shortest_violation() -> None:
    """The table of shortest violations names every scheduler canary."""
    assert sorted(CANARIES) == sorted(SHORTEST)


@pytest.mark.parametrize("canary", sorted(SHORTEST))
def test_exploring_a_scheduler_canary_finds_its_shortest_violation(
    canary: str,
) -> None:
    """The broken model violates its property at the pinned length, none sooner."""
    prop, steps = SHORTEST[canary]

    example = shortest_scheduler_counterexample(canary, CI_BOUNDS)
    shorter = [replace(b, depth_max=steps - 1) for b in CI_BOUNDS]

    assert example is not None
    assert (prop, steps) == (example.prop, len(example.ops))
    assert shortest_scheduler_counterexample(canary, shorter) is None


@pytest.mark.parametrize(
    "canary",
    [
        "cancelled_stays_counted",
        "due_off_by_one",
        "lane_never_rechecked",
    ],
)
def test_a_scheduler_canarys_violations_all_meet_their_antecedents(
    canary: str,
) -> None:
    """Where a broken scheduler first violates a property, its antecedent held."""
    exploration = explore_scheduler(
        scheduler_bound_named("lanes"),
        canary_model(canary),
        stop_at_first_violation=True,
    )

    assert exploration.violations
    assert [] == exploration.misdeclared


@pytest.mark.parametrize("canary", sorted(SHORTEST))
def test_a_canary_counterexample_is_a_trace_that_diverges_only_on_the_canary(
    canary: str, tmp_path: Path
) -> None:
    """The written trace agrees on the model and fails on the canary."""
    example = shortest_scheduler_counterexample(canary, CI_BOUNDS)
    assert example is not None
    path = save(example.trace(), tmp_path / "trace.json")
    quiet = Console(file=io.StringIO())

    on_model = replay_main([str(path), "--against", "model"], console=quiet)
    on_canary = replay_main([str(path), "--canary", canary], console=quiet)

    assert list(example.ops) == list(load(path).ops)
    assert (0, 1) == (on_model, on_canary)


@pytest.mark.crate
@pytest.mark.parametrize("canary", sorted(SHORTEST))
def test_the_crate_passes_each_canary_counterexample(
    canary: str, tmp_path: Path
) -> None:
    """The canaries' shortest counterexamples replay on the crate without a failure."""
    example = shortest_scheduler_counterexample(canary, CI_BOUNDS)
    assert example is not None
    path = save(example.trace(), tmp_path / "trace.json")

    on_crate = replay_main([str(path)], console=Console(file=io.StringIO()))

    assert 0 == on_crate


# ---- replay against the crate ----------------------------------------------------


@pytest.mark.crate
def test_the_crate_agrees_on_every_edge_of_the_lanes_bound() -> None:
    """Edge-covering traces of `lanes` replay on the crate without a disagreement."""
    exploration = _explored("lanes")

    result = replay_exploration(exploration, KIND.crate_factory(), "crate")

    assert [] == list(result.failures)
    assert exploration.graph.number_of_edges() == result.edges
    assert result.steps >= result.edges


@pytest.mark.slow
@pytest.mark.crate
@pytest.mark.parametrize("name", ["handoff"])
def test_the_crate_agrees_on_every_edge_of_a_larger_bound(name: str) -> None:
    """Edge-covering traces of a larger bound replay on the crate alike."""
    _nightly_only()

    result = replay_exploration(_explored(name), KIND.crate_factory(), "crate")

    assert [] == list(result.failures)


@pytest.mark.slow
@pytest.mark.crate
def test_the_crate_agrees_on_every_edge_of_the_two_classes_bound() -> None:
    """Edge-covering traces of `two_classes` (classes, leavers) replay on the crate.

    5,629 edges in 14,433 steps, about 17 s: `.ci/run` and nightly, not the pr gate.
    """
    exploration = _explored("two_classes")

    result = replay_exploration(exploration, KIND.crate_factory(), "crate")

    assert [] == list(result.failures)
    assert exploration.graph.number_of_edges() == result.edges


def test_a_replay_disagreement_is_written_as_a_trace_that_fails_again(
    tmp_path: Path,
) -> None:
    """Replayed on a canary, failing paths become trace files that fail on it too."""
    factory = CANARIES["lane_never_rechecked"]

    result = replay_exploration(_explored("lanes"), factory, "canary", tmp_path)

    assert result.failures
    for failure in result.failures:
        assert failure.trace is not None
        quiet = Console(file=io.StringIO())
        argv = [str(failure.trace), "--canary", "lane_never_rechecked"]
        assert 1 == replay_main(argv, console=quiet)


# ---- coverage --------------------------------------------------------------------


def test_every_scheduler_machine_rule_has_a_row_in_the_rule_table() -> None:
    """The rule table lists every scheduler machine rule, plus teardown."""
    expected = sorted([*rules_of(SchedulerMachine), "teardown"])

    assert expected == sorted(SCHEDULER_RULE_OP_TYPES)


def test_scheduler_coverage_counts_exactly_the_states_and_edges_a_run_took() -> None:
    """A run's steps cover their nodes and edges once each; one outside, none."""
    exploration = _explored("lanes")
    program: list[tuple[str, SchedulerOp]] = [
        ("schedule", Schedule("r000", 0, pinned=True, isl_tokens=1)),
        ("schedule", Schedule("r001", 0, pinned=True, isl_tokens=1)),
        ("free", Free("r000")),  # dispatches r001
        ("advance", Advance(7)),  # 7 ms: outside the alphabet
    ]
    model = ModelScheduler(exploration.bound.config)
    steps = []
    for rule, op in program:
        before = node_of(model.state)
        outcome_of(model, op)
        steps.append(MachineStep(rule, before, op, node_of(model.state)))
    run = MachineRun("synthetic", 1, tuple(steps), "scheduler", SCHEDULER_RULE_OP_TYPES)

    coverage = measure(exploration, run)

    assert (4, 3) == (coverage.states.covered, coverage.edges.covered)
    assert 3 == coverage.steps_in_graph
    assert (1, 0) == (coverage.rules["free"].covered, coverage.rules["advance"].covered)


def test_every_step_of_the_restricted_scheduler_machine_is_an_edge() -> None:
    """The restricted machine stays inside the bound: all its steps are edges."""
    exploration = _explored("lanes")

    coverage = measure(
        exploration, run_restricted_scheduler_machine(exploration.bound, "dev")
    )

    assert coverage.steps == coverage.steps_in_graph
    assert 0 < coverage.steps


def test_scheduler_coverage_summary_is_plain_data_with_exact_totals() -> None:
    """Each summary row's totals are the bound's pinned node and edge counts."""
    pinned = read_counts("scheduler")["lanes"]

    rows = explore_cli.coverage_summary(("lanes",), profile="dev", subject="scheduler")

    assert ["scheduler", "restricted"] == [row["machine"] for row in rows]
    for row in rows:
        assert "scheduler" == row["subject"]
        assert pinned["states"] == row["states"]["total"]
        assert pinned["edges"] == row["edges"]["total"]
        assert 1 <= row["states"]["covered"] <= row["states"]["total"]  # the root
        assert json.loads(json.dumps(row)) == row
        stats.record_coverage(row)  # the gate's summary shows it


# ---- command line ----------------------------------------------------------------


def test_the_command_checks_a_scheduler_ci_bound() -> None:
    """`python -m ci.explore --subject scheduler --bound lanes` passes."""
    assert 0 == explore_cli.main(["--subject", "scheduler", "--bound", "lanes"])


def test_the_scheduler_command_fails_when_a_count_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bound whose counts differ from the pinned file makes the command fail."""
    pinned = read_counts("scheduler")
    pinned["lanes"] = {**pinned["lanes"], "states": pinned["lanes"]["states"] + 1}
    monkeypatch.setattr(explore_cli, "read_counts", lambda _subject: pinned)

    assert 1 == explore_cli.main(["--subject", "scheduler", "--bound", "lanes"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--subject", "scheduler", "--bound", "pair"], "no scheduler bound named"),
        (["--subject", "scheduler", "--bound", ""], "no scheduler bound named ''"),
        (["--subject", "scheduler", "--picture"], "--picture: applies to --subject"),
        (["--subject", "scheduler", "--replay", "--out", "x"], "--out: the replay"),
    ],
)
def test_bad_scheduler_arguments_exit_two_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A usage error is one `ci.explore: error:` line on stderr and status 2."""
    status = explore_cli.main(argv)

    err = capsys.readouterr().err
    assert 2 == status
    assert 1 == len(err.splitlines())
    assert err.startswith("ci.explore: error: ")
    assert message in err


def test_the_module_refuses_an_unknown_scheduler_bound_in_one_line() -> None:
    """`python -m ci.explore --subject scheduler --bound x` exits 2, no traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "ci.explore", "--subject", "scheduler", "--bound", "x"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    assert 2 == result.returncode
    assert 1 == len(result.stderr.splitlines())
    assert "no scheduler bound named 'x'" in result.stderr
