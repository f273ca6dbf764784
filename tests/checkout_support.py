"""Crate trees the gate is tried on, laid out at run time outside the repository.

Nothing here is committed upstream code: every tree is made from the packages
cargo downloaded for the pinned build (`~/.cargo/registry/src/...`), in a
temporary folder of the test, and an edit is a few lines the test states.

**A Dynamo checkout** (`lay_out_checkout`). Dynamo's repository is one cargo
workspace: `lib/kv-router/Cargo.toml` inherits its version, edition, authors,
licence and repository and most of its dependencies (`workspace = true`) from
the root `Cargo.toml`, whose `[workspace.dependencies]` name the sibling
crates `dynamo-tokens`, `dynamo-kv-hashing` and `dynamo-truthy` by path
(`lib/tokens`, `lib/kv-hashing`, `lib/truthy`). A published package keeps the
manifest as the repository has it as `Cargo.toml.orig`, beside cargo's
normalised `Cargo.toml` (every inherited field written out). The checkout is
those four packages under `lib/<dir>/` with their `Cargo.toml.orig` as
`Cargo.toml`, and a root `Cargo.toml` whose `[workspace.package]` and
`[workspace.dependencies]` are read back from the normalised manifests: for
each dependency a member inherits, the version, `default-features` and
features its normal (else dev) dependency entry has (the union over members).

**Copies of the pinned crate with one upstream-style change**: the re-exports
1.6.1 marks "TODO(v1.7): Remove" deleted (`delete_v17_reexports`), an enum
variant added (`add_enum_variant`), one signature edited (`edit_source`).
"""

from __future__ import annotations

import json
import re
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ci import build_local
from properties.citations import cargo_home


@dataclass(frozen=True)
class Member:
    """One crate of the checkout: its package name and folder under `lib/`."""

    package: str
    folder: str


MEMBERS: Final[tuple[Member, ...]] = (
    Member("dynamo-kv-hashing", "kv-hashing"),
    Member("dynamo-kv-router", "kv-router"),
    Member("dynamo-tokens", "tokens"),
    Member("dynamo-truthy", "truthy"),
)
"""The router crate and the siblings it names by path, as Dynamo's `lib/` has them."""
INHERITED_PACKAGE_FIELDS: Final[tuple[str, ...]] = (
    "version",
    "edition",
    "authors",
    "license",
    "homepage",
    "repository",
)
DEPENDENCY_TABLES: Final[tuple[str, ...]] = (
    "dependencies",
    "dev-dependencies",
    "build-dependencies",
)
"""Normal entries first: a dependency's workspace entry is read from its first."""
V17_REEXPORT: Final[re.Pattern[str]] = re.compile(
    r"(// TODO\(v1\.7\): Remove these compatibility re-exports[^\n]*\n)pub use "
)
"""A re-export 1.6.1 announces it will remove: the marker and the `pub use` after it."""


BARE_KEY: Final[re.Pattern[str]] = re.compile(r"[A-Za-z0-9_-]+")


class FixtureError(RuntimeError):
    """The downloaded packages are not what the fixture expects."""


def published_package(package: str, version: str) -> Path:
    """The package's source as cargo downloaded it (fetched with the pinned crate)."""
    build_local.pinned_source()  # `cargo fetch` for the binding's lock, if needed
    found = sorted((cargo_home() / "registry" / "src").glob(f"*/{package}-{version}"))
    if not found:
        raise FixtureError(f"cargo has not downloaded {package}-{version}")
    return found[0]


def _toml_key(key: str) -> str:
    """A key, bare where TOML allows (`default-features`), else quoted."""
    return key if BARE_KEY.fullmatch(key) else json.dumps(key)


def _toml_value(value: Any) -> str:
    """One TOML value (strings, booleans, lists, inline tables) as text."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string for the manifests' text
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(
            f"{_toml_key(key)} = {_toml_value(item)}" for key, item in value.items()
        )
        return "{ " + pairs + " }"
    raise FixtureError(f"no TOML form for {value!r}")


def _inherited_names(original: dict[str, Any]) -> list[str]:
    """Every dependency the original manifest takes from the workspace, sorted."""
    return sorted(
        {
            name
            for table in DEPENDENCY_TABLES
            for name, entry in original.get(table, {}).items()
            if isinstance(entry, dict) and entry.get("workspace") is True
        }
    )


def _workspace_entry(name: str, normalised: dict[str, Any]) -> dict[str, Any] | None:
    """The workspace entry of `name` as a member's normalised manifest spells it."""
    for table in DEPENDENCY_TABLES:
        entry = normalised.get(table, {}).get(name)
        if entry is None:
            continue
        if isinstance(entry, str):
            return {"version": entry}
        workspace = {"version": entry["version"]}
        if entry.get("default-features") is False:
            workspace["default-features"] = False
        if entry.get("features"):
            workspace["features"] = list(entry["features"])
        return workspace
    return None


def _merge(into: dict[str, Any], entry: dict[str, Any], name: str) -> None:
    if into["version"] != entry["version"]:
        message = f"{name}: members ask {into['version']} and {entry['version']}"
        raise FixtureError(message)
    features = sorted(set(into.get("features", [])) | set(entry.get("features", [])))
    if features:
        into["features"] = features
    if entry.get("default-features", True):
        into.pop("default-features", None)


def workspace_manifest(packages: dict[Member, Path], version: str) -> str:
    """The root `Cargo.toml` the members' `workspace = true` fields resolve against."""
    router = next(
        path for member, path in packages.items() if member.folder == "kv-router"
    )
    router_package = tomllib.loads((router / "Cargo.toml").read_text("utf-8"))[
        "package"
    ]
    dependencies: dict[str, dict[str, Any]] = {}
    for member, path in sorted(packages.items(), key=lambda item: item[0].folder):
        original = tomllib.loads((path / "Cargo.toml.orig").read_text("utf-8"))
        normalised = tomllib.loads((path / "Cargo.toml").read_text("utf-8"))
        for name in _inherited_names(original):
            entry = _workspace_entry(name, normalised)
            if entry is None:
                raise FixtureError(f"{member.package}: no normalised entry for {name}")
            if name in dependencies:
                _merge(dependencies[name], entry, name)
            else:
                dependencies[name] = entry
    for member in packages:
        dependencies[member.package] = {
            "path": f"lib/{member.folder}",
            "version": version,
        }
    lines = [
        "# Laid out by the suite's tests from the published packages.",
        "[workspace]",
        "members = "
        + _toml_value(
            [
                f"lib/{member.folder}"
                for member in sorted(packages, key=lambda member: member.folder)
            ]
        ),
        'resolver = "3"',
        "",
        "[workspace.package]",
        *(
            f"{field} = {_toml_value(router_package[field])}"
            for field in INHERITED_PACKAGE_FIELDS
            if field in router_package
        ),
        "",
        "[workspace.dependencies]",
        *(
            f"{name} = {_toml_value(dependencies[name])}"
            for name in sorted(dependencies)
        ),
    ]
    return "\n".join(lines) + "\n"


def lay_out_checkout(root: Path, version: str | None = None) -> Path:
    """Lay out a Dynamo workspace of the published `version` at `root`; return it.

    `root` must not exist yet. The router crate is `root/lib/kv-router`.
    """
    version = version or build_local.pinned_version()
    packages = {
        member: published_package(member.package, version) for member in MEMBERS
    }
    root.mkdir(parents=True)
    for member, source in sorted(packages.items(), key=lambda item: item[0].folder):
        folder = root / "lib" / member.folder
        shutil.copytree(
            source,
            folder,
            ignore=shutil.ignore_patterns(
                ".cargo_vcs_info.json", "Cargo.toml.orig", "Cargo.lock"
            ),
        )
        shutil.copyfile(source / "Cargo.toml.orig", folder / "Cargo.toml")
    manifest = workspace_manifest(packages, version)
    (root / "Cargo.toml").write_text(manifest, encoding="utf-8")
    return root


def copy_pinned_crate(destination: Path) -> Path:
    """A verbatim copy of the pinned crate's package at `destination`."""
    shutil.copytree(build_local.pinned_source(), destination)
    return destination


def delete_v17_reexports(crate: Path) -> list[Path]:
    """Take every re-export marked "TODO(v1.7): Remove" from the crate's dependents.

    Each marked `pub use` becomes `pub(crate) use`: to a dependent (the
    binding) the path is gone, as v1.7 announces, while the crate's own modules
    keep the paths they still use (1.6.1 reaches some of its items through them,
    so deleting the lines outright breaks the crate, not the binding). Returns
    the files edited.
    """
    edited = []
    for path in sorted((crate / "src").rglob("*.rs")):
        text = path.read_text(encoding="utf-8")
        hidden = V17_REEXPORT.sub(r"\1pub(crate) use ", text)
        if hidden != text:
            path.write_text(hidden, encoding="utf-8")
            edited.append(path)
    return edited


def edit_source(crate: Path, file: Path, old: str, new: str) -> None:
    """Replace the one occurrence of `old` in `crate/file` by `new`."""
    path = crate / file
    text = path.read_text(encoding="utf-8")
    if text.count(old) != 1:
        raise FixtureError(f"{file}: expected one {old!r}, found {text.count(old)}")
    path.write_text(text.replace(old, new), encoding="utf-8")


def add_enum_variant(crate: Path, file: Path, enum: str, variant: str) -> None:
    """Add `variant` as the first variant of `pub enum {enum}` in `crate/file`."""
    header = f"pub enum {enum} {{\n"
    edit_source(crate, file, header, f"{header}    {variant},\n")
