"""Soak reports run in pieces, merged into one.

    python -m ci.soak merge DIR... [--out DIR] [--mixed-code] [--repo DIR]

Each DIR is a soak folder (holding `report.json`) or a `soak/` folder whose
`latest` is taken. The pieces must have measured the same thing -- profile,
examples per test, steps per program, machine tests -- and no seed twice; the merged
report is computed from the pieces' per-seed rows by the same function as a
single run's, lists its pieces (`merged_from`: folder, commit, seeds, complete)
and is written to `--out` (default: a new stamped folder beside the first
piece). Exit status: 0 clean, 1 false alarm or flaky, 2 pieces that cannot be
merged (one line on stderr).

Pieces may come from different commits, but they must have run the same code
under test on the same crate: the git trees of `CODE_UNDER_TEST` at each
piece's commit must be equal (git hashes content, so equal trees are equal
files), the pieces clean, and their crate source and version alike. A commit
that changed only documentation keeps a soak mergeable; one that changed a
machine, the model, a property or the binding does not. `--mixed-code` merges
such pieces anyway and says so (`code_under_test.one_version` false).
`--repo` names the git repository that holds the pieces' commits (default:
this checkout).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final

from ci.cli import (
    OneLineParser,
    UsageError,
    WriteFailed,
    input_folder,
    output_folder,
    separate,
    write_failed,
)
from ci.inputs import (
    InputError,
    at,
    expect_bool,
    expect_int,
    expect_list,
    expect_number,
    expect_object,
    expect_optional,
    expect_str,
    read_json,
)
from ci.replay.artifacts import LATEST, REPO_ROOT, utc_stamp
from ci.soak import command
from ci.soak.command import Recheck, Soak, seed_from_row
from ci.trust.machine_tests import MACHINE_TESTS

SAME: Final[tuple[str, ...]] = (
    "profile",
    "max_examples",
    "stateful_step_count",
    "targets",
)
"""Settings every piece must share; seeds and jobs may differ."""

CODE_UNDER_TEST: Final[tuple[str, ...]] = (
    "ci/profiles.py",
    "ci/trust",
    "impl",
    "model",
    "properties",
    "pyproject.toml",
    "stateful",
)
"""What decides a seed's verdict: the machines, the model, the properties, the
binding (with its pinned Cargo.lock), the profiles and the pytest plugin."""
CRATE_KEYS: Final[tuple[str, ...]] = ("crate_source", "crate_version")
ABSENT: Final[str] = "absent"
GIT_TIMEOUT_S: Final[int] = 30
COMMIT: Final[re.Pattern[str]] = re.compile("[0-9a-f]{40}")


REPORT_BYTES_MAX: Final[int] = 64 * 1024 * 1024
"""A soak report is a few hundred kilobytes; a larger file is not one."""


class MergeError(UsageError):
    """Pieces that cannot be merged (one line to print)."""


def read_piece(folder: Path) -> dict[str, Any]:
    """One piece's report, from its folder or its soak folder's `latest`."""
    for candidate in (
        folder / command.REPORT_FILE,
        folder / LATEST / command.REPORT_FILE,
    ):
        if candidate.is_file():
            try:
                document = read_json(candidate, REPORT_BYTES_MAX)
                if isinstance(document, dict) and "per_seed" not in document:
                    raise MergeError(
                        f"{candidate}: no per-seed rows "
                        "(written before soaks could merge)"
                    )
                return _checked_piece(document)
            except InputError as error:
                raise MergeError(
                    f"not a soak report: {error.in_file(str(candidate))}"
                ) from None
    raise MergeError(f"{folder}: no {command.REPORT_FILE} there")


PIECE_KEYS: Final[frozenset[str]] = frozenset(
    {"settings", "per_seed", "rechecks", "complete", "wall_seconds"}
)
"""What `merge` reads of a piece (`_code_of` reads the commit and tree state)."""
RECHECK_KEYS: Final[frozenset[str]] = frozenset(
    {"seed", "target", "first", "second", "reproduced"}
)


def _checked_piece(document: object) -> dict[str, Any]:
    """A soak report's fields `merge` reads, by type and range (`InputError`).

    The per-seed rows are read by `command.seed_from_row`, which checks each.
    """
    top = expect_object(document, "", frozenset(), _keys(document))
    missing = sorted(PIECE_KEYS - top.keys())
    if missing:
        raise InputError("", "", f"missing field {missing[0]!r}")
    settings = expect_object(
        top["settings"], "settings", frozenset(SAME), _keys(top["settings"])
    )
    expect_str(settings["profile"], "settings.profile")
    expect_int(settings["max_examples"], "settings.max_examples", 1)
    expect_int(settings["stateful_step_count"], "settings.stateful_step_count", 1)
    tests = expect_object(  # `targets`: old spelling, the recorded key
        settings["targets"], "settings.targets", frozenset(), _keys(settings["targets"])
    )
    if not tests:
        raise InputError(
            "", "settings.targets", "no machine test: a soak runs at least one"
        )
    for name, nodeid in sorted(tests.items()):
        if name not in MACHINE_TESTS:
            raise InputError("", "settings.targets", f"unknown machine test {name!r}")
        expect_str(nodeid, at("settings.targets", name))
    if "jobs" in settings:
        expect_int(settings["jobs"], "settings.jobs", 1)
    expect_list(top["per_seed"], "per_seed")
    for index, check in enumerate(expect_list(top["rechecks"], "rechecks")):
        where = at("rechecks", index)
        raw = expect_object(check, where, RECHECK_KEYS)
        expect_int(raw["seed"], at(where, "seed"), 1, command.SEED_MAX)
        for key in ("target", "first", "second"):
            expect_str(raw[key], at(where, key))
        expect_bool(raw["reproduced"], at(where, "reproduced"))
    expect_bool(top["complete"], "complete")
    expect_optional(top["wall_seconds"], "wall_seconds", partial(expect_number, low=0))
    return top


def _keys(value: object) -> frozenset[str]:
    return frozenset(value) if isinstance(value, dict) else frozenset()


def _git(repo: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """Run git in `repo` (a `MergeError` if it cannot run)."""
    try:
        return subprocess.run(  # noqa: S603 - fixed git arguments, a checked commit
            ["git", *arguments],  # noqa: S607 - git from PATH, as a developer runs it
            cwd=repo,
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as error:
        raise MergeError(f"cannot run git in {repo}: {error}") from None


def code_trees(commit: str, repo: Path = REPO_ROOT) -> dict[str, str]:
    """The git object of each path of `CODE_UNDER_TEST` at `commit` in `repo`."""
    if not COMMIT.fullmatch(commit):
        raise MergeError(f"{commit!r} is not a full commit hash")
    if _git(repo, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
        raise MergeError(f"commit {commit[:12]} is not in {repo}")
    trees = {}
    for path in CODE_UNDER_TEST:
        found = _git(repo, "rev-parse", "--verify", "--quiet", f"{commit}:{path}")
        trees[path] = found.stdout.strip() if found.returncode == 0 else ABSENT
    return trees


def _code_of(folder: Path, document: dict[str, Any], repo: Path) -> dict[str, str]:
    """A piece's code under test, or a `MergeError` saying why it is unknown."""
    commit = document.get("git_commit")
    if not isinstance(commit, str) or not commit:
        raise MergeError(f"{folder}: the report names no commit")
    if document.get("git_dirty") is not False:
        raise MergeError(f"{folder}: ran on a tree with uncommitted changes")
    return code_trees(commit, repo)


def _same_code(
    pieces: Sequence[tuple[Path, dict[str, Any]]], repo: Path, *, mixed: bool
) -> dict[str, Any]:
    """Check the pieces ran one version of the code under test on one crate."""
    problems: list[str] = []
    first_folder, first = pieces[0]
    problems.extend(
        f"{folder}: {key} {document.get(key)!r} differs from "
        f"{first.get(key)!r} in {first_folder}"
        for folder, document in pieces[1:]
        for key in CRATE_KEYS
        if document.get(key) != first.get(key)
    )
    trees: dict[str, dict[str, str]] = {}
    for folder, document in pieces:
        try:
            trees[str(folder)] = _code_of(folder, document, repo)
        except MergeError as error:
            problems.append(str(error))
    versions = {json.dumps(tree, sort_keys=True) for tree in trees.values()}
    if len(versions) > 1:
        reference_folder, reference = next(iter(trees.items()))
        for name, tree in trees.items():
            changed = sorted(p for p in CODE_UNDER_TEST if tree[p] != reference[p])
            if changed:
                problems.append(
                    f"{name}: {', '.join(changed)} differ from {reference_folder}"
                )
    if problems and not mixed:
        raise MergeError(
            f"pieces ran different code under test: {problems[0]} "
            "(--mixed-code merges them anyway)"
        )
    return {
        "one_version": not problems,
        "paths": list(CODE_UNDER_TEST),
        "trees": next(iter(trees.values())) if not problems else None,
        "problems": problems,
    }


def merge(
    folders: Sequence[Path], *, repo: Path = REPO_ROOT, mixed_code: bool = False
) -> dict[str, Any]:
    """The merged report of the pieces in `folders`.

    Raises `MergeError` for pieces that measured different things, and for
    pieces that ran different code under test unless `mixed_code`.
    """
    if not folders:
        raise MergeError("merge needs at least one soak folder")
    pieces = [(folder, read_piece(folder)) for folder in folders]
    first = pieces[0][1]["settings"]
    seen: dict[int, Path] = {}
    code = _same_code(pieces, repo, mixed=mixed_code)
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
        sources.append(
            {
                "folder": str(folder),
                "git_commit": document.get("git_commit"),
                "seeds": ", ".join(command.seed_ranges(run.seed for run in runs)),
                "seeds_run": len(runs),
                "complete": document.get("complete"),
                "jobs": settings.get("jobs"),
                "wall_seconds": document.get("wall_seconds"),
            }
        )
    document = command.report(state, complete=all(s["complete"] for s in sources))
    document["wall_seconds"] = round(sum(s["wall_seconds"] or 0 for s in sources), 1)
    document["settings"]["jobs"] = "/".join(str(s["jobs"]) for s in sources)
    document["merged_from"] = sources
    document["code_under_test"] = code
    for key in ("git_commit", "git_dirty"):
        document.pop(key)
    for key in CRATE_KEYS:
        document[key] = pieces[0][1].get(key) if code["one_version"] else None
    return document


def main(argv: Sequence[str]) -> int:
    """`merge DIR... [--out DIR]`: exit 0 clean, 1 alarm or flaky, 2 unmergeable."""
    parser = OneLineParser(prog=f"python -m {command.PROG} merge")
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--mixed-code", action="store_true")
    parser.add_argument("--repo", type=Path, default=REPO_ROOT)
    try:
        arguments = parser.parse_args(argv)
        if arguments.out is not None:
            output_folder(arguments.out, "--out")
        for folder in arguments.folders:  # a missing one: the reader says so
            if folder.exists():
                input_folder(folder, "merge")
        if arguments.out is not None:
            separate(arguments.folders, [("--out", arguments.out)])
        document = merge(
            arguments.folders, repo=arguments.repo, mixed_code=arguments.mixed_code
        )
    except UsageError as error:
        print(f"{command.PROG} merge: error: {error}", file=sys.stderr)
        return command.EXIT_USAGE
    out = arguments.out or (
        _soak_folder(arguments.folders[0]) / f"{utc_stamp()}-merged"
    )
    try:
        command.write_report(out, document)
    except WriteFailed as error:
        return write_failed(f"{command.PROG} merge", error)
    for line in command.summary(document):
        print(line)
    code = document["code_under_test"]
    commits = sorted(
        {str(piece["git_commit"])[:7] for piece in document["merged_from"]}
    )
    if code["one_version"]:
        print(f"code under test: one version (commits {', '.join(commits)})")
    else:
        print(f"code under test: MIXED -- {'; '.join(code['problems'])}")
    print(f"report: {out / command.REPORT_FILE}")
    clean = document["false_alarms"] == 0 and document["flaky"] == 0
    return command.EXIT_CLEAN if clean else command.EXIT_ALARM


def _soak_folder(folder: Path) -> Path:
    return folder if (folder / LATEST).exists() else folder.parent
