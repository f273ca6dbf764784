"""The affinity trace kind: everything a trace knows about `SessionAffinity`.

Subject keys (beside the envelope of `ci/replay/envelope.py`):

    config        {"ttl_ns", "mode", "max_entries", "max_session_id_bytes",
                   "reaping", optional "instant_range_ns"} --
                  `model.types.AffinityConfig`, the mode by value
    session_pool  the session ids observed after every step, as the harness does

Each step:

    op        {"op": <model.affinity.ops class name>, <field>: <value>, ...}; a `Target`
              is {"worker": 1, "rank": null}, a `Version` {"sequence": 1,
              "writer": 0}, an absent pin is null
    expected  {"value": ..., "error": <error kind> or null, "message": ...}: the
              model's outcome when the trace was recorded; values are tagged
              objects ({"type": "Initialize", "handle": 1}, {"type": "Target",
              ...}, {"type": "ReplicaOutcome", "outcome": "Inserted"}) or plain
              integers, booleans and null
    model     {"now_ns": ..., "entries": {session: {"state": "initializing"} or
              {"state": "bound", "target", "version", "leases", "deadline_ns"}}}:
              a small projection of the model after the step

The operation codec is driven by the field annotations of `model.affinity.ops`, so a
new operation needs no change here unless it introduces a new field type.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Literal, get_args

from ci.inputs import (
    U32_MAX,
    U64_MAX,
    USIZE_MAX,
    expect_int,
    expect_list,
    expect_object,
    expect_optional,
    expect_str,
)
from ci.replay.codec import Bounds, Codec, OpCodec, dataclass_codec, outcome_codec
from ci.replay.envelope import TraceError
from ci.replay.trace import Factory, Trace, TraceKind
from model.affinity.ops import (
    OP_TYPES,
    Abort,
    Acquire,
    Commit,
    Invalidate,
    Join,
    Op,
    Outcome,
    PollWaiter,
    Release,
    Value,
    outcome_of,
)
from model.affinity.table import AffinityState, Binding, ModelAffinity
from model.affinity.types import (
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Reaping,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)
from model.errors import AffinityError
from stateful.affinity_subject import AffinityHarness

SUBJECT: Final[str] = "affinity"
SUBJECT_KEYS: Final[frozenset[str]] = frozenset({"config", "session_pool"})
CONFIG_KEYS: Final[frozenset[str]] = frozenset(
    {"ttl_ns", "mode", "max_entries", "max_session_id_bytes", "reaping"}
)
OPTIONAL_CONFIG_KEYS: Final[frozenset[str]] = frozenset({"instant_range_ns"})
"""Manual clock only: where the `Instant` range ends (absent: unbounded)."""
REAPINGS: Final[tuple[str, ...]] = get_args(Reaping)
SESSION_POOL_MAX: Final[int] = 1_000
U64: Final[Bounds] = (0, U64_MAX)
U32: Final[Bounds] = (0, U32_MAX)
USIZE: Final[Bounds] = (0, USIZE_MAX)
OP_RANGES: Final[Mapping[str, Bounds]] = {
    "handle": U64,
    "sequence": U64,
    "waiter": U64,
    "writer_id": U64,
}
"""What the binding's `u64` arguments hold (impl/src/affinity.rs); `now_ns` is
left to the model, which refuses a clock the binding cannot name itself."""


# ---- in-memory form ----------------------------------------------------------


@dataclass(frozen=True)
class EntrySummary:
    """One session's entry as the projection shows it."""

    state: Literal["initializing", "bound"]
    target: Target | None = None
    version: Version | None = None
    leases: int | None = None
    deadline_ns: int | None = None


@dataclass(frozen=True)
class Projection:
    """A small view of the model after a step: its clock and its entries."""

    now_ns: int
    entries: tuple[tuple[str, EntrySummary], ...]


def project(state: AffinityState) -> Projection:
    """The projection of a model snapshot (entries sorted by session id)."""
    entries: list[tuple[str, EntrySummary]] = []
    for session_id, entry in sorted(state.entries):
        if isinstance(entry, Binding):
            summary = EntrySummary(
                state="bound",
                target=entry.target,
                version=entry.version,
                leases=entry.leases,
                deadline_ns=entry.deadline_ns,
            )
        else:
            summary = EntrySummary(state="initializing")
        entries.append((session_id, summary))
    return Projection(now_ns=state.now_ns, entries=tuple(entries))


# ---- configuration -----------------------------------------------------------


def encode_config(config: AffinityConfig) -> dict[str, Any]:
    """`AffinityConfig` fields by name; the mode by its value."""
    return {
        "ttl_ns": config.ttl_ns,
        "mode": config.mode.value,
        "max_entries": config.max_entries,
        "max_session_id_bytes": config.max_session_id_bytes,
        "reaping": config.reaping,
    } | (
        {}
        if config.instant_range_ns is None
        else {"instant_range_ns": config.instant_range_ns}
    )


def check_config(config: AffinityConfig, where: str) -> None:
    """Refuse a configuration no table can be built with, naming the field."""
    try:
        ModelAffinity(config)
    except AffinityError as error:
        raise TraceError(where, f"invalid configuration: {error}") from None


def decode_config(value: object, where: str = "config") -> AffinityConfig:
    """A strict `AffinityConfig` (valid TTL, known mode and reaping)."""
    raw = expect_object(value, where, CONFIG_KEYS, OPTIONAL_CONFIG_KEYS)
    mode = expect_str(raw["mode"], f"{where}.mode")
    if mode not in {m.value for m in Mode}:
        known = ", ".join(sorted(m.value for m in Mode))
        raise TraceError(f"{where}.mode", f"unknown mode {mode!r} (known: {known})")
    reaping = expect_str(raw["reaping"], f"{where}.reaping")
    if reaping not in REAPINGS:
        known = ", ".join(REAPINGS)
        raise TraceError(
            f"{where}.reaping", f"unknown reaping {reaping!r} (known: {known})"
        )
    config = AffinityConfig(
        ttl_ns=expect_int(raw["ttl_ns"], f"{where}.ttl_ns", *U64),
        mode=Mode(mode),
        max_entries=expect_int(raw["max_entries"], f"{where}.max_entries", *USIZE),
        max_session_id_bytes=expect_int(
            raw["max_session_id_bytes"], f"{where}.max_session_id_bytes", *USIZE
        ),
        reaping=typing.cast("Reaping", reaping),
        instant_range_ns=expect_optional(
            raw.get("instant_range_ns"),
            f"{where}.instant_range_ns",
            lambda value, at: expect_int(value, at, *U64),
        ),
    )
    check_config(config, where)
    return config


def decode_session_pool(value: object, where: str = "session_pool") -> tuple[str, ...]:
    """Distinct session ids, at most `SESSION_POOL_MAX` of them."""
    raw = expect_list(value, where)
    if len(raw) > SESSION_POOL_MAX:
        raise TraceError(where, f"{len(raw)} ids exceed the cap of {SESSION_POOL_MAX}")
    pool = tuple(expect_str(item, f"{where}[{i}]") for i, item in enumerate(raw))
    if len(set(pool)) != len(pool):
        duplicate = next(s for s in pool if pool.count(s) > 1)
        raise TraceError(where, f"session id {duplicate!r} appears twice")
    return pool


# ---- targets, versions -------------------------------------------------------


TARGETS: Final[Codec] = dataclass_codec(Target, {}, {"worker": U64, "rank": U32})
"""A `Target` as `{"worker": w, "rank": r or null}` and back."""
VERSIONS: Final[Codec] = dataclass_codec(Version, {}, {"sequence": U64, "writer": U64})
"""A `Version` as `{"sequence": s, "writer": w}` and back."""
encode_target, decode_target = TARGETS
encode_version, decode_version = VERSIONS
TYPE_CODECS: Final[Mapping[type, Codec]] = {Target: TARGETS, Version: VERSIONS}
"""The codecs of the affinity types that other dataclasses hold, by type."""


# ---- outcomes ----------------------------------------------------------------


TAGGED: Final[dict[str, Codec]] = {
    cls.__name__: dataclass_codec(cls, TYPE_CODECS) for cls in (Initialize, Bound, Wait)
} | {"Target": TARGETS, "Version": VERSIONS}
"""The values written as their fields tagged with the type's name, by name."""


def encode_value(value: Value) -> Any:
    """A step's return value as JSON; non-scalar values are tagged by type."""
    match value:
        case None | bool() | int():
            return value
        case ReplicaOutcome():
            return {"type": "ReplicaOutcome", "outcome": value.value}
    name = type(value).__name__
    if name not in TAGGED:
        raise TypeError(f"no trace encoding for the value {value!r}")
    return {"type": name} | TAGGED[name][0](value)


def decode_value(value: object, where: str) -> Value:
    """The inverse of `encode_value`."""
    if value is None or isinstance(value, bool | int):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise TraceError(
            where, "expected null, a boolean, an integer or a typed object"
        )
    tag = value["type"]
    untagged = {key: item for key, item in value.items() if key != "type"}
    if tag in TAGGED:
        decoded: Value = TAGGED[tag][1](untagged, where)
        return decoded
    if tag != "ReplicaOutcome":
        known = ", ".join(sorted([*TAGGED, "ReplicaOutcome"]))
        raise TraceError(where, f"unknown value type {tag!r} (known: {known})")
    raw = expect_object(untagged, f"{where} ({tag})", frozenset({"outcome"}))
    outcome = expect_str(raw["outcome"], f"{where}.outcome")
    try:
        return ReplicaOutcome(outcome)
    except ValueError:
        known = ", ".join(sorted(o.value for o in ReplicaOutcome))
        raise TraceError(
            f"{where}.outcome", f"unknown replica outcome {outcome!r} (known: {known})"
        ) from None


OUTCOMES: Final[Codec] = outcome_codec(encode_value, decode_value, Outcome)
"""A step's outcome as JSON and back."""


# ---- projection --------------------------------------------------------------

_BOUND_KEYS: Final[frozenset[str]] = frozenset(
    {"state", "target", "version", "leases", "deadline_ns"}
)


def encode_projection(projection: Projection) -> dict[str, Any]:
    """`{"now_ns": ..., "entries": {session: summary}}`.

    An initializing entry is its state alone; a bound one, every field.
    """
    entries = {
        session_id: asdict(entry) if entry.state == "bound" else {"state": entry.state}
        for session_id, entry in projection.entries
    }
    return {"now_ns": projection.now_ns, "entries": entries}


def decode_projection(value: object, where: str) -> Projection:
    """A model projection; entries come back sorted by session id."""
    raw = expect_object(value, where, frozenset({"now_ns", "entries"}))
    now_ns = expect_int(raw["now_ns"], f"{where}.now_ns")
    listed = raw["entries"]
    if not isinstance(listed, dict):
        raise TraceError(f"{where}.entries", "expected an object keyed by session id")
    entries = []
    for session_id, item in sorted(listed.items()):
        place = f"{where}.entries[{session_id!r}]"
        if isinstance(item, dict) and item.get("state") == "initializing":
            expect_object(item, place, frozenset({"state"}))
            entries.append((session_id, EntrySummary(state="initializing")))
            continue
        bound = expect_object(item, place, _BOUND_KEYS)
        if bound["state"] != "bound":
            raise TraceError(
                f"{place}.state",
                f"expected 'initializing' or 'bound', got {bound['state']!r}",
            )
        summary = EntrySummary(
            state="bound",
            target=decode_target(bound["target"], f"{place}.target"),
            version=decode_version(bound["version"], f"{place}.version"),
            leases=expect_int(bound["leases"], f"{place}.leases"),
            deadline_ns=expect_int(bound["deadline_ns"], f"{place}.deadline_ns"),
        )
        entries.append((session_id, summary))
    return Projection(now_ns=now_ns, entries=tuple(entries))


# ---- the kind ----------------------------------------------------------------

OPS: Final[OpCodec] = OpCodec(OP_TYPES, TYPE_CODECS, OP_RANGES)


@dataclass(frozen=True)
class AffinitySetup:
    """What an affinity program runs on: a configuration and the observed ids."""

    config: AffinityConfig
    session_pool: tuple[str, ...]


def created_handle(op: Op, outcome: Outcome) -> int | None:
    """The handle number a step handed out, if any."""
    value = outcome.value
    if isinstance(op, Acquire) and isinstance(value, Initialize | Bound):
        return value.handle
    if isinstance(op, Acquire) and isinstance(value, Wait):
        return value.waiter
    if isinstance(op, Join | Commit) and isinstance(value, int) and outcome.ok:
        return value
    return None


def used_handle(op: Op) -> int | None:
    """The handle number a step consumes or reads, if any."""
    if isinstance(op, Commit | Abort | Release | Invalidate):
        return op.handle
    if isinstance(op, PollWaiter):
        return op.waiter
    return None


def _with_handle(op: Op, handle: int) -> Op:
    if isinstance(op, PollWaiter):
        return replace(op, waiter=handle)
    assert isinstance(op, Commit | Abort | Release | Invalidate)
    return replace(op, handle=handle)


class AffinityKind(TraceKind):
    """Traces of `SessionAffinity` programs."""

    subject = SUBJECT
    noun = "table"
    setup_keys = SUBJECT_KEYS
    ops = OPS
    outcomes = OUTCOMES
    projections = (encode_projection, decode_projection)
    model = ModelAffinity
    crate = ("impl.adapter", "CrateAffinity")

    def encode_setup(self, setup: AffinitySetup) -> dict[str, Any]:
        """`config` and `session_pool`."""
        return {
            "config": encode_config(setup.config),
            "session_pool": list(setup.session_pool),
        }

    def decode_setup(self, document: dict[str, Any]) -> AffinitySetup:
        """A valid configuration and distinct session ids."""
        return AffinitySetup(
            decode_config(document["config"]),
            decode_session_pool(document["session_pool"]),
        )

    def project(self, model: Any) -> Projection:
        """The model's clock and entries."""
        return project(model.state())

    def harness(self, setup: AffinitySetup, factory: Factory) -> AffinityHarness:
        """An `AffinityHarness` over the setup's configuration and pool."""
        return AffinityHarness(setup.config, setup.session_pool, factory)

    def setup_from(self, subject: Any, config: Any) -> AffinitySetup:
        """The configuration, and the pool the `AffinitySubject` observes."""
        return AffinitySetup(config, subject.session_pool)

    def describe(self, setup: AffinitySetup) -> str:
        """The configuration's fields and the pool's ids."""
        config = setup.config
        sessions = ", ".join(show_session(s) for s in setup.session_pool)
        return (
            f"ttl_ns={config.ttl_ns} mode={config.mode.value} "
            f"max_entries={config.max_entries} "
            f"max_session_id_bytes={config.max_session_id_bytes} "
            f"reaping={config.reaping}; sessions {sessions}"
        )

    def record(
        self,
        setup: AffinitySetup,
        ops: Sequence[Any],
        description: str,
        comments: Sequence[str] = (),
    ) -> Trace:
        """Refuse a configuration no table can be built with, then record."""
        check_config(setup.config, "config")
        return super().record(setup, ops, description, comments)

    def rebuild(self, trace: Trace, keep: Sequence[int]) -> list[tuple[int, Any]]:
        """The kept steps as a program, handle numbers renumbered.

        Handles are numbered in creation order, so deleting an `Acquire`
        renumbers every later handle: each kept step that created a handle in
        the original maps the original number to the new one (the reference
        model says which), and a kept step that uses a handle whose creator
        was deleted is deleted too.
        """
        creators = {
            handle: position
            for position, step in enumerate(trace.steps)
            if (handle := created_handle(step.op, step.expected)) is not None
        }
        model = ModelAffinity(trace.setup.config)
        renumbered: dict[int, int] = {}
        program: list[tuple[int, Any]] = []
        for position in keep:
            step = trace.steps[position]
            op = step.op
            used = used_handle(op)
            if used is not None and used in creators:
                if used not in renumbered:
                    continue  # its creator was deleted: this step goes too
                op = _with_handle(op, renumbered[used])
            now = created_handle(op, outcome_of(model, op))
            original = created_handle(step.op, step.expected)
            if original is not None and now is not None:
                renumbered[original] = now
            program.append((position, op))
        return program


SESSION_SHOWN_MAX: Final[int] = 12


def show_session(session_id: str) -> str:
    """A session id, abbreviated with its UTF-8 size when it is long."""
    if len(session_id) <= SESSION_SHOWN_MAX:
        return repr(session_id)
    size = len(session_id.encode())
    return f"{session_id[:SESSION_SHOWN_MAX]!r}... ({size} bytes)"


KIND: Final[AffinityKind] = AffinityKind()


def record(
    config: AffinityConfig,
    session_pool: Sequence[str],
    ops: Sequence[Op],
    description: str,
    comments: Sequence[str] = (),
) -> Trace:
    """Run `ops` on a fresh reference model and record its answers."""
    return KIND.record(
        AffinitySetup(config, tuple(session_pool)), ops, description, comments
    )
