"""The README opens with a failure, the two commands and the glossary; links resolve.

A newcomer reads the first screen and can replay a failure from it alone, so
the walk-through's commands must name things that exist, and `.ci/run` must
run exactly the test command the README gives.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = REPO / "docs"
FIRST_SCREEN = 120
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
FENCE = re.compile(r"```sh\n(.*?)```", re.DOTALL)


def _lines() -> list[str]:
    return README.read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize(
    "heading", ["## A failure, read end to end", "## Two commands", "## Glossary"]
)
def test_the_first_screen_holds_the_heading(heading: str) -> None:
    """The walk-through, the two commands and the glossary are in the first lines."""
    assert heading in _lines()[:FIRST_SCREEN]


def test_the_readme_test_command_is_what_ci_runs() -> None:
    """`.ci/run` runs the README's second command, character for character."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Two commands") : text.index("## Glossary")]
    install, tests = (block.strip() for block in FENCE.findall(section))
    assert install.startswith('pip install -e ".[lint]"')
    run = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in run


def test_the_walk_through_names_a_test_that_exists() -> None:
    """The canary test the first screen runs is a function of the file it names."""
    text = README.read_text(encoding="utf-8")
    node = re.search(r"python -m pytest (\S+)::(\w+)", text)
    assert node is not None
    path, name = node.groups()
    assert f"def {name}(" in (REPO / path).read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "document",
    [README, *sorted(DOCS.glob("*.md"))],
    ids=lambda path: path.relative_to(REPO).as_posix(),
)
def test_every_relative_link_resolves(document: Path) -> None:
    """Each relative link of the README and of docs/ points to a file that exists."""
    targets = [
        target
        for target in LINK.findall(document.read_text(encoding="utf-8"))
        if "://" not in target
    ]
    missing = [t for t in targets if not (document.parent / t).exists()]
    assert missing == []


def test_every_document_is_linked_from_the_readme() -> None:
    """No page of docs/ is an orphan: the README's reference table links each."""
    linked = set(LINK.findall(README.read_text(encoding="utf-8")))
    pages = {f"docs/{page.name}" for page in DOCS.glob("*.md")}
    assert sorted(pages - linked) == []
