"""Soak reports run in pieces, merged into one.

    python -m ci.soak merge DIR... [--out DIR]

Each DIR is a soak folder (holding `report.json`) or a `soak/` folder whose
`latest` is taken. The pieces must have measured the same thing -- profile,
examples per test, steps per program, targets -- and no seed twice; the merged
report is computed from the pieces' per-seed rows by the same function as a
single run's, lists its pieces (`merged_from`: folder, commit, seeds, complete)
and is written to `--out` (default: a new stamped folder beside the first
piece). Exit status: 0 clean, 1 false alarm or flaky, 2 pieces that cannot be
merged (one line on stderr).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ci.cli import OneLineParser, UsageError
from ci.replay.artifacts import utc_stamp
from ci.soak import command
from ci.soak.command import Recheck, Soak, seed_from_row

SAME: Final[tuple[str, ...]] = (
    "profile",
    "max_examples",
    "stateful_step_count",
    "targets",
)
"""Settings every piece must share; seeds and jobs may differ."""


class MergeError(UsageError):
    """Pieces that cannot be merged (one line to print)."""


def read_piece(folder: Path) -> dict[str, Any]:
    """One piece's report, from its folder or its soak folder's `latest`."""
    for candidate in (
        folder / command.REPORT_FILE,
        folder / command.LATEST / command.REPORT_FILE,
    ):
        if candidate.is_file():
            try:
                document = json.loads(candidate.read_text())
            except (OSError, ValueError) as error:
                raise MergeError(f"{candidate}: not a soak report ({error})") from None
            if not isinstance(document, dict) or "settings" not in document:
                raise MergeError(f"{candidate}: not a soak report")
            if "per_seed" not in document:
                raise MergeError(
                    f"{candidate}: no per-seed rows (written before soaks could merge)"
                )
            return document
    raise MergeError(f"{folder}: no {command.REPORT_FILE} there")


def merge(folders: Sequence[Path]) -> dict[str, Any]:
    """The merged report of the pieces in `folders`."""
    if not folders:
        raise MergeError("merge needs at least one soak folder")
    pieces = [(folder, read_piece(folder)) for folder in folders]
    first = pieces[0][1]["settings"]
    seen: dict[int, Path] = {}
    state = Soak(settings={key: first[key] for key in SAME})
    sources = []
    for folder, document in pieces:
        settings = document["settings"]
        for key in SAME:
            if settings.get(key) != first[key]:
                raise MergeError(
                    f"{folder}: {key} {settings.get(key)!r} differs from "
                    f"{first[key]!r} in {pieces[0][0]}"
                )
        try:
            runs = [seed_from_row(row) for row in document["per_seed"]]
            rechecks = [Recheck(**check) for check in document["rechecks"]]
        except (KeyError, TypeError, ValueError) as error:
            raise MergeError(f"{folder}: malformed per-seed row ({error})") from None
        for run in runs:
            if run.seed in seen:
                raise MergeError(
                    f"seed {run.seed} is in both {seen[run.seed]} and {folder}"
                )
            seen[run.seed] = folder
        state.seeds.extend(runs)
        state.rechecks.extend(rechecks)
        seeds = sorted(run.seed for run in runs)
        sources.append(
            {
                "folder": str(folder),
                "git_commit": document.get("git_commit"),
                "seeds": f"{seeds[0]}-{seeds[-1]}" if seeds else "",
                "seeds_run": len(seeds),
                "complete": document.get("complete"),
                "jobs": settings.get("jobs"),
                "wall_seconds": document.get("wall_seconds"),
            }
        )
    document = command.report(state, complete=all(s["complete"] for s in sources))
    document["wall_seconds"] = round(sum(s["wall_seconds"] or 0 for s in sources), 1)
    document["settings"]["jobs"] = "/".join(str(s["jobs"]) for s in sources)
    document["merged_from"] = sources
    for key in ("git_commit", "git_dirty"):
        document.pop(key)
    return document


def main(argv: Sequence[str]) -> int:
    """`merge DIR... [--out DIR]`: exit 0 clean, 1 alarm or flaky, 2 unmergeable."""
    parser = OneLineParser(prog=f"python -m {command.PROG} merge")
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=None)
    try:
        arguments = parser.parse_args(argv)
        document = merge(arguments.folders)
    except UsageError as error:
        print(f"{command.PROG}: merge: {error}", file=sys.stderr)
        return command.EXIT_USAGE
    out = arguments.out or (
        _soak_folder(arguments.folders[0]) / f"{utc_stamp()}-merged"
    )
    out.mkdir(parents=True, exist_ok=True)
    command.write_report(out, document)
    for line in command.summary(document):
        print(line)
    print(f"report: {out / command.REPORT_FILE}")
    clean = document["false_alarms"] == 0 and document["flaky"] == 0
    return command.EXIT_CLEAN if clean else command.EXIT_ALARM


def _soak_folder(folder: Path) -> Path:
    return folder if (folder / command.LATEST).exists() else folder.parent
