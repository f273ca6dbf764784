"""The committed merged report of the full sweep, and its survivors' verdicts.

`ci/mutants/merged/` is what `python -m ci.mutants merge` makes of the
committed shard reports and rechecks; `ci/MUTANTS.md` argues every mutant our
suite does not catch. A new shard, recheck or survivor without its argument
fails here.
"""

from __future__ import annotations

import json
import re
from typing import Any

from command_support import REPO

from ci.mutants.report import markdown, merge

REPORTS = REPO / "ci" / "mutants" / "reports"
MERGED = REPO / "ci" / "mutants" / "merged"
ARGUMENTS = REPO / "ci" / "MUTANTS.md"
MERGED_TITLE = "Mutation sweep, shards merged"
VERDICT = re.compile(r"^\| ((?:[CO][AQ]\d+)(?:, [CO][AQ]\d+)*) \|.*\| \*\*(\w+)")
SURVIVORS_TABLE = "### Survivors of our suite, and why"
NEXT_SECTION = "\n## "


def _committed() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((MERGED / "report.json").read_text("utf-8"))
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


def test_the_committed_merge_is_the_merge_of_the_committed_reports() -> None:
    """Re-merging the shards and rechecks gives the committed report, to the byte."""
    shards = sorted(REPORTS.glob("*of16"))
    rechecks = sorted(REPORTS.glob("rechecks/*-ids"))

    again = merge(shards, rechecks)

    assert json.loads(json.dumps(again)) == _committed()
    assert (MERGED / "report.md").read_text("utf-8") == markdown(again, MERGED_TITLE)


def test_the_full_set_is_tried() -> None:
    """Every mutant of the set has a verdict; no shard is missing."""
    data = _committed()

    assert data["shards_missing"] == []
    assert sorted(e["id"] for e in data["mutants"]) == sorted(data["mutant_set"]["ids"])


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
