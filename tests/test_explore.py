"""The bounded explorer: pinned sizes, properties, goals, replay, counterexamples."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from functools import cache
from itertools import pairwise
from pathlib import Path

import pytest
from rich.console import Console

import ci.explore.command as explore_cli
from ci.canaries.affinity import MODEL_CANARIES
from ci.canaries.queue import CANARIES as QUEUE_CANARIES
from ci.explore.command import BOUNDS, CI_BOUNDS, bound_named, read_counts
from ci.explore.coverage import (
    RULE_OP_TYPES,
    MachineRun,
    MachineStep,
    machine_rules,
    measure,
    run_restricted_machine,
)
from ci.explore.graph import (
    Exploration,
    bound_ops,
    clock_instants,
    explore,
    op_sort_key,
)
from ci.explore.paths import edge_cover_paths, replay_paths
from ci.explore.picture import to_dot, to_svg
from ci.explore.queue_coverage import (
    QUEUE_RULE_OP_TYPES,
    ConcreteQueue,
    run_restricted_queue_machine,
)
from ci.explore.queue_graph import (
    CI_QUEUE_BOUNDS,
    QUEUE_BOUNDS,
    WORKER,
    QueueExploration,
    QueueModel,
    canonical,
    canonical_op,
    payload_names,
    queue_bound_named,
    state_view,
)
from ci.explore.queue_graph import apply as apply_queue_op
from ci.explore.queue_graph import explore as explore_queue
from ci.explore.search import ExplorationCapError
from ci.explore.shrink import (
    hypothesis_shrunk_steps,
    shortest_counterexample,
    write_trace,
)
from ci.profiles import selected_profile
from ci.replay.command import main as replay_main
from ci.replay.trace import load
from model.affinity.ops import Acquire, Advance, Commit, Op, Query, Release, outcome_of
from model.affinity.table import CLOCK_NS_MAX, Binding, ModelAffinity
from model.affinity.types import SECOND_NS, Target
from model.queue.api import call as apply_to_queue
from model.queue.ops import Enqueue, PopNext, QueueOp, QueueOutcome, Retain
from model.queue.table import ModelPolicyQueue, QueueState
from model.queue.types import ClassConfig, Dispatch, QueuedItem
from properties import Step, get, properties
from stateful import stats
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import ProfileSpec

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
        pytest.skip("larger bound: runs under the nightly profile")


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


@pytest.mark.native
@pytest.mark.parametrize("name", CI_BOUNDS)
def test_the_crate_agrees_on_every_edge_of_a_ci_bound(name: str) -> None:
    """Replaying edge-covering paths through the harness finds no disagreement."""
    from impl.adapter import NativeAffinity  # noqa: PLC0415 - native tests only

    exploration = _explored(name)

    result = replay_paths(exploration, edge_cover_paths(exploration), NativeAffinity)

    print(f"{name}: {result.paths} paths, {result.steps} steps, {result.edges} edges")
    assert () == result.failures


@pytest.mark.slow
@pytest.mark.native
@pytest.mark.parametrize("name", NIGHTLY_BOUNDS)
def test_the_crate_agrees_on_every_edge_of_a_nightly_bound(name: str) -> None:
    """Replaying a larger bound's edge-covering paths finds no disagreement."""
    _nightly_only()

    result = explore_cli.replay_bound(bound_named(name))

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

    trace = load(write_trace(tmp_path / "trace.json", example))
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
    path = write_trace(tmp_path / "trace.json", example)
    quiet = Console(file=io.StringIO())

    on_model = replay_main([str(path), "--sut", "model"], console=quiet)
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
    expected = machine_rules()

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
    run = MachineRun(profile="synthetic", programs=1, steps=tuple(steps))

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

    dot, svg = explore_cli.picture()

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
    monkeypatch.setattr(explore_cli, "explore", lambda bound: explore(bound, broken))

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


# ---- the policy queue -----------------------------------------------------------

NIGHTLY_QUEUE_BOUNDS = tuple(
    b.name for b in QUEUE_BOUNDS if b.name not in CI_QUEUE_BOUNDS
)
QUEUE_SHORTEST = {
    "eager_recheck": ("a_pop_never_serves_a_blocked_lane", 3),
    "plain_rotation": ("model_class_stats_sum_their_entries", 2),
    "sticky_deficit": ("an_empty_class_holds_no_credit", 4),
}
"""A property each broken queue model violates, at its BFS-shortest length in
the `pair` bound (`no_carry` violates none: only the differential machine,
comparing pops with the reference, catches it)."""


@cache
def _explored_queue(name: str) -> QueueExploration:
    """Each queue bound is enumerated once per test session."""
    return explore_queue(queue_bound_named(name))


def _canary_model(name: str) -> QueueModel:
    """Build the broken queue model `name` from a profile's classes."""

    def build(configs: tuple[ClassConfig, ...]) -> ModelPolicyQueue:
        queue = QUEUE_CANARIES[name](ProfileSpec(configs, None, None, "fcfs"))
        assert isinstance(queue, ModelPolicyQueue)
        return queue

    return build


def _enqueue(class_index: int, payload: int, raw: int = 1) -> Enqueue:
    """An enqueue of the `pair` bound's alphabet (for `raw` of 1 or 4)."""
    return Enqueue(
        class_index=class_index,
        worker_count=1,
        raw_isl_tokens=raw,
        cached_tokens=0 if raw == 1 else 1,
        arrival_offset_secs=0.0,
        priority_jump=0.0,
        strict_priority=0,
        placement=None,
        payload=payload,
    )


@pytest.mark.parametrize("name", CI_QUEUE_BOUNDS)
def test_a_ci_queue_bound_has_the_pinned_state_and_edge_counts(name: str) -> None:
    """Enumerating the queue bound gives the counts under `queue` in the pinned file."""
    expected = read_counts("queue")[name]

    actual = _explored_queue(name).counts()

    assert expected == actual


@pytest.mark.slow
@pytest.mark.parametrize("name", NIGHTLY_QUEUE_BOUNDS)
def test_a_nightly_queue_bound_has_its_counts_and_is_closed_and_clean(
    name: str,
) -> None:
    """A larger queue bound has its pinned counts, closes, and violates nothing."""
    _nightly_only()
    exploration = _explored_queue(name)

    assert read_counts("queue")[name] == exploration.counts()
    assert 0 == exploration.horizon_states
    assert [] == exploration.violations
    assert ([], []) == exploration.goal_mismatch()


def test_the_queue_counts_have_their_own_section_beside_the_affinity_rows() -> None:
    """The pinned file keeps affinity rows at its top level and queue rows apart."""
    raw = json.loads(explore_cli.COUNTS_PATH.read_text())

    assert sorted([*(b.name for b in BOUNDS), "queue"]) == sorted(raw)
    assert sorted(b.name for b in QUEUE_BOUNDS) == sorted(read_counts("queue"))
    assert raw["queue"] == read_counts("queue")


def test_writing_queue_counts_keeps_every_affinity_row(tmp_path: Path) -> None:
    """`write_counts` rewrites the queue section and leaves the affinity rows."""
    path = tmp_path / "state_counts.json"
    path.write_text(json.dumps({"core": {"states": 1}, "queue": {"old": {}}}))

    explore_cli.write_counts([_explored_queue("pair")], path)

    assert {"states": 1} == read_counts("affinity", path)["core"]
    assert {"old": {}, "pair": _explored_queue("pair").counts()} == read_counts(
        "queue", path
    )


@pytest.mark.parametrize("name", CI_QUEUE_BOUNDS)
def test_a_ci_queue_bound_is_closed_clean_and_reaches_its_goals(name: str) -> None:
    """No state is left at the horizon, none violates a property, goals are met."""
    exploration = _explored_queue(name)

    assert 0 == exploration.horizon_states
    assert [] == exploration.violations
    assert ([], []) == exploration.goal_mismatch()


def test_queue_goals_declared_out_of_reach_are_registered_goals() -> None:
    """Every name a queue bound rules out is a registered queue goal."""
    goals = {p.name for p in properties(subject="queue", kind="sometimes")}
    declared = set().union(*(set(b.goals_out_of_reach) for b in QUEUE_BOUNDS))

    assert set() == declared - goals


def test_only_the_drained_queue_goes_without_state_properties() -> None:
    """Every node but the one drained node gets a view the state properties read."""
    states = _explored_queue("pair").states

    without_view = [n for n, state in enumerate(states) if state_view(state) is None]
    drained = [n for n, state in enumerate(states) if state.drained]

    assert 1 == len(drained)
    assert drained == without_view


@pytest.mark.parametrize("canary", sorted(QUEUE_SHORTEST))
def test_a_broken_queue_models_violations_all_meet_their_antecedents(
    canary: str,
) -> None:
    """Where a broken queue model first violates a property, its antecedent held."""
    bound = queue_bound_named("pair")

    exploration = explore_queue(
        bound, _canary_model(canary), stop_at_first_violation=True
    )

    assert exploration.violations
    assert [] == exploration.misdeclared


@pytest.mark.parametrize("canary", sorted(QUEUE_SHORTEST))
def test_exploring_a_broken_queue_model_finds_its_violation(canary: str) -> None:
    """The broken model violates its property at the pinned length, none sooner."""
    prop, steps = QUEUE_SHORTEST[canary]
    bound = queue_bound_named("pair")

    found = explore_queue(bound, _canary_model(canary), stop_at_first_violation=True)
    shorter = replace(bound, depth_max=steps - 1)
    sooner = explore_queue(shorter, _canary_model(canary), stop_at_first_violation=True)

    assert {steps} == {len(v.path) for v in found.violations}
    assert prop in {v.prop for v in found.violations}
    assert [] == sooner.violations


def _scrambled(state: QueueState) -> tuple[QueueState, dict[int, int]]:
    """`state` with payloads renamed out of order and sequences spread out."""
    names = {name: 50 - 7 * name for name in range(1, state.pending_count + 1)}
    classes = tuple(
        replace(
            cls,
            entries=tuple(
                replace(e, seq=3 * e.seq + 10, payload=names[e.payload])
                for e in cls.entries
            ),
        )
        for cls in state.classes
    )
    return replace(state, classes=classes, next_seq=3 * state.next_seq + 10), names


def _named_back(outcome: QueueOutcome, names: dict[int, int]) -> QueueOutcome:
    """An outcome's payloads renamed by `names` (drained listings re-sorted)."""
    value = outcome.value
    if isinstance(value, QueuedItem):
        return replace(outcome, value=replace(value, payload=names[value.payload]))
    if isinstance(value, tuple):
        items = [replace(item, payload=names[item.payload]) for item in value]
        return replace(outcome, value=tuple(sorted(items, key=QueuedItem.sort_key)))
    return outcome


def test_the_canonical_form_commutes_with_every_queue_transition() -> None:
    """From a renamed copy of any node, every edge's call leads to the same node."""
    exploration = _explored_queue("pair")
    fresh, unknown = 1_000, 999
    mismatches = []

    for source, target, op, outcome in exploration.graph.edges(
        keys=True, data="outcome"
    ):
        scrambled, names = _scrambled(exploration.states[source])
        concrete: QueueOp = op
        if isinstance(op, Enqueue):
            concrete = replace(op, payload=fresh)
        elif isinstance(op, Retain):
            dropped = frozenset(names[p] for p in op.drop)
            concrete = Retain(dropped or frozenset({unknown}))
        after, concrete_outcome = apply_queue_op(scrambled, concrete)
        back = {payload: name for name, payload in names.items()}
        back[fresh] = len(names) + 1
        if canonical(after) != exploration.states[target]:
            mismatches.append((source, op, "state"))
        if _named_back(concrete_outcome, back) != outcome:
            mismatches.append((source, op, "outcome"))

    assert [] == mismatches


def test_a_concrete_queue_walking_every_edge_lands_on_each_edge_s_node() -> None:
    """Unprojected runs along paths that take every edge meet each node and outcome.

    The concrete queue keeps its own payloads and sequences (never renamed), so
    a projection that lost anything a later call reads would leave the graph.
    """
    exploration = _explored_queue("pair")
    failures = []

    for path in edge_cover_paths(exploration):
        queue = ConcreteQueue(exploration.states[0])
        for source, target, op in path:
            names = payload_names(queue.state) or {}
            step, outcome = queue.apply("walk", op)
            expected = exploration.graph.edges[source, target, op]["outcome"]
            if step.after != exploration.states[target]:
                failures.append((source, op, "state"))
            if _named_back(outcome, names) != expected:
                failures.append((source, op, "outcome"))

    assert [] == failures


def test_canonical_names_follow_enqueue_order_and_drained_queues_merge() -> None:
    """Payloads become 1, 2, ... by age and sequences 0, 1, ...; drains are one node."""
    model = ModelPolicyQueue(queue_bound_named("pair").configs)
    for payload in (30, 10, 20):
        apply_to_queue(model, _enqueue(1, payload))
    model.pop_next(Dispatch())  # WSPT with equal costs: the oldest, payload 30
    left = model.state
    model.drain()

    node = canonical(left)

    assert node is not None
    assert [(0, 1), (1, 2)] == [(e.seq, e.payload) for e in node.classes[1].entries]
    assert [10, 20] == [e.payload for e in left.classes[1].entries]
    assert 2 == node.next_seq
    assert canonical(model.state) == canonical(replace(node, drained=True))


def test_a_state_whose_payloads_repeat_is_no_node() -> None:
    """Two queued entries with one payload have no canonical form (no node has it)."""
    model = ModelPolicyQueue(queue_bound_named("pair").configs)
    apply_to_queue(model, _enqueue(0, 5))
    apply_to_queue(model, _enqueue(1, 5))

    assert None is canonical(model.state)


# ---- queue coverage ---------------------------------------------------------------


def test_every_queue_machine_rule_has_a_row_in_the_queue_rule_table() -> None:
    """QUEUE_RULE_OP_TYPES names the queue machine's rules and its teardown."""
    expected = sorted([*machine_rules(QueueMachine), "teardown"])

    actual = sorted(QUEUE_RULE_OP_TYPES)

    assert expected == actual


def test_queue_coverage_counts_exactly_the_states_and_edges_a_run_took() -> None:
    """A run with its own payloads covers its path's nodes and edges, once each."""
    exploration = _explored_queue("pair")
    program: list[tuple[str, QueueOp]] = [
        ("enqueue", _enqueue(0, 7)),
        ("enqueue", replace(_enqueue(1, 8), placement=WORKER)),
        ("pop", PopNext(Dispatch())),  # serves payload 7; class c0 runs empty
        ("enqueue", _enqueue(0, 9)),
        ("retain", Retain(frozenset({9, 100}))),  # back to the state after the pop
        ("enqueue", _enqueue(0, 10, raw=7)),  # 7 tokens: outside the alphabet
    ]
    state, steps = exploration.states[0], []
    for rule, op in program:
        after, _ = apply_queue_op(state, op)
        named = canonical_op(state, op)
        steps.append(MachineStep(rule, canonical(state), named, canonical(after)))
        state = after
    run = MachineRun(
        "synthetic", 1, tuple(steps), "queue", rule_op_types=QUEUE_RULE_OP_TYPES
    )
    walked_nodes, walked_edges, node = {0}, set(), 0
    for step in steps[:-1]:
        edge = next(
            e for e in exploration.graph.out_edges(node, keys=True) if e[2] == step.op
        )
        walked_edges.add(edge)
        node = edge[1]
        walked_nodes.add(node)

    coverage = measure(exploration, run)

    assert 5 == len(walked_nodes)  # the retain revisits the node after the pop
    assert (len(walked_nodes), len(walked_edges)) == (
        coverage.states.covered,
        coverage.edges.covered,
    )
    assert walked_edges == coverage.covered_edges
    assert 5 == coverage.steps_in_graph
    assert exploration.graph.number_of_edges() == coverage.edges.total
    assert (1, 0) == (
        coverage.rules["retain"].covered,
        coverage.rules["enqueue_out_of_range"].covered,
    )


def test_every_step_of_the_restricted_queue_machine_is_an_edge() -> None:
    """The restricted queue machine stays inside the bound: all its steps are edges."""
    exploration = _explored_queue("pair")

    run = run_restricted_queue_machine(exploration.bound, "dev")
    coverage = measure(exploration, run)

    assert coverage.steps == coverage.steps_in_graph
    assert ["drain", "enqueue", "pop_next", "retain"] == sorted(coverage.rules)


def test_queue_coverage_summary_is_plain_data_with_exact_totals() -> None:
    """Each queue summary row's totals are the bound's pinned node and edge counts."""
    pinned = read_counts("queue")["pair"]

    rows = explore_cli.coverage_summary(("pair",), profile="dev", subject="queue")

    assert ["queue", "restricted"] == [row["machine"] for row in rows]
    for row in rows:
        assert "queue" == row["subject"]
        assert pinned["states"] == row["states"]["total"]
        assert pinned["edges"] == row["edges"]["total"]
        assert 1 <= row["states"]["covered"] <= row["states"]["total"]  # the root
        assert row["edges"]["covered"] <= row["edges"]["total"]
        assert json.loads(json.dumps(row)) == row
        stats.record_coverage(row)  # the gate's summary shows it


# ---- queue command line ---------------------------------------------------------


def test_the_command_checks_the_ci_queue_bound() -> None:
    """`python -m ci.explore --subject queue --bound pair` passes on pinned counts."""
    assert 0 == explore_cli.main(["--subject", "queue", "--bound", "pair"])


def test_the_queue_command_fails_when_a_count_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A queue bound whose counts differ from the pinned file makes the command fail."""
    pinned = read_counts("queue")
    pinned["pair"] = {**pinned["pair"], "edges": pinned["pair"]["edges"] - 1}
    monkeypatch.setattr(explore_cli, "read_counts", lambda _subject: pinned)

    assert 1 == explore_cli.main(["--subject", "queue", "--bound", "pair"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--subject", "queues"], "argument --subject: invalid choice: 'queues'"),
        (["--subject", "queue", "--bound", "core"], "no queue bound named 'core'"),
        (["--bound", "pair"], "no affinity bound named 'pair'"),
        (["--subject", "queue", "--replay"], "--replay: applies to --subject affinity"),
        (["--subject", "queue", "--picture"], "--picture: applies to --subject"),
        (["--coverage", "--bench"], "not allowed with argument"),
        (["--coverage", "--profile", "weekly"], "argument --profile: invalid choice"),
    ],
)
def test_bad_arguments_exit_two_with_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A usage error is one `ci.explore: error:` line on stderr and status 2."""
    status = explore_cli.main(argv)

    err = capsys.readouterr().err
    assert 2 == status
    assert 1 == len(err.splitlines())
    assert err.startswith("ci.explore: error: ")
    assert message in err


def test_the_module_answers_bad_arguments_with_one_line_and_status_two() -> None:
    """`python -m ci.explore` itself prints one line and exits 2, no traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "ci.explore", "--subject", "queue", "--bound", "x"],
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )

    assert 2 == result.returncode
    assert 1 == len(result.stderr.splitlines())
    assert "no queue bound named 'x'" in result.stderr
