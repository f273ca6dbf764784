"""Start one `python -m pytest` process under `ci.trust.plugin`; read its result.

Processes are started, tracked and ended by `ci.processes`, the runner the
mutation sweep uses too.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Final

from ci import processes
from ci.replay.artifacts import folder_of_replay_line, recorded_against
from ci.replay.codec import dataclass_codec
from ci.trust.plugin import RUN_ENV, RunConfig
from stateful.stats import STATS_ENV

REPO_ROOT: Final[Path] = Path(__file__).resolve().parents[2]
PYTEST_OPTIONS: Final[tuple[str, ...]] = (
    "-p",
    "ci.trust.plugin",
    "-p",
    "no:cacheprovider",
    "-q",
    "--no-header",
    "-rN",
)
RUN_TIMEOUT_S: Final[int] = 6 * 60 * 60
STOP_GRACE_S: Final[int] = processes.STOP_GRACE_S


@dataclass(frozen=True)
class TestResult:
    """One test's outcome in one pytest process."""

    nodeid: str
    outcome: str  # passed, failed or skipped
    duration_s: float
    message: str  # the failure's first line
    counterexample: bool  # Hypothesis reported a reproduction blob
    flaky: bool  # Hypothesis reported a failure that did not reproduce
    blob: str | None
    replay: tuple[str, ...]  # `python -m ci.replay FOLDER` lines (artifacts)
    test_cases: int
    behaviours: tuple[str, ...]

    @classmethod
    def from_json(cls, entry: Mapping[str, Any]) -> TestResult:
        """Read one entry of the plugin's result file: these fields, by their types."""
        kept = {field.name: entry[field.name] for field in fields(cls)}
        result: TestResult = _decode_result(kept, "tests[]")
        return result


_, _decode_result = dataclass_codec(TestResult, {})


@dataclass(frozen=True)
class PytestRun:
    """A finished pytest process."""

    returncode: int
    tests: tuple[TestResult, ...]
    output: str
    database_fallback: str | None = None

    def test(self, nodeid: str) -> TestResult | None:
        """The result of `nodeid`, if it ran."""
        return next((test for test in self.tests if test.nodeid == nodeid), None)


@dataclass(frozen=True)
class Artifact:
    """The artifact folder a failing run left, and its `meta.json`."""

    folder: Path
    meta: dict[str, Any]

    @property
    def canary(self) -> str | None:
        """The canary the run was against, or None (the crate or the model)."""
        against = recorded_against(self.meta)
        return (
            against.removeprefix("canary:") if against.startswith("canary:") else None
        )


def artifact(replay_line: str) -> Artifact | None:
    """The artifact a `python -m ci.replay FOLDER` line names, if it has its meta."""
    folder = REPO_ROOT / folder_of_replay_line(replay_line)
    meta_file = folder / "meta.json"
    if not meta_file.exists():
        return None
    return Artifact(folder, json.loads(meta_file.read_text(encoding="utf-8")))


def pytest_command(
    nodeids: Sequence[str], seed: int | None, python: str = sys.executable
) -> list[str]:
    """The command line of one run."""
    command = [python, "-m", "pytest", *PYTEST_OPTIONS, *nodeids]
    if seed is not None:
        command.append(f"--hypothesis-seed={seed}")
    return command


def start(
    nodeids: Sequence[str],
    config: RunConfig,
    work: Path,
    *,
    seed: int | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
) -> subprocess.Popen[str]:
    """Start the pytest process (in its own process group); output to `work`."""
    environment = {**os.environ, **(env or {}), RUN_ENV: config.to_env()}
    # A gate run's statistics are the gate's tests, not the runs they start.
    environment.pop(STATS_ENV, None)
    with (work / "pytest.log").open("w", encoding="utf-8") as log:
        return processes.spawn(
            pytest_command(nodeids, seed, python), REPO_ROOT, environment, log
        )


def stop(process: subprocess.Popen[str]) -> None:
    """End a started run and everything it started (its own process group)."""
    processes.stop(process, STOP_GRACE_S)


def stop_all() -> None:
    """End every run this process started and has not collected."""
    processes.stop_all(STOP_GRACE_S)


def stop_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so a command's cleanup runs."""

    def interrupt(signum: int, frame: object) -> None:  # noqa: ARG001 - handler signature
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)


def collect(process: subprocess.Popen[str], work: Path) -> PytestRun:
    """Wait for a started run and read its result file."""
    returncode = process.wait()
    processes.forget(process)
    output = (work / "pytest.log").read_text(encoding="utf-8", errors="replace")
    result_file = work / "result.json"
    if not result_file.exists():
        return PytestRun(returncode, (), output)
    document = json.loads(result_file.read_text(encoding="utf-8"))
    return PytestRun(
        returncode=returncode,
        tests=tuple(TestResult.from_json(test) for test in document["tests"]),
        output=output,
        database_fallback=document.get("database_fallback"),
    )


def with_files(config: RunConfig, work: Path) -> RunConfig:
    """`config` writing its result (and progress) into `work`."""
    return replace(
        config,
        result=str(work / "result.json"),
        progress=str(work / "progress.jsonl"),
    )


def run(
    nodeids: Sequence[str],
    config: RunConfig,
    *,
    seed: int | None = None,
    env: Mapping[str, str] | None = None,
    python: str = sys.executable,
    work: Path | None = None,
) -> PytestRun:
    """Run the tests to the end in a fresh interpreter and return what they did."""
    with tempfile.TemporaryDirectory(prefix="verify-run-") as scratch:
        folder = work or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        process = start(
            nodeids,
            with_files(config, folder),
            folder,
            seed=seed,
            env=env,
            python=python,
        )
        try:
            process.wait(timeout=RUN_TIMEOUT_S)
        finally:
            stop(process)
        return collect(process, folder)
