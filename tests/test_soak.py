"""The soak counts false alarms per seed, rechecks them, and keeps a JSON report.

The real soak (`python -m ci.soak --seeds 1000`) is a command; here two seeds
of a batch too small to reach every coverage goal make two false alarms that
the recheck must reproduce (same seed, same verdict: not flaky).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from ci.soak.command import (
    MachineTestRun,
    SeedRun,
    Soak,
    report,
    seed_ranges,
    summary,
    write_report,
)
from ci.soak.merge import MergeError, main, merge

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 600


@pytest.mark.slow
def test_vacuous_seeds_are_false_alarms_that_reproduce(tmp_path: Path) -> None:
    """Two vacuous seeds: two false alarms, both reproduced, none flaky; exit 1."""
    result = subprocess.run(  # noqa: S603 - our own interpreter and module
        [
            sys.executable,
            "-m",
            "ci.soak",
            "--seeds",
            "2",
            "--tests",
            "queue-model",
            "--examples",
            "5",
            "--jobs",
            "1",
            "--artifacts",
            str(tmp_path),
        ],
        cwd=REPO_ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    report = json.loads((tmp_path / "soak" / "latest" / "report.json").read_text())

    assert 1 == result.returncode, result.stdout + result.stderr
    assert report["complete"]
    assert 2 == report["seeds_run"]
    assert 2 == report["false_alarms"]
    assert [1, 2] == report["false_alarm_seeds"]
    assert 0 == report["counterexamples"]
    assert 0 == report["flaky"]
    assert [True, True] == [check["reproduced"] for check in report["rechecks"]]
    assert 5 <= report["per_target"]["queue-model"]["test_cases"] // 2
    assert report["seconds_per_seed"]["max"] > 0


def _head(repo: Path) -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"],  # noqa: S607 - git from PATH
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _piece(
    folder: Path,
    seeds: Sequence[int],
    *,
    commit: str,
    examples: int = 400,
    dirty: bool = False,
    crate_version: str = "1.6.1",
) -> Path:
    """A soak folder with one passing or failing run per seed (made, not run).

    It claims to have run at `commit`.
    """
    state = Soak(
        settings={
            "profile": "ci-seeded",
            "max_examples": examples,
            "stateful_step_count": 60,
            "targets": {"queue": "stateful/test_queue_machine.py::t"},
            "first_seed": seeds[0],
            "seeds": len(seeds),
            "jobs": 1,
        }
    )
    for seed in seeds:
        outcome = "failed" if seed == 3 else "passed"  # seed 3: one false alarm
        run = MachineTestRun(
            target="queue",
            outcome=outcome,
            message="",
            counterexample=False,
            flaky=False,
            test_cases=400,
            seconds=seed / 10,
            replay=(),
        )
        state.seeds.append(SeedRun(seed, float(seed), 1 * (seed == 3), (run,)))
    folder.mkdir(parents=True)
    document = report(state, complete=True)
    document |= {
        "git_commit": commit,
        "git_dirty": dirty,
        "crate_source": "registry",
        "crate_version": crate_version,
    }
    write_report(folder, document)
    return folder


@pytest.fixture
def checkout(tmp_path: Path) -> tuple[Path, str]:
    """A git repository of its own and the one commit the pieces claim to have run.

    The suite's own folder need not be a git checkout: the gate runs it in a copy.
    """
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)  # noqa: S607
    return repo, _commit(repo, {"stateful/m.py": "rule = 1\n"}, "one")


def test_pieces_merge_into_the_report_of_one_run(
    tmp_path: Path, checkout: tuple[Path, str]
) -> None:
    """Seeds 1-2 and 3-5 merge into the figures of seeds 1-5 run at once."""
    repo, commit = checkout
    whole = merge([_piece(tmp_path / "whole", range(1, 6), commit=commit)], repo=repo)
    merged = merge(
        [
            _piece(tmp_path / "a", range(1, 3), commit=commit),
            _piece(tmp_path / "b", range(3, 6), commit=commit),
        ],
        repo=repo,
    )

    for key in ("seeds_run", "false_alarms", "false_alarm_seeds", "per_seed"):
        assert whole[key] == merged[key], key
    assert {"mean": 3.0, "median": 3.0, "p95": 5.0, "max": 5.0} == merged[
        "seconds_per_seed"
    ]
    assert ["1-2", "3-5"] == [piece["seeds"] for piece in merged["merged_from"]]
    assert ["1-5"] == merged["seed_ranges"]
    out = ["--out", str(tmp_path / "out"), "--repo", str(repo)]
    assert 1 == main([str(tmp_path / "a"), str(tmp_path / "b"), *out])
    assert (tmp_path / "out" / "report.json").is_file()


def test_a_merge_names_the_seeds_it_is_missing(
    tmp_path: Path, checkout: tuple[Path, str]
) -> None:
    """Pieces 1-2 and 5-6 cover two ranges; the report and summary show the gap."""
    repo, commit = checkout
    merged = merge(
        [
            _piece(tmp_path / "a", range(1, 3), commit=commit),
            _piece(tmp_path / "b", range(5, 7), commit=commit),
        ],
        repo=repo,
    )

    assert ["1-2", "5-6"] == merged["seed_ranges"]
    assert ["1-2", "5-6"] == [piece["seeds"] for piece in merged["merged_from"]]
    gapped = merge([_piece(tmp_path / "c", [1, 2, 4], commit=commit)], repo=repo)
    assert ["1-2, 4-4"] == [piece["seeds"] for piece in gapped["merged_from"]]
    assert "seeds: 4 (1-2, 5-6)  false alarms: 0  flaky: 0" == summary(merged)[0]


def test_seed_ranges_are_sorted_runs_without_a_gap() -> None:
    """Unordered, repeated seeds fold into sorted ranges; no seed is no range."""
    assert ["1-3", "5-5", "9-10"] == seed_ranges([10, 2, 5, 1, 3, 9, 2])
    assert [] == seed_ranges([])


def test_pieces_that_measured_different_things_do_not_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], checkout: tuple[Path, str]
) -> None:
    """Another batch size, a seed twice, or an old report: one line, exit 2."""
    repo, commit = checkout
    a = _piece(tmp_path / "a", range(1, 3), commit=commit)
    other = _piece(tmp_path / "other", range(3, 5), commit=commit, examples=20)
    old = tmp_path / "old"
    old.mkdir()
    (old / "report.json").write_text(json.dumps({"settings": {}}))

    for pieces, says in (
        ([a, other], "max_examples 20 differs"),
        ([a, a], "seed 1 is in both"),
        (
            [a, _piece(tmp_path / "dirty", range(5, 6), commit=commit, dirty=True)],
            "uncommitted",
        ),
        (
            [
                a,
                _piece(
                    tmp_path / "crate",
                    range(6, 7),
                    commit=commit,
                    crate_version="1.7.0",
                ),
            ],
            "crate_version '1.7.0' differs",
        ),
        ([a, _piece(tmp_path / "far", range(7, 8), commit="f" * 40)], "not in"),
        ([a, old], "no per-seed rows"),
        ([tmp_path / "missing"], "no report.json there"),
    ):
        assert 2 == main([str(piece) for piece in pieces] + ["--repo", str(repo)])
        err = capsys.readouterr().err
        assert 1 == len(err.splitlines()), err
        assert says in err, err


def _commit(repo: Path, files: dict[str, str], message: str) -> str:
    """Write `files` in `repo`, commit them, and return the commit hash."""
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    for command in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(  # noqa: S603 - fixed git arguments
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *command],  # noqa: S607
            cwd=repo,
            check=True,
        )
    return _head(repo)


def test_pieces_merge_only_when_they_ran_the_same_code_under_test(
    tmp_path: Path,
) -> None:
    """A docs-only commit keeps a soak mergeable; a changed machine does not."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)  # noqa: S607
    first = _commit(repo, {"stateful/m.py": "rule = 1\n", "README.md": "a"}, "one")
    docs = _commit(repo, {"README.md": "b"}, "docs only")
    machine = _commit(repo, {"stateful/m.py": "rule = 2\n"}, "a new rule")
    a = _piece(tmp_path / "a", range(1, 3), commit=first)

    same = merge([a, _piece(tmp_path / "b", range(3, 5), commit=docs)], repo=repo)
    changed = _piece(tmp_path / "c", range(5, 7), commit=machine)
    with pytest.raises(MergeError, match="stateful differ"):
        merge([a, changed], repo=repo)
    mixed = merge([a, changed], repo=repo, mixed_code=True)

    assert same["code_under_test"]["one_version"]
    assert same["code_under_test"]["trees"]["model"] == "absent"
    assert "1.6.1" == same["crate_version"]
    assert not mixed["code_under_test"]["one_version"]
    assert mixed["crate_version"] is None
    assert 4 == mixed["seeds_run"]


@pytest.mark.parametrize(
    "case",
    [
        ("seed", 0, "seed: want a whole number of at least 1: 0"),
        ("seed", -3, "seed: want a whole number of at least 1: -3"),
        ("seed", "4", "seed: want a whole number of at least 1: '4'"),
        ("seconds", "12", "seconds: want a finite number of seconds >= 0: '12'"),
        ("seconds", float("nan"), "not valid JSON: NaN is not a JSON number"),
        ("seconds", -1.5, "seconds: want a finite number of seconds >= 0: -1.5"),
        ("targets", {}, "targets: want a list"),
    ],
)
def test_a_row_the_soak_cannot_have_written_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    checkout: tuple[Path, str],
    case: tuple[str, object, str],
) -> None:
    """Seeds from 1 and finite, non-negative seconds only: else one line, exit 2."""
    field, value, says = case
    repo, commit = checkout
    piece = _piece(tmp_path / "a", range(1, 3), commit=commit)
    path = piece / "report.json"
    document = json.loads(path.read_text())
    document["per_seed"][0][field] = value
    path.write_text(json.dumps(document))
    out = tmp_path / "out"

    status = main([str(piece), "--repo", str(repo), "--out", str(out)])

    err = capsys.readouterr().err
    assert 2 == status
    assert 1 == len(err.splitlines()), err
    assert says in err
    assert not out.exists()


def test_a_report_whose_settings_are_not_a_mapping_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A report.json with settings of the wrong type is not a soak report."""
    folder = tmp_path / "piece"
    folder.mkdir()
    (folder / "report.json").write_text(json.dumps({"settings": [], "per_seed": []}))

    status = main([str(folder), "--out", str(tmp_path / "out")])

    err = capsys.readouterr().err
    assert 2 == status
    assert 1 == len(err.splitlines()), err
    assert "not a soak report" in err
