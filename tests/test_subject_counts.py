"""Prose that counts the subjects agrees with the subject registry.

"Two subjects" stayed in the README after a third and a fourth were
registered; a count in words or digits beside "subjects" in the README or a
page of docs/ or ci/ must now equal the number of `ci.subjects` entries.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

from ci import subjects

REPO: Final = Path(__file__).resolve().parent.parent
WORDS: Final = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
)
COUNT: Final = re.compile(
    r"\b(" + "|".join(WORDS) + r"|\d+)\s+subjects\b", re.IGNORECASE
)
PAGES: Final = (
    REPO / "README.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "ci").glob("*.md")),
)


def _counts(text: str) -> list[int]:
    found = COUNT.findall(text)
    return [int(n) if n.isdigit() else WORDS.index(n.lower()) for n in found]


def test_a_count_is_read_in_words_and_digits() -> None:
    """The reader sees "Two subjects" and "4 subjects" alike, not "both"."""
    assert [2, 4] == _counts("Two subjects share; 4 subjects run; both subjects")


@pytest.mark.parametrize(
    "page", PAGES, ids=lambda path: path.relative_to(REPO).as_posix()
)
def test_every_count_of_subjects_is_the_registrys(page: Path) -> None:
    """Each "N subjects" of the page says how many entries the registry has."""
    registered = len(subjects.names())

    wrong = [n for n in _counts(page.read_text("utf-8")) if n != registered]

    assert [] == wrong, f"the registry has {registered} subjects"


def test_the_readme_counts_the_subjects() -> None:
    """The README's layout section states the count, so the check above bites."""
    assert _counts((REPO / "README.md").read_text("utf-8"))
