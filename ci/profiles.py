"""The only place Hypothesis settings are chosen.

| profile   | when          | what                                                   |
|-----------|---------------|--------------------------------------------------------|
| `dev`     | edit loop     | few examples, short programs, local example database   |
| `ci`      | every push    | derandomized, no database, blobs printed, no deadline  |
| `nightly` | scheduled     | many examples and long programs, randomized            |
| `replay`  | one artifact  | reruns a stored counterexample only (no generation)    |
| `fuzz`    | `ci.fuzz`     | one batch: randomized, long programs, first bug only   |

`ci-seeded` and `nightly-seeded` are `ci` and `nightly` with randomization:
the seed comes from `--hypothesis-seed` (`ci.soak`, `ci.determinism`). The
`fuzz` settings names no database: `ci.trust.plugin` derives the run's profile
from it with the shared example database (`derived_profile`).

Select with `--hypothesis-profile NAME` or the `HYPOTHESIS_PROFILE` environment
variable; an unknown name is an error, never a silent fallback. Loaded as a
pytest plugin (`-p ci.profiles` in pyproject.toml) so the profiles exist before
Hypothesis' own plugin reads the option.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings

SETTINGS_NAMES = (
    "dev",
    "ci",
    "nightly",
    "replay",
    "fuzz",
    "ci-seeded",
    "nightly-seeded",
)
RULES_PER_PROGRAM = {
    "dev": 24,
    "ci": 48,
    "nightly": 160,
    "replay": 160,
    "fuzz": 160,
}
"""Hypothesis steps per program: each step is one rule (`stateful.machine`),
four per run of rules of before (which counted 12 runs for `ci`), so that a
program applies as many operations as it did then: about 70 for `ci` (a
scenario rule applies several; Hypothesis' mutations repeat whole rules)."""
EXAMPLES = {"dev": 20, "ci": 400, "nightly": 2_000, "replay": 1, "fuzz": 200}

_SUPPRESSED = (HealthCheck.too_slow, HealthCheck.data_too_large)

# Keyword arguments of `settings.register_profile`, whose `**kwargs` are `Any`.
_COMMON: dict[str, Any] = {"deadline": None, "suppress_health_check": _SUPPRESSED}
"""Every profile: no per-example deadline (timing depends on the machine)."""
_REPRODUCIBLE: dict[str, Any] = {**_COMMON, "database": None, "print_blob": True}
"""Shared runs: no local example database, blobs printed for replay."""


def _sized(name: str) -> dict[str, Any]:
    return {
        "max_examples": EXAMPLES[name],
        "stateful_step_count": RULES_PER_PROGRAM[name],
    }


settings.register_profile("dev", **_sized("dev"), **_COMMON)
settings.register_profile("ci", **_sized("ci"), **_REPRODUCIBLE, derandomize=True)
settings.register_profile("nightly", **_sized("nightly"), **_REPRODUCIBLE)
settings.register_profile(
    "replay",
    **_sized("replay"),
    **_REPRODUCIBLE,
    phases=(Phase.explicit, Phase.reuse),
    verbosity=Verbosity.normal,
)

settings.register_profile(
    "fuzz",
    **_sized("fuzz"),
    **_REPRODUCIBLE,
    report_multiple_bugs=False,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
)
"""One fuzz batch. No explain phase: it traces every shrink step with
`sys.settrace` on Python 3.11, and a fuzz failure is replayed and explained by
`ci.replay` instead. One failure per batch: the fuzzer moves on."""
for _base in ("ci", "nightly"):
    settings.register_profile(
        f"{_base}-seeded", settings.get_profile(_base), derandomize=False
    )


def derived_profile(name: str, base: str, **overrides: Any) -> settings:
    """Register (and return) profile `name`: profile `base` with `overrides`.

    The one way a command derives a run's settings (a shared example database,
    a batch size, replay phases) from a named profile.
    """
    if base not in SETTINGS_NAMES:
        raise ValueError(f"unknown base profile {base!r}")
    settings.register_profile(name, settings.get_profile(base), **overrides)
    return settings.get_profile(name)


def selected_profile() -> str:
    """The profile named by `HYPOTHESIS_PROFILE` (default `ci`); unknown is an error."""
    name = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    if name not in SETTINGS_NAMES:
        known = ", ".join(SETTINGS_NAMES)
        raise ValueError(f"unknown HYPOTHESIS_PROFILE {name!r}; known: {known}")
    return name


settings.load_profile(selected_profile())

PROJECT_PACKAGES = ("ci", "impl", "model", "properties", "stateful")


def import_project_modules() -> list[str]:
    """Import every project module (test modules aside); return their names.

    Hypothesis mixes literals from the *imported* non-test source files into
    what it generates. Without this, a derandomized machine generated different
    programs depending on which modules earlier tests happened to import, so a
    coverage goal reached in one pytest process was missed in another. With
    every module imported before the first test, the programs depend only on
    the source tree.
    """
    names: list[str] = []
    for package_name in PROJECT_PACKAGES:
        package = importlib.import_module(package_name)
        names.append(package_name)
        found = pkgutil.walk_packages(package.__path__, f"{package_name}.")
        for info in sorted(found, key=lambda info: info.name):
            leaf = info.name.rsplit(".", 1)[-1]
            if leaf.startswith("test_"):
                continue
            importlib.import_module(info.name)
            names.append(info.name)
    return names


def pytest_configure() -> None:
    """Before any test runs, settle the literals Hypothesis may draw from."""
    import_project_modules()


REPLICA_NETWORK_EXAMPLES = {
    "dev": 10,
    "ci": 200,
    "ci-seeded": 200,
    "nightly": 2_000,
    "nightly-seeded": 2_000,
    "fuzz": 100,
}
"""Programs of the replica-network machine per profile (each network step is
several table calls, so fewer programs fit the pr budget); other profiles
keep their own count."""


def replica_network_settings() -> settings:
    """The loaded profile, with the replica-network machine's program count."""
    name = settings.get_current_profile_name()
    current = settings.default
    assert current is not None
    examples = REPLICA_NETWORK_EXAMPLES.get(name, current.max_examples)
    return settings(current, max_examples=examples)


CANARY_SETTINGS = settings(
    max_examples=300,
    stateful_step_count=RULES_PER_PROGRAM["ci"],
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

SHRINK_SETTINGS = settings(
    CANARY_SETTINGS,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink),
)
"""The canary budget, then Hypothesis' shrinker: the program a failing run
reports (`tests/test_shrinking.py`, `ci.bench.shrinking`)."""
