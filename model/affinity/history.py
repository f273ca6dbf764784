"""Concurrent histories of one affinity table: what many callers asked, and when.

A *program* is what one thread will try, in order (`ThreadOp`); a *history* is
what the threads actually did (`Event`): each call as made, with its invocation
and response instants on one shared counter and what it returned. Handles in a
history are the driver's own numbers, unique across threads; the
linearizability check (`stateful/linearizability.py`) maps them onto the
model's. Calls and results reuse the vocabulary of `model.affinity.ops`.

What the sink received is part of a call's result: the table publishes to its
replica sink on the calling thread, and each publication belongs to the call in
whose interval it happened (`Event.published`, in the order the sink saw them).
A history recorded without a sink (`History.writer_id` None) publishes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from model.affinity.ops import Op, Outcome
from model.affinity.types import AffinityConfig, Published, Target, Version

INSTANT_END: Final[int] = 2**64
"""Instants are values of the driver's shared `u64` counter: below this."""
THREADS_MAX: Final[int] = 64
"""The driver runs 1 to 64 threads."""

ThreadOpKind = Literal[
    "acquire",
    "join",
    "commit",
    "drop",
    "invalidate",
    "poll",
    "query",
    "replica",
    "advance",
]
"""What a program step tries. `commit`, `drop`, `invalidate` and `poll` act on
the handle in a slot (the thread's n-th acquisition or join) if it is of a kind
they apply to, and are skipped otherwise: `drop` aborts an initialization and
releases a hold or lease; `poll` asks a waiter whether it was woken."""


@dataclass(frozen=True)
class ThreadOp:
    """One step of a thread's program."""

    kind: ThreadOpKind
    session_id: str = ""
    target: Target | None = None
    slot: int = 0
    version: Version | None = None
    delta_ns: int = 0


@dataclass(frozen=True)
class Event:
    """One call a thread made: invoked and returned on a shared counter."""

    thread: int
    index: int  # position of the step in the thread's program
    invoked: int
    returned: int
    call: Op
    outcome: Outcome
    pending: bool = False
    """The history was cut before this call returned: its outcome is unknown."""
    published: tuple[Published, ...] = ()
    """What the call published to the replica sink, in the sink's order."""
    published_at: tuple[int, ...] = ()
    """The instant of each publication (one shared counter with the calls)."""

    def precedes(self, other: Event) -> bool:
        """Real-time order: this call returned before `other` was invoked."""
        return not self.pending and self.returned < other.invoked


@dataclass(frozen=True)
class Census:
    """The table's counts once every thread had finished.

    `targets` and `next_version` are None in a history whose driver did not
    read them (format 1); `next_version` consumed the version it reports.
    """

    now_ns: int
    entry_count: int
    lease_counts: tuple[tuple[str, int | None], ...]
    targets: tuple[tuple[str, Target | None], ...] | None = None
    next_version: Version | None = None


@dataclass(frozen=True)
class History:
    """A concurrent run: its configuration, its calls and the final census."""

    config: AffinityConfig
    threads: int
    events: tuple[Event, ...]
    census: Census | None  # None for a sub-history cut out of a run
    writer_id: int | None = None  # the recording sink's writer id; None: no sink

    def publications(self) -> tuple[tuple[int, Event, Published], ...]:
        """Every publication with its instant and call, in the sink's order."""
        found = [
            (at, event, published)
            for event in self.events
            for at, published in zip(event.published_at, event.published, strict=True)
        ]
        return tuple(sorted(found, key=lambda item: item[0]))
