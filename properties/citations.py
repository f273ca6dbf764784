"""Where a property's citations point: model functions here, items of the crate.

A property `reads` model functions, named by dotted Python paths
(`model.affinity.table.ModelAffinity.advance_clock`), and `guards` items of
the crate under test, named by Rust paths inside `dynamo-kv-router`
(`services::selection::affinity::SessionAffinity::try_acquire`). Both resolve
to a file and the line the item starts on:

* a model path imports its longest module prefix and looks up the rest;
* a crate path maps its module prefix onto `src/<a>/<b>.rs` (or
  `src/<a>/<b>/mod.rs`) of the pinned crate's source as cargo downloaded it
  (`$CARGO_HOME/registry/src/*/dynamo-kv-router-<version>/`), then finds the
  item: a free item (`fn`, `struct`, `enum`, `trait`, `type`, `const`,
  `static`) at the file's top level, or `Type::name` -- a function inside an
  `impl` block (inherent or of a trait) or a `trait` block of `Type`, or a
  variant of the enum `Type`. Items of `#[cfg(test)]` modules are not cited.

A citation that does not resolve raises `CitationError` naming it.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Final

REPO_ROOT: Final[Path] = Path(__file__).resolve().parent.parent
CRATE_NAME: Final[str] = "dynamo-kv-router"
CRATE_MANIFEST: Final[Path] = REPO_ROOT / "impl" / "Cargo.toml"

_STRING = re.compile(r'"(?:\\.|[^"\\])*"')
_CHAR = re.compile(r"'(?:\\.|[^'\\])'")
_LINE_COMMENT = re.compile(r"//.*$")
_VISIBILITY = r"(?:pub(?:\([^)]*\))?\s+)?"
_FN_QUALIFIERS = r"(?:(?:const|async|unsafe|extern\s+\"[^\"]*\")\s+)*"
_IMPL = re.compile(r"^\s*(?:unsafe\s+)?impl\b(?P<rest>.*)$")
_TRAIT = re.compile(rf"^\s*{_VISIBILITY}(?:unsafe\s+)?trait\s+(?P<name>\w+)")
_ENUM = re.compile(rf"^\s*{_VISIBILITY}enum\s+(?P<name>\w+)")
_CFG_TEST = re.compile(r"^\s*#\[cfg\(test\)\]")


class CitationError(LookupError):
    """A citation names nothing that exists."""


@dataclass(frozen=True)
class Location:
    """Where a cited item starts: a file (relative to its root) and a line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


# ---- model functions ---------------------------------------------------------


def resolve_model(dotted: str) -> Location:
    """The file (relative to the repository) and first line of a model function."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                raise CitationError(f"{dotted}: no {attribute!r} in {found!r}")
            found = getattr(found, attribute)
        if isinstance(found, property) and found.fget is not None:
            found = found.fget
        try:
            lines = inspect.getsourcelines(found)  # type: ignore[arg-type]
            source = inspect.getsourcefile(found)  # type: ignore[arg-type]
        except TypeError:
            raise CitationError(f"{dotted}: not a function, class or module") from None
        assert source is not None
        line = lines[1] if lines[1] > 0 else 1
        path = Path(source).resolve()
        shown = path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path
        return Location(shown.as_posix(), line)
    raise CitationError(f"{dotted}: no such module")


# ---- the crate ----------------------------------------------------------------


def pinned_version() -> str:
    """The exact crate version impl/Cargo.toml pins (`=1.6.1` gives `1.6.1`)."""
    manifest = tomllib.loads(CRATE_MANIFEST.read_text(encoding="utf-8"))
    requirement = str(manifest["dependencies"][CRATE_NAME]["version"])
    return requirement.removeprefix("=")


def cargo_home() -> Path:
    """Cargo's home folder (`CARGO_HOME`, default `~/.cargo`)."""
    return Path(os.environ.get("CARGO_HOME", Path.home() / ".cargo"))


def downloaded_crate(version: str | None = None) -> Path | None:
    """The crate's source as cargo downloaded it, or None if it is not there."""
    folder = f"{CRATE_NAME}-{version or pinned_version()}"
    found = sorted((cargo_home() / "registry" / "src").glob(f"*/{folder}"))
    return found[0] if found else None


def _code(line: str) -> str:
    """A source line without strings, char literals and a trailing comment."""
    return _LINE_COMMENT.sub("", _CHAR.sub("' '", _STRING.sub('""', line)))


def _impl_type(rest: str) -> str | None:
    """The self type of an `impl` header (`impl<T> Trait for Type<T> {`)."""
    header = rest.split("{", maxsplit=1)[0].split(" where ", maxsplit=1)[0]
    if " for " in header:
        header = header.split(" for ")[-1]
    header = re.sub(r"^\s*<[^>]*(?:<[^>]*>[^>]*)*>", "", header).strip()
    match = re.match(r"(?:[\w:]+::)?(\w+)", header)
    return match.group(1) if match else None


@dataclass
class _Block:
    """An open `impl`, `trait` or `enum` block: whose items it holds, its depth."""

    owner: str
    kind: str  # "impl", "trait" or "enum"
    depth: int


_ITEM = re.compile(
    rf"^\s*{_VISIBILITY}{_FN_QUALIFIERS}"
    r"(?:fn|struct|enum|trait|type|const|static|union|mod)\s+(?P<name>\w+)"
)
_MODULE = re.compile(rf"^\s*{_VISIBILITY}mod\b")
_VARIANT = re.compile(r"^\s*(?P<name>[A-Z]\w*)\s*(?:[({,=]|$)")


@dataclass
class _Scanner:
    """One pass over a Rust file, line by line, tracking braces and open blocks."""

    found: dict[str, int] = field(default_factory=dict)
    depth: int = 0
    blocks: list[_Block] = field(default_factory=list)
    pending: _Block | None = None  # a block header seen, its `{` not yet
    test_depth: int | None = None  # inside a `#[cfg(test)]` module opened here
    cfg_test: bool = False  # the previous line was `#[cfg(test)]`
    impl_text: str | None = None  # an `impl<` header spanning lines, until its `{`

    def line(self, number: int, line: str) -> None:
        """Record the items `line` declares, then follow its braces."""
        if _CFG_TEST.match(line):
            self.cfg_test = True
            return
        if self.test_depth is None:
            self.items(number, line)
        self.cfg_test = False
        self.braces(line)

    def items(self, number: int, line: str) -> None:
        """Items at the top level or directly inside an open block."""
        named = _ITEM.match(line)
        inside = self.blocks[-1] if self.blocks else None
        if inside is not None and inside.depth != self.depth - 1:
            inside = None
        if self.cfg_test and named and _MODULE.match(line):
            self.test_depth = self.depth
        elif inside is None and self.depth == 0 and named:
            self.found.setdefault(named.group("name"), number)
        elif inside is not None and inside.kind != "enum" and named:
            self.found.setdefault(f"{inside.owner}::{named.group('name')}", number)
        elif inside is not None and inside.kind == "enum":
            variant = _VARIANT.match(line)
            if variant:
                self.found.setdefault(f"{inside.owner}::{variant['name']}", number)
        if self.depth == 0:
            self.pending = self.header(line) or self.pending

    def header(self, line: str) -> _Block | None:
        """A block header on this line, or one that ends here after `impl<`."""
        if self.impl_text is not None:
            self.impl_text += " " + line.strip()
            if "{" not in line:
                return None
            owner, self.impl_text = _impl_type(_after_generics(self.impl_text)), None
            return None if owner is None else _Block(owner, "impl", 0)
        opened = _IMPL.match(line)
        if opened and opened["rest"].strip() == "<":
            self.impl_text = "<"
            return None
        return _header(line)

    def braces(self, line: str) -> None:
        """Open and close blocks as `{` and `}` come."""
        for char in line:
            if char == "{":
                if self.pending is not None:
                    self.blocks.append(self.pending)
                    self.pending = None
                self.depth += 1
            elif char == "}":
                self.depth -= 1
                if self.blocks and self.blocks[-1].depth == self.depth:
                    self.blocks.pop()
                if self.test_depth == self.depth:
                    self.test_depth = None
        if self.pending is not None and line.rstrip().endswith(";"):
            self.pending = None


def _after_generics(header: str) -> str:
    """`header` without its leading `<...>` parameter list (nested `<>` balanced)."""
    depth = 0
    for index, char in enumerate(header):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if depth == 0:
            return header[index + 1 :]
    return header


def _header(line: str) -> _Block | None:
    """The block a top-level `impl`, `trait` or `enum` line opens, if any."""
    opened = _IMPL.match(line)
    if opened and (owner := _impl_type(opened.group("rest"))):
        return _Block(owner, "impl", 0)
    trait = _TRAIT.match(line)
    if trait:
        return _Block(trait.group("name"), "trait", 0)
    enum = _ENUM.match(line)
    if enum:
        return _Block(enum.group("name"), "enum", 0)
    return None


def _items(text: str) -> dict[str, int]:
    """Every citable item of one Rust file: `name` or `Type::name` -> line."""
    scanner = _Scanner()
    for number, raw in enumerate(text.splitlines(), start=1):
        scanner.line(number, _code(raw))
    return scanner.found


@cache
def _file_items(path: Path) -> dict[str, int]:
    return _items(path.read_text(encoding="utf-8"))


def _module_file(crate: Path, modules: list[str]) -> Path | None:
    base = crate / "src"
    for candidate in (
        base.joinpath(*modules).with_suffix(".rs"),
        base.joinpath(*modules, "mod.rs"),
    ):
        if modules and candidate.is_file():
            return candidate
    return None


def resolve_crate(rust_path: str, crate: Path) -> Location:
    """The file (relative to the crate's root) and line of a crate item."""
    parts = rust_path.split("::")
    for cut in range(len(parts) - 1, 0, -1):
        file = _module_file(crate, parts[:cut])
        if file is None:
            continue
        name = "::".join(parts[cut:])
        line = _file_items(file).get(name)
        if line is None:
            relative = file.relative_to(crate).as_posix()
            raise CitationError(f"{rust_path}: no item {name} in {relative}")
        return Location(file.relative_to(crate).as_posix(), line)
    raise CitationError(f"{rust_path}: no module file under {crate / 'src'}")
