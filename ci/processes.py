"""Child processes in their own process groups, tracked so they can be ended.

The one process runner of `ci/`: the mutation sweep (`ci.mutants`) runs its
builds and test processes through `run_process`, with a time limit; the trust
commands (`ci.fuzz`, `ci.soak`, `ci.determinism`, through `ci.trust.runner`)
`spawn` long pytest processes and `stop` them. Each child starts a new session,
so ending it ends everything it started; every live child is tracked, so an
interrupted command can end them all (`stop_all`, `kill_all`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

STOP_GRACE_S: Final[int] = 30
"""How long a stopped child may take to end after SIGTERM before SIGKILL."""

_live: set[subprocess.Popen[str]] = set()
_live_lock = threading.Lock()


@dataclass(frozen=True)
class ProcessResult:
    """How one child process ended."""

    returncode: int | None  # None: killed at the time limit
    seconds: float
    output: str


def spawn(
    command: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    stdout: int | IO[str],
) -> subprocess.Popen[str]:
    """Start `command` in a new session (its own process group), tracked."""
    with _live_lock:
        process = subprocess.Popen(  # noqa: S603 - our own tool invocations
            list(command),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdout=stdout,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        _live.add(process)
        return process


def forget(process: subprocess.Popen[str]) -> None:
    """Stop tracking a child that has ended."""
    with _live_lock:
        _live.discard(process)


def kill_group(process: subprocess.Popen[str]) -> None:
    """SIGKILL the child's process group (gone already: nothing to do)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def stop(process: subprocess.Popen[str], grace_s: float = STOP_GRACE_S) -> None:
    """End a child and its group: SIGTERM, then SIGKILL after `grace_s`."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            kill_group(process)
            process.wait()
    forget(process)


def stop_all(grace_s: float = STOP_GRACE_S) -> None:
    """`stop` every tracked child, oldest process id first."""
    with _live_lock:
        started = sorted(_live, key=lambda process: process.pid)
    for process in started:
        stop(process, grace_s)


def kill_all() -> None:
    """SIGKILL the group of every tracked child (they are reaped by their runners)."""
    with _live_lock:
        started = sorted(_live, key=lambda process: process.pid)
    for process in started:
        kill_group(process)


def run_process(
    command: Sequence[str],
    cwd: Path,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
) -> ProcessResult:
    """Run `command` to its end, output captured; kill its group at the time limit."""
    started = time.monotonic()
    process = spawn(command, cwd, env, subprocess.PIPE)
    try:
        output, _ = process.communicate(timeout=timeout_s)
        returncode: int | None = process.returncode
    except subprocess.TimeoutExpired:
        kill_group(process)
        output, _ = process.communicate()
        returncode = None
    finally:
        forget(process)
    return ProcessResult(returncode, time.monotonic() - started, output)
