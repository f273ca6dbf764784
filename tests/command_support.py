"""Running the project's `python -m` commands from the tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_module(
    module: str,
    *argv: str,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: Path = REPO,
) -> subprocess.CompletedProcess[str]:
    """Run `python -m module argv...` (from the repository) and capture its text."""
    return subprocess.run(  # noqa: S603 - this interpreter, the tests' own arguments
        [sys.executable, "-m", module, *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout_s,
        env=env,
    )
