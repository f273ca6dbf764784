"""Affinity canaries: each breaks one documented behaviour on purpose.

Two families:

* wrappers around the crate's adapter (`CrateAffinity`), which the
  differential machine must catch by comparison with the model;
* broken model variants, which the bounded explorer must catch through a
  violated property (and the machine through comparison).

`CANARIES` maps a name to a factory taking an `AffinityConfig`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from impl.adapter import CrateAffinity
from model.affinity.api import AffinityApi
from model.affinity.table import CLOCK_NS_MAX, Binding, ModelAffinity
from model.affinity.types import AffinityConfig, ReplicaOutcome, Target, Version


class LateExpiry(CrateAffinity):
    """Serves a binding one nanosecond past its idle deadline (its clock lags 1 ns)."""

    def __init__(self, config: AffinityConfig) -> None:
        """Build the crate's table; the reported clock starts at 0 too."""
        super().__init__(config)
        self._reported_ns = 0

    def advance_clock(self, now_ns: int) -> None:
        """Move the crate's clock to one nanosecond before `now_ns`."""
        if now_ns < super().now_ns or now_ns > CLOCK_NS_MAX:
            super().advance_clock(now_ns)  # rejected exactly as without the canary
        super().advance_clock(max(now_ns - 1, super().now_ns))
        self._reported_ns = now_ns

    @property
    def now_ns(self) -> int:
        """The clock this canary claims to be at."""
        return self._reported_ns


class StaleReplicaWins(CrateAffinity):
    """Treats every replica update as one sequence newer than it is."""

    def apply_replica_update(
        self, session_id: str, target: Target, version: Version
    ) -> ReplicaOutcome:
        """Apply the update with its sequence bumped by one."""
        bumped = replace(version, sequence=version.sequence + 1)
        return super().apply_replica_update(session_id, target, bumped)


class ForgetfulRelease(CrateAffinity):
    """Never releases a lease into the table, so bindings never expire (cf. F.1)."""

    def release(self, handle: int) -> None:
        """Forget the handle without telling the crate."""
        self.leaked = [*getattr(self, "leaked", []), handle]


class SleepyWaiter(CrateAffinity):
    """A waiter never learns that its initialization settled."""

    def waiter_done(self, waiter: int) -> bool:
        """Poll the crate, then claim nothing happened."""
        super().waiter_done(waiter)
        return False


class OffByOneExpiryModel(ModelAffinity):
    """Model variant: a binding is still live at its deadline (`<` for `<=`)."""

    def _expired(self, entry: Binding) -> bool:
        """Live at the deadline: the classic off-by-one."""
        return entry.leases == 0 and entry.deadline_ns < self.now_ns


class LeakyReleaseModel(ModelAffinity):
    """Model variant: releasing a lease forgets to decrement the lease count."""

    def release(self, handle: int) -> None:
        """Consume the handle but leave the binding's count alone."""
        self._take_lease(handle)


class EagerReaperModel(ModelAffinity):
    """Model variant: collects expired bindings at every clock advance."""

    def advance_clock(self, now_ns: int) -> None:
        """Advance as the serving table does, then collect at once."""
        super().advance_clock(now_ns)
        self._reap(now_ns)


CANARIES: dict[str, Callable[[AffinityConfig], AffinityApi]] = {
    "late_expiry": LateExpiry,
    "stale_replica_wins": StaleReplicaWins,
    "forgetful_release": ForgetfulRelease,
    "sleepy_waiter": SleepyWaiter,
    "off_by_one_expiry_model": OffByOneExpiryModel,
    "leaky_release_model": LeakyReleaseModel,
    "eager_reaper_model": EagerReaperModel,
}
"""Every affinity canary; each must be caught by the machine."""

CRATE_CANARIES: frozenset[str] = frozenset(CANARIES)
"""The affinity canaries run against the crate (the model ones beside it too)."""

MODEL_CANARIES: dict[str, type[ModelAffinity]] = {
    "off_by_one_expiry_model": OffByOneExpiryModel,
    "leaky_release_model": LeakyReleaseModel,
}
"""Broken models whose violations the explorer must find by property alone."""

CAUGHT_BY: dict[str, str] = {
    "eager_reaper_model": "states_agree",
    "forgetful_release": "states_agree",
    "late_expiry": "states_agree",
    "leaky_release_model": "states_agree",
    "off_by_one_expiry_model": "states_agree",
    "sleepy_waiter": "states_agree",
    "stale_replica_wins": "states_agree",
}
"""The check that reports each canary first in its shrunk counterexample."""
