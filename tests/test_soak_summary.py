"""The committed soak summary: it loads, and its figures are the ones claimed.

`ci/soak/summary.json` is what `python -m ci.soak summary` makes of the merged
soak report (the reports themselves are CI artifacts). Its machine tests
must be ones the soak can still run, and its counts must add up.
"""

from __future__ import annotations

import json
from pathlib import Path

from command_support import REPO, run_module

from ci.soak.summary import load, summarize
from ci.trust.machine_tests import MACHINE_TESTS

FIXTURE = REPO / "tests" / "fixtures" / "soak" / "20261203T215924.991574Z"
COMMAND_TIMEOUT_S = 120


def test_the_committed_soak_found_nothing_over_its_seeds() -> None:
    """No counterexample, false alarm, flaky or vacuous run in the summary."""
    summary = load()

    assert summary["seeds_run"] > 0
    counts = ("counterexamples", "false_alarms", "flaky", "vacuous_or_other")
    assert dict.fromkeys(counts, 0) == {name: summary[name] for name in counts}
    assert [] == summary["failures"]


def test_the_summary_runs_every_seed_once_per_machine_test() -> None:
    """Each machine test ran every seed, and the pieces' seeds add up to the total."""
    summary = load()

    runs = {name: row["runs"] for name, row in summary["per_target"].items()}
    pieces = sum(piece["seeds_run"] for piece in summary.get("merged_from", []))

    assert set(runs.values()) == {summary["seeds_run"]}
    assert pieces in {0, summary["seeds_run"]}


def test_the_summarys_machine_tests_are_ones_the_soak_runs_today() -> None:
    """A renamed or dropped machine test shows here: each is in the registry."""
    tests = load()["settings"]["targets"]  # old spelling, the recorded key

    assert {name: MACHINE_TESTS[name].nodeid for name in tests} == tests


def test_summary_drops_only_the_per_seed_rows(tmp_path: Path) -> None:
    """`python -m ci.soak summary DIR --out FILE` keeps every other field."""
    out = tmp_path / "summary.json"
    report = json.loads((FIXTURE / "report.json").read_text("utf-8"))

    ran = run_module(
        "ci.soak", "summary", str(FIXTURE), "--out", str(out),
        timeout_s=COMMAND_TIMEOUT_S,
    )  # fmt: skip

    assert 0 == ran.returncode, ran.stderr
    written = json.loads(out.read_text("utf-8"))
    assert summarize(report) == written
    assert set(report) - set(written) == {"per_seed"}
