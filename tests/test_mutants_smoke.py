"""One source mutant of the crate that the affinity machine must catch.

Builds `dynamo-kv-router` 1.6.1 with query_target's expiry check flipped from
`<=` to `<` (a binding is still served at the exact instant it expires) into a
copy of our Python tree, and runs the affinity machine there. The editable
install is not touched. Takes about 4 minutes on two cores the first time (the
crate compiles once into `~/.cache/dynamo-verify/smoke`) and well under a
minute afterwards; `python -m ci.mutants --smoke` runs the same check.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ci.build_local import default_work_dir
from ci.mutants import smoke
from ci.profiles import selected_profile


@pytest.mark.slow
def test_the_machine_catches_a_binding_served_at_its_expiry_instant(
    tmp_path: Path,
) -> None:
    """With `*idle_deadline < now` in query_target the affinity machine fails."""
    if selected_profile() != "nightly":
        pytest.skip("builds the crate: runs under the nightly profile")

    result = smoke(default_work_dir(), tmp_path / "tree")

    assert "path" == result.extension["source"]
    assert str(tmp_path / "tree") in result.extension["module"]
    assert "caught" == result.verdict.outcome, result.verdict
    assert result.verdict.test_id.startswith("stateful/test_affinity_machine.py::")
