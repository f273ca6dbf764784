"""The queue trace kind: everything a trace knows about `PolicyQueue`.

Subject key (beside the envelope of `ci/replay/envelope.py`):

    profile   {"classes": [class config, ...], "yaml": text or null,
               "model_name": text or null, "fallback_policy": "fcfs"|"wspt"|"lcfs"}
              -- `stateful.queue_subject.ProfileSpec`: the crate parses `yaml`
              (the synthetic profile when null) and resolves `model_name`;
              the model is given `classes`, what resolution must yield

A class config is {"name", "queue_policy", "quantum",
"request_queue_limit_per_worker", "raw_isl_token_queue_limit_per_worker",
"cached_token_queue_limit_per_worker"} (limits null when absent).

Each step:

    op        {"op": <model.queue.ops class name>, <field>: <value>, ...}; a
              worker is {"worker_id": 1, "dp_rank": 0}, a `Dispatch`
              {"saturated": [worker, ...], "any_dispatchable": true,
              "paused_classes": [0]}, a payload set a sorted array, a float a
              number or "inf", "-inf", "nan"
    expected  {"value": ..., "error": <error kind> or null, "message": ...};
              values are null, booleans, or objects tagged by type:
              "Rejection", "QueuedItem", "ClassStats", "ClassConfig", and
              "Drained" ({"items": [queued item, ...]})
    model     {"pending_count", "drained", "round_cursor", "carry",
               "classes": [{"payloads": [...], "blocked": [worker, ...],
               "deficit": n}]}: each class's payloads in enqueue order, its
              blocked lanes and its DRR credit
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from ci.inputs import (
    U32_MAX,
    U64_MAX,
    USIZE_MAX,
    expect_list,
    expect_object,
    expect_optional,
    expect_str,
)
from ci.replay.codec import (
    Bounds,
    Codec,
    OpCodec,
    codec_for,
    dataclass_codec,
    outcome_codec,
)
from ci.replay.envelope import TraceError
from ci.replay.trace import Factory, TraceKind
from model.errors import PolicyConfigError, QueueUsageError
from model.queue.ops import (
    QUEUE_OP_TYPES,
    Enqueue,
    PopNext,
    QueueOutcome,
    QueueValue,
    ReadBacklog,
    ReadConfig,
    ReadStats,
    Retain,
)
from model.queue.table import ModelPolicyQueue, QueueState
from model.queue.types import (
    ClassConfig,
    ClassStats,
    Dispatch,
    QueuedItem,
    QueuePolicy,
    Rejection,
    Worker,
)
from stateful.queue_subject import ProfileSpec, QueueHarness, model_factory

SUBJECT: Final[str] = "queue"
SUBJECT_KEYS: Final[frozenset[str]] = frozenset({"profile"})
PROFILE_KEYS: Final[frozenset[str]] = frozenset(
    {"classes", "yaml", "model_name", "fallback_policy"}
)
CLASSES_MAX: Final[int] = 64

U64: Final[Bounds] = (0, U64_MAX)
U32: Final[Bounds] = (0, U32_MAX)
USIZE: Final[Bounds] = (0, USIZE_MAX)
_WORKER: Final[Codec] = dataclass_codec(Worker, {})
"""A placement's worker: out of range it is the model's refusal to state."""
_REGISTERED: dict[type, Codec] = {Worker: _WORKER}
_REGISTERED[Dispatch] = dataclass_codec(
    Dispatch,
    {Worker: dataclass_codec(Worker, {}, {"worker_id": U64, "dp_rank": U32})},
    {"paused_classes": USIZE},
)
"""`pop_next(saturated: Vec<(u64, u32)>, ..., paused_classes: Vec<usize>)`
(impl/src/queue.rs): values the binding cannot convert are refused on reading."""
_CONFIG: Final[Codec] = dataclass_codec(
    ClassConfig,
    _REGISTERED,
    {
        "quantum": USIZE,
        "request_queue_limit_per_worker": USIZE,
        "raw_isl_token_queue_limit_per_worker": USIZE,
        "cached_token_queue_limit_per_worker": USIZE,
    },
)
"""`PolicyClassConfig`'s `usize` fields (the crate's policy_config.rs)."""
_POLICY: Final[Codec] = codec_for(QueuePolicy, _REGISTERED)
VALUES: Final[dict[str, tuple[type, Codec]]] = {
    cls.__name__: (cls, dataclass_codec(cls, _REGISTERED))
    for cls in (Rejection, QueuedItem, ClassStats, ClassConfig)
}
"""Tagged value types, by their `type` tag."""
OPS: Final[OpCodec] = OpCodec(QUEUE_OP_TYPES, _REGISTERED)


# ---- the profile -------------------------------------------------------------


def encode_profile(spec: ProfileSpec) -> dict[str, Any]:
    """The spec's classes, YAML, model name and fallback policy."""
    encode_config, _ = _CONFIG
    return {
        "classes": [encode_config(config) for config in spec.configs],
        "yaml": spec.yaml_text,
        "model_name": spec.model_name,
        "fallback_policy": spec.fallback_policy,
    }


def decode_profile(value: object, where: str = "profile") -> ProfileSpec:
    """A strict `ProfileSpec` whose classes the model accepts."""
    raw = expect_object(value, where, PROFILE_KEYS)
    _, decode_config = _CONFIG
    listed = expect_list(raw["classes"], f"{where}.classes")
    if not 1 <= len(listed) <= CLASSES_MAX:
        raise TraceError(
            f"{where}.classes",
            f"expected 1 to {CLASSES_MAX} classes, got {len(listed)}",
        )
    spec = ProfileSpec(
        configs=tuple(
            decode_config(item, f"{where}.classes[{index}]")
            for index, item in enumerate(listed)
        ),
        yaml_text=expect_optional(raw["yaml"], f"{where}.yaml", expect_str),
        model_name=expect_optional(
            raw["model_name"], f"{where}.model_name", expect_str
        ),
        fallback_policy=_POLICY[1](raw["fallback_policy"], f"{where}.fallback_policy"),
    )
    try:
        ModelPolicyQueue(spec.configs)
    except (QueueUsageError, PolicyConfigError) as error:
        raise TraceError(where, f"invalid profile: {error}") from None
    return spec


# ---- outcomes ----------------------------------------------------------------


def encode_value(value: QueueValue) -> Any:
    """A step's return value: null, a boolean, or an object tagged by type."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, tuple):
        encode_item = VALUES["QueuedItem"][1][0]
        return {"type": "Drained", "items": [encode_item(item) for item in value]}
    name = type(value).__name__
    return {"type": name} | VALUES[name][1][0](value)


def decode_value(value: object, where: str) -> QueueValue:
    """The inverse of `encode_value`."""
    if value is None or isinstance(value, bool):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise TraceError(where, "expected null, a boolean or a typed object")
    tag = value["type"]
    untagged = {key: item for key, item in value.items() if key != "type"}
    if tag == "Drained":
        decode_item = VALUES["QueuedItem"][1][1]
        raw = expect_object(untagged, f"{where} (Drained)", frozenset({"items"}))
        items = expect_list(raw["items"], f"{where}.items")
        return tuple(
            decode_item(item, f"{where}.items[{index}]")
            for index, item in enumerate(items)
        )
    if tag not in VALUES:
        known = ", ".join(sorted([*VALUES, "Drained"]))
        raise TraceError(where, f"unknown value type {tag!r} (known: {known})")
    decoded: QueueValue = VALUES[tag][1][1](untagged, f"{where} ({tag})")
    return decoded


OUTCOMES: Final[Codec] = outcome_codec(encode_value, decode_value, QueueOutcome)
"""A step's outcome as JSON and back."""


# ---- projection --------------------------------------------------------------


@dataclass(frozen=True)
class ClassSummary:
    """One class as the projection shows it."""

    payloads: tuple[int, ...]  # in enqueue order
    blocked: tuple[Worker, ...]  # sorted
    deficit: int


@dataclass(frozen=True)
class Projection:
    """A small view of the model after a step."""

    pending_count: int
    drained: bool
    round_cursor: int
    carry: int | None
    classes: tuple[ClassSummary, ...]


def project(state: QueueState) -> Projection:
    """The projection of a model snapshot."""
    return Projection(
        pending_count=state.pending_count,
        drained=state.drained,
        round_cursor=state.round_cursor,
        carry=state.carry,
        classes=tuple(
            ClassSummary(
                payloads=tuple(entry.payload for entry in cls.entries),
                blocked=tuple(sorted(cls.blocked)),
                deficit=cls.deficit,
            )
            for cls in state.classes
        ),
    )


PROJECTIONS: Final[Codec] = dataclass_codec(
    Projection, {ClassSummary: dataclass_codec(ClassSummary, {Worker: _WORKER})}
)
"""The projection as JSON and back."""


# ---- display -----------------------------------------------------------------


def show_worker(worker: Worker | None) -> str:
    """`w1.0` (worker 1, rank 0), or `any` for the shared lane."""
    return "any" if worker is None else f"w{worker.worker_id}.{worker.dp_rank}"


def show_dispatch(dispatch: Dispatch) -> str:
    """Who is refused: saturated workers, the Any lane, paused classes."""
    refused = [show_worker(worker) for worker in sorted(dispatch.saturated)]
    if not dispatch.any_dispatchable:
        refused.append("any")
    refused += [f"c{index}" for index in sorted(dispatch.paused_classes)]
    return "all free" if not refused else "refusing " + ", ".join(refused)


def show_op(op: Any) -> str:
    """An operation in a replay table cell, in the queue's own words."""
    match op:
        case Enqueue():
            extras = [
                f"{name}={value}"
                for name, value, usual in (
                    ("cached", op.cached_tokens, 0),
                    ("arrival", op.arrival_offset_secs, 0.0),
                    ("jump", op.priority_jump, 0.0),
                    ("strict", op.strict_priority, 0),
                    ("workers", op.worker_count, 1),
                )
                if value != usual  # NaN differs from everything: always shown
            ]
            return (
                f"enqueue p{op.payload} c{op.class_index} "
                f"{show_worker(op.placement)} raw={op.raw_isl_tokens}"
                + "".join(f" {extra}" for extra in extras)
            )
        case PopNext(dispatch):
            return f"pop ({show_dispatch(dispatch)})"
        case Retain(drop):
            return f"retain, dropping {sorted(drop)}"
        case ReadStats(index) | ReadBacklog(index) | ReadConfig(index):
            return f"{type(op).__name__} c{index}"
    return type(op).__name__.lower()


def show_value(value: Any) -> str:
    """A returned value in a replay table cell."""
    match value:
        case QueuedItem():
            return (
                f"p{value.payload} (c{value.class_index} {show_worker(value.placement)}"
                f" cost={value.scheduling_cost_tokens})"
            )
        case Rejection():
            return f"rejected: {value.limit_kind} {value.current}/{value.limit}"
        case tuple():
            return "drained " + ", ".join(f"p{item.payload}" for item in value)
    return repr(value)


# ---- the kind ----------------------------------------------------------------


class QueueKind(TraceKind):
    """Traces of `PolicyQueue` programs."""

    subject = SUBJECT
    noun = "queue"
    setup_keys = SUBJECT_KEYS
    ops = OPS
    outcomes = OUTCOMES
    projections = PROJECTIONS
    model = staticmethod(model_factory)
    crate = ("stateful.queue_subject", "crate_factory")
    show_op = staticmethod(show_op)
    show_value = staticmethod(show_value)

    def encode_setup(self, setup: ProfileSpec) -> dict[str, Any]:
        """`profile`."""
        return {"profile": encode_profile(setup)}

    def decode_setup(self, document: dict[str, Any]) -> ProfileSpec:
        """A profile whose classes the model accepts."""
        return decode_profile(document["profile"])

    def project(self, model: Any) -> Projection:
        """Counters, cursor, carry, and per class payloads, blocks and credit."""
        return project(model.state)

    def harness(self, setup: ProfileSpec, factory: Factory) -> QueueHarness:
        """A `QueueHarness` over the profile."""
        return QueueHarness(setup, factory)

    def describe(self, setup: ProfileSpec) -> str:
        """Each class's name, policy, quantum and limits; where the YAML came from."""
        classes = "; ".join(
            f"{c.name} {c.queue_policy} quantum={c.quantum}"
            + "".join(
                f" {kind}<={limit}"
                for kind in ("requests", "raw_isl_tokens", "cached_tokens")
                if (limit := c.limit_per_worker(kind)) is not None
            )
            for c in setup.configs
        )
        source = (
            f"synthetic {setup.fallback_policy}"
            if setup.yaml_text is None
            else f"YAML, model {setup.model_name!r}, fallback {setup.fallback_policy}"
        )
        return f"classes: {classes}; profile from {source}"


KIND: Final[QueueKind] = QueueKind()
