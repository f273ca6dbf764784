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
corrupts real input files -- a corpus trace for `ci.replay`, a committed shard
report for `ci.mutants merge` -- by truncation, a flipped byte or one field
replaced with a hostile JSON value, and requires exit 0, 1 or 2, one line for
2, no traceback, and the input left as it was. What a command checks after
parsing is also asserted case by case in `test_command_contracts.py`.
"""

from __future__ import annotations

import ast
import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from command_support import REPO, run_module
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    return {
        "under a file": str(blocker / "below"),
        "not UTF-8": str(latin1),
        "lone surrogate": str(surrogate),
        "empty": str(empty),
        "device": os.devnull,
    }


SCALARS = ("0", "-1", "nan", "inf", "-inf", "1e309", str(2**70), "", "x" * 300)
"""Values that are out of range, not finite, huge, empty or absurdly long."""
UNDECODABLE = os.fsdecode(b"caf\xe9")
"""An argument that is not UTF-8 (it reaches Python as a lone surrogate)."""


@st.composite
def invocations(draw: st.DrawFn, module: str, files: dict[str, str]) -> list[str]:
    """Some of `module`'s options with hostile values, and one unknown flag."""
    values = st.sampled_from((*SCALARS, UNDECODABLE, *sorted(files.values())))
    options = options_of(module)
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


CORRUPTED_EXAMPLES = 12
"""Corrupted files per command (each a fresh interpreter, about 1 s)."""
HOSTILE_JSON: tuple[object, ...] = (
    None,
    True,
    -1,
    0,
    2**70,
    1.5,
    float("nan"),
    "",
    "\ud800",
    "x" * 5_000,
    [],
    {},
)
"""Values put in place of a field: wrong types, out of range, unencodable text."""


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


def _replaced(document: object, path: tuple[object, ...], new: object) -> None:
    parent: Any = document
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new


Corruption = tuple[str, object, object]
"""(how, where, what): truncate at a byte, flip a byte's top bit, or set a field."""


@st.composite
def corruptions(draw: st.DrawFn, original: bytes) -> Corruption:
    """How to corrupt `original` (small, so that a failing example prints short)."""
    how = draw(st.sampled_from(("truncate", "flip", "field")))
    if how != "field":
        return how, draw(st.integers(0, len(original) - 1)), None
    path = draw(st.sampled_from(_paths(json.loads(original))))
    return how, path, draw(st.sampled_from(HOSTILE_JSON))


def corrupted(original: bytes, corruption: Corruption) -> bytes:
    """`original` with `corruption` applied."""
    how, where, what = corruption
    if how == "truncate":
        assert isinstance(where, int)
        return original[:where]
    if how == "flip":
        assert isinstance(where, int)
        flipped = bytes([original[where] ^ 0x80])
        return original[:where] + flipped + original[where + 1 :]
    assert isinstance(where, tuple)
    document = json.loads(original)
    _replaced(document, where, what)
    return json.dumps(document).encode("utf-8", "surrogatepass")


CORRUPTIBLE = (
    ("ci.replay", "ci/replay/corpus/b16_virtual_ttl.json", ("--sut", "model")),
    (
        "ci.mutants",
        "ci/mutants/reports/20261204T130509Z-14of16/report.json",
        ("--out", "{out}"),
    ),
)
"""(command, a committed input file, the command's other arguments)."""


@pytest.mark.parametrize(("module", "relative", "extra"), CORRUPTIBLE)
def test_corrupted_inputs_keep_the_contract(
    module: str,
    relative: str,
    extra: tuple[str, ...],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A corrupted real input: exit 0, 1 or 2, one line for 2, never a traceback."""
    original = (REPO / relative).read_bytes()
    folder = tmp_path_factory.mktemp("corrupted")

    @settings(
        max_examples=CORRUPTED_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=(HealthCheck.too_slow,),
    )
    @given(corruption=corruptions(original))
    def keeps_the_contract(corruption: Corruption) -> None:
        data = corrupted(original, corruption)
        target = folder / "input" / Path(relative).name
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(data)
        out = folder / "out"
        given_path = str(target.parent if module == "ci.mutants" else target)
        argv = ["merge", given_path] if module == "ci.mutants" else [given_path]
        argv += [arg.format(out=out) for arg in extra]

        completed = run_module(module, *argv, timeout_s=COMMAND_TIMEOUT_S)

        assert completed.returncode in {0, 1, 2}, completed.stderr[-2000:]
        assert "Traceback" not in completed.stdout + completed.stderr
        if completed.returncode == 2:
            assert 1 == len(completed.stderr.splitlines()), completed.stderr
        assert data == target.read_bytes()

    keeps_the_contract()
