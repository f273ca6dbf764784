"""The auditors' catalogue is generated from the registry and up to date."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TypedDict

import pytest
from command_support import run_module

from properties import properties
from properties.__main__ import markdown
from properties.citations import (
    CitationError,
    downloaded_crate,
    resolve_crate,
    resolve_model,
)
from properties.registry import register

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = ROOT / "properties" / "CATALOGUE.md"
CRATE = downloaded_crate()
NEEDS_CRATE = pytest.mark.skipif(
    CRATE is None,
    reason="the pinned crate's source is not downloaded (`cargo fetch "
    "--manifest-path impl/Cargo.toml`); crate citations cannot be resolved",
)
SECTION_NUMBER = re.compile(r"\b(?:[A-G]\.\d+|D\d+|Q\d+|SPEC)\b")
"""Section numbers of a document this repository does not contain."""


def _documented(state: object) -> bool:
    """A predicate with a docstring."""
    return state is not None


class _Citations(TypedDict):
    """The citation keywords of `register`."""

    reads: tuple[str, ...]
    guards: tuple[str, ...]


def _citations() -> _Citations:
    return {"reads": ("model.affinity.table.is_expired_at",), "guards": ("a::b",)}


@NEEDS_CRATE
def test_the_committed_catalogue_matches_the_registry() -> None:
    """CATALOGUE.md is exactly what `python -m properties --markdown` prints."""
    assert markdown() == CATALOGUE.read_text(encoding="utf-8")


def test_every_property_states_itself_in_one_line() -> None:
    """Every registered property has a non-empty one-line statement."""
    assert [] == [p.name for p in properties() if not p.statement.strip()]


def test_every_always_property_declares_a_documented_antecedent() -> None:
    """Each `always` property says when it can fail; each condition has a statement."""
    always = properties(kind="always")

    assert [] == [p.name for p in always if p.antecedent is None]
    assert [] == [
        condition.name
        for p in always
        for condition in (p.antecedent, p.boundary)
        if condition is not None and not condition.statement.strip()
    ]


def test_every_model_citation_resolves_to_a_function_of_this_repository() -> None:
    """Each `reads` names a function (or class) under model/ that exists."""
    locations = {
        dotted: resolve_model(dotted) for p in properties() for dotted in p.reads
    }

    assert [] == [
        dotted
        for dotted, where in locations.items()
        if not where.path.startswith("model/")
    ]


@NEEDS_CRATE
def test_every_crate_citation_resolves_in_the_pinned_crate() -> None:
    """Each `guards` names an item of the pinned crate: a file and a line."""
    assert CRATE is not None
    unresolved = []
    for prop in properties():
        for rust_path in prop.guards:
            try:
                resolve_crate(rust_path, CRATE)
            except CitationError as error:
                unresolved.append(f"{prop.name}: {error}")

    assert [] == unresolved


@NEEDS_CRATE
def test_a_crate_citation_that_names_nothing_is_an_error() -> None:
    """A function the crate does not have, or a module it lacks, raises."""
    assert CRATE is not None
    with pytest.raises(CitationError, match="no item SessionAffinity::advance_clock"):
        resolve_crate(
            "services::selection::affinity::SessionAffinity::advance_clock", CRATE
        )
    with pytest.raises(CitationError, match="no module file"):
        resolve_crate("nowhere::Thing::call", CRATE)


def test_crate_items_resolve_by_impl_block_trait_and_enum(tmp_path: Path) -> None:
    """Methods of inherent and trait impls, variants and free items; tests skipped."""
    source = tmp_path / "src" / "m.rs"
    source.parent.mkdir()
    source.write_text(
        "pub struct Table;\n"  # 1
        "impl<T> Clone for Wrapper<T> {\n"  # 2
        '    fn clone(&self) -> Self { let s = "}"; todo!() }\n'  # 3
        "}\n"  # 4
        "impl Table {\n"  # 5
        "    pub(crate) async fn reap(&self) {}\n"  # 6
        "}\n"  # 7
        "pub enum Outcome {\n"  # 8
        "    Refreshed,\n"  # 9
        "    Replaced { newer: bool },\n"  # 10
        "}\n"  # 11
        "#[cfg(test)]\n"  # 12
        "mod tests {\n"  # 13
        "    fn helper() {}\n"  # 14
        "}\n"  # 15
        "fn free() {}\n",  # 16
        encoding="utf-8",
    )

    found = {
        name: resolve_crate(f"m::{name}", tmp_path).line
        for name in (
            "Table",
            "Wrapper::clone",
            "Table::reap",
            "Outcome::Refreshed",
            "Outcome::Replaced",
            "free",
        )
    }

    assert {
        "Table": 1,
        "Wrapper::clone": 3,
        "Table::reap": 6,
        "Outcome::Refreshed": 9,
        "Outcome::Replaced": 10,
        "free": 16,
    } == found
    with pytest.raises(CitationError):
        resolve_crate("m::helper", tmp_path)


def test_the_catalogue_and_registry_cite_no_outside_document() -> None:
    """No section number of a document the repository lacks is left in them."""
    files = [CATALOGUE, *sorted((ROOT / "properties").rglob("*.py"))]

    assert [] == [
        f"{path.relative_to(ROOT)}: {match.group(0)}"
        for path in files
        for match in SECTION_NUMBER.finditer(path.read_text(encoding="utf-8"))
    ]


def test_a_property_without_a_docstring_is_refused() -> None:
    """Registering a predicate with no docstring raises at import time."""

    def undocumented(state: object) -> bool:
        return state is not None

    with pytest.raises(TypeError, match="no docstring"):
        register("affinity", "always", "state", antecedent=_documented, **_citations())(
            undocumented
        )


def test_an_always_property_without_an_antecedent_is_refused() -> None:
    """An `always` property must say when it can fail."""

    def unconditional(state: object) -> bool:
        """Holds of everything."""
        return state is not None

    with pytest.raises(TypeError, match="antecedent"):
        register("affinity", "always", "state", **_citations())(unconditional)


def test_a_property_without_citations_is_refused() -> None:
    """A property names what it reads in the model and what it guards in the crate."""

    def uncited(state: object) -> bool:
        """Holds of everything."""
        return state is not None

    with pytest.raises(TypeError, match="cites no model function"):
        register("affinity", "always", "state", antecedent=_documented)(uncited)


def test_a_duplicate_property_name_is_refused() -> None:
    """Registering a second property under an existing name raises."""
    existing = properties(subject="affinity")[0]

    def duplicate(state: object) -> bool:
        """A second predicate with a taken name."""
        return state is not None

    duplicate.__name__ = existing.name
    with pytest.raises(TypeError, match="registered twice"):
        register("affinity", "always", "state", antecedent=_documented, **_citations())(
            duplicate
        )


def test_bad_arguments_are_one_line_and_exit_two() -> None:
    """`python -m properties --bogus` says what is wrong in one line, exit 2."""
    result = run_module("properties", "--bogus", timeout_s=60)

    assert 2 == result.returncode
    assert [
        "properties: error: unrecognized arguments: --bogus"
    ] == result.stderr.splitlines()
