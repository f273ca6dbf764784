"""The gate's summary, rendered from recorded statistics: every table, none empty.

The machines' records come from short model-against-model runs of the real
machines (affinity, queue, replica network), written by the real recorders into
a statistics folder and read back as the gate reads them; the dossier is built
from them. The records of the slower kinds (canary shrinks, graph coverage,
concurrent histories) are written by their recorders from stated counts. A
table that prints `None`, or a ratio whose part exceeds its whole, fails.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test
from rich.console import Console

from ci.dossier import build as dossier
from ci.gate import Counterexample, GateRun, JUnitCounts, summarize
from model.affinity.table import ModelAffinity
from stateful import stats
from stateful.affinity_machine import AffinityMachine
from stateful.concurrent_affinity import CRATE_REPLICA_APPLY
from stateful.concurrent_runs import Tally
from stateful.machine import DifferentialMachine, rules_of
from stateful.queue_machine import QueueMachine
from stateful.queue_subject import model_factory
from stateful.replica_network import ReplicaNetworkMachine

SHORT = settings(
    max_examples=5, stateful_step_count=80, derandomize=True, database=None
)
"""A few short programs: enough for every table to have rows."""
CONSOLE_WIDTH = 400
"""Wide enough that no cell wraps, so each row reads on one line."""

TITLES = (
    "gate: job pr",
    "machines",
    "clock boundary goals",
    "least exercised properties",
    "canary counterexamples",
    "exact coverage of bounded graphs",
    "concurrent histories checked for linearizability",
    "replica network",
    "counterexamples found in this run",
)
"""The title of every table `summarize` can print."""

RATIO = re.compile(r"(?<![\d.,])(\d[\d,]*)/(\d[\d,]*)(?![\d,])")
PERCENT = re.compile(r"(\d+(?:\.\d+)?)%")


def impossible(text: str) -> list[str]:
    """The lines of a rendered summary that print `None` or an impossible ratio."""
    problems: list[str] = []
    for line in text.splitlines():
        if re.search(r"\bNone\b", line):
            problems.append(f"None: {line.strip()}")
        for part, whole in RATIO.findall(line):
            if int(part.replace(",", "")) > int(whole.replace(",", "")):
                problems.append(f"{part}/{whole}: {line.strip()}")
        problems += [
            f"{share}%: {line.strip()}"
            for share in PERCENT.findall(line)
            if float(share) > 100
        ]
    return problems


def _run_and_record(machine: type[DifferentialMachine], name: str) -> None:
    try:
        run_state_machine_as_test(machine, settings=SHORT)
    finally:
        stats.record_machine(machine.subject.name, machine, rules_of(machine), name)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Every kind of record the gate reads, from its recorder, read back."""
    folder = tmp_path_factory.mktemp("stats")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(stats.STATS_ENV, str(folder))

        class Affinity(AffinityMachine):
            """The affinity machine against a second model."""

        class Queue(QueueMachine):
            """The queue machine against a second model."""

        class Network(ReplicaNetworkMachine):
            """The replica network of model tables."""

        Affinity.factory = ModelAffinity
        Queue.factory = model_factory
        Network.factory = ModelAffinity
        _run_and_record(Affinity, "AffinityModel")
        _run_and_record(Queue, "QueueModel")
        _run_and_record(Network, "NetworkModel")
        stats.record_network("NetworkModel", Network.network_counts)
        stats.record_shrink("late_expiry", 9, 60, 4, 60)
        stats.record_coverage(
            {
                "subject": "affinity",
                "bound": "small",
                "machine": "AffinityMachine",
                "profile": "ci",
                "states": {"covered": 180, "total": 212},
                "edges": {"covered": 903, "total": 1_407},
            }
        )
        Tally(
            histories=40,
            calls=310,
            calls_max=12,
            threads_max=4,
            search_states=9_120,
            search_states_max=611,
        ).record("concurrent-affinity", CRATE_REPLICA_APPLY)
        return stats.read_all(folder)


@pytest.fixture(scope="module")
def rendered(
    records: list[dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> str:
    """The summary `summarize` prints for those records, as plain text."""
    folder = tmp_path_factory.mktemp("dossier")
    document = dossier.build(records, folder, {"job": "pr", "crate": "stated"})
    found = Counterexample(
        folder=folder / "a_test" / "20260101T000000Z",
        test="a_test",
        check="outcomes_agree",
        steps=7,
        minimal_steps=3,
    )
    run = GateRun(
        job="pr",
        returncode=1,
        counts=JUnitCounts(tests=10, failures=1, errors=0, skipped=2, time_s=3.5),
        records=records,
        found=[found],
        dossier=document,
        dossier_folder=folder,
    )
    console = Console(width=CONSOLE_WIDTH, record=True, highlight=False)
    summarize(console, run)
    return console.export_text()


def test_every_table_of_the_summary_is_printed(rendered: str) -> None:
    """Recorded statistics of every kind give every table its title."""
    missing = [title for title in TITLES if title not in rendered]

    assert [] == missing


def test_no_table_prints_none_or_an_impossible_ratio(rendered: str) -> None:
    """No cell says `None`; no part exceeds its whole; no share exceeds 100 %."""
    assert [] == impossible(rendered)


def test_every_machine_runs_only_rules_it_has(records: list[dict[str, Any]]) -> None:
    """A machine's record counts steps under its own rules' names only."""
    strays = {
        record["name"]: sorted(set(record["rules_run"]) - set(record["rules"]))
        for record in records
        if record["kind"] == "machine"
    }

    assert {name: [] for name in strays} == strays


def test_the_check_finds_a_none_and_more_rules_run_than_a_machine_has() -> None:
    """The check itself is not vacuous: it flags the two faults it exists for."""
    text = "QueueMachine  queue  1013  17/16  5/5  2,026\nNone\n"

    expected = [
        "17/16: QueueMachine  queue  1013  17/16  5/5  2,026",
        "None: None",
    ]
    assert expected == impossible(text)


def test_summarize_prints_the_concurrency_table_not_none(
    records: list[dict[str, Any]],
) -> None:
    """Only the concurrency records: its table is printed, never `None`."""
    concurrency = [record for record in records if record["kind"] == "concurrency"]
    console = Console(width=CONSOLE_WIDTH, record=True, highlight=False)

    summarize(console, GateRun("pr", 0, None, concurrency, []))
    text = console.export_text()

    assert "concurrent histories checked for linearizability" in text
    assert [] == impossible(text)


def test_the_rendered_summary_ends_with_the_verdict(rendered: str) -> None:
    """A failing run's summary says FAIL, with pytest's exit status."""
    assert "gate FAIL (pytest exit 1)" in rendered


def test_the_counterexample_is_named_in_the_summary(rendered: str) -> None:
    """The found counterexample's test and check are in its table."""
    row = next(line for line in rendered.splitlines() if "a_test" in line)

    assert "outcomes_agree" in row
