"""Queue parity: fixed programs, recorded on one build, compared on another."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from command_support import run_module

from ci import queue_parity


def _parity(*argv: str) -> subprocess.CompletedProcess[str]:
    return run_module("ci.queue_parity", *argv, timeout_s=300)


def test_the_programs_are_the_same_in_every_call() -> None:
    """Program i comes from seed i: no Hypothesis, no clock, no process state."""
    assert queue_parity.programs(50) == queue_parity.programs(50)
    assert queue_parity.programs(50)[:10] == queue_parity.programs(10)


def test_the_programs_reach_every_operation_and_policy() -> None:
    """Enqueue, pop, retain and drain all occur, over fcfs, wspt and lcfs."""
    programs = queue_parity.programs(queue_parity.PROGRAMS_DEFAULT)
    kinds = {type(op).__name__ for _, ops in programs for op in ops}
    policies = {c.queue_policy for spec, _ in programs for c in spec.configs}
    policies |= {spec.fallback_policy for spec, _ in programs if spec.yaml_text is None}

    assert {"Enqueue", "PopNext", "Retain", "Drain"} == kinds
    assert {"fcfs", "wspt", "lcfs"} <= policies


def test_a_recording_compares_equal_on_the_same_build(tmp_path: Path) -> None:
    """Recording then comparing on one build finds every step identical."""
    record = tmp_path / "parity.json"

    assert 0 == _parity("--record", str(record), "--programs", "100").returncode
    compared = _parity("--compare", str(record))

    assert 0 == compared.returncode
    assert "identical" in compared.stdout


def test_a_changed_result_is_reported_with_its_program_and_step(tmp_path: Path) -> None:
    """One altered result: exit 1, naming the first program and step that differ."""
    record = tmp_path / "parity.json"
    assert 0 == _parity("--record", str(record), "--programs", "20").returncode
    document = json.loads(record.read_text())
    document["results"][7][3] = "QueuedItem(tampered)"
    record.write_text(json.dumps(document))

    compared = _parity("--compare", str(record))

    assert 1 == compared.returncode
    assert "program 7 step 4 differs" in compared.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--compare", "/nonexistent/parity.json"], "no such file"),
        (["--record", "x.json", "--programs", "0"], "at least 1"),
        ([], "one of the arguments"),
        (["--compare", "{not_a_record}"], "is not a queue-parity/1 record"),
    ],
)
def test_bad_arguments_exit_two_with_one_line(
    tmp_path: Path, argv: list[str], message: str
) -> None:
    """A missing file, a count that checks nothing, or a foreign file: exit 2."""
    foreign = tmp_path / "foreign.json"
    foreign.write_text("{}")
    argv = [arg.replace("{not_a_record}", str(foreign)) for arg in argv]

    result = _parity(*argv)

    assert 2 == result.returncode
    assert 1 == len(result.stderr.strip().splitlines())
    assert message in result.stderr
