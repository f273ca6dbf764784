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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from types import NoneType, UnionType
from typing import Any, Final, Literal, get_args, get_origin, get_type_hints

from ci.replay.envelope import (
    STEPS_MAX,
    Header,
    TraceError,
    crate_version,
    dumps,
    expect_bool,
    expect_int,
    expect_list,
    expect_object,
    expect_optional,
    expect_str,
    read_header,
    read_steps,
    suite_version,
    write_header,
)
from model.affinity.ops import OP_TYPES, Op, Outcome, Value, outcome_of
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

SUBJECT: Final[str] = "affinity"
SUBJECT_KEYS: Final[frozenset[str]] = frozenset({"config", "session_pool"})
CONFIG_KEYS: Final[frozenset[str]] = frozenset(
    {"ttl_ns", "mode", "max_entries", "max_session_id_bytes", "reaping"}
)
OPTIONAL_CONFIG_KEYS: Final[frozenset[str]] = frozenset({"instant_range_ns"})
"""Manual clock only: where the `Instant` range ends (absent: unbounded)."""
REAPINGS: Final[tuple[str, ...]] = get_args(Reaping)
OPS_BY_NAME: Final[dict[str, type[Op]]] = {op.__name__: op for op in OP_TYPES}
SESSION_POOL_MAX: Final[int] = 1_000


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


@dataclass(frozen=True)
class RecordedStep:
    """One operation and what the model answered when the trace was recorded."""

    index: int
    op: Op
    expected: Outcome
    model: Projection
    comment: str = ""


@dataclass(frozen=True)
class AffinityTrace:
    """A recorded affinity program."""

    header: Header
    config: AffinityConfig
    session_pool: tuple[str, ...]
    steps: tuple[RecordedStep, ...]

    @property
    def ops(self) -> tuple[Op, ...]:
        """The operations, in order."""
        return tuple(step.op for step in self.steps)

    @property
    def description(self) -> str:
        """What the program shows."""
        return self.header.description

    def to_json(self) -> dict[str, Any]:
        """The trace as a JSON document."""
        return write_header(self.header) | {
            "config": encode_config(self.config),
            "session_pool": list(self.session_pool),
            "steps": [encode_step(step) for step in self.steps],
        }

    def dumps(self) -> str:
        """The trace as deterministic JSON text."""
        return dumps(self.to_json())


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


def record(
    config: AffinityConfig,
    session_pool: Sequence[str],
    ops: Sequence[Op],
    description: str,
    comments: Sequence[str] = (),
) -> AffinityTrace:
    """Run `ops` on a fresh reference model and record its answers."""
    check_config(config, "config")
    if len(ops) > STEPS_MAX:
        raise TraceError("steps", f"{len(ops)} steps exceed the cap of {STEPS_MAX}")
    model = ModelAffinity(config)
    steps = []
    for index, op in enumerate(ops, start=1):
        expected = outcome_of(model, op)
        comment = comments[index - 1] if index <= len(comments) else ""
        steps.append(RecordedStep(index, op, expected, project(model.state()), comment))
    header = Header(
        subject=SUBJECT,
        description=description,
        suite_version=suite_version(),
        crate_version=crate_version(),
    )
    return AffinityTrace(header, config, tuple(session_pool), tuple(steps))


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
        ttl_ns=expect_int(raw["ttl_ns"], f"{where}.ttl_ns"),
        mode=Mode(mode),
        max_entries=expect_int(raw["max_entries"], f"{where}.max_entries"),
        max_session_id_bytes=expect_int(
            raw["max_session_id_bytes"], f"{where}.max_session_id_bytes"
        ),
        reaping=typing.cast("Reaping", reaping),
        instant_range_ns=expect_optional(
            raw.get("instant_range_ns"), f"{where}.instant_range_ns", expect_int
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


def encode_target(target: Target) -> dict[str, Any]:
    """`{"worker": w, "rank": r or null}`."""
    return {"worker": target.worker, "rank": target.rank}


def decode_target(value: object, where: str) -> Target:
    """A `Target` object."""
    raw = expect_object(value, where, frozenset({"worker", "rank"}))
    return Target(
        worker=expect_int(raw["worker"], f"{where}.worker"),
        rank=expect_optional(raw["rank"], f"{where}.rank", expect_int),
    )


def encode_version(version: Version) -> dict[str, Any]:
    """`{"sequence": s, "writer": w}`."""
    return {"sequence": version.sequence, "writer": version.writer}


def decode_version(value: object, where: str) -> Version:
    """A `Version` object."""
    raw = expect_object(value, where, frozenset({"sequence", "writer"}))
    return Version(
        sequence=expect_int(raw["sequence"], f"{where}.sequence"),
        writer=expect_int(raw["writer"], f"{where}.writer"),
    )


# ---- operations --------------------------------------------------------------

_Decoder = Callable[[object, str], Any]
_Encoder = Callable[[Any], Any]


def _codec(annotation: object) -> tuple[_Encoder, _Decoder]:
    """How a field of this annotation is written and read."""
    if annotation is int:
        return (lambda value: value), expect_int
    if annotation is str:
        return (lambda value: value), expect_str
    if annotation is bool:
        return (lambda value: value), expect_bool
    if annotation is Target:
        return encode_target, decode_target
    if annotation is Version:
        return encode_version, decode_version
    if get_origin(annotation) in (UnionType, typing.Union):
        members = [arg for arg in get_args(annotation) if arg is not NoneType]
        if len(members) == 1 and len(get_args(annotation)) == 2:
            encode, decode = _codec(members[0])

            def encode_optional(value: Any) -> Any:
                return None if value is None else encode(value)

            def decode_optional(value: object, where: str) -> Any:
                return expect_optional(value, where, decode)

            return encode_optional, decode_optional
    raise TypeError(f"trace fields of type {annotation!r} have no codec")


_FIELDS: Final[dict[str, tuple[tuple[str, _Encoder, _Decoder], ...]]] = {
    name: tuple(
        (field.name, *_codec(get_type_hints(op_type)[field.name]))
        for field in fields(op_type)
    )
    for name, op_type in sorted(OPS_BY_NAME.items())
}
"""Per operation: each field's name, encoder and decoder (built at import)."""


def encode_op(op: Op) -> dict[str, Any]:
    """`{"op": <class name>, <field>: <value>, ...}`."""
    name = type(op).__name__
    return {"op": name} | {
        field: encode(getattr(op, field)) for field, encode, _ in _FIELDS[name]
    }


def decode_op(value: object, where: str) -> Op:
    """An operation of `model.affinity.ops`, its fields checked by type."""
    if not isinstance(value, dict) or "op" not in value:
        raise TraceError(where, "expected an operation object with an 'op' field")
    name = value["op"]
    if not isinstance(name, str) or name not in OPS_BY_NAME:
        known = ", ".join(sorted(OPS_BY_NAME))
        raise TraceError(where, f"unknown operation {name!r} (known: {known})")
    spec = _FIELDS[name]
    raw = expect_object(
        value, f"{where}: {name}", frozenset({"op"} | {f for f, _, _ in spec})
    )
    arguments = {
        field: decode(raw[field], f"{where}: {name}.{field}")
        for field, _, decode in spec
    }
    return OPS_BY_NAME[name](**arguments)


# ---- outcomes ----------------------------------------------------------------


def encode_value(value: Value) -> Any:
    """A step's return value as JSON; non-scalar values are tagged by type."""
    match value:
        case None | bool() | int():
            return value
        case Initialize(handle):
            return {"type": "Initialize", "handle": handle}
        case Bound(handle, target):
            return {"type": "Bound", "handle": handle, "target": encode_target(target)}
        case Wait(waiter):
            return {"type": "Wait", "waiter": waiter}
        case Target():
            return {"type": "Target"} | encode_target(value)
        case Version():
            return {"type": "Version"} | encode_version(value)
        case ReplicaOutcome():
            return {"type": "ReplicaOutcome", "outcome": value.value}
    raise TypeError(f"no trace encoding for the value {value!r}")


_VALUE_KEYS: Final[dict[str, frozenset[str]]] = {
    "Initialize": frozenset({"type", "handle"}),
    "Bound": frozenset({"type", "handle", "target"}),
    "Wait": frozenset({"type", "waiter"}),
    "Target": frozenset({"type", "worker", "rank"}),
    "Version": frozenset({"type", "sequence", "writer"}),
    "ReplicaOutcome": frozenset({"type", "outcome"}),
}


def decode_value(value: object, where: str) -> Value:
    """The inverse of `encode_value`."""
    if value is None or isinstance(value, bool | int):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise TraceError(
            where, "expected null, a boolean, an integer or a typed object"
        )
    tag = value["type"]
    if tag not in _VALUE_KEYS:
        known = ", ".join(sorted(_VALUE_KEYS))
        raise TraceError(where, f"unknown value type {tag!r} (known: {known})")
    raw = expect_object(value, f"{where} ({tag})", _VALUE_KEYS[tag])
    untagged = {key: item for key, item in raw.items() if key != "type"}
    match tag:
        case "Initialize":
            return Initialize(expect_int(raw["handle"], f"{where}.handle"))
        case "Bound":
            return Bound(
                expect_int(raw["handle"], f"{where}.handle"),
                decode_target(raw["target"], f"{where}.target"),
            )
        case "Wait":
            return Wait(expect_int(raw["waiter"], f"{where}.waiter"))
        case "Target":
            return decode_target(untagged, where)
        case "Version":
            return decode_version(untagged, where)
    outcome = expect_str(raw["outcome"], f"{where}.outcome")
    try:
        return ReplicaOutcome(outcome)
    except ValueError:
        known = ", ".join(sorted(o.value for o in ReplicaOutcome))
        raise TraceError(
            f"{where}.outcome", f"unknown replica outcome {outcome!r} (known: {known})"
        ) from None


def encode_outcome(outcome: Outcome) -> dict[str, Any]:
    """`{"value": ..., "error": kind or null, "message": text}`."""
    return {
        "value": encode_value(outcome.value),
        "error": outcome.error,
        "message": outcome.message,
    }


def decode_outcome(value: object, where: str) -> Outcome:
    """An `Outcome`; an error outcome carries a null value."""
    raw = expect_object(value, where, frozenset({"value", "error", "message"}))
    error = expect_optional(raw["error"], f"{where}.error", expect_str)
    decoded = decode_value(raw["value"], f"{where}.value")
    if error is not None and decoded is not None:
        raise TraceError(where, "an outcome with an error has a null value")
    return Outcome(
        value=decoded,
        error=error,
        message=expect_str(raw["message"], f"{where}.message"),
    )


# ---- projection --------------------------------------------------------------

_BOUND_KEYS: Final[frozenset[str]] = frozenset(
    {"state", "target", "version", "leases", "deadline_ns"}
)


def encode_projection(projection: Projection) -> dict[str, Any]:
    """`{"now_ns": ..., "entries": {session: summary}}`."""
    entries: dict[str, Any] = {}
    for session_id, entry in projection.entries:
        if entry.state == "initializing":
            entries[session_id] = {"state": "initializing"}
        else:
            assert entry.target is not None
            assert entry.version is not None
            entries[session_id] = {
                "state": "bound",
                "target": encode_target(entry.target),
                "version": encode_version(entry.version),
                "leases": entry.leases,
                "deadline_ns": entry.deadline_ns,
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


# ---- steps and whole traces --------------------------------------------------


def encode_step(step: RecordedStep) -> dict[str, Any]:
    """One step object (the comment only when there is one)."""
    encoded = {
        "index": step.index,
        "op": encode_op(step.op),
        "expected": encode_outcome(step.expected),
        "model": encode_projection(step.model),
    }
    if step.comment:
        encoded["comment"] = step.comment
    return encoded


def decode(document: object) -> AffinityTrace:
    """A strict decode of a parsed affinity trace."""
    header = read_header(document, SUBJECT_KEYS)
    if header.subject != SUBJECT:
        raise TraceError("subject", f"expected {SUBJECT!r}, got {header.subject!r}")
    assert isinstance(document, dict)
    config = decode_config(document["config"])
    pool = decode_session_pool(document["session_pool"])
    steps = []
    for step in read_steps(document):
        where = f"step {step['index']}"
        steps.append(
            RecordedStep(
                index=step["index"],
                op=decode_op(step["op"], f"{where}: op"),
                expected=decode_outcome(step["expected"], f"{where}: expected"),
                model=decode_projection(step["model"], f"{where}: model"),
                comment=step.get("comment", ""),
            )
        )
    return AffinityTrace(header, config, pool, tuple(steps))
