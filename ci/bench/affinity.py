"""Benchmark the affinity table: machine steps and trace replay, per CPU second.

`python -m ci.bench.affinity [--examples N] [--rounds N] [--workers N]` prints
one table:

* the affinity machine, derandomized (both runs draw the same programs), the
  model against the crate and then against a second model;
* trace replay (`ci.replay.command.replay`, which minimization, the corpus,
  the dossier's witnesses and the explorer's edge replay all go through) of
  the committed affinity corpus traces the pinned crate can build, `--rounds`
  times over, against the crate and against a second model;
* the machine against the crate in `--workers` processes at once, each
  drawing programs of its own: what a CI job spread over that many cores runs
  per wall-clock second.

Then the differential overhead: CPU per step against the crate over CPU per
step against a second model. Wall time is shown beside CPU time because the
machine may be shared (`ci.bench.figures`).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from hypothesis import settings

from ci.bench.figures import (
    Figures,
    machine_figures,
    parallel_machine_figures,
    print_table,
    ratio,
    timed,
)
from ci.cli import OneLineParser, UsageError, positive_int
from ci.replay.command import replay
from ci.replay.corpus import corpus_files
from ci.replay.trace import Factory, Trace, load
from model.affinity.table import ModelAffinity
from stateful.affinity_machine import AffinityMachine

SUBJECT = "affinity"


def corpus_traces(crate: Factory) -> list[Trace]:
    """The committed affinity traces the pinned crate can build, by file name."""
    traces = []
    for path in corpus_files():
        trace = load(path)
        if trace.header.subject != SUBJECT:
            continue
        try:
            replay(trace, crate, "crate")
        except UsageError:  # e.g. a manual-clock trace: 1.6.1 has no manual clock
            continue
        traces.append(trace)
    return traces


def replay_figures(
    workload: str, traces: Sequence[Trace], factory: Factory, rounds: int
) -> Figures:
    """Replay every trace `rounds` times against `factory`; count the steps."""

    def run() -> int:
        steps = 0
        for _ in range(rounds):
            for trace in traces:
                steps += len(replay(trace, factory, workload).verdicts)
        return steps

    return timed(workload, run)


def main(argv: Sequence[str] | None = None) -> int:
    """Print machine and replay figures, against the crate and the model."""
    parser = OneLineParser(prog="python -m ci.bench.affinity")
    parser.add_argument("--examples", type=positive_int, default=200)
    parser.add_argument("--rounds", type=positive_int, default=20)
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=2,
        help="processes for the last row (one per core of a CI job)",
    )
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(f"ci.bench.affinity: error: {error}", file=sys.stderr)
        return 2
    import ci.profiles  # noqa: F401, PLC0415 - loads the selected Hypothesis profile
    from impl.adapter import CrateAffinity  # noqa: PLC0415 - after argument parsing

    chosen = settings(max_examples=args.examples, derandomize=True, database=None)
    crate = machine_figures(
        "machine, model vs crate", AffinityMachine, CrateAffinity, chosen
    )
    model = machine_figures(
        "machine, model vs model", AffinityMachine, ModelAffinity, chosen
    )
    traces = corpus_traces(CrateAffinity)
    replayed = replay_figures(
        "replay, model vs crate", traces, CrateAffinity, args.rounds
    )
    alone = replay_figures("replay, model vs model", traces, ModelAffinity, args.rounds)
    spread = parallel_machine_figures(
        f"machine, model vs crate, {args.workers} workers",
        AffinityMachine,
        CrateAffinity,
        chosen,
        args.workers,
    )
    print_table(
        f"affinity: {args.examples} programs (per worker); {len(traces)} corpus "
        f"traces x {args.rounds} rounds",
        (crate, model, replayed, alone, spread),
    )
    print(f"differential / model-only, CPU per step: {ratio(crate, model):.2f}")
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.affinity", main)
