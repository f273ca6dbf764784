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
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT_S = 600


def test_vacuous_seeds_are_false_alarms_that_reproduce(tmp_path: Path) -> None:
    """Two vacuous seeds: two false alarms, both reproduced, none flaky; exit 1."""
    result = subprocess.run(  # noqa: S603 - our own interpreter and module
        [
            sys.executable,
            "-m",
            "ci.soak",
            "--seeds",
            "2",
            "--targets",
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
