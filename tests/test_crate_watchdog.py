"""A call into the crate that never returns is a failing step, not a hung run.

The binding releases the GIL around every crate call and the adapter's
watchdog (`impl/adapter/lib.py`, `_Watchdog`) samples the call in progress:
past its limit it prints one line naming the call and the test, notes it in
the artifacts folder and ends the process. A real deadlock needs a broken
crate (mutants OA055 and OA122, ci/MUTANTS.md); here a call that blocks
forever inside a `Translation` stands for one, with a 50 ms limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from command_support import REPO

LIMIT_MS = 50
TIMEOUT_S = 60
STUCK = """
import threading
from impl.adapter.lib import Translation

class Stuck(Translation):
    __slots__ = ()

def commit():
    with Stuck():
        threading.Event().wait()  # a lock that is never released

commit()
"""


def test_a_call_that_never_returns_ends_the_process_naming_it(tmp_path: Path) -> None:
    """One line `deadlock: commit did not return within 50 ms`, exit 1, a note."""
    env = os.environ | {
        "VERIFY_DEADLOCK_MS": str(LIMIT_MS),
        "VERIFY_ARTIFACTS_DIR": str(tmp_path),
        "PYTEST_CURRENT_TEST": "tests/test_x.py::test_y (call)",
    }

    completed = subprocess.run(  # noqa: S603 - this interpreter, a fixed script
        [sys.executable, "-c", STUCK],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=TIMEOUT_S,
        env=env,
    )

    check = f"deadlock: commit did not return within {LIMIT_MS} ms"
    note = tmp_path / f"deadlock-{_pid_of(tmp_path)}.json"
    assert 1 == completed.returncode, completed.stderr
    assert [
        f"{check} (tests/test_x.py::test_y); noted in {note}"
    ] == completed.stderr.splitlines()
    assert {
        "check": check,
        "test": "tests/test_x.py::test_y",
        "call": "commit",
    } == json.loads(note.read_text(encoding="utf-8"))


def _pid_of(folder: Path) -> str:
    (note,) = folder.glob("deadlock-*.json")
    return note.stem.removeprefix("deadlock-")


def test_calls_that_return_leave_no_call_in_progress() -> None:
    """After a call returns, or raises, the watchdog sees none in progress."""
    from impl.adapter import lib  # noqa: PLC0415 - the module under test

    class Passing(lib.Translation):
        __slots__ = ()

        def translate(self, error: BaseException) -> None:
            del error

    calls = lib._WATCHDOG.call
    with Passing():
        assert lib._WATCHDOG.busy
    with pytest.raises(ValueError, match="refused"), Passing():
        raise ValueError("refused")

    assert calls + 2 == lib._WATCHDOG.call
    assert not lib._WATCHDOG.busy


def test_the_sweep_reads_a_deadlock_as_a_named_catch() -> None:
    """ci.mutants' judge: the watchdog's line is a catch, its test and check named."""
    from ci.mutants.judge import judge_pytest  # noqa: PLC0415 - the judge under test
    from ci.processes import ProcessResult  # noqa: PLC0415

    test = "tests/test_affinity_sink_reentry.py::test_a[join_initializing]"
    line = "deadlock: join_initializing did not return within 10000 ms"
    output = f"..{line} ({test})\n"

    verdict = judge_pytest(ProcessResult(returncode=1, seconds=12.0, output=output))

    assert ("caught", test, "deadlock", line) == (
        verdict.outcome,
        verdict.test_id,
        verdict.check,
        verdict.detail,
    )
