"""Replay a trace against the model and a system under test, step by step.

    python -m ci.replay PATH [--sut native|model] [--canary NAME]

PATH is a trace file or an artifact folder (its `trace.json`). The program runs
through `stateful.harness.AffinityHarness`, the very step the machines use: the
same operations, the same observations after each step, the same invariants.
The table shows every step's operation, the model's and the implementation's
results, and the verdict; the first divergence is highlighted and named with
the check that failed (outcomes, observable state, clocks, or the violated
invariants with their statements).

Exit status: 0 when every step agrees and no invariant is violated; 1 on a
divergence, a violation or a crash of the system under test; 2 on a usage
error (bad arguments, an unreadable or malformed trace, a system under test
that cannot be built), reported as one line on stderr.

Steps where today's model answers differently from what the trace recorded
are listed as notes: the model changed since the recording.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, NoReturn

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ci.replay.affinity import AffinityTrace, project
from ci.replay.envelope import TraceError, crate_version, load
from model.affinity.ops import Op, Outcome
from model.affinity.table import ModelAffinity
from model.errors import AffinityError, UnsupportedError
from properties import get
from stateful.affinity_subject import AffinityHarness, SutFactory
from stateful.harness import StepReport

PROG: Final[str] = "ci.replay"
EXIT_AGREE: Final[int] = 0
EXIT_DIVERGED: Final[int] = 1
EXIT_USAGE: Final[int] = 2
CONSOLE_WIDTH_MIN: Final[int] = 140


class UsageError(Exception):
    """The replay cannot start; the message is the one line to print."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and a `UsageError`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = _Parser(
        prog=f"python -m {PROG}",
        description="Replay a trace against the model and a system under test.",
    )
    parser.add_argument("path", type=Path, help="a trace file or an artifact folder")
    parser.add_argument(
        "--sut",
        choices=("native", "model"),
        default="native",
        help="system under test: the crate (default) or the model itself",
    )
    parser.add_argument(
        "--canary",
        metavar="NAME",
        default=None,
        help="replay against a deliberately broken system from ci/canaries",
    )
    return parser


@dataclass(frozen=True)
class StepVerdict:
    """One replayed step and what went wrong in it, if anything."""

    report: StepReport | None  # None if the step crashed
    op: Op
    failed: tuple[str, ...]  # names of the checks that failed
    detail: str
    drift: str  # how the recorded expectation differs from today's model


@dataclass(frozen=True)
class Replay:
    """A whole replay's verdicts."""

    trace: AffinityTrace
    sut: str
    verdicts: tuple[StepVerdict, ...]

    @property
    def first_failure(self) -> StepVerdict | None:
        """The first step whose checks failed."""
        return next((v for v in self.verdicts if v.failed), None)


def factory_for(sut: str, canary: str | None) -> tuple[SutFactory, str]:
    """The system under test and its label; unknown or unbuilt ones are usage errors."""
    if canary is not None and sut != "native":
        raise UsageError("--canary replaces --sut; pass one of them")
    if canary is not None:
        from ci.canaries.affinity import CANARIES  # noqa: PLC0415 - only when asked

        if canary not in CANARIES:
            known = ", ".join(sorted(CANARIES))
            raise UsageError(f"unknown canary {canary!r} (known: {known})")
        return CANARIES[canary], f"canary {canary}"
    if sut == "model":
        return ModelAffinity, "model"
    try:
        from impl.adapter import CRATE_VERSION, NativeAffinity  # noqa: PLC0415
    except ImportError as error:
        raise UsageError(
            f"the native binding is not built ({error}); run `pip install -e .` "
            "or pass --sut model"
        ) from None
    return NativeAffinity, f"native (dynamo-kv-router {CRATE_VERSION})"


def replay(trace: AffinityTrace, factory: SutFactory, sut: str) -> Replay:
    """Run every step of `trace` through a fresh harness."""
    try:
        harness = AffinityHarness(
            config=trace.config, session_pool=trace.session_pool, factory=factory
        )
    except (AffinityError, UnsupportedError) as error:
        raise UsageError(f"{sut} cannot build this table: {error}") from None
    verdicts = []
    for recorded in trace.steps:
        try:
            report = harness.step(recorded.op)
        except Exception as error:  # noqa: BLE001 - a crash is a finding, reported as such
            verdicts.append(
                StepVerdict(
                    None,
                    recorded.op,
                    ("no_crash",),
                    f"{type(error).__name__}: {error}",
                    "",
                )
            )
            break
        failed = []
        if not report.outcomes_agree:
            failed.append("outcomes_agree")
        if not report.states_agree:
            failed.append("states_agree")
        if harness.model.now_ns != harness.sut.now_ns:
            failed.append("clocks_agree")
        failed.extend(report.violations)
        detail = report.first_difference()
        if "clocks_agree" in failed and not detail:
            detail = f"clock: model {harness.model.now_ns} != sut {harness.sut.now_ns}"
        drift = ""
        if recorded.expected != report.expected:
            drift = f"recorded {recorded.expected}, the model now {report.expected}"
        elif recorded.model != project(harness.model.state()):
            drift = "the model's state after this step differs from the recording"
        verdicts.append(StepVerdict(report, recorded.op, tuple(failed), detail, drift))
    return Replay(trace, sut, tuple(verdicts))


# ---- rendering ---------------------------------------------------------------


def show_outcome(outcome: Outcome) -> str:
    """An outcome in a table cell: the error kind, or the value."""
    if outcome.error is not None:
        return outcome.error
    return repr(outcome.value)


SESSION_SHOWN_MAX: Final[int] = 12


def show_session(session_id: str) -> str:
    """A session id, abbreviated with its UTF-8 size when it is long."""
    if len(session_id) <= SESSION_SHOWN_MAX:
        return repr(session_id)
    size = len(session_id.encode())
    return f"{session_id[:SESSION_SHOWN_MAX]!r}... ({size} bytes)"


HARNESS_CHECKS: Final[frozenset[str]] = frozenset(
    {"outcomes_agree", "states_agree", "clocks_agree", "no_crash"}
)
"""Failed-check names that are the harness' comparisons, not catalogue invariants."""


def _header(trace: AffinityTrace) -> str:
    config = trace.config
    sessions = ", ".join(show_session(s) for s in trace.session_pool)
    return (
        f"ttl_ns={config.ttl_ns} mode={config.mode.value} "
        f"max_entries={config.max_entries} "
        f"max_session_id_bytes={config.max_session_id_bytes} "
        f"reaping={config.reaping}; sessions {sessions}; "
        f"recorded with crate {trace.header.crate_version}, "
        f"suite {trace.header.suite_version}"
    )


def _table(result: Replay) -> Table:
    """One row per step; the first failing row highlighted, later ones red."""
    table = Table(title=f"replay against {result.sut}")
    for column in ("step", "operation", "model", "implementation", "check"):
        table.add_column(column, justify="right" if column == "step" else "left")
    first = result.first_failure
    for recorded, verdict in zip(result.trace.steps, result.verdicts, strict=False):
        report = verdict.report
        operation = Text(repr(verdict.op))
        if recorded.comment:
            operation.append(f"\n{recorded.comment}", style="dim italic")
        style = ""
        if verdict is first:
            style = "bold white on red"
        elif verdict.failed:
            style = "red"
        table.add_row(
            str(recorded.index),
            operation,
            Text("-" if report is None else show_outcome(report.expected)),
            Text("crashed" if report is None else show_outcome(report.actual)),
            "ok" if not verdict.failed else ", ".join(verdict.failed),
            style=style,
        )
    return table


def _notes(result: Replay, console: Console) -> None:
    """Crate-version and recorded-answer drift: informative, not failures."""
    trace = result.trace
    installed = crate_version()
    if result.sut.startswith("native") and trace.header.crate_version != installed:
        console.print(
            f"note: recorded with crate {trace.header.crate_version}, "
            f"replayed on {installed}",
            style="yellow",
        )
    for index, verdict in enumerate(result.verdicts, start=1):
        if verdict.drift:
            console.print(
                f"note: step {index}: {verdict.drift}", style="yellow", markup=False
            )


def render(result: Replay, console: Console) -> None:
    """Print the per-step table and the verdict."""
    trace = result.trace
    console.print(Text(trace.description or "(no description)", style="bold"))
    console.print(_header(trace), markup=False)
    console.print(_table(result))
    _notes(result, console)
    first = result.first_failure
    if first is None:
        console.print(
            Text(
                f"all {len(result.verdicts)} steps agree and no invariant is violated",
                style="bold green",
            )
        )
        return
    step = result.verdicts.index(first) + 1
    console.print(
        Text(f"first divergence at step {step}: {first.op!r}", style="bold red")
    )
    console.print(f"  failed: {', '.join(first.failed)}", markup=False)
    console.print(f"  {first.detail}", markup=False)
    for name in first.failed:
        if name not in HARNESS_CHECKS:
            console.print(f"  invariant {name}: {get(name).statement}", markup=False)


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command line; return the exit status."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        arguments = build_parser().parse_args(argv)
        trace = load(arguments.path)
        factory, label = factory_for(arguments.sut, arguments.canary)
        result = replay(trace, factory, label)
    except (UsageError, TraceError) as error:
        err.print(f"{PROG}: error: {error}", markup=False)
        return EXIT_USAGE
    out = console or Console(
        width=None if sys.stdout.isatty() else CONSOLE_WIDTH_MIN, highlight=False
    )
    render(result, out)
    return EXIT_AGREE if result.first_failure is None else EXIT_DIVERGED


if __name__ == "__main__":
    sys.exit(main())
