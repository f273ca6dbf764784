"""Value types shared by the model, the adapter and the machines.

Time is integer nanoseconds since the table was built (`*_ns`). A target is a
worker with an optional data-parallel rank; `rank is None` means worker-only
affinity. Versions order replicated bindings by (sequence, writer).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from model.errors import InvalidArgumentError

SECOND_NS = 1_000_000_000
MILLISECOND_NS = 1_000_000
TTL_S_MAX = 31_536_000
TTL_NS_MIN = SECOND_NS
TTL_NS_MAX = TTL_S_MAX * SECOND_NS
ENTRIES_MAX_DEFAULT = 65_536
SESSION_ID_BYTES_MAX_DEFAULT = 256
REAPER_PERIOD_NS_MAX = 30 * SECOND_NS
U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1


@dataclass(frozen=True)
class Target:
    """Where a session is pinned: a worker, and a DP rank unless worker-only."""

    worker: int
    rank: int | None = None

    def sort_key(self) -> tuple[int, int]:
        """Order as the crate does: by worker, worker-only before any rank."""
        return (self.worker, -1 if self.rank is None else self.rank)

    def __str__(self) -> str:
        return f"{self.worker}" if self.rank is None else f"{self.worker}:{self.rank}"


@dataclass(frozen=True, order=True)
class Version:
    """A replicated binding's version; greater wins, writer breaks ties."""

    sequence: int
    writer: int


class Mode(StrEnum):
    """How a bound session treats a dispatch that landed elsewhere."""

    HARD = "hard"
    SOFT = "soft"


def parse_mode(text: str) -> Mode:
    """A mode from its exact lower-case name; any other text is refused."""
    if text not in {mode.value for mode in Mode}:
        raise InvalidArgumentError(
            f"invalid session affinity mode {text!r}; expected 'hard' or 'soft'"
        )
    return Mode(text)


class ReplicaOutcome(StrEnum):
    """`ReplicaApplyOutcome` of the crate."""

    INSERTED = "Inserted"
    REFRESHED = "Refreshed"
    REPLACED_EXPIRED = "ReplacedExpired"
    REPLACED_NEWER = "ReplacedNewer"
    IGNORED_INITIALIZING = "IgnoredInitializing"
    IGNORED_CONFLICT = "IgnoredConflict"
    REJECTED_SESSION_ID = "RejectedSessionId"
    REJECTED_CAPACITY = "RejectedCapacity"


Reaping = Literal["runtime_reaper", "every_advance", "cadence"]
"""When idle, expired bindings are collected (removed and uncounted).

* `runtime_reaper`: the serving table's background task, every
  `min(ttl, 30 s)` from construction, on Tokio's 1 ms timer grid.
* `every_advance`: a manual-clock table collecting on every `advance_clock`.
* `cadence`: a manual-clock table collecting only when an advance reaches
  `min(ttl, 30 s)` after the last collection (the first one counts from
  construction), at the instant it moved to.
"""

Clock = Literal["runtime", "manual"]
"""Which clock a table reads: the Tokio runtime's (`with_config`) or the host's
(`with_manual_clock` / `advance_clock`)."""


def clock_of(reaping: Reaping) -> Clock:
    """The clock a reaping variant belongs to."""
    return "runtime" if reaping == "runtime_reaper" else "manual"


@dataclass(frozen=True)
class AffinityConfig:
    """How a table is built: `SessionAffinityConfig` plus the clock variant."""

    ttl_ns: int
    mode: Mode = Mode.HARD
    max_entries: int = ENTRIES_MAX_DEFAULT
    max_session_id_bytes: int = SESSION_ID_BYTES_MAX_DEFAULT
    reaping: Reaping = "runtime_reaper"
    instant_range_ns: int | None = None
    """Manual clock only: the platform's `Instant` range ends this many
    nanoseconds after the table's origin (None: beyond any `u64` clock)."""

    @property
    def clock(self) -> Clock:
        """The clock the table reads."""
        return clock_of(self.reaping)


@dataclass(frozen=True)
class Initialize:
    """`AcquireStep::Held(Hold::Initialize)`: the caller must commit or abort."""

    handle: int


@dataclass(frozen=True)
class Bound:
    """`AcquireStep::Held(Hold::Bound)`: route to `target`; the hold is a lease."""

    handle: int
    target: Target


@dataclass(frozen=True)
class Wait:
    """`AcquireStep::Wait`: another request is initializing; `waiter` completes."""

    waiter: int


AcquireStep = Initialize | Bound | Wait


@dataclass(frozen=True)
class Published:
    """One `(session, target, version)` the replica sink received."""

    session_id: str
    target: Target
    version: Version
