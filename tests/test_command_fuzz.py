"""Hypothesis against the command lines: every `python -m` entry point, hostile input.

The entry points are discovered, not listed: every package of the project with a
`__main__.py` and every module with a `__main__` block. Their options come from
their own `--help`. Hypothesis then draws argument lists for each: some of the
command's own options with hostile values (zero, negative, NaN, infinite and
huge numbers, empty and long text, text that is not UTF-8, paths under a
regular file, files that are not UTF-8 or hold a lone surrogate, a device file)
and one option no command has, so that every drawn invocation must be refused
and none starts real work. The contract checked on each: exit 2, exactly one
line on stderr in the shared `MODULE: error:` style, no traceback anywhere, no
file changed in the input folder or the artifacts folder.

That reach is the argument layer (types, ranges, unknown, missing and
conflicting options). Past it, `test_corrupted_inputs_keep_the_contract`
takes a real file of every format a command reads -- a trace of each subject
(the queue's with its YAML profile), a concurrent history, a trace exported
as Rust, a trace minimized and one added to a corpus, a mutant shard report, a
soak report, a queue parity record -- and has Hypothesis corrupt it
(truncated, a byte changed, a field replaced by a wrong type, a huge number or
unencodable text, a field deleted) and choose the output (fresh, under a
regular file, or a disk that fills at the final write). It calls the command's
`main` in this process, so that many cases fit in the time; the contract:
exit 0, 1 or 2, one `COMMAND: error:` line for 2 (and for a failed final
write, which exits 1 and says where the result was kept), no exception and no
traceback, the input unchanged, nothing changed by a refused command and
nothing half-written. A few of the same cases run through `python -m` in a
fresh interpreter. What a command checks after parsing is also asserted case
by case in `test_command_contracts.py`.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import errno
import importlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from command_support import REPO, run_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ci import cli
from ci.explore.command import read_counts
from ci.inputs import InputError

COMMAND_TIMEOUT_S = 60
INVOCATIONS_PER_COMMAND = 3
"""Drawn invocations per entry point (each a fresh interpreter, about 1 s)."""
PACKAGES = ("ci", "properties")
"""Where entry points live (model, impl and stateful have none)."""
UNKNOWN_FLAG = "--no-command-has-this-flag"
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]+|-[a-z])\b")


def entry_points() -> list[str]:
    """Every `python -m` module of the project, sorted."""
    found: set[str] = set()
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "artifacts" in path.parts or path.name.startswith("test_"):
                continue
            relative = path.relative_to(REPO).with_suffix("")
            parts = relative.parts
            if parts[-1] == "__main__":
                found.add(".".join(parts[:-1]))
            elif parts[-1] != "__init__" and _has_main_block(path):
                package_main = path.parent / "__main__.py"
                delegated = package_main.is_file() and parts[-1] == "command"
                if not delegated:
                    found.add(".".join(parts))
    return sorted(found)


def _has_main_block(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
        for node in tree.body
    )


ENTRY_POINTS = entry_points()


@cache
def options_of(module: str) -> tuple[str, ...]:
    """The options a command's `--help` names (help itself left out)."""
    completed = run_module(module, "--help", timeout_s=COMMAND_TIMEOUT_S)
    assert 0 == completed.returncode, completed.stderr
    found = set(OPTION.findall(completed.stdout)) - {"-h", "--help"}
    return tuple(sorted(found))


def _inputs(folder: Path) -> dict[str, str]:
    """Hostile files, made fresh in `folder`; their paths by name."""
    blocker = folder / "a-file"
    blocker.write_text("plain text\n")
    latin1 = folder / "latin1.json"
    latin1.write_bytes(b'{"caf\xe9": 1}\n')
    surrogate = folder / "surrogate.json"
    surrogate.write_text('{"format": "dynamo-verify-trace", "s": "\\ud800"}\n')
    empty = folder / "empty.json"
    empty.write_text("")
    fifo = folder / "fifo.json"
    os.mkfifo(fifo)
    return {
        "FIFO": str(fifo),
        "under a file": str(blocker / "below"),
        "not UTF-8": str(latin1),
        "lone surrogate": str(surrogate),
        "empty": str(empty),
        "device": os.devnull,
    }


SCALARS = (
    "0",
    "-1",
    "nan",
    "inf",
    "-inf",
    "1e309",
    str(2**70),
    "",
    "x" * 300,
    "\u0663",
    "a\nb\x1b[31m",
)
"""Values that are out of range, not finite, huge, empty, absurdly long, digits of
another script, or carrying control characters (a newline, a terminal escape)."""
UNDECODABLE = os.fsdecode(b"caf\xe9")
"""An argument that is not UTF-8 (it reaches Python as a lone surrogate)."""


@st.composite
def invocations(draw: st.DrawFn, module: str, files: dict[str, str]) -> list[str]:
    """Some of `module`'s options with hostile values, and one unknown flag."""
    values = st.sampled_from((*SCALARS, UNDECODABLE, *sorted(files.values())))
    options = options_of(module)
    prefixes = tuple(option[:-1] for option in options if len(option) > 3)
    options = (*options, *prefixes)  # a prefix is an unknown option, never its flag
    chosen = draw(st.lists(st.sampled_from(options), max_size=3)) if options else []
    argv: list[str] = []
    for option in chosen:
        argv += [option, draw(values)]
    argv.insert(draw(st.integers(0, len(argv))), UNKNOWN_FLAG)
    return argv


def _snapshot(*folders: Path) -> list[tuple[str, int, int]]:
    """Every file below `folders`: path, size, modification time."""
    return sorted(
        (str(path), path.stat().st_size, path.stat().st_mtime_ns)
        for folder in folders
        if folder.is_dir()
        for path in folder.rglob("*")
    )


def test_every_entry_point_is_discovered() -> None:
    """Discovery finds the commands the README lists (a floor, not the list)."""
    expected = {"ci.gate", "ci.replay", "ci.soak", "ci.fuzz", "ci.mutants"}

    assert set() == expected - set(ENTRY_POINTS)
    assert "ci.explore.command" not in ENTRY_POINTS  # run as ci.explore


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_hostile_arguments_are_refused_in_one_line(
    module: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Drawn hostile argument lists: exit 2, one `MODULE: error:` line, no change."""
    folder = tmp_path_factory.mktemp("inputs")
    files = _inputs(folder)
    artifacts = REPO / "ci" / "artifacts"

    @settings(
        max_examples=INVOCATIONS_PER_COMMAND,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=(HealthCheck.too_slow,),
    )
    @given(argv=invocations(module, files))
    def refused(argv: list[str]) -> None:
        before = _snapshot(folder, artifacts)

        completed = run_module(module, *argv, timeout_s=COMMAND_TIMEOUT_S)

        lines = completed.stderr.splitlines()
        assert 2 == completed.returncode, completed.stderr[-2000:]
        assert 1 == len(lines), completed.stderr[-2000:]
        assert "Traceback" not in completed.stdout + completed.stderr
        command = module.replace(".__main__", "")
        assert lines[0].startswith(f"{command}: error: "), lines[0]
        assert before == _snapshot(folder, artifacts)

    refused()


class _Parsed(BaseException):
    """Raised from `parse_args` to stop a command once its parser is built."""


def _parsers_of(module: str) -> list[argparse.ArgumentParser]:
    """The parsers `module`'s `main` builds (a merge's too), with subcommands'."""
    imported = importlib.import_module(module)
    if not hasattr(imported, "main"):
        imported = importlib.import_module(f"{module}.__main__")
    mains: list[tuple[Callable[[list[str]], object], list[str]]] = [
        (imported.main, [UNKNOWN_FLAG])
    ]
    if module in {"ci.mutants", "ci.soak"}:
        merge = importlib.import_module(f"{module}.command").main
        if module == "ci.soak":
            merge = importlib.import_module("ci.soak.merge").main
            mains.append((merge, []))
        else:
            mains.append((merge, ["merge"]))
    found: list[argparse.ArgumentParser] = []

    def captured(self: argparse.ArgumentParser, *_: object, **__: object) -> None:
        found.append(self)
        raise _Parsed

    with mock.patch.object(argparse.ArgumentParser, "parse_args", captured):
        for main, argv in mains:
            with contextlib.suppress(_Parsed):
                main(argv)
    subparsers = [
        parser
        for found_parser in found
        for action in found_parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for parser in action.choices.values()
    ]
    return found + subparsers


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_no_prefix_of_an_option_stands_for_it(module: str) -> None:
    """Every long option of every parser: none of its prefixes selects it.

    argparse's default takes `--upd` for `--update-counts`; with prefixes an
    unknown flag could pick a destructive one. Each prefix of 3 characters or
    more that is not itself an option must be unknown to the parser.
    """
    parsers = _parsers_of(module)

    assert parsers, f"{module} built no parser"
    for parser in parsers:
        options = {
            option
            for action in parser._actions
            for option in action.option_strings
            if option.startswith("--")
        }
        for option in sorted(options):
            for end in range(3, len(option)):
                prefix = option[:end]
                if prefix in options:
                    continue
                parsed = parser._parse_optional(prefix)
                assert parsed is None or parsed[0] is None, (module, option, prefix)


PRINTING = (
    ("properties",),
    ("ci.production",),
    ("ci.probe", "--table"),
    ("ci.replay", "ci/replay/corpus/b16_virtual_ttl.json"),
)
"""Commands that print a page or more on standard output, doing no other work."""


@pytest.mark.parametrize("argv", PRINTING, ids=" ".join)
def test_a_closed_standard_output_ends_the_command_quietly(argv: Sequence[str]) -> None:
    """`| head` closed the pipe: exit 141 (128 + SIGPIPE), nothing on stderr."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        completed = subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
            [sys.executable, "-m", *argv],
            cwd=REPO,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=COMMAND_TIMEOUT_S,
        )
    finally:
        os.close(writer)

    assert cli.EXIT_CLOSED_STDOUT == completed.returncode, completed.stderr
    assert "" == completed.stderr


@pytest.mark.parametrize("argv", PRINTING, ids=" ".join)
def test_a_full_standard_output_is_one_line_and_exit_one(argv: Sequence[str]) -> None:
    """`> /dev/full`: one `COMMAND: error: cannot write` line, exit 1."""
    with Path("/dev/full").open("wb") as full:
        completed = subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
            [sys.executable, "-m", *argv],
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=COMMAND_TIMEOUT_S,
        )

    lines = completed.stderr.splitlines()
    assert 1 == completed.returncode, completed.stderr
    assert [f"{argv[0]}: error: cannot write: No space left on device"] == lines


# ---- corrupted real inputs -------------------------------------------------------

HOSTILE_JSON: tuple[object, ...] = (
    None,
    True,
    -1,
    0,
    2**64,
    2**70,
    -(2**70),
    1.5,
    1e308,
    "",
    "\ud800",
    "x" * 5_000,
    "no-such-name",
    -0.5,
    [],
    {},
    [[[]]],
)
"""Values put in place of a field: wrong types, out of range, unencodable text,
and values of the right type outside a field's domain (a name no machine test or
outcome has, negative seconds)."""
HOSTILE_VALUES = st.one_of(
    st.sampled_from(HOSTILE_JSON),
    st.integers(-(2**80), 2**80),
    st.sampled_from(("\udcff", "a\udfffb", "\ud800\ud800")),
)
"""Hostile values, and huge numbers and lone surrogates drawn beyond them."""
HUGE_NUMBERS = st.one_of(
    st.sampled_from((-1, 2**32, 2**63, 2**64, 2**70)), st.integers(-(2**80), 2**80)
)
"""Integers past `u32`, `u64` and `usize`, and negative ones."""


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every path (keys and indexes) to a value inside a decoded JSON document."""
    found: list[tuple[object, ...]] = [prefix] if prefix else []
    if isinstance(value, dict):
        for key in sorted(value):
            found += _paths(value[key], (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:3]):  # the first items stand for all
            found += _paths(item, (*prefix, index))
    return found


def _parent(document: object, path: tuple[object, ...]) -> Any:
    parent: Any = document
    for step in path[:-1]:
        parent = parent[step]
    return parent


Corruption = tuple[str, object, object]
"""(how, where, what): truncate or flip at a byte, set or delete a field."""


@st.composite
def corruptions(draw: st.DrawFn, original: bytes) -> Corruption:
    """How to corrupt `original` (small, so that a failing example prints short)."""
    kinds = ("truncate", "flip", "set", "set-raw", "delete", "number")
    how = draw(st.sampled_from(kinds))
    if how in {"truncate", "flip"}:
        return how, draw(st.integers(0, len(original) - 1)), draw(st.integers(1, 255))
    document = json.loads(original)
    numbers = [path for path in _paths(document) if _is_int(document, path)]
    if how == "number" and numbers:  # an integer, out of every range a binding has
        return "set", draw(st.sampled_from(numbers)), draw(HUGE_NUMBERS)
    path = draw(st.sampled_from(_paths(document)))
    return how, path, None if how == "delete" else draw(HOSTILE_VALUES)


def _is_int(document: object, path: tuple[object, ...]) -> bool:
    value = _parent(document, path)[path[-1]]
    return isinstance(value, int) and not isinstance(value, bool)


def corrupted(original: bytes, corruption: Corruption) -> bytes:
    """`original` with `corruption` applied (`set-raw`: non-ASCII text unescaped)."""
    how, where, what = corruption
    if how == "truncate":
        assert isinstance(where, int)
        return original[:where]
    if how == "flip":
        assert isinstance(where, int)
        assert isinstance(what, int)
        flipped = bytes([original[where] ^ what])
        return original[:where] + flipped + original[where + 1 :]
    assert isinstance(where, tuple)
    document = json.loads(original)
    if how == "delete":
        del _parent(document, where)[where[-1]]
    else:
        _parent(document, where)[where[-1]] = what
    text = json.dumps(document, ensure_ascii=how == "set")
    return text.encode("utf-8", "surrogatepass")


def _replay(argv: Sequence[str]) -> int:
    from ci.replay.command import main  # noqa: PLC0415 - the command under test

    return main(list(argv))


def _minimize(argv: Sequence[str]) -> int:
    from ci.replay.minimize import main  # noqa: PLC0415 - the command under test

    return main(list(argv))


def _corpus(argv: Sequence[str]) -> int:
    from ci.replay.corpus.__main__ import main  # noqa: PLC0415 - under test

    return main(list(argv))


def _mutants(argv: Sequence[str]) -> int:
    from ci.mutants.command import main  # noqa: PLC0415 - the command under test

    return main(list(argv))


def _soak_merge(argv: Sequence[str]) -> int:
    from ci.soak.merge import main  # noqa: PLC0415 - the command under test

    return main(list(argv))


def _queue_parity(argv: Sequence[str]) -> int:
    from ci.queue_parity import main  # noqa: PLC0415 - the command under test

    return main(list(argv))


@dataclass(frozen=True)
class Corruptible:
    """A command that reads a file, a real file it reads, and how to call it."""

    command: str  # as its error lines begin: "ci.replay", "ci.mutants merge"
    relative: str  # a committed input, or PARITY_RECORD (recorded by the test)
    argv: tuple[str, ...]  # "{in}": the input (its folder if in_folder); "{out}";
    # "{name}": a corpus entry's name
    main: Callable[[Sequence[str]], int]
    in_folder: bool = False  # the command is given the folder holding the file
    output: str = ""  # "file" or "folder" when "{out}" is one; "" for none


PARITY_RECORD = "(a queue parity record of 3 programs, recorded by the test)"
CORPUS = "ci/replay/corpus"
CORRUPTIBLE = (
    Corruptible("ci.replay", f"{CORPUS}/b16_virtual_ttl.json", ("{in}",), _replay),
    Corruptible(
        "ci.replay",
        f"{CORPUS}/queue_c3_token_limits_reject_in_the_stated_order.json",
        ("{in}",),
        _replay,
    ),
    Corruptible(
        "ci.replay",
        f"{CORPUS}/replica_two_writers_bind_one_session_at_once.json",
        ("{in}",),
        _replay,
    ),
    Corruptible(
        "ci.replay",
        f"{CORPUS}/scheduler/scheduler_due_times_reject_exactly_at_the_deadline.json",
        ("{in}",),
        _replay,
    ),
    Corruptible(
        "ci.replay",
        f"{CORPUS}/histories/replica_update_races_a_commit.json",
        ("{in}",),
        _replay,
    ),
    Corruptible(
        "ci.replay",
        f"{CORPUS}/e1_3_joined_binding_survives_the_initializer_dropping.json",
        ("{in}", "--emit", "rust", "--out", "{out}"),
        _replay,
        output="file",
    ),
    Corruptible(
        "ci.replay.minimize",
        f"{CORPUS}/canary_late_expiry_a_released_binding_is_collected_at_its_deadline"
        ".json",
        ("{in}", "--canary", "late_expiry", "--out", "{out}"),
        _minimize,
        output="file",
    ),
    Corruptible(
        "ci.replay.corpus",
        f"{CORPUS}/queue_c4_wspt_serves_the_shortest_job.json",
        ("add", "{in}", "--name", "{name}", "--corpus-dir", "{out}"),
        _corpus,
        output="folder",
    ),
    Corruptible(
        "ci.mutants merge",
        "tests/fixtures/mutants/20261204T130509Z-14of16/report.json",
        ("merge", "{in}", "--out", "{out}"),
        _mutants,
        in_folder=True,
        output="folder",
    ),
    Corruptible(
        "ci.soak merge",
        "tests/fixtures/soak/20261203T215924.991574Z/report.json",
        ("{in}", "--out", "{out}"),
        _soak_merge,
        in_folder=True,
        output="folder",
    ),
    Corruptible("ci.queue_parity", PARITY_RECORD, ("--compare", "{in}"), _queue_parity),
)
"""Every command that reads a file, with a real file of each format it reads."""
CORRUPTED_EXAMPLES = 30
"""Corrupted inputs per case, run in this process (a few ms to a second each)."""
CORRUPTED_IN_A_PROCESS = 3
"""Corrupted inputs per case, each in a fresh interpreter (about 1 s each)."""
OUTPUTS = ("fresh", "under a file", "disk full", "the input")
"""Where a command writes: a new path, a path under a regular file (refused
before work), a disk that fills at the final write (after the work), or the
input itself (its file, or the folder holding it: refused before work)."""
OVERWRITES = "an output never overwrites an input"


@pytest.fixture(scope="module")
def parity_record(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A parity record as `ci.queue_parity --record` writes it (3 programs)."""
    path = tmp_path_factory.mktemp("parity") / "parity.json"
    assert 0 == _queue_parity(["--record", str(path), "--programs", "3"])
    return path.read_bytes()


def _original(case: Corruptible, parity_record: bytes) -> bytes:
    if case.relative == PARITY_RECORD:
        return parity_record
    return (REPO / case.relative).read_bytes()


def _case_id(case: Corruptible) -> str:
    return f"{case.command}:{Path(case.relative).stem[:40]}"


@dataclass(frozen=True)
class Ran:
    """One in-process run of a command's `main`."""

    status: int
    stdout: str
    stderr: str


def run_main(main: Callable[[Sequence[str]], int], argv: Sequence[str]) -> Ran:
    """Call `main(argv)` here, capturing its text; an exception propagates."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except SystemExit as exit_:  # an explicit exit is an exit, not a crash
            status = exit_.code if isinstance(exit_.code, int) else 1
    return Ran(status, out.getvalue(), err.getvalue())


def _layout(case: Corruptible, folder: Path, data: bytes, output: str) -> list[str]:
    """Write the corrupted input under `folder`; the command's arguments."""
    name = Path(case.relative).name if case.relative != PARITY_RECORD else "p.json"
    target = folder / "input" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    blocker = folder / "a-file"
    blocker.write_text("plain text\n")
    out = folder / "out" / ("result" if case.output == "file" else "folder")
    if output == "under a file":
        out = blocker / "below"
    given = target.parent if case.in_folder else target
    name = "added"  # a corpus entry's name
    if output == "the input":
        out = given if case.output == "file" or case.in_folder else target.parent
        name = target.stem
    places = {"in": given, "out": out, "name": name}
    return [arg.format(**places) for arg in case.argv]


def _disk_full(path: Path, data: bytes) -> None:
    del data
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


BINDING_LIMITS = ("out of the crate's range", "beyond the binding's supported range")
"""How the adapters say the binding could not take a value: as a replay's
verdict, that is a verdict about the input, which must have been refused."""


def _check_contract(case: Corruptible, ran: Ran, output: str) -> None:
    """Exit 0, 1 or 2; no traceback; one `COMMAND: error:` line for 2.

    A divergence is never the binding refusing a value the trace should not
    have held (bad input is exit 2, never a verdict about the crate).
    """
    lines = ran.stderr.splitlines()
    assert ran.status in {0, 1, 2}, ran.stderr[-2000:]
    assert "Traceback" not in ran.stdout + ran.stderr
    verdict = " ".join(ran.stdout.partition("first divergence")[2].split())
    assert not any(limit in verdict for limit in BINDING_LIMITS), verdict
    if ran.status == 2:
        assert 1 == len(lines), ran.stderr[-2000:]
        assert lines[0].startswith(f"{case.command}: error: "), lines[0]
    if output == "the input":
        assert 2 == ran.status, ran.stderr[-2000:]
        assert OVERWRITES in ran.stderr, ran.stderr[-2000:]
    if output == "disk full" and "cannot write" in ran.stderr:
        assert 1 == ran.status
        assert 1 == len(lines), ran.stderr[-2000:]
        assert "kept instead in" in lines[0], lines[0]


def _files_below(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


@pytest.mark.parametrize("case", CORRUPTIBLE, ids=_case_id)
def test_corrupted_inputs_keep_the_contract(
    case: Corruptible, parity_record: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A corrupted real input, a hostile output: the contract, and no change if 2."""
    original = _original(case, parity_record)
    outputs = OUTPUTS if case.output else OUTPUTS[:1]

    @settings(
        max_examples=CORRUPTED_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=(HealthCheck.too_slow,),
    )
    @given(corruption=corruptions(original), output=st.sampled_from(outputs))
    def keeps_the_contract(corruption: Corruption, output: str) -> None:
        folder = tmp_path_factory.mktemp("corrupted")
        data = corrupted(original, corruption)
        argv = _layout(case, folder, data, output)
        (folder / "kept").mkdir()
        before = _snapshot(folder / "input", folder / "out")
        full = mock.patch.object(cli, "_write_whole", _disk_full)

        with (
            full if output == "disk full" else contextlib.nullcontext(),
            mock.patch.object(tempfile, "tempdir", str(folder / "kept")),
        ):
            ran = run_main(case.main, argv)

        _check_contract(case, ran, output)
        assert data == _input_file(folder).read_bytes()
        if ran.status == 2:
            assert before == _snapshot(folder / "input", folder / "out")
        if output == "disk full":
            assert [] == _files_below(folder / "out")

    keeps_the_contract()


def _input_file(folder: Path) -> Path:
    (found,) = _files_below(folder / "input")
    return found


@pytest.mark.parametrize("case", CORRUPTIBLE, ids=_case_id)
def test_corrupted_inputs_keep_the_contract_in_a_fresh_interpreter(
    case: Corruptible, parity_record: bytes, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The same through `python -m`: the process's own exit status and stderr."""
    original = _original(case, parity_record)
    outputs = ("fresh", "under a file", "the input") if case.output else ("fresh",)
    module, *prefix = case.command.split()
    if case.argv[:1] == ("merge",):
        prefix = []

    @settings(
        max_examples=CORRUPTED_IN_A_PROCESS,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=(HealthCheck.too_slow,),
    )
    @given(corruption=corruptions(original), output=st.sampled_from(outputs))
    def keeps_the_contract(corruption: Corruption, output: str) -> None:
        folder = tmp_path_factory.mktemp("corrupted")
        data = corrupted(original, corruption)
        argv = _layout(case, folder, data, output)
        before = _snapshot(folder / "input", folder / "out")

        completed = run_module(module, *prefix, *argv, timeout_s=COMMAND_TIMEOUT_S)

        ran = Ran(completed.returncode, completed.stdout, completed.stderr)
        _check_contract(case, ran, output)
        assert data == _input_file(folder).read_bytes()
        if ran.status == 2:
            assert before == _snapshot(folder / "input", folder / "out")

    keeps_the_contract()


def test_a_full_disk_after_the_work_is_one_line_and_exit_one(tmp_path: Path) -> None:
    """A result written to a full disk (`/dev/full`): exit 1, one line, kept."""
    trace = REPO / CORPUS / "b16_virtual_ttl.json"
    env = os.environ | {"TMPDIR": str(tmp_path)}

    completed = run_module(
        "ci.replay",
        str(trace),
        "--emit",
        "rust",
        "--out",
        "/dev/full",
        timeout_s=COMMAND_TIMEOUT_S,
        env=env,
    )

    lines = completed.stderr.splitlines()
    assert 1 == completed.returncode, completed.stderr
    assert 1 == len(lines), completed.stderr
    assert lines[0].startswith("ci.replay: error: cannot write /dev/full: ")
    (kept,) = tmp_path.glob("dynamo-verify-kept-*/full")
    assert "fn " in kept.read_text(encoding="utf-8")


def test_a_corrupted_counts_file_is_read_or_refused(tmp_path: Path) -> None:
    """The explorer's pinned counts, corrupted: read, or one `InputError`."""
    original = (REPO / "ci" / "explore" / "state_counts.json").read_bytes()

    @settings(max_examples=CORRUPTED_EXAMPLES, derandomize=True, database=None)
    @given(corruption=corruptions(original))
    def read_or_refused(corruption: Corruption) -> None:
        path = tmp_path / "state_counts.json"
        path.write_bytes(corrupted(original, corruption))

        refused: InputError | None = None
        try:
            counts = read_counts("affinity", path)
        except InputError as error:
            refused = error
        if refused is not None:
            assert str(refused).startswith(f"{path}: ")
        else:
            assert all(isinstance(row, dict) for row in counts.values())

    read_or_refused()
