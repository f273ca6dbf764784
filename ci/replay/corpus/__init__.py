"""The regression corpus: traces replayed on every test run, without Hypothesis.

`ci/replay/corpus/*.json` are the source of truth; `tests/test_corpus.py` replays each
against the model and the system under test. Two ways in:

* `python -m ci.replay.corpus build [--check]` writes (or compares) the
  hand-written scenarios of `scenarios.py` (affinity) and `queue_scenarios.py`;
* `python -m ci.replay.corpus add ARTIFACT_OR_TRACE --name NAME` copies a found
  counterexample in, with today's model answers recorded at every step.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Final

from ci.cli import write_results
from ci.inputs import InputError
from ci.replay.affinity import record
from ci.replay.corpus.queue_scenarios import (
    QUEUE_SCENARIOS,
    QueueScenario,
    stated_mismatch,
)
from ci.replay.corpus.scenarios import SCENARIOS, Do, Scenario, Unchecked
from ci.replay.queue import KIND as QUEUE
from ci.replay.trace import Trace, load
from model.affinity.ops import Outcome, outcome_of
from model.affinity.table import ModelAffinity

CORPUS_DIR: Final[Path] = Path(__file__).resolve().parent
NAME_PATTERN: Final[re.Pattern[str]] = re.compile(r"[a-z0-9][a-z0-9_]{0,99}")
CORPUS_FILES_MAX: Final[int] = 10_000


class CorpusError(Exception):
    """A scenario disagrees with the model, or a corpus operation is refused."""


def corpus_files(directory: Path = CORPUS_DIR) -> list[Path]:
    """The corpus traces, sorted by name."""
    files = sorted(directory.glob("*.json"))
    if len(files) > CORPUS_FILES_MAX:
        raise CorpusError(f"{len(files)} corpus files exceed {CORPUS_FILES_MAX}")
    return files


def _check_step(scenario: Scenario, index: int, step: Do, model: ModelAffinity) -> None:
    """Raise unless the model's state after `step` matches what it states."""
    where = f"{scenario.name} step {index} ({step.op!r})"
    outcome = outcome_of(model, step.op)
    published = tuple(model.drain_published())
    if step.raises is not None and outcome.error != step.raises:
        raise CorpusError(f"{where}: expected {step.raises}, model gave {outcome}")
    if step.raises is None and not outcome.ok:
        raise CorpusError(f"{where}: model raised {outcome.error}: {outcome.message}")
    returns = step.returns
    if not isinstance(returns, Unchecked) and outcome != Outcome(value=returns):
        raise CorpusError(f"{where}: expected {returns!r}, model gave {outcome}")
    for session_id, leases in sorted(step.leases.items()):
        if model.lease_count(session_id) != leases:
            raise CorpusError(
                f"{where}: expected {leases} leases on {session_id!r}, "
                f"model has {model.lease_count(session_id)}"
            )
    if step.entries is not None and model.entry_count() != step.entries:
        raise CorpusError(
            f"{where}: expected {step.entries} entries, model has {model.entry_count()}"
        )
    if step.published is not None and published != step.published:
        raise CorpusError(f"{where}: expected {step.published}, published {published}")


def build_scenario(scenario: Scenario) -> Trace:
    """Check a scenario against the model and record it as a trace."""
    model = ModelAffinity(scenario.config)
    for index, step in enumerate(scenario.steps, start=1):
        _check_step(scenario, index, step, model)
    return record(
        scenario.config,
        scenario.session_pool,
        [step.op for step in scenario.steps],
        scenario.description,
        [step.comment for step in scenario.steps],
    )


def build_queue_scenario(scenario: QueueScenario) -> Trace:
    """Record a queue scenario on the model; refuse it where the model disagrees."""
    trace = QUEUE.record(
        scenario.spec,
        [step.op for step in scenario.steps],
        scenario.description,
        [step.comment for step in scenario.steps],
    )
    for stated, recorded in zip(scenario.steps, trace.steps, strict=True):
        mismatch = stated_mismatch(
            stated, recorded.expected, recorded.model.pending_count
        )
        if mismatch:
            raise CorpusError(
                f"{scenario.name} step {recorded.index} ({stated.op!r}): "
                f"the scenario states otherwise, but the model {mismatch}"
            )
    return trace


def build(directory: Path = CORPUS_DIR) -> dict[Path, str]:
    """Every hand-written scenario's file path and JSON text."""
    names = [s.name for s in SCENARIOS] + [s.name for s in QUEUE_SCENARIOS]
    if len(set(names)) != len(names):
        raise CorpusError("two scenarios share a name")
    built = {
        directory / f"{scenario.name}.json": build_scenario(scenario).dumps()
        for scenario in SCENARIOS
    }
    return built | {
        directory / f"{scenario.name}.json": build_queue_scenario(scenario).dumps()
        for scenario in QUEUE_SCENARIOS
    }


def stale_files(directory: Path = CORPUS_DIR) -> list[Path]:
    """Scenario files that are missing or differ from what their builder writes."""
    return sorted(
        path
        for path, text in build(directory).items()
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
