"""Operations on an affinity table: a closed union of frozen dataclasses.

Each operation names the `AffinityApi` method it calls. Machines, traces,
replay and exploration all speak this vocabulary, so a counterexample reads as
a list of operations, and `outcome_of` applies one to any system under test.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from model.affinity.api import AffinityApi
from model.affinity.types import (
    AcquireStep,
    ReplicaOutcome,
    Target,
    Version,
)
from model.errors import (
    AffinityError,
    HandleError,
    RustPanicError,
    UnsupportedError,
    clock_refusal,
)


@dataclass(frozen=True)
class Advance:
    """`advance_clock(now_ns)`."""

    now_ns: int


@dataclass(frozen=True)
class CrateAdvance:
    """`crate_advance_clock(now_ns)`: the crate's own `advance_clock`."""

    now_ns: int


@dataclass(frozen=True)
class Acquire:
    """`try_acquire(session_id, requested)`."""

    session_id: str
    requested: Target | None = None


@dataclass(frozen=True)
class Join:
    """`join_initializing(session_id, target)`."""

    session_id: str
    target: Target


@dataclass(frozen=True)
class Commit:
    """`commit(handle, dispatched)`."""

    handle: int
    dispatched: Target


@dataclass(frozen=True)
class Abort:
    """`abort(handle)`: drop an initialization."""

    handle: int


@dataclass(frozen=True)
class Release:
    """`release(handle)`: drop a bound hold or lease."""

    handle: int


@dataclass(frozen=True)
class Invalidate:
    """`invalidate(handle)`."""

    handle: int


@dataclass(frozen=True)
class PollWaiter:
    """`waiter_done(waiter)`."""

    waiter: int


@dataclass(frozen=True)
class Query:
    """`query_target(session_id, requested)`."""

    session_id: str
    requested: Target | None = None


@dataclass(frozen=True)
class ApplyReplica:
    """`apply_replica_update(session_id, target, version)`."""

    session_id: str
    target: Target
    version: Version


@dataclass(frozen=True)
class ObserveSequence:
    """`observe_replica_sequence(sequence)`."""

    sequence: int


@dataclass(frozen=True)
class EnableReplication:
    """`enable_replication(writer_id)`."""

    writer_id: int


@dataclass(frozen=True)
class NextVersion:
    """`next_version()` (consumes a sequence number)."""


@dataclass(frozen=True)
class DropTable:
    """`drop_table()`."""


Op = (
    Advance
    | CrateAdvance
    | Acquire
    | Join
    | Commit
    | Abort
    | Release
    | Invalidate
    | PollWaiter
    | Query
    | ApplyReplica
    | ObserveSequence
    | EnableReplication
    | NextVersion
    | DropTable
)

OP_TYPES: tuple[type[Op], ...] = (
    Advance,
    CrateAdvance,
    Acquire,
    Join,
    Commit,
    Abort,
    Release,
    Invalidate,
    PollWaiter,
    Query,
    ApplyReplica,
    ObserveSequence,
    EnableReplication,
    NextVersion,
    DropTable,
)

Value = AcquireStep | Target | Version | ReplicaOutcome | int | bool | None


@dataclass(frozen=True)
class Outcome:
    """What one operation returned, or which error kind it raised.

    Equality ignores the message: the kind and the value are the contract,
    plus, for a refused clock update, which check refused it (`refusal`, read
    from the message: every clock refusal is an `InvalidArgument`).
    """

    value: Value = None
    error: str | None = None
    message: str = field(default="", compare=False)
    refusal: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.error == "InvalidArgument":
            object.__setattr__(self, "refusal", clock_refusal(self.message))

    @property
    def ok(self) -> bool:
        """The operation returned normally."""
        return self.error is None


def call(api: AffinityApi, op: Op) -> Value:  # noqa: C901 - one case per operation
    """Dispatch `op` to the matching `AffinityApi` method."""
    match op:
        case Advance(now_ns):
            api.advance_clock(now_ns)
            return None
        case CrateAdvance(now_ns):
            api.crate_advance_clock(now_ns)
            return None
        case Acquire(session_id, requested):
            return api.try_acquire(session_id, requested)
        case Join(session_id, target):
            return api.join_initializing(session_id, target)
        case Commit(handle, dispatched):
            return api.commit(handle, dispatched)
        case Abort(handle):
            api.abort(handle)
            return None
        case Release(handle):
            api.release(handle)
            return None
        case Invalidate(handle):
            api.invalidate(handle)
            return None
        case PollWaiter(waiter):
            return api.waiter_done(waiter)
        case Query(session_id, requested):
            return api.query_target(session_id, requested)
        case ApplyReplica(session_id, target, version):
            return api.apply_replica_update(session_id, target, version)
        case ObserveSequence(sequence):
            api.observe_replica_sequence(sequence)
            return None
        case EnableReplication(writer_id):
            return api.enable_replication(writer_id)
        case NextVersion():
            return api.next_version()
        case DropTable():
            api.drop_table()
            return None


def outcome_of(api: AffinityApi, op: Op) -> Outcome:
    """Apply `op` and capture its return value or error kind."""
    try:
        return Outcome(value=call(api, op))
    except (AffinityError, HandleError, RustPanicError, UnsupportedError) as error:
        return Outcome(error=error.kind, message=str(error))
