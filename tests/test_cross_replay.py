"""Cross-machine replay: the corpus gives the same verdicts elsewhere.

Another machine means another hash seed and maybe another Python patch
version. The corpus tests (every stored trace replayed against the model and
the crate) run in fresh interpreters under two other `PYTHONHASHSEED` values,
and under a second CPython 3.11 if this machine has one (Debian's
`/usr/bin/python3.11` beside a pyenv build, say), with the same packages.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 600
CORPUS_TESTS = "tests/test_corpus.py"
_SUMMARY = re.compile(r"^(?P<passed>\d+) passed", re.MULTILINE)
OTHER_PYTHONS = ("/usr/bin/python3.11", "/usr/local/bin/python3.11")


def _corpus_verdicts(python: str, hash_seed: str) -> tuple[int, str]:
    """Run the corpus tests; (exit status, 'N passed' summary)."""
    packages = sysconfig.get_paths()["purelib"]
    path = os.pathsep.join(
        [str(REPO_ROOT), packages, *filter(None, [os.environ.get("PYTHONPATH")])]
    )
    result = subprocess.run(  # noqa: S603 - a CPython given by path
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "0",
            CORPUS_TESTS,
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    found = _SUMMARY.search(result.stdout)
    return result.returncode, found.group(0) if found else result.stdout[-500:]


def _version(python: str) -> str:
    return subprocess.run(  # noqa: S603 - a CPython given by path
        [python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    ).stdout.strip()


@pytest.fixture(scope="module")
def here() -> tuple[int, str]:
    """The corpus verdicts with this interpreter and hash seed 1 (computed once)."""
    return _corpus_verdicts(sys.executable, "1")


@pytest.mark.crate
@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_the_corpus_replays_to_the_same_verdicts_under_another_hash_seed(
    hash_seed: str, here: tuple[int, str]
) -> None:
    """Every stored trace agrees (or fails) as here, whatever the hash seed."""
    there = _corpus_verdicts(sys.executable, hash_seed)

    assert (0, here[1]) == here
    assert here == there


@pytest.mark.crate
def test_the_corpus_replays_to_the_same_verdicts_on_another_python_patch_version(
    here: tuple[int, str],
) -> None:
    """A second CPython 3.11 on this machine reaches the same verdicts."""
    mine = ".".join(map(str, sys.version_info[:3]))
    others = [
        found
        for found in (shutil.which(name) or name for name in OTHER_PYTHONS)
        if Path(found).exists() and _version(found).startswith("3.11.")
    ]
    others = [python for python in others if _version(python) != mine]
    if not others:
        pytest.skip(f"no CPython 3.11 other than {mine} on this machine")

    there = _corpus_verdicts(others[0], "1")

    assert (0, here[1]) == here
    assert here == there
