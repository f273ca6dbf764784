"""Affinity replicas over a faulty network: the machine, its trace kind, its checks.

The machine runs two or three tables (the crate unless `VERIFY_AGAINST=model`),
each beside its own reference model, under the loaded settings's replica budget
(`ci.profiles.replica_network_settings`). The trace kind `replica` records,
replays and minimizes network programs; a canary's failure leaves an artifact
that `python -m ci.replay` replays.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console

from ci.canaries.replica import CANARIES
from ci.gate import GateRun, summarize
from ci.inputs import InputError
from ci.profiles import CANARY_SETTINGS, replica_network_settings
from ci.replay.artifacts import write_artifacts
from ci.replay.command import EXIT_AGREE, EXIT_DIVERGED, EXIT_USAGE, replay
from ci.replay.command import main as replay_main
from ci.replay.replica import KIND
from ci.replay.trace import Trace, load, loads, save
from model.affinity.ops import (
    Acquire,
    ApplyReplica,
    Commit,
    EnableReplication,
    Invalidate,
    NextVersion,
    Outcome,
    Release,
)
from model.affinity.table import ModelAffinity
from model.affinity.types import AffinityConfig, Mode, ReplicaOutcome, Target, Version
from model.replica.network import COUNTS, Network, NetworkState
from model.replica.ops import (
    AdvanceAll,
    Call,
    Deliver,
    Drop,
    Duplicate,
    Heal,
    HealAndFlush,
    Local,
    NetworkOp,
    NetworkOutcome,
    Partition,
)
from properties import get
from properties.registry import Step
from stateful import capture, stats
from stateful.replica_network import ReplicaNetworkMachine, run_network_and_check
from stateful.replica_subject import ReplicaSetup

CANARY = "writer_blind_replica_model"
SECOND_NS = 1_000_000_000
CONFIG = AffinityConfig(ttl_ns=10 * SECOND_NS, mode=Mode.HARD, max_entries=2)
SETUP = ReplicaSetup(CONFIG, 2, ("a", "b"))
STAMP = "20260101T000000.000000Z"

PROGRAM: tuple[NetworkOp, ...] = (
    Local(0, EnableReplication(1)),
    Local(1, EnableReplication(2)),
    Local(0, Acquire("a", None)),
    Local(0, Commit(1, Target(1, None))),
    Local(1, Acquire("a", None)),
    Local(1, Commit(1, Target(2, None))),
    Deliver(0, 1, 0),
    Duplicate(1, 0, 0),
    Deliver(1, 0, 0),
    Partition(0, 1),
    Local(0, Release(2)),
    Local(1, Release(2)),
    Heal(0, 1),
    Local(1, Acquire("b", None)),
    Local(1, Commit(3, Target(1, 0))),
    Drop(1, 0, 0),
    AdvanceAll(5 * SECOND_NS),
    HealAndFlush(),
)
"""Both replicas bind `a` at sequence 1; writer 2's update wins on both (a
duplicate refreshes it); a release during a partition is lost, an update of
`b` is dropped, and the flush re-publishes both. The canary lets writer 1's
update win on replica 1 (step 7)."""


def _record(ops: tuple[NetworkOp, ...] = PROGRAM) -> Trace:
    return KIND.record(SETUP, ops, "Two replicas bind one session at once.")


# ---- the machine -----------------------------------------------------------------


def test_the_replicas_agree_with_their_models_and_every_goal_is_reached() -> None:
    """Every call agrees on every replica, every rule runs, every goal is reached."""

    class ReplicaNetworkRun(ReplicaNetworkMachine):
        """The replica-network machine, with counters of its own."""

    machine = ReplicaNetworkRun
    machine.TestCase.settings = replica_network_settings()

    run_network_and_check(machine, "ReplicaNetworkMachine")

    counts = machine.network_counts
    assert 0 < counts["convergence_checks_non_vacuous"] <= counts["convergence_checks"]
    assert 0 < counts["dropped"]
    assert 0 < counts["duplicated"]
    assert 0 < counts["reordered"]
    assert 0 < counts["partitions"]


def test_the_canary_is_caught_and_leaves_a_replayable_artifact(tmp_path: Path) -> None:
    """The writer-blind canary fails `outcomes_agree`; its minimal trace replays."""
    machine = type(
        f"Canary_{CANARY}", (ReplicaNetworkMachine,), {"factory": CANARIES[CANARY]}
    )
    capture.reset()
    with pytest.raises(AssertionError) as raised:
        run_state_machine_as_test(
            machine, settings=settings(CANARY_SETTINGS, print_blob=True)
        )
    runs = capture.final_runs()
    capture.reset()

    (folder,) = write_artifacts(
        runs, "tests/test_x.py::test_replicas", raised.value, root=tmp_path, stamp=STAMP
    )
    meta = json.loads((folder / "meta.json").read_text())
    minimal = folder / "minimal.json"

    assert "replica" == meta["subject"]
    assert "outcomes_agree" == meta["failing_check"]["check"]
    assert meta["replay"].endswith(f" --canary {CANARY}")
    assert EXIT_DIVERGED == replay_main([str(folder), "--canary", CANARY])
    assert EXIT_DIVERGED == replay_main([str(minimal), "--canary", CANARY])
    assert meta["minimal_steps"] == len(load(minimal).steps)
    assert meta["minimal_steps"] <= meta["shrunk_steps"]
    assert EXIT_AGREE == replay_main([str(folder)])
    assert (folder / "repro.rs").read_text().startswith("// ")


# ---- the trace kind --------------------------------------------------------------


def test_a_network_trace_survives_a_round_trip() -> None:
    """Recorded, written and read back, the program and every answer are equal."""
    trace = _record()

    again = loads(trace.dumps())

    assert trace == again
    assert trace.dumps() == again.dumps()
    assert {type(op) for op in PROGRAM} == {type(op) for op in again.ops}


def test_the_program_replays_on_the_crate_and_the_canary_diverges_at_step_7() -> None:
    """The crate agrees at every step; the canary moves writer 2's binding."""
    trace = _record()

    clean = replay(trace, KIND.crate_factory(), "crate")
    broken = replay(trace, CANARIES[CANARY], CANARY)

    assert clean.first_failure is None
    assert broken.first_failure is not None
    assert 7 == broken.verdicts.index(broken.first_failure) + 1
    assert "outcomes_agree" == broken.first_failure.failed[0]


def test_the_flush_leaves_both_replicas_on_the_same_bindings() -> None:
    """After the flush both serve `a` at (1, 2) on worker 2 and the dropped `b`."""
    trace = _record()
    last = trace.steps[-1].model

    bindings = [dict(replica.entries)["a"] for replica in last.replicas]

    assert [(Target(2, None), Version(1, 2))] * 2 == [
        (entry.target, entry.version) for entry in bindings
    ]
    assert [(Target(1, 0), Version(2, 2))] * 2 == [
        (entry.target, entry.version)
        for entry in (dict(replica.entries)["b"] for replica in last.replicas)
    ]
    assert all(not link.in_flight and not link.cut for link in last.links)


def test_after_a_partition_the_greater_version_wins_not_the_later_binding() -> None:
    """A replica that used more sequences while cut off wins, though it bound first."""
    trace = _record(
        (
            Local(0, EnableReplication(1)),
            Local(1, EnableReplication(2)),
            Partition(0, 1),
            Local(0, NextVersion()),
            Local(0, NextVersion()),
            Local(0, NextVersion()),
            Local(0, Acquire("a", None)),
            Local(0, Commit(1, Target(1, None))),
            Local(0, Release(2)),
            AdvanceAll(SECOND_NS),
            Local(1, Acquire("a", None)),
            Local(1, Commit(1, Target(2, None))),
            Local(1, Release(2)),
            HealAndFlush(),
        )
    )

    bindings = [
        dict(replica.entries)["a"] for replica in trace.steps[-1].model.replicas
    ]

    assert [(Target(1, None), Version(4, 1))] * 2 == [
        (entry.target, entry.version) for entry in bindings
    ]
    assert replay(trace, KIND.crate_factory(), "crate").first_failure is None


def test_an_invalidation_is_not_replicated_and_a_flush_restores_the_binding() -> None:
    """Invalidating publishes nothing: the other replica re-sends the binding."""
    trace = _record(
        (
            Local(0, EnableReplication(1)),
            Local(1, EnableReplication(2)),
            Local(0, Acquire("a", None)),
            Local(0, Commit(1, Target(1, None))),
            HealAndFlush(),
            Local(0, Invalidate(2)),
            HealAndFlush(),
        )
    )
    invalidated, flushed = (trace.steps[index].model for index in (5, 6))

    assert "a" not in dict(invalidated.replicas[0].entries)
    assert "a" in dict(invalidated.replicas[1].entries)
    assert Version(1, 1) == dict(flushed.replicas[0].entries)["a"].version
    assert replay(trace, KIND.crate_factory(), "crate").first_failure is None


def test_a_stale_hold_sends_a_superseded_binding_to_a_third_replica() -> None:
    """A hold's commit publishes the hold's version, though a newer one replaced it."""
    ops = (
        Local(0, EnableReplication(1)),
        Local(1, EnableReplication(2)),
        Local(2, EnableReplication(3)),
        Local(0, Acquire("a", None)),
        Local(0, Commit(1, Target(1, None))),
        Local(0, Acquire("a", None)),
        Local(1, Acquire("a", None)),
        Local(1, Commit(1, Target(2, None))),
        Deliver(1, 0, 0),
        Drop(0, 2, 0),
        Drop(1, 2, 0),
        Local(0, Commit(3, Target(1, None))),
        Deliver(0, 2, 0),
    )
    setup = ReplicaSetup(CONFIG, 3, ("a", "b"))
    trace = KIND.record(setup, ops, "A stale hold's commit.")
    harness = KIND.harness(setup, KIND.crate_factory())
    reports = [harness.step(op) for op in ops]

    last = trace.steps[-1]
    served = [dict(replica.entries)["a"].target for replica in last.model.replicas]

    assert [ReplicaOutcome.INSERTED] == last.expected.outcomes()
    assert [Target(2, None), Target(2, None), Target(1, None)] == served
    assert 1 == harness.network.counts["superseded"]
    assert all(report.ok for report in reports)


def test_a_refused_network_step_is_recorded_as_refused() -> None:
    """Delivering a message that is not in flight makes no call."""
    trace = _record((*PROGRAM[:2], Deliver(0, 1, 3)))

    outcome = trace.steps[-1].expected

    assert () == outcome.calls
    assert "no message at position 3 on 0->1" == outcome.refused


def test_a_trace_with_one_replica_is_refused_naming_the_field() -> None:
    """`replicas` must be 2 or more."""
    document = json.loads(_record().dumps())
    document["replicas"] = 1

    with pytest.raises(InputError) as refused:
        loads(json.dumps(document))

    assert "replicas" in str(refused.value)


def test_a_network_trace_has_no_rust_export_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--emit rust` on a network trace is a one-line usage error."""
    path = save(_record(), tmp_path / "network.json")

    status = replay_main([str(path), "--emit", "rust"])

    assert EXIT_USAGE == status
    assert "replica traces have no Rust export" in capsys.readouterr().err


def test_minimizing_renumbers_each_replicas_handles() -> None:
    """Deleting replica 0's first acquisition keeps replica 1's handles intact."""
    trace = _record()
    keep = [index for index in range(len(trace.steps)) if index not in {2, 3}]

    program = [op for _, op in KIND.rebuild(trace, keep)]

    assert Local(1, Commit(1, Target(2, None))) in program
    assert Local(0, Release(2)) not in program


# ---- the catalogue's network properties can fail -------------------------------


def _state(*bindings: tuple[str, Target, Version] | None) -> NetworkState:
    """Two replicas, each holding at most one replica-applied binding."""
    tables = []
    for binding in bindings:
        table = ModelAffinity(CONFIG)
        if binding is not None:
            table.apply_replica_update(*binding)
        tables.append(table.state())
    return Network(len(tables)).state(tables)


def _flushed(after: NetworkState) -> bool:
    step = Step(after, HealAndFlush(), NetworkOutcome(), after)
    return bool(get("replicas_agree_after_a_heal_and_flush").predicate(step))


def test_two_replicas_on_different_versions_after_a_flush_disagree() -> None:
    """Convergence fails when two live copies differ, or one replica lacks it."""
    same = ("a", Target(1, None), Version(1, 1))
    other = ("a", Target(2, None), Version(1, 2))

    assert _flushed(_state(same, same))
    assert not _flushed(_state(same, other))
    assert not _flushed(_state(same, None))


def test_a_delivery_that_lowers_a_live_version_is_a_violation() -> None:
    """`a_delivery_never_lowers_a_live_version` fails on a lowered version."""
    newer = _state(("a", Target(1, None), Version(5, 1)), None)
    older = _state(("a", Target(1, None), Version(4, 1)), None)
    applied = ApplyReplica("a", Target(1, None), Version(4, 1))
    outcome = NetworkOutcome(
        (Call(0, applied, Outcome(value=ReplicaOutcome.REFRESHED)),)
    )
    step = Step(newer, Deliver(1, 0, 0), outcome, older)

    assert not get("a_delivery_never_lowers_a_live_version").predicate(step)
    assert get("a_delivery_never_lowers_a_live_version").predicate(
        Step(older, Deliver(1, 0, 0), outcome, newer)
    )


# ---- the gate's statistics -------------------------------------------------------


def test_the_gate_summary_prints_the_network_counts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `network` record becomes one row of the gate's replica-network table."""
    monkeypatch.setenv(stats.STATS_ENV, str(tmp_path))
    counts = dict.fromkeys(COUNTS, 0) | {"dropped": 307, "convergence_checks": 480}
    stats.record_network("NetworkRun", counts)
    console = Console(record=True, width=400)

    summarize(console, GateRun("pr", 0, None, stats.read_all(tmp_path), []))
    text = console.export_text()
    rows = {
        line.split("│")[1].strip(): line for line in text.splitlines() if "│" in line
    }

    assert "replica network" in text
    assert "NetworkRun" in text
    assert "307" in rows["dropped"]
    assert "480" in rows["convergence checks"]


def test_the_corpus_catches_the_replica_canary() -> None:
    """The two-writer corpus trace diverges against every replica canary."""
    corpus = Path(__file__).resolve().parent.parent / "ci" / "replay" / "corpus"
    trace = load(corpus / "replica_two_writers_bind_one_session_at_once.json")

    survivors = [
        name
        for name, factory in sorted(CANARIES.items())
        if replay(trace, factory, name).first_failure is None
    ]

    assert [] == survivors
