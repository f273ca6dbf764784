"""The subject registry: every entry is coherent, and a new subject needs no edit.

The built-in entries must agree with the harness subjects, machines, trace
kinds and the property registry they name. A small dummy subject -- a counter,
model against model -- is then registered from this file alone and run
through the gate's statistics and tables, trace recording and replay
(`python -m ci.replay`), the canary check, the benchmark (`python -m
ci.bench`), the mutation plan and the explorer's and Rust exporter's
refusals, with no edit anywhere in `ci/`.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize
from rich.console import Console
from rich.table import Table

from ci import gate, subjects
from ci.bench import command as bench_cli
from ci.bench.figures import Figures, timed
from ci.canaries.check import CanarySurvivedError, first_failed_check
from ci.explore import command as explore_cli
from ci.mutants import plan
from ci.mutants.operators import TARGET_FILES
from ci.replay import command as replay_cli
from ci.replay.codec import OpCodec, codec_for, dataclass_codec
from ci.replay.rust.emit import Capabilities, ExportError, export
from ci.replay.trace import Factory, TraceKind, kind_of, load, loads, save
from ci.trust.machine_tests import MACHINE_TESTS
from properties import properties
from stateful import stats
from stateful.harness import Harness, Subject
from stateful.machine import STEPS_MIN, DifferentialMachine, rule, run_and_check

# ---- the built-in entries -----------------------------------------------------


@pytest.mark.parametrize("name", subjects.names())
def test_an_entry_names_parts_that_agree_on_its_name(name: str) -> None:
    """Harness subject, machine and trace kind of an entry carry its name."""
    entry = subjects.entry(name)

    assert name == entry.subject_class().name
    assert entry.subject_class() is entry.machine().subject
    assert name == entry.kind().subject


def test_every_property_names_a_registered_subject() -> None:
    """The property registry speaks of registered subjects only."""
    named = {prop.subject for prop in properties()}

    assert set() == named - set(subjects.names())


def test_every_registered_subject_has_properties_and_canaries() -> None:
    """A built-in subject is checked by properties and must catch canaries."""
    named = {prop.subject for prop in properties()}

    assert set(subjects.names()) == named
    assert all(entry.canary_factories() for entry in subjects.entries())


def test_every_machine_test_of_a_subject_is_offered_by_name() -> None:
    """`ci.trust.machine_tests` offers every machine test a subject declares."""
    declared = [test.name for test in subjects.machine_tests()]

    assert declared == [name for name in MACHINE_TESTS if name in declared]


def test_an_unknown_subject_is_named_with_the_known_ones() -> None:
    """Asking for an unregistered subject says which ones exist."""
    with pytest.raises(subjects.UnknownSubjectError) as raised:
        subjects.entry("nosuch")

    known = ", ".join(subjects.names())
    assert f"unknown subject 'nosuch' (known: {known})" == str(raised.value)
    assert "affinity, queue, replica" in known


def test_a_subject_cannot_be_registered_twice_or_removed_when_built_in() -> None:
    """`register` refuses a taken name; `unregister` refuses a built-in subject."""
    with pytest.raises(ValueError, match="registered already"):
        subjects.register(subjects.entry("queue"))
    with pytest.raises(ValueError, match="built in"):
        subjects.unregister("queue")


# ---- a dummy subject: a counter ---------------------------------------------------


@dataclass(frozen=True)
class Add:
    """Add `amount` to the counter; the new total is returned."""

    amount: int


@dataclass(frozen=True)
class Reset:
    """Set the counter to zero; the old total is returned."""


CounterOp = Add | Reset


@dataclass(frozen=True)
class Total:
    """A call's outcome: the total it returned (a counter raises no error)."""

    value: int
    error: str | None = None


class Counter:
    """The reference counter: a running total, from zero."""

    def __init__(self, start: int) -> None:
        """Start at `start`."""
        self.total = start

    def add(self, amount: int) -> int:
        """The total after adding `amount`."""
        self.total += amount
        return self.total

    def reset(self) -> int:
        """The total before setting it to zero."""
        old, self.total = self.total, 0
        return old


class ForgetfulReset(Counter):
    """Canary: a reset that leaves the total as it was."""

    def reset(self) -> int:
        """The total, unchanged."""
        return self.total


class CounterSubject(Subject[int, CounterOp]):
    """A counter: configuration is its starting total."""

    name: ClassVar[str] = "counter"

    def new_model(self, config: int) -> Counter:
        """A fresh counter."""
        return Counter(config)

    def crate_factory(self) -> Callable[[int], Any]:
        """No crate behind a counter: a second model stands in."""
        return Counter

    def outcome(self, api: Any, op: CounterOp) -> Total:
        """The total the call returned."""
        match op:
            case Add(amount=amount):
                return Total(api.add(amount))
            case Reset():
                return Total(api.reset())
        raise TypeError(f"not a counter operation: {op!r}")

    def snapshot(self, model: Any) -> int:
        """The model's total."""
        return int(model.total)

    def observe(self, api: Any, snapshot: Any) -> int:
        """The total, read directly."""
        del snapshot
        return int(api.total)

    def difference(self, model_view: Any, crate_view: Any) -> str:
        """The two totals."""
        return f"total: model {model_view} != crate {crate_view}"


class CounterMachine(DifferentialMachine):
    """A counter against a second counter."""

    subject = CounterSubject
    factory: ClassVar[Callable[[int], Any] | None] = None

    @initialize(start=st.integers(0, 3))
    def build(self, start: int) -> None:
        """Both counters start at `start`."""
        self._start(Harness(CounterSubject(), start, type(self).factory))

    @rule(amount=st.integers(-2, 2))
    def add(self, amount: int) -> None:
        """Adding gives the same total on both sides."""
        self._run("add", Add(amount))

    @rule()
    def reset(self) -> None:
        """Resetting gives the same old total on both sides."""
        self._run("reset", Reset())


class CounterKind(TraceKind):
    """Traces of counter programs: `start`, then additions and resets."""

    subject = "counter"
    noun = "counter"
    setup_keys = frozenset({"start"})
    ops = OpCodec((Add, Reset), {})
    outcomes = dataclass_codec(Total, {})
    projections = codec_for(int, {})

    def encode_setup(self, setup: int) -> dict[str, Any]:
        """`start`."""
        return {"start": setup}

    def decode_setup(self, document: dict[str, Any]) -> int:
        """`start`, an integer."""
        start: int = codec_for(int, {})[1](document["start"], "start")
        return start

    def project(self, model: Any) -> int:
        """The total."""
        return int(model.total)

    def harness(self, setup: int, factory: Factory) -> Harness[Any, Any]:
        """A harness over a counter starting at `setup`."""
        return Harness(CounterSubject(), setup, factory)

    def setup_from(self, subject: Any, config: Any) -> int:
        """The starting total."""
        del subject
        return int(config)

    def describe(self, setup: int) -> str:
        """The starting total."""
        return f"start {setup}"

    def model_factory(self) -> Factory:
        """A second counter."""
        return Counter

    def crate_factory(self) -> Factory:
        """A second counter (no crate behind it)."""
        return Counter

    def canaries(self) -> dict[str, Factory]:
        """The canaries of the counter (`CANARIES` below)."""
        return dict(CANARIES)


KIND = CounterKind()
CANARIES: dict[str, Callable[[int], Any]] = {"forgetful_reset": ForgetfulReset}
CAUGHT_BY: dict[str, str] = {"forgetful_reset": "states_agree"}
SHORT = settings(max_examples=40, stateful_step_count=120, derandomize=True)


def counter_table(records: list[dict[str, Any]]) -> Table | None:
    """The counter's own gate table: steps per counter machine."""
    runs = [r for r in records if r["kind"] == "machine" and r["subject"] == "counter"]
    if not runs:
        return None
    table = Table(title="counter machines")
    table.add_column("machine")
    table.add_column("steps", justify="right")
    for record in runs:
        table.add_row(record["name"], str(record["steps_run"]))
    return table


def counter_rows() -> tuple[Figures]:
    """The counter's own benchmark row: a thousand additions on the model."""

    def run() -> int:
        model = Counter(0)
        for amount in range(1_000):
            model.add(amount)
        return 1_000

    return (timed("a thousand additions", run),)


COUNTER_RS = "src/counter.rs"
"""The counter's file in a crate that has one: what the mutation plan mutates."""
ROOT = Path(__file__).resolve().parents[1]

COUNTER = subjects.SubjectEntry(
    name="counter",
    description="a running total (a dummy subject: model against model)",
    subject=lambda: CounterSubject,
    machine=lambda: CounterMachine,
    trace_kind=lambda: KIND,
    canaries=lambda: sys.modules[__name__],
    gate_tables=(lambda: counter_table,),
    bench=lambda: counter_rows,
    crate_files=(
        subjects.CrateFile(
            COUNTER_RS, ("tests/test_subjects.py",), "C", ("counter::",)
        ),
    ),
)


@pytest.fixture
def counter() -> Iterator[subjects.SubjectEntry]:
    """The counter, registered for one test."""
    with subjects.registered(COUNTER) as entry:
        yield entry


def test_a_registered_subject_is_listed_and_then_gone(
    counter: subjects.SubjectEntry,
) -> None:
    """`registered` adds the entry for the block only."""
    assert counter is subjects.entry("counter")
    assert "counter" in subjects.names()


def test_without_the_registration_there_is_no_counter() -> None:
    """Outside the fixture the registry knows only the built-in subjects."""
    assert "counter" not in subjects.names()
    assert {"affinity", "queue", "replica"} <= set(subjects.names())
    assert COUNTER_RS not in TARGET_FILES


def test_the_counter_machine_feeds_the_gate_statistics_and_tables(
    counter: subjects.SubjectEntry,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A counter run is recorded, and the gate prints its machine and own table."""
    monkeypatch.setenv(stats.STATS_ENV, str(tmp_path))

    run_and_check(counter.machine(), "CounterMachine")
    records = stats.read_all(tmp_path)
    out = io.StringIO()
    run = gate.GateRun("pr", 0, None, records, [])
    gate.summarize(Console(file=out, width=200), run)

    machine = next(r for r in records if r["kind"] == "machine")
    assert "counter" == machine["subject"]
    assert ["add", "reset"] == machine["rules_run"]
    assert STEPS_MIN <= machine["steps_run"]
    assert "counter machines" in out.getvalue()
    assert "CounterMachine" in out.getvalue()


def test_a_counter_trace_is_written_read_and_replayed(
    counter: subjects.SubjectEntry, tmp_path: Path
) -> None:
    """The trace layer finds the counter's kind by its name, and replays it."""
    trace = counter.kind().record(2, [Add(3), Reset(), Add(-1)], "a counter")
    path = save(trace, tmp_path / "counter.json")

    loaded = load(path)
    agrees = replay_cli.main(
        [str(path), "--against", "model"], Console(file=io.StringIO())
    )
    caught = replay_cli.main(
        [str(path), "--canary", "forgetful_reset"], Console(file=io.StringIO())
    )

    assert kind_of("counter") is loaded.kind
    assert [5, 5, -1] == [step.expected.value for step in loaded.steps]
    assert trace == loads(trace.dumps())
    assert replay_cli.EXIT_AGREE == agrees
    assert replay_cli.EXIT_DIVERGED == caught


def test_the_counter_canary_is_caught_by_its_check(
    counter: subjects.SubjectEntry,
) -> None:
    """The canary check runs the counter's machine against its canary."""
    failed = first_failed_check(counter, "forgetful_reset", SHORT)

    assert [counter.caught_by()["forgetful_reset"]] == failed[:1]


def test_a_canary_that_is_no_canary_survives_and_says_so(
    counter: subjects.SubjectEntry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A correct system offered as a canary fails the canary check."""
    monkeypatch.setitem(CANARIES, "forgetful_reset", Counter)

    with pytest.raises(CanarySurvivedError, match="passed against forgetful_reset"):
        first_failed_check(counter, "forgetful_reset", SHORT)


def test_the_counter_is_refused_where_its_entry_declares_nothing(
    counter: subjects.SubjectEntry,
) -> None:
    """No explorer: `--subject counter` is a usage error; no Rust writer: an error."""
    trace = counter.kind().record(0, [Add(1)], "one addition")

    with pytest.raises(ExportError, match="counter traces have no Rust export"):
        export(trace, "one", lambda: Capabilities("0", manual_clock=False))
    assert 2 == explore_cli.main(["--subject", "counter"])


@pytest.mark.usefixtures("counter")
def test_the_mutation_plan_mutates_the_counters_file_and_runs_its_tests(
    tmp_path: Path,
) -> None:
    """The entry's crate file gets mutants, our tests for it and crate filters."""
    config = plan.Config(
        pytest_options=("-x",),
        pytest_paths=(),
        pytest_timeout_s=None,
        crate_timeout_s=1.0,
        shard=(1, 1),
        ids=(),
        work_dir=tmp_path,
        out_root=tmp_path,
    )

    command = plan.pytest_command(config, COUNTER_RS, ROOT, ())
    theirs = plan.crate_command(plan.CRATE_TEST_FILTERS[COUNTER_RS])

    assert "C" == TARGET_FILES[COUNTER_RS]
    assert "tests/test_subjects.py" == command[-1]
    assert ["--", "counter::"] == theirs[-2:]
    assert ("tests/test_subjects.py",) == plan.PYTEST_PATHS_BY_FILE[COUNTER_RS]


def test_the_bench_measures_the_counter_machine_and_its_own_rows(
    counter: subjects.SubjectEntry, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m ci.bench counter` runs the machine both ways, then its rows."""
    status = bench_cli.main([counter.name, "--examples", "5"])

    out = capsys.readouterr().out
    assert 0 == status
    assert "counter: 5 programs" in out
    assert "machine, model vs crate" in out
    assert "machine, model vs model" in out
    assert "a thousand additions" in out
    assert "differential / model-only, CPU per step:" in out
