"""Counterexample artifacts: one folder per failure, and a line to paste.

When a test fails after a machine's final replay was tracked (`stateful.capture`),
this pytest plugin (loaded with `-p ci.replay.artifacts`) writes

    <root>/<test>/<utc-stamp>/
        trace.json      the failing program, replayable without Hypothesis
        minimal.json    the same failure with steps deleted (`ci/replay/minimize.py`)
        repro.rs        the minimized trace (else the trace) as a self-contained Rust
                        test of the crate (`ci/replay/rust/`), or why it cannot be one
        program.py      the program Hypothesis printed, one `state.RULE(...)` line per
                        rule, as a script that reruns it against the build it
                        names (`ci/replay/program.py`)
        failure.txt     the whole failure: message, notes, traceback, captured output
        meta.json       test, machine, what it ran against, failing check, the
                        Hypothesis settings, git commit, Hypothesis, crate and Python
                        versions, the `@reproduce_failure` blob and the seed if any
    <root>/<test>/latest -> <utc-stamp>

and ends the pytest log with `python -m ci.replay <root>/<test>/<stamp>`, followed
by `# as a Rust test: <root>/<test>/<stamp>/repro.rs`. The root
is `ci/artifacts/` unless `VERIFY_ARTIFACTS_DIR` names another (the gate sets
it). The stamp is the only wall-clock read in the suite, made here and nowhere
else; tests pass their own stamp or do not depend on its value.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import traceback
import typing
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import hypothesis
import pytest
from hypothesis import settings

from ci.replay.program import crate_versions
from stateful import capture

if TYPE_CHECKING:
    from collections.abc import Generator

    from ci.replay.trace import Factory, Trace
    from stateful.capture import FailedHistory, FinalRun

ARTIFACTS_ENV: Final[str] = "VERIFY_ARTIFACTS_DIR"
REPO_ROOT: Final[Path] = Path(__file__).resolve().parents[2]
DEFAULT_ROOT: Final[Path] = REPO_ROOT / "ci" / "artifacts"
LATEST: Final[str] = "latest"
STAMP_ATTEMPTS_MAX: Final[int] = 100
GIT_TIMEOUT_S: Final[int] = 10
REPLAY_PROPERTY: Final[str] = "replay"
MINIMAL_FILE: Final[str] = "minimal.json"
REPRO_FILE: Final[str] = "repro.rs"
PROGRAM_FILE: Final[str] = "program.py"
MINIMIZE_STEPS_MAX: Final[int] = 2_000
"""Longer failing programs are not minimized when the artifact is written."""
MINIMIZE_REPLAYS_MAX: Final[int] = 500
"""The writer's minimization budget; `python -m ci.replay.minimize` allows more."""

_BLOB = re.compile(r"@reproduce_failure\('(?P<version>[^']+)', b'(?P<blob>[^']*)'\)")
_SEED = re.compile(r"@seed\((?P<seed>\d+)\)|--hypothesis-seed=(?P<flag>\d+)")
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Reproduction:
    """What Hypothesis printed to rerun the failure itself."""

    decorator: str | None
    hypothesis_version: str | None
    blob: str | None
    seed: int | None


def artifacts_root() -> Path:
    """Where artifacts go: `VERIFY_ARTIFACTS_DIR`, else `ci/artifacts/`."""
    configured = os.environ.get(ARTIFACTS_ENV)
    return Path(configured) if configured else DEFAULT_ROOT


def folder_name_for(nodeid: str) -> str:
    """A file-system-safe folder name for a test (its name with parameters)."""
    name = nodeid.rsplit("::", 1)[-1]
    return _NAME_UNSAFE.sub("-", name).strip("-") or "test"


def utc_stamp() -> str:
    """Now, in UTC, to the microsecond: the suite's one wall-clock read."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")


def reproductions(text: str) -> list[Reproduction]:
    """Each `@reproduce_failure(...)` in the failure output, with any seed."""
    seed_match = _SEED.search(text)
    seed = None
    if seed_match is not None:
        seed = int(seed_match.group("seed") or seed_match.group("flag"))
    found = [
        Reproduction(
            decorator=match.group(0),
            hypothesis_version=match.group("version"),
            blob=match.group("blob"),
            seed=seed,
        )
        for match in _BLOB.finditer(text)
    ]
    return found or [Reproduction(None, None, None, seed)]


def program_lines(notes: Sequence[str]) -> list[str]:
    """The program Hypothesis printed, from an exception's notes.

    Program steps start with `state` (a step may span lines); the machine's
    own notes (`# step n: ...`, `config: ...`) are dropped, since trace.json
    holds each step with its outcome.
    """
    return [note for note in notes if note.startswith("state")]


def program_text(
    run: FinalRun,
    subject: str,
    against: str,
    program: Sequence[str],
    comments: Sequence[str],
) -> str:
    """`program.py`: the printed program as a script, or as comments with why not."""
    from ci.replay.program import ProgramError, script  # noqa: PLC0415 - on failure only

    why = "the final replay did not name its machine class"
    if run.machine_class is not None:
        try:
            return script(
                machine=run.machine_class,
                subject=subject,
                against=against,
                factory=run.harness.factory,
                program=program,
                build=crate_versions(),
                comments=comments,
            )
        except ProgramError as error:
            why = str(error)
    lines = [*comments, f"It cannot be rerun as a script: {why}.", *program]
    return "".join(f"# {line}\n" for text in lines for line in text.splitlines())


def exception_notes(error: BaseException) -> list[list[str]]:
    """The notes of each failure (one list per member of an exception group)."""
    if isinstance(error, BaseExceptionGroup):
        return [
            notes for member in error.exceptions for notes in exception_notes(member)
        ]
    return [list(getattr(error, "__notes__", []))]


def git_state() -> tuple[str, bool | None]:
    """The checked-out commit and whether the tree differs from it."""
    try:
        commit = _git("rev-parse", "HEAD").strip()
        status = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return _copied_git_state()
    return commit, bool(status.strip())


def _git(*arguments: str) -> str:
    return subprocess.run(  # noqa: S603 - fixed git subcommands
        ["git", *arguments],  # noqa: S607 - git from PATH, as a developer runs it
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=GIT_TIMEOUT_S,
    ).stdout


COPIED_FROM = ".verify-copied-from.json"
"""Written by `ci.build_local` into a tree copy: the checkout's git state."""


def _copied_git_state() -> tuple[str, bool | None]:
    """A tree copy has no .git: the state of the checkout it was copied from."""
    try:
        copied = json.loads((REPO_ROOT / COPIED_FROM).read_text(encoding="utf-8"))
        return str(copied["git_commit"]), copied["git_dirty"]
    except (OSError, ValueError, KeyError, TypeError):
        return "unknown", None


def profile_name(profile: str | None) -> str:
    """The Hypothesis profile in force: pytest's option, else the loaded one."""
    return profile or settings.get_current_profile_name()


BUILD_TREE_ENV = "VERIFY_BUILD_TREE"
"""Set by `ci.gate --source`: the Python tree whose binding the run used."""


OLD_WORDS: Final[dict[str, str]] = {"sut": "against", "native": "crate"}  # old spelling
"""What artifacts written before the renames say, and the word now."""


def recorded_against(meta: dict[str, Any]) -> str:
    """The system an artifact's `meta.json` says it ran against (`""`: unsaid).

    Artifacts written before the renames keep loading: their key and the
    crate's label are read through `OLD_WORDS`.
    """
    old = {new: old for old, new in OLD_WORDS.items()}
    label = str(meta.get("against", meta.get(old["against"], "")))
    first, _, rest = label.partition(" ")
    return " ".join(filter(None, (OLD_WORDS.get(first, first), rest)))


def replay_command(path: Path, against: str = "") -> str:
    """`python -m ci.replay <path>`, relative to the working directory if inside.

    `against` is the artifact's system-under-test label: a canary's replay names it
    (`--canary NAME`), so that the line reproduces what the machine saw.
    """
    canary = against.removeprefix("canary:") if against.startswith("canary:") else ""
    flag = f" --canary {canary}" if canary else ""
    tree = os.environ.get(BUILD_TREE_ENV)
    if tree:  # a gate run against a local source tree: replay with its build
        return f"cd {tree} && python -m ci.replay {path.resolve()}{flag}"
    try:
        shown = path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = path
    return f"python -m ci.replay {shown}{flag}"


def folder_of_replay_line(line: str) -> Path:
    """The artifact folder a printed `python -m ci.replay PATH [--canary N]` names.

    PATH is the folder itself or a trace inside it (`minimal.json`); a line of a
    gate run on a source tree starts with `cd TREE && `.
    """
    words = line.split()
    path = Path(words[words.index("ci.replay") + 1])
    return path.parent if path.suffix == ".json" else path


def artifact_replay(folder: Path) -> str:
    """The line to paste for an artifact: its minimized trace when there is one."""
    try:
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, json.JSONDecodeError):
        return replay_command(folder)
    minimal = folder / MINIMAL_FILE
    target = minimal if minimal.is_file() else folder
    return replay_command(target, recorded_against(meta))


def artifact_repro(folder: Path) -> str:
    """`# as a Rust test: <folder>/repro.rs`: the line after the replay line."""
    repro = folder / REPRO_FILE
    if not repro.is_file():  # a concurrent history has no Rust export
        return f"# the whole history: {folder / 'history.json'}"
    try:
        shown = repro.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = repro.resolve()
    return f"# as a Rust test: {shown}"


def _new_folder(test_dir: Path, stamp: str) -> Path:
    """A fresh `<stamp>` folder (suffixed if a failure already took that stamp)."""
    for attempt in range(STAMP_ATTEMPTS_MAX):
        name = stamp if attempt == 0 else f"{stamp}-{attempt}"
        folder = test_dir / name
        try:
            folder.mkdir(parents=True)
        except FileExistsError:
            continue
        return folder
    raise RuntimeError(f"{STAMP_ATTEMPTS_MAX} artifact folders named {stamp} exist")


def _finish(test_dir: Path, folder: Path, meta: dict[str, Any]) -> Path:
    """Write `meta.json` with the checkout's and the tools' versions; point `latest`."""
    commit, dirty = git_state()
    meta |= {
        "git_commit": commit,
        "git_dirty": dirty,
        "hypothesis_version": hypothesis.__version__,
        "python_version": platform.python_version(),
    } | crate_versions()
    (folder / "meta.json").write_text(
        json.dumps(meta, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    )
    point_latest(test_dir, folder)
    return folder


def point_latest(test_dir: Path, folder: Path) -> None:
    """Atomically repoint `<test>/latest` at `folder` (a relative symlink)."""
    staging = test_dir / f".{LATEST}.{os.getpid()}"
    staging.unlink(missing_ok=True)
    staging.symlink_to(folder.name, target_is_directory=True)
    staging.replace(test_dir / LATEST)


def _write_minimal(trace: Trace, factory: Factory, folder: Path) -> int | None:
    """Write `minimal.json` (steps deleted while it still fails); its length."""
    from ci.replay.minimize import MinimizeError, minimize  # noqa: PLC0415 - on failure only
    from ci.replay.trace import save  # noqa: PLC0415 - idem

    if len(trace.steps) > MINIMIZE_STEPS_MAX:
        return None
    try:
        minimal, _ = minimize(trace, factory, MINIMIZE_REPLAYS_MAX)
    except MinimizeError:  # no replayable failure, or the budget ran out
        return None
    save(minimal, folder / MINIMAL_FILE)
    return len(minimal.steps)


def _write_repro(folder: Path) -> None:
    """Write `repro.rs`: the minimized trace (else the trace) as a Rust test.

    A trace the built crate cannot express (the manual clock on a crate
    without one) leaves a `repro.rs` that says why, in one comment line.
    """
    from ci.replay.envelope import trace_path  # noqa: PLC0415 - on failure only
    from ci.replay.rust.emit import (  # noqa: PLC0415 - idem
        ExportError,
        export,
        export_name,
        probed_capabilities,
    )
    from ci.replay.trace import load  # noqa: PLC0415 - idem

    minimal = folder / MINIMAL_FILE
    source = minimal if minimal.is_file() else trace_path(folder)
    try:
        text = export(load(source), export_name(source), probed_capabilities)
    except ExportError as error:
        text = f"// {source.name} cannot be written as a Rust test: {error}\n"
    (folder / REPRO_FILE).write_text(text, encoding="utf-8")


def against_label(subject: str, factory: object) -> str:
    """A readable name for a system-under-test factory (a canary by its name)."""
    from ci.replay.trace import kind_of  # noqa: PLC0415 - on failure only

    try:
        canaries = kind_of(subject).canaries()
    except ImportError:  # the affinity canaries need the binding
        canaries = {}
    for name, canary in sorted(canaries.items()):
        if canary is factory:
            return f"canary:{name}"
    module = getattr(factory, "__module__", "?")
    qualname = getattr(factory, "__qualname__", repr(factory))
    return f"{module}.{qualname}"


def write_artifact(
    run: FinalRun,
    test: str,
    failure_text: str,
    notes: Sequence[str],
    *,
    root: Path | None = None,
    stamp: str | None = None,
    profile: str | None = None,
    raised: str = "",
) -> Path:
    """Write one failure's folder and repoint `latest`; return the folder.

    `raised` is the exception's one-line summary, named as the failing check
    when the machine failed outside `_run` (an invariant method, say).
    """
    from ci.replay.trace import kind_of, save  # noqa: PLC0415 - only when writing

    test_dir = (root or artifacts_root()) / folder_name_for(test)
    folder = _new_folder(test_dir, stamp or utc_stamp())
    failed = run.failed
    harness = run.harness
    subject = harness.subject.name
    against = against_label(subject, harness.factory)
    where = "" if failed is None else f" at step {failed.step} ({failed.check})"
    description = f"Counterexample from {test} against {against}{where}."
    if failed is not None:
        description += f" {failed.difference}"
    trace = kind_of(subject).record_harness(harness, description)
    save(trace, folder)
    factory = harness.factory
    assert factory is not None, "a harness chooses its factory when it is built"
    minimal_steps = _write_minimal(trace, factory, folder)
    _write_repro(folder)

    reproduction = reproductions(failure_text)[0]
    comments = [
        f"The program Hypothesis printed for {test}, as a script.",
        "Replay it without Hypothesis: " + replay_command(folder, against),
    ]
    if minimal_steps is not None:
        comments.append(
            f"A {minimal_steps}-step version: "
            + replay_command(folder / MINIMAL_FILE, against)
        )
    comments.append(f"The same as a Rust test of the crate: {REPRO_FILE}")
    if reproduction.decorator is not None:
        comments.append(
            f"Rerun it under Hypothesis {reproduction.hypothesis_version}: "
            f"decorate the test with {reproduction.decorator}"
        )
    (folder / PROGRAM_FILE).write_text(
        program_text(run, subject, against, program_lines(notes), comments)
    )
    (folder / "failure.txt").write_text(failure_text)

    meta = {
        "test": test,
        "machine": run.machine,
        "subject": subject,
        "against": against,
        "stamp": folder.name,
        "replay": replay_command(folder, against),
        "shrunk_steps": len(trace.steps),
        "minimal_steps": minimal_steps,
        "failing_check": {"check": "raised", "difference": raised}
        if failed is None
        else {
            "rule": failed.rule,
            "step": failed.step,
            "operation": repr(failed.op),
            "check": failed.check,
            "difference": failed.difference,
            "violated": list(failed.violated),
        },
        "settings": {"name": profile_name(profile)} | run.settings,
        "reproduce_failure": reproduction.decorator,
        "blob": reproduction.blob,
        "seed": reproduction.seed,
    }
    return _finish(test_dir, folder, meta)


def write_artifacts(
    runs: Sequence[FinalRun],
    test: str,
    error: BaseException,
    captured: str = "",
    *,
    root: Path | None = None,
    stamp: str | None = None,
    profile: str | None = None,
) -> list[Path]:
    """One folder per tracked final replay of a failed test."""
    formatted = "".join(traceback.format_exception(error))
    text = formatted + (f"\n---- captured output ----\n{captured}" if captured else "")
    notes = exception_notes(error)
    decorators = reproductions(text)
    members = (
        list(error.exceptions) if isinstance(error, BaseExceptionGroup) else [error]
    )
    folders = []
    for index, run in enumerate(runs):
        own_error = members[index] if len(members) == len(runs) else error
        raised = traceback.format_exception_only(own_error)[0].strip()
        # Hypothesis reports distinct failures in the order it replayed them.
        own_notes = notes[index] if len(notes) == len(runs) else notes[-1]
        own_text = text
        if len(decorators) == len(runs) and decorators[index].decorator is not None:
            own_text = f"{text}\n{decorators[index].decorator}\n"
        folders.append(
            write_artifact(
                run,
                test,
                own_text,
                own_notes,
                root=root,
                stamp=stamp,
                profile=profile,
                raised=raised,
            )
        )
    return folders


def write_history_artifact(
    failed: FailedHistory,
    test: str,
    failure_text: str,
    *,
    root: Path | None = None,
    stamp: str | None = None,
    profile: str | None = None,
) -> Path:
    """A failing concurrent history's folder: whole, shortest prefix, metadata."""
    from ci.replay.history import READINGS, write_failure  # noqa: PLC0415
    from stateful.concurrent_affinity import ReplicaApply  # noqa: PLC0415

    test_dir = (root or artifacts_root()) / folder_name_for(test)
    folder = _new_folder(test_dir, stamp or utc_stamp())
    history = failed.history
    description = (
        f"Concurrent history from {test}: {history.threads} threads, "
        f"{len(history.events)} calls, failed {failed.check}."
    )
    assert failed.reading in READINGS, failed.reading
    reading = typing.cast("ReplicaApply", failed.reading)
    minimal, cut = write_failure(history, folder, description, reading)
    (folder / "failure.txt").write_text(failure_text)
    meta = {
        "test": test,
        "subject": "affinity-history",
        "against": "crate",
        "stamp": folder.name,
        "replay": replay_command(minimal),
        "shrunk_steps": len(history.events),
        "minimal_steps": len(cut.events),
        "threads": history.threads,
        "failing_check": {"check": failed.check, "reading": reading},
        "settings": {"name": profile_name(profile)} | failed.settings,
    }
    return _finish(test_dir, folder, meta)


# ---- the pytest plugin -------------------------------------------------------

_replay_lines: list[str] = []


def pytest_runtest_setup(item: pytest.Item) -> None:  # noqa: ARG001 - hook signature
    """Each test starts with no remembered final replay."""
    capture.reset()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """After a failed test that tracked a final replay, write its artifacts."""
    report = yield
    runs = capture.final_runs()
    histories = capture.failed_histories()
    failed = call.when == "call" and call.excinfo is not None and report.failed
    if not failed or not (runs or histories):
        return report
    assert call.excinfo is not None
    capture.reset()
    option = item.config.getoption("hypothesis_profile", default=None)
    profile = option if isinstance(option, str) else None
    folders = write_artifacts(
        runs, item.nodeid, call.excinfo.value, report.capstdout, profile=profile
    )
    text = "".join(traceback.format_exception(call.excinfo.value))
    folders += [
        write_history_artifact(each, item.nodeid, text, profile=profile)
        for each in histories
    ]
    commands = [
        f"{artifact_replay(folder)}\n{artifact_repro(folder)}" for folder in folders
    ]
    for command in commands:
        report.user_properties.append((REPLAY_PROPERTY, command))
    report.sections.append(("counterexample artifacts", "\n".join(commands)))
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect replay commands (also from xdist workers' reports)."""
    _replay_lines.extend(
        str(value) for name, value in report.user_properties if name == REPLAY_PROPERTY
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """End the log with one pasteable replay line per counterexample.

    Each is followed by a comment line naming the counterexample's `repro.rs`.

    `pytest_unconfigure` runs after the session's final summary line, so these
    really are the last lines a developer sees.
    """
    if not _replay_lines:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    lines = sorted(set(_replay_lines))
    _replay_lines.clear()
    if reporter is None:
        return
    reporter.write_sep("=", "replay the counterexamples")
    for line in lines:
        reporter.write_line(line)
