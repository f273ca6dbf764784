"""A pytest plugin for the runs of `ci.fuzz`, `ci.soak` and `ci.determinism`.

Loaded with `-p ci.trust.plugin` by `ci.trust.runner`; inert unless the
environment variable `VERIFY_TRUST_RUN` holds a `RunConfig` (JSON). Then it

1. loads the run's Hypothesis settings: a profile of `ci/profiles.py` with
   overrides (batch size, phases, verbosity) and, for fuzzing, the shared
   example database (`ci.trust.database`);
2. counts every test case Hypothesis runs (observability callbacks, coverage
   tracing off) and the distinct behaviours seen -- the `event()`s the
   machines emit (the coverage goals they reach) -- and appends a progress
   line every `PROGRESS_EVERY` test cases;
3. writes a step log if asked: per test case, the program Hypothesis ran and
   every note the machine made (each step's operation and the model's answer),
   in order, with nothing that depends on time;
4. writes one JSON result per test at the end: outcome, the failure's first
   line, whether Hypothesis reported a counterexample (a reproduction blob),
   the artifact replay lines of `ci.replay.artifacts`, counts.

The machines are reached through their pytest tests only.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import pytest
from hypothesis import Phase, Verbosity, settings
from hypothesis.internal import observability

from ci.profiles import derived_profile
from ci.replay.artifacts import REPLAY_PROPERTY

if TYPE_CHECKING:
    from collections.abc import Generator

    from hypothesis.internal.observability import Observation

RUN_ENV: Final[str] = "VERIFY_TRUST_RUN"
PROFILE_NAME: Final[str] = "trust-run"
PROGRESS_EVERY: Final[int] = 10
"""Test cases between two progress lines."""
BLOB_MARK: Final[str] = "@reproduce_failure("
EVENT_MARK: Final[str] = "reached "
"""Behaviours are the machines' `event(f"reached {goal}")` features."""
FLAKY_MARKS: Final[tuple[str, ...]] = ("Flaky", "Inconsistent results")


@dataclass(frozen=True)
class RunConfig:
    """What one pytest run of a trust command is asked to do."""

    base: str  # a profile of ci/profiles.py
    max_examples: int | None = None
    stateful_step_count: int | None = None
    phases: tuple[str, ...] | None = None  # Phase names
    verbosity: str | None = None  # a Verbosity name
    redis_url: str | None = None
    database_dir: str | None = None  # the directory database (Redis' fallback)
    result: str | None = None  # where the JSON result goes
    progress: str | None = None  # where progress lines go (JSON lines)
    step_log: str | None = None  # where the step log goes
    fresh_seeds: int | None = None  # seeds Hypothesis' generator of fresh seeds

    def to_env(self) -> str:
        """The JSON for `VERIFY_TRUST_RUN`."""
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_env(cls, text: str) -> RunConfig:
        """Parse `VERIFY_TRUST_RUN`."""
        fields = json.loads(text)
        if fields.get("phases") is not None:
            fields["phases"] = tuple(fields["phases"])
        return cls(**fields)

    def settings_overrides(self) -> dict[str, Any]:
        """The settings this run changes from its base profile."""
        overrides: dict[str, Any] = {}
        if self.max_examples is not None:
            overrides["max_examples"] = self.max_examples
        if self.stateful_step_count is not None:
            overrides["stateful_step_count"] = self.stateful_step_count
        if self.phases is not None:
            overrides["phases"] = tuple(Phase[name] for name in self.phases)
        if self.verbosity is not None:
            overrides["verbosity"] = Verbosity[self.verbosity]
        return overrides


@dataclass
class TestTally:
    """What one test's Hypothesis runs did."""

    test_cases: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
    by_phase: dict[str, int] = field(default_factory=dict)
    behaviours: set[str] = field(default_factory=set)


class _Recorder:
    """Counts test cases per test; writes progress lines and the step log."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.tallies: dict[str, TestTally] = {}
        self.current = "?"
        self.results: list[dict[str, Any]] = []
        self.step_log = (
            Path(config.step_log).open("w", encoding="utf-8")  # noqa: SIM115 - closed at session end
            if config.step_log
            else None
        )

    def tally(self) -> TestTally:
        return self.tallies.setdefault(self.current, TestTally())

    def observe(self, observation: Observation) -> None:
        """One Hypothesis observation (test cases only)."""
        if observation.type != "test_case":
            return
        tally = self.tally()
        tally.test_cases += 1
        status = str(observation.status)
        tally.by_status[status] = tally.by_status.get(status, 0) + 1
        phase = str(observation.metadata.phase)
        tally.by_phase[phase] = tally.by_phase.get(phase, 0) + 1
        tally.behaviours.update(
            key for key in observation.features if key.startswith(EVENT_MARK)
        )
        if self.step_log is not None:
            self.step_log.write(f"# {self.current} test case {tally.test_cases}\n")
            self.step_log.write(f"# status {status}\n")
            self.step_log.write(observation.representation.rstrip("\n") + "\n")
            for note in observation.metadata.notes:
                self.step_log.write(f"{note}\n")
        if self.config.progress and tally.test_cases % PROGRESS_EVERY == 0:
            self.write_progress()

    def write_progress(self) -> None:
        tally = self.tally()
        line = {
            "nodeid": self.current,
            "test_cases": tally.test_cases,
            "behaviours": sorted(tally.behaviours),
            "failed": tally.by_status.get("failed", 0),
        }
        assert self.config.progress is not None
        with Path(self.config.progress).open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, sort_keys=True) + "\n")

    def record(self, report: pytest.TestReport) -> None:
        """One test's outcome (its call, or a failed setup or teardown)."""
        text = report.longreprtext if report.failed else ""
        message = ""
        crash = getattr(report.longrepr, "reprcrash", None)
        if crash is not None:
            message = str(crash.message).splitlines()[0] if crash.message else ""
        tally = self.tallies.get(report.nodeid, TestTally())
        self.results.append(
            {
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "duration_s": report.duration,
                "message": message,
                "counterexample": BLOB_MARK in text,
                "flaky": report.failed and any(mark in text for mark in FLAKY_MARKS),
                "blob": next(
                    (line.strip() for line in text.splitlines() if BLOB_MARK in line),
                    None,
                ),
                "replay": [
                    str(value)
                    for name, value in report.user_properties
                    if name == REPLAY_PROPERTY
                ],
                "test_cases": tally.test_cases,
                "by_status": dict(sorted(tally.by_status.items())),
                "by_phase": dict(sorted(tally.by_phase.items())),
                "behaviours": sorted(tally.behaviours),
            }
        )

    def finish(self, exitstatus: int) -> None:
        if self.step_log is not None:
            self.step_log.close()
        if self.config.progress and self.current in self.tallies:
            self.write_progress()
        if self.config.result:
            document = {"exitstatus": exitstatus, "tests": self.results}
            if self.config.redis_url is not None:
                database = settings().database
                document["database_fallback"] = getattr(
                    database, "fallback_reason", None
                )
            Path(self.config.result).write_text(
                json.dumps(document, sort_keys=True, indent=2) + "\n", encoding="utf-8"
            )


_recorder: _Recorder | None = None


def seed_fresh_seeds(seed: int) -> None:
    """Make the seeds Hypothesis draws for each test follow from `seed`.

    `--hypothesis-seed` would fix them too, but Hypothesis then turns the example
    database off, and a fuzz batch needs both. Hypothesis 6.170.17 draws each
    test's seed from a per-thread `Random` that it creates on first use; we
    create it. The version is pinned, and a Hypothesis without that attribute
    is an error here, never a silently unseeded batch.
    """
    from hypothesis import core  # noqa: PLC0415 - the one use of this internal

    if not hasattr(core.threadlocal, "_hypothesis_global_random"):
        raise RuntimeError("this Hypothesis cannot seed a batch that uses a database")
    core.threadlocal._hypothesis_global_random = random.Random(seed)  # noqa: S311, SLF001 - seeds, not secrets; see above


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001 - hook signature
    """Load the run's settings and start counting (only under a trust command)."""
    global _recorder  # noqa: PLW0603 - one recorder per pytest process
    text = os.environ.get(RUN_ENV)
    if not text:
        return
    run = RunConfig.from_env(text)
    overrides = run.settings_overrides()
    if run.database_dir is not None:
        from ci.trust.database import open_database  # noqa: PLC0415 - needs redis

        overrides["database"] = open_database(run.redis_url, Path(run.database_dir))
    derived_profile(PROFILE_NAME, run.base, **overrides)
    settings.load_profile(PROFILE_NAME)
    # Branch tracing would slow Python 3.11 several times over; nothing here
    # needs it (the module documents this switch for that purpose).
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    if run.fresh_seeds is not None:
        seed_fresh_seeds(run.fresh_seeds)
    _recorder = _Recorder(run)
    observability.add_observability_callback(_recorder.observe)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Attribute the test cases that follow to this test."""
    if _recorder is not None:
        _recorder.current = item.nodeid
    return (yield)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Record the call's outcome (or a failed setup or teardown)."""
    if _recorder is None:
        return
    wanted = report.when == "call" or report.failed
    skipped_at_setup = report.when == "setup" and report.skipped
    if wanted or skipped_at_setup:
        _recorder.record(report)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:  # noqa: ARG001 - hook signature
    """Write the result file and close the step log."""
    if _recorder is not None:
        _recorder.finish(int(exitstatus))
