"""A failing machine leaves a folder a developer can replay, and a line to paste."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from command_support import run_module
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from ci.canaries.affinity import CANARIES
from ci.explore.affinity_coverage import RULE_OP_TYPES
from ci.profiles import CANARY_SETTINGS
from ci.replay.artifacts import (
    ARTIFACTS_ENV,
    BUILD_TREE_ENV,
    LATEST,
    against_label,
    artifact_replay,
    artifact_repro,
    folder_name_for,
    program_lines,
    recorded_against,
    replay_command,
    reproductions,
    write_artifacts,
)
from ci.replay.command import EXIT_AGREE, EXIT_DIVERGED
from ci.replay.command import main as replay_main
from ci.replay.trace import load
from model.affinity.ops import Release
from stateful import capture
from stateful.affinity_machine import AffinityMachine
from stateful.harness import against_name

REPO = Path(__file__).resolve().parent.parent
PROGRAM_TIMEOUT_S = 120
"""A program.py run: seconds before the test gives up on it."""
TEST = "tests/test_x.py::test_the_machine[crate]"
STAMP = "20260101T000000.000000Z"
"""A fixed stamp: these tests never depend on the wall clock."""

RELEASING_RULES = sorted(rule for rule, ops in RULE_OP_TYPES.items() if Release in ops)
"""Machine rules that can release a lease: the canary fails in one of them
(which one Hypothesis shrinks to moves with the rules and the source's literals)."""


@pytest.fixture(scope="module")
def caught() -> tuple[tuple[capture.FinalRun, ...], AssertionError]:
    """The forgetful-release canary's final replay and the error Hypothesis raised."""
    capture.reset()
    machine = type(
        "Canary_forgetful_release",
        (AffinityMachine,),
        {"factory": CANARIES["forgetful_release"]},
    )
    with pytest.raises(AssertionError) as raised:
        run_state_machine_as_test(
            machine, settings=settings(CANARY_SETTINGS, print_blob=True)
        )
    runs = capture.final_runs()
    capture.reset()
    return runs, raised.value


@pytest.fixture
def folder(
    caught: tuple[tuple[capture.FinalRun, ...], AssertionError], tmp_path: Path
) -> Path:
    """The artifact folder written for the canary's failure."""
    runs, error = caught
    (written,) = write_artifacts(runs, TEST, error, root=tmp_path, stamp=STAMP)
    return written


def test_only_the_final_replay_is_tracked(
    caught: tuple[tuple[capture.FinalRun, ...], AssertionError],
) -> None:
    """One failure, one final replay, with the check that failed in it."""
    runs, _ = caught

    assert 1 == len(runs)
    assert runs[0].failed is not None
    assert "canary:forgetful_release" == against_label(
        "affinity", runs[0].harness.factory
    )


def test_outside_hypothesis_nothing_is_tracked() -> None:
    """`in_final_run` is false without a build context."""
    assert not capture.in_final_run()


def test_the_folder_is_named_by_test_and_stamp(folder: Path, tmp_path: Path) -> None:
    """`<root>/<test>/<stamp>/`, the test name made file-system safe."""
    assert tmp_path / "test_the_machine-crate" / STAMP == folder


def test_the_folder_holds_trace_program_failure_and_meta(folder: Path) -> None:
    """The trace, its minimized form and its Rust test, the program, failure, meta."""
    names = sorted(path.name for path in folder.iterdir())

    assert [
        "failure.txt",
        "meta.json",
        "minimal.json",
        "program.py",
        "repro.rs",
        "trace.json",
    ] == names


def test_latest_points_at_the_newest_folder(folder: Path) -> None:
    """`<test>/latest` is a relative link to the stamp folder."""
    latest = folder.parent / LATEST

    assert latest.is_symlink()
    assert STAMP == str(latest.readlink())


def test_a_second_failure_with_the_same_stamp_gets_its_own_folder(
    caught: tuple[tuple[capture.FinalRun, ...], AssertionError], folder: Path
) -> None:
    """Folders are never overwritten; `latest` moves to the new one."""
    runs, error = caught

    (again,) = write_artifacts(
        runs, TEST, error, root=folder.parent.parent, stamp=STAMP
    )

    assert folder.parent / f"{STAMP}-1" == again
    assert f"{STAMP}-1" == str((folder.parent / LATEST).readlink())


def test_the_trace_ends_with_the_failing_step(
    caught: tuple[tuple[capture.FinalRun, ...], AssertionError], folder: Path
) -> None:
    """The trace is the shrunk program: as long as the step that failed."""
    runs, _ = caught
    failed = runs[0].failed
    assert failed is not None

    trace = load(folder)

    assert failed.step == len(trace.steps)
    assert failed.op == trace.ops[-1]


def test_the_meta_records_versions_profile_commit_blob_and_check(
    folder: Path,
) -> None:
    """Everything needed to reproduce, pinned: versions, settings, commit, blob."""
    meta = json.loads((folder / "meta.json").read_text())

    assert "1.6.1" == meta["crate_version"]
    assert meta["hypothesis_version"] in meta["reproduce_failure"]
    assert meta["blob"]
    assert "states_agree" == meta["failing_check"]["check"]
    assert meta["failing_check"]["rule"] in RELEASING_RULES
    assert meta["shrunk_steps"] == meta["failing_check"]["step"]
    assert 40 == len(meta["git_commit"])
    assert CANARY_SETTINGS.max_examples == meta["settings"]["max_examples"]
    assert replay_command(folder, "canary:forgetful_release") == meta["replay"]
    assert meta["replay"].endswith(" --canary forgetful_release")


def test_the_printed_program_is_kept_as_a_program(folder: Path) -> None:
    """program.py builds the test's machine, one `state.RULE(...)` line per rule."""
    program = (folder / "program.py").read_text()

    assert "class Machine(AffinityMachine):" in program
    assert "    state = Machine()" in program
    assert "run_rules" not in program
    assert any(f"    state.{rule}(" in program for rule in RELEASING_RULES)
    assert "@reproduce_failure(" in program


def _program(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - this interpreter, a file the test wrote
        [sys.executable, str(folder / "program.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PROGRAM_TIMEOUT_S,
        check=False,
    )


def test_program_py_reproduces_the_failure_in_a_fresh_process(folder: Path) -> None:
    """Run as a script from the checkout, program.py fails with the same difference."""
    meta = json.loads((folder / "meta.json").read_text())

    ran = _program(folder)

    assert 1 == ran.returncode, ran.stdout + ran.stderr
    assert meta["failing_check"]["difference"] in ran.stderr
    assert ran.stderr.endswith("program.py: the failure reproduces\n")


def test_program_py_refuses_another_build_in_one_line(folder: Path) -> None:
    """Against a binding that is not the build it names, exit 2 and one line."""
    program = folder / "program.py"
    text = program.read_text()
    program.write_text(text.replace("'crate_version': '", "'crate_version': '0.0.0-"))

    ran = _program(folder)

    assert 2 == ran.returncode
    assert 1 == len(ran.stderr.splitlines())
    assert ran.stderr.startswith("program.py: error: the program was found on ")


def test_the_artifact_replays_as_a_divergence_against_its_canary(
    folder: Path,
) -> None:
    """`python -m ci.replay <folder> --canary forgetful_release` exits 1."""
    assert EXIT_DIVERGED == replay_main([str(folder), "--canary", "forgetful_release"])


def test_the_minimal_trace_is_shorter_and_still_fails(folder: Path) -> None:
    """`minimal.json` fails against the canary in no more steps than trace.json."""
    meta = json.loads((folder / "meta.json").read_text())
    minimal = folder / "minimal.json"

    status = replay_main([str(minimal), "--canary", "forgetful_release"])

    assert EXIT_DIVERGED == status
    assert meta["minimal_steps"] == len(load(minimal).steps)
    assert meta["minimal_steps"] <= meta["shrunk_steps"]


def test_repro_rs_is_the_minimal_trace_as_a_rust_test(folder: Path) -> None:
    """One `#[tokio::test]`, a block per step of `minimal.json`, named in the log."""
    minimal = load(folder / "minimal.json")
    repro = (folder / "repro.rs").read_text(encoding="utf-8")
    program = (folder / "program.py").read_text(encoding="utf-8")

    steps = [line.strip() for line in repro.splitlines() if "// step " in line]

    assert 1 == repro.count("#[tokio::test(start_paused = true)]")
    assert "async fn test_the_machine_crate_minimal() {" in repro
    assert [
        f"// step {step.index}: {minimal.kind.show_op(step.op)}"
        for step in minimal.steps
    ] == steps
    assert "# The same as a Rust test of the crate: repro.rs" in program
    assert artifact_repro(folder).startswith("# as a Rust test: ")
    assert artifact_repro(folder).endswith(f"{STAMP}/repro.rs")


def test_the_artifact_replays_cleanly_against_the_crate(folder: Path) -> None:
    """The same program on the unbroken crate agrees at every step."""
    assert EXIT_AGREE == replay_main([str(folder)])


def test_reproductions_are_read_from_the_failure_text() -> None:
    """The decorator, its Hypothesis version, the blob and a seed are parsed."""
    text = (
        "You can reproduce this failure by adding @seed(1234) to this test\n"
        "adding @reproduce_failure('6.170.17', b'AXic') as a decorator"
    )

    (found,) = reproductions(text)

    assert "@reproduce_failure('6.170.17', b'AXic')" == found.decorator
    assert "6.170.17" == found.hypothesis_version
    assert "AXic" == found.blob
    assert 1234 == found.seed


def test_program_lines_keep_the_statements_only() -> None:
    """The machine's own notes (steps, the configuration) are dropped."""
    notes = ["state = M()", "# step 1: Advance(now_ns=1) -> ok", "config: C()", "y"]

    assert ["state = M()"] == program_lines(notes)


def test_folder_names_are_file_system_safe() -> None:
    """Brackets, colons and slashes of a parametrized node id become dashes."""
    assert "test_canary-late_expiry" == folder_name_for(
        "tests/test_a.py::test_canary[late_expiry]"
    )


FAILING_MACHINE_TEST = '''
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


def test_a_failing_machine_test_under_pytest_leaves_an_artifact_and_a_line(
    tmp_path: Path,
) -> None:
    """The plugin writes the folder; the log ends with the replay line and repro.rs."""
    tests = tmp_path / "tests"
    tests.mkdir()
    tests.joinpath("test_forgetful.py").write_text(FAILING_MACHINE_TEST)
    artifacts = tmp_path / "artifacts"

    completed = run_module(
        "pytest",
        "-c",
        str(REPO / "pyproject.toml"),
        "--rootdir",
        str(REPO),
        "-p",
        "no:cacheprovider",
        "--hypothesis-profile=ci",
        str(tests),
        timeout_s=600,
        env={k: v for k, v in os.environ.items() if k != BUILD_TREE_ENV}
        | {ARTIFACTS_ENV: str(artifacts)},
    )
    latest = artifacts / "runTest" / LATEST
    replay_line, repro_line = completed.stdout.rstrip().splitlines()[-2:]

    assert 1 == completed.returncode
    assert latest.is_dir()
    minimal = latest.resolve() / "minimal.json"
    assert f"python -m ci.replay {minimal} --canary forgetful_release" == replay_line
    assert f"# as a Rust test: {latest.resolve() / 'repro.rs'}" == repro_line
    assert "ci" == json.loads((latest / "meta.json").read_text())["settings"]["name"]


def test_a_failure_outside_a_step_names_the_exception_as_the_check(
    caught: tuple[tuple[capture.FinalRun, ...], AssertionError], tmp_path: Path
) -> None:
    """Without a captured step (an invariant method failed), meta says what raised."""
    runs, error = caught
    uncaptured = dataclasses.replace(runs[0], failed=None)

    (written,) = write_artifacts([uncaptured], TEST, error, root=tmp_path, stamp=STAMP)
    meta = json.loads((written / "meta.json").read_text())

    assert "raised" == meta["failing_check"]["check"]
    assert (
        f"AssertionError: {str(error).splitlines()[0]}"
        == meta["failing_check"]["difference"]
    )


# old spelling: begin (the rename script leaves this region alone)
@pytest.mark.parametrize(
    ("meta", "against"),
    [
        (
            {"against": "crate (dynamo-kv-router 1.6.1)"},
            "crate (dynamo-kv-router 1.6.1)",
        ),
        ({"sut": "native (dynamo-kv-router 1.6.1)"}, "crate (dynamo-kv-router 1.6.1)"),
        ({"sut": "native"}, "crate"),
        ({"sut": "canary:late_expiry"}, "canary:late_expiry"),
        ({"sut": "model"}, "model"),
        ({}, ""),
    ],
)
def test_an_artifact_written_before_the_renames_names_what_it_ran_against(
    meta: dict[str, str], against: str
) -> None:
    """`meta.json`'s old key `sut` and old label `native` read as `against`, crate."""
    assert against == recorded_against(meta)


def test_an_old_artifacts_replay_line_names_its_canary(tmp_path: Path) -> None:
    """The line to paste for an artifact whose meta says `sut`: the canary kept."""
    (tmp_path / "meta.json").write_text(json.dumps({"sut": "canary:late_expiry"}))

    assert artifact_replay(tmp_path).endswith(" --canary late_expiry")


def test_the_old_environment_variable_is_refused_naming_the_new(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`VERIFY_SUT` is never read as a choice: the run stops and names the new name."""
    monkeypatch.setenv("VERIFY_SUT", "model")

    with pytest.raises(ValueError, match=r"^VERIFY_SUT is now VERIFY_AGAINST"):
        against_name()


# old spelling: end
