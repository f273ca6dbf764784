"""The bounded explorer of the policy queue: sizes, goals, canonical states, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest

import ci.explore.command as explore_cli
from ci import subjects
from ci.canaries.queue import CANARIES as QUEUE_CANARIES
from ci.explore.affinity_bounds import BOUNDS
from ci.explore.command import read_counts
from ci.explore.coverage import (
    MachineRun,
    MachineStep,
    measure,
)
from ci.explore.paths import edge_cover_paths
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
from ci.profiles import selected_profile
from model.queue.api import call as apply_to_queue
from model.queue.ops import Enqueue, PopNext, QueueOp, QueueOutcome, Retain
from model.queue.table import ModelPolicyQueue, QueueState
from model.queue.types import ClassConfig, Dispatch, QueuedItem
from properties import properties
from stateful import stats
from stateful.machine import rules_of
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import ProfileSpec


def _nightly_only() -> None:
    if selected_profile() != "nightly":
        pytest.skip("larger bound: runs under the nightly settings")


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


def test_every_explorable_subject_has_its_own_section_of_counts() -> None:
    """The pinned file keeps each subject's rows under its name, the queue's too."""
    raw = json.loads(explore_cli.COUNTS_PATH.read_text())

    assert [s.name for s in subjects.explorable()] == sorted(raw)
    assert sorted(b.name for b in BOUNDS) == sorted(raw["affinity"])
    assert sorted(b.name for b in QUEUE_BOUNDS) == sorted(read_counts("queue"))
    assert raw["queue"] == read_counts("queue")


def test_writing_queue_counts_keeps_every_affinity_row(tmp_path: Path) -> None:
    """`write_counts` rewrites the queue section and leaves the affinity rows."""
    path = tmp_path / "state_counts.json"
    path.write_text(
        json.dumps({"affinity": {"core": {"states": 1}}, "queue": {"old": {}}})
    )

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
    expected = sorted([*rules_of(QueueMachine), "teardown"])

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
        (["--coverage", "--settings", "weekly"], "argument --settings: invalid choice"),
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
