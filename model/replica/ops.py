"""Operations on a replica network: a closed union of frozen dataclasses.

`Local` runs one `model.affinity.ops` operation on one replica's table; the
others act on the network, and each delivery is an `ApplyReplica` on the
receiving replica. Replicas and links are named by replica index (from 0);
a message by its link and its position there (0: the oldest in flight).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.affinity.ops import Op, Outcome, Value


@dataclass(frozen=True)
class Local:
    """`call` on replica `replica`'s table (its sink publishes to the network)."""

    replica: int
    call: Op


@dataclass(frozen=True)
class AdvanceAll:
    """`advance_clock(now_ns)` on every replica: they share one logical time."""

    now_ns: int


@dataclass(frozen=True)
class Deliver:
    """Deliver (and remove) the message at `position` on `source` -> `dest`."""

    source: int
    dest: int
    position: int


@dataclass(frozen=True)
class Duplicate:
    """Deliver a copy of the message at `position`; the message stays in flight."""

    source: int
    dest: int
    position: int


@dataclass(frozen=True)
class Drop:
    """Lose the message at `position` on `source` -> `dest`."""

    source: int
    dest: int
    position: int


@dataclass(frozen=True)
class Partition:
    """Cut both links between `first` and `second`."""

    first: int
    second: int


@dataclass(frozen=True)
class Heal:
    """Heal both links between `first` and `second`."""

    first: int
    second: int


@dataclass(frozen=True)
class HealAndFlush:
    """Heal every link, deliver everything in flight, then run one anti-entropy round.

    In order: every partition heals; every message in flight is delivered,
    link by link (sorted), oldest first; every replica re-publishes each
    binding it serves live (sessions sorted) by taking a lease and releasing
    it -- the crate's own publication path, since it has no call that lists
    or re-sends bindings; and everything that round sent is delivered the
    same way. The clock does not move meanwhile.
    """


NetworkOp = (
    Local | AdvanceAll | Deliver | Duplicate | Drop | Partition | Heal | HealAndFlush
)

NETWORK_OP_TYPES: tuple[type[NetworkOp], ...] = (
    Local,
    AdvanceAll,
    Deliver,
    Duplicate,
    Drop,
    Partition,
    Heal,
    HealAndFlush,
)


@dataclass(frozen=True)
class Call:
    """One table call a network step made, and what that table answered."""

    replica: int
    op: Op
    outcome: Outcome

    def __str__(self) -> str:
        shown = self.outcome.error or str(self.outcome.value)
        return f"r{self.replica} {type(self.op).__name__}: {shown}"


@dataclass(frozen=True)
class NetworkOutcome:
    """What a network step did: its table calls in order, or why it did nothing.

    `refused` is the network's own refusal (no such replica, link or message;
    a cut link), the same on both sides since the network is shared.
    """

    calls: tuple[Call, ...] = ()
    refused: str = ""
    shown: str = field(default="", compare=False)
    """How to print it instead of every call (the harness names a differing one)."""

    @property
    def ok(self) -> bool:
        """The network carried the step out."""
        return not self.refused

    @property
    def error(self) -> str | None:
        """The network's refusal as an error kind, for tables of outcomes."""
        return "Refused" if self.refused else None

    @property
    def value(self) -> tuple[Call, ...]:
        """The calls, for tables of outcomes."""
        return self.calls

    def outcomes(self) -> list[Value]:
        """The values the calls returned, in order."""
        return [call.outcome.value for call in self.calls]

    def __str__(self) -> str:
        if self.shown:
            return self.shown
        if self.refused:
            return f"refused: {self.refused}"
        return "; ".join(str(call) for call in self.calls) or "no call"
