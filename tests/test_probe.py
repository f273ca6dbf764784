"""The capability probe: decisions on recorded answers, and the built binding's.

`decide` is pure, so it is tested on recorded answers: those the suite printed
for every build it was gated against (`ci/builds/`) and synthetic answers for
schedules no build has shown yet. The installed binding's own answers must
equal the recorded ones for its build (the pinned crate in CI), so the probed
table in docs/capabilities.md fails this test when the crate's behaviour departs
from it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from command_support import run_module

from ci import probe as probe_cli
from impl import adapter
from impl.probe import CLEANUP_SCHEDULES, ProbeAnswers, decide, observe

REPO = Path(__file__).resolve().parent.parent
CAPABILITIES = REPO / "docs" / "capabilities.md"

MANUAL_TREE = ProbeAnswers(
    crate_version="1.6.1",
    crate_source="path",
    manual_clock=True,
    cleanup_counts=(1, 0, 0, 0, 0, 0),
    backwards="backwards",
    overflow="deadline_overflow",
    runtime_advance="runtime_table",
    join_lease_count=2,
    first_sequence_manual="1",
    first_sequence_runtime="wall_clock",
    group_ids_match=True,
    queue_recheck=False,
    testing_hooks=True,
)


@pytest.mark.parametrize(
    ("counts", "reaping", "model_reaping"),
    [
        ((1, 0, 0, 0, 0, 0), "every_advance", "every_advance"),
        ((1, 1, 1, 1, 0, 0), "cadence", "cadence"),
        ((1, 1, 1, 0, 0, 0), "cadence_grid", "cadence"),
        ((1, 1, 1, 1, 1, 1), "other (counts 1, 1, 1, 1, 1, 1)", "cadence"),
        ((0, 0, 0, 0, 0, 0), "other (counts 0, 0, 0, 0, 0, 0)", "cadence"),
    ],
)
def test_the_cleanup_schedule_is_decided_by_the_entry_counts(
    counts: tuple[int, ...], reaping: str, model_reaping: str
) -> None:
    """Each schedule has its own count pattern; anything else is shown as it is."""
    decided = decide(replace(MANUAL_TREE, cleanup_counts=counts))

    assert reaping == decided.reaping
    assert model_reaping == decided.model_reaping


def test_the_schedules_are_told_apart_by_distinct_patterns() -> None:
    """No two schedules share a pattern, and each pattern has one count per move."""
    assert len(set(CLEANUP_SCHEDULES.values())) == len(CLEANUP_SCHEDULES)
    assert {6} == {len(counts) for counts in CLEANUP_SCHEDULES}


@pytest.mark.parametrize(
    ("field", "answer", "fact", "verdict"),
    [
        ("backwards", "backwards", "backwards check", "yes"),
        ("backwards", "accepted", "backwards check", "no"),
        ("backwards", None, "backwards check", "n/a"),
        ("overflow", "deadline_overflow", "overflow guard (now + ttl)", "yes"),
        (
            "overflow",
            "accepted; a later commit failed: RustPanicError",
            "overflow guard (now + ttl)",
            "no",
        ),
        (
            "runtime_advance",
            "runtime_table",
            "advance_clock refused on a runtime table",
            "yes",
        ),
        (
            "runtime_advance",
            "accepted",
            "advance_clock refused on a runtime table",
            "no",
        ),
        ("group_ids_match", None, "group key subagent_group_affinity_id", "absent"),
        (
            "group_ids_match",
            False,
            "group key subagent_group_affinity_id",
            "present, DIFFERS from the model",
        ),
        ("join_lease_count", 1, "join variant", "other (1 leases after a join)"),
    ],
)
def test_each_answer_decides_its_row(
    field: str, answer: object, fact: str, verdict: str
) -> None:
    """A guard is present only when the probe saw the refusal it makes."""
    changed: dict[str, Any] = {field: answer}  # one field, named by the case
    rows = dict(decide(replace(MANUAL_TREE, **changed)).rows())

    assert verdict == rows[fact]


def test_answers_survive_a_json_round_trip() -> None:
    """Recorded answers read back equal."""
    assert MANUAL_TREE == ProbeAnswers.from_json(MANUAL_TREE.to_json())


@pytest.mark.parametrize("name", sorted(probe_cli.recorded()))
def test_every_recorded_target_decides_a_full_table(name: str) -> None:
    """Each build recorded under ci/builds/ reads back and decides every row."""
    answers = ProbeAnswers.from_json(probe_cli.recorded()[name])

    assert 10 == len(decide(answers).rows())
    assert answers.to_json() == probe_cli.recorded()[name]


def test_the_readme_shows_the_recorded_targets_table() -> None:
    """docs/capabilities.md embeds exactly what `python -m ci.probe --table` prints."""
    assert probe_cli.table_markdown(probe_cli.recorded()) in CAPABILITIES.read_text(
        encoding="utf-8"
    )


@pytest.mark.pinned
def test_the_pinned_build_probes_exactly_as_recorded() -> None:
    """The installed crate's behaviour equals its recorded answers, row by row."""
    assert ("1.6.1", "registry") == (adapter.CRATE_VERSION, adapter.CRATE_SOURCE)
    recorded = ProbeAnswers.from_json(probe_cli.recorded()[probe_cli.PINNED])

    assert recorded == observe()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--record", "Bad Name"], "build name"),
        (["--json", "--table"], "not allowed with"),
        (["--colour"], "unrecognized arguments"),
    ],
)
def test_bad_arguments_exit_two_with_one_line(argv: list[str], message: str) -> None:
    """The probe command answers bad arguments with one line and exit 2."""
    result = run_module("ci.probe", *argv, timeout_s=120)

    assert 2 == result.returncode
    assert 1 == len(result.stderr.strip().splitlines())
    assert message in result.stderr
