"""The auditors' catalogue is generated from the registry and up to date."""

from __future__ import annotations

from pathlib import Path

import pytest

from properties import properties
from properties.__main__ import markdown
from properties.registry import register

CATALOGUE = Path(__file__).resolve().parent.parent / "properties" / "CATALOGUE.md"


def test_the_committed_catalogue_matches_the_registry() -> None:
    """CATALOGUE.md is exactly what `python -m properties --markdown` prints."""
    assert markdown() == CATALOGUE.read_text(encoding="utf-8")


def test_every_property_states_itself_in_one_line() -> None:
    """Every registered property has a non-empty one-line statement."""
    assert [] == [p.name for p in properties() if not p.statement.strip()]


def test_a_property_without_a_docstring_is_refused() -> None:
    """Registering a predicate with no docstring raises at import time."""

    def undocumented(state: object) -> bool:
        return state is not None

    with pytest.raises(TypeError):
        register("affinity", "always", "state")(undocumented)


def test_a_duplicate_property_name_is_refused() -> None:
    """Registering a second property under an existing name raises."""
    existing = properties(subject="affinity")[0]

    def duplicate(state: object) -> bool:
        """A second predicate with a taken name."""
        return state is not None

    duplicate.__name__ = existing.name
    with pytest.raises(TypeError):
        register("affinity", "always", "state")(duplicate)
