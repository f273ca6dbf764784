"""Replay a trace against the model and a system under test, step by step.

    python -m ci.replay PATH [--against crate|model] [--canary NAME]
    python -m ci.replay PATH --emit rust [--out FILE]

PATH is a trace file or an artifact folder (its `trace.json`), or a concurrent
history (`ci/replay/history.py`; a folder holding one: its `minimal.json`),
which is checked again for linearizability against the model. Traces of every
registered subject (`ci.subjects`) replay alike: the program runs
through the subject's `stateful.harness.Harness`, the very step the machines
use -- the same operations, the same observations after each step, the same
invariants.
The table shows every step's operation, the model's results and those of what
the trace replays against (its column is named so: crate, model or canary),
and the verdict; the first divergence is highlighted and named with
the check that failed (outcomes, observable state, or the violated invariants
with their statements).

Exit status: 0 when every step agrees and no invariant is violated; 1 on a
divergence, a violation or a crash of the system under test; 2 on a usage
error (bad arguments, an unreadable or malformed trace, a system under test
that cannot be built), reported as one line on stderr.

Steps where today's model answers differently from what the trace recorded
are listed as notes: the model changed since the recording.

`--emit rust` replays nothing: it writes the trace as one self-contained Rust
test of the crate (`ci/replay/rust/`) to stdout or `--out FILE`. A trace the
built crate cannot express (the manual clock on a crate without one) is a
usage error naming the step and what is missing (exit 2), with no output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    output_file,
    separate,
    write_failed,
    write_results,
)
from ci.inputs import InputError
from ci.replay import history
from ci.replay.envelope import crate_version, trace_path
from ci.replay.rust.emit import ExportError, export, export_name, probed_capabilities
from ci.replay.trace import Factory, Trace, TraceKind, load
from model.errors import (
    AffinityError,
    PolicyConfigError,
    QueueUsageError,
    SchedulerError,
    UnsupportedError,
)
from properties import get
from stateful.concurrent_affinity import OutOfDomainError
from stateful.harness import StepReport

PROG: Final[str] = "ci.replay"
EXIT_AGREE: Final[int] = 0
EXIT_DIVERGED: Final[int] = 1
EXIT_USAGE: Final[int] = 2
CONSOLE_WIDTH_MIN: Final[int] = 140


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = OneLineParser(
        prog=f"python -m {PROG}",
        description="Replay a trace against the model and a system under test.",
    )
    parser.renamed("--sut", "--against")  # old spelling, refused
    parser.add_argument("path", type=Path, help="a trace file or an artifact folder")
    parser.add_argument(
        "--against",
        choices=("crate", "model"),
        default=None,
        help="system under test: the crate (default) or the model itself",
    )
    parser.add_argument(
        "--canary",
        metavar="NAME",
        default=None,
        help="replay against a deliberately broken system from ci/canaries",
    )
    parser.add_argument(
        "--reading",
        choices=history.READINGS,
        default=None,
        help="a concurrent history only: read replica updates this way instead "
        "of as the file says",
    )
    parser.add_argument(
        "--reaper-count",
        choices=history.REAPER_COUNTS,
        default=None,
        help="a concurrent history only: read reaper passes this way instead "
        "of as the file says",
    )
    return parser


def add_emit_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """`--emit table|rust` and `--out FILE` (this command's, not minimize's)."""
    parser.add_argument(
        "--emit",
        choices=("table", "rust"),
        default="table",
        help="table: replay and print the table (default); rust: write the trace "
        "as a Rust test of the crate instead",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        default=None,
        help="with --emit rust: write the test to FILE instead of stdout",
    )
    return parser


@dataclass(frozen=True)
class StepVerdict:
    """One replayed step and what went wrong in it, if anything."""

    report: StepReport[Any] | None  # None if the step crashed
    op: Any
    failed: tuple[str, ...]  # names of the checks that failed
    detail: str
    drift: str  # how the recorded expectation differs from today's model


@dataclass(frozen=True)
class Replay:
    """A whole replay's verdicts."""

    trace: Trace
    against: str
    verdicts: tuple[StepVerdict, ...]

    @property
    def first_failure(self) -> StepVerdict | None:
        """The first step whose checks failed."""
        return next((v for v in self.verdicts if v.failed), None)


def factory_for(
    kind: TraceKind, against: str | None, canary: str | None
) -> tuple[Factory, str]:
    """The system under test and its label; unknown or unbuilt ones are usage errors."""
    if canary is not None and against is not None:
        raise UsageError("--canary replaces --against; pass one of them")
    if against == "model":
        return kind.model_factory(), "model"
    try:
        crate = kind.crate_factory()
        canaries = kind.canaries() if canary is not None else {}
        from impl.adapter import CRATE_VERSION  # noqa: PLC0415 - built by now
    except ImportError as error:
        raise UsageError(
            f"the binding is not built ({error}); run `pip install -e .` "
            "or pass --against model"
        ) from None
    if canary is not None:
        if canary not in canaries:
            known = ", ".join(sorted(canaries))
            raise UsageError(
                f"unknown {kind.subject} canary {canary!r} (known: {known})"
            )
        return canaries[canary], f"canary {canary}"
    return crate, f"crate (dynamo-kv-router {CRATE_VERSION})"


BUILD_ERRORS = (
    AffinityError,
    UnsupportedError,
    QueueUsageError,
    PolicyConfigError,
    SchedulerError,
)


def replay(trace: Trace, factory: Factory, against: str) -> Replay:
    """Run every step of `trace` through a fresh harness."""
    kind = trace.kind
    try:
        harness = kind.harness(trace.setup, factory)
    except BUILD_ERRORS as error:
        raise UsageError(f"{against} cannot build this {kind.noun}: {error}") from None
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
        drift = ""
        if recorded.expected != report.expected:
            drift = f"recorded {recorded.expected}, the model now {report.expected}"
        elif recorded.model != kind.project(harness.model):
            drift = "the model's state after this step differs from the recording"
        verdicts.append(
            StepVerdict(
                report,
                recorded.op,
                report.failed_checks(),
                report.first_difference(),
                drift,
            )
        )
    return Replay(trace, against, tuple(verdicts))


# ---- rendering ---------------------------------------------------------------


def show_outcome(kind: TraceKind, outcome: Any) -> str:
    """An outcome in a table cell: the error kind, or the value."""
    if outcome.error is not None:
        return str(outcome.error)
    return kind.show_value(outcome.value)


HARNESS_CHECKS: Final[frozenset[str]] = frozenset(
    {"outcomes_agree", "states_agree", "no_crash"}
)
"""Failed-check names that are the harness' comparisons, not catalogue invariants."""


def _header(trace: Trace) -> str:
    return (
        f"{trace.kind.subject}: {trace.kind.describe(trace.setup)}; "
        f"recorded with crate {trace.header.crate_version}, "
        f"suite {trace.header.suite_version}"
    )


def _table(result: Replay) -> Table:
    """One row per step; the first failing row highlighted, later ones red."""
    table = Table(title=f"replay against {result.against}")
    against = result.against.split(" ", 1)[0]  # crate, model or canary
    for column in ("step", "operation", "model", against, "check"):
        table.add_column(column, justify="right" if column == "step" else "left")
    first = result.first_failure
    kind = result.trace.kind
    for recorded, verdict in zip(result.trace.steps, result.verdicts, strict=False):
        report = verdict.report
        operation = Text(kind.show_op(verdict.op))
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
            Text("-" if report is None else show_outcome(kind, report.expected)),
            Text("crashed" if report is None else show_outcome(kind, report.actual)),
            "ok" if not verdict.failed else ", ".join(verdict.failed),
            style=style,
        )
    return table


def _notes(result: Replay, console: Console) -> None:
    """Crate-version and recorded-answer drift: informative, not failures."""
    trace = result.trace
    installed = crate_version()
    if result.against.startswith("crate") and trace.header.crate_version != installed:
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
        Text(
            f"first divergence at step {step}: {trace.kind.show_op(first.op)}",
            style="bold red",
        )
    )
    console.print(f"  failed: {', '.join(first.failed)}", markup=False)
    console.print(f"  {first.detail}", markup=False)
    for name in first.failed:
        if name not in HARNESS_CHECKS:
            console.print(f"  invariant {name}: {get(name).statement}", markup=False)


def parse_arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line, with `--out` only beside `--emit rust`."""
    arguments = add_emit_arguments(build_parser()).parse_args(argv)
    if arguments.out is not None and arguments.emit != "rust":
        raise UsageError("--out needs --emit rust")
    if arguments.out is not None:
        output_file(arguments.out, "--out")
        separate([trace_path(arguments.path)], [("--out", arguments.out)])
    return arguments


def emit_rust(arguments: argparse.Namespace, trace: Trace) -> str:
    """The trace as a Rust test; refused combinations are usage errors."""
    if arguments.against is not None or arguments.canary is not None:
        raise UsageError("--emit rust replays nothing: drop --against and --canary")
    try:
        return export(trace, export_name(arguments.path), probed_capabilities)
    except ExportError as error:
        raise UsageError(f"cannot export {arguments.path} as Rust: {error}") from None


def write_rust(text: str, out: Path | None) -> None:
    """Print the test, or write it to `out` (its folder made if missing)."""
    if out is None:
        sys.stdout.write(text)
        return
    write_results({out: text})


def replay_history(
    arguments: argparse.Namespace, console: Console | None
) -> int | None:
    """Check a concurrent history again, if PATH is one; else None."""
    file = history.minimal_file(arguments.path)
    if file is None:
        return None
    if arguments.against is not None or arguments.canary is not None:
        raise UsageError(
            "a concurrent history is checked against the model only: "
            "drop --against and --canary"
        )
    if arguments.emit == "rust":
        raise UsageError("a concurrent history has no Rust export (threads)")
    found = history.load(file)
    if arguments.reading is not None:
        found = replace(found, replica_apply=arguments.reading)
    if arguments.reaper_count is not None:
        found = replace(found, reaper_count=arguments.reaper_count)
    out = console or Console(
        width=None if sys.stdout.isatty() else CONSOLE_WIDTH_MIN, highlight=False
    )
    try:
        agreed = history.replay(found, out)
    except OutOfDomainError as error:  # checked before anything is printed
        raise InputError(
            str(file), "steps", f"outside the specification's domain: {error}"
        ) from None
    return EXIT_AGREE if agreed else EXIT_DIVERGED


def trace_of(arguments: argparse.Namespace) -> Trace:
    """The trace PATH names; `--reading` is for concurrent histories only."""
    trace = load(arguments.path)
    if arguments.reading is not None or arguments.reaper_count is not None:
        raise UsageError(
            "--reading and --reaper-count apply to concurrent histories only"
        )
    return trace


def main(argv: Sequence[str] | None = None, console: Console | None = None) -> int:
    """Run the command line; return the exit status."""
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    try:
        arguments = parse_arguments(argv)
        checked = replay_history(arguments, console)
        if checked is not None:
            return checked
        trace = trace_of(arguments)
        if arguments.emit == "rust":
            write_rust(emit_rust(arguments, trace), arguments.out)
            return EXIT_AGREE
        factory, label = factory_for(trace.kind, arguments.against, arguments.canary)
        result = replay(trace, factory, label)
    except (UsageError, InputError) as error:
        err.print(f"{PROG}: error: {error}", markup=False)
        return EXIT_USAGE
    except WriteFailed as error:
        return write_failed(PROG, error)
    out = console or Console(
        width=None if sys.stdout.isatty() else CONSOLE_WIDTH_MIN, highlight=False
    )
    render(result, out)
    return EXIT_AGREE if result.first_failure is None else EXIT_DIVERGED


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.replay", main)
