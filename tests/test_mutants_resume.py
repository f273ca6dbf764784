"""Several shards in one sweep, and resuming an interrupted one; no Rust is built.

The sweep's steps that build and test (crate copy, warm-up, baselines, one
mutant) are replaced by recorders, so what is checked is the orchestration:
one set-up for all shards, one report folder per shard, and a resumed run
that keeps its verdicts and tries only the rest.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from command_support import REPO, run_module

from ci.mutants import command
from ci.mutants import sweep as sweep_module
from ci.mutants.cargo_mutants import MutantSet
from ci.mutants.operators import TARGET_FILES, Mutant
from ci.mutants.plan import Config, MutantsError
from ci.mutants.report import MutantRecord, Verdict, partition
from ci.mutants.sweep import Baseline, Run

REPORTS = REPO / "tests" / "fixtures" / "mutants"
COMMAND_TIMEOUT_S = 120
MUTANTS = 6


class Recorder:
    """Stands in for the building and testing steps; counts what was asked."""

    def __init__(self, interrupt_at: str = "") -> None:
        """Nothing asked yet; `interrupt_at` is the mutant that meets Ctrl-C."""
        self.warm_ups = 0
        self.baselines: list[str] = []
        self.tested: list[str] = []
        self.interrupt_at = interrupt_at

    def warm_up(self, run: Run) -> None:
        """Count the warm-up."""
        del run
        self.warm_ups += 1

    def baseline(self, run: Run, relative: str) -> Baseline:
        """Record the file; a clean baseline."""
        del run
        self.baselines.append(relative)
        return Baseline(1.0, [], 60.0, 1.0, [])

    def try_mutant(self, run: Run, mutant: Mutant, pristine: str) -> MutantRecord:
        """Record the mutant; ours catch it, the crate's tests miss it."""
        del run, pristine
        if mutant.id == self.interrupt_at:
            raise KeyboardInterrupt
        self.tested.append(mutant.id)
        return MutantRecord(
            id=mutant.id,
            file=mutant.file,
            line=mutant.line,
            operator=mutant.operator,
            description=mutant.describe(),
            viable=True,
            build_seconds=1.0,
            seconds=2.0,
            ours=Verdict("caught", 1.0, "t", "c"),
            crate=Verdict("missed", 1.0),
        )


def _synthetic_set() -> MutantSet:
    mutants = tuple(
        Mutant(
            file=sorted(TARGET_FILES)[index % 2],
            start=index,
            end=index + 1,
            operator="synthetic",
            original="x",
            replacement="y",
            line=index + 1,
            id=f"C{'AQ'[index % 2]}{index:03d}",
        )
        for index in range(MUTANTS)
    )
    return MutantSet(tuple(sorted(mutants, key=lambda m: m.id)), "synthetic", {})


@pytest.fixture
def sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Config, Recorder]:
    """A configuration over a fake crate tree, with the sweep's steps recorded."""
    source = tmp_path / "source"
    for relative in TARGET_FILES:
        (source / relative).parent.mkdir(parents=True, exist_ok=True)
        (source / relative).write_text("fn main() {}\n", encoding="utf-8")
    recorder = Recorder()
    monkeypatch.setattr(sweep_module, "prepare_crate_tree", lambda root, _src: root)
    monkeypatch.setattr(sweep_module, "mutant_set", lambda _crate: _synthetic_set())
    monkeypatch.setattr(sweep_module, "detect_features", lambda _crate: ())
    monkeypatch.setattr(
        sweep_module, "seed_target_dir", lambda _target, _profile: False
    )
    monkeypatch.setattr(sweep_module, "copy_python_tree", lambda _tree: None)
    monkeypatch.setattr(sweep_module, "restore_file", lambda *_args: None)
    monkeypatch.setattr(sweep_module, "_warm_up", recorder.warm_up)
    monkeypatch.setattr(sweep_module, "_baseline", recorder.baseline)
    monkeypatch.setattr(sweep_module, "_test_mutant", recorder.try_mutant)
    config = Config(
        pytest_options=("-x",),
        pytest_paths=(),
        pytest_timeout_s=None,
        crate_timeout_s=10.0,
        shard=(1, 1),
        ids=(),
        work_dir=tmp_path / "work",
        out_root=tmp_path / "out",
        source=source,
    )
    return config, recorder


def _report(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "report.json").read_text("utf-8"))
    return data


def _shards(config: Config, *indices: int) -> list[Config]:
    return [replace(config, shard=(index, 3)) for index in indices]


def test_several_shards_share_one_set_up_and_get_one_report_each(
    sweep: tuple[Config, Recorder],
) -> None:
    """`--shard 1,3/3`: one warm-up, one baseline per file, two complete reports."""
    config, recorder = sweep
    ids = [mutant.id for mutant in _synthetic_set().mutants]

    runs = sweep_module.execute(_shards(config, 1, 3), {})

    assert 1 == recorder.warm_ups
    assert sorted(TARGET_FILES) == sorted(recorder.baselines)
    assert partition(ids, (1, 3)) + partition(ids, (3, 3)) == recorder.tested
    first, second = (_report(run.out) for run in runs)
    assert ["1/3", "3/3"] == [first["shard"], second["shard"]]
    assert partition(ids, (3, 3)) == [entry["id"] for entry in second["mutants"]]
    assert first["finished"]
    assert second["finished"]
    assert "" == first["setup_shared_with"]
    assert runs[0].out.name == second["setup_shared_with"]


def test_an_interrupted_shard_resumes_with_its_verdicts_and_tries_only_the_rest(
    sweep: tuple[Config, Recorder],
) -> None:
    """The resumed report keeps the first part's entries, then completes."""
    config, recorder = sweep
    ids = [mutant.id for mutant in _synthetic_set().mutants]
    planned = partition(ids, (1, 1))
    recorder.interrupt_at = planned[2]
    with pytest.raises(KeyboardInterrupt):
        sweep_module.execute([config], {})
    [folder] = [path for path in config.out_root.iterdir() if path.name != "latest"]
    partial = _report(folder)
    assert planned[:2] == [entry["id"] for entry in partial["mutants"]]
    assert "KeyboardInterrupt" == partial["interrupted"]
    assert not partial["finished"]

    recorder.interrupt_at = ""
    recorder.tested.clear()
    sweep_module.execute([config], {"1/1": folder})

    assert planned[2:] == recorder.tested
    done = _report(folder)
    assert planned == [entry["id"] for entry in done["mutants"]]
    assert partial["mutants"] == done["mutants"][:2]
    assert done["finished"]
    assert partial["started_at"] == done["started_at"]
    assert [0, 2] == [row["tried_before"] for row in done["resumptions"]]


def test_a_resumed_run_with_another_configuration_is_refused(
    sweep: tuple[Config, Recorder],
) -> None:
    """Verdicts from other pytest options would not belong to this run."""
    config, recorder = sweep
    recorder.interrupt_at = _synthetic_set().mutants[1].id
    with pytest.raises(KeyboardInterrupt):
        sweep_module.execute([config], {})
    [folder] = [path for path in config.out_root.iterdir() if path.name != "latest"]

    with pytest.raises(MutantsError, match=r"another configuration \(\['pytest_op"):
        sweep_module.execute([replace(config, pytest_options=("-q",))], {"1/1": folder})


@pytest.mark.parametrize(
    ("text", "shards"),
    [
        ("3/4", [(3, 4)]),
        ("2,4-6/16", [(2, 16), (4, 16), (5, 16), (6, 16)]),
        ("4-4,1/4", [(1, 4), (4, 4)]),
    ],
)
def test_several_shards_are_named_with_commas_and_ranges(
    text: str, shards: list[tuple[int, int]]
) -> None:
    """`--shard` reads K/N, lists and ranges of one N, in shard order."""
    config, args = command.parse_args(["--shard", text])

    assert shards == [c.shard for c in command.run_configs(config, args.shard)]


def _one_line_exit_2(*argv: str) -> str:
    ran = run_module("ci.mutants", *argv, timeout_s=COMMAND_TIMEOUT_S)
    assert 2 == ran.returncode, ran.stderr
    assert "" == ran.stdout
    assert 1 == len(ran.stderr.splitlines()), ran.stderr
    return ran.stderr


@pytest.mark.parametrize("shard", ["3-2/4", "1-5/4", ",/4", "1,1/4", "2-3,3/4"])
def test_a_bad_shard_list_is_one_line_and_exit_2(shard: str) -> None:
    """A range out of order or beyond N, or a shard named twice, is refused."""
    error = _one_line_exit_2("--shard", shard)

    assert "--shard" in error


def _committed(complete: bool) -> Path:
    for path in sorted(REPORTS.glob("*of16/report.json")):
        data = json.loads(path.read_text("utf-8"))
        done = data["finished"] and len(data["mutants"]) == len(data["planned"])
        if done == complete:
            return path.parent
    pytest.skip(f"no committed {'complete' if complete else 'partial'} shard report")


def test_resuming_a_complete_run_is_one_line_and_exit_2() -> None:
    """Nothing is left to try in a complete run."""
    folder = _committed(complete=True)
    shard = _report(folder)["shard"]

    error = _one_line_exit_2("--shard", shard, "--resume", str(folder))

    assert f"--resume {folder}: that run is complete" in error


def test_resuming_a_folder_of_another_shard_is_one_line_and_exit_2() -> None:
    """The folder's shard must be one of `--shard`'s."""
    folder = _committed(complete=True)
    index, _, count = _report(folder)["shard"].partition("/")
    other = f"{int(index) % int(count) + 1}/{count}"

    error = _one_line_exit_2("--shard", other, "--resume", str(folder))

    assert f"not of {other}" in error


def test_resuming_a_missing_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """A folder that is not there is named."""
    error = _one_line_exit_2("--resume", str(tmp_path / "absent"))

    assert "no such report folder" in error
