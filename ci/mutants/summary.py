"""The merged mutation report, cut down to one row per mutant and committed.

    python -m ci.mutants summary DIR [--out FILE]

DIR is a merged report folder (`python -m ci.mutants merge ... --out DIR`).
The summary keeps what the tests and `ci/MUTANTS.md` need -- the mutant set's
fingerprint and size, the shards missing, and per mutant its id, file, line,
whether it builds, the outcome on each side, and the first test and check of
ours that caught it -- and drops the rest (timings, output, per-shard rows).
The full reports are CI artifacts. The default output is
`ci/mutants/summary.json`, which `tests/test_mutants_merged.py` reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ci.cli import summary_command
from ci.inputs import InputError, read_json
from ci.mutants.report import OUTCOMES, REPORT_BYTES_MAX, REPORT_NAME, MergeError

REPO: Final = Path(__file__).resolve().parents[2]
SUMMARY: Final = REPO / "ci" / "mutants" / "summary.json"
COLUMNS: Final = ("id", "file", "line", "viable", "ours", "crate", "test", "check")
"""One row per mutant. `file` is the crate file's name, `ours` and `crate` are
outcomes ("" when not run), `test` indexes the summary's `tests` (-1: none)."""


def summarize(merged: object) -> dict[str, Any]:
    """The summary of a merged report (`kind` "merged"); `MergeError` if not one."""
    if not isinstance(merged, dict) or merged.get("kind") != "merged":
        raise MergeError("not a merged report: run `python -m ci.mutants merge` first")
    try:
        return _summary(merged)
    except (KeyError, TypeError) as error:
        raise MergeError(f"a merged report without {error}") from None


def _summary(merged: dict[str, Any]) -> dict[str, Any]:
    tests = sorted(
        {
            entry["ours"]["test_id"]
            for entry in merged["mutants"]
            if (entry.get("ours") or {}).get("outcome") == "caught"
        }
    )
    rows = []
    for entry in merged["mutants"]:
        ours = entry.get("ours") or {}
        crate = entry.get("crate") or {}
        caught = ours.get("outcome") == "caught"
        rows.append(
            [
                entry["id"],
                entry["file"].rpartition("/")[2],
                entry["line"],
                entry["viable"],
                ours.get("outcome", ""),
                crate.get("outcome", ""),
                tests.index(ours["test_id"]) if caught else -1,
                ours.get("check", "") if caught else "",
            ]
        )
    return {
        "kind": "mutants-summary",
        "fingerprint": merged["mutant_set"]["fingerprint"],
        "tool": merged["mutant_set"]["tool"],
        "mutant_count": len(merged["mutant_set"]["ids"]),
        "shards_missing": list(merged["shards_missing"]),
        "columns": list(COLUMNS),
        "tests": tests,
        "rows": rows,
    }


def render(summary: dict[str, Any]) -> str:
    """The summary as JSON with one row per line, so a diff shows mutants."""
    head = {key: value for key, value in summary.items() if key != "rows"}
    lines = [json.dumps(row, ensure_ascii=False) for row in summary["rows"]]
    head["columns"] = "COLUMNS"
    text = json.dumps(head, indent=1, ensure_ascii=False)[:-2]
    text = text.replace('"COLUMNS"', json.dumps(summary["columns"]))
    return text + ',\n "rows": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"


def load(path: Path = SUMMARY) -> list[dict[str, Any]]:
    """The committed summary's rows as dicts keyed by `COLUMNS`; checked."""
    data = json.loads(path.read_text("utf-8"))
    if data.get("kind") != "mutants-summary" or data["columns"] != list(COLUMNS):
        raise ValueError(f"{path}: not a mutants summary with columns {COLUMNS}")
    rows = [dict(zip(COLUMNS, row, strict=True)) for row in data["rows"]]
    tests = data["tests"]
    for row in rows:
        row["test"] = tests[row["test"]] if row["test"] >= 0 else ""
        for side in ("ours", "crate"):
            if row[side] not in (*OUTCOMES, ""):
                raise ValueError(f"{path}: {row['id']}: {side} {row[side]!r}")
    return rows


def header(path: Path = SUMMARY) -> dict[str, Any]:
    """The summary's fields other than its rows."""
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return {key: value for key, value in data.items() if key != "rows"}


def main(argv: Sequence[str]) -> int:
    """`summary DIR [--out FILE]`: 0 written, 2 on refusal (one line)."""
    return summary_command(
        argv,
        prog="ci.mutants summary",
        description=__doc__.splitlines()[0],
        folder_help="a merged report folder",
        report=REPORT_NAME,
        default_out=SUMMARY,
        summarize=lambda path: summarize(read_json(path, REPORT_BYTES_MAX)),
        render=render,
        counted=lambda summary: f"{len(summary['rows'])} mutants",
        refused=(InputError, MergeError),
    )
