"""The CI gate: one command per job.

    python -m ci.gate --job pr|nightly [--junit PATH] [--artifacts DIR]
                      [-n auto|N] [--source PATH] [-- PYTEST_ARGS...]

Without `--source` (or `DYNAMO_KV_ROUTER_PATH`) it builds nothing and gates
the installed binding (`pip install -e .`: the pinned crate). With
`--source PATH` (a Dynamo checkout's root, its `lib/kv-router`, or any
`dynamo-kv-router` crate folder) it first builds the binding against that tree
in a work folder, with the binding features the tree's public items allow,
copies the Python tree beside it, and runs the same gate there; the pinned
install is left alone. A tree the binding cannot build against is a usage
error (exit 2) naming what is missing.

Before pytest, the gate probes the binding's behaviour (`ci.probe`) and
prints the per-build Production-under-test table. Runs pytest once, with the
Hypothesis profile the job names (`pr` -> `ci`, `nightly` -> `nightly`; `pr`
also deselects tests marked `slow`), spread over cores by pytest-xdist, writing
JUnit XML. Tests record statistics into a folder the gate provides
(`VERIFY_STATS_DIR`, see `stateful/stats.py`) and counterexample artifacts into
`--artifacts` (`VERIFY_ARTIFACTS_DIR`, see `ci/replay/artifacts.py`). Afterwards the
gate prints a summary: tests, machine steps, rules and coverage goals reached,
invariant evaluations, properties never exercised non-vacuously, the five
least exercised properties, failures with their shrunk (and minimized) trace
lengths and replay lines, and the canaries' shrunk and minimized lengths. It
writes the run's evidence dossier (`ci/dossier/build.py`) to
`<artifacts>/dossier/<stamp>/` (`dossier.md`, `dossier.json`, one witness trace
per property; `latest` points to the newest); a witness that does not replay
fails the gate.

Exit status: 0 when pytest passed; 1 when tests failed; 2 on a usage or
infrastructure error -- bad arguments, pytest interrupted, an internal or
usage error of pytest, no tests collected (pytest's 5), or no JUnit report.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from rich.console import Console
from rich.table import Table

from ci import build_local, subjects
from ci.build_local import SOURCE_ENV
from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    output_file,
    output_folder,
    positive_int,
    write_failed,
)
from ci.dossier import build as dossier
from ci.replay.artifacts import (
    ARTIFACTS_ENV,
    BUILD_TREE_ENV,
    DEFAULT_ROOT,
    LATEST,
    artifact_replay,
    artifact_repro,
    point_latest,
    utc_stamp,
)
from ci.replay.envelope import crate_version
from ci.target_dir import default_work_dir, shared_target_dir
from stateful.stats import STATS_ENV, read_all

PROG: Final[str] = "ci.gate"
REPO_ROOT: Final[Path] = Path(__file__).resolve().parent.parent
JOB_SETTINGS: Final[dict[str, str]] = {"pr": "ci", "nightly": "nightly"}
EXIT_PASS: Final[int] = 0
EXIT_FAIL: Final[int] = 1
EXIT_INFRA: Final[int] = 2
PYTEST_FAILED: Final[int] = 1
PYTEST_EXIT_NAMES: Final[dict[int, str]] = {
    2: "interrupted",
    3: "internal error",
    4: "usage error",
    5: "no tests collected",
}
PROBE_TIMEOUT_S: Final[int] = 300
GATE_TIMEOUT_S: Final[int] = 6 * 60 * 60
"""A whole gate run may take at most this long (nightly included)."""
ARTIFACTS_MAX: Final[int] = 10_000
DOSSIER_DIR: Final[str] = "dossier"
"""The folder under `--artifacts` that holds one dossier per gate run."""
CONSOLE_WIDTH_MIN: Final[int] = 140
BUILD_DIR: Final[str] = "build"
"""The folder under `--artifacts` that keeps a failed `--source` build's logs."""


def _workers(text: str) -> str:
    """An argparse type: `auto`, or a whole number of workers (0: no xdist)."""
    if text in {"auto", "0"}:
        return text
    return str(positive_int(text))


def check_outputs(arguments: argparse.Namespace) -> None:
    """Refuse, before any work, a `--junit` or `--artifacts` that cannot be written."""
    if arguments.junit is not None:
        output_file(arguments.junit, "--junit")
    output_folder(arguments.artifacts, "--artifacts")


def build_parser() -> argparse.ArgumentParser:
    """The command line."""
    parser = OneLineParser(prog=f"python -m {PROG}", description="Run the CI gate.")
    parser.renamed("--profile", "--job")  # old spelling, refused
    parser.add_argument("--job", required=True, choices=sorted(JOB_SETTINGS))
    parser.add_argument("--junit", type=Path, default=None, help="JUnit XML path")
    parser.add_argument(
        "--artifacts",
        type=Path,
        default=DEFAULT_ROOT,
        help="where counterexample folders go (default ci/artifacts)",
    )
    parser.add_argument(
        "-n",
        dest="workers",
        type=_workers,
        default="auto",
        help="pytest-xdist workers: auto or a count (default auto)",
    )
    parser.add_argument(
        "--source",
        type=Path,
        default=os.environ.get(SOURCE_ENV) or None,
        help=f"gate a local dynamo-kv-router tree (default ${SOURCE_ENV})",
    )
    parser.add_argument(
        "pytest_args", nargs="*", help="after --: passed to pytest unchanged"
    )
    return parser


@dataclass(frozen=True)
class JUnitCounts:
    """What the JUnit report says about the run."""

    tests: int
    failures: int
    errors: int
    skipped: int
    time_s: float

    @property
    def passed(self) -> int:
        """Tests that neither failed, erred nor were skipped."""
        return self.tests - self.failures - self.errors - self.skipped


@dataclass(frozen=True)
class Counterexample:
    """One artifact folder written during this run."""

    folder: Path
    test: str
    check: str
    steps: int
    minimal_steps: int | None


def read_junit(path: Path) -> JUnitCounts | None:
    """Sum the test suites of a JUnit XML file; None if it is missing or broken."""
    try:
        root = ET.parse(path).getroot()  # noqa: S314 - our own pytest's report
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))

    def total(name: str) -> int:
        return sum(int(suite.get(name, "0")) for suite in suites)

    return JUnitCounts(
        tests=total("tests"),
        failures=total("failures"),
        errors=total("errors"),
        skipped=total("skipped"),
        time_s=sum(float(suite.get("time", "0")) for suite in suites),
    )


def artifact_folders(root: Path) -> set[Path]:
    """Every `<test>/<stamp>` folder under `root` (the `latest` links excluded)."""
    if not root.is_dir():
        return set()
    folders = {
        stamp
        for test in sorted(root.iterdir())
        if test.is_dir()
        and not test.is_symlink()
        and test.name not in {DOSSIER_DIR, BUILD_DIR}
        for stamp in sorted(test.iterdir())
        if stamp.is_dir() and not stamp.is_symlink() and stamp.name != LATEST
    }
    if len(folders) > ARTIFACTS_MAX:
        raise UsageError(f"{len(folders)} artifact folders under {root}; clean up")
    return folders


def describe_artifact(folder: Path) -> Counterexample:
    """Read an artifact's meta.json for the summary."""
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError):
        return Counterexample(folder, folder.parent.name, "(no meta.json)", -1, None)
    failed = meta.get("failing_check") or {}
    check = failed.get("check", "?")
    if failed.get("violated"):
        check += ": " + ", ".join(failed["violated"])
    return Counterexample(
        folder=folder,
        test=str(meta.get("test", folder.parent.name)),
        check=check,
        steps=int(meta.get("shrunk_steps", -1)),
        minimal_steps=meta.get("minimal_steps"),
    )


def pytest_command(
    job: str, junit: Path, workers: str, pytest_args: Sequence[str]
) -> list[str]:
    """The one pytest invocation of the gate."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(REPO_ROOT / "pyproject.toml"),
        "--rootdir",
        str(REPO_ROOT),
        f"--hypothesis-profile={JOB_SETTINGS[job]}",
        "-n",
        workers,
        f"--junitxml={junit}",
        "-p",
        "no:cacheprovider",
    ]
    deselected = []
    if job == "pr":
        deselected.append("slow")
    if os.environ.get(BUILD_TREE_ENV):
        deselected.append("pinned")  # facts of the pinned build, not this tree's
    if deselected:
        command += ["-m", " and ".join(f"not {marker}" for marker in deselected)]
    return command + list(pytest_args)


@dataclass(frozen=True)
class GateRun:
    """Everything the summary reports about one pytest run."""

    job: str
    returncode: int
    counts: JUnitCounts | None
    records: list[dict[str, Any]]
    found: list[Counterexample]
    dossier: dict[str, Any] | None = None
    dossier_folder: Path | None = None

    def unreplayed(self) -> list[str]:
        """Properties whose witness trace did not replay as the dossier says."""
        if self.dossier is None:
            return []
        return [
            row["name"]
            for row in self.dossier["properties"]
            if row["witness"] is not None
            and not row["witness"]["replayed"].startswith("agrees against")
        ]


Column = tuple[str, Callable[[Any], str]]
"""A table column: its heading and its cell as a function of the row's item."""


def _table(
    title: str, columns: Sequence[Column], items: Iterable[Any], left: int
) -> Table:
    """One row per item; the first `left` columns left-aligned, the rest right."""
    table = Table(title=title)
    for index, (heading, _) in enumerate(columns):
        table.add_column(heading, justify="left" if index < left else "right")
    for item in items:
        table.add_row(*(cell(item) for _, cell in columns))
    return table


OVERVIEW_COLUMNS: Final[tuple[Column, ...]] = (
    ("tests", lambda counts: str(counts.tests)),
    ("passed", lambda counts: str(counts.passed)),
    ("failed", lambda counts: str(counts.failures)),
    ("errors", lambda counts: str(counts.errors)),
    ("skipped", lambda counts: str(counts.skipped)),
    ("pytest s", lambda counts: f"{counts.time_s:.1f}"),
)


def _overview(run: GateRun) -> Table:
    title = f"gate: job {run.job} (Hypothesis {JOB_SETTINGS[run.job]})"
    counts = [] if run.counts is None else [run.counts]
    return _table(title, OVERVIEW_COLUMNS, counts, left=0)


MACHINE_COLUMNS: Final[tuple[Column, ...]] = (
    ("machine", lambda record: record["name"]),
    ("subject", lambda record: record.get("subject", "?")),
    ("steps", lambda record: str(record["steps_run"])),
    ("rules run", lambda r: f"{len(r['rules_run'])}/{len(r['rules'])}"),
    ("goals reached", lambda r: f"{len(r['goals_reached'])}/{len(r['goals'])}"),
    ("checks", lambda record: str(record["invariant_checks"])),
)


CLOCK_GOAL_WORDS: Final[tuple[str, ...]] = ("clock", "cleanup", "deadline")


def _clock_goals(records: list[dict[str, Any]]) -> Table | None:
    """Per machine, how often each clock boundary goal was reached."""
    goals = sorted(
        {
            goal
            for record in records
            for goal in record.get("goals", [])
            if any(word in goal for word in CLOCK_GOAL_WORDS)
        }
    )
    if not goals:
        return None
    table = Table(title="clock boundary goals: times reached (- = not a goal there)")
    table.add_column("goal", no_wrap=True, min_width=max(map(len, goals)))
    for record in records:
        table.add_column(record["name"], justify="right", overflow="fold")
    for goal in goals:
        cells = [
            str(record.get("goal_counts", {}).get(goal, 0))
            if goal in record.get("goals", [])
            else "-"
            for record in records
        ]
        table.add_row(goal, *cells)
    return table


def _least_exercised(document: dict[str, Any]) -> Table:
    """The properties whose evaluations were least often non-vacuous."""
    rows = {row["name"]: row for row in document["properties"]}
    table = Table(title="least exercised properties (non-vacuous evaluations)")
    for column in ("property", "subject", "non-vacuous", "evaluations", "boundary"):
        table.add_column(
            column, justify="left" if column in {"property", "subject"} else "right"
        )
    table.add_column("witness")
    for name in document["least_exercised"]:
        row = rows[name]
        witness = row["witness"]
        table.add_row(
            name,
            row["subject"],
            str(row["non_vacuous"]),
            str(row["evaluations"]),
            "-" if row["boundary_hits"] is None else str(row["boundary_hits"]),
            "none" if witness is None else f"{witness['steps']} steps",
        )
    return table


SHRINK_COLUMNS: Final[tuple[Column, ...]] = (
    ("canary", lambda record: record["name"]),
    ("shrunk", lambda record: str(record["steps"])),
    ("bound", lambda record: str(record["bound"])),
    ("minimal", lambda record: str(record["minimal_steps"])),
    ("bound ", lambda record: str(record["minimal_bound"])),
)


def _covered(what: str) -> Callable[[dict[str, Any]], str]:
    """The cell of `what` (states or edges): covered of total, and the percentage."""

    def cell(record: dict[str, Any]) -> str:
        covered, total = record[what]["covered"], record[what]["total"]
        return f"{covered}/{total} ({100 * covered / total:.1f}%)"

    return cell


COVERAGE_COLUMNS: Final[tuple[Column, ...]] = (
    ("subject", lambda record: record["subject"]),
    ("bound", lambda record: record["bound"]),
    ("machine", lambda record: record["machine"]),
    ("settings", lambda record: record["profile"]),
    ("states", _covered("states")),
    ("edges", _covered("edges")),
)


def _per_history(record: dict[str, Any], count: int) -> float:
    return count / record["histories"] if record["histories"] else 0.0


def _windows_entered(record: dict[str, Any]) -> str:
    """Per 1,000 histories, how many entered each known window of the crate."""
    return ", ".join(  # stateful.windows
        f"{window} {_per_history(record, 1000 * count):.1f}"
        for window, count in sorted(record.get("windows", {}).items())
    )


CONCURRENCY_COLUMNS: Final[tuple[Column, ...]] = (
    ("test", lambda record: record["name"]),
    ("reading", lambda record: record["reading"]),
    ("histories", lambda record: f"{record['histories']:,}"),
    ("calls/history", lambda record: f"{_per_history(record, record['calls']):.1f}"),
    ("largest", lambda record: str(record["calls_max"])),
    ("threads", lambda record: str(record["threads_max"])),
    ("search states", lambda record: f"{record['search_states']:,}"),
    ("largest search", lambda record: f"{record['search_states_max']:,}"),
    ("undecided", lambda record: str(record["undecided"])),
    ("not linearizable", lambda record: str(record["not_linearizable"])),
    ("publications", lambda record: f"{record.get('publications', 0):,}"),
    ("versions out of order", lambda r: str(r.get("version_violations", 0))),
    ("windows entered per 1,000", _windows_entered),
)

RECORD_TABLES: Final[dict[str, tuple[str, tuple[Column, ...], int]]] = {
    "shrink": (
        "canary counterexamples: Hypothesis-shrunk and minimized",
        SHRINK_COLUMNS,
        1,
    ),
    "coverage": ("exact coverage of bounded graphs (ci.explore)", COVERAGE_COLUMNS, 6),
    "concurrency": (
        "concurrent histories checked for linearizability",
        CONCURRENCY_COLUMNS,
        2,
    ),
}
"""The table of each kind of record: its title, columns and left-aligned columns."""


FOUND_COLUMNS: Final[tuple[Column, ...]] = (
    ("test", lambda example: example.test),
    ("failed check", lambda example: example.check),
    ("shrunk steps", lambda example: str(example.steps)),
    ("minimal", lambda e: "-" if e.minimal_steps is None else str(e.minimal_steps)),
    ("replay", lambda example: artifact_replay(example.folder)),
)


def _machine_summary(console: Console, run: GateRun) -> None:
    """Machines, clock goals, what was never reached or exercised, least exercised."""
    machines = [record for record in run.records if record["kind"] == "machine"]
    if not machines:
        return
    console.print(_table("machines", MACHINE_COLUMNS, machines, left=2))
    clock_goals = _clock_goals(machines)
    if clock_goals is not None:
        console.print(clock_goals)
    for record in machines:
        for goal in sorted(set(record["goals"]) - set(record["goals_reached"])):
            console.print(f"{record['name']}: goal never reached: {goal}")
        counts = record.get("properties", {})
        for name in record.get("exercisable", []):
            if counts.get(name, [0, 0, 0])[1] == 0:
                console.print(
                    f"{record['name']}: property never exercised non-vacuously: {name}"
                )
    if run.dossier is not None:
        console.print(_least_exercised(run.dossier))
    for name in run.unreplayed():
        console.print(f"dossier: the witness of {name} did not replay as recorded")


def summarize(console: Console, run: GateRun) -> None:
    """Print the gate's tables, then one replay line per counterexample."""
    console.print(_overview(run))
    _machine_summary(console, run)
    for kind, (title, columns, left) in RECORD_TABLES.items():
        records = [record for record in run.records if record["kind"] == kind]
        if records:
            console.print(_table(title, columns, records, left))
    for found in subjects.entries():
        for table_of_subject in found.gate_tables:
            subject_table = table_of_subject()(run.records)
            if subject_table is not None:
                console.print(subject_table)
    if run.found:
        title = "counterexamples found in this run"
        console.print(_table(title, FOUND_COLUMNS, run.found, len(FOUND_COLUMNS)))
    if run.dossier_folder is not None:
        console.print(f"dossier: {run.dossier_folder / 'dossier.md'}")
    verdict = {0: "PASS", 1: "FAIL"}.get(run.returncode, "ERROR")
    if run.returncode == 0 and run.unreplayed():
        verdict = "FAIL"
    console.print(f"gate {verdict} (pytest exit {run.returncode})")
    for example in run.found:
        # Plain print: a pasteable line must never be wrapped at the console width.
        print(artifact_replay(example.folder), flush=True)
        print(artifact_repro(example.folder), flush=True)


def _first_error(output: str) -> str:
    """The first compiler error line of a failed build (or its last line)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error")]
    return (errors or lines or ["no output"])[0]


def build_source_tree(source_arg: Path, console: Console, artifacts: Path) -> Path:
    """Build the binding against `source_arg`; return the Python tree to gate in.

    Raises UsageError (exit 2) when the tree is not a crate the binding can
    build against, naming what is missing or the first compiler error.
    """
    try:
        source = build_local.resolve_source(source_arg)
        missing = build_local.missing_items(source)
        features = build_local.detect_features(source)
    except build_local.BuildError as error:
        raise UsageError(f"--source: {error}") from None
    if missing:
        raise UsageError(
            f"the binding cannot build against {source}: it lacks " + ", ".join(missing)
        )
    digest = hashlib.sha256(str(source).encode()).hexdigest()[:8]
    label = source.parent.parent.name if source.name == "kv-router" else source.name
    work = default_work_dir() / "gate" / f"{label}-{digest}"
    build = build_local.LocalBuild(
        source=source,
        binding_dir=work / "binding",
        target_dir=shared_target_dir(),
        features=features,
    )
    build_local.seed_target_dir(build.target_dir, build.profile)
    shown = ", ".join(features) or "none"
    console.print(f"building the binding against {source} (features: {shown})")
    try:
        result = build_local.build_extension(build)
    except build_local.BuildError as error:
        message = f"the binding does not build against {source}: {error}"
        raise UsageError(message) from None
    if not result.ok:
        folder = artifacts / BUILD_DIR / utc_stamp()
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "build.log"
        log.write_text(result.output, encoding="utf-8")
        build_local.refuse_incompatible(build, result, log)
        raise UsageError(
            f"the binding does not build against {source}: "
            f"{_first_error(result.output)} (full log: {log})"
        )
    tree = work / "tree"
    build_local.copy_python_tree(tree)
    build_local.install_binding(build.binding, tree)
    console.print(f"built in {result.seconds:.0f} s; gating in {tree}")
    return tree


def run_on_source(arguments: argparse.Namespace, console: Console) -> int:
    """Build against `--source`, then run this gate inside the built tree."""
    tree = build_source_tree(arguments.source, console, arguments.artifacts.resolve())
    command = [
        sys.executable,
        "-m",
        PROG,
        "--job",
        arguments.job,
        "--artifacts",
        str(arguments.artifacts.resolve()),
        "-n",
        arguments.workers,
    ]
    if arguments.junit is not None:
        command += ["--junit", str(arguments.junit.resolve())]
    command += ["--", *arguments.pytest_args]
    env = build_local.tree_environment(tree)
    env.pop(SOURCE_ENV, None)
    env[BUILD_TREE_ENV] = str(tree)
    parity = queue_parity(tree, env, console)
    completed = subprocess.run(  # noqa: S603 - our own interpreter and gate
        command, cwd=tree, env=env, check=False, timeout=GATE_TIMEOUT_S
    )
    if completed.returncode == EXIT_PASS and parity != EXIT_PASS:
        console.print(f"gate FAIL: queue parity with the pinned build (exit {parity})")
        return EXIT_FAIL if parity == EXIT_FAIL else EXIT_INFRA
    return completed.returncode


def queue_parity(tree: Path, env: dict[str, str], console: Console) -> int:
    """Run the queue programs on the pinned install, then on `tree`'s build."""
    record = tree.parent / "queue-parity.json"
    steps = [
        (REPO_ROOT, None, ["--record", str(record)]),
        (tree, env, ["--compare", str(record)]),
    ]
    for cwd, environment, arguments in steps:
        completed = _python_module("ci.queue_parity", arguments, cwd, environment)
        console.print((completed.stdout + completed.stderr).strip())
        if completed.returncode != 0:
            return completed.returncode
    return EXIT_PASS


def _python_module(
    module: str, arguments: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m module arguments` in `cwd`, its output captured as text."""
    return subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-m", module, *arguments],
        cwd=cwd,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT_S,
    )


def probe(console: Console) -> bool:
    """Print the binding's probed capability table; False if the probe failed."""
    completed = _python_module("ci.probe", [], REPO_ROOT)
    if completed.returncode != 0:
        lines = (completed.stderr or completed.stdout).strip().splitlines()
        last = lines[-1] if lines else f"exit {completed.returncode}"
        console.print(f"{PROG}: error: the capability probe failed: {last}")
        return False
    sys.stdout.write(completed.stdout)
    sys.stdout.flush()
    return True


def run(arguments: argparse.Namespace, console: Console) -> int:
    """Run pytest once and summarize; return the gate's exit status."""
    if arguments.source is not None:
        return run_on_source(arguments, console)
    if not probe(console):
        return EXIT_INFRA
    artifacts: Path = arguments.artifacts.resolve()
    before = artifact_folders(artifacts)
    with tempfile.TemporaryDirectory(prefix="verify-gate-") as scratch:
        junit: Path = arguments.junit or Path(scratch) / "junit.xml"
        junit.parent.mkdir(parents=True, exist_ok=True)
        stats = Path(scratch) / "stats"
        env = os.environ | {
            "HYPOTHESIS_PROFILE": JOB_SETTINGS[arguments.job],
            STATS_ENV: str(stats),
            ARTIFACTS_ENV: str(artifacts),
        }
        command = pytest_command(
            arguments.job, junit, arguments.workers, arguments.pytest_args
        )
        try:
            completed = subprocess.run(  # noqa: S603 - our own interpreter and pytest
                command, cwd=REPO_ROOT, env=env, check=False, timeout=GATE_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            console.print(f"{PROG}: error: pytest ran past {GATE_TIMEOUT_S} s")
            return EXIT_INFRA
        records = read_all(stats) if stats.is_dir() else []
        counts = read_junit(junit)
    found = [
        describe_artifact(folder)
        for folder in sorted(artifact_folders(artifacts) - before)
    ]
    document, folder = write_dossier(artifacts, arguments.job, records)
    gate_run = GateRun(
        arguments.job,
        completed.returncode,
        counts,
        records,
        found,
        document,
        folder,
    )
    summarize(console, gate_run)
    if completed.returncode == PYTEST_FAILED:
        return EXIT_FAIL
    if completed.returncode != 0:
        name = PYTEST_EXIT_NAMES.get(completed.returncode, "unknown exit status")
        print(
            f"{PROG}: error: pytest exited {completed.returncode} ({name})",
            file=sys.stderr,
        )
        return EXIT_INFRA
    if counts is None:
        print(
            f"{PROG}: error: pytest wrote no JUnit report at {junit}", file=sys.stderr
        )
        return EXIT_INFRA
    if gate_run.unreplayed():
        return EXIT_FAIL
    return EXIT_PASS


def write_dossier(
    artifacts: Path, job: str, records: list[dict[str, Any]]
) -> tuple[dict[str, Any] | None, Path | None]:
    """Write the run's dossier under `<artifacts>/dossier/<stamp>/`, if machines ran.

    Returns the dossier as data and its folder (None, None without machines).
    """
    if not any(record["kind"] == "machine" for record in records):
        return None, None
    parent = artifacts / DOSSIER_DIR
    folder = parent / utc_stamp()
    run = {"job": job, "crate": f"dynamo-kv-router {crate_version()}"}
    document = dossier.build(records, folder, run)
    point_latest(parent, folder)
    return document, folder


def _check_positionals(arguments: argparse.Namespace, given: Sequence[str]) -> None:
    """Refuse a stray word before the probe or pytest starts: only after `--`."""
    if arguments.pytest_args and "--" not in given:
        raise UsageError(
            f"unexpected argument {arguments.pytest_args[0]!r} "
            "(pytest's own arguments go after --)"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    try:
        given = list(sys.argv[1:] if argv is None else argv)
        arguments = build_parser().parse_args(given)
        _check_positionals(arguments, given)
        check_outputs(arguments)
        width = None if sys.stdout.isatty() else CONSOLE_WIDTH_MIN
        return run(arguments, Console(highlight=False, width=width))
    except build_local.IncompatibleTreeError as error:
        for line in error.lines:
            print(f"{PROG}: error: {line}", file=sys.stderr)
        return EXIT_INFRA
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return EXIT_INFRA
    except WriteFailed as error:  # the dossier, after the tests ran
        return write_failed(PROG, error)


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.gate", main)
