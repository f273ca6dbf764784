"""Every `python -m` command refuses bad arguments and unwritable outputs in one line.

The contract (README, "Two commands"): a usage error is exit 2 with exactly
one line on stderr, `MODULE: error: WHY` (`MODULE merge: error:` for a merge),
never a traceback, and a refused command changes no file.
Each case below was, before its fix, a traceback, argparse's multi-line usage,
or a command that ran with an argument it ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from command_support import run_module

from ci.cli import UsageError, output_file, output_folder

COMMAND_TIMEOUT_S = 120
NOT_A_FOLDER = "{file}/below"
"""An output path under a regular file: no folder can be made there."""
TRACE = str(
    Path(__file__).resolve().parent.parent / "ci/replay/corpus/b16_virtual_ttl.json"
)
"""A corpus trace (it agrees, so it needs no minimizing)."""
HISTORY = (
    Path(__file__).resolve().parent.parent
    / "ci/replay/corpus/histories/replica_update_races_a_commit.json"
)
"""A corpus history, lengthened past the cap of calls."""

CASES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    # An output never overwrites an input (it is, contains or lies inside one).
    (
        "ci.replay",
        ("{file}", "--emit", "rust", "--out", "{file}"),
        "--out {file}: is the input {file}",
    ),
    (
        "ci.replay.minimize",
        ("{file}", "--canary", "late_expiry", "--out", "{file}"),
        "--out {file}: is the input {file}",
    ),
    (
        "ci.soak",
        ("merge", "{latin1_crate}", "--out", "{latin1_crate}/merged"),
        "lies inside the input",
    ),
    ("ci.mutants", ("merge", "{latin1_crate}", "--out", "{folder}"), "contains the"),
    (
        "ci.mutants",
        ("summary", "{folder}", "--out", "{folder}/report.json"),
        "--out {folder}/report.json: is the input {folder}/report.json",
    ),
    (
        "ci.soak",
        ("summary", "{folder}", "--out", "{folder}/report.json"),
        "--out {folder}/report.json: is the input {folder}/report.json",
    ),
    # No prefix stands for an option.
    ("ci.probe", ("--tabl",), "unrecognized arguments: --tabl"),
    ("ci.replay.corpus", ("build", "--chec"), "unrecognized arguments: --chec"),
    ("properties", ("--markdow",), "unrecognized arguments: --markdow"),
    # Special files are refused before they are opened (a FIFO would block).
    ("ci.replay", ("{fifo}",), "{fifo}: a FIFO, not a regular file"),
    ("ci.queue_parity", ("--compare", "{fifo}"), "a FIFO, not a regular file"),
    ("ci.soak", ("merge", "{fifo}"), "merge {fifo}: a FIFO, not a folder"),
    ("ci.mutants", ("merge", "{file}"), "a regular file, not a folder"),
    # Kernel file systems are no place for artifacts or work folders.
    ("ci.soak", ("--seeds", "1", "--artifacts", "/proc/x/y"), "lies in /proc"),
    ("ci.determinism", ("--artifacts", "/proc/x/y"), "lies in /proc, a kernel"),
    ("ci.fuzz", ("--workers", "1", "--artifacts", "/sys/x"), "lies in /sys"),
    ("ci.mutants", ("--list", "--work-dir", "/proc/x"), "lies in /proc"),
    # Options a mode does not use.
    ("ci.mutants", ("--smoke", "--ids", "OA001"), "--smoke does not use --ids"),
    ("ci.mutants", ("--smoke", "--shard", "1/2"), "--smoke does not use --shard"),
    ("ci.mutants", ("--smoke", "--out", "{folder}/o"), "--smoke does not use --out"),
    (
        "ci.replay.corpus.scheduler_scenarios",
        ("--check", "--catch-canaries"),
        "drop --catch-canaries",
    ),
    (
        "ci.replay.minimize",
        (TRACE, "--reaper-count", "atomic", "--out", "{folder}/m.json"),
        "--reaper-count applies to ci.replay's concurrent histories",
    ),
    (
        "ci.fuzz",
        ("--replay", "affinity", "--db", "{folder}/no-db"),
        "no example database there",
    ),
    ("ci.gate", ("--job", "pr", "stray"), "unexpected argument 'stray'"),
    # Caps on the work a file describes, stated in the refusal.
    ("ci.queue_parity", ("--compare", "{many_programs}"), "exceed the cap of 20000"),
    ("ci.replay", ("{long_history}",), "151 calls exceed the cap of 128 per history"),
    # Digits of other scripts are no number; control characters are escaped.
    ("ci.soak", ("--seeds", "\u0663"), "not a whole number: '\u0663'"),
    ("ci.fuzz", ("--workers", "1", "--seed", "\u0663"), "not a whole number"),
    ("ci.replay", ("{file}\nx\x1b",), "a-file\\nx\\x1b: no such file"),
    ("ci.gate", ("--job", "pr", "-n", "0x"), "argument -n: not a whole number"),
    ("ci.gate", ("--job", "pr", "-n", "-2"), "argument -n: must be at least 1"),
    (
        "ci.gate",
        ("--job", "pr", "--junit", NOT_A_FOLDER + "/junit.xml"),
        "is not a folder",
    ),
    ("ci.gate", ("--job", "pr", "--artifacts", NOT_A_FOLDER), "is not a folder"),
    ("ci.bench.affinity", ("--examples", "0"), "must be at least 1: 0"),
    ("ci.bench.affinity", ("extra",), "unrecognized arguments: extra"),
    ("ci.bench.affinity", ("--rounds", "x"), "not a whole number: 'x'"),
    ("ci.bench.affinity", ("--workers", "0"), "must be at least 1: 0"),
    ("ci.bench.queue", ("extra",), "unrecognized arguments: extra"),
    ("ci.bench.scheduler", ("extra",), "unrecognized arguments: extra"),
    ("ci.bench", ("nosuch",), "argument subject: invalid choice: 'nosuch'"),
    ("ci.bench", ("queue", "--examples", "0"), "must be at least 1: 0"),
    ("ci.production", ("--markdown",), "unrecognized arguments: --markdown"),
    ("properties", ("extra",), "unrecognized arguments: extra"),
    ("ci.build_local", ("--bogus",), "unrecognized arguments: --bogus"),
    ("ci.build_local", ("--pinned", "--features", "manual-clock"), "drop --features"),
    ("ci.build_local", ("--source", "{file}"), "{file} is not a folder"),
    (
        "ci.build_local",
        ("--source", "{file}", "--into", NOT_A_FOLDER),
        "--into {file}/below: {file} is not a folder",
    ),
    ("ci.determinism", ("--hash-seeds", "1,1"), "values must differ: '1,1'"),
    ("ci.determinism", ("--hash-seeds", "7,07"), "values must differ"),
    (
        "ci.determinism",
        ("--tests", "", "--failing", "canary-late-expiry", "--examples", "5"),
        "--examples sizes the passing tests' runs: there are none",
    ),
    (
        "ci.determinism",
        ("--tests", "affinity", "--artifacts", NOT_A_FOLDER),
        "--artifacts {file}/below: {file} is not a folder",
    ),
    (
        "ci.fuzz",
        ("--workers", "1", "--artifacts", NOT_A_FOLDER),
        "--artifacts {file}/below: {file} is not a folder",
    ),
    ("ci.fuzz", ("--replay", "affinity", "--examples", "5"), "drop --examples"),
    ("ci.fuzz", ("--replay", "affinity", "--seed", "0"), "drop --seed"),
    ("ci.fuzz", ("--replay", "affinity", "--for", "1m"), "drop --for"),
    (
        "ci.queue_parity",
        ("--record", NOT_A_FOLDER + "/parity.json"),
        "--record {file}/below/parity.json: {file} is not a folder",
    ),
    ("ci.queue_parity", ("--compare", "{file}", "--programs", "5"), "drop --programs"),
    ("ci.queue_parity", ("--compare", "{empty_record}"), "no programs recorded"),
    ("ci.queue_parity", ("--compare", "{latin1}"), "latin1.json: not UTF-8"),
    (
        "ci.queue_parity",
        ("--compare", "/dev/zero"),
        "a character device, not a regular",
    ),
    (
        "ci.queue_parity",
        ("--record", "{file}.json", "--programs", "20001"),
        "--programs must be at most 20000",
    ),
    (
        "ci.soak",
        ("--seeds", "1", "--artifacts", NOT_A_FOLDER),
        "--artifacts {file}/below: {file} is not a folder",
    ),
    (
        "ci.soak",
        ("merge", "{file}", "--out", NOT_A_FOLDER),
        "--out {file}/below: {file} is not a folder",
    ),
    (
        "ci.replay.minimize",
        (TRACE, "--against", "model", "--out", NOT_A_FOLDER + "/m.json"),
        "--out {file}/below/m.json: {file} is not a folder",
    ),
    (
        "ci.replay.minimize",
        (TRACE, "--against", "model", "--reading", "atomic"),
        "--reading applies to ci.replay's concurrent histories",
    ),
    (
        "ci.explore",
        ("--json", NOT_A_FOLDER + "/x.json"),
        "--json {file}/below/x.json: {file} is not a folder",
    ),
    (
        "ci.explore",
        ("--counterexamples", "--out", NOT_A_FOLDER),
        "--out {file}/below: {file} is not a folder",
    ),
    ("ci.explore", ("--out", "{file}"), "--out: the check command does not use it"),
    ("ci.explore", ("--bench", "--json", "x.json"), "the bench command does not"),
    ("ci.explore", ("--replay", "--settings", "ci"), "--settings: the replay command"),
    ("ci.explore", ("--picture", "--bound", "picture"), "draws its own bound"),
    ("ci.replay", ("{surrogate}",), "not valid Unicode (a lone surrogate): '\\ud800'"),
    ("ci.replay", ("{latin1}",), "latin1.json: not UTF-8 (byte 14: 0xe9)"),
    ("ci.replay", ("/dev/zero",), "/dev/zero: a character device, not a regular file"),
    (
        "ci.replay",
        (TRACE, "--emit", "rust", "--out", NOT_A_FOLDER + "/t.rs"),
        "--out {file}/below/t.rs: {file} is not a folder",
    ),
    (
        "ci.replay.corpus",
        ("add", TRACE, "--name", "x", "--corpus-dir", NOT_A_FOLDER),
        "--corpus-dir {file}/below: {file} is not a folder",
    ),
    ("ci.replay.minimize", ("{surrogate}", "--out", "{file}.min"), "lone surrogate"),
    (
        "ci.gate",
        ("--job", "pr", "--source", "{latin1_crate}"),
        "affinity.rs is not UTF-8 text",
    ),
    ("ci.mutants", ("--pytest-timeout", "nan"), "must be a finite number above 0"),
    ("ci.mutants", ("--pytest-timeout", "-1"), "must be a finite number above 0"),
    ("ci.mutants", ("--crate-timeout", "inf"), "must be a finite number above 0"),
    ("ci.mutants", ("--crate-timeout", "0"), "must be a finite number above 0"),
    ("ci.mutants", ("--pytest-options", '"-x'), "--pytest-options: No closing"),
    (
        "ci.mutants",
        ("--out", NOT_A_FOLDER),
        "--out {file}/below: {file} is not a folder",
    ),
    (
        "ci.mutants",
        ("merge", "{file}", "--out", NOT_A_FOLDER),
        "--out {file}/below: {file} is not a folder",
    ),
)
"""(module, arguments, what the one line says); `{file}` is a regular file."""


def _inputs(folder: Path) -> dict[str, Path]:
    """The files the cases name: `{file}` (plain text), bad records, and so on."""
    places = {
        "folder": folder,
        "fifo": folder / "fifo.json",
        "file": folder / "a-file",
        "empty_record": folder / "empty-parity.json",
        "latin1": folder / "latin1.json",
        "surrogate": folder / "surrogate.json",
        "latin1_crate": folder / "crate",
    }
    places["file"].write_text("not a folder\n")
    os.mkfifo(places["fifo"])
    places["many_programs"] = folder / "many.json"
    record = {"format": "queue-parity/1", "build": "b", "results": [[]] * 20_001}
    places["many_programs"].write_text(json.dumps(record))
    places["long_history"] = folder / "history.json"
    history = json.loads(HISTORY.read_text(encoding="utf-8"))
    history["steps"] = [
        {**history["steps"][index % len(history["steps"])], "index": index + 1}
        for index in range(151)
    ]
    places["long_history"].write_text(json.dumps(history))
    places["empty_record"].write_text(
        '{"format": "queue-parity/1", "build": "b", "results": []}\n'
    )
    places["latin1"].write_bytes(b'{"build": "caf\xe9"}\n')
    places["surrogate"].write_text('{"session_pool": ["\\ud800"]}\n')
    crate = places["latin1_crate"]
    for file in ("services/selection/affinity.rs", "scheduling/policy_queue.rs"):
        (crate / "src" / file).parent.mkdir(parents=True)
        (crate / "src" / file).write_bytes(b"pub fn caf\xe9() {}\n")
    (crate / "Cargo.toml").write_text('[package]\nname = "dynamo-kv-router"\n')
    return places


@pytest.mark.parametrize(
    ("module", "argv", "says"),
    [pytest.param(*case, id=f"{case[0]} {' '.join(case[1])}") for case in CASES],
)
def test_a_refused_command_says_why_in_one_line_and_changes_nothing(
    module: str, argv: tuple[str, ...], says: str, tmp_path: Path
) -> None:
    """Exit 2, one `MODULE: error:` line naming the problem, no traceback, no file."""
    places = _inputs(tmp_path)
    before = sorted(tmp_path.rglob("*"))

    completed = run_module(
        module,
        *[arg.format(**places) for arg in argv],
        timeout_s=COMMAND_TIMEOUT_S,
    )

    assert 2 == completed.returncode, completed.stderr
    assert 1 == len(completed.stderr.splitlines()), completed.stderr
    assert says.format(**places) in completed.stderr
    command = (
        f"{module} {argv[0]}" if argv[:1] in {("merge",), ("summary",)} else module
    )
    assert completed.stderr.startswith(f"{command}: error: "), completed.stderr
    assert "Traceback" not in completed.stdout + completed.stderr
    assert before == sorted(tmp_path.rglob("*"))


def test_an_output_folder_under_a_file_is_refused_naming_both(tmp_path: Path) -> None:
    """The message names the flag, the path asked for, and the file in the way."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")

    with pytest.raises(UsageError) as refused:
        output_folder(blocker / "out", "--out")

    assert f"--out {blocker / 'out'}: {blocker} is not a folder" == str(refused.value)


def test_an_output_file_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    """A file output cannot replace a folder."""
    with pytest.raises(UsageError) as refused:
        output_file(tmp_path, "--json")

    assert f"--json {tmp_path}: is a folder, not a file" == str(refused.value)


def test_outputs_that_can_be_made_are_accepted_and_nothing_is_created(
    tmp_path: Path,
) -> None:
    """A missing folder chain or an existing file passes; the check creates nothing."""
    existing = tmp_path / "report.json"
    existing.write_text("{}")

    assert tmp_path / "a" / "b" == output_folder(tmp_path / "a" / "b", "--out")
    assert existing == output_file(existing, "--json")
    assert tmp_path / "c" / "d.xml" == output_file(tmp_path / "c" / "d.xml", "--junit")
    assert [existing] == sorted(tmp_path.rglob("*"))


SHARD_REPORT = (
    Path(__file__).resolve().parent.parent
    / "tests/fixtures/mutants/20261204T130509Z-14of16/report.json"
)
"""A committed shard report of the mutation sweep, corrupted one field at a time."""


def _corrupt(report: dict[str, Any], change: str) -> None:
    match change:
        case "shard zero":
            report["shard"] = "0/16"
        case "line as text":
            report["mutants"][0]["line"] = "7"
        case "verdict field":
            report["mutants"][0]["ours"]["bogus"] = 1
        case "set as list":
            report["mutant_set"] = []
        case "seconds missing":
            del report["mutants_seconds"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ("shard zero", "shard: '0/16' is not K/N with 1 <= K <= N"),
        ("line as text", "mutants[0].line: '7' is not of the recorded type"),
        ("verdict field", "mutants[0].ours: "),
        ("set as list", "mutant_set: [] is not of the recorded type"),
        ("seconds missing", "mutants_seconds: missing"),
    ],
)
def test_a_malformed_shard_report_is_refused_naming_the_field(
    change: str, says: str, tmp_path: Path
) -> None:
    """ci.mutants merge: one line naming the file and the field, exit 2, no output."""
    report = json.loads(SHARD_REPORT.read_text(encoding="utf-8"))
    _corrupt(report, change)
    folder = tmp_path / "shard"
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps(report), encoding="utf-8")
    out = tmp_path / "merged"

    completed = run_module(
        "ci.mutants", "merge", str(folder), "--out", str(out), timeout_s=120
    )

    assert 2 == completed.returncode, completed.stderr
    assert 1 == len(completed.stderr.splitlines()), completed.stderr
    assert f"{folder / 'report.json'}: {says}" in completed.stderr
    assert not out.exists()


def test_a_folder_without_write_access_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No write access where the output would go: one line naming that folder.

    The suite may run as root, for whom every folder is writable; the check's
    own answer is replaced here, as a read-only mount would give it.
    """
    monkeypatch.setattr("ci.cli.os.access", lambda _path, _mode: False)

    with pytest.raises(UsageError) as refused:
        output_folder(tmp_path / "out", "--artifacts")

    assert f"--artifacts {tmp_path / 'out'}: {tmp_path} is not writable" == str(
        refused.value
    )


# old spelling: begin (the rename script leaves this region alone)
RENAMED: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("ci.replay", (TRACE, "--sut", "model"), "--sut is now --against"),
    ("ci.replay", (TRACE, "--sut=native"), "--sut is now --against"),
    ("ci.replay.minimize", (TRACE, "--sut", "model"), "--sut is now --against"),
    ("ci.gate", ("--profile", "pr"), "--profile is now --job"),
    ("ci.soak", ("--seeds", "1", "--profile", "ci"), "--profile is now --settings"),
    ("ci.explore", ("--coverage", "--profile", "ci"), "--profile is now --settings"),
    ("ci.build_local", ("--profile", "release"), "--profile is now --cargo-profile"),
    (
        "ci.mutants",
        ("--list", "--binding-profile", "release"),
        "--binding-profile is now --cargo-profile",
    ),
    (
        "ci.fuzz",
        ("--workers", "1", "--targets", "affinity"),
        "--targets is now --tests",
    ),
    ("ci.soak", ("--seeds", "1", "--targets=queue"), "--targets is now --tests"),
    ("ci.determinism", ("--targets", "affinity"), "--targets is now --tests"),
)
"""Every option renamed by the one-word-per-concept change (old spelling), and
what each command says instead of running."""


@pytest.mark.parametrize(
    ("module", "argv", "says"),
    [pytest.param(*case, id=f"{case[0]} {' '.join(case[1])}") for case in RENAMED],
)
def test_an_old_option_is_refused_in_one_line_naming_the_new(
    module: str, argv: tuple[str, ...], says: str
) -> None:
    """Exit 2 and `MODULE: error: OLD is now NEW`, before any other check."""
    completed = run_module(module, *argv, timeout_s=COMMAND_TIMEOUT_S)

    assert 2 == completed.returncode, completed.stderr
    assert [f"{module}: error: {says}"] == completed.stderr.splitlines()


def test_pytest_refuses_the_old_option_naming_the_new() -> None:
    """The suite's own option too: `pytest --sut` is a usage error (old spelling)."""
    completed = run_module(
        "pytest",
        "--sut",
        "model",
        "--collect-only",
        "-q",
        "-p",
        "no:cacheprovider",
        timeout_s=COMMAND_TIMEOUT_S,
    )

    assert pytest.ExitCode.USAGE_ERROR == completed.returncode, completed.stderr
    assert "--sut is now --against (crate or model)" in completed.stderr


# old spelling: end
