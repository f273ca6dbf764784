"""Shared helper for the affinity unit tests: build a table on either side."""

from __future__ import annotations

from collections.abc import Callable

from impl.adapter import CrateAffinity
from model.affinity.api import AffinityApi
from model.affinity.table import ModelAffinity
from model.affinity.types import AffinityConfig

Factory = Callable[[AffinityConfig], AffinityApi]
FACTORIES: dict[str, Factory] = {"model": ModelAffinity, "crate": CrateAffinity}
"""The model and the crate, by side name."""
