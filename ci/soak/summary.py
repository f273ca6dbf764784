"""A soak report's figures, without its per-seed rows, committed.

    python -m ci.soak summary DIR [--out FILE]

DIR is a soak folder (one run, or one that `python -m ci.soak merge` wrote).
The summary is its report without `per_seed` (one row per seed and machine
test, most of the bytes): the seeds, counterexamples, false alarms, flaky and
vacuous runs, timings per seed and per machine test, the settings and the pieces
merged. The full reports are CI artifacts. The default output is
`ci/soak/summary.json`, which `tests/test_soak_summary.py` reads.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from ci.cli import UsageError, summary_command
from ci.inputs import InputError, read_json

REPO: Final = Path(__file__).resolve().parents[2]
SUMMARY: Final = REPO / "ci" / "soak" / "summary.json"
REPORT_BYTES_MAX: Final = 64 * 1024 * 1024
"""A merged soak of 1,000 seeds is under 1 MB; a larger file is not a report."""
DROPPED: Final = ("per_seed",)
REQUIRED: Final = ("seeds_run", "counterexamples", "false_alarms", "per_target")
"""`per_target`: the figures per machine test (old spelling, the recorded key)."""


def summarize(report: object) -> dict[str, Any]:
    """The report without its per-seed rows; `UsageError` if it is not one."""
    if not isinstance(report, dict):
        raise UsageError("not a soak report: not a JSON object")
    missing = [key for key in REQUIRED if key not in report]
    if missing:
        raise UsageError(f"not a soak report: no {', '.join(missing)}")
    kept = {key: value for key, value in report.items() if key not in DROPPED}
    return {"kind": "soak-summary", **kept}


def render(summary: dict[str, Any]) -> str:
    """The summary as JSON, keys sorted."""
    return json.dumps(summary, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def load(path: Path = SUMMARY) -> dict[str, Any]:
    """The committed summary."""
    data: dict[str, Any] = json.loads(path.read_text("utf-8"))
    if data.get("kind") != "soak-summary":
        raise ValueError(f"{path}: not a soak summary")
    return data


def main(argv: Sequence[str]) -> int:
    """`summary DIR [--out FILE]`: 0 written, 2 on refusal (one line)."""
    return summary_command(
        argv,
        prog="ci.soak summary",
        description=__doc__.splitlines()[0],
        folder_help="a soak report folder",
        report="report.json",
        default_out=SUMMARY,
        summarize=lambda path: summarize(read_json(path, REPORT_BYTES_MAX)),
        render=render,
        counted=lambda summary: f"{summary['seeds_run']} seeds",
        refused=(InputError,),
    )
