"""One cargo target folder and profile per machine, and the order of a run's tests.

`ci/target_dir.py` names the folder every build of the crate uses; `.ci/run`
points the install at it; every build (the install, local trees, mutants, the
Rust export) uses one cargo profile, so the dependencies compile once.
`ci/order.py` puts the machines first.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest
from command_support import REPO, run_module

from ci import build_local, order
from ci.mutants.plan import CARGO_PROFILES, pinned_toolchain
from ci.replay.rust import cargo
from ci.target_dir import (
    INSTALL_PROFILE,
    TARGET_ENV,
    WORK_ENV,
    binding_lock,
    forget_binding,
    shared_target_dir,
)
from impl import adapter

COMMAND_TIMEOUT_S = 60


def test_cargo_target_dir_names_the_shared_folder_when_it_is_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A `CARGO_TARGET_DIR` the caller set is the one folder, work folder or not."""
    monkeypatch.setenv(TARGET_ENV, str(tmp_path / "chosen"))
    monkeypatch.setenv(WORK_ENV, str(tmp_path / "work"))

    found = shared_target_dir(tmp_path / "other-work")

    assert tmp_path / "chosen" == found


def test_without_cargo_target_dir_the_folder_is_target_under_the_work_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`<work>/target`, where `<work>` is `DYNAMO_VERIFY_WORK` or a command's own."""
    monkeypatch.delenv(TARGET_ENV, raising=False)
    monkeypatch.setenv(WORK_ENV, str(tmp_path / "work"))

    default = shared_target_dir()
    given = shared_target_dir(tmp_path / "given")

    assert tmp_path / "work" / "target" == default
    assert tmp_path / "given" / "target" == given


def test_the_command_prints_the_folder_and_refuses_arguments_in_one_line(
    tmp_path: Path,
) -> None:
    """`python -m ci.target_dir` prints the folder; an argument is exit 2, one line."""
    env = os.environ | {TARGET_ENV: str(tmp_path / "chosen")}

    printed = run_module("ci.target_dir", env=env, timeout_s=COMMAND_TIMEOUT_S)
    refused = run_module("ci.target_dir", "x", env=env, timeout_s=COMMAND_TIMEOUT_S)

    assert 0 == printed.returncode, printed.stderr
    assert f"{tmp_path / 'chosen'}\n" == printed.stdout
    assert 2 == refused.returncode
    assert refused.stderr.startswith("ci.target_dir: error: ")
    assert 1 == len(refused.stderr.splitlines())


def test_ci_run_points_cargo_at_the_shared_folder_before_it_installs() -> None:
    """`.ci/run` exports the folder the module prints, then runs the install."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assignment = lines.index(
        'CARGO_TARGET_DIR="$(python3 -m ci.target_dir --forget-binding)" || exit 1'
    )
    exported = lines.index("export CARGO_TARGET_DIR")
    installs = [i for i, line in enumerate(lines) if "pip install" in line]

    assert 2 == len(installs)
    assert assignment < exported < installs[0]


def test_ci_run_installs_the_build_requirements_then_builds_in_place() -> None:
    """The [build-system] requirements first, then the install without isolation."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    requirements, editable = [line for line in lines if "pip install" in line]

    assert '["build-system"]["requires"]' in "\n".join(lines)
    assert requirements.endswith("$build_requires || exit 1")
    assert "--no-build-isolation" in editable.split()
    assert '".[lint]"' in editable.split()


def test_ci_run_installs_with_the_pinned_toolchain() -> None:
    """`.ci/run` exports impl/rust-toolchain.toml's channel before the install."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    (assignment,) = [i for i, line in enumerate(lines) if "RUSTUP_TOOLCHAIN=" in line]
    exported = lines.index("export RUSTUP_TOOLCHAIN")
    installs = [i for i, line in enumerate(lines) if "pip install" in line]
    script = lines[assignment].split("python3 -c '")[1].split("')\"")[0]

    completed = subprocess.run(  # noqa: S603 - this interpreter, .ci/run's snippet
        [sys.executable, "-c", script],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=COMMAND_TIMEOUT_S,
    )

    assert assignment < exported < installs[0]
    assert f"{pinned_toolchain()}\n" == completed.stdout, completed.stderr


def _target_with_a_built_binding(target: Path) -> dict[str, Path]:
    """A profile folder as cargo leaves it: the binding's state beside a crate's."""
    folder = target / INSTALL_PROFILE
    paths = {
        "binding fingerprint": folder / ".fingerprint" / "dynamo-verify-native-1a",
        "binding build script": folder / "build" / "dynamo-verify-native-2b",
        "binding library": folder / "deps" / "lib_native.so",
        "uplifted library": folder / "lib_native.so",
        "crate fingerprint": folder / ".fingerprint" / "dynamo-kv-router-3c",
        "crate build script": folder / "build" / "zmq-sys-4d",
        "crate library": folder / "deps" / "libdynamo_kv_router-3c.rlib",
        "incremental cache": folder / "incremental" / "_native-5e",
    }
    for name, path in paths.items():
        if "library" in name:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
        else:
            (path / "output").parent.mkdir(parents=True, exist_ok=True)
            (path / "output").write_text("cargo:rustc-env=X=1\n", encoding="utf-8")
    return paths


def test_forgetting_the_binding_drops_its_state_and_keeps_everything_else(
    tmp_path: Path,
) -> None:
    """Fingerprints, build script and unhashed library go; crates and caches stay."""
    paths = _target_with_a_built_binding(tmp_path)

    forget_binding(tmp_path, INSTALL_PROFILE)

    gone = sorted(name for name, path in paths.items() if not path.exists())
    assert [
        "binding build script",
        "binding fingerprint",
        "binding library",
        "uplifted library",
    ] == gone


def test_the_command_forgets_the_installs_binding_when_asked(tmp_path: Path) -> None:
    """`--forget-binding` drops the state in the install's profile, then prints."""
    paths = _target_with_a_built_binding(tmp_path / "chosen")
    env = os.environ | {TARGET_ENV: str(tmp_path / "chosen")}

    kept = run_module("ci.target_dir", env=env, timeout_s=COMMAND_TIMEOUT_S)
    kept_library = paths["binding library"].exists()
    forgot = run_module(
        "ci.target_dir", "--forget-binding", env=env, timeout_s=COMMAND_TIMEOUT_S
    )

    assert True is kept_library, kept.stderr
    assert 0 == forgot.returncode, forgot.stderr
    assert f"{tmp_path / 'chosen'}\n" == forgot.stdout
    assert False is paths["binding library"].exists()
    assert True is paths["crate library"].exists()


def test_going_back_to_the_pinned_crate_installs_from_a_forgotten_binding(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`ci.build_local --pinned` drops the binding's state, then runs pip."""
    paths = _target_with_a_built_binding(tmp_path)
    monkeypatch.setenv(TARGET_ENV, str(tmp_path))
    seen: list[tuple[list[str], bool]] = []

    def run(command: list[str], cwd: Path) -> None:
        seen.append((command[-3:], paths["binding build script"].exists()))
        assert REPO == cwd

    monkeypatch.setattr(build_local, "_run", run)
    build_local.reinstall_pinned()

    assert [(["--quiet", "-e", str(REPO)], False)] == seen
    assert True is paths["crate library"].exists()


def test_a_binding_build_holds_its_profile_lock_and_not_the_others(
    tmp_path: Path,
) -> None:
    """While one binding builds in a profile, another in that profile waits."""
    with (
        binding_lock(tmp_path, "mutants"),
        (tmp_path / ".binding-mutants.lock").open("w") as same,
        (tmp_path / ".binding-release.lock").open("w") as other,
    ):
        with pytest.raises(BlockingIOError):
            fcntl.flock(same, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_the_export_project_repeats_the_bindings_profiles_to_the_letter() -> None:
    """The scratch manifest's release and mutants profiles are impl/Cargo.toml's."""
    binding = tomllib.loads((REPO / "impl" / "Cargo.toml").read_text("utf-8"))
    scratch = tomllib.loads(cargo.manifest("exports-x", None))

    assert cargo.PROFILE in binding["profile"]
    assert {name: binding["profile"][name] for name in cargo.PROFILE_CHAIN} == (
        scratch["profile"]
    )


def _install_profile() -> str:
    """The cargo profile `pip install -e .` builds in: `[tool.maturin] profile`."""
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))
    return str(pyproject["tool"]["maturin"]["profile"])


def test_every_build_of_the_crate_defaults_to_the_installs_profile(
    tmp_path: Path,
) -> None:
    """Install, local trees, gates, mutants and the export share one dependency set."""
    installed = _install_profile()
    local = build_local.LocalBuild(
        source=tmp_path, binding_dir=tmp_path / "binding", target_dir=tmp_path
    )

    assert "mutants" == installed
    assert installed == INSTALL_PROFILE
    assert installed == build_local.CARGO_PROFILES[0]
    assert installed == local.profile
    assert installed == CARGO_PROFILES[0]
    assert installed == cargo.PROFILE


def test_the_install_profile_is_release_semantics_without_the_optimizer() -> None:
    """No debug assertions, wrapping arithmetic, unwinding panics, opt-level 0."""
    manifest = tomllib.loads((REPO / "impl" / "Cargo.toml").read_text("utf-8"))
    profile = manifest["profile"][_install_profile()]

    assert "release" == profile["inherits"]
    assert "unwind" == manifest["profile"]["release"]["panic"]
    assert False is profile["debug-assertions"]
    assert False is profile["overflow-checks"]
    assert 0 == profile["opt-level"]


@pytest.mark.crate
@pytest.mark.pinned
def test_the_installed_binding_is_built_in_the_profile_the_readme_names() -> None:
    """The binding reports pyproject's profile, unoptimized, without assertions."""
    installed = _install_profile()
    readme = " ".join((REPO / "README.md").read_text("utf-8").split())

    assert installed == adapter.BUILD_PROFILE
    assert "0" == adapter.OPT_LEVEL
    assert False is adapter.DEBUG_ASSERTIONS
    assert (
        f"builds the binding in impl/Cargo.toml's `{installed}` cargo profile" in readme
    )


class _Item:
    """What the order reads of a collected test: its id and its markers."""

    def __init__(self, nodeid: str, *markers: str) -> None:
        self.nodeid = nodeid
        self.markers = markers

    def get_closest_marker(self, name: str) -> str | None:
        return name if name in self.markers else None


def test_slow_tests_then_machines_then_the_rest_each_in_collection_order() -> None:
    """Slow first, stateful/ next, the rest last; the order within each stays."""
    found = [
        _Item("tests/test_gate.py::test_a"),
        _Item("stateful/test_queue_machine.py::test_b"),
        _Item("tests/test_mutants_smoke.py::test_c", "slow"),
        _Item("tests/test_artifacts.py::test_d"),
        _Item("stateful/test_affinity_machine.py::test_e"),
        _Item("stateful/test_queue_machine.py::test_f", "slow"),
    ]
    items = [cast("pytest.Item", item) for item in found]

    order.pytest_collection_modifyitems(items)

    assert ["c", "f", "b", "e", "a", "d"] == [item.nodeid[-1] for item in items]


@pytest.mark.parametrize(("given", "expected"), [(None, 1), (5, 5)])
def test_xdist_hands_out_one_test_at_a_time_unless_told_otherwise(
    given: int | None, expected: int
) -> None:
    """`--maxschedchunk` becomes 1 when the command line leaves it unset."""
    config = SimpleNamespace(option=SimpleNamespace(maxschedchunk=given))

    order.pytest_configure(cast("pytest.Config", config))

    assert expected == config.option.maxschedchunk


def test_this_run_collected_the_machines_first(request: pytest.FixtureRequest) -> None:
    """In the running session the ranks never decrease along the order."""
    ranks = [order.rank(item) for item in request.session.items]

    assert sorted(ranks) == ranks
