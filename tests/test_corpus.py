"""The corpus replays cleanly, catches every canary, and grows by one command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ci.canaries.affinity import CANARIES
from ci.canaries.queue import CANARIES as QUEUE_CANARIES
from ci.replay.command import replay
from ci.replay.corpus import CorpusError, add, corpus_files, stale_files
from ci.replay.corpus.__main__ import main as corpus_main
from ci.replay.trace import load
from stateful.harness import against_name

FILES = corpus_files()
QUEUE_FILES = [path for path in FILES if load(path).header.subject == "queue"]
RUNTIME_FILES = [
    path
    for path in sorted(set(FILES) - set(QUEUE_FILES))
    if load(path).setup.config.clock == "runtime"
]
"""Traces of serving tables: every build and every canary can replay them."""
QUEUE_SCENARIOS_MIN = 10


def _manual_target() -> bool:
    from impl.adapter import HAS_MANUAL_CLOCK  # noqa: PLC0415 - crate runs only

    return HAS_MANUAL_CLOCK


def test_the_corpus_holds_the_hand_written_scenarios() -> None:
    """At least 18 affinity scenarios and 10 queue scenarios are on disk."""
    assert len(FILES) - len(QUEUE_FILES) >= 18
    assert len(QUEUE_FILES) >= QUEUE_SCENARIOS_MIN


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_a_corpus_trace_replays_without_divergence(path: Path) -> None:
    """Today's model gives the recorded answers; the crate agrees; none violated."""
    trace = load(path)
    against = against_name()
    if against == "model":
        factory = trace.kind.model_factory()
    elif path in RUNTIME_FILES or path in QUEUE_FILES or _manual_target():
        factory = trace.kind.crate_factory()
    else:
        # A manual-clock trace (say, a divergence found on a source tree) still
        # checks today's model against its recorded answers here.
        factory, against = trace.kind.model_factory(), "model"

    result = replay(trace, factory, against)
    diverged = [index for index, v in enumerate(result.verdicts, 1) if v.failed]
    drifted = [index for index, v in enumerate(result.verdicts, 1) if v.drift]

    assert [] == diverged
    assert [] == drifted
    assert len(trace.steps) == len(result.verdicts)


@pytest.mark.parametrize("path", FILES, ids=lambda path: path.stem)
def test_a_corpus_trace_says_what_it_shows(path: Path) -> None:
    """Every corpus file carries a description in English."""
    assert "" != load(path).description.strip()


def test_the_scenario_files_are_in_step_with_their_builders() -> None:
    """`python -m ci.replay.corpus build --check` would find nothing to rewrite."""
    assert [] == stale_files()


@pytest.mark.parametrize("canary", sorted(CANARIES))
def test_the_corpus_catches_every_canary(canary: str) -> None:
    """Each deliberately broken system diverges on at least one corpus trace."""
    # Stop at the first catch: a canary may make later traces slow (late_expiry
    # turns a refused clock jump of two years into 6 million reaper ticks).
    catching = next(
        (
            path.stem
            for path in RUNTIME_FILES
            if replay(load(path), CANARIES[canary], canary).first_failure is not None
        ),
        None,
    )

    assert catching is not None


@pytest.mark.parametrize("canary", sorted(QUEUE_CANARIES))
def test_the_queue_corpus_catches_every_queue_canary(canary: str) -> None:
    """Each deliberately broken queue diverges on at least one queue trace."""
    catching = [
        path.stem
        for path in QUEUE_FILES
        if replay(load(path), QUEUE_CANARIES[canary], canary).first_failure
    ]

    assert [] != catching


def test_adding_a_trace_copies_it_under_its_new_name(tmp_path: Path) -> None:
    """`add` writes `<name>.json` with the same program and description."""
    source = RUNTIME_FILES[0]

    target, changed = add(source, "found_today", directory=tmp_path)

    assert tmp_path / "found_today.json" == target
    assert [] == changed
    assert load(source).ops == load(target).ops
    assert load(source).description == load(target).description


def test_adding_rerecords_expectations_and_reports_where_they_changed(
    tmp_path: Path,
) -> None:
    """A stale recorded answer is replaced by today's model's, and its step named."""
    document = json.loads(RUNTIME_FILES[0].read_text())
    document["steps"][1]["expected"]["value"]["handle"] = 9  # an Initialize
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(document))

    target, changed = add(stale, "refreshed", directory=tmp_path)

    assert [2] == changed
    assert load(RUNTIME_FILES[0]).steps == load(target).steps


def test_adding_over_an_existing_name_is_refused(tmp_path: Path) -> None:
    """The corpus never loses a file silently; `--force` is needed."""
    add(RUNTIME_FILES[0], "taken", directory=tmp_path)

    with pytest.raises(CorpusError) as refused:
        add(RUNTIME_FILES[1], "taken", directory=tmp_path)

    assert "exists; pass --force" in str(refused.value)


def test_adding_under_an_unsafe_name_is_refused(tmp_path: Path) -> None:
    """Names are lower-case snake case, so they are also valid test ids."""
    with pytest.raises(CorpusError) as refused:
        add(RUNTIME_FILES[0], "../escape", directory=tmp_path)

    assert "must be lower-case letters" in str(refused.value)


def test_the_add_command_exits_zero_and_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m ci.replay.corpus add PATH --name NAME` is the one command."""
    status = corpus_main(
        [
            "add",
            str(RUNTIME_FILES[0]),
            "--name",
            "cli_added",
            "--corpus-dir",
            str(tmp_path),
        ]
    )

    assert 0 == status
    assert f"added {tmp_path / 'cli_added.json'}" in capsys.readouterr().out


def test_the_add_command_exits_two_on_a_malformed_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken source is one error line and status 2."""
    broken = tmp_path / "broken.json"
    broken.write_text("{}")

    status = corpus_main(
        ["add", str(broken), "--name", "x", "--corpus-dir", str(tmp_path)]
    )
    stderr = capsys.readouterr().err

    assert 2 == status
    assert 1 == len(stderr.splitlines())
    assert "missing field 'subject'" in stderr
