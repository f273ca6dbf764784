"""Reference model of the network between affinity replicas.

Every replica is a `SessionAffinity` table with replication enabled; what its
sink receives is sent to every other replica over a directed link. The
network never changes an update; it only decides when (and whether) it
arrives. State:

* `links` -- one directed link per ordered pair of distinct replicas, sorted
  by (source, dest). A link is *cut* while its pair is partitioned.
* each link's `in_flight` -- the updates sent over it and not yet delivered
  or dropped, oldest first. Delivering any of them (not only the oldest) is
  a reordering; leaving them there while other steps run is a delay.
* a message's `deliveries` -- how often a copy of it was already applied (a
  duplicated message stays in flight after its copy arrives).
* `next_number` -- messages are numbered from 1, one number per link copy.

The rule for a cut link, stated once: an update sent over a cut link is lost
(`lost`), and updates already in flight on it are held until it heals.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Final

from model.affinity.table import AffinityState, Binding
from model.affinity.types import Published, Target, Version

REPLICAS_MAX: Final[int] = 8
"""No network has more replicas (links grow with the square)."""
IN_FLIGHT_MAX: Final[int] = 10_000
"""No link holds more messages; reaching it raises, never truncates."""

COUNTS: Final[tuple[str, ...]] = (
    "calls",
    "sent",
    "superseded",
    "lost",
    "delivered",
    "duplicated",
    "reordered",
    "dropped",
    "partitions",
    "heals",
    "flushes",
    "flush_deliveries",
    "convergence_checks",
    "convergence_checks_non_vacuous",
)
"""What a network counts over its life (the gate's statistics). `sent` and
`lost` count link copies; `superseded` counts updates a replica published with
a version its table no longer held (a commit of a hold taken before a replica
update replaced the binding publishes the hold's version)."""


@dataclass(frozen=True)
class Message:
    """One replica update on its way from `source` to `dest`."""

    number: int
    source: int
    dest: int
    session_id: str
    target: Target
    version: Version
    sent_ns: int  # the shared clock when the source's sink received it
    deliveries: int = 0  # copies of it already applied (a duplicate stays)


@dataclass(frozen=True)
class LinkState:
    """A directed link: whether it is cut, and what is in flight on it."""

    source: int
    dest: int
    cut: bool
    in_flight: tuple[Message, ...]


@dataclass(frozen=True)
class NetworkState:
    """An immutable snapshot: every replica's reference table and every link."""

    replicas: tuple[AffinityState, ...]
    links: tuple[LinkState, ...]

    def link(self, source: int, dest: int) -> LinkState | None:
        """The link from `source` to `dest`, if both are replicas and distinct."""
        for link in self.links:
            if (link.source, link.dest) == (source, dest):
                return link
        return None

    def message(self, source: int, dest: int, position: int) -> Message | None:
        """The message at `position` (0: oldest) in flight from `source` to `dest`."""
        link = self.link(source, dest)
        if link is None or not 0 <= position < len(link.in_flight):
            return None
        return link.in_flight[position]

    def in_flight(self) -> Iterator[Message]:
        """Every message in flight, link by link, oldest first."""
        for link in self.links:
            yield from link.in_flight

    def live_binding(self, replica: int, session_id: str) -> Binding | None:
        """The binding `replica` serves for `session_id`, if it is live."""
        state = self.replicas[replica]
        entry = state.entry(session_id)
        if isinstance(entry, Binding) and not state.is_expired(entry):
            return entry
        return None


class Network:
    """The links between `replicas` tables and the messages on them."""

    def __init__(self, replicas: int) -> None:
        """Every link up and empty."""
        if not 2 <= replicas <= REPLICAS_MAX:
            raise ValueError(f"a network has 2 to {REPLICAS_MAX} replicas")
        self.replicas = replicas
        self._in_flight: dict[tuple[int, int], list[Message]] = {
            (source, dest): []
            for source in range(replicas)
            for dest in range(replicas)
            if source != dest
        }
        self._cut: set[tuple[int, int]] = set()
        self._next_number = 1
        self.counts: dict[str, int] = dict.fromkeys(COUNTS, 0)

    def state(self, tables: Sequence[AffinityState]) -> NetworkState:
        """A snapshot with the replicas' states `tables` (in replica order)."""
        return NetworkState(
            replicas=tuple(tables),
            links=tuple(
                LinkState(source, dest, (source, dest) in self._cut, tuple(messages))
                for (source, dest), messages in sorted(self._in_flight.items())
            ),
        )

    def has_link(self, source: int, dest: int) -> bool:
        """Whether `source` and `dest` are two distinct replicas."""
        return (source, dest) in self._in_flight

    def is_cut(self, source: int, dest: int) -> bool:
        """Whether the link from `source` to `dest` is cut."""
        return (source, dest) in self._cut

    def send(self, source: int, published: Sequence[Published], now_ns: int) -> None:
        """Send what `source`'s sink received to every other replica."""
        for update in published:
            for dest in range(self.replicas):
                if dest == source:
                    continue
                if self.is_cut(source, dest):
                    self.counts["lost"] += 1
                    continue
                queue = self._in_flight[(source, dest)]
                if len(queue) >= IN_FLIGHT_MAX:
                    raise RuntimeError(f"link {source}->{dest} holds {IN_FLIGHT_MAX}")
                queue.append(
                    Message(
                        number=self._next_number,
                        source=source,
                        dest=dest,
                        session_id=update.session_id,
                        target=update.target,
                        version=update.version,
                        sent_ns=now_ns,
                    )
                )
                self._next_number += 1
                self.counts["sent"] += 1

    def message(self, source: int, dest: int, position: int) -> Message | None:
        """The message at `position` in flight from `source` to `dest`, if any."""
        queue = self._in_flight.get((source, dest), [])
        return queue[position] if 0 <= position < len(queue) else None

    def take(self, source: int, dest: int, position: int) -> Message:
        """Remove and return a message (the caller delivers or drops it)."""
        message = self._in_flight[(source, dest)].pop(position)
        if position > 0:
            self.counts["reordered"] += 1
        return message

    def copy_delivered(self, source: int, dest: int, position: int) -> Message:
        """A copy of a message is delivered; the message itself stays in flight."""
        queue = self._in_flight[(source, dest)]
        message = queue[position]
        queue[position] = replace(message, deliveries=message.deliveries + 1)
        if position > 0:
            self.counts["reordered"] += 1
        self.counts["duplicated"] += 1
        return message

    def cut(self, first: int, second: int) -> None:
        """Partition `first` from `second`: both directions are cut."""
        if not self.is_cut(first, second):
            self.counts["partitions"] += 1
        self._cut |= {(first, second), (second, first)}

    def heal(self, first: int, second: int) -> None:
        """Heal both directions between `first` and `second`."""
        if self.is_cut(first, second):
            self.counts["heals"] += 1
        self._cut -= {(first, second), (second, first)}

    def heal_all(self) -> None:
        """Heal every partition."""
        for first, second in sorted(self._cut):
            if first < second:
                self.heal(first, second)

    def oldest(self) -> tuple[int, int] | None:
        """The first link (in sorted order) with a message in flight, if any."""
        for link, messages in sorted(self._in_flight.items()):
            if messages:
                return link
        return None
