"""Remember the final, shrunk failing program of a differential machine.

Hypothesis replays the minimal failing example once more at the end, with
`current_build_context().is_final` set. During that replay only, the machine
hands its harness to `track` (from `build`) and the first failing step to
`capture` (from `_run`). The artifact writer (`ci/replay/artifacts.py`) and the
shrinking tests read the result with `final_runs()`; everything else pays one
attribute lookup per program.

Concurrent histories (`stateful/test_concurrent_affinity.py`) are not
programs Hypothesis can replay exactly: threads interleave anew on every run.
A failing one is handed to `capture_history` when it is seen; the last one
(from the smallest program Hypothesis found) becomes the artifact.

Only this module and the artifact writer know about Hypothesis' final replay;
traces themselves never do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from hypothesis import settings
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument

if TYPE_CHECKING:
    from model.affinity.history import History
    from stateful.harness import Harness, StepReport

FINAL_RUNS_MAX: Final[int] = 64
"""Distinct failures remembered per test (Hypothesis reports each one)."""


@dataclass(frozen=True)
class FailedCheck:
    """The first check that failed in the final replay."""

    rule: str
    step: int
    op: Any
    check: str  # outcomes_agree, states_agree or a violated property's name
    difference: str
    violated: tuple[str, ...]


@dataclass
class FinalRun:
    """One final replay of a failing example: its program and what failed."""

    machine: str
    harness: Harness[Any, Any]
    settings: dict[str, Any]
    failed: FailedCheck | None = field(default=None)
    machine_class: type | None = field(default=None)
    """The machine's class: the artifact's `program.py` builds one like it."""


@dataclass(frozen=True)
class FailedHistory:
    """A concurrent history that failed a check, as it was recorded."""

    history: History
    check: str  # the check that failed, e.g. "linearizable"
    reading: str  # how replica updates were read (see stateful.concurrent_affinity)
    settings: dict[str, Any]


_final_runs: list[FinalRun] = []
_failed_histories: list[FailedHistory] = []


def in_final_run() -> bool:
    """Hypothesis is replaying the minimal failing example for the last time."""
    try:
        return current_build_context().is_final
    except InvalidArgument:  # no build context: not under Hypothesis at all
        return False


def effective_settings() -> dict[str, Any]:
    """The settings the running test uses (inside a test, `settings.default`)."""
    current = settings.default
    assert current is not None
    database = current.database
    return {
        "max_examples": current.max_examples,
        "stateful_step_count": current.stateful_step_count,
        "derandomize": current.derandomize,
        "database": None if database is None else type(database).__name__,
        "print_blob": current.print_blob,
        "report_multiple_bugs": current.report_multiple_bugs,
        "phases": [phase.name for phase in current.phases],
    }


def track(machine: object, harness: Harness[Any, Any]) -> None:
    """Remember `harness` if this is a final replay (called from `build`)."""
    if not in_final_run():
        return
    if len(_final_runs) >= FINAL_RUNS_MAX:
        raise RuntimeError(f"more than {FINAL_RUNS_MAX} final replays in one test")
    _final_runs.append(
        FinalRun(
            machine=type(machine).__name__,
            harness=harness,
            settings=effective_settings(),
            machine_class=type(machine),
        )
    )


def check_name(report: StepReport[Any]) -> str:
    """The first failed check: a harness comparison or a registered property."""
    return report.failed_checks()[0]


def capture(rule: str, report: StepReport[Any]) -> None:
    """Remember the first failing step of the final replay (called from `_run`)."""
    if not _final_runs or not in_final_run():
        return
    run = _final_runs[-1]
    if run.failed is not None:
        return
    run.failed = FailedCheck(
        rule=rule,
        step=report.index,
        op=report.op,
        check=check_name(report),
        difference=report.first_difference(),
        violated=report.violations,
    )


def capture_history(history: History, check: str, reading: str) -> None:
    """Remember a failing concurrent history; the latest replaces the earlier."""
    _failed_histories[:] = [
        FailedHistory(history, check, reading, effective_settings())
    ]


def failed_histories() -> tuple[FailedHistory, ...]:
    """The failing history remembered since the last `reset`, if any."""
    return tuple(_failed_histories)


def final_runs() -> tuple[FinalRun, ...]:
    """The final replays seen since the last `reset`, in order."""
    return tuple(_final_runs)


def reset() -> None:
    """Forget every final replay and failing history (before each test)."""
    _final_runs.clear()
    _failed_histories.clear()
