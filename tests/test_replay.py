"""`python -m ci.replay`: a table per step, and exit 0, 1 or 2."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from command_support import run_module
from rich.console import Console

from ci.replay.affinity import record
from ci.replay.command import (
    EXIT_AGREE,
    EXIT_DIVERGED,
    EXIT_USAGE,
    Replay,
    StepVerdict,
    render,
)
from ci.replay.command import main as replay_main
from ci.replay.trace import save
from model.affinity.ops import (
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    Join,
    Query,
    Release,
)
from model.affinity.types import SECOND_NS, AffinityConfig, Target, Version
from properties import get

CONFIG = AffinityConfig(ttl_ns=10 * SECOND_NS)
PROGRAM = (
    Acquire("a"),
    Commit(1, Target(1)),
    Acquire("b"),
    Join("b", Target(2, 0)),
    Commit(3, Target(2, 0)),
    Release(2),
    Release(4),
    Advance(10 * SECOND_NS),
    Query("a"),
)
"""Two sessions, a join, two releases and an expiry: step 6 is the first release."""


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    """A small recorded trace on disk."""
    trace = record(CONFIG, ("a", "b"), PROGRAM, "Two bindings, released, expired.")
    return save(trace, tmp_path / "trace.json")


def _run(argv: list[str]) -> tuple[int, str]:
    """Run the command in-process; return its status and what it printed."""
    out = io.StringIO()
    status = replay_main(argv, Console(file=out, width=200, highlight=False))
    return status, out.getvalue()


def test_a_trace_that_agrees_exits_zero_against_the_crate(trace_file: Path) -> None:
    """Replayed against the crate, every step agrees: status 0 and a green verdict."""
    status, printed = _run([str(trace_file)])

    assert EXIT_AGREE == status
    assert "all 9 steps agree and no invariant is violated" in printed


def test_a_trace_that_agrees_exits_zero_against_the_model(trace_file: Path) -> None:
    """`--against model` replays model against model: status 0."""
    status, _ = _run([str(trace_file), "--against", "model"])

    assert EXIT_AGREE == status


def test_every_step_appears_as_a_table_row(trace_file: Path) -> None:
    """The table lists each operation with the model's and the crate's result."""
    _, printed = _run([str(trace_file)])

    assert "Release(handle=2)" in printed
    assert "Initialize(handle=3)" in printed
    assert "Advance(now_ns=10000000000)" in printed


def test_a_canary_diverges_and_exits_one_naming_the_first_step(
    trace_file: Path,
) -> None:
    """A release that never reaches the table diverges at step 6, on the state."""
    status, printed = _run([str(trace_file), "--canary", "forgetful_release"])

    assert EXIT_DIVERGED == status
    assert "first divergence at step 6: Release(handle=2)" in printed
    assert "failed: states_agree" in printed
    assert "lease_count=1" in printed


def test_an_outcome_divergence_is_named_as_such(tmp_path: Path) -> None:
    """A canary answering a replica update differently fails `outcomes_agree`."""
    program = (
        Acquire("a"),
        Commit(1, Target(1)),
        ApplyReplica("a", Target(2), Version(1, 0)),
    )
    path = save(record(CONFIG, ("a",), program, "A conflict."), tmp_path / "t.json")

    status, printed = _run([str(path), "--canary", "stale_replica_wins"])

    assert EXIT_DIVERGED == status
    assert "first divergence at step 3" in printed
    assert "failed: outcomes_agree" in printed


def test_an_artifact_folder_replays_its_trace_json(trace_file: Path) -> None:
    """PATH may be the folder that holds `trace.json`."""
    status, _ = _run([str(trace_file.parent)])

    assert EXIT_AGREE == status


def test_a_violated_invariant_is_shown_with_its_statement() -> None:
    """The verdict names a failed invariant and quotes its one-line statement."""
    name = "every_active_lease_is_held_by_someone"
    trace = record(CONFIG, ("a",), (Acquire("a"),), "One acquisition.")
    verdict = StepVerdict(
        report=None,
        op=Acquire("a"),
        failed=(name,),
        detail=f"violated: {name}",
        drift="",
    )
    out = io.StringIO()

    render(Replay(trace, "model", (verdict,)), Console(file=out, width=200))

    assert f"invariant {name}: {get(name).statement}" in out.getvalue()


def test_a_recorded_answer_the_model_no_longer_gives_is_noted(
    tmp_path: Path,
) -> None:
    """A hand-edited expectation is reported as drift, not as a divergence."""
    path = save(
        record(CONFIG, ("a",), (Acquire("a"),), "One acquisition."),
        tmp_path / "t.json",
    )
    document = json.loads(path.read_text())
    document["steps"][0]["expected"]["value"]["handle"] = 7
    path.write_text(json.dumps(document))

    status, printed = _run([str(path)])

    assert EXIT_AGREE == status
    assert "note: step 1: recorded Outcome(value=Initialize(handle=7)" in printed


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: path"),
        (["nowhere.json"], "nowhere.json: no such file"),
        (
            ["{trace}", "--against", "cuda"],
            "argument --against: invalid choice: 'cuda'",
        ),
        (["{trace}", "--canary", "nope"], "unknown affinity canary 'nope' (known: "),
        (["{trace}", "--canary", "late_expiry", "--against", "model"], "--canary"),
    ],
    ids=["no path", "missing file", "unknown against", "unknown canary", "both"],
)
def test_a_usage_error_exits_two_with_one_line(
    argv: list[str],
    message: str,
    trace_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Bad arguments print one `ci.replay: error:` line on stderr and exit 2."""
    status, printed = _run([arg.format(trace=trace_file) for arg in argv])
    stderr = capsys.readouterr().err

    assert EXIT_USAGE == status
    assert "" == printed
    assert 1 == len(stderr.splitlines())
    assert stderr.startswith("ci.replay: error: ")
    assert message in stderr


def test_a_malformed_trace_exits_two_with_one_line_and_no_traceback(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-edited unknown operation is reported by step, in one line."""
    document = json.loads(trace_file.read_text())
    document["steps"][2]["op"]["op"] = "Acquir"
    trace_file.write_text(json.dumps(document))

    status, _ = _run([str(trace_file)])
    stderr = capsys.readouterr().err

    assert EXIT_USAGE == status
    assert 1 == len(stderr.splitlines())
    assert "steps[2].op: unknown operation 'Acquir'" in stderr


@pytest.mark.pinned
def test_a_table_the_crate_cannot_build_exits_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manual-clock reaping variant has no crate table in 1.6.1: usage error."""
    config = AffinityConfig(ttl_ns=SECOND_NS, reaping="every_advance")
    path = save(record(config, ("a",), (Acquire("a"),), "x"), tmp_path / "t.json")

    status, _ = _run([str(path)])

    assert EXIT_USAGE == status
    assert "cannot build this table" in capsys.readouterr().err


def test_the_module_runs_as_a_command_with_its_exit_status(trace_file: Path) -> None:
    """`python -m ci.replay` exits 1 on a divergence, as a subprocess."""
    completed = run_module(
        "ci.replay", str(trace_file), "--canary", "late_expiry", timeout_s=120
    )

    assert EXIT_DIVERGED == completed.returncode
    assert "first divergence at step 8" in completed.stdout
