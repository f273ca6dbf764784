"""The bounded explorer: pinned sizes, properties, goals, replay, counterexamples."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest
from rich.console import Console

import ci.explore.command as explore_cli
from ci.canaries.affinity import MODEL_CANARIES
from ci.explore import affinity_graph, affinity_replay
from ci.explore.affinity_bounds import BOUNDS, CI_BOUNDS, bound_named
from ci.explore.affinity_coverage import RULE_OP_TYPES, run_restricted_machine
from ci.explore.affinity_graph import (
    Exploration,
    bound_ops,
    clock_instants,
    explore,
    op_sort_key,
)
from ci.explore.affinity_picture import to_dot, to_svg
from ci.explore.affinity_replay import (
    hypothesis_shrunk_steps,
    replay_paths,
    shortest_counterexample,
)
from ci.explore.command import read_counts
from ci.explore.coverage import MachineRun, MachineStep, measure
from ci.explore.paths import edge_cover_paths
from ci.explore.search import ExplorationCapError
from ci.profiles import selected_profile
from ci.replay.command import main as replay_main
from ci.replay.trace import load, save
from model.affinity.ops import Acquire, Advance, Commit, Op, Query, Release, outcome_of
from model.affinity.table import CLOCK_NS_MAX, Binding, ModelAffinity
from model.affinity.types import SECOND_NS, Target
from properties import Step, get, properties
from stateful import stats
from stateful.affinity_machine import AffinityMachine
from stateful.machine import rules_of

NIGHTLY_BOUNDS = tuple(b.name for b in BOUNDS if b.name not in CI_BOUNDS)
SHORTEST = {"leaky_release_model": 3, "off_by_one_expiry_model": 4}
"""BFS-shortest counterexample lengths over the declared bounds."""
FIRST_VIOLATED_IN = {
    "leaky_release_model": "picture",
    "off_by_one_expiry_model": "replica",
}
"""A small bound in which each broken model violates a property."""


def _nightly_only() -> None:
    if selected_profile() != "nightly":
        pytest.skip("larger bound: runs under the nightly settings")


@cache
def _explored(name: str) -> Exploration:
    """Each bound is enumerated once per test session (the graph is not mutated)."""
    return explore(bound_named(name))


def _leased_binding_state() -> ModelAffinity:
    model = ModelAffinity(bound_named("core").config)
    model.advance_clock(1)
    init = model.try_acquire("a", None)
    model.commit(init.handle, Target(1))  # type: ignore[union-attr]
    return model


# ---- sizes, properties and goals -------------------------------------------


@pytest.mark.parametrize("name", CI_BOUNDS)
def test_a_ci_bound_has_the_pinned_state_edge_and_depth_counts(name: str) -> None:
    """Enumerating the bound gives the counts in ci/explore/state_counts.json."""
    expected = read_counts()[name]

    actual = _explored(name).counts()

    assert expected == actual


@pytest.mark.slow
@pytest.mark.parametrize("name", NIGHTLY_BOUNDS)
def test_a_nightly_bound_has_the_pinned_state_edge_and_depth_counts(name: str) -> None:
    """Enumerating a larger bound gives the counts in ci/explore/state_counts.json."""
    _nightly_only()
    expected = read_counts()[name]

    actual = _explored(name).counts()

    assert expected == actual


def test_every_declared_bound_has_a_row_of_pinned_counts() -> None:
    """ci/explore/state_counts.json pins exactly the declared bounds."""
    expected = sorted(b.name for b in BOUNDS)

    actual = sorted(read_counts())

    assert expected == actual


@pytest.mark.parametrize("name", CI_BOUNDS)
def test_no_always_property_is_violated_within_a_ci_bound(name: str) -> None:
    """Every always property holds on every state and edge of the bound."""
    actual = _explored(name).violations

    assert [] == actual


def test_non_vacuous_counts_match_a_recount_over_the_graph() -> None:
    """Per always property: the states or edges where its antecedent held, recounted."""
    exploration = _explored("picture")
    graph, states = exploration.graph, exploration.states
    edges = [
        Step(states[u], op, data["outcome"], states[v])
        for u, v, op, data in graph.edges(keys=True, data=True)
    ]
    recount: dict[str, tuple[int, int]] = {}
    for prop in properties(subject="affinity", kind="always"):
        values = states if prop.over == "state" else edges
        assert prop.antecedent is not None
        hits = [v for v in values if prop.antecedent.predicate(v)]
        boundary = prop.boundary
        at = 0 if boundary is None else sum(1 for v in hits if boundary.predicate(v))
        recount[prop.name] = (len(hits), at)

    actual = {
        name: (counts["non_vacuous"], counts["boundary"])
        for name, counts in exploration.exercise().items()
    }

    assert recount == actual
    assert actual["a_rejected_clock_move_changes_nothing"][0] > 0


def test_the_command_writes_per_property_counts_as_json(tmp_path: Path) -> None:
    """`--json FILE`: per bound, its counts and each property's non-vacuous checks."""
    out = tmp_path / "explore.json"

    assert 0 == explore_cli.main(["--bound", "picture", "--json", str(out)])

    document = json.loads(out.read_text())
    picture = document["bounds"]["picture"]
    assert "affinity" == document["subject"]
    assert read_counts()["picture"]["states"] == picture["states"]
    assert _explored("picture").exercise() == picture["properties"]
    assert "a_replica_update_keeps_the_leases" in picture["never_non_vacuous"]


@pytest.mark.parametrize("name", CI_BOUNDS)
def test_a_ci_bound_reaches_exactly_the_goals_it_does_not_rule_out(name: str) -> None:
    """Each sometimes goal is reached unless declared out of reach, and only then."""
    missing, stale = _explored(name).goal_mismatch()

    assert [] == missing
    assert [] == stale


@pytest.mark.slow
@pytest.mark.parametrize("name", NIGHTLY_BOUNDS)
def test_a_nightly_bound_is_clean_and_reaches_its_goals(name: str) -> None:
    """A larger bound violates nothing and reaches the goals it does not rule out."""
    _nightly_only()
    exploration = _explored(name)

    assert [] == exploration.violations
    assert ([], []) == exploration.goal_mismatch()


def test_every_goal_is_within_reach_of_some_bound() -> None:
    """No sometimes goal is declared out of reach in every bound."""
    out_everywhere = set.intersection(*(set(b.goals_out_of_reach) for b in BOUNDS))

    assert set() == out_everywhere


def test_goals_declared_out_of_reach_are_registered_goals() -> None:
    """Every name a bound rules out is a registered sometimes property."""
    goals = {p.name for p in properties(subject="affinity", kind="sometimes")}
    declared = set().union(*(set(b.goals_out_of_reach) for b in BOUNDS))

    assert set() == declared - goals


# ---- enumeration ------------------------------------------------------------


def test_successors_are_enumerated_in_sorted_order() -> None:
    """The operations tried from a state come sorted by type, then by field."""
    bound = bound_named("core")
    state = _leased_binding_state().state()

    ops = bound_ops(bound, state)

    assert sorted(ops, key=op_sort_key) == ops
    assert len(set(ops)) == len(ops)


def test_exploring_twice_numbers_the_states_identically() -> None:
    """Breadth-first discovery order is deterministic."""
    bound = bound_named("picture")

    first, second = explore(bound), explore(bound)

    assert first.states == second.states
    assert list(first.graph.edges(keys=True)) == list(second.graph.edges(keys=True))


def test_clock_advances_straddle_each_deadline_and_the_next_reaper_tick() -> None:
    """Advances go around deadlines and the next tick, 1 ns back, and overflow."""
    state = _leased_binding_state().state()
    deadline_ns = next(
        e.deadline_ns for _, e in state.entries if isinstance(e, Binding)
    )

    actual = clock_instants(state)

    expected = {
        0,  # one nanosecond backwards from now = 1
        1,  # now
        2,  # now + 1
        SECOND_NS - 1,
        SECOND_NS,
        SECOND_NS + 1,  # the reaper tick at 1 s
        deadline_ns - 1,
        deadline_ns,
        deadline_ns + 1,
        CLOCK_NS_MAX + 1,
        2**64,
    }
    assert sorted(expected) == actual


def test_reaching_states_max_raises_instead_of_truncating() -> None:
    """A bound whose graph outgrows states_max is refused with ExplorationCapError."""
    bound = replace(bound_named("picture"), states_max=10)

    with pytest.raises(ExplorationCapError, match="states_max=10"):
        explore(bound)


def test_the_horizon_counts_the_states_left_unexpanded() -> None:
    """horizon_states is the number of nodes at depth_max, which have no out-edges."""
    exploration = _explored("picture")
    at_horizon = [
        n
        for n in exploration.graph.nodes
        if exploration.graph.nodes[n]["depth"] == exploration.bound.depth_max
    ]

    assert len(at_horizon) == exploration.horizon_states
    assert 0 == sum(exploration.graph.out_degree(n) for n in at_horizon)


def test_every_edge_label_reproduces_its_transition() -> None:
    """Applying an edge's operation to its source state gives its outcome and target."""
    exploration = _explored("picture")

    for source, target, op, outcome in exploration.graph.edges(
        keys=True, data="outcome"
    ):
        model = ModelAffinity.from_state(exploration.states[source])
        assert outcome == outcome_of(model, op)
        model.drain_published()
        assert exploration.states[target] == model.state()


# ---- edge-covering replay ------------------------------------------------------


def test_covering_paths_start_at_the_root_and_take_every_edge() -> None:
    """Each path is a connected walk from node 0; together they take every edge."""
    exploration = _explored("core")

    paths = edge_cover_paths(exploration)

    assert {0} == {path[0][0] for path in paths}
    for path in paths:
        assert all(a[1] == b[0] for a, b in pairwise(path))
    taken = {edge for path in paths for edge in path}
    assert set(exploration.graph.edges(keys=True)) == taken


@pytest.mark.crate
@pytest.mark.parametrize("name", CI_BOUNDS)
def test_the_crate_agrees_on_every_edge_of_a_ci_bound(name: str) -> None:
    """Replaying edge-covering paths through the harness finds no disagreement."""
    from impl.adapter import CrateAffinity  # noqa: PLC0415 - crate tests only

    exploration = _explored(name)

    result = replay_paths(exploration, edge_cover_paths(exploration), CrateAffinity)

    print(f"{name}: {result.paths} paths, {result.steps} steps, {result.edges} edges")
    assert () == result.failures


@pytest.mark.slow
@pytest.mark.crate
@pytest.mark.parametrize("name", NIGHTLY_BOUNDS)
def test_the_crate_agrees_on_every_edge_of_a_nightly_bound(name: str) -> None:
    """Replaying a larger bound's edge-covering paths finds no disagreement."""
    _nightly_only()

    result = affinity_replay.replay_bound(bound_named(name))

    assert () == result.failures


# ---- counterexamples --------------------------------------------------------


@pytest.mark.parametrize("canary", sorted(MODEL_CANARIES))
def test_a_broken_models_violations_all_meet_their_antecedents(canary: str) -> None:
    """Where a broken model first violates a property, its antecedent held there."""
    bound = bound_named(FIRST_VIOLATED_IN[canary])

    exploration = explore(bound, MODEL_CANARIES[canary], stop_at_first_violation=True)

    assert exploration.violations
    assert [] == exploration.misdeclared


@pytest.mark.parametrize("canary", sorted(MODEL_CANARIES))
def test_a_broken_model_has_a_shortest_counterexample(canary: str) -> None:
    """BFS finds the canary's violation at the pinned length, and none shorter."""
    model_type = MODEL_CANARIES[canary]

    example = shortest_counterexample(canary, model_type, BOUNDS)

    assert example is not None
    assert SHORTEST[canary] == len(example.ops)
    shorter = [replace(b, depth_max=len(example.ops) - 1) for b in BOUNDS]
    assert shortest_counterexample(canary, model_type, shorter) is None


@pytest.mark.parametrize("canary", sorted(MODEL_CANARIES))
def test_a_counterexample_trace_replays_to_the_violation(
    canary: str, tmp_path: Path
) -> None:
    """The written trace loads as the same ops, which violate the property."""
    model_type = MODEL_CANARIES[canary]
    example = shortest_counterexample(canary, model_type, BOUNDS)
    assert example is not None

    trace = load(save(example.trace(), tmp_path / "trace.json"))
    ops = list(trace.ops)
    model = model_type(trace.setup.config)
    steps = []
    for op in ops:
        before = model.state()
        outcome = outcome_of(model, op)
        model.drain_published()
        steps.append(Step(before, op, outcome, model.state()))

    assert list(example.ops) == ops
    prop = get(example.prop)
    subject = steps[-1] if prop.over == "step" else steps[-1].after
    assert not prop.predicate(subject)


@pytest.mark.parametrize("canary", sorted(MODEL_CANARIES))
def test_ci_replay_accepts_a_counterexample_and_it_diverges_on_the_canary(
    canary: str, tmp_path: Path
) -> None:
    """`python -m ci.replay` agrees on the model and diverges on the canary."""
    example = shortest_counterexample(canary, MODEL_CANARIES[canary], BOUNDS)
    assert example is not None
    path = save(example.trace(), tmp_path / "trace.json")
    quiet = Console(file=io.StringIO())

    on_model = replay_main([str(path), "--against", "model"], console=quiet)
    on_canary = replay_main([str(path), "--canary", canary], console=quiet)

    assert 0 == on_model
    assert 1 == on_canary


@pytest.mark.parametrize("canary", sorted(MODEL_CANARIES))
def test_the_machine_reports_a_program_length_for_each_model_canary(
    canary: str,
) -> None:
    """Hypothesis catches the canary; its shrunk program has at least one step."""
    steps = hypothesis_shrunk_steps(canary, MODEL_CANARIES[canary])

    print(f"{canary}: Hypothesis {steps} steps, BFS {SHORTEST[canary]}")
    assert steps >= 1


# ---- coverage ---------------------------------------------------------------


def test_every_machine_rule_has_a_row_in_the_rule_table() -> None:
    """RULE_OP_TYPES names exactly the affinity machine's rules."""
    expected = rules_of(AffinityMachine)

    actual = sorted(RULE_OP_TYPES)

    assert expected == actual


def test_coverage_counts_exactly_the_states_and_edges_a_run_took() -> None:
    """A run along one path covers its states and edges, and a step outside nothing."""
    exploration = _explored("core")
    config = exploration.bound.config
    program: list[tuple[str, Op]] = [
        ("acquire", Acquire("a", None)),
        ("commit", Commit(1, Target(1))),
        ("release", Release(2)),
        ("advance", Advance(7)),  # t=7 is not a boundary instant: outside the bound
    ]
    model, steps = ModelAffinity(config), []
    for rule, op in program:
        before = model.state()
        outcome_of(model, op)
        model.drain_published()
        steps.append(MachineStep(rule, before, op, model.state()))
    run = MachineRun("synthetic", 1, tuple(steps), "affinity", RULE_OP_TYPES)

    coverage = measure(exploration, run)

    assert 4 == coverage.states.covered  # the root and the three states of the path
    assert exploration.graph.number_of_nodes() == coverage.states.total
    assert 3 == coverage.edges.covered
    assert 3 == coverage.steps_in_graph
    release_edges = sum(
        1 for _, _, op in exploration.graph.edges(keys=True) if isinstance(op, Release)
    )
    assert (1, release_edges) == (
        coverage.rules["release"].covered,
        coverage.rules["release"].total,
    )
    assert 0 == coverage.rules["query"].covered


def test_every_step_of_the_restricted_machine_is_an_edge_of_its_bound() -> None:
    """The restricted machine stays inside the bound: all its steps are edges."""
    exploration = _explored("picture")

    run = run_restricted_machine(exploration.bound, "dev")
    coverage = measure(exploration, run)

    assert coverage.steps == coverage.steps_in_graph
    assert sorted(coverage.rules) == sorted(
        ["acquire", "advance", "commit", "query", "release"]
    )


def test_coverage_summary_is_plain_data_with_exact_totals() -> None:
    """Each summary row's totals are the bound's node and edge counts."""
    pinned = read_counts()["picture"]

    rows = explore_cli.coverage_summary(("picture",), profile="dev")

    assert ["affinity", "restricted"] == [row["machine"] for row in rows]
    for row in rows:
        assert pinned["states"] == row["states"]["total"]
        assert pinned["edges"] == row["edges"]["total"]
        assert 1 <= row["states"]["covered"] <= row["states"]["total"]  # the root
        assert row["edges"]["covered"] <= row["edges"]["total"]
        assert json.loads(json.dumps(row)) == row
        stats.record_coverage(row)  # the gate's summary shows it


# ---- picture and command line -------------------------------------------------


def test_the_picture_marks_covered_and_uncovered_edges_apart() -> None:
    """DOT draws taken edges solid green, the rest dashed; the SVG is valid XML."""
    exploration = _explored("picture")
    taken = {next(iter(exploration.graph.edges(keys=True)))}

    dot = to_dot(exploration, taken, "note")
    svg = to_svg(exploration, taken, "note")

    edge_lines = [line for line in dot.splitlines() if " -> " in line]
    assert exploration.graph.number_of_edges() == len(edge_lines)
    assert 1 == sum("style=dashed" not in line for line in edge_lines)
    root = ET.fromstring(svg)  # noqa: S314 - our own generated text, not untrusted
    assert "svg" == root.tag.rsplit("}", 1)[-1]


def test_the_committed_picture_files_exist_for_the_readme() -> None:
    """ci/explore/graphs holds the picture bound's DOT and SVG."""
    graphs = Path(explore_cli.GRAPHS_DIR)

    assert (graphs / "picture.dot").read_text().startswith("// Generated")
    root = ET.parse(graphs / "picture.svg").getroot()  # noqa: S314 - our own file
    assert "svg" == root.tag.rsplit("}", 1)[-1]


@pytest.mark.slow
def test_the_committed_picture_matches_a_regeneration() -> None:
    """Regenerating the picture (ci profile coverage) reproduces the committed files."""
    _nightly_only()
    graphs = Path(explore_cli.GRAPHS_DIR)

    dot, svg = affinity_replay.picture()

    assert (graphs / "picture.dot").read_text() == dot
    assert (graphs / "picture.svg").read_text() == svg


def test_the_command_exits_zero_when_counts_and_properties_hold() -> None:
    """`python -m ci.explore --bound picture` passes on the pinned counts."""
    assert 0 == explore_cli.main(["--bound", "picture"])


def test_the_command_fails_when_a_count_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A bound whose counts differ from the pinned file makes the command fail."""
    pinned = read_counts()
    pinned["picture"] = {**pinned["picture"], "states": pinned["picture"]["states"] + 1}
    monkeypatch.setattr(explore_cli, "read_counts", lambda _subject: pinned)

    assert 1 == explore_cli.main(["--bound", "picture"])


def test_the_command_fails_when_a_property_is_violated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exploring a broken model makes the command fail."""
    broken = MODEL_CANARIES["leaky_release_model"]
    monkeypatch.setattr(affinity_graph, "explore", lambda bound: explore(bound, broken))

    assert 1 == explore_cli.main(["--bound", "picture"])


def test_a_query_edge_never_changes_the_state() -> None:
    """Every Query edge of the core bound is a self-loop (reads change nothing)."""
    exploration = _explored("core")

    moved = [
        (source, target, op)
        for source, target, op in exploration.graph.edges(keys=True)
        if isinstance(op, Query) and source != target
    ]

    assert [] == moved
