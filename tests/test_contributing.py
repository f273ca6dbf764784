"""The recipes of docs/contributing.md still work as written.

Each `python` block of a recipe runs in a fresh interpreter from the
repository root (with `tests/` on the path, for the counter subject) and must
print, last, the line that states its claim: the property is catalogued and
held, the rule was drawn, the canary was caught by its check, the subject was
gated.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

REPO: Final = Path(__file__).resolve().parent.parent
PAGE: Final = REPO / "docs" / "contributing.md"
BLOCK: Final = re.compile(
    r"^## (.+?)\n.*?```python\n(.*?)```", re.DOTALL | re.MULTILINE
)
CLAIMS: Final = {
    "Add a property": (
        "catalogued and held: no_class_holds_more_entries_than_are_pending"
    ),
    "Add a rule": "drawn: pop_twice_with_every_worker_free",
    "Add a canary": "caught: retain_keeps_all by states_agree",
    "Add a subject": "gated: counter",
}
"""Each recipe's heading and the last line its block prints."""
RECIPE_TIMEOUT_S: Final = 120


def _recipes() -> dict[str, str]:
    return dict(BLOCK.findall(PAGE.read_text("utf-8")))


def test_the_page_has_the_four_recipes() -> None:
    """Property, rule, canary and subject: one code block each."""
    assert sorted(CLAIMS) == sorted(_recipes())


@pytest.mark.parametrize("heading", sorted(CLAIMS))
def test_a_recipe_runs_and_shows_its_claim(heading: str) -> None:
    """The block runs in a fresh interpreter and prints its claim last."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), str(REPO / "tests")]),
    }

    ran = subprocess.run(  # noqa: S603 - this interpreter, a block of our own page
        [sys.executable, "-c", _recipes()[heading]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=RECIPE_TIMEOUT_S,
        check=False,
    )

    assert 0 == ran.returncode, ran.stderr[-2000:]
    assert CLAIMS[heading] == ran.stdout.splitlines()[-1]
