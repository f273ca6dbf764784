"""Exhaustive bounded exploration of the reference models (`python -m ci.explore`).

Every subject whose entry in the subject registry (`ci.subjects`) declares an
`Explorer` is explored: its declared bounds (`ci/explore/<subject>_bounds.py`
or `_graph.py`) are enumerated breadth-first by its `explore` into a
`networkx.MultiDiGraph` whose edges are labelled by operation and outcome
(`ci.explore.search`). On every state and every edge each `always` property
of the subject is checked; each `sometimes` goal must be reached unless the
bound declares it out of reach, with a reason. Node, edge and depth counts are
pinned in `ci/explore/state_counts.json` under the subject's name: a change is
a reviewed diff (`--update-counts`).

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
the default check, `--update-counts`, `--bench` and `--coverage` (through
the coverage runners its `Explorer.machines` names), and the commands its
`Explorer.commands` names (`ci/explore/<subject>_replay.py`: affinity's
`--replay`, `--counterexamples` and `--picture`, the scheduler's `--replay`
and `--counterexamples`; the queue's graph relabels payloads, so its paths
are not replayed verbatim, and it has no model canaries or picture).
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
from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    output_file,
    output_folder,
    write_failed,
    write_results,
)
from ci.explore.coverage import Coverage, measure
from ci.explore.paths import ReplayFailure, ReplayResult
from ci.explore.search import AnyExploration, BoundLike
from ci.inputs import InputError, at, expect_int, expect_object, read_json
from ci.profiles import SETTINGS_NAMES, selected_profile
from ci.replay.artifacts import point_latest
from properties import properties

__all__ = ["COUNTS_PATH", "coverage_summary", "main"]

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


def read_counts(
    subject: str = DEFAULT_SUBJECT, path: Path = COUNTS_PATH
) -> dict[str, dict[str, int]]:
    """The pinned counts per bound of `subject` (a malformed file: `InputError`)."""
    rows: dict[str, dict[str, int]] = _read_pinned(path).get(subject, {})
    return rows


def write_counts(
    explorations: Sequence[AnyExploration], path: Path = COUNTS_PATH
) -> None:
    """Pin the counts of `explorations`, keeping other bounds' rows."""
    pinned = _read_pinned(path) if path.exists() else {}
    for exploration in explorations:
        rows = pinned.setdefault(exploration.subject, {})
        rows[exploration.bound.name] = exploration.counts()
    write_results({path: json.dumps(pinned, indent=2, sort_keys=True) + "\n"})


def _read_pinned(path: Path) -> dict[str, Any]:
    """The counts file: per subject, its bounds' rows of counts."""
    try:
        document = read_json(path, COUNTS_BYTES_MAX)
        top = expect_object(document, "", frozenset(), frozenset(_any_key(document)))
        for name, value in sorted(top.items()):
            rows = expect_object(value, name, frozenset(), _any_key(value))
            for bound, row in sorted(rows.items()):
                _check_row(row, at(name, bound))
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


def artifact_dir() -> Path:
    """`ci/artifacts/explore/<utc-stamp>/`, with `latest` pointing at it."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    directory = ARTIFACTS_DIR / stamp
    directory.mkdir(parents=True, exist_ok=True)
    point_latest(ARTIFACTS_DIR, directory)
    return directory


# ---- coverage ---------------------------------------------------------------


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
    percent}` with exact totals from the bound's graph. The machine named for
    the subject runs the suite's machine (model against model, pinned to the
    bound); `restricted` runs one rule per operation type of the bound, inside
    it. `bounds` default to the explorer's `coverage_bounds`, `machines` to
    all of the subject's, `profile` to the selected Hypothesis profile.
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
