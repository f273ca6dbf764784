"""The machine's one cargo target folder, shared by every build of the crate.

Every Rust build of the project compiles `dynamo-kv-router` 1.6.1 and the same
dependencies (tokio, axum, zeromq's C++ sources, ...): the binding that
`pip install -e .` builds, the binding against a local tree (`ci.build_local`,
`ci.gate --source`), the mutation sweep's and the smoke mutant's bindings, and
the Rust export's scratch projects (`ci/replay/rust/cargo.py`). They all use
one `CARGO_TARGET_DIR` and one cargo profile (impl/Cargo.toml's `mutants`:
`ci.build_local.PROFILES[0]`), so each dependency compiles once per machine,
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
  together (`ci/build_local.py`).

`python -m ci.target_dir` prints the folder (for `.ci/run`, before anything
is installed: this module needs only the standard library).
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from ci.cli import OneLineParser, UsageError

WORK_ENV: Final[str] = "DYNAMO_VERIFY_WORK"
TARGET_ENV: Final[str] = "CARGO_TARGET_DIR"
TARGET_FOLDER: Final[str] = "target"
PROG: Final[str] = "ci.target_dir"


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


def main(argv: list[str] | None = None) -> int:
    """Print the shared target folder; returns the exit code."""
    parser = OneLineParser(
        prog=f"python -m {PROG}",
        description="Print the cargo target folder every build of the crate uses.",
    )
    try:
        parser.parse_args(argv)
    except UsageError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    print(shared_target_dir())
    return 0


if __name__ == "__main__":
    sys.exit(main())
