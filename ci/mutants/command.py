"""Mutation sweep: how many source mutants of the pinned crate the suite catches.

The set: cargo-mutants' mutants of `src/services/selection/affinity.rs` and
`src/scheduling/policy_queue.rs` plus our operators' that it does not generate
(`ci/mutants/cargo_mutants.py`, `ci/mutants/operators.py`). A run takes one
shard of it (`--shard K/N`: every N-th mutant of the id-sorted set) or the
`--ids` given (`--shard 2,4-16/16` runs those shards in turn after one set-up,
one report folder each; `--resume DIR` continues an interrupted run in its
folder, keeping its verdicts), and for each mutant, in id order (`--source TREE` mutates
another dynamo-kv-router tree instead of the pinned crate, for example a
manual-clock revision, with the binding features that tree supports)::

    1. apply it to a work copy of the pinned crate;
    2. rebuild the binding against that copy (one CARGO_TARGET_DIR, so the
       rebuild is incremental, ~10-20 s) into a copy of our Python tree; a
       mutant that does not compile is *unviable* and stops here;
    3. at the same time (the crate's test build already starts during step 2)
       a. our suite on that tree: `pytest -x -q -p no:cacheprovider
          --hypothesis-profile=ci <the component's machine and unit tests>`
          (`PYTEST_PATHS_BY_FILE`; `--pytest-paths "stateful tests"` runs
          everything) under a time limit, and
       b. the crate's own `cargo test --lib` for the mutated module and the
          modules that drive it, on the same mutated source;
    4. record, per side, caught / missed / timeout / error (and flaky, for a
       crate failure that does not repeat when rerun alone), our time to
       detect and which check caught it (failing test id and first assertion
       line).

The editable install in `impl/` is never touched: mutant builds go to a copy of
the Python tree in the work folder (`ci/build_local.py`). Before the first
mutant the unmutated copy is built and both sides run once as a baseline;
tests that fail there (for example the check that the binding comes from
crates.io, which a path build cannot pass) are deselected for every mutant and
listed in the report.

Output: `ci/artifacts/mutants/<utc-stamp>-<K>of<N>/report.json`, `report.md`
and `logs/` (`ci/mutants/report.py`), with `ci/artifacts/mutants/latest`
pointing at the newest run; `python -m ci.mutants merge DIR...` joins shards.
Commands: `ci/MUTANTS.md`; timings: docs/figures.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import shlex
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

from rich.console import Console

from ci.build_local import REPO, describe_binding, reinstall_pinned
from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    input_folder,
    one_line,
    output_folder,
    positive_seconds,
    separate,
    write_failed,
)
from ci.mutants.cargo_mutants import ToolMissingError, mutant_set, tool_version
from ci.mutants.operators import TARGET_FILES
from ci.mutants.plan import (
    CARGO_PROFILES,
    CRATE_TIMEOUT_S_DEFAULT,
    PYTEST_OPTIONS_DEFAULT,
    Config,
    MutantsError,
    plan,
    prepare_crate_tree,
    work_lock,
)
from ci.mutants.report import SIDES, MergeError, merge, percent, read_report, write
from ci.mutants.smoke import smoke
from ci.mutants.summary import main as main_summary
from ci.mutants.sweep import execute, print_summary, shard_label
from ci.target_dir import default_work_dir

console = Console(highlight=False)


# --- restoring the pinned build -----------------------------------------------


def ensure_pinned_install(force: bool) -> None:
    """Leave the editable install on the crates.io crate.

    Mutant builds never touch it, so this normally only checks; it reinstalls
    (`pip install -e .`) when forced or when something left a path build there.
    """
    if not force:
        with contextlib.suppress(Exception):
            if describe_binding()["source"] == "registry":
                return
    console.print("reinstalling the pinned crate: pip install -e .")
    reinstall_pinned()


# --- command line -------------------------------------------------------------

PROG = "python -m ci.mutants"
EXIT_USAGE = 2


def _shards(text: str) -> tuple[tuple[int, int], ...]:
    """`K/N`, or several shards of one N: `K,K,.../N`, ranges `A-B` (`2,4-16/16`)."""
    problem = f"expected K/N or K,A-B,.../N with 1 <= K <= N, got {text!r}"
    head, slash, tail = text.partition("/")
    if not slash or not tail.isdigit() or not head:
        raise argparse.ArgumentTypeError(problem)
    count = int(tail)
    indices: list[int] = []
    for part in head.split(","):
        match = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not match:
            raise argparse.ArgumentTypeError(problem)
        low = int(match.group(1))
        high = int(match.group(2) or low)
        if not 1 <= low <= high <= count:
            raise argparse.ArgumentTypeError(problem)
        indices += range(low, high + 1)
    if len(set(indices)) != len(indices):
        raise argparse.ArgumentTypeError(f"a shard is named twice in {text!r}")
    return tuple((index, count) for index in sorted(indices))


def parse_args(argv: Sequence[str] | None) -> tuple[Config, argparse.Namespace]:
    """The run's configuration from the command line (`UsageError`: one line)."""
    parser = OneLineParser(
        prog=PROG,
        description="Mutation sweep of the suite against dynamo-kv-router.",
    )
    parser.renamed("--binding-profile", "--cargo-profile")  # old spelling, refused
    parser.add_argument("--list", action="store_true", help="print the plan and diffs")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="only check that the query_target expiry mutant is caught",
    )
    parser.add_argument(
        "--shard",
        type=_shards,
        default=((1, 1),),
        help="K/N: every N-th mutant of the id-sorted set, from the K-th (1-based); "
        "K,A-B,.../N: those shards in turn, one report each, one set-up",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        action="append",
        default=[],
        help="the folder of an interrupted run of one of these shards (or of these "
        "--ids): keep its verdicts, try the rest, go on writing its report "
        "(repeatable)",
    )
    parser.add_argument("--ids", default="", help="comma-separated mutant ids only")
    parser.add_argument(
        "--pytest-options",
        default=shlex.join(PYTEST_OPTIONS_DEFAULT),
        help="our suite's pytest options (profile, -x, ...)",
    )
    parser.add_argument(
        "--pytest-paths",
        default="",
        help="test paths or globs for every mutant (default: per mutated file)",
    )
    parser.add_argument(
        "--pytest-timeout",
        type=positive_seconds,
        default=None,
        help="seconds per mutant for our suite (default: 2 x baseline + 30)",
    )
    parser.add_argument(
        "--crate-timeout",
        type=positive_seconds,
        default=CRATE_TIMEOUT_S_DEFAULT,
        help=f"seconds for the crate's test build and run (default: "
        f"{CRATE_TIMEOUT_S_DEFAULT})",
    )
    parser.add_argument("--work-dir", type=Path, default=default_work_dir())
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help="a dynamo-kv-router source tree instead of the pinned crate "
        "(binding features detected from it, e.g. manual-clock)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the run folders go (default ci/artifacts/mutants)",
    )
    parser.add_argument(
        "--cargo-profile",
        choices=CARGO_PROFILES,
        default=CARGO_PROFILES[0],
        help="cargo profile of the mutant builds: mutants (release semantics, "
        "no optimizer: seconds per rebuild; as installed) or release (optimized)",
    )
    parser.add_argument(
        "--restore-pinned",
        action="store_true",
        help="always finish with pip install -e . (default: only if needed)",
    )
    args = parser.parse_args(argv)
    if args.smoke:  # one fixed mutant, no report: what would these change?
        unused = [
            flag
            for flag, given in (
                ("--ids", args.ids),
                ("--shard", args.shard != ((1, 1),)),
                ("--resume", args.resume),
                ("--out", args.out is not None),
                ("--list", args.list),
            )
            if given
        ]
        if unused:
            raise UsageError(f"--smoke does not use {', '.join(unused)}")
    args.out = args.out or REPO / "ci" / "artifacts" / "mutants"
    output_folder(args.out, "--out")
    output_folder(args.work_dir, "--work-dir")
    config = Config(
        pytest_options=_words(args.pytest_options, "--pytest-options"),
        pytest_paths=_words(args.pytest_paths, "--pytest-paths"),
        pytest_timeout_s=args.pytest_timeout,
        crate_timeout_s=args.crate_timeout,
        shard=args.shard[0],
        ids=tuple(i for i in args.ids.split(",") if i),
        work_dir=args.work_dir.resolve(),
        out_root=args.out.resolve(),
        source=_source_tree(args.source),
        cargo_profile=args.cargo_profile,
    )
    if config.ids and len(args.shard) > 1:
        raise UsageError("--ids and several shards do not go together")
    return config, args


def _words(text: str, flag: str) -> tuple[str, ...]:
    """`text` split as a shell would; unbalanced quotes are a `UsageError`."""
    try:
        return tuple(shlex.split(text))
    except ValueError as error:
        raise UsageError(f"{flag}: {error}") from None


def run_configs(config: Config, shards: Sequence[tuple[int, int]]) -> list[Config]:
    """One configuration per run: the `--ids` run, or one per shard."""
    if config.ids:
        return [config]
    return [replace(config, shard=shard) for shard in shards]


def resumed_folders(
    configs: Sequence[Config], folders: Sequence[Path]
) -> dict[str, Path]:
    """`--resume` folders by the run they continue (`UsageError`: one line)."""
    labels = {shard_label(config) for config in configs}
    found: dict[str, Path] = {}
    for folder in folders:
        try:
            data = read_report(folder)
        except MergeError as error:
            raise UsageError(f"--resume: {error}") from None
        label = "ids" if data.get("kind") == "ids" else str(data["shard"])
        if label not in labels:
            wanted = ", ".join(sorted(labels))
            raise UsageError(f"--resume {folder}: a run of {label}, not of {wanted}")
        if label in found:
            raise UsageError(f"--resume: two folders of {label}")
        if data["finished"] and len(data["mutants"]) == len(data["planned"]):
            raise UsageError(f"--resume {folder}: that run is complete")
        found[label] = folder.resolve()
    return found


def _source_tree(path: Path | None) -> Path | None:
    """`--source`, checked: a tree holding both files the sweep mutates."""
    if path is None:
        return None
    missing = [name for name in TARGET_FILES if not (path / name).is_file()]
    if missing:
        raise UsageError(
            f"--source {path}: not a dynamo-kv-router tree (no {missing[0]})"
        )
    return path.resolve()


def list_plan(config: Config) -> None:
    """Print the planned mutants with ids and diffs, then the set's counts."""
    # Its own crate copy: a sweep running meanwhile mutates the one in `mutants/`.
    with work_lock(config.work_dir / "mutants-list"):
        crate = prepare_crate_tree(
            config.work_dir / "mutants-list" / "tree", config.crate_source()
        )
        listed = mutant_set(crate)
        pristine = {
            relative: (crate / relative).read_text(encoding="utf-8")
            for relative in TARGET_FILES
        }
    for mutant in plan(listed.mutants, config):
        print(f"{mutant.id}  {mutant.operator}  {mutant.describe()}")
        print(mutant.diff(pristine[mutant.file]))
    print(f"# {listed.tool}, fingerprint {listed.fingerprint}")
    for relative, counts in listed.counts.items():
        print(f"# {relative}: {json.dumps(counts, sort_keys=True)}")


def _main_smoke(work_dir: Path) -> int:
    tree = work_dir / "smoke" / "pytree"
    try:
        result = smoke(work_dir, tree)
    except MutantsError as error:
        console.print(f"[red]cannot run the smoke check:[/red] {error}")
        return 1
    verdict = result.verdict
    console.print(
        f"{result.mutant.describe()} built in "
        f"{result.build_seconds:.0f} s against {result.binding['source']}: "
        f"ours {verdict.outcome} in {verdict.seconds:.0f} s "
        f"{verdict.test_id} {verdict.check}"
    )
    return 0 if verdict.outcome == "caught" else 1


def _main_list(config: Config) -> int:
    """`--list`: the plan and diffs; an id the set does not hold is a usage error."""
    try:
        list_plan(config)
    except MutantsError as error:
        print(f"ci.mutants: error: {one_line(str(error))}", file=sys.stderr)
        return EXIT_USAGE
    return 0


def main_merge(argv: Sequence[str]) -> int:
    """`merge DIR... [--out DIR]`: one report from shards' reports; 2 on refusal."""
    parser = OneLineParser(
        prog=f"{PROG} merge", description="Merge shard reports into one."
    )
    parser.add_argument("folders", nargs="+", type=Path, help="shard run folders")
    parser.add_argument(
        "--recheck",
        type=Path,
        action="append",
        default=[],
        help="a later --ids run whose entries replace the shards' (repeatable)",
    )
    parser.add_argument(
        "--out", type=Path, default=REPO / "ci" / "artifacts" / "mutants" / "merged"
    )
    try:
        args = parser.parse_args(argv)
        output_folder(args.out, "--out")
        for folder in [*args.folders, *args.recheck]:  # missing: the reader says
            if folder.exists():
                input_folder(folder, "merge")
        separate([*args.folders, *args.recheck], [("--out", args.out)])
        merged = merge(args.folders, args.recheck)
    except (UsageError, MergeError) as error:
        print(f"ci.mutants merge: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    try:
        write(args.out, merged, "Mutation sweep, shards merged")
    except WriteFailed as error:
        return write_failed("ci.mutants merge", error)
    totals_ = merged["totals"]
    rates = (f"{side} {percent(totals_[side]['kill_rate'])}" for side in SIDES)
    print(
        f"merged {len(args.folders)} report(s): {totals_['tried']} of "
        f"{merged['coverage']['of']} mutants, kill rate {', '.join(rates)}; "
        f"{args.out / 'report.md'}"
    )
    return 0


def _terminate(signum: int, _frame: object) -> None:
    """SIGTERM (a CI job cancelled) ends the run like Ctrl-C: report, clean up."""
    raise KeyboardInterrupt(f"signal {signum}")


SUBCOMMANDS: Final[dict[str, Callable[[Sequence[str]], int]]] = {
    "merge": main_merge,
    "summary": main_summary,  # ci.mutants.summary
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 ran, 1 could not run, 2 bad arguments or tool missing."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] in SUBCOMMANDS:
        return SUBCOMMANDS[arguments[0]](arguments[1:])
    try:
        config, args = parse_args(arguments)
        configs = run_configs(config, args.shard)
        resumed = resumed_folders(configs, args.resume)
        if not args.smoke:
            tool_version()
    except (UsageError, ToolMissingError) as error:
        print(f"ci.mutants: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.list:
        return _main_list(config)
    if args.smoke:
        return _main_smoke(config.work_dir)
    signal.signal(signal.SIGTERM, _terminate)
    try:
        with work_lock(config.work_dir / "mutants"):
            runs = execute(configs, resumed)
        for run in runs:
            print_summary(run)
    except (MutantsError, ToolMissingError) as error:
        console.print(f"[red]cannot run the sweep:[/red] {error}")
        return 1
    except WriteFailed as error:
        return write_failed("ci.mutants", error)
    except KeyboardInterrupt:
        console.print("[red]interrupted[/red]; the partial report is in the run folder")
        return 130
    finally:
        ensure_pinned_install(force=args.restore_pinned)
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.mutants", main)
