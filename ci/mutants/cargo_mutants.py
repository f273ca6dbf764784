"""The mutant set: cargo-mutants' mutants of the two files, plus what it lacks.

cargo-mutants (an optional tool, pinned to `CARGO_MUTANTS_VERSION`; the main
install does not need it) lists its mutants of one file with
`cargo mutants --list --json --diff --file FILE` run in the work copy of the
crate. Each entry's unified diff is applied to the pristine file, and the
change is reduced to the one span that differs, so every mutant of the set,
whichever generator made it, is the same `Mutant` (file, span, replacement).

Ours (`ci/mutants/operators.py`) add only the kinds cargo-mutants never
generates; any of their mutants whose mutated file equals one of cargo-mutants'
is dropped as a duplicate. Mutants inside code our runs never compile into
production (test hooks, `tracing::*!` arguments, `debug_assert*!`) are dropped
from both, by the same ranges (`operators.skipped_ranges`).

Ids: `C` for cargo-mutants, `O` for ours, then the file's letter (`A`
affinity.rs, `Q` policy_queue.rs) and the position in the generator's order
for that file: `CA001`, `CQ017`, `OA003`. The set's fingerprint (a hash of
every id, span and replacement) lets shards and merges check that they
describe the same set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ci.mutants.operators import (
    TARGET_FILES,
    Mutant,
    generate_ours,
    inside_skipped,
    minimal_change,
    skipped_ranges,
)

CARGO_MUTANTS_VERSION = "27.1.0"
INSTALL_HINT = f"cargo install --locked cargo-mutants@{CARGO_MUTANTS_VERSION}"
LIST_TIMEOUT_S = 600
MARKER = "/* ~ changed by cargo-mutants ~ */"
_HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class ToolMissingError(RuntimeError):
    """cargo-mutants is absent or not the pinned version (one line to print)."""


class DiffError(ValueError):
    """A diff that does not apply to the pristine file."""


def tool_version() -> str:
    """The pinned cargo-mutants' version, or `ToolMissingError` with the fix."""
    if shutil.which("cargo-mutants") is None:
        raise ToolMissingError(
            f"cargo-mutants is not installed (optional; install with: {INSTALL_HINT})"
        )
    completed = subprocess.run(
        ["cargo", "mutants", "--version"],  # noqa: S607 - cargo from PATH
        check=False,
        capture_output=True,
        text=True,
    )
    found = completed.stdout.split()
    version = found[-1] if found else ""
    if completed.returncode != 0 or version != CARGO_MUTANTS_VERSION:
        raise ToolMissingError(
            f"cargo-mutants {CARGO_MUTANTS_VERSION} is required, found "
            f"{version or 'none'!r} (install with: {INSTALL_HINT})"
        )
    return version


def _hunks(diff: str) -> list[tuple[int, list[str]]]:
    """(0-based first old line, body lines) of each hunk of a unified diff."""
    hunks: list[tuple[int, list[str]]] = []
    for line in diff.splitlines():
        found = _HUNK.match(line)
        if found:
            # An empty old range (`-N,0`) inserts after line N, i.e. before N + 1.
            first = int(found.group(1)) - (0 if found.group(2) == "0" else 1)
            hunks.append((first, []))
        elif hunks:
            hunks[-1][1].append(line)
        elif not line.startswith(("---", "+++")):
            raise DiffError(f"text before the first hunk: {line!r}")
    if not hunks:
        raise DiffError("the diff has no hunk")
    return hunks


def apply_diff(text: str, diff: str) -> str:
    """`text` with the unified `diff` applied; every context line must match."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    position = 0  # next unread line of `lines`
    for first, body in _hunks(diff):
        if first < position:
            raise DiffError("overlapping hunks")
        out.extend(lines[position:first])
        position = first
        for line in body:
            tag, rest = line[:1], line[1:]
            if tag in {" ", "-"}:
                if position >= len(lines) or lines[position].rstrip("\n") != rest:
                    raise DiffError(f"line {position + 1} does not match the diff")
                if tag == " ":
                    out.append(lines[position])
                position += 1
            elif tag == "+":
                out.append(rest + "\n")
            elif tag != "\\":
                raise DiffError(f"unexpected diff line {line!r}")
    out.extend(lines[position:])
    return "".join(out)


def list_json(crate: Path, relative: str) -> list[dict[str, Any]]:
    """cargo-mutants' own listing of `relative` (a path inside `crate`)."""
    command = [
        "cargo",
        "mutants",
        "--list",
        "--json",
        "--diff",
        "--no-config",
        "--file",
        relative,
        "--dir",
        str(crate),
    ]
    completed = subprocess.run(  # noqa: S603 - the pinned tool
        command,
        check=False,
        capture_output=True,
        text=True,
        timeout=LIST_TIMEOUT_S,
    )
    if completed.returncode != 0:
        tail = " ".join(completed.stderr.split())[-300:]
        raise ToolMissingError(f"cargo mutants --list failed: {tail}")
    listed = json.loads(completed.stdout)
    if not isinstance(listed, list):
        raise ToolMissingError("cargo mutants --list --json did not print a list")
    return listed


def _name(entry: dict[str, Any], relative: str) -> str:
    """cargo-mutants' own name, file name only: `affinity.rs:517:32: replace ...`."""
    name = str(entry["name"])
    return name.removeprefix(str(Path(relative).parent) + "/")


def _unmarked(mutated: str) -> str:
    """The mutated text without cargo-mutants' `/* ~ changed by cargo-mutants ~ */`.

    Only a comment, so the program is the same; without it two generators'
    spellings of one change compare equal.
    """
    for spelling in (f" {MARKER}", f"{MARKER} ", MARKER):
        mutated = mutated.replace(spelling, "")
    return mutated


def from_cargo_mutants(
    listed: Sequence[dict[str, Any]], relative: str, text: str
) -> tuple[list[Mutant], int]:
    """cargo-mutants' entries for `relative` as `Mutant`s; and how many were skipped.

    Skipped: mutants inside the ranges no run compiles into production.
    """
    prefix = "C" + TARGET_FILES[relative]
    skipped = skipped_ranges(text)
    mutants: list[Mutant] = []
    dropped = 0
    for entry in listed:
        if entry["file"] != relative:
            raise DiffError(f"cargo-mutants listed {entry['file']}, not {relative}")
        mutated = apply_diff(text, entry["diff"])
        start, end, replacement = minimal_change(text, _unmarked(mutated))
        if inside_skipped(skipped, start, end):
            dropped += 1
            continue
        line = text.count("\n", 0, start) + 1
        mutants.append(
            Mutant(
                file=relative,
                start=start,
                end=end,
                operator=str(entry.get("genre", "cargo-mutants")),
                original=text[start:end],
                replacement=replacement,
                line=line,
                id=f"{prefix}{len(mutants) + 1:03d}",
                name=_name(entry, relative),
            )
        )
    return mutants, dropped


@dataclass(frozen=True)
class MutantSet:
    """The full set and how it was made."""

    mutants: tuple[Mutant, ...]  # sorted by id
    tool: str  # "cargo-mutants 27.1.0"
    counts: dict[str, dict[str, int]]  # per file: cargo, ours, duplicates, skipped

    @property
    def fingerprint(self) -> str:
        """sha256 over (id, file, start, end, replacement) of every mutant, by id."""
        digest = hashlib.sha256()
        for m in sorted(self.mutants, key=lambda m: m.id):
            record = [m.id, m.file, m.start, m.end, m.replacement]
            digest.update(json.dumps(record).encode("utf-8"))
        return digest.hexdigest()[:16]


def mutant_set(crate: Path) -> MutantSet:
    """cargo-mutants' mutants of both files, then ours that it does not generate."""
    version = tool_version()
    ours_all = generate_ours(crate)
    mutants: list[Mutant] = []
    counts: dict[str, dict[str, int]] = {}
    for relative in TARGET_FILES:
        text = (crate / relative).read_text(encoding="utf-8")
        cargo, dropped = from_cargo_mutants(list_json(crate, relative), relative, text)
        seen = {(m.start, m.end, m.replacement) for m in cargo}
        ours_file = [m for m in ours_all if m.file == relative]
        extra = [
            dataclasses.replace(m, id=f"O{TARGET_FILES[relative]}{number:03d}")
            for number, m in enumerate(
                (m for m in ours_file if (m.start, m.end, m.replacement) not in seen),
                1,
            )
        ]
        mutants += cargo + extra
        counts[relative] = {
            "cargo_mutants": len(cargo),
            "cargo_mutants_skipped": dropped,
            "ours": len(extra),
            "ours_duplicates": len(ours_file) - len(extra),
        }
    ordered = tuple(sorted(mutants, key=lambda m: m.id))
    if len({m.id for m in ordered}) != len(ordered):
        raise DiffError("two mutants share an id")
    return MutantSet(ordered, f"cargo-mutants {version}", counts)
