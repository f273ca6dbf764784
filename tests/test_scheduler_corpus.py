"""The scheduler corpus replays cleanly, is in step, and catches every canary."""

from __future__ import annotations

from pathlib import Path

import pytest
from command_support import run_module

from ci.canaries.scheduler import CANARIES
from ci.replay.command import replay
from ci.replay.corpus.scheduler_scenarios import SCENARIOS, files, stale_files
from ci.replay.trace import load
from stateful.harness import against_name

FILES = files()


def test_the_scheduler_corpus_holds_scenarios_and_canary_catches() -> None:
    """Every hand-written scenario and one minimized catch per canary are on disk."""
    stems = {path.stem for path in FILES}

    assert {scenario.name for scenario in SCENARIOS} <= stems
    assert {f"canary_{name}" for name in CANARIES} <= stems


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_a_scheduler_trace_replays_without_divergence(path: Path) -> None:
    """Today's model gives the recorded answers; the crate agrees; nothing violated."""
    trace = load(path)
    against = against_name()
    kind = trace.kind
    factory = kind.model_factory() if against == "model" else kind.crate_factory()

    result = replay(trace, factory, against)
    diverged = [index for index, v in enumerate(result.verdicts, 1) if v.failed]
    drifted = [index for index, v in enumerate(result.verdicts, 1) if v.drift]

    assert [] == diverged
    assert [] == drifted
    assert len(trace.steps) == len(result.verdicts)


def test_the_scheduler_scenario_files_are_in_step_with_their_builders() -> None:
    """`python -m ci.replay.corpus.scheduler_scenarios --check` finds nothing."""
    assert [] == stale_files()


@pytest.mark.parametrize("canary", sorted(CANARIES))
def test_the_scheduler_corpus_catches_every_scheduler_canary(canary: str) -> None:
    """Each deliberately broken scheduler diverges on at least one trace."""
    catching = [
        path.stem
        for path in FILES
        if replay(load(path), CANARIES[canary], canary).first_failure is not None
    ]

    assert [] != catching


def test_the_scenario_command_checks_and_refuses_bad_arguments_in_one_line() -> None:
    """`--check` exits 0 on a clean corpus; a bad argument is one line and exit 2."""
    checked = run_module(
        "ci.replay.corpus.scheduler_scenarios", "--check", timeout_s=120
    )
    refused = run_module(
        "ci.replay.corpus.scheduler_scenarios", "--bogus", timeout_s=120
    )

    assert 0 == checked.returncode, checked.stderr
    assert 2 == refused.returncode
    assert 1 == len(refused.stderr.strip().splitlines())
    assert "" == refused.stdout
