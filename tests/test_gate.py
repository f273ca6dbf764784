"""`python -m ci.gate`: exit 0, 1 or 2, JUnit XML, artifacts and a summary.

Each test runs the gate as a command on a tiny test folder of its own, so the
gate's own pytest run stays short.
"""

from __future__ import annotations

import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from command_support import run_module
from rich.console import Console
from test_gate_summary import impossible

from ci import build_local
from ci.gate import EXIT_FAIL, EXIT_INFRA, EXIT_PASS, _clock_goals
from ci.replay.artifacts import BUILD_TREE_ENV
from stateful.affinity_machine import AffinityMachine
from stateful.machine import rules_of
from stateful.queue_machine import QueueMachine

GATE_TIMEOUT_S = 900

PASSING = '''
"""A short machine run that records its statistics, as the real one does."""

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from stateful import stats
from stateful.affinity_machine import AffinityMachine
from stateful.machine import rules_of
from stateful.queue_machine import QueueMachine

SHORT = settings(max_examples=5, stateful_step_count=40)
Short = type("Short", (AffinityMachine,), {})
ShortQueue = type("ShortQueue", (QueueMachine,), {})


def test_a_short_machine_run_agrees() -> None:
    """A few short programs agree with the crate."""
    try:
        run_state_machine_as_test(Short, settings=SHORT)
    finally:
        stats.record_machine("affinity", Short, rules_of(Short), "ShortMachine")


def test_a_short_queue_machine_run_agrees() -> None:
    """A few short queue programs agree with the crate."""
    try:
        run_state_machine_as_test(ShortQueue, settings=SHORT)
    finally:
        stats.record_machine("queue", ShortQueue, rules_of(ShortQueue), "ShortQueue")
'''

FAILING = '''
"""A machine test that fails: the system under test forgets every release."""

from hypothesis import settings

from ci.canaries.affinity import CANARIES
from ci.profiles import CANARY_SETTINGS
from stateful.affinity_machine import AffinityMachine

Forgetful = type(
    "Forgetful", (AffinityMachine,), {"factory": CANARIES["forgetful_release"]}
)
TestForgetful = Forgetful.TestCase
TestForgetful.settings = settings(CANARY_SETTINGS, print_blob=True)
'''

FAILING_QUEUE = '''
"""A queue machine test that fails: the crate's FIFO tie-break is reversed."""

from hypothesis import settings

from ci.canaries.queue import CANARIES
from ci.profiles import CANARY_SETTINGS
from stateful.queue_machine import QueueMachine

LifoTies = type("LifoTies", (QueueMachine,), {"factory": CANARIES["lifo_ties"]})
TestLifoTies = LifoTies.TestCase
TestLifoTies.settings = settings(CANARY_SETTINGS, print_blob=True)
'''


WEAKENED = '''
"""The affinity machine with a weakened generator: its clock never reaches a deadline.

Beside it, the same machine unweakened under the same settings (the control).
"""

from hypothesis import settings
from hypothesis import strategies as st

from model.affinity.ops import Advance
from model.affinity.table import Binding
from model.affinity.types import Target
from stateful.affinity_machine import AffinityMachine, _next_tick_ns
from stateful.machine import rule, run_and_check

SHORT = settings(max_examples=30, stateful_step_count=160, derandomize=True)
TAGS = ("runtime", "runtime_reaper")


class NeverPastADeadline(AffinityMachine):
    """Every clock move stops at least 1 ns before the earliest binding deadline."""

    def _short_of_deadlines(self, now_ns: int) -> int:
        state = self._harness().model.state()
        deadlines = [e.deadline_ns for _, e in state.entries if isinstance(e, Binding)]
        if now_ns < state.now_ns or not deadlines:
            return now_ns
        return max(state.now_ns, min(now_ns, min(deadlines) - 1))

    def _clock_targets(self) -> list[int]:
        return sorted({self._short_of_deadlines(t) for t in super()._clock_targets()})

    @rule(offset_ns=st.sampled_from((-1, 0, 1)))
    def reaper_tick(self, offset_ns: int) -> None:
        """Towards the next reaper tick, but never onto a deadline."""
        tick_ns = _next_tick_ns(self._harness().model.state()) + offset_ns
        self._run("reaper_tick", Advance(self._short_of_deadlines(tick_ns)))

    def _expire_a_vacant_binding(
        self, rule_name: str, data: st.DataObject, dispatched: Target
    ) -> None:
        """Bind and release, but leave the clock where it is."""
        vacant = self._vacant_ids()
        if vacant:
            first = data.draw(st.sampled_from(vacant), label="expiring id")
            self._turn(rule_name, first, dispatched, release=True)


Unweakened = type("Unweakened", (AffinityMachine,), {})
NeverPastADeadline.TestCase.settings = SHORT
Unweakened.TestCase.settings = SHORT


def test_the_weakened_machine() -> None:
    """Fails as vacuous: no reap ever meets an expired binding."""
    run_and_check(NeverPastADeadline, "NeverPastADeadline", TAGS)


def test_the_unweakened_machine() -> None:
    """The control: the same budget, the generator as the suite has it."""
    run_and_check(Unweakened, "Unweakened", TAGS)
'''


def _gate(*argv: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if k != BUILD_TREE_ENV}
    return run_module("ci.gate", *argv, timeout_s=GATE_TIMEOUT_S, env=environment)


def _folder(tmp_path: Path, name: str, source: str) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    folder.joinpath(name).write_text(source)
    return folder


@pytest.fixture(scope="module")
def passing_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The gate over one passing machine test, and its JUnit path."""
    tmp_path = tmp_path_factory.mktemp("passing")
    suite = _folder(tmp_path, "test_short.py", PASSING)
    junit = tmp_path / "reports" / "junit.xml"
    completed = _gate(
        "--job",
        "pr",
        "-n",
        "0",
        "--junit",
        str(junit),
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--",
        str(suite),
    )
    return completed, junit


def _failing(
    factory: pytest.TempPathFactory, name: str, source: str, workers: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp_path = factory.mktemp(name)
    suite = _folder(tmp_path, f"test_{name}.py", source)
    artifacts = tmp_path / "artifacts"
    completed = _gate(
        "--job",
        "pr",
        "-n",
        workers,
        "--artifacts",
        str(artifacts),
        "--",
        str(suite),
    )
    return completed, artifacts


@pytest.fixture(scope="module")
def failing_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The gate over one failing machine test on two xdist workers."""
    return _failing(tmp_path_factory, "forgetful", FAILING, "2")


@pytest.fixture(scope="module")
def failing_queue_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The gate over one failing queue machine test."""
    return _failing(tmp_path_factory, "lifo_ties", FAILING_QUEUE, "0")


@pytest.fixture(scope="module")
def weakened_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """The gate over a machine whose clock never reaches a deadline, and a control."""
    return _failing(tmp_path_factory, "weakened", WEAKENED, "2")


@pytest.mark.parametrize(
    ("run", "status", "verdict"),
    [
        ("passing_run", EXIT_PASS, "gate PASS (pytest exit 0)"),
        ("failing_run", EXIT_FAIL, "gate FAIL (pytest exit 1)"),
    ],
)
@pytest.mark.slow
def test_the_exit_status_and_verdict_follow_the_tests(
    request: pytest.FixtureRequest, run: str, status: int, verdict: str
) -> None:
    """All tests passed: status 0 and PASS; a machine test failed: status 1, FAIL."""
    completed, _ = request.getfixturevalue(run)

    assert status == completed.returncode
    assert verdict in completed.stdout


@pytest.mark.slow
def test_a_passing_run_writes_junit_xml_where_asked(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """`--junit PATH` holds pytest's report: one test, no failure."""
    _, junit = passing_run

    suite = ET.parse(junit).getroot().find("testsuite")  # noqa: S314 - our own report
    assert suite is not None

    assert "2" == suite.get("tests")
    assert "0" == suite.get("failures")


@pytest.mark.slow
def test_the_summary_shows_the_machines_steps_rules_and_goals(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """Both machines' statistics files reach the summary table, with subjects."""
    completed, _ = passing_run
    lines = completed.stdout.splitlines()

    affinity = next(line for line in lines if "ShortMachine" in line)
    queue = next(line for line in lines if "ShortQueue" in line)

    assert f"/{len(rules_of(AffinityMachine))}" in affinity  # rules run of all
    assert "affinity" in affinity
    assert f"/{len(rules_of(QueueMachine))}" in queue
    assert "queue" in queue
    assert [] == impossible(completed.stdout)


@pytest.mark.slow
def test_a_weakened_generator_fails_the_gate_naming_the_vacuous_property(
    weakened_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """A reap never meets an expired binding: FAIL, and the summary says which."""
    completed, _ = weakened_run
    vacuous = "property never exercised non-vacuously: a_reap_collects_every_expired"

    assert EXIT_FAIL == completed.returncode
    assert f"NeverPastADeadline: {vacuous}" in completed.stdout
    assert f"Unweakened: {vacuous}" not in completed.stdout
    assert "gate FAIL (pytest exit 1)" in completed.stdout


@pytest.mark.slow
def test_a_passing_run_writes_the_dossier_with_counts_for_every_subject(
    passing_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """dossier.md and dossier.json sit under <artifacts>/dossier/latest."""
    completed, junit = passing_run
    folder = junit.parent.parent / "artifacts" / "dossier" / "latest"
    document = json.loads((folder / "dossier.json").read_text())
    rows = {row["name"]: row for row in document["properties"]}

    assert (folder / "dossier.md").is_file()
    subjects = {row["subject"] for row in rows.values()}
    assert {"affinity", "queue", "replica", "scheduler"} == subjects
    assert rows["a_pop_takes_the_best_entry_of_its_lane"]["evaluations"] > 0
    assert rows["entries_never_exceed_capacity"]["evaluations"] > 0
    assert "least exercised properties" in completed.stdout
    assert f"dossier: {folder.resolve()}" in completed.stdout.replace("\n", "")


@pytest.mark.slow
def test_a_failing_run_collects_the_artifact_from_an_xdist_worker(
    failing_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The worker wrote the folder into `--artifacts`; `latest` points at it."""
    _, artifacts = failing_run

    assert (artifacts / "runTest" / "latest" / "trace.json").is_file()


@pytest.mark.slow
def test_a_failing_run_ends_with_the_replay_line_and_the_rust_test(
    failing_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The log ends with the command to paste, then the counterexample's repro.rs."""
    completed, artifacts = failing_run
    folder = (artifacts / "runTest" / "latest").resolve()
    replay_line, repro_line = completed.stdout.rstrip().splitlines()[-2:]

    assert (
        f"python -m ci.replay {folder / 'minimal.json'} --canary forgetful_release"
        == replay_line
    )
    assert f"# as a Rust test: {folder / 'repro.rs'}" == repro_line
    assert "#[tokio::test(start_paused = true)]" in (folder / "repro.rs").read_text()


@pytest.mark.slow
def test_a_failing_run_reports_the_shrunk_length_and_check(
    failing_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The counterexample table names the failed check and the trace length."""
    completed, _ = failing_run

    assert "counterexamples found in this run" in completed.stdout
    assert "states_agree" in completed.stdout


@pytest.mark.slow
def test_a_broken_queue_fails_the_gate_with_a_queue_trace(
    failing_queue_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """A queue canary: FAIL, and a queue trace and its minimized version on disk."""
    completed, artifacts = failing_queue_run
    folder = artifacts / "runTest" / "latest"

    assert EXIT_FAIL == completed.returncode
    assert "queue" == json.loads((folder / "trace.json").read_text())["subject"]
    assert (folder / "minimal.json").is_file()
    assert "#[test]\nfn runtest_minimal() {" in (folder / "repro.rs").read_text()
    assert "outcomes_agree" in completed.stdout


@pytest.mark.slow
def test_the_queue_replay_line_replays_the_minimized_failure_step_by_step(
    failing_queue_run: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    """The gate's replay line, run as printed, shows the table and the divergence."""
    completed, artifacts = failing_queue_run
    line = completed.stdout.rstrip().splitlines()[-2]
    minimal = (artifacts / "runTest" / "latest").resolve() / "minimal.json"
    assert f"python -m ci.replay {minimal} --canary lifo_ties" == line

    assert line.startswith("python -m ci.replay ")
    replayed = run_module("ci.replay", *line.split()[3:], timeout_s=GATE_TIMEOUT_S)

    assert 1 == replayed.returncode
    assert "replay against canary lifo_ties" in replayed.stdout
    assert "first divergence at step" in replayed.stdout
    assert "outcomes_agree" in replayed.stdout


@pytest.mark.slow
def test_a_run_that_collects_no_tests_exits_two(tmp_path: Path) -> None:
    """Pytest's 'no tests collected' (5) is an infrastructure error: status 2."""
    suite = _folder(tmp_path, "test_short.py", PASSING)

    completed = _gate(
        "--job",
        "pr",
        "-n",
        "0",
        "--artifacts",
        str(tmp_path / "artifacts"),
        "--",
        str(suite),
        "-k",
        "no_test_is_called_this",
    )

    assert EXIT_INFRA == completed.returncode
    assert "ci.gate: error: pytest exited 5 (no tests collected)\n" == completed.stderr


def test_an_unknown_job_exits_two_with_one_line() -> None:
    """A usage error is one `ci.gate: error:` line on stderr and status 2."""
    completed = _gate("--job", "weekly")

    assert EXIT_INFRA == completed.returncode
    assert 1 == len(completed.stderr.splitlines())
    assert completed.stderr.startswith("ci.gate: error: argument --job")


def _crate(tmp_path: Path, affinity: str = "", queue: str = "") -> Path:
    """A folder that names itself dynamo-kv-router, with the given source text."""
    crate = tmp_path / "lib" / "kv-router"
    (crate / "src" / "services" / "selection").mkdir(parents=True)
    (crate / "src" / "scheduling").mkdir(parents=True)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "dynamo-kv-router"\nversion = "9.9.9"\n'
    )
    (crate / "src" / "services" / "selection" / "affinity.rs").write_text(affinity)
    (crate / "src" / "scheduling" / "policy_queue.rs").write_text(queue)
    return crate


BASE_AFFINITY = """
    pub fn with_config(c) {} pub fn try_acquire(
        s) {} pub fn join_initializing(s) {} pub fn apply_replica_update(u) {}
    pub fn expire_for_test(s) {}
"""
MANUAL_AFFINITY = (
    BASE_AFFINITY
    + """
    pub fn with_manual_clock(c, now) {} pub fn advance_clock(now) {}
    pub fn subagent_group_affinity_id(p) {}
"""
)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("/nonexistent/dynamo", "is not a folder"),
        ("{tmp}", "holds no dynamo-kv-router crate"),
    ],
)
def test_a_source_that_is_not_a_crate_exits_two_with_one_line(
    tmp_path: Path, source: str, message: str
) -> None:
    """--source must name a Dynamo checkout or a dynamo-kv-router crate folder."""
    result = _gate("--job", "pr", "--source", source.format(tmp=tmp_path))

    assert 2 == result.returncode
    assert 1 == len(result.stderr.strip().splitlines())
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_a_tree_the_binding_cannot_build_against_names_what_is_missing(
    tmp_path: Path,
) -> None:
    """A crate without an item the binding calls is refused before any build."""
    _crate(tmp_path, affinity="pub fn with_config(c) {}")

    result = _gate("--job", "pr", "--source", str(tmp_path))

    assert 2 == result.returncode
    assert 1 == len(result.stderr.strip().splitlines())
    assert "`pub fn try_acquire`" in result.stderr
    assert "`pub fn pop_next`" in result.stderr
    assert "`pub fn with_config`" not in result.stderr


def test_the_environment_variable_names_the_source_too(tmp_path: Path) -> None:
    """DYNAMO_KV_ROUTER_PATH is --source's default."""
    result = run_module(
        "ci.gate",
        "--job",
        "pr",
        timeout_s=GATE_TIMEOUT_S,
        env=os.environ | {"DYNAMO_KV_ROUTER_PATH": str(tmp_path)},
    )

    assert 2 == result.returncode
    assert "holds no dynamo-kv-router crate" in result.stderr


@pytest.mark.parametrize(
    ("affinity", "queue", "features"),
    [
        (BASE_AFFINITY, "pub fn pop_next(", ()),
        (MANUAL_AFFINITY, "pub fn pop_next(", ("manual-clock",)),
        (
            MANUAL_AFFINITY,
            "pub fn pop_next( pub fn recheck_worker(w) pub fn recheck_all_workers(",
            ("manual-clock", "queue-recheck"),
        ),
        (
            BASE_AFFINITY,
            (
                "pub fn pop_next( pub(crate) fn recheck_worker(w) "
                "pub(crate) fn recheck_all_workers("
            ),
            (),
        ),
    ],
)
def test_binding_features_follow_the_public_items_of_the_tree(
    tmp_path: Path, affinity: str, queue: str, features: tuple[str, ...]
) -> None:
    """manual-clock and queue-recheck are on exactly where the tree has them public."""
    _crate(tmp_path, affinity=affinity, queue=queue)
    crate = build_local.resolve_source(tmp_path)

    assert [] == build_local.missing_items(crate)
    assert features == build_local.detect_features(crate)


def test_the_pinned_crate_offers_no_optional_binding_feature() -> None:
    """The crates.io source has neither the manual clock nor a public recheck."""
    source = build_local.pinned_source()

    assert [] == build_local.missing_items(source)
    assert () == build_local.detect_features(source)


def test_the_clock_boundary_goals_table_counts_each_goal_per_machine() -> None:
    """Clock goals show their counts per machine, and '-' where not a goal."""
    records = [
        {
            "name": "Manual",
            "goals": ["the_clock_advanced_by_zero", "a_waiter_was_woken"],
            "goal_counts": {"the_clock_advanced_by_zero": 17},
        },
        {"name": "Runtime", "goals": [], "goal_counts": {}},
    ]
    table = _clock_goals(records)
    assert table is not None
    console = Console(width=200, record=True)
    console.print(table)
    text = console.export_text()

    row = next(line for line in text.splitlines() if "advanced_by_zero" in line)
    assert "17" in row
    assert "-" in row.split("17")[1]
    assert "a_waiter_was_woken" not in text
