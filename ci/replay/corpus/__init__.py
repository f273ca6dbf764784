"""The regression corpus: traces replayed on every test run, without Hypothesis.

`ci/replay/corpus/*.json` are the source of truth; `tests/test_corpus.py` replays each
against the model and the system under test. Two ways in:

* `python -m ci.replay.corpus build [--check]` writes (or compares) the
  hand-written scenarios of every subject whose registry entry names a
  builder (`<subject>_scenarios.py`: `build`);
* `python -m ci.replay.corpus add ARTIFACT_OR_TRACE --name NAME` copies a found
  counterexample in, with today's model answers recorded at every step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Final

from ci import subjects
from ci.cli import write_results
from ci.inputs import InputError
from ci.replay.trace import load

CORPUS_DIR: Final[Path] = Path(__file__).resolve().parent
NAME_PATTERN: Final[re.Pattern[str]] = re.compile(r"[a-z0-9][a-z0-9_]{0,99}")
CORPUS_FILES_MAX: Final[int] = 10_000


class CorpusError(Exception):
    """A scenario disagrees with the model, or a corpus operation is refused."""


class Unchecked:
    """Marks a step whose return value the scenario does not state."""

    def __repr__(self) -> str:
        return "UNCHECKED"


UNCHECKED: Final = Unchecked()


def corpus_files(directory: Path = CORPUS_DIR) -> list[Path]:
    """The corpus traces, sorted by name."""
    files = sorted(directory.glob("*.json"))
    if len(files) > CORPUS_FILES_MAX:
        raise CorpusError(f"{len(files)} corpus files exceed {CORPUS_FILES_MAX}")
    return files


def build() -> dict[Path, str]:
    """Every hand-written scenario's file path and JSON text, of every subject.

    A subject's entry names its builder (`scenarios`): a function that checks
    its scenarios on the model and returns the files to write.
    """
    built: dict[Path, str] = {}
    for entry in subjects.entries():
        if entry.scenarios is None:
            continue
        files: dict[Path, str] = entry.scenarios()()
        if set(files) & set(built):
            raise CorpusError("two scenarios share a name")
        built |= files
    return built


def stale_files(built: Mapping[Path, str] | None = None) -> list[Path]:
    """Files of `built` (default: every builder's) missing or not as written."""
    return sorted(
        path
        for path, text in (build() if built is None else built).items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    )


def add(
    source: Path,
    name: str,
    *,
    description: str | None = None,
    directory: Path = CORPUS_DIR,
    force: bool = False,
) -> tuple[Path, list[int]]:
    """Copy a trace (or an artifact's) into the corpus as `<name>.json`.

    The steps are re-recorded with today's model, so the corpus test checks
    the system under test against current expectations; the step numbers whose
    recorded expectation changed are returned for the caller to report.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise CorpusError(
            f"name {name!r} must be lower-case letters, digits and underscores"
        )
    target = directory / f"{name}.json"
    if target.exists() and not force:
        raise CorpusError(f"{target} exists; pass --force to replace it")
    try:
        found = load(source)
    except InputError as error:
        raise CorpusError(str(error)) from None
    fresh = found.kind.record(
        found.setup,
        found.ops,
        description or found.description,
        [step.comment for step in found.steps],
    )
    changed = [
        old.index
        for old, new in zip(found.steps, fresh.steps, strict=True)
        if old.expected != new.expected or old.model != new.model
    ]
    if not fresh.description.strip():
        fresh = replace(
            fresh, header=replace(fresh.header, description=f"Added as {name}.")
        )
    write_results({target: fresh.dumps()})
    return target, changed
