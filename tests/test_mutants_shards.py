"""Shards, merging and the command line of the mutation sweep; no Rust is built.

The fixture is one shard report the sweep itself wrote, committed under
tests/fixtures/mutants/ (report.json as `python -m ci.mutants --shard K/N`
left it, without its indentation). Conflicts and duplicates are made by copying one of
them and, for a conflict, changing one verdict in the copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from command_support import REPO, run_module

from ci.mutants import command
from ci.mutants.cargo_mutants import CARGO_MUTANTS_VERSION
from ci.mutants.report import (
    MergeError,
    markdown,
    merge,
    partition,
    record_from_json,
)

REPORTS = REPO / "tests" / "fixtures" / "mutants"
COMMAND_TIMEOUT_S = 120


def _shard_folders() -> list[Path]:
    return sorted(path.parent for path in REPORTS.glob("*/report.json"))


def _read(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "report.json").read_text("utf-8"))
    return data


@pytest.fixture(scope="module")
def folders() -> list[Path]:
    """The committed shard reports (at least one, each with a tried mutant)."""
    found = _shard_folders()
    assert found, f"no committed shard report under {REPORTS}"
    assert all(_read(folder)["mutants"] for folder in found)
    return found


@pytest.fixture(scope="module")
def ids(folders: list[Path]) -> list[str]:
    """Every id of the mutant set the committed reports were cut from."""
    return list(_read(folders[0])["mutant_set"]["ids"])


@pytest.mark.parametrize("count", [1, 2, 3, 7, 16])
def test_the_shards_of_one_n_are_disjoint_and_cover_the_set(
    ids: list[str], count: int
) -> None:
    """Every mutant is in exactly one of the N shards."""
    shards = [partition(ids, (index, count)) for index in range(1, count + 1)]

    together = [mutant for shard in shards for mutant in shard]

    assert sorted(ids) == sorted(together)
    assert len(ids) == len(set(together))
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_a_mutants_shard_depends_on_the_set_not_on_its_order(ids: list[str]) -> None:
    """Shuffled or reversed input gives the same shards (sorted by id)."""
    reordered = list(reversed(ids))

    assert partition(ids, (3, 16)) == partition(reordered, (3, 16))


def test_each_committed_report_holds_only_its_own_shard(folders: list[Path]) -> None:
    """The sweep tried its shard's mutants, in id order, and nothing else."""
    for folder in folders:
        data = _read(folder)
        index, _, count = data["shard"].partition("/")
        planned = partition(data["mutant_set"]["ids"], (int(index), int(count)))
        tried = [entry["id"] for entry in data["mutants"]]

        assert planned == data["planned"]
        assert planned[: len(tried)] == tried


def test_a_report_entry_reads_back_as_the_record_it_was_written_from(
    folders: list[Path],
) -> None:
    """record_from_json inverts as_json on every committed entry."""
    entries = [entry for folder in folders for entry in _read(folder)["mutants"]]

    again = [record_from_json(entry).as_json() for entry in entries]

    assert entries == again


def test_the_committed_markdown_is_rendered_from_the_json_alone(
    folders: list[Path],
) -> None:
    """report.md is a function of report.json (so a merged one reads the same)."""
    for folder in folders:
        data = _read(folder)
        title = f"Mutation sweep {data['started_at']}"

        assert (folder / "report.md").read_text("utf-8") == markdown(data, title)


def test_merging_the_committed_shards_keeps_every_verdict(folders: list[Path]) -> None:
    """The merged report has each shard's entries, unchanged, and their totals."""
    entries = {
        entry["id"]: entry for folder in folders for entry in _read(folder)["mutants"]
    }

    merged = merge(folders)

    assert sorted(entries) == [entry["id"] for entry in merged["mutants"]]
    assert [entries[key] for key in sorted(entries)] == merged["mutants"]
    assert len(entries) == merged["totals"]["tried"]
    assert len(folders) == len(merged["shards"])


def test_one_shard_given_twice_is_refused_as_duplicate_entries(
    folders: list[Path], tmp_path: Path
) -> None:
    """The same report in two folders: the first repeated mutant is named."""
    first = shutil.copytree(folders[0], tmp_path / "a")
    second = shutil.copytree(folders[0], tmp_path / "b")
    mutant = _read(first)["mutants"][0]["id"]

    with pytest.raises(MergeError, match=f"duplicate entries for mutant {mutant}"):
        merge([first, second])


def test_a_mutant_with_two_different_verdicts_is_refused_as_a_conflict(
    folders: list[Path], tmp_path: Path
) -> None:
    """Two reports disagreeing on one mutant cannot be merged."""
    first = shutil.copytree(folders[0], tmp_path / "a")
    second = shutil.copytree(folders[0], tmp_path / "b")
    data = _read(second)
    entry = data["mutants"][0]
    entry["seconds"] = entry["seconds"] + 1
    (second / "report.json").write_text(json.dumps(data), "utf-8")

    with pytest.raises(
        MergeError, match=f"conflicting entries for mutant {entry['id']}"
    ):
        merge([first, second])


def test_reports_of_another_set_or_another_n_are_refused(
    folders: list[Path], tmp_path: Path
) -> None:
    """A different fingerprint or a different shard count is named in the error."""
    original = _read(folders[0])
    other_set = shutil.copytree(folders[0], tmp_path / "set")
    data = _read(other_set)
    data["mutant_set"]["fingerprint"] = "0" * 16
    data["shard"] = "2/" + data["shard"].partition("/")[2]
    (other_set / "report.json").write_text(json.dumps(data), "utf-8")
    other_n = shutil.copytree(folders[0], tmp_path / "n")
    data = _read(other_n)
    count = int(original["shard"].partition("/")[2])
    data["shard"] = f"1/{count + 1}"
    (other_n / "report.json").write_text(json.dumps(data), "utf-8")

    with pytest.raises(MergeError, match="of another mutant set"):
        merge([folders[0], other_set])
    with pytest.raises(MergeError, match=f"not of N = {count}"):
        merge([folders[0], other_n])


def _one_line_exit_2(*argv: str) -> str:
    ran = run_module("ci.mutants", *argv, timeout_s=COMMAND_TIMEOUT_S)
    assert 2 == ran.returncode, ran.stderr
    assert "" == ran.stdout
    assert 1 == len(ran.stderr.splitlines()), ran.stderr
    return ran.stderr


@pytest.mark.parametrize("shard", ["0/4", "5/4", "4", "1/0", "a/b"])
def test_a_bad_shard_is_one_line_and_exit_2(shard: str) -> None:
    """`--shard` wants K/N with 1 <= K <= N."""
    error = _one_line_exit_2("--shard", shard)

    assert "--shard" in error
    assert "1 <= K <= N" in error


def test_a_source_that_is_not_a_crate_tree_is_one_line_and_exit_2(
    tmp_path: Path,
) -> None:
    """`--source` must hold the two files the sweep mutates."""
    error = _one_line_exit_2("--source", str(tmp_path), "--list")

    assert f"--source {tmp_path}: not a dynamo-kv-router tree" in error


def test_merging_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """`merge` names the folder that does not exist."""
    missing = tmp_path / "absent"

    error = _one_line_exit_2("merge", str(missing))

    assert f"no such report folder: {missing}" in error


def test_merging_one_shard_twice_is_one_line_and_exit_2(
    folders: list[Path], tmp_path: Path
) -> None:
    """The command line refuses duplicates with the same one line."""
    first = shutil.copytree(folders[0], tmp_path / "a")
    second = shutil.copytree(folders[0], tmp_path / "b")

    error = _one_line_exit_2(
        "merge", str(first), str(second), "--out", str(tmp_path / "m")
    )

    assert "duplicate entries for mutant" in error


def test_merge_writes_one_report_from_the_shards(
    folders: list[Path], tmp_path: Path
) -> None:
    """`merge DIR... --out DIR` writes report.json and report.md there."""
    out = tmp_path / "merged"

    ran = run_module(
        "ci.mutants",
        "merge",
        *map(str, folders),
        "--out",
        str(out),
        timeout_s=COMMAND_TIMEOUT_S,
    )

    assert 0 == ran.returncode, ran.stderr
    assert merge(folders) == _read(out)
    assert (out / "report.md").read_text("utf-8").startswith("# Mutation sweep")


def test_without_cargo_mutants_the_sweep_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The optional tool missing: the install command, no traceback."""
    monkeypatch.setenv("PATH", "/nonexistent")

    code = command.main(["--shard", "1/4"])

    error = capsys.readouterr().err
    assert 2 == code
    assert 1 == len(error.splitlines()), error
    assert f"cargo install --locked cargo-mutants@{CARGO_MUTANTS_VERSION}" in error


def _recheck_of(folder: Path, tmp_path: Path, *, kind: str = "ids") -> Path:
    """An `--ids` report that reran the shard's first viable mutant: now caught."""
    data = _read(folder)
    entry = next(entry for entry in data["mutants"] if entry["viable"])
    again = json.loads(json.dumps(entry))
    for side in ("ours", "union"):
        again[side] = {**again[side], "outcome": "caught", "test_id": "t", "check": "c"}
    recheck = tmp_path / "recheck"
    recheck.mkdir()
    report = {**data, "kind": kind, "git_commit": "f" * 40, "mutants": [again]}
    (recheck / "report.json").write_text(json.dumps(report), encoding="utf-8")
    return recheck


def test_a_recheck_replaces_the_shards_entry_and_says_so(
    folders: list[Path], tmp_path: Path
) -> None:
    """A later --ids run's verdict replaces the shard's, listed before and after."""
    recheck = _recheck_of(folders[0], tmp_path)
    mutant = _read(recheck)["mutants"][0]["id"]
    before = _read(folders[0])["mutants"]

    merged = merge(folders, [recheck])

    entry = next(entry for entry in merged["mutants"] if entry["id"] == mutant)
    assert "caught" == entry["ours"]["outcome"]
    [row] = merged["rechecked"]
    assert mutant == row["id"]
    old = next(entry for entry in before if entry["id"] == mutant)
    assert old["ours"]["outcome"] == row["before"]["ours"]
    assert "caught" == row["after"]["ours"]
    assert "Rechecked by later runs" in markdown(merged, "merged")


def test_only_an_ids_run_of_the_same_set_rechecks(
    folders: list[Path], tmp_path: Path
) -> None:
    """A shard report given as a recheck is refused in one line."""
    shard_like = _recheck_of(folders[0], tmp_path, kind="shard")

    with pytest.raises(MergeError, match="is not an --ids run"):
        merge(folders, [shard_like])
