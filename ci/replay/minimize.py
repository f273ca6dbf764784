"""Minimize a failing trace by deleting steps (delta debugging), outside Hypothesis.

    python -m ci.replay.minimize PATH [--against crate|model] [--canary NAME]
                                      [--out FILE]

writes the smallest failing sub-program found next to PATH (`minimal.json` in
an artifact folder, `<name>.min.json` beside a trace file) unless `--out` says
where. Exit 0 when written, 1 when the trace does not fail (nothing to
minimize), 2 on a usage error or a malformed trace (one line on stderr).

Hypothesis shrinks a stateful program through its choice sequence; deleting a
step there changes which rules are enabled later, so a shrunk program often
keeps steps the failure does not need. Here a candidate program is judged by
replaying it (`ci.replay.replay`): it is kept when its first failing step
fails the same checks as the original's. Deletion is `ddmin` (Zeller and
Hildebrandt 2002) over the steps, then single-step deletion until no step can
go.

A subject's trace kind rebuilds the kept steps as a program
(`TraceKind.rebuild`): affinity handles are numbered in creation order, so
deleting an `Acquire` renumbers every later handle, which the affinity kind
maps; queue payloads are chosen by the program and need no mapping. Every
candidate is replayed, so a mapping that happens to change the program's
meaning costs a rejected candidate, never a wrong result.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ci.cli import (
    UsageError,
    WriteFailed,
    output_file,
    separate,
    write_failed,
    write_results,
)
from ci.inputs import InputError
from ci.replay.command import build_parser, factory_for, replay
from ci.replay.envelope import trace_path
from ci.replay.trace import Factory, Trace, load

REPLAYS_MAX: Final[int] = 5_000
"""Candidate replays per minimization; reaching it raises, never truncates."""


class MinimizeError(Exception):
    """The trace does not fail, or the replay budget ran out."""


class _Judge:
    """Replays candidates and counts them against the budget."""

    def __init__(self, trace: Trace, factory: Factory, replays_max: int) -> None:
        self.trace = trace
        self.factory = factory
        self.replays = 0
        self.replays_max = replays_max
        first = replay(trace, factory, "original").first_failure
        if first is None:
            raise MinimizeError("the trace does not fail; nothing to minimize")
        self.failed = first.failed

    def fails(self, keep: Sequence[int]) -> bool:
        """Whether the rebuilt program still fails the same checks first."""
        self.replays += 1
        if self.replays > self.replays_max:
            raise MinimizeError(f"more than {self.replays_max} replays; giving up")
        trace = self.trace
        program = [op for _, op in trace.kind.rebuild(trace, keep)]
        candidate = trace.kind.record(trace.setup, program, "candidate")
        first = replay(candidate, self.factory, "candidate").first_failure
        return first is not None and first.failed == self.failed


def _ddmin(judge: _Judge, keep: list[int]) -> list[int]:
    """Zeller's ddmin over complements, then one-step deletions to a fixpoint."""
    granularity = 2
    while len(keep) >= 2:  # ddmin splits into at least two parts
        size = -(-len(keep) // granularity)
        chunks = [keep[i : i + size] for i in range(0, len(keep), size)]
        for chunk in chunks:
            complement = [position for position in keep if position not in chunk]
            if complement and judge.fails(complement):
                keep = complement
                granularity = max(granularity - 1, 2)
                break
        else:
            if granularity >= len(keep):
                break
            granularity = min(granularity * 2, len(keep))
    changed = True
    while changed:
        changed = False
        for position in list(keep):
            candidate = [p for p in keep if p != position]
            if candidate and judge.fails(candidate):
                keep = candidate
                changed = True
    return keep


def minimize(
    trace: Trace, factory: Factory, replays_max: int = REPLAYS_MAX
) -> tuple[Trace, int]:
    """The smallest failing sub-program found, and the replays it took."""
    judge = _Judge(trace, factory, replays_max)
    kept = trace.kind.rebuild(trace, _ddmin(judge, list(range(len(trace.steps)))))
    description = (
        f"{trace.description} Minimized from {len(trace.steps)} to "
        f"{len(kept)} steps by deleting steps (python -m ci.replay.minimize)."
    ).strip()
    minimal = trace.kind.record(
        trace.setup,
        [op for _, op in kept],
        description,
        [trace.steps[position].comment for position, _ in kept],
    )
    return minimal, judge.replays


def default_output(path: Path) -> Path:
    """`minimal.json` inside an artifact folder, else `<stem>.min.json` beside it."""
    if path.is_dir():
        return path / "minimal.json"
    return path.with_name(f"{path.stem}.min.json")


def _checked(arguments: argparse.Namespace) -> Path:
    """The output path, checked before any replay; options that would do nothing."""
    if arguments.reading is not None:
        raise UsageError("--reading applies to ci.replay's concurrent histories")
    if arguments.reaper_count is not None:
        raise UsageError("--reaper-count applies to ci.replay's concurrent histories")
    out = output_file(arguments.out or default_output(arguments.path), "--out")
    separate([trace_path(arguments.path)], [("--out", out)])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = build_parser()
    parser.prog = "python -m ci.replay.minimize"
    parser.description = "Minimize a failing trace by deleting steps."
    parser.add_argument("--out", type=Path, default=None, help="where to write")
    try:
        arguments: argparse.Namespace = parser.parse_args(argv)
        out = _checked(arguments)
        trace = load(arguments.path)
        factory, label = factory_for(trace.kind, arguments.against, arguments.canary)
        minimal, replays = minimize(trace, factory)
    except (UsageError, InputError) as error:
        print(f"ci.replay.minimize: error: {error}", file=sys.stderr)
        return 2
    except MinimizeError as error:
        print(f"ci.replay.minimize: {error}", file=sys.stderr)
        return 1
    try:
        write_results({out: minimal.dumps()})
    except WriteFailed as error:
        return write_failed("ci.replay.minimize", error)
    print(
        f"{len(trace.steps)} -> {len(minimal.steps)} steps against {label} "
        f"({replays} replays): {out}"
    )
    print(f"python -m ci.replay {out}")
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.replay.minimize", main)
