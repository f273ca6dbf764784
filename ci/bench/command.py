"""Benchmark a subject's machine and corpus replay, per CPU second.

`python -m ci.bench SUBJECT [--examples N] [--rounds N] [--workers N]`
prints one table for any registered subject (`ci.subjects`):

* its differential machine, the model against the crate and then against a
  second model: under the loaded Hypothesis profile, or `--examples N`
  derandomized programs (both runs draw the same programs);
* trace replay (`ci.replay.command.replay`, which minimization, the corpus,
  the dossier's witnesses and the explorer's edge replay all go through) of
  the subject's committed corpus traces the pinned crate can build, `--rounds`
  times over, against the crate and against a second model;
* with `--workers N`, the machine against the crate in N processes at once,
  each drawing programs of its own: what a CI job spread over that many
  cores runs per wall-clock second;
* the rows of the subject's own benchmark, if its entry names one (`bench`).

Then the differential overhead: CPU per step against the crate over CPU per
step against a second model. Wall time is shown beside CPU time because the
machine may be shared (`ci.bench.figures`). `python -m ci.bench.affinity`,
`ci.bench.queue` and `ci.bench.scheduler` run this for their subject.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from hypothesis import settings

from ci import subjects
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

ROUNDS_DEFAULT = 20


def corpus_traces(subject: str, crate: Factory) -> list[Trace]:
    """The committed traces of `subject` the pinned crate can build, by file name."""
    traces = []
    for path in corpus_files():
        trace = load(path)
        if trace.header.subject != subject:
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


def bench(
    entry: subjects.SubjectEntry,
    examples: int | None = None,
    rounds: int = ROUNDS_DEFAULT,
    workers: int | None = None,
) -> None:
    """Print the subject's figures (see the module's docstring)."""
    import ci.profiles  # noqa: F401, PLC0415 - loads the selected Hypothesis profile

    machine = entry.machine()
    crate, model = entry.kind().crate_factory(), entry.kind().model_factory()
    chosen = (
        None
        if examples is None
        else settings(max_examples=examples, derandomize=True, database=None)
    )
    against = machine_figures("machine, model vs crate", machine, crate, chosen)
    alone = machine_figures("machine, model vs model", machine, model, chosen)
    rows = [against, alone]
    title = entry.name if examples is None else f"{entry.name}: {examples} programs"
    traces = corpus_traces(entry.name, crate)
    if traces:
        rows.append(replay_figures("replay, model vs crate", traces, crate, rounds))
        rows.append(replay_figures("replay, model vs model", traces, model, rounds))
        title += f"; {len(traces)} corpus traces x {rounds} rounds"
    if workers is not None:
        workload = f"machine, model vs crate, {workers} workers"
        rows.append(parallel_machine_figures(workload, machine, crate, chosen, workers))
        title += f"; {workers} workers"
    if entry.bench is not None:
        rows += entry.bench()()
    print_table(title, rows)
    print(f"differential / model-only, CPU per step: {ratio(against, alone):.2f}")


def main(argv: Sequence[str] | None = None, prog: str = "ci.bench") -> int:
    """Print the figures of the subject the arguments name."""
    parser = OneLineParser(prog=f"python -m {prog}")
    parser.add_argument("subject", choices=subjects.names())
    parser.add_argument("--examples", type=positive_int)
    parser.add_argument("--rounds", type=positive_int, default=ROUNDS_DEFAULT)
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="processes for a last machine row (one per core of a CI job)",
    )
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    entry = subjects.entry(args.subject)
    bench(entry, args.examples, args.rounds, args.workers)
    return 0


def subject_main(subject: str, *defaults: str) -> Callable[..., int]:
    """The `main` of `python -m ci.bench.<subject>`: `SUBJECT` and `defaults` given."""

    def run(argv: Sequence[str] | None = None) -> int:
        given = sys.argv[1:] if argv is None else list(argv)
        return main([subject, *defaults, *given], f"ci.bench.{subject}")

    return run
