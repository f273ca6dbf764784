"""The subject registry: one entry per component under test, which `ci/` iterates.

A *subject* is a component the suite checks against its reference model (the
affinity table, the policy queue, affinity replicas over a network). Everything
`ci/` needs to know about one lives in its `SubjectEntry`:

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
    targets      the fuzz, soak and determinism targets that run its machine,
                 and which of them run by default (`MachineTest.default`)

Other modules ask the registry (`entry(name)`, `entries()`) and never compare
a subject's name: a new subject is one `SubjectEntry` in `_BUILTIN` plus one
module per column of the README's layout table (model, adapter, properties,
harness subject and machine, trace kind, canaries), and no edit elsewhere in
`ci/`. Every field that would import the subject's modules is a zero-argument
callable, usually `lazy("module", "attribute")`, so that importing this module
imports no subject (and never the binding); tests may `register` an
entry of their own for the duration of a `with registered(entry):` block.

Adding the next subject, say `scheduler`:

1. write `model/scheduler/`, the adapter module `impl/adapter/scheduler.py`,
   the properties in `properties/scheduler/` (registered under the subject
   name `scheduler`, stating their expectations in their own words),
   `stateful/scheduler_subject.py` (a `Subject` whose `name` is `scheduler`)
   and `stateful/scheduler_machine.py` (whose `subject` is that class),
   `ci/replay/scheduler.py` (its `KIND`, whose `subject` is `scheduler`) and
   `ci/canaries/scheduler.py` (`CANARIES`, `CAUGHT_BY`);
2. add `SubjectEntry(name="scheduler", ...)` to `_BUILTIN` below, naming them
   with `lazy(...)`; leave out what the subject does not have (a Rust writer,
   an explorer, gate tables, trust targets);
3. `tests/test_subjects.py` checks that the names agree with the harness
   subject, the machine, the trace kind and the property registry, and
   `tests/test_canaries.py` runs every canary the entry names.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from rich.table import Table

    from stateful.harness import Subject
    from stateful.machine import DifferentialMachine


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

    `ci.fuzz`, `ci.soak` and `ci.determinism` run targets by name; `default`
    targets are what fuzzing and the soak run when no name is given.
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
    into an exploration; `counts_section` is the key of
    `ci/explore/state_counts.json` under which the subject's pinned counts sit
    (None: at the top level); `machines` are the coverage runners by machine
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
    counts_section: str | None = None
    commands: Callable[[], Mapping[str, ExploreCommand]] = _no_commands
    closes: bool = False
    shortest: Callable[[], Callable[[str], int | None]] | None = None


GateTable = Callable[[list[dict[str, Any]]], "Table | None"]


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
    targets: tuple[MachineTest, ...] = field(default=())

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
_CANARY_FILE: Final[str] = "ci/trust/canary_targets.py"

_BUILTIN: Final[tuple[SubjectEntry, ...]] = (
    SubjectEntry(
        name="affinity",
        description="SessionAffinity: leases, commits, waiters and the idle TTL",
        subject=lazy("stateful.affinity_subject", "AffinitySubject"),
        machine=lazy("stateful.affinity_machine", "AffinityMachine"),
        trace_kind=lazy("ci.replay.affinity", "KIND"),
        canaries=lazy("ci.canaries.affinity"),
        rust_writer=lazy("ci.replay.rust.affinity"),
        explorer=Explorer(
            bounds=lazy("ci.explore.bounds", "BOUNDS"),
            explore=lazy("ci.explore.command", "explore"),
            machines=lazy("ci.explore.command", "AFFINITY_RUNNERS"),
            coverage_bounds=("picture", "core"),
            commands=lazy("ci.explore.command", "AFFINITY_COMMANDS"),
            shortest=lazy("ci.bench.shrinking", "affinity_bfs_steps"),
        ),
        targets=(
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
    ),
    SubjectEntry(
        name="queue",
        description="PolicyQueue: weighted deficit round robin over request classes",
        subject=lazy("stateful.queue_subject", "QueueSubject"),
        machine=lazy("stateful.queue_machine", "QueueMachine"),
        trace_kind=lazy("ci.replay.queue", "KIND"),
        canaries=lazy("ci.canaries.queue"),
        rust_writer=lazy("ci.replay.rust.queue"),
        explorer=Explorer(
            bounds=lazy("ci.explore.queue_graph", "QUEUE_BOUNDS"),
            explore=lazy("ci.explore.queue_graph", "explore"),
            machines=lazy("ci.explore.queue_coverage", "QUEUE_RUNNERS"),
            coverage_bounds=("pair",),
            counts_section="queue",
            closes=True,
            shortest=lazy("ci.bench.shrinking", "queue_bfs_steps"),
        ),
        targets=(
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
    ),
    SubjectEntry(
        name="scheduler",
        description="LocalScheduler: admission, rechecks, due times and cancellations",
        subject=lazy("stateful.scheduler_subject", "SchedulerSubject"),
        machine=lazy("stateful.scheduler_machine", "SchedulerMachine"),
        trace_kind=lazy("ci.replay.scheduler", "KIND"),
        canaries=lazy("ci.canaries.scheduler"),
        rust_writer=lazy("ci.replay.rust.scheduler"),
        explorer=Explorer(
            bounds=lazy("ci.explore.scheduler_graph", "SCHEDULER_BOUNDS"),
            explore=lazy("ci.explore.scheduler_graph", "explore"),
            machines=lazy("ci.explore.scheduler_coverage", "SCHEDULER_RUNNERS"),
            coverage_bounds=("lanes",),
            counts_section="scheduler",
            commands=lazy("ci.explore.scheduler_replay", "SCHEDULER_COMMANDS"),
            shortest=lazy("ci.bench.shrinking", "scheduler_bfs_steps"),
        ),
        targets=(
            MachineTest(
                "scheduler",
                "stateful/test_scheduler_machine.py::"
                "test_the_crate_scheduler_agrees_with_the_model_and_every_goal_is_reached",
                "the public scheduler's machine against the crate",
            ),
            MachineTest(
                "scheduler-model",
                "stateful/test_scheduler_machine.py::"
                "test_the_scheduler_model_agrees_with_a_second_model",
                "the public scheduler's machine, model against model (no binding)",
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


def targets() -> tuple[MachineTest, ...]:
    """Every subject's fuzz, soak and determinism targets, by subject name."""
    return tuple(target for found in entries() for target in found.targets)


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
