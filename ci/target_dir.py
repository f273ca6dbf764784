"""The machine's one cargo target folder, shared by every build of the crate.

Every Rust build of the project -- the installed binding, `ci.build_local` and
`ci.gate --source`, the mutation sweep's bindings, the Rust export's scratch
projects -- uses one `CARGO_TARGET_DIR` and one cargo profile (impl/Cargo.toml's
`mutants`), so each dependency compiles once per machine. The folder is
`$CARGO_TARGET_DIR` when set, else `<work>/target` with `<work>` =
`~/.cache/dynamo-verify` (or `DYNAMO_VERIFY_WORK`).

Sharing is safe because cargo locks a profile's folder for a whole build, and
a crate given as a path has its own hash in every artifact name; the two
exceptions are handled here: the final library cargo copies to
`<target>/<profile>/` (`binding_lock` keeps a build and its copy together) and
the binding's build-script state, which every binding shares as one path
package (`forget_binding` drops it before each build, as `.ci/run` does with
`python -m ci.target_dir --forget-binding`).

`python -m ci.target_dir` prints the folder; this module needs only the
standard library, so it runs before anything is installed.
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

    Every binding (the install's impl/, each staged copy) is one unit to
    cargo, sharing one build-script run whose `DYNAMO_KV_ROUTER_SOURCE` and
    `_VERSION` would be those of whichever binding ran it last. This removes
    its fingerprints, its build script's build and output, and the unhashed
    library; the dependencies, the crate and rustc's incremental
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
