"""Every canary (a deliberately broken system) is caught by its subject's machine.

The subjects and their canaries come from the subject registry (`ci.subjects`).
Each canary is caught by the check its module's `CAUGHT_BY` names: a
comparison of the harness (`outcomes_agree`, `states_agree`) or a registered
property, as the final, shrunk replay reports it first.
"""

from __future__ import annotations

import pytest

from ci import subjects
from ci.canaries.check import first_failed_check
from ci.profiles import selected_profile


def _case(entry: subjects.SubjectEntry, name: str) -> object:
    marks = []
    if name in entry.slow_canaries():
        marks.append(pytest.mark.slow)
    if name in entry.crate_canaries():
        marks.append(pytest.mark.crate)
    return pytest.param(entry.name, name, marks=marks, id=f"{entry.name}-{name}")


@pytest.mark.parametrize(
    ("subject", "name"),
    [
        _case(entry, name)
        for entry in subjects.entries()
        for name in sorted(entry.canary_factories())
    ],
)
def test_a_canary_is_caught_by_its_check(subject: str, name: str) -> None:
    """The differential machine fails on the canary, by the named check."""
    entry = subjects.entry(subject)
    if name in entry.slow_canaries() and selected_profile() != "nightly":
        pytest.skip("slow canary: runs under the nightly settings")

    failed = first_failed_check(entry, name)

    assert [entry.caught_by()[name]] == failed[:1]


@pytest.mark.parametrize("subject", subjects.names())
def test_every_canary_names_the_check_that_catches_it(subject: str) -> None:
    """`CAUGHT_BY` covers exactly the canaries."""
    entry = subjects.entry(subject)

    assert sorted(entry.canary_factories()) == sorted(entry.caught_by())
