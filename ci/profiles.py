"""The only place Hypothesis settings are chosen.

| profile   | when          | what                                                   |
|-----------|---------------|--------------------------------------------------------|
| `dev`     | edit loop     | few examples, short programs, local example database   |
| `ci`      | every push    | derandomized, no database, blobs printed, no deadline  |
| `nightly` | scheduled     | many examples and long programs, randomized            |
| `replay`  | one artifact  | reruns a stored counterexample only (no generation)    |

Select with `--hypothesis-profile NAME` or the `HYPOTHESIS_PROFILE` environment
variable; an unknown name is an error, never a silent fallback. Loaded as a
pytest plugin (`-p ci.profiles` in pyproject.toml) so the profiles exist before
Hypothesis' own plugin reads the option.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, Verbosity, settings

PROFILE_NAMES = ("dev", "ci", "nightly", "replay")
STEPS_PER_PROGRAM = {"dev": 30, "ci": 60, "nightly": 200, "replay": 200}
EXAMPLES = {"dev": 20, "ci": 400, "nightly": 2_000, "replay": 1}

_SUPPRESSED = (HealthCheck.too_slow, HealthCheck.data_too_large)

settings.register_profile(
    "dev",
    max_examples=EXAMPLES["dev"],
    stateful_step_count=STEPS_PER_PROGRAM["dev"],
    deadline=None,
    suppress_health_check=_SUPPRESSED,
)
settings.register_profile(
    "ci",
    max_examples=EXAMPLES["ci"],
    stateful_step_count=STEPS_PER_PROGRAM["ci"],
    derandomize=True,
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=_SUPPRESSED,
)
settings.register_profile(
    "nightly",
    max_examples=EXAMPLES["nightly"],
    stateful_step_count=STEPS_PER_PROGRAM["nightly"],
    database=None,
    print_blob=True,
    deadline=None,
    suppress_health_check=_SUPPRESSED,
)
settings.register_profile(
    "replay",
    max_examples=EXAMPLES["replay"],
    stateful_step_count=STEPS_PER_PROGRAM["replay"],
    database=None,
    print_blob=True,
    deadline=None,
    phases=(Phase.explicit, Phase.reuse),
    verbosity=Verbosity.normal,
    suppress_health_check=_SUPPRESSED,
)


def selected_profile() -> str:
    """The profile named by `HYPOTHESIS_PROFILE` (default `ci`); unknown is an error."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if name not in PROFILE_NAMES:
        known = ", ".join(PROFILE_NAMES)
        raise ValueError(f"unknown HYPOTHESIS_PROFILE {name!r}; known: {known}")
    return name


settings.load_profile(selected_profile())

CANARY_SETTINGS = settings(
    max_examples=300,
    stateful_step_count=STEPS_PER_PROGRAM["ci"],
    derandomize=True,
    database=None,
    deadline=None,
    report_multiple_bugs=False,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    suppress_health_check=_SUPPRESSED,
)
"""For canary tests: a fixed budget in which each broken system must fail.

No shrinking: detection is the claim here; shrink quality has its own test.
"""
