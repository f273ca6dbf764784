"""The evidence dossier: counts per property, witnesses that replay, least exercised."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from command_support import run_module

from ci.dossier.build import build, least_exercised, merge
from model.affinity.ops import Acquire, Advance, Commit, Release
from model.affinity.types import SECOND_NS, AffinityConfig, Mode, Target
from properties import properties
from stateful.affinity_subject import AffinityHarness
from stateful.evidence import Evidence

REPLAY_TIMEOUT_S = 300
CONFIG = AffinityConfig(
    ttl_ns=SECOND_NS, mode=Mode.HARD, max_entries=2, max_session_id_bytes=8
)


def _machine(name: str, subject: str, counts: dict[str, list[int]]) -> dict[str, Any]:
    """A machine record as `stateful.stats.record_machine` writes it."""
    return {
        "kind": "machine",
        "name": name,
        "subject": subject,
        "properties": counts,
        "exercisable": sorted(counts),
    }


def test_counts_sum_over_the_machines_of_a_subject_and_name_the_vacuous_ones() -> None:
    """Each machine's [evaluations, non-vacuous, boundary] add up; zeros are named."""
    records = [
        _machine(
            "A", "affinity", {"a_reap_collects_every_expired_binding": [10, 3, 1]}
        ),
        _machine("B", "affinity", {"a_reap_collects_every_expired_binding": [7, 0, 0]}),
    ]

    row = next(
        r
        for r in merge(records)
        if r.prop.name == "a_reap_collects_every_expired_binding"
    )

    assert (17, 3, 1) == (
        row.counts.evaluations,
        row.counts.non_vacuous,
        row.counts.boundary,
    )
    assert ["B"] == row.vacuous_in


def test_the_least_exercised_are_always_properties_with_the_fewest_non_vacuous() -> (
    None
):
    """Goals are left out; ties fall back to boundary hits, then names."""
    always = [p.name for p in properties(kind="always")]
    counts = {name: [100, 50, 5] for name in always}
    counts[always[3]] = [100, 2, 0]
    counts[always[1]] = [100, 2, 1]
    goal = properties(kind="sometimes")[0].name
    counts[goal] = [100, 0, 0]

    shown = [
        row.prop.name for row in least_exercised(merge([_machine("M", "x", counts)]))
    ]

    assert [always[3], always[1]] == shown[:2]
    assert goal not in shown
    assert 5 == len(shown)


def test_a_boundary_witness_beats_a_shorter_plain_one() -> None:
    """An initialization at step 2 is plain; re-initializing at step 6 is kept."""
    config = replace(CONFIG, ttl_ns=3 * SECOND_NS // 2)  # reaper ticks every 1.5 s
    harness = AffinityHarness(config, ("a",))
    evidence = Evidence()
    name = "an_initialization_leaves_an_initializing_entry"

    def step(op: Any) -> Any:
        report = harness.step(op)
        evidence.add(report, harness)
        return report.expected.value

    step(Advance(1))
    init = step(Acquire("a", None))
    plain = evidence.witnesses[name]
    lease = step(Commit(init.handle, Target(1, None)))
    step(Release(lease))  # idle until 1.5 s + 1 ns; the 1.5 s tick collects nothing
    step(Advance(config.ttl_ns + 1))
    step(Acquire("a", None))  # the expired, uncollected binding is re-initialized
    kept = evidence.witnesses[name]

    assert (2, False) == (plain.steps, plain.at_boundary)
    assert (6, True) == (kept.steps, kept.at_boundary)
    assert 6 == len(kept.ops)
    assert (2, 1) == (evidence.exercised[name], evidence.boundary[name])


def test_a_reap_on_a_released_bindings_deadline_is_the_reap_witness() -> None:
    """Released at 0 with ttl 1 s, reaped by the tick at exactly 1 s: its boundary."""
    harness = AffinityHarness(CONFIG, ("a",))
    evidence = Evidence()
    init = harness.step(Acquire("a", None))
    evidence.add(init, harness)
    lease = harness.step(Commit(init.expected.value.handle, Target(1, None)))
    evidence.add(lease, harness)
    evidence.add(harness.step(Release(lease.expected.value)), harness)
    evidence.add(harness.step(Advance(SECOND_NS)), harness)
    witness = evidence.witnesses["a_reap_collects_every_expired_binding"]

    assert (4, True) == (witness.steps, witness.at_boundary)
    assert 1 == evidence.boundary["a_reap_collects_every_expired_binding"]


@pytest.fixture(scope="module")
def dossier(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A dossier built from the corpus alone (no machine ran)."""
    folder = tmp_path_factory.mktemp("dossier")
    document = build([], folder, {"profile": "test", "crate": "dynamo-kv-router"})
    return folder, document


def test_the_dossier_holds_every_property_with_citations(
    dossier: tuple[Path, dict[str, Any]],
) -> None:
    """Every registered property has a row; crate and model citations carry a line."""
    folder, document = dossier
    rows = {
        row["name"]: row
        for row in json.loads((folder / "dossier.json").read_text())["properties"]
    }

    assert sorted(p.name for p in properties()) == sorted(rows)
    assert document["properties"] == list(rows.values())
    reap = rows["a_reap_collects_every_expired_binding"]
    assert reap["reads"][0]["at"].startswith("model/affinity/table.py:")
    assert ":" in reap["guards"][0]["at"]
    assert (
        "### a_reap_collects_every_expired_binding"
        in (folder / "dossier.md").read_text()
    )


def test_corpus_witnesses_replay_and_exercise_their_property(
    dossier: tuple[Path, dict[str, Any]],
) -> None:
    """Every witness the corpus gave replays and exercises it at its last step."""
    _, document = dossier
    witnessed = [row for row in document["properties"] if row["witness"] is not None]

    assert witnessed
    assert [] == [
        (row["name"], row["witness"]["replayed"])
        for row in witnessed
        if not row["witness"]["replayed"].startswith("agrees against")
    ]
    assert all(row["witness"]["source"].startswith("corpus ") for row in witnessed)


def test_a_witness_replays_with_the_command_the_dossier_prints(
    dossier: tuple[Path, dict[str, Any]],
) -> None:
    """`python -m ci.replay FILE` (as printed) agrees on the reap witness."""
    folder, document = dossier
    row = next(
        r
        for r in document["properties"]
        if r["name"] == "a_reap_collects_every_expired_binding"
    )
    words = row["witness"]["replay"].split()
    trace = folder / row["witness"]["trace"]

    completed = run_module(
        "ci.replay", str(trace), *words[4:], timeout_s=REPLAY_TIMEOUT_S
    )

    assert 0 == completed.returncode, completed.stdout[-2000:]
    assert "exercises a_reap_collects_every_expired_binding" in completed.stdout
