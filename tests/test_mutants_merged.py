"""The committed summary of the full sweep, and its survivors' verdicts.

`ci/mutants/summary.json` is what `python -m ci.mutants summary` makes of the
merged report of every shard and recheck (the reports themselves are CI
artifacts); `ci/MUTANTS.md` argues every mutant our suite does not catch. A
new survivor without its argument, or a summary that no longer matches the
crate files the sweep mutates, fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from command_support import REPO, run_module

from ci.mutants import plan
from ci.mutants.report import merge
from ci.mutants.summary import COLUMNS, header, load, render, summarize

FIXTURE = REPO / "tests" / "fixtures" / "mutants" / "20261204T130509Z-14of16"
ARGUMENTS = REPO / "ci" / "MUTANTS.md"
VERDICT = re.compile(r"^\| ((?:[CO][AQ]\d+)(?:, [CO][AQ]\d+)*) \|.*\| \*\*(\w+)")
SURVIVORS_TABLE = "### Survivors of our suite, and why"
NEXT_SECTION = "\n## "
COMMAND_TIMEOUT_S = 120


def _committed() -> dict[str, Any]:
    """The summary's header, with its rows as `mutants` in the merged shape."""
    data = header()
    data["mutants"] = [
        {
            "id": row["id"],
            "file": row["file"],
            "viable": row["viable"],
            "ours": {"outcome": row["ours"]} if row["ours"] else None,
            "crate": {"outcome": row["crate"]} if row["crate"] else None,
        }
        for row in load()
    ]
    return data


def _verdicts() -> dict[str, str]:
    """Mutant id -> its verdict word in MUTANTS.md's table of the full sweep."""
    text = ARGUMENTS.read_text("utf-8")
    table = text.split(SURVIVORS_TABLE, 1)[1].split(NEXT_SECTION, 1)[0]
    verdicts: dict[str, str] = {}
    for line in table.splitlines():
        match = VERDICT.match(line)
        if match:
            for mutant in match.group(1).split(", "):
                verdicts[mutant] = match.group(2)
    return verdicts


def _caught_by_ours(entry: dict[str, Any]) -> bool:
    ours = entry.get("ours")
    return ours is not None and ours["outcome"] == "caught"


def _outcome(entry: dict[str, Any], side: str) -> str | None:
    verdict = entry.get(side)
    return None if verdict is None else str(verdict["outcome"])


def test_a_summary_keeps_each_merged_entry_as_one_row() -> None:
    """Summarizing a merged report gives one row per entry, read back alike."""
    merged = merge([FIXTURE])

    summary = summarize(merged)

    assert [e["id"] for e in merged["mutants"]] == [row[0] for row in summary["rows"]]
    for entry, row in zip(merged["mutants"], summary["rows"], strict=True):
        assert entry["file"].endswith("/" + row[1])
        assert (entry["line"], entry["viable"]) == (row[2], row[3])
        assert (_outcome(entry, "ours") or "") == row[4]
        caught = _caught_by_ours(entry)
        assert (caught and entry["ours"]["test_id"]) == (
            caught and summary["tests"][row[6]]
        )


def test_the_summary_command_writes_what_summarize_gives(tmp_path: Path) -> None:
    """`summary DIR --out FILE` renders `summarize` of DIR's merged report."""
    merged_folder = tmp_path / "merged"
    ran = run_module(
        "ci.mutants", "merge", str(FIXTURE), "--out", str(merged_folder),
        timeout_s=COMMAND_TIMEOUT_S,
    )  # fmt: skip
    assert 0 == ran.returncode, ran.stderr
    out = tmp_path / "summary.json"

    ran = run_module(
        "ci.mutants", "summary", str(merged_folder), "--out", str(out),
        timeout_s=COMMAND_TIMEOUT_S,
    )  # fmt: skip

    assert 0 == ran.returncode, ran.stderr
    merged = json.loads((merged_folder / "report.json").read_text("utf-8"))
    assert render(summarize(merged)) == out.read_text("utf-8")
    assert len(merged["mutants"]) == len(load(out))


def test_a_shard_report_is_refused_by_summary_in_one_line() -> None:
    """Only a merged report is summarized; a shard's is named as not one."""
    ran = run_module("ci.mutants", "summary", str(FIXTURE), timeout_s=COMMAND_TIMEOUT_S)

    assert 2 == ran.returncode
    assert "" == ran.stdout
    assert 1 == len(ran.stderr.splitlines()), ran.stderr
    assert ran.stderr.startswith("ci.mutants summary: error: not a merged report")


def test_the_summary_names_only_files_the_sweep_mutates() -> None:
    """Each row's file is one of the crate files in the mutation plan."""
    mutated = {path.rpartition("/")[2] for path in plan.PYTEST_PATHS_BY_FILE}

    files = {row["file"] for row in load()}

    assert files <= mutated
    assert list(COLUMNS) == header()["columns"]


def test_the_full_set_is_tried() -> None:
    """Every mutant of the set has a verdict; no shard is missing."""
    data = _committed()

    ids = [e["id"] for e in data["mutants"]]
    assert data["shards_missing"] == []
    assert len(ids) == len(set(ids)) == data["mutant_count"]


def test_every_survivor_of_ours_is_argued_unreachable_or_equivalent() -> None:
    """A viable mutant our suite misses has a written argument in MUTANTS.md."""
    verdicts = _verdicts()
    survivors = [
        entry["id"]
        for entry in _committed()["mutants"]
        if entry["viable"] and not _caught_by_ours(entry)
    ]

    unargued = [
        mutant
        for mutant in survivors
        if verdicts.get(mutant) not in {"unreachable", "equivalent", "hangs", "gap"}
    ]

    assert survivors, "the merged report lists no survivor at all"
    assert unargued == []


def test_a_mutant_argued_to_hang_is_one_our_suite_timed_out_on() -> None:
    """`hangs` stands only for a mutant on which our suite hit its time limit."""
    verdicts = _verdicts()
    timed_out = {
        e["id"] for e in _committed()["mutants"] if _outcome(e, "ours") == "timeout"
    }

    hangs = {m for m, v in verdicts.items() if v == "hangs"}

    assert sorted(hangs) == sorted(timed_out)


def test_a_mutant_argued_out_of_reach_is_not_one_ours_catches() -> None:
    """No argument stands for a mutant the suite in fact catches (a stale row)."""
    verdicts = _verdicts()
    caught = {e["id"] for e in _committed()["mutants"] if _caught_by_ours(e)}

    argued = {m for m, v in verdicts.items() if v in {"unreachable", "equivalent"}}

    assert sorted(argued & caught) == []


def test_over_the_reachable_mutants_ours_beats_the_crates_tests_by_20_points() -> None:
    """The issue's bar: >= 95 % of reachable, non-equivalent mutants, +20 points."""
    verdicts = _verdicts()
    reachable = [
        entry
        for entry in _committed()["mutants"]
        if entry["viable"]
        and verdicts.get(entry["id"]) not in {"unreachable", "equivalent"}
    ]

    def rate(side: str) -> float:
        caught = sum(
            1
            for e in reachable
            if e.get(side) is not None and e[side]["outcome"] == "caught"
        )
        return caught / len(reachable)

    assert rate("ours") >= 0.95
    assert rate("ours") - rate("crate") >= 0.20


def test_over_all_viable_mutants_ours_kills_95_percent_20_points_above_the_crate() -> (
    None
):
    """The issue's bar over every viable mutant, with no verdict left out."""
    viable = [entry for entry in _committed()["mutants"] if entry["viable"]]

    def rate(side: str) -> float:
        caught = sum(1 for e in viable if _outcome(e, side) == "caught")
        return caught / len(viable)

    assert rate("ours") >= 0.95
    assert rate("ours") - rate("crate") >= 0.20
