"""A scratch cargo project that compiles exported tests against a crate.

The proof that an export is faithful is that cargo runs it: every exported
file becomes one module of a single test binary (`tests/exports/main.rs`,
with `#![deny(warnings)]`) in a project outside the tracked tree,

    <work>/rust-export/<project>/   Cargo.toml, Cargo.lock, tests/exports/*.rs

where `<work>` is `~/.cache/dynamo-verify` (or `DYNAMO_VERIFY_WORK`). The
project depends on `dynamo-kv-router` with the version and features of
`impl/Cargo.toml` (or on a local copy of the crate, for a mutant), and its
lock file starts as a copy of `impl/Cargo.lock`, so the crate's dependencies
resolve to the versions the binding was built with.

It builds in the machine's one target folder (`ci/target_dir.py`) with the
binding's `mutants` cargo profile, copied from impl/Cargo.toml: the same resolved
features and the same profile as the install's, the sweep's and the smoke's
binding builds, so the crate's dependencies are compiled once for all of them (release
semantics without the optimizer: the crate runs as it does in the binding,
without debug assertions, and compiles in seconds). Files are rewritten only
when their content changes: a warm run compiles only the test binary.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import time
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ci.replay.rust.emit import CRATE, TOKIO_FEATURES
from ci.target_dir import default_work_dir, shared_target_dir

IMPL: Final[Path] = Path(__file__).resolve().parents[3] / "impl"
WORK_FOLDER: Final[str] = "rust-export"
TOKIO_UTIL_VERSION: Final[str] = "=0.7.20"
"""`CancellationToken` for scheduler exports: the version impl/Cargo.toml pins."""
TEST_TARGET: Final[str] = "exports"
PROFILE: Final[str] = "mutants"
"""The cargo profile of every export build: the binding's, see the docstring."""
PROFILE_CHAIN: Final[tuple[str, ...]] = ("release", PROFILE)
"""impl/Cargo.toml's profile tables the scratch manifest repeats (`mutants`
inherits `release`), so its profile is the binding's to the letter."""
CARGO_TIMEOUT_S: Final[int] = 60 * 60
"""A cold build compiles the crate and its dependencies: minutes on two cores."""
_RESULT = re.compile(
    r"test result: \w+\. (?P<passed>\d+) passed; (?P<failed>\d+) failed"
)


@dataclass(frozen=True)
class CargoRun:
    """What `cargo test` did with a project."""

    build_ok: bool
    build_seconds: float
    test_seconds: float
    passed: int
    failed: int
    output: str  # the build's and the tests' output, stdout and stderr

    @property
    def ok(self) -> bool:
        """Built, and every test passed."""
        return self.build_ok and self.failed == 0 and self.passed > 0


def work_root() -> Path:
    """`<work>/rust-export`: the projects and their shared target dir."""
    return default_work_dir() / WORK_FOLDER


def crate_dependency(crate: Path | None) -> str:
    """The `dynamo-kv-router` dependency line: impl's, or a local copy's path."""
    manifest = tomllib.loads((IMPL / "Cargo.toml").read_text(encoding="utf-8"))
    pinned = manifest["dependencies"][CRATE]
    features = ", ".join(f'"{feature}"' for feature in pinned["features"])
    source = (
        f'version = "{pinned["version"]}"' if crate is None else f'path = "{crate}"'
    )
    return f"{CRATE} = {{ {source}, features = [{features}] }}"


def _toml_value(value: object) -> str:
    """A profile setting as TOML: a bool, an integer or a string."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | str):
        return json.dumps(value)
    raise ValueError(f"impl/Cargo.toml: unexpected profile setting {value!r}")


def profile_tables() -> str:
    """impl/Cargo.toml's `[profile.release]` and `[profile.mutants]`, as TOML."""
    manifest = tomllib.loads((IMPL / "Cargo.toml").read_text(encoding="utf-8"))
    tables = []
    for name in PROFILE_CHAIN:
        settings = manifest["profile"][name]
        lines = [f"[profile.{name}]"]
        lines += [f"{key} = {_toml_value(settings[key])}" for key in sorted(settings)]
        tables.append("\n".join(lines) + "\n")
    return "\n".join(tables)


def manifest(name: str, crate: Path | None) -> str:
    """`Cargo.toml` of a scratch project."""
    tokio = ", ".join(f'"{feature}"' for feature in TOKIO_FEATURES)
    return (
        "# Written by ci/replay/rust/cargo.py: exported traces, compiled as tests.\n"
        "[package]\n"
        f'name = "{name}"\n'
        'version = "0.0.0"\n'
        'edition = "2024"\n'
        "publish = false\n\n"
        "[dev-dependencies]\n"
        f"{crate_dependency(crate)}\n"
        f'tokio = {{ version = "1", features = [{tokio}] }}\n'
        f'tokio-util = "{TOKIO_UTIL_VERSION}"\n\n'
        f"{profile_tables()}"
    )


def write_if_changed(path: Path, text: str) -> None:
    """Write `text` unless the file already holds it (cargo's fingerprints stay)."""
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_project(root: Path, exports: Mapping[str, str], crate: Path | None) -> None:
    """The project at `root` with one test module per export (name -> source)."""
    write_if_changed(root / "Cargo.toml", manifest(f"exports-{root.name}", crate))
    lock = root / "Cargo.lock"
    if not lock.is_file():
        shutil.copyfile(IMPL / "Cargo.lock", lock)
    write_if_changed(
        root / "rust-toolchain.toml",
        (IMPL / "rust-toolchain.toml").read_text(encoding="utf-8"),
    )
    write_if_changed(root / "src" / "lib.rs", "")
    modules = root / "tests" / TEST_TARGET
    modules.mkdir(parents=True, exist_ok=True)
    for stale in sorted(modules.glob("*.rs")):
        if stale.stem not in exports and stale.name != "main.rs":
            stale.unlink()
    for name, source in sorted(exports.items()):
        write_if_changed(modules / f"{name}.rs", source)
    binary = ["//! Every exported trace, one module each.", "#![deny(warnings)]", ""]
    binary += [f"mod {name};" for name in sorted(exports)]
    write_if_changed(modules / "main.rs", "\n".join(binary) + "\n")


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One writer and build per project at a time (other runs wait)."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _cargo(
    root: Path, *arguments: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    environment = dict(os.environ)
    environment["CARGO_TARGET_DIR"] = str(shared_target_dir())
    environment.pop("RUSTFLAGS", None)  # the fingerprints must not depend on the caller
    started = time.monotonic()
    completed = subprocess.run(  # noqa: S603 - cargo with our own arguments
        ["cargo", *arguments],  # noqa: S607 - cargo from PATH, pinned by the toolchain file
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=CARGO_TIMEOUT_S,
        env=environment,
    )
    return completed, time.monotonic() - started


def run_exports(
    project: str, exports: Mapping[str, str], crate: Path | None = None
) -> CargoRun:
    """Write the project `project`, build its test binary, run every test."""
    root = work_root() / project
    with _locked(root):
        write_project(root, exports, crate)
        built, build_seconds = _cargo(
            root, "test", "--profile", PROFILE, "--test", TEST_TARGET, "--no-run"
        )
        if built.returncode != 0:
            return CargoRun(
                build_ok=False,
                build_seconds=build_seconds,
                test_seconds=0.0,
                passed=0,
                failed=0,
                output=built.stdout + built.stderr,
            )
        ran, test_seconds = _cargo(
            root, "test", "--profile", PROFILE, "--test", TEST_TARGET
        )
    output = built.stderr + ran.stdout + ran.stderr
    result = _RESULT.search(ran.stdout)
    passed, failed = (
        (0, 0)
        if result is None
        else (
            int(result.group("passed")),
            int(result.group("failed")),
        )
    )
    return CargoRun(
        build_ok=True,
        build_seconds=build_seconds,
        test_seconds=test_seconds,
        passed=passed,
        failed=failed,
        output=output,
    )
