"""Exhaustive bounded exploration of the reference models (`python -m ci.explore`).

Every subject whose entry in the subject registry (`ci.subjects`) declares an
`Explorer` is explored: the affinity table (`--subject affinity`, the default;
its bounds are `BOUNDS` in `ci/explore/bounds.py`, its states
`ci/explore/graph.py`), the policy queue (`--subject queue`; bounds
`QUEUE_BOUNDS` and canonical states in `ci/explore/queue_graph.py`) and the
public scheduler (`--subject scheduler`; bounds `SCHEDULER_BOUNDS` and states
in `ci/explore/scheduler_graph.py`). Each declared bound is enumerated
breadth-first into a `networkx.MultiDiGraph` whose edges are labelled by
operation and outcome. On every state and every edge each `always` property
of the subject is checked; each `sometimes` goal must be reached unless the
bound declares it out of reach, with a reason. Node, edge and depth counts are
pinned in `ci/explore/state_counts.json` (affinity bounds at the top level, the
queue's and the scheduler's under their own keys: the entry's
`counts_section`): a change is a reviewed diff (`--update-counts`).

A pass means "no property violated within these bounds" -- the configurations,
vocabularies and depths listed in the bounds -- never "verified".

Commands (exit status 1 on a violation, a goal or count mismatch, a replay
disagreement or a surviving canary; 2, with one line on stderr, on bad
arguments):

    python -m ci.explore                   enumerate, check, compare counts
    python -m ci.explore --update-counts   rewrite the subject's pinned counts
    python -m ci.explore --bench           states/s and seconds per bound
    python -m ci.explore --replay          edge-covering replay against the crate
    python -m ci.explore --counterexamples shortest counterexamples of the canaries
    python -m ci.explore --coverage        how much of each bound Hypothesis covers
                                           (coverage_summary() for the gate)
    python -m ci.explore --picture     regenerate ci/explore/graphs/picture.{dot,svg}

`--subject NAME` picks the subject (default affinity); every subject offers
the default check, `--update-counts`, `--bench` and `--coverage`, and the
commands its `Explorer.commands` names (affinity: `--replay`,
`--counterexamples`, `--picture`; the scheduler: `--replay` and
`--counterexamples`, both through scheduler traces
(`ci/explore/scheduler_replay.py`); the queue's graph relabels payloads, so
its paths are not replayed verbatim, and it has no model canaries or picture).
`--bound NAME` (repeatable) restricts any command to some of the subject's
bounds; `--settings NAME` picks the Hypothesis settings
for `--coverage` (default: the selected one, `ci` unless told).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from ci import subjects
from ci.canaries.affinity import MODEL_CANARIES
from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    output_file,
    output_folder,
    write_failed,
    write_results,
)
from ci.explore.bounds import BOUNDS, CI_BOUNDS, PICTURE_BOUND, bound_named
from ci.explore.coverage import (
    Coverage,
    MachineRun,
    measure,
    run_machine,
    run_restricted_machine,
)
from ci.explore.graph import Bound, Exploration, Violation, explore
from ci.explore.paths import (
    ReplayFailure,
    ReplayResult,
    edge_cover_paths,
    replay_paths,
)
from ci.explore.picture import to_dot, to_svg
from ci.explore.queue_graph import (
    CI_QUEUE_BOUNDS,
    QUEUE_BOUNDS,
    QueueBound,
    queue_bound_named,
)
from ci.explore.search import AnyExploration, BoundLike, ExplorationCapError
from ci.explore.shrink import (
    Counterexample,
    ShrinkQuality,
    replay_command,
    shortest_counterexample,
    shrink_quality,
    write_trace,
)
from ci.inputs import InputError, at, expect_int, expect_object, read_json
from ci.profiles import SETTINGS_NAMES, selected_profile
from properties import properties

__all__ = [
    "BOUNDS",
    "CI_BOUNDS",
    "CI_QUEUE_BOUNDS",
    "COUNTS_PATH",
    "QUEUE_BOUNDS",
    "Bound",
    "Exploration",
    "ExplorationCapError",
    "QueueBound",
    "Violation",
    "bound_named",
    "coverage_summary",
    "explore",
    "main",
    "queue_bound_named",
]

DEFAULT_SUBJECT = "affinity"
"""The subject explored when `--subject` is not given."""

COUNTS_PATH = Path(__file__).with_name("state_counts.json")
COUNTS_BYTES_MAX = 1024 * 1024
"""The pinned counts are a few kilobytes; a larger file is not them."""
GRAPHS_DIR = Path(__file__).with_name("graphs")
ARTIFACTS_DIR = Path(__file__).resolve().parents[1] / "artifacts" / "explore"


def explorer(subject: str) -> subjects.Explorer:
    """The registered explorer of `subject`; ValueError if it has none."""
    found = subjects.entry(subject).explorer
    if found is None:
        raise ValueError(f"subject {subject!r} declares no explorer")
    return found


def subject_bounds(subject: str) -> tuple[BoundLike, ...]:
    """The declared bounds of `subject`, smallest first."""
    bounds: tuple[BoundLike, ...] = explorer(subject).bounds()
    return bounds


def subject_of(bound: BoundLike) -> str:
    """Which explorable subject declares `bound` (or one with its name and type)."""
    for candidate in subjects.explorable():
        if any(
            type(declared) is type(bound) and declared.name == bound.name
            for declared in explorer(candidate.name).bounds()
        ):
            return candidate.name
    raise ValueError(f"no subject declares a bound like {bound!r}")


def explore_bound(bound: BoundLike, subject: str | None = None) -> AnyExploration:
    """Enumerate a declared bound of any explorable subject."""
    enumerate_bound = explorer(subject or subject_of(bound)).explore()
    exploration: AnyExploration = enumerate_bound(bound)
    return exploration


# ---- pinned counts ---------------------------------------------------------


def _sections() -> set[str]:
    """The keys of the counts file that hold a subject's rows, not a bound's."""
    return {
        section
        for found in subjects.explorable()
        if (section := explorer(found.name).counts_section) is not None
    }


def read_counts(
    subject: str = DEFAULT_SUBJECT, path: Path = COUNTS_PATH
) -> dict[str, dict[str, int]]:
    """The pinned counts per bound of `subject` (a malformed file: `InputError`)."""
    pinned = _read_pinned(path)
    section = explorer(subject).counts_section
    if section is not None:
        rows: dict[str, dict[str, int]] = pinned.get(section, {})
        return rows
    sections = _sections()
    return {name: row for name, row in pinned.items() if name not in sections}


def write_counts(
    explorations: Sequence[AnyExploration], path: Path = COUNTS_PATH
) -> None:
    """Pin the counts of `explorations`, keeping other bounds' rows."""
    pinned = _read_pinned(path) if path.exists() else {}
    for exploration in explorations:
        section = explorer(exploration.subject).counts_section
        rows = pinned if section is None else pinned.setdefault(section, {})
        rows[exploration.bound.name] = exploration.counts()
    write_results({path: json.dumps(pinned, indent=2, sort_keys=True) + "\n"})


def _read_pinned(path: Path) -> dict[str, Any]:
    """The counts file: bounds' rows of counts, some grouped under a subject."""
    try:
        document = read_json(path, COUNTS_BYTES_MAX)
        top = expect_object(document, "", frozenset(), frozenset(_any_key(document)))
        sections = _sections()
        for name, value in sorted(top.items()):
            if name in sections:
                rows = expect_object(value, name, frozenset(), _any_key(value))
                for bound, row in sorted(rows.items()):
                    _check_row(row, at(name, bound))
            else:
                _check_row(value, name)
    except InputError as error:
        raise error.in_file(str(path)) from None
    return top


def _any_key(value: object) -> frozenset[str]:
    return frozenset(value) if isinstance(value, dict) else frozenset()


def _check_row(row: object, where: str) -> None:
    """One bound's counts: names to whole numbers of at least 0."""
    for name, count in sorted(
        expect_object(row, where, frozenset(), _any_key(row)).items()
    ):
        expect_int(count, at(where, name), 0)


# ---- checking one bound ----------------------------------------------------


def problems(
    exploration: AnyExploration, pinned: dict[str, dict[str, int]]
) -> list[str]:
    """Everything wrong with one exploration: violations, goals, counts, closure."""
    found = [
        f"violated {v.prop} after {len(v.path)} steps: {list(v.path)}"
        for v in exploration.violations
    ]
    missing, stale = exploration.goal_mismatch()
    found += [f"goal never reached: {goal}" for goal in missing]
    found += [f"goal declared out of reach but reached: {goal}" for goal in stale]
    bound = exploration.bound
    if explorer(exploration.subject).closes and exploration.horizon_states:
        found.append(
            f"the graph did not close within depth_max={bound.depth_max}: "
            f"{exploration.horizon_states} states left unexpanded"
        )
    expected = pinned.get(bound.name)
    actual = exploration.counts()
    if expected != actual:
        found.append(f"counts {actual} differ from {COUNTS_PATH.name}: {expected}")
    return found


def _exercise_table(subject: str, explorations: Sequence[AnyExploration]) -> Table:
    """Per `always` property and bound: non-vacuous states or edges (boundary)."""
    table = Table(
        title=(
            f"{subject}: states (state properties) or edges (step properties) on "
            "which each always property was non-vacuous, at its boundary in brackets"
        )
    )
    table.add_column("property", no_wrap=True)
    table.add_column("over")
    for exploration in explorations:
        table.add_column(exploration.bound.name, justify="right")
    for prop in properties(subject, "always"):
        cells = []
        for exploration in explorations:
            counts = exploration.exercise()[prop.name]
            boundary = "" if prop.boundary is None else f" [{counts['boundary']}]"
            cells.append(f"{counts['non_vacuous']}{boundary}")
        table.add_row(prop.name, prop.over, *cells)
    return table


def exercise_json(
    subject: str, explorations: Sequence[AnyExploration]
) -> dict[str, Any]:
    """Per bound: its counts and, per `always` property, how often it was exercised."""
    return {
        "subject": subject,
        "bounds": {
            exploration.bound.name: {
                **exploration.counts(),
                "properties": exploration.exercise(),
                "never_non_vacuous": sorted(
                    name
                    for name, counts in exploration.exercise().items()
                    if counts["non_vacuous"] == 0
                ),
            }
            for exploration in explorations
        },
    }


def _check(
    subject: str,
    bounds: Sequence[BoundLike],
    console: Console,
    json_path: Path | None = None,
) -> int:
    pinned = read_counts(subject)
    table = Table(
        title=f"Bounded exploration of {subject} (no violation within these bounds)"
    )
    columns = ("bound", "states", "edges", "depth", "horizon", "goals", "out of reach")
    for column in (*columns, "result"):
        table.add_column(column, justify="left" if column == "bound" else "right")
    failures: list[str] = []
    explorations = []
    for bound in bounds:
        exploration = explore_bound(bound, subject)
        explorations.append(exploration)
        found = problems(exploration, pinned)
        failures += [f"{bound.name}: {problem}" for problem in found]
        counts = exploration.counts()
        goals = len(exploration.reached) + len(exploration.unreached_goals())
        table.add_row(
            bound.name,
            str(counts["states"]),
            str(counts["edges"]),
            str(counts["depth"]),
            str(counts["horizon_states"]),
            f"{len(exploration.reached)}/{goals}",
            str(len(bound.goals_out_of_reach)),
            "[red]FAIL[/red]" if found else "[green]ok[/green]",
        )
    console.print(table)
    for bound in bounds:
        console.print(f"  {bound.name}: {bound.describe()}", markup=False)
    console.print(_exercise_table(subject, explorations))
    if json_path is not None:
        text = json.dumps(exercise_json(subject, explorations), indent=2) + "\n"
        write_results({json_path: text})
        console.print(f"wrote {json_path}")
    for failure in failures:
        console.print(f"[red]{failure}[/red]")
    return 1 if failures else 0


# ---- benchmark --------------------------------------------------------------


def _bench(subject: str, bounds: Sequence[BoundLike], console: Console) -> int:
    table = Table(title="Exploration speed (one process, wall clock)")
    for column in ("bound", "states", "edges", "seconds", "states/s", "edges/s"):
        table.add_column(column, justify="left" if column == "bound" else "right")
    for bound in bounds:
        started = time.perf_counter()
        exploration = explore_bound(bound, subject)
        seconds = time.perf_counter() - started
        states = exploration.graph.number_of_nodes()
        edges = exploration.graph.number_of_edges()
        table.add_row(
            bound.name,
            str(states),
            str(edges),
            f"{seconds:.2f}",
            f"{states / seconds:,.0f}",
            f"{edges / seconds:,.0f}",
        )
    console.print(table)
    return 0


# ---- replay against the crate ------------------------------------------------


def replay_bound(bound: Bound) -> ReplayResult:
    """Cover every edge of `bound` with root paths and replay them on the crate."""
    from impl.adapter import CrateAffinity  # noqa: PLC0415 - only when replaying

    exploration = explore(bound)
    return replay_paths(exploration, edge_cover_paths(exploration), CrateAffinity)


def replay_table(
    title: str,
    results: Iterable[tuple[str, ReplayResult]],
    console: Console,
    show: Callable[[str, int, ReplayFailure], str],
) -> int:
    """Print each bound's edge-covering replay and its failures; 1 if any failed.

    `show(bound, number, failure)` is the line that lets a reader rerun a failure.
    """
    table = Table(title=title)
    for column in ("bound", "edges", "paths", "steps", "disagreements"):
        table.add_column(column, justify="left" if column == "bound" else "right")
    failed = False
    for name, result in results:
        failed = failed or bool(result.failures)
        table.add_row(
            name,
            str(result.edges),
            str(result.paths),
            str(result.steps),
            str(len(result.failures)),
        )
        for number, failure in enumerate(result.failures):
            console.print(f"[red]{name}: {failure.difference}[/red]")
            console.print(show(name, number, failure))
    console.print(table)
    return 1 if failed else 0


def _replay(bounds: Sequence[Bound], console: Console) -> int:
    return replay_table(
        "Edge-covering replay: model vs dynamo-kv-router",
        ((bound.name, replay_bound(bound)) for bound in bounds),
        console,
        lambda _name, _number, failure: f"  path: {list(failure.path)}",
    )


# ---- counterexamples and shrink quality ------------------------------------------


def counterexamples(bounds: Sequence[Bound]) -> dict[str, Counterexample | None]:
    """The shortest counterexample of each model canary over `bounds`."""
    return {
        name: shortest_counterexample(name, model_type, bounds)
        for name, model_type in sorted(MODEL_CANARIES.items())
    }


def shrink_report(bounds: Sequence[Bound]) -> list[ShrinkQuality]:
    """Hypothesis' shrunk length over the BFS-shortest length, per model canary."""
    return [
        shrink_quality(name, model_type, bounds)
        for name, model_type in sorted(MODEL_CANARIES.items())
    ]


def _counterexamples(bounds: Sequence[Bound], out: Path, console: Console) -> int:
    failed = False
    table = Table(title="Shortest counterexamples and Hypothesis' shrinking")
    for column in ("canary", "bound", "property", "BFS", "Hypothesis", "ratio"):
        table.add_column(column, justify="left" if column != "ratio" else "right")
    for name, example in counterexamples(bounds).items():
        if example is None:
            failed = True
            console.print(f"[red]{name}: survived every bound[/red]")
            continue
        path = write_trace(out / name / "trace.json", example)
        console.print(f"{name}: {len(example.ops)} steps, violates {example.prop}")
        for op in example.ops:
            console.print(f"    {op}")
        console.print(f"  replay: {replay_command(path.parent, example)}")
    for quality in shrink_report(bounds):
        table.add_row(
            quality.canary,
            quality.bound,
            quality.prop,
            str(quality.bfs_steps),
            str(quality.hypothesis_steps),
            f"{quality.ratio:.2f}",
        )
    console.print(table)
    return 1 if failed else 0


def artifact_dir() -> Path:
    """`ci/artifacts/explore/<utc-stamp>/`, with `latest` pointing at it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    directory = ARTIFACTS_DIR / stamp
    directory.mkdir(parents=True, exist_ok=True)
    latest = ARTIFACTS_DIR / "latest"
    if latest.is_symlink() or latest.exists():
        latest.unlink()
    latest.symlink_to(stamp)
    return directory


# ---- coverage ---------------------------------------------------------------


_Runner = Callable[[Any, str], MachineRun[Any, Any]]


def _run_affinity_machine(bound: Bound, profile: str) -> MachineRun[Any, Any]:
    return run_machine(bound.config, profile)


AFFINITY_RUNNERS: dict[str, _Runner] = {
    "affinity": _run_affinity_machine,
    "restricted": run_restricted_machine,
}
"""`affinity`: the suite's machine, config pinned; `restricted`: the bound's ops."""


def subject_machines(subject: str) -> tuple[str, ...]:
    """The machines whose coverage of `subject`'s bounds is measured."""
    return tuple(explorer(subject).machines())


def coverage(
    bound: BoundLike,
    profile: str | None = None,
    machine: str | None = None,
    subject: str | None = None,
) -> Coverage:
    """How much of `bound` a Hypothesis machine covers (see `subject_machines`).

    `machine` defaults to the subject's own differential machine.
    """
    subject = subject or subject_of(bound)
    runners = explorer(subject).machines()
    chosen = machine or next(iter(runners))
    if chosen not in runners:
        known = tuple(runners)
        raise ValueError(f"unknown {subject} machine {chosen!r}; known: {known}")
    exploration = explore_bound(bound, subject)
    return measure(exploration, runners[chosen](bound, profile or selected_profile()))


def coverage_summary(
    bounds: Sequence[str] | None = None,
    profile: str | None = None,
    machines: Sequence[str] | None = None,
    subject: str = DEFAULT_SUBJECT,
) -> list[dict[str, Any]]:
    """Plain data for the gate: per bound and machine, what was covered of what.

    Each row holds `subject`, `states`, `edges` and per-rule `{covered, total,
    percent}` with exact totals from the bound's graph. For affinity,
    `affinity` runs the suite's machine (model against model, configuration
    pinned to the bound's); for the queue, `queue` runs the suite's queue
    machine with the bound's profile; `restricted` runs one rule per operation
    type of the bound, inside it. `bounds` default to the explorer's
    `coverage_bounds`, `machines` to all of the subject's, `profile` to the
    selected Hypothesis profile.
    """
    default = explorer(subject).coverage_bounds
    declared = {bound.name: bound for bound in subject_bounds(subject)}
    return [
        {"subject": subject}
        | coverage(declared[name], profile, machine, subject).as_dict()
        for name in bounds or default
        for machine in machines or subject_machines(subject)
    ]


def _coverage(
    subject: str,
    bounds: Sequence[BoundLike],
    profile: str | None,
    console: Console,
) -> int:
    machines = subject_machines(subject)
    for bound, machine in [(b, m) for b in bounds for m in machines]:
        result = coverage(bound, profile, machine, subject).as_dict()
        table = Table(
            title=(
                f"{subject} {bound.name}, {machine} machine ({result['profile']}, "
                f"{result['programs']} programs, {result['steps']} steps, "
                f"{result['steps_in_graph']} inside the bound)"
            )
        )
        for column in ("what", "covered", "total", "%"):
            table.add_column(column, justify="left" if column == "what" else "right")
        rows = [("states", result["states"]), ("edges", result["edges"])]
        rows += [(f"rule {r}", f) for r, f in result["rules"].items() if f["total"]]
        for what, fraction in rows:
            table.add_row(
                what,
                str(fraction["covered"]),
                str(fraction["total"]),
                f"{fraction['percent']:.2f}",
            )
        console.print(table)
    return 0


# ---- picture ---------------------------------------------------------------


def picture(profile: str = "ci") -> tuple[str, str]:
    """DOT and SVG of the picture bound, edges marked covered by Hypothesis."""
    bound = bound_named(PICTURE_BOUND)
    exploration = explore(bound)
    covered = measure(exploration, run_machine(bound.config, profile))
    note = (
        f"bound {bound.name}: {exploration.graph.number_of_nodes()} states, "
        f"{exploration.graph.number_of_edges()} edges, depth {exploration.depth}; "
        f"Hypothesis ({profile} profile) took {covered.edges.covered} edges "
        f"and visited {covered.states.covered} states"
    )
    return (
        to_dot(exploration, covered.covered_edges, note),
        to_svg(exploration, covered.covered_edges, note),
    )


def _picture(console: Console) -> int:
    dot, svg = picture()
    files = {
        GRAPHS_DIR / f"{PICTURE_BOUND}.{suffix}": text
        for suffix, text in (("dot", dot), ("svg", svg))
    }
    write_results(files)
    for path in files:
        console.print(f"wrote {path}")
    return 0


# ---- command line ------------------------------------------------------------


COMMANDS = (
    "update_counts",
    "bench",
    "replay",
    "counterexamples",
    "coverage",
    "picture",
)
OPTIONAL = ("replay", "counterexamples", "picture")
"""Commands a subject offers only if its `Explorer.commands` names them."""


def _run_replay(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    del args
    return _replay(bounds, console)


def _run_counterexamples(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    return _counterexamples(bounds, args.out or artifact_dir(), console)


def _run_picture(
    bounds: Sequence[Bound], args: argparse.Namespace, console: Console
) -> int:
    del bounds, args
    return _picture(console)


AFFINITY_COMMANDS: dict[str, subjects.ExploreCommand] = {
    "replay": _run_replay,
    "counterexamples": _run_counterexamples,
    "picture": _run_picture,
}
"""The affinity explorer's own commands: verbatim edge replay on the crate, the
model canaries' shortest counterexamples, the picture bound."""


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line; `UsageError` (one line) for bad arguments."""
    parser = OneLineParser(prog="python -m ci.explore")
    choices = [found.name for found in subjects.explorable()]
    parser.renamed("--profile", "--settings")  # old spelling, refused
    parser.add_argument("--subject", choices=choices, default=DEFAULT_SUBJECT)
    parser.add_argument("--bound", action="append", metavar="NAME")
    command = parser.add_mutually_exclusive_group()
    for name in COMMANDS:
        command.add_argument(f"--{name.replace('_', '-')}", action="store_true")
    parser.add_argument(
        "--settings", choices=SETTINGS_NAMES, help="Hypothesis profile for --coverage"
    )
    parser.add_argument("--out", type=Path, help="directory for --counterexamples")
    parser.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="with the default check: write per bound and property the states or "
        "edges on which it was non-vacuous (and at its boundary) to FILE",
    )
    args = parser.parse_args(argv)
    known = [bound.name for bound in subject_bounds(args.subject)]
    for name in args.bound or ():
        if name not in known:
            raise UsageError(
                f"argument --bound: no {args.subject} bound named {name!r} "
                f"(known: {', '.join(known)})"
            )
    for name in OPTIONAL:
        if getattr(args, name) and name not in explorer(args.subject).commands():
            flag = name.replace("_", "-")
            offering = [
                found.name
                for found in subjects.explorable()
                if name in explorer(found.name).commands()
            ]
            raise UsageError(
                f"argument --{flag}: applies to --subject {', '.join(offering)} only"
            )
    _check_options(args)
    return args


def _check_options(args: argparse.Namespace) -> None:
    """Refuse an option the chosen command ignores; check outputs before work."""
    chosen = [name for name in COMMANDS if getattr(args, name)]
    command = chosen[0] if chosen else "check"
    given = {"--json": args.json, "--out": args.out, "--settings": args.settings}
    used_by = {"--json": "check", "--out": "counterexamples", "--settings": "coverage"}
    for flag, value in sorted(given.items()):
        if value is not None and command != used_by[flag]:
            raise UsageError(f"{flag}: the {command} command does not use it")
    if args.picture and args.bound is not None:
        raise UsageError("--bound: --picture draws its own bound")
    if args.out is not None:
        output_folder(args.out, "--out")
    if args.json is not None:
        output_file(args.json, "--json")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command the flags name (default: enumerate and check)."""
    try:
        args = parse(argv)
    except UsageError as error:
        print(f"ci.explore: error: {error}", file=sys.stderr)
        return 2
    try:
        return _run(args)
    except InputError as error:
        print(f"ci.explore: error: {error}", file=sys.stderr)
        return 2
    except WriteFailed as error:
        return write_failed("ci.explore", error)


def _run(args: argparse.Namespace) -> int:
    """The command the flags name, on parsed and checked flags."""
    subject: str = args.subject
    bounds = [
        b for b in subject_bounds(subject) if args.bound is None or b.name in args.bound
    ]
    console = Console()
    if not console.is_terminal:
        console.width = 140  # logs: keep property names whole
    if args.update_counts:
        write_counts([explore_bound(bound, subject) for bound in bounds])
        console.print(f"wrote {subject} counts to {COUNTS_PATH}")
        return 0
    if args.bench:
        return _bench(subject, bounds, console)
    if args.coverage:
        return _coverage(subject, bounds, args.settings, console)
    for name in OPTIONAL:
        if getattr(args, name):
            return explorer(subject).commands()[name](bounds, args, console)
    return _check(subject, bounds, console, args.json)


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.explore", main)
