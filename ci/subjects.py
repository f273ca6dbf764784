"""The subject registry: one entry per component under test, which `ci/` iterates.

A *subject* is a component the suite checks against its reference model (the
affinity table, the policy queue, the public scheduler, affinity replicas over
a network). Everything `ci/` needs to know about one lives in its
`SubjectEntry`:

    name         the word properties, traces and statistics use for the subject
    subject      its `stateful.harness.Subject` class (how one step is judged)
    machine      its differential machine (`stateful.machine.DifferentialMachine`)
    trace_kind   its `ci.replay.trace.TraceKind` (reads, writes, replays traces)
    canaries     its module of deliberately broken systems: `CANARIES` (name ->
                 factory), `CAUGHT_BY` (name -> the check that must catch it),
                 optionally `CRATE_CANARIES` (those that need the binding)
                 and `SLOW_CANARIES` (those that run nightly only)
    rust_writer  the module whose `write(trace, name, capabilities)` exports a
                 trace as a Rust test, or None (no Rust export)
    explorer     its bounded exploration (`Explorer`), or None
    gate_tables  functions of the gate's statistics records that return a
                 table of the subject's own (or None when it did not run)
    machine_tests  the machine tests that fuzzing, the soak and determinism
                 run by name, and which run by default (`MachineTest.default`)
    bench        its own rows of `python -m ci.bench` beyond the machine and
                 corpus replay every subject gets (a function returning
                 `ci.bench.figures.Figures`), or None
    scenarios    the builder of its hand-written corpus traces (checks them
                 on the model, returns each file's path and text), or None
    production_rows  its rows of the "Production under test" table of
                 docs/production.md (`ci.production.Row`s, in order), or None
    crate_files  the crate files its tests reach (`CrateFile`): what the
                 mutation benchmark mutates and which tests run per mutant

Other modules ask the registry (`entry(name)`, `entries()`) and never compare
a subject's name. Every field that would import the subject's modules is a
zero-argument callable, usually `lazy("module", "attribute")`, so that
importing this module imports no subject (and never the binding);
tests may `register` an entry of their own for the duration of a
`with registered(entry):` block.

Adding a subject: the recipe "Add a subject" in docs/contributing.md, a
worked example that `tests/test_contributing.py` runs. `tests/test_subjects.py`
checks that an entry's names agree with its harness subject, machine, trace
kind and the property registry, and `tests/test_canaries.py` runs every canary
an entry names; its dummy subject shows the gate, replay, canaries,
benchmark and mutation plan taking an entry as it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, TypeVar

if TYPE_CHECKING:
    from rich.table import Table

    from stateful.harness import Subject
    from stateful.machine import DifferentialMachine


_Field = TypeVar("_Field")


def lazy(module: str, attribute: str | None = None) -> Callable[[], Any]:
    """A loader of `module.attribute` (or of the module), imported when called."""

    def load() -> Any:
        loaded = importlib.import_module(module)
        return loaded if attribute is None else getattr(loaded, attribute)

    load.__qualname__ = f"lazy({module}{'' if attribute is None else ':' + attribute})"
    return load


@dataclass(frozen=True)
class MachineTest:
    """One pytest test that runs a machine under the loaded Hypothesis settings.

    `ci.fuzz`, `ci.soak` and `ci.determinism` run machine tests by name;
    `default` ones are what fuzzing and the soak run when no name is given.
    """

    name: str
    nodeid: str
    description: str
    canary: bool = False
    default: bool = False


Runner = Callable[[Any, str], Any]
"""A coverage runner: (bound, Hypothesis profile name) -> `MachineRun`."""

ExploreCommand = Callable[[Sequence[Any], Any, Any], int]
"""An explorer command: (the chosen bounds, parsed arguments, console) -> exit."""


def _no_commands() -> Mapping[str, ExploreCommand]:
    return {}


@dataclass(frozen=True)
class Explorer:
    """What `python -m ci.explore` needs for one subject.

    `bounds` are the declared bounds, smallest first; `explore` enumerates one
    into an exploration (its pinned counts sit under the subject's name in
    `ci/explore/state_counts.json`); `machines` are the coverage runners by machine
    name, the subject's own machine first; `coverage_bounds` are the bounds
    the gate measures by default; `commands` are the explorer commands beyond
    the default check, `--update-counts`, `--bench` and `--coverage` that the
    subject offers, by flag name (`replay`, `counterexamples`, `picture`);
    `closes` says
    that every bound's graph must close within its depth (no state left
    unexpanded at `depth_max`); `shortest` gives a canary's BFS-shortest
    counterexample length (None: the explorer cannot run that canary).
    """

    bounds: Callable[[], tuple[Any, ...]]
    explore: Callable[[], Callable[[Any], Any]]
    machines: Callable[[], Mapping[str, Runner]]
    coverage_bounds: tuple[str, ...]
    commands: Callable[[], Mapping[str, ExploreCommand]] = _no_commands
    closes: bool = False
    shortest: Callable[[], Callable[[str], int | None]] | None = None


GateTable = Callable[[list[dict[str, Any]]], "Table | None"]


@dataclass(frozen=True)
class CrateFile:
    """A file of the crate that a subject's tests reach (`python -m ci.mutants`).

    `path` is relative to the crate root; `tests` are the paths, globs or
    `glob::test` node ids of our suite that a mutant of the file runs, the
    strongest check first (`-x` stops there). The subject that owns the file
    gives `prefix`, the one-letter id prefix of its mutants, and
    `crate_filters`, the libtest filters of the crate's own tests that reach
    it; another subject whose tests reach the file leaves both empty and adds
    its tests after the owner's (`crate_files()`).
    """

    path: str
    tests: tuple[str, ...]
    prefix: str = ""
    crate_filters: tuple[str, ...] = ()


@dataclass(frozen=True)
class SubjectEntry:
    """One subject: where each column of the layout keeps its part (see above)."""

    name: str
    description: str
    subject: Callable[[], type[Subject[Any, Any]]]
    machine: Callable[[], type[DifferentialMachine]]
    trace_kind: Callable[[], Any]
    """Loads the subject's `ci.replay.trace.TraceKind` (which imports this module)."""
    canaries: Callable[[], ModuleType]
    rust_writer: Callable[[], ModuleType] | None = None
    explorer: Explorer | None = None
    gate_tables: tuple[Callable[[], GateTable], ...] = ()
    machine_tests: tuple[MachineTest, ...] = field(default=())
    bench: Callable[[], Callable[[], Sequence[Any]]] | None = None
    scenarios: Callable[[], Callable[[], dict[Path, str]]] | None = None
    production_rows: Callable[[], tuple[Any, ...]] | None = None
    crate_files: tuple[CrateFile, ...] = ()

    def subject_class(self) -> type[Subject[Any, Any]]:
        """The harness's `Subject` class (imports the subject's stateful module)."""
        return self.subject()

    def kind(self) -> Any:
        """The subject's trace kind (a `ci.replay.trace.TraceKind`)."""
        return self.trace_kind()

    def canary_factories(self) -> Mapping[str, Callable[[Any], Any]]:
        """Deliberately broken systems under test, by name."""
        found: Mapping[str, Callable[[Any], Any]] = self.canaries().CANARIES
        return found

    def caught_by(self) -> Mapping[str, str]:
        """Per canary, the check that must catch it."""
        found: Mapping[str, str] = self.canaries().CAUGHT_BY
        return found

    def crate_canaries(self) -> frozenset[str]:
        """The canaries that wrap the crate (and so need the built binding)."""
        found: frozenset[str] = getattr(self.canaries(), "CRATE_CANARIES", frozenset())
        return found

    def slow_canaries(self) -> frozenset[str]:
        """The canaries too slow for every push (they run under `nightly`)."""
        found: frozenset[str] = getattr(self.canaries(), "SLOW_CANARIES", frozenset())
        return found


class UnknownSubjectError(KeyError):
    """A subject name that is not registered; the message is one line."""

    def __str__(self) -> str:
        return str(self.args[0])


_PROFILE_NODE: Final[str] = (
    "test_the_crate_agrees_with_the_model_and_every_goal_is_reached"
)
_CANARY_FILE: Final[str] = "ci/trust/canary_tests.py"
_AFFINITY_RS: Final[str] = "src/services/selection/affinity.rs"
_POLICY_QUEUE_RS: Final[str] = "src/scheduling/policy_queue.rs"
_MANUAL_CLOCK_NODE: Final[str] = (
    "stateful/test_affinity_machine.py::"
    "test_the_crates_manual_clock_agrees_with_the_model"
)
_EDGE_REPLAY_NODE: Final[str] = (
    "tests/test_explore.py::test_the_crate_agrees_on_every_edge_of_a_ci_bound"
)
_SCHEDULER_NODE: Final[str] = (
    "stateful/test_scheduler_machine.py::"
    "test_the_crate_scheduler_agrees_with_the_model_and_every_goal_is_reached"
)
# The corpus replays every affinity and queue trace against the crate.
_CORPUS_REPLAY: Final[str] = (
    "tests/test_corpus.py::test_a_corpus_trace_replays_without_divergence"
)

_BUILTIN: Final[tuple[SubjectEntry, ...]] = (
    SubjectEntry(
        name="affinity",
        description="SessionAffinity: leases, commits, waiters and the idle TTL",
        subject=lazy("stateful.affinity_subject", "AffinitySubject"),
        machine=lazy("stateful.affinity_machine", "AffinityMachine"),
        trace_kind=lazy("ci.replay.affinity", "KIND"),
        canaries=lazy("ci.canaries.affinity"),
        production_rows=lazy("ci.production.affinity", "ROWS"),
        scenarios=lazy("ci.replay.corpus.affinity_scenarios", "build"),
        rust_writer=lazy("ci.replay.rust.affinity"),
        explorer=Explorer(
            bounds=lazy("ci.explore.affinity_bounds", "BOUNDS"),
            explore=lazy("ci.explore.affinity_graph", "explore"),
            machines=lazy("ci.explore.affinity_coverage", "AFFINITY_RUNNERS"),
            coverage_bounds=("picture", "core"),
            commands=lazy("ci.explore.affinity_replay", "AFFINITY_COMMANDS"),
            shortest=lazy("ci.explore.affinity_replay", "bfs_steps"),
        ),
        machine_tests=(
            MachineTest(
                "affinity",
                f"stateful/test_affinity_machine.py::{_PROFILE_NODE}",
                "the affinity machine against the crate (runtime clock)",
                default=True,
            ),
            MachineTest(
                "canary-late-expiry",
                f"{_CANARY_FILE}::test_the_late_expiry_canary_agrees_with_the_model",
                "canary: the crate serving a binding 1 ns past its deadline",
                canary=True,
            ),
        ),
        crate_files=(
            CrateFile(
                _AFFINITY_RS,
                (
                    f"stateful/test_affinity_machine.py::{_PROFILE_NODE}",
                    _MANUAL_CLOCK_NODE,
                    "tests/test_affinity_*.py",
                    "tests/test_group_key.py",  # crate against model where it has it
                    "tests/test_production_under_test.py",
                    _EDGE_REPLAY_NODE,
                    "stateful/test_clock_variants.py",
                    # Many callers reach versions, publications and the reaper.
                    "stateful/test_concurrent_affinity.py",
                    "tests/test_concurrency.py",
                    _CORPUS_REPLAY,
                ),
                prefix="A",
                crate_filters=(
                    "services::selection::affinity::",
                    "services::selection::core::",
                    "services::common::replica_sync",
                ),
            ),
        ),
    ),
    SubjectEntry(
        name="queue",
        description="PolicyQueue: weighted deficit round robin over request classes",
        subject=lazy("stateful.queue_subject", "QueueSubject"),
        machine=lazy("stateful.queue_machine", "QueueMachine"),
        trace_kind=lazy("ci.replay.queue", "KIND"),
        canaries=lazy("ci.canaries.queue"),
        production_rows=lazy("ci.production.queue", "ROWS"),
        scenarios=lazy("ci.replay.corpus.queue_scenarios", "build"),
        rust_writer=lazy("ci.replay.rust.queue"),
        explorer=Explorer(
            bounds=lazy("ci.explore.queue_graph", "QUEUE_BOUNDS"),
            explore=lazy("ci.explore.queue_graph", "explore"),
            machines=lazy("ci.explore.queue_coverage", "QUEUE_RUNNERS"),
            coverage_bounds=("pair",),
            closes=True,
            shortest=lazy("ci.explore.queue_graph", "bfs_steps"),
        ),
        bench=lazy("ci.bench.queue", "fixed_program"),
        machine_tests=(
            MachineTest(
                "queue",
                f"stateful/test_queue_machine.py::{_PROFILE_NODE}",
                "the policy-queue machine against the crate",
                default=True,
            ),
            MachineTest(
                "queue-model",
                "stateful/test_queue_machine.py::"
                "test_the_model_agrees_with_a_second_model_and_every_goal_is_reached",
                "the policy-queue machine, model against model (no binding)",
            ),
            MachineTest(
                "canary-plain-rotation",
                f"{_CANARY_FILE}::test_the_plain_rotation_canary_agrees_with_the_model",
                "canary: a queue in plain rotation (no binding)",
                canary=True,
            ),
        ),
        crate_files=(
            CrateFile(
                _POLICY_QUEUE_RS,
                (
                    f"stateful/test_queue_machine.py::{_PROFILE_NODE}",
                    "tests/test_queue_*.py",
                    _CORPUS_REPLAY,
                ),
                prefix="Q",
                crate_filters=("scheduling::policy_queue::", "scheduling::queue::"),
            ),
        ),
    ),
    SubjectEntry(
        name="scheduler",
        description="LocalScheduler: admission, rechecks, due times and cancellations",
        subject=lazy("stateful.scheduler_subject", "SchedulerSubject"),
        machine=lazy("stateful.scheduler_machine", "SchedulerMachine"),
        trace_kind=lazy("ci.replay.scheduler", "KIND"),
        canaries=lazy("ci.canaries.scheduler"),
        production_rows=lazy("ci.production.scheduler", "ROWS"),
        scenarios=lazy("ci.replay.corpus.scheduler_scenarios", "build"),
        rust_writer=lazy("ci.replay.rust.scheduler"),
        explorer=Explorer(
            bounds=lazy("ci.explore.scheduler_graph", "SCHEDULER_BOUNDS"),
            explore=lazy("ci.explore.scheduler_graph", "explore"),
            machines=lazy("ci.explore.scheduler_coverage", "SCHEDULER_RUNNERS"),
            coverage_bounds=("lanes",),
            commands=lazy("ci.explore.scheduler_replay", "SCHEDULER_COMMANDS"),
            shortest=lazy("ci.explore.scheduler_replay", "bfs_steps"),
        ),
        machine_tests=(
            MachineTest(
                "scheduler",
                _SCHEDULER_NODE,
                "the public scheduler's machine against the crate",
            ),
            MachineTest(
                "scheduler-model",
                "stateful/test_scheduler_machine.py::"
                "test_the_scheduler_model_agrees_with_a_second_model",
                "the public scheduler's machine, model against model (no binding)",
            ),
        ),
        # The public scheduler drives the queue's crate-private recheck, due-time
        # and cleanup paths (`recheck_worker`, `take_expired`, `take_if_in_class`);
        # its callbacks test an availability answer that changes unannounced and
        # due times past the due key's cap.
        crate_files=(
            CrateFile(
                _POLICY_QUEUE_RS,
                (
                    _SCHEDULER_NODE,
                    "tests/test_scheduler_corpus.py",
                    "tests/test_scheduler_binding.py",
                    "tests/test_scheduler_production.py",
                    "tests/test_scheduler_callbacks.py",
                ),
            ),
        ),
    ),
    SubjectEntry(
        name="replica",
        description="SessionAffinity replicas exchanging versioned bindings",
        subject=lazy("stateful.replica_subject", "ReplicaSubject"),
        machine=lazy("stateful.replica_network", "ReplicaNetworkMachine"),
        trace_kind=lazy("ci.replay.replica", "KIND"),
        canaries=lazy("ci.canaries.replica"),
        gate_tables=(lazy("ci.gate_tables", "replica_network"),),
        # Replicas reach versions and publications of the affinity table.
        crate_files=(CrateFile(_AFFINITY_RS, ("tests/test_replica_network.py",)),),
    ),
)

_REGISTRY: dict[str, SubjectEntry] = {entry.name: entry for entry in _BUILTIN}


def entries() -> tuple[SubjectEntry, ...]:
    """Every registered subject, sorted by name."""
    return tuple(entry for _, entry in sorted(_REGISTRY.items()))


def names() -> tuple[str, ...]:
    """Every registered subject's name, sorted."""
    return tuple(sorted(_REGISTRY))


def entry(name: str) -> SubjectEntry:
    """The subject called `name`; `UnknownSubjectError` names the known ones."""
    if name not in _REGISTRY:
        known = ", ".join(names())
        raise UnknownSubjectError(f"unknown subject {name!r} (known: {known})")
    return _REGISTRY[name]


def explorable() -> tuple[SubjectEntry, ...]:
    """The subjects `python -m ci.explore` can enumerate, sorted by name."""
    return tuple(found for found in entries() if found.explorer is not None)


def machine_tests() -> tuple[MachineTest, ...]:
    """Every subject's machine tests, by subject name."""
    return tuple(test for found in entries() for test in found.machine_tests)


def crate_files() -> dict[str, CrateFile]:
    """The mutated crate files, by path: each owner's, with every subject's tests.

    Files come in subject order; a file's tests are its owner's, then those of
    the other subjects that reach it, each once.
    """
    declared = [file for found in entries() for file in found.crate_files]
    merged: dict[str, CrateFile] = {}
    for owned in (file for file in declared if file.prefix):
        tests = [
            test
            for file in (owned, *declared)
            if file.path == owned.path
            for test in file.tests
        ]
        merged[owned.path] = CrateFile(
            owned.path, tuple(dict.fromkeys(tests)), owned.prefix, owned.crate_filters
        )
    return merged


class CrateFileView(Mapping[str, _Field]):
    """One field of each `crate_files()` entry, by path, read afresh on every use.

    A module-level table of the mutation benchmark (which file, which tests)
    is such a view, so a subject registered later is in it too.
    """

    def __init__(self, field_of: Callable[[CrateFile], _Field]) -> None:
        """The view of `field_of(file)` per mutated file."""
        self._field_of = field_of

    def _now(self) -> dict[str, _Field]:
        return {path: self._field_of(file) for path, file in crate_files().items()}

    def __getitem__(self, path: str) -> _Field:
        """The field of the file at `path`."""
        return self._now()[path]

    def __iter__(self) -> Iterator[str]:
        """The mutated files' paths, in subject order."""
        return iter(self._now())

    def __len__(self) -> int:
        """How many files are mutated."""
        return len(self._now())


def register(new: SubjectEntry) -> None:
    """Add a subject; a name registered already is a `ValueError`."""
    if new.name in _REGISTRY:
        raise ValueError(f"subject {new.name!r} is registered already")
    _REGISTRY[new.name] = new


def unregister(name: str) -> None:
    """Remove a subject added by `register` (a built-in one stays)."""
    if any(builtin.name == name for builtin in _BUILTIN):
        raise ValueError(f"subject {name!r} is built in")
    entry(name)
    del _REGISTRY[name]


@contextmanager
def registered(new: SubjectEntry) -> Iterator[SubjectEntry]:
    """`new` is registered inside the block, and only there."""
    register(new)
    try:
        yield new
    finally:
        unregister(new.name)
