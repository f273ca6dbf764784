"""The machine's one cargo target folder, shared by every build of the crate.

Every Rust build of the project compiles `dynamo-kv-router` 1.6.1 and the same
dependencies (tokio, axum, zeromq's C++ sources, ...): the binding that
`pip install -e .` builds, the binding against a local tree (`ci.build_local`,
`ci.gate --source`), the mutation sweep's and the smoke mutant's bindings, and
the Rust export's scratch projects (`ci/replay/rust/cargo.py`). They all use
one `CARGO_TARGET_DIR` and one cargo profile (impl/Cargo.toml's `mutants`:
`ci.build_local.CARGO_PROFILES[0]`), so each dependency compiles once per machine,
and a second clone compiles only the binding's own sources (a path package:
its artifacts are named after the clone's path) and, for another interpreter,
pyo3's build configuration:

* `$CARGO_TARGET_DIR` when it is set (`.ci/run` sets it to the folder below, so
  the install's build lands there too);
* otherwise `<work>/target`, where `<work>` is `~/.cache/dynamo-verify` (or
  `DYNAMO_VERIFY_WORK`), the per-machine folder of the project's caches.

Why sharing is safe:

* cargo locks a profile's build folder (`<target>/<profile>/.cargo-lock`) for
  the whole of a build, so concurrent builds (pytest-xdist workers, parallel
  gates) wait for each other instead of writing the same files;
* a crate tree given as a path (a local tree, a mutant's copy) is a different
  package from the crates.io release, with its own hash in every artifact name,
  so a mutant's build never stands in for the pinned crate;
* the only files without a hash are the final libraries cargo copies to
  `<target>/<profile>/`: two bindings built in one profile write the same
  `lib_native.so`. `binding_lock` keeps a build and the copy of its library
  together (`ci/build_local.py`);
* every binding (the install's impl/, each staged copy) is one unit to cargo,
  which names a path package relative to its workspace: they share one build
  script run, whose `DYNAMO_KV_ROUTER_SOURCE` and `_VERSION` would belong to
  whichever binding ran it last (a local tree's build then reports
  `registry`). `forget_binding` drops that state before each build, so every
  binding compiles its own (seconds without the optimizer); `.ci/run` calls it
  before the install (`python -m ci.target_dir --forget-binding`).

`python -m ci.target_dir` prints the folder (for `.ci/run`, before anything
is installed: this module needs only the standard library).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from ci.cli import OneLineParser, UsageError

WORK_ENV: Final[str] = "DYNAMO_VERIFY_WORK"
TARGET_ENV: Final[str] = "CARGO_TARGET_DIR"
TARGET_FOLDER: Final[str] = "target"
PROG: Final[str] = "ci.target_dir"
INSTALL_PROFILE: Final[str] = "mutants"
"""impl/Cargo.toml's profile of every build of the crate: pyproject.toml's
`[tool.maturin] profile`, and the default of the other builds."""
BINDING_PACKAGE: Final[str] = tomllib.loads(
    (Path(__file__).resolve().parent.parent / "impl" / "Cargo.toml").read_text(
        encoding="utf-8"
    )
)["package"]["name"]
"""The binding's cargo package, as impl/Cargo.toml names it (its build outputs
under the target folder carry the name)."""
BINDING_LIBRARY: Final[str] = "lib_native.so"


def default_work_dir() -> Path:
    """Where staged crates, target dirs and Python tree copies live."""
    configured = os.environ.get(WORK_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "dynamo-verify"


def shared_target_dir(work_dir: Path | None = None) -> Path:
    """The one cargo target folder: `$CARGO_TARGET_DIR`, else `<work>/target`.

    `work_dir` is a command's own work folder (`--work-dir`), when it has one.
    """
    configured = os.environ.get(TARGET_ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    return (work_dir or default_work_dir()) / TARGET_FOLDER


@contextmanager
def binding_lock(target_dir: Path, profile: str) -> Iterator[None]:
    """Hold while building a binding in `profile` and copying its library out.

    Cargo's own lock ends with cargo; the unhashed `lib_native.so` it leaves in
    `<target>/<profile>/` stays ours until maturin has put it in the wheel.
    """
    target_dir.mkdir(parents=True, exist_ok=True)
    with (target_dir / f".binding-{profile}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def forget_binding(target_dir: Path, profile: str) -> None:
    """Drop the binding's cargo state in `profile`: the next build is its own.

    Removes its fingerprints, its build script's build and output, and the
    unhashed library; the dependencies, the crate and rustc's incremental
    cache stay. Call it holding `binding_lock(target_dir, profile)`.
    """
    folder = target_dir / profile
    for kind in (".fingerprint", "build"):
        for state in sorted((folder / kind).glob(f"{BINDING_PACKAGE}-*")):
            shutil.rmtree(state)
    for library in (folder / "deps" / BINDING_LIBRARY, folder / BINDING_LIBRARY):
        library.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    """Print the shared target folder; returns the exit code."""
    parser = OneLineParser(
        prog=f"python -m {PROG}",
        description="Print the cargo target folder every build of the crate uses.",
    )
    parser.add_argument(
        "--forget-binding",
        action="store_true",
        help=f"first drop the binding's cargo state in the {INSTALL_PROFILE} "
        "profile, so the next install builds its own (.ci/run, before it)",
    )
    try:
        args = parser.parse_args(argv)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    target_dir = shared_target_dir()
    if args.forget_binding:
        with binding_lock(target_dir, INSTALL_PROFILE):
            forget_binding(target_dir, INSTALL_PROFILE)
    print(target_dir)
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.target_dir", main)
