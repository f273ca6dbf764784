"""Build the binding against a local `dynamo-kv-router` source tree.

The committed `impl/Cargo.toml` and `impl/Cargo.lock` pin the crates.io release
and are never edited. Instead the binding's Rust sources are staged into a work
folder whose `Cargo.toml` names the local tree as a path dependency (a path
dependency rather than a `[patch]`, so a tree of any version is accepted; a
patch silently goes unused when the version does not match `=1.6.1`). Cargo
rewrites only the staged lockfile, so the build script reports
`CRATE_SOURCE == "path"`. `maturin build` compiles a wheel in the machine's
one cargo target folder (`ci/target_dir.py`), so only the local crate and the
binding compile, and the binding module is taken out of the wheel.

Where the module goes:

* by default into `impl/` of this checkout, where the editable install loads
  it (the file is replaced atomically, so running interpreters keep the old
  one), so every later `pytest` runs against the local tree;
* with `--into DIR`, into a copy of the checkout's Python tree at `DIR`, which
  leaves the editable install alone: run `cd DIR && python -m pytest ...`.

Commands::

    python -m ci.build_local --source PATH [--features manual-clock,...]
    DYNAMO_KV_ROUTER_PATH=PATH python -m ci.build_local
    python -m ci.build_local --source PATH --into /tmp/tree
    python -m ci.build_local --source PATH --cargo-profile release   # optimized
    python -m ci.build_local --pinned    # back to crates.io: pip install -e .

The work folder defaults to `~/.cache/dynamo-verify` (`DYNAMO_VERIFY_WORK`
overrides it); it is outside the repository so nothing there can be committed
or packaged. The target folder is `$CARGO_TARGET_DIR`, else `<work>/target`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ci.cli import OneLineParser, UsageError, output_folder
from ci.target_dir import (
    BINDING_PACKAGE,
    INSTALL_PROFILE,
    TARGET_ENV,
    binding_lock,
    default_work_dir,
    forget_binding,
    shared_target_dir,
)
from properties.citations import CRATE_NAME, downloaded_crate

REPO = Path(__file__).resolve().parent.parent
IMPL = REPO / "impl"
SOURCE_ENV = "DYNAMO_KV_ROUTER_PATH"
BINDING_FILE = "_native.abi3.so"
# Always on: maturin adds it from pyproject.toml for `pip install -e .`.
BASE_FEATURES = ("pyo3/extension-module",)
# Not part of a Python tree copy: VCS data, build outputs, caches, extensions.
TREE_IGNORED_NAMES = frozenset(
    {
        ".git",
        "target",
        "__pycache__",
        ".hypothesis",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "build",
        "dist",
        ".venv",
    }
)
TREE_IGNORED_PATHS = frozenset({"ci/artifacts"})
BUILD_TIMEOUT_S_DEFAULT = 1_800
CARGO_PROFILES = (INSTALL_PROFILE, "release")
"""Cargo profiles of impl/Cargo.toml a build may use. The first, the default, is
every build's on a machine (the install's, pyproject.toml's `[tool.maturin]
profile`, the sweep's, the smoke's and the Rust export's), so the dependencies
compile once: release semantics without the optimizer. `release` adds the
optimizer and a dependency set of its own: opt-in, for a figure that needs it."""
QUERY_TIMEOUT_S = 120


class BuildError(RuntimeError):
    """The binding could not be built or installed."""


def pinned_version() -> str:
    """The exact crate version impl/Cargo.toml pins (`=1.6.1` gives `1.6.1`)."""
    manifest = tomllib.loads((IMPL / "Cargo.toml").read_text(encoding="utf-8"))
    requirement = manifest["dependencies"][CRATE_NAME]["version"]
    if not requirement.startswith("="):
        raise BuildError(f"{CRATE_NAME} is not pinned exactly: {requirement!r}")
    return str(requirement.removeprefix("="))


def pinned_source() -> Path:
    """The pinned crate's source as cargo downloaded it from crates.io."""
    version = pinned_version()
    found = downloaded_crate(version)
    if found is None:
        # `--locked` keeps the committed lockfile untouched.
        _run(
            ["cargo", "fetch", "--locked", "--manifest-path", str(IMPL / "Cargo.toml")],
            cwd=IMPL,
        )
        found = downloaded_crate(version)
    if found is None:
        raise BuildError(f"cargo did not download {CRATE_NAME}-{version}")
    return found


def _run(command: list[str], cwd: Path) -> None:
    completed = subprocess.run(  # noqa: S603 - fixed tool invocations
        command, cwd=cwd, check=False, capture_output=True, text=True
    )
    if completed.returncode != 0:
        raise BuildError(f"{' '.join(command)} failed:\n{completed.stderr}")


def write_if_changed(path: Path, data: bytes) -> bool:
    """Write `data` unless `path` already holds it (keeps mtimes for cargo)."""
    if path.is_file() and path.read_bytes() == data:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def path_dependency_manifest(manifest: str, source: Path) -> str:
    """impl/Cargo.toml with the crates.io requirement replaced by `path = source`."""
    requirement = f'version = "={pinned_version()}"'
    lines = manifest.splitlines(keepends=True)
    hits = [
        index
        for index, line in enumerate(lines)
        if line.startswith(f"{CRATE_NAME} =") and requirement in line
    ]
    if len(hits) != 1:
        raise BuildError(f"expected one `{CRATE_NAME} = {{ {requirement} ...` line")
    (index,) = hits
    lines[index] = lines[index].replace(
        requirement, f"path = {json.dumps(str(source))}"
    )
    header = "# Generated by ci/build_local.py from impl/Cargo.toml; do not edit.\n"
    return header + "".join(lines)


@dataclass(frozen=True)
class LocalBuild:
    """One staged binding, the crate tree it builds against, and its target dir."""

    source: Path  # the dynamo-kv-router tree (the folder holding its Cargo.toml)
    binding_dir: Path  # staged copy of impl/'s Rust crate
    target_dir: Path  # CARGO_TARGET_DIR: the shared one (ci.target_dir)
    features: tuple[str, ...] = ()  # binding features, e.g. "manual-clock"
    impl_dir: Path = IMPL  # the binding's sources: impl/, or a snapshot's copy
    profile: str = CARGO_PROFILES[0]  # a cargo profile of impl/Cargo.toml

    @property
    def wheel_dir(self) -> Path:
        """Where maturin writes the wheel."""
        return self.binding_dir / "wheels"

    @property
    def binding(self) -> Path:
        """The built binding module, taken out of the wheel."""
        return self.binding_dir / "out" / BINDING_FILE


def stage_binding(build: LocalBuild) -> None:
    """Copy the binding's Rust crate into `build.binding_dir`, at `build.source`.

    The binding comes from `build.impl_dir`: impl/ itself, or the impl/ of a
    snapshot of the checkout (a sweep that outlives edits to impl/).

    Files are rewritten only when their content changes, and the lockfile only
    when impl/Cargo.lock changes, so an unchanged binding is not recompiled.
    """
    source = build.source.resolve()
    if not (source / "Cargo.toml").is_file():
        raise BuildError(f"{source} has no Cargo.toml")
    binding = build.binding_dir
    impl = build.impl_dir
    manifest = (impl / "Cargo.toml").read_text(encoding="utf-8")
    write_if_changed(
        binding / "Cargo.toml",
        path_dependency_manifest(manifest, source).encode("utf-8"),
    )
    for name in ("build.rs", "rust-toolchain.toml"):
        write_if_changed(binding / name, (impl / name).read_bytes())
    lock = (impl / "Cargo.lock").read_bytes()
    stamp = binding / ".impl-lock.sha256"
    digest = hashlib.sha256(lock).hexdigest().encode()
    if (
        not (binding / "Cargo.lock").is_file()
        or not stamp.is_file()
        or (stamp.read_bytes() != digest)
    ):
        # Cargo rewrites the staged copy for the path source; start from ours.
        (binding / "Cargo.lock").write_bytes(lock)
        stamp.write_bytes(digest)
    wanted = {path.relative_to(impl) for path in (impl / "src").rglob("*.rs")}
    for relative in sorted(wanted):
        write_if_changed(binding / relative, (impl / relative).read_bytes())
    for stale in sorted((binding / "src").rglob("*.rs")):
        if stale.relative_to(binding) not in wanted:
            stale.unlink()


AFFINITY_RS = Path("src/services/selection/affinity.rs")
POLICY_QUEUE_RS = Path("src/scheduling/policy_queue.rs")
REQUIRED_ITEMS: tuple[tuple[Path, str], ...] = (
    (AFFINITY_RS, "pub fn with_config("),
    (AFFINITY_RS, "pub fn try_acquire("),
    (AFFINITY_RS, "pub fn join_initializing("),
    (AFFINITY_RS, "pub fn apply_replica_update("),
    (AFFINITY_RS, "pub fn expire_for_test("),
    (POLICY_QUEUE_RS, "pub fn pop_next("),
)
"""Items the binding calls in every build; a tree without one cannot be gated."""
FEATURE_ITEMS: dict[str, tuple[tuple[Path, str], ...]] = {
    "manual-clock": (
        (AFFINITY_RS, "pub fn with_manual_clock("),
        (AFFINITY_RS, "pub fn advance_clock("),
        (AFFINITY_RS, "pub fn subagent_group_affinity_id("),
    ),
    "queue-recheck": (
        (POLICY_QUEUE_RS, "pub fn recheck_worker("),
        (POLICY_QUEUE_RS, "pub fn recheck_all_workers("),
    ),
}
"""Binding features, each turned on when the tree has every item it calls."""


def resolve_source(path: Path) -> Path:
    """The crate folder of `path`: a Dynamo checkout's root or `lib/kv-router`.

    Raises BuildError naming what is missing when `path` is neither.
    """
    path = path.expanduser().resolve()
    if not path.is_dir():
        raise BuildError(f"{path} is not a folder")
    for candidate in (path, path / "lib" / "kv-router"):
        manifest = candidate / "Cargo.toml"
        if manifest.is_file():
            package = _read_toml(manifest).get("package")
            if isinstance(package, dict) and package.get("name") == CRATE_NAME:
                _check_workspace(candidate, package)
                return candidate
    raise BuildError(
        f"{path} holds no {CRATE_NAME} crate (neither ./Cargo.toml nor "
        "./lib/kv-router/Cargo.toml names it)"
    )


def workspace_root(crate: Path) -> Path | None:
    """The nearest folder above `crate` whose Cargo.toml has a `[workspace]`."""
    for folder in crate.parents:
        manifest = folder / "Cargo.toml"
        if manifest.is_file() and "workspace" in _read_toml(manifest):
            return folder
    return None


def _read_toml(manifest: Path) -> dict[str, Any]:
    """A Cargo.toml's tables; BuildError naming the file when it is not TOML."""
    try:
        return tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise BuildError(f"{manifest} is not valid TOML: {error}") from None


def _check_workspace(crate: Path, package: dict[str, Any]) -> None:
    """Refuse, before any compile, a crate whose inherited fields have no root.

    In Dynamo's repository `lib/kv-router/Cargo.toml` takes its version,
    edition and dependencies from the workspace's root Cargo.toml
    (`version.workspace = true`); a copy of the folder alone cannot be built.
    """
    inherited = sorted(
        field
        for field, value in package.items()
        if isinstance(value, dict) and value.get("workspace") is True
    )
    if inherited and workspace_root(crate) is None:
        raise BuildError(
            f"{crate}/Cargo.toml takes `{inherited[0]}` and more from its "
            "workspace (`workspace = true`), and no folder above it holds the "
            "workspace's Cargo.toml: pass the Dynamo checkout's root (the folder "
            "with the root Cargo.toml) or its lib/kv-router inside it"
        )


def _has(source: Path, file: Path, item: str) -> bool:
    try:
        text = (source / file).read_text(encoding="utf-8")
    except OSError:
        return False
    except UnicodeDecodeError as error:  # rustc reads UTF-8 only: not a crate
        raise BuildError(f"{source / file} is not UTF-8 text: {error}") from None
    return item in " ".join(text.split())


def missing_items(source: Path) -> list[str]:
    """Items the binding always calls that `source` lacks, as `file: item`."""
    return [
        f"{file}: `{item.rstrip('(')}`"
        for file, item in REQUIRED_ITEMS
        if not _has(source, file, item)
    ]


def detect_features(source: Path) -> tuple[str, ...]:
    """Binding features `source` supports, from the public items it declares."""
    return tuple(
        feature
        for feature, items in sorted(FEATURE_ITEMS.items())
        if all(_has(source, file, item) for file, item in items)
    )


def seed_target_dir(target_dir: Path, profile: str) -> bool:
    """Give a target dir without a `profile` build impl/target/<profile> (mtimes kept).

    For a checkout installed without the shared folder (a plain `pip install
    -e .` builds into impl/target): cargo then reuses every registry dependency
    the install compiled and recompiles only pyo3's build-config chain, the
    local crate and the binding. Nothing to do when the install built into
    `target_dir` itself, or when impl/target holds no build in `profile`.
    """
    built = IMPL / "target" / profile
    seeded = target_dir / profile
    if seeded.exists() or not built.is_dir():
        return False
    partial = target_dir / f"{profile}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(built, partial, symlinks=True)
    partial.rename(seeded)
    return True


@dataclass(frozen=True)
class BuildResult:
    """What one `maturin build` did."""

    ok: bool
    seconds: float
    output: str  # maturin's and cargo's combined output
    compile_error: bool  # rustc rejected the crate or the binding


def build_extension(
    build: LocalBuild, timeout_s: float = BUILD_TIMEOUT_S_DEFAULT
) -> BuildResult:
    """Stage, compile with maturin, and unpack the binding to `build.binding`."""
    stage_binding(build)
    shutil.rmtree(build.wheel_dir, ignore_errors=True)
    features = ",".join((*BASE_FEATURES, *build.features))
    command = [
        sys.executable,
        "-m",
        "maturin",
        "build",
        "--profile",
        build.profile,
        "--manifest-path",
        str(build.binding_dir / "Cargo.toml"),
        "--target-dir",
        str(build.target_dir),
        "--features",
        features,
        "--interpreter",
        sys.executable,
        "--compatibility",
        "linux",
        "--out",
        str(build.wheel_dir),
    ]
    started = time.monotonic()
    with binding_lock(build.target_dir, build.profile):
        # The binding is one unit to cargo whichever tree it binds: start afresh.
        forget_binding(build.target_dir, build.profile)
        completed = _tool(command, build.binding_dir, timeout_s)
        if completed.returncode != 0 and is_link_failure(
            completed.stdout + completed.stderr
        ):
            # Release builds of the path crate are incremental (impl/Cargo.toml);
            # after many mutate/restore cycles rustc's incremental cache can emit
            # an rlib whose codegen units no longer link together. That is our
            # cache, not the mutant: clean the local crates and build once more.
            clean_local_crates(build)
            completed = _tool(command, build.binding_dir, timeout_s)
    seconds = time.monotonic() - started
    output = completed.stdout + completed.stderr
    if completed.returncode != 0:
        if is_link_failure(output):
            raise BuildError(f"the binding does not link, even from scratch:\n{output}")
        return BuildResult(
            ok=False,
            seconds=seconds,
            output=output,
            compile_error="could not compile" in output,
        )
    wheels = sorted(build.wheel_dir.glob("*.whl"))
    if len(wheels) != 1:
        raise BuildError(f"expected one wheel in {build.wheel_dir}, found {wheels}")
    with zipfile.ZipFile(wheels[0]) as wheel:
        members = [name for name in wheel.namelist() if name.endswith(".so")]
        if len(members) != 1:
            raise BuildError(f"expected one binding in {wheels[0]}, got {members}")
        replace_atomically(build.binding, wheel.read(members[0]))
    return BuildResult(ok=True, seconds=seconds, output=output, compile_error=False)


ARGUMENTS: Final[re.Pattern[str]] = re.compile(
    r"takes (\d+) arguments? but (\d+) arguments? (?:was|were) supplied"
)
NAMED: Final[re.Pattern[str]] = re.compile(r"`([^`]+)`")
KNOWN_SIGNATURES: Final[dict[str, tuple[Path, re.Pattern[str], str]]] = {
    "join_initializing": (
        AFFINITY_RS,
        re.compile(r"pub fn join_initializing\(\s*&self,\s*session_id: &str,?\s*\)"),
        (
            "tree has the pending-join signature (no target); the suite checks "
            "the reserved-join design only"
        ),
    ),
}
"""Signatures the suite knows other revisions to have and cannot check: the
item, the file and the tree's signature, and what the refusal says."""


class IncompatibleTreeError(BuildError):
    """The binding does not compile against the tree: one line per item."""

    def __init__(self, lines: list[str]) -> None:
        """Keep the lines; the message is all of them."""
        super().__init__("\n".join(lines))
        self.lines = lines


def _primary(message: dict[str, Any]) -> dict[str, Any] | None:
    spans = [span for span in message.get("spans", []) if span.get("is_primary")]
    return spans[0] if spans else None


def _highlighted(span: dict[str, Any]) -> str:
    """The source text rustc underlines in `span` (first line)."""
    text = span.get("text") or []
    if not text:
        return ""
    line = text[0]
    return str(line["text"][line["highlight_start"] - 1 : line["highlight_end"] - 1])


def _item(message: dict[str, Any], span: dict[str, Any]) -> str:
    """The crate item an error is about: a name in its message, else the code."""
    names = NAMED.findall(message["message"])
    if names:
        return str(
            names[-1] if message["message"].startswith("unresolved") else names[0]
        )
    return _highlighted(span).split("(")[0].split(".")[-1].strip() or "?"


def _expects(message: dict[str, Any]) -> str:
    """What the binding expects that the tree does not give, in words."""
    text = str(message["message"])
    found = ARGUMENTS.search(text)
    if found:
        return (
            f"the binding passes {found.group(2)} arguments, the tree's takes "
            f"{found.group(1)}"
        )
    code = (message.get("code") or {}).get("code")
    if code in {"E0432", "E0433", "E0412", "E0425", "E0422", "E0405", "E0599"}:
        return f"the binding expects it; the tree has none ({text})"
    return f"the binding expects another shape ({text})"


def diagnostics_lines(json_output: str, source: Path) -> list[str]:
    """One line per crate item the binding and the tree disagree on.

    Read from cargo's `--message-format=json` output: errors in the binding
    (`impl/src/FILE:LINE`) and, when the tree does not compile by itself (a
    file from another revision put over a crate), errors in the tree's crate.
    """
    by_item: dict[str, list[str]] = {}
    whats: dict[str, str] = {}
    for raw in json_output.splitlines():
        if not raw.startswith("{"):
            continue
        record = json.loads(raw)
        message = record.get("message") or {}
        if record.get("reason") != "compiler-message":
            continue
        if message.get("level") != "error":
            continue
        span = _primary(message)
        if span is None:
            continue
        item = _item(message, span)
        in_binding = BINDING_PACKAGE in str(record.get("package_id", ""))
        where = (
            f"impl/{span['file_name']}:{span['line_start']}"
            if in_binding
            else f"the tree's own {Path(span['file_name']).name}:{span['line_start']}"
        )
        if item not in by_item:
            whats[item] = (
                _expects(message)
                if in_binding
                else f"the tree does not compile by itself ({message['message']})"
            )
        by_item.setdefault(item, []).append(where)
    lines = []
    for item, wheres in by_item.items():
        line = f"{item}: {whats[item]} ({', '.join(dict.fromkeys(wheres))})"
        known = KNOWN_SIGNATURES.get(item)
        if known is not None and _matches(source, known[0], known[1]):
            line += f"; {known[2]}"
        lines.append(line)
    return lines


def _matches(source: Path, file: Path, signature: re.Pattern[str]) -> bool:
    try:
        text = (source / file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return signature.search(text) is not None


def refuse_incompatible(build: LocalBuild, result: BuildResult, log: Path) -> None:
    """Raise IncompatibleTreeError, one line per item, if rustc rejected the tree.

    Cargo's JSON diagnostics go beside `log` (`diagnostics.jsonl`); the last
    line names the full log. Returns when the failure names no item.
    """
    if not result.compile_error:
        return
    diagnostics = diagnose(build)
    log.with_name("diagnostics.jsonl").write_text(diagnostics, encoding="utf-8")
    lines = diagnostics_lines(diagnostics, build.source)
    if lines:
        lines[-1] += f"; full log: {log}"
        raise IncompatibleTreeError(lines)


def diagnose(build: LocalBuild, timeout_s: float = BUILD_TIMEOUT_S_DEFAULT) -> str:
    """Cargo's JSON diagnostics of the staged binding (after a failed build).

    The same cargo invocation as maturin's (profile, features, target folder,
    PyO3's environment), so everything that compiled is reused and only the
    failing unit runs again, now with `--message-format=json`.
    """
    features = ",".join((*BASE_FEATURES, *build.features))
    command = ["cargo", "rustc", "--profile", build.profile, "--features", features]
    command += ["--target-dir", str(build.target_dir), "--message-format", "json"]
    command += ["--manifest-path", str(build.binding_dir / "Cargo.toml"), "--lib"]
    environment = dict(os.environ)
    environment.pop("CARGO", None)
    environment |= {
        "PYO3_BUILD_EXTENSION_MODULE": "1",
        # As maturin sets it, so pyo3's build configuration is not redone.
        "PYO3_ENVIRONMENT_SIGNATURE": (
            f"cpython-{sys.version_info.major}.{sys.version_info.minor}-64bit"
        ),
        "PYO3_PYTHON": sys.executable,
        "PYTHON_SYS_EXECUTABLE": sys.executable,
    }
    with binding_lock(build.target_dir, build.profile):
        completed = _tool(
            command, build.binding_dir, timeout_s, "cargo's diagnostics", environment
        )
    return completed.stdout


LINK_FAILURE_MARKERS = ("linking with `cc` failed", "collect2: error: ld returned")


def is_link_failure(output: str) -> bool:
    """True when the build failed at the linker, not in rustc's checks."""
    return any(marker in output for marker in LINK_FAILURE_MARKERS)


def clean_local_crates(build: LocalBuild) -> None:
    """Drop the path crate's and the binding's artifacts and incremental caches."""
    shutil.rmtree(build.target_dir / build.profile / "incremental", ignore_errors=True)
    command = ["cargo", "clean", "--profile", build.profile]
    command += ["-p", CRATE_NAME, "-p", BINDING_PACKAGE]
    command += ["--target-dir", str(build.target_dir)]
    command += ["--manifest-path", str(build.binding_dir / "Cargo.toml")]
    subprocess.run(  # noqa: S603 - fixed tool invocation
        command, cwd=build.binding_dir, check=True, capture_output=True
    )


def _tool(
    command: list[str],
    cwd: Path,
    timeout_s: float,
    what: str = "maturin build",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a build tool; a `BuildError` naming `what` past `timeout_s`."""
    try:
        # cwd = the staged crate, so rustup reads its rust-toolchain.toml.
        return subprocess.run(  # noqa: S603 - fixed tool invocation
            command,
            cwd=cwd,
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as error:
        raise BuildError(f"{what} exceeded {timeout_s} s") from error


def replace_atomically(path: Path, data: bytes) -> None:
    """Write `data` to `path` by rename, so a process that mapped it keeps its copy."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as handle:
        handle.write(data)
    Path(handle.name).chmod(0o755)
    Path(handle.name).replace(path)


def _tree_ignore(root: Path) -> Callable[[str, list[str]], set[str]]:
    def ignore(directory: str, names: list[str]) -> set[str]:
        relative = Path(directory).relative_to(root)
        return {
            name
            for name in names
            if name in TREE_IGNORED_NAMES
            or name.endswith((".so", ".pyd", ".egg-info"))
            or (relative / name).as_posix() in TREE_IGNORED_PATHS
        }

    return ignore


def copy_python_tree(destination: Path) -> None:
    """Replace `destination` with a snapshot of this checkout, minus build outputs."""
    from ci.replay.artifacts import COPIED_FROM, git_state  # noqa: PLC0415 - pulls in pytest

    commit, dirty = git_state()
    shutil.rmtree(destination, ignore_errors=True)
    shutil.copytree(REPO, destination, ignore=_tree_ignore(REPO), symlinks=True)
    copied = {"git_commit": commit, "git_dirty": dirty, "copied_from": str(REPO)}
    (destination / COPIED_FROM).write_text(json.dumps(copied) + "\n", encoding="utf-8")


def install_binding(binding: Path, tree: Path) -> Path:
    """Put the built module where `import impl._native` finds it inside `tree`."""
    destination = tree / "impl" / BINDING_FILE
    replace_atomically(destination, binding.read_bytes())
    return destination


def tree_environment(tree: Path) -> dict[str, str]:
    """Environment that imports this project from `tree`, not from the checkout.

    `PYTHONPATH` precedes the editable install's `.pth` entry on `sys.path`.
    The choice of system under test and settings is left to the command line.
    """
    environment = dict(os.environ)
    environment.pop("VERIFY_AGAINST", None)
    environment.pop("HYPOTHESIS_PROFILE", None)
    previous = environment.get("PYTHONPATH")
    environment["PYTHONPATH"] = (
        str(tree) if not previous else os.pathsep.join((str(tree), previous))
    )
    return environment


def describe_binding(tree: Path | None = None) -> dict[str, str]:
    """Crate source and version, build profile and module path, read afresh."""
    script = (
        "import json, impl.adapter as a, impl._native as n;"
        "print(json.dumps({'source': a.CRATE_SOURCE, 'version': a.CRATE_VERSION,"
        " 'profile': a.BUILD_PROFILE, 'module': n.__file__}))"
    )
    completed = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", script],
        cwd=tree or REPO,
        env=tree_environment(tree) if tree else None,
        check=False,
        capture_output=True,
        text=True,
        timeout=QUERY_TIMEOUT_S,
    )
    if completed.returncode != 0:
        raise BuildError(f"cannot import the binding:\n{completed.stderr}")
    described: dict[str, str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return described


def reinstall_pinned() -> None:
    """Rebuild the editable install against crates.io (`pip install -e .`).

    With `$CARGO_TARGET_DIR` set, the install builds where the local trees'
    bindings did: it starts from its own cargo state (`forget_binding`).
    """
    command = [sys.executable, "-m", "pip", "install", "--quiet", "-e", str(REPO)]
    configured = os.environ.get(TARGET_ENV)
    if not configured:
        _run(command, REPO)  # into impl/target, where only the install builds
        return
    target_dir = Path(configured).expanduser().resolve()
    with binding_lock(target_dir, INSTALL_PROFILE):
        forget_binding(target_dir, INSTALL_PROFILE)
        _run(command, REPO)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = OneLineParser(
        prog="python -m ci.build_local",
        description="Build impl._native against a local dynamo-kv-router tree.",
    )
    parser.renamed("--profile", "--cargo-profile")  # old spelling, refused
    parser.add_argument(
        "--source",
        type=Path,
        default=None,
        help=f"the crate's folder (holding its Cargo.toml); default ${SOURCE_ENV}",
    )
    parser.add_argument(
        "--features",
        default="",
        help="comma-separated binding features, e.g. manual-clock,queue-recheck",
    )
    parser.add_argument(
        "--into",
        type=Path,
        default=None,
        help="install into a copy of the Python tree here instead of impl/",
    )
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument(
        "--cargo-profile",
        choices=CARGO_PROFILES,
        default=None,
        help=f"cargo profile of impl/Cargo.toml (default {CARGO_PROFILES[0]}, the "
        "install's; release adds the optimizer)",
    )
    parser.add_argument(
        "--pinned",
        action="store_true",
        help="go back to the pinned crates.io crate (pip install -e .)",
    )
    args = parser.parse_args(argv)
    if args.pinned:
        given = [
            flag
            for flag, value in (
                ("--source", args.source),
                ("--features", args.features),
                ("--into", args.into),
                ("--work-dir", args.work_dir),
                ("--cargo-profile", args.cargo_profile),
            )
            if value
        ]
        if given:
            raise UsageError(f"--pinned builds nothing: drop {', '.join(given)}")
        return args
    if args.source is None and os.environ.get(SOURCE_ENV):
        args.source = Path(os.environ[SOURCE_ENV])
    if args.work_dir is None:
        args.work_dir = default_work_dir()
    output_folder(args.work_dir, "--work-dir")
    if args.into is not None:
        output_folder(args.into, "--into")
    return args


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the process exit code."""
    try:
        return _main(argv)
    except IncompatibleTreeError as error:
        for line in error.lines:
            print(f"ci.build_local: error: {line}", file=sys.stderr)
        return 2
    except (UsageError, BuildError) as error:
        print(f"ci.build_local: error: {error}", file=sys.stderr)
        return 2


def _main(argv: list[str] | None) -> int:
    args = _parse_args(argv)
    if args.pinned:
        reinstall_pinned()
        print(json.dumps(describe_binding()))
        return 0
    if args.source is None:
        raise UsageError(f"give --source PATH or set {SOURCE_ENV}")
    source = resolve_source(Path(args.source))
    features = tuple(name for name in args.features.split(",") if name)
    work = args.work_dir / "build-local"
    build = LocalBuild(
        source=source,
        binding_dir=work / "binding",
        target_dir=shared_target_dir(args.work_dir),
        features=features,
        profile=args.cargo_profile or CARGO_PROFILES[0],
    )
    if seed_target_dir(build.target_dir, build.profile):
        print(f"seeded {build.target_dir} from impl/target/{build.profile}")
    result = build_extension(build)
    if not result.ok:
        log = work / "build.log"
        log.write_text(result.output, encoding="utf-8")
        refuse_incompatible(build, result, log)
        print(result.output, file=sys.stderr)
        return 1
    print(f"built against {build.source} in {result.seconds:.0f} s")
    if args.into is not None:
        tree = args.into.resolve()
        copy_python_tree(tree)
        install_binding(build.binding, tree)
        print(json.dumps(describe_binding(tree)))
        print(f"run the suite there: cd {tree} && python -m pytest")
    else:
        install_binding(build.binding, REPO)
        print(json.dumps(describe_binding()))
        print("back to the pinned crate: python -m ci.build_local --pinned")
    return 0


if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.build_local", main)
