"""Pytest plugin for the mutation benchmark: find a failure, do not minimize it.

Loaded with `-p ci.mutants.noshrink` after `--hypothesis-profile=NAME`, it loads a
profile named `NAME-noshrink` that is NAME without the shrink and explain
phases. The benchmark only asks *whether* and *how fast* a mutant is caught;
shrinking a stateful counterexample against the crate can take minutes, which
would turn a caught mutant into a timeout. Every other setting is NAME's, so
the examples generated are the same.
"""

from __future__ import annotations

import pytest
from hypothesis import Phase, settings

SUFFIX = "-noshrink"
_DROPPED = frozenset({Phase.shrink, Phase.explain})


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """Derive and load `<current profile>-noshrink` once Hypothesis chose one."""
    del config  # the profile is already loaded by Hypothesis' own plugin
    name = settings.get_current_profile_name()
    if name.endswith(SUFFIX):
        return
    current = settings.get_profile(name)
    phases = tuple(phase for phase in current.phases if phase not in _DROPPED)
    settings.register_profile(name + SUFFIX, parent=current, phases=phases)
    settings.load_profile(name + SUFFIX)
