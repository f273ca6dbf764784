"""The scheduler trace kind: everything a trace knows about `LocalScheduler`.

Subject key (beside the envelope of `ci/replay/envelope.py`):

    workers   {"capacities_tokens": [n, ...]} -- `SchedulerConfig`: worker `i`
              has capacity `capacities_tokens[i]` (1 to `WORKERS_MAX` workers)

Each step:

    op        {"op": <model.scheduler.ops class name>, <field>: <value>, ...},
              e.g. {"op": "Schedule", "request_id": "r000", "worker": 0,
              "pinned": true, "isl_tokens": 6, "due_ms": null}
    expected  {"value": true/false (cancel) or null, "error": <error kind> or
              null, "message": ...}
    model     {"now_ms", "parked": [id, ...] (serve order), "booked": [id, ...],
               "blocked": [worker, ...], "received_total",
               "rejected_due_time_passed_total"}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ci.inputs import (
    U64_MAX,
    USIZE_MAX,
    expect_int,
    expect_list,
    expect_object,
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
from model.queue.types import ClassConfig
from model.scheduler.ops import (
    SCHEDULER_OP_TYPES,
    Advance,
    Cancel,
    Free,
    Schedule,
    SchedulerOutcome,
    SetAvailable,
    SetCapacity,
)
from model.scheduler.table import SchedulerState, parked_in_order
from model.scheduler.types import SchedulerConfig
from stateful.scheduler_subject import SchedulerHarness, model_factory

SUBJECT: Final[str] = "scheduler"
SUBJECT_KEYS: Final[frozenset[str]] = frozenset({"workers"})
WORKERS_MAX: Final[int] = 16
CLASSES_MAX: Final[int] = 4
NS_PER_MS: Final[int] = 1_000_000
YEAR_S: Final[int] = 31_557_600
"""A Julian year in seconds, the binding's year (`YEAR_S` in impl/src/scheduler.rs)."""
CLOCK_MS_MAX: Final[int] = 600 * YEAR_S * 1_000
"""The binding's scheduler clock stops at 600 years (`CLOCK_NS_MAX` in
impl/src/scheduler.rs): a program whose steps add up past it is refused."""
OP_RANGES: Final[Mapping[str, Bounds]] = {
    "worker": (0, U64_MAX),
    "isl_tokens": (0, USIZE_MAX),
    "tokens": (0, U64_MAX),
    "delta_ms": (0, CLOCK_MS_MAX),
    "due_ms": (0, U64_MAX),
    "class_index": (0, 3),
    "strict_priority": (0, 2**32 - 1),
    "workers": (0, U64_MAX),
}
"""What the binding's arguments hold (`schedule(.., isl_tokens: usize, due_ns:
Option<u128>)`, `set_capacity(worker, tokens: u64)`, `set_available(workers:
Option<Vec<u64>>)`; due times in ns, as far as
a `u64` of milliseconds reaches, well inside the platform's `Instant`)."""
OPS: Final[OpCodec] = OpCodec(
    SCHEDULER_OP_TYPES,
    {},
    OP_RANGES,
    sparse=frozenset({"class_index", "strict_priority", "leaves"}),
)


OUTCOMES: Final[Codec] = outcome_codec(*codec_for(bool | None, {}), SchedulerOutcome)
"""A step's outcome as JSON and back: its value is a boolean or null."""


CLASS_CODEC: Final[Codec] = dataclass_codec(ClassConfig, {})
"""One policy class of a trace's profile."""


def encode_workers(setup: SchedulerConfig) -> dict[str, Any]:
    """The workers' capacities, and the profile's classes when it has several."""
    encoded: dict[str, Any] = {"capacities_tokens": list(setup.capacities_tokens)}
    if setup.classes:
        encoded["classes"] = [CLASS_CODEC[0](config) for config in setup.classes]
    return encoded


def decode_workers(value: object, where: str = "workers") -> SchedulerConfig:
    """A strict `SchedulerConfig` (no `classes`: the synthetic profile)."""
    raw = expect_object(
        value, where, frozenset({"capacities_tokens"}), frozenset({"classes"})
    )
    classes = tuple(
        CLASS_CODEC[1](item, f"{where}.classes[{index}]")
        for index, item in enumerate(expect_list(raw.get("classes", []), where))
    )
    if len(classes) > CLASSES_MAX:
        raise TraceError(f"{where}.classes", f"expected at most {CLASSES_MAX} classes")
    listed = expect_list(raw["capacities_tokens"], f"{where}.capacities_tokens")
    if not 1 <= len(listed) <= WORKERS_MAX:
        raise TraceError(
            f"{where}.capacities_tokens",
            f"expected 1 to {WORKERS_MAX} workers, got {len(listed)}",
        )
    capacities = tuple(
        expect_int(item, f"{where}.capacities_tokens[{index}]", 0, U64_MAX)
        for index, item in enumerate(listed)
    )
    return SchedulerConfig(capacities_tokens=capacities, classes=classes)


def check_program(setup: SchedulerConfig, ops: Sequence[Any]) -> None:
    """Workers the scheduler has, and a clock within the binding's day."""
    workers = len(setup.capacities_tokens)
    now_ms = 0
    for position, op in enumerate(ops):
        at = f"steps[{position}].op"
        worker = getattr(op, "worker", None)
        if worker is not None and worker >= workers:
            raise TraceError(
                f"{at}.worker", f"{worker} is not one of the {workers} workers"
            )
        if isinstance(op, Advance):
            now_ms += op.delta_ms
            if now_ms > CLOCK_MS_MAX:
                raise TraceError(
                    f"{at}.delta_ms",
                    f"the clock reaches {now_ms} ms, past the binding's "
                    f"{CLOCK_MS_MAX} ms",
                )


@dataclass(frozen=True)
class Projection:
    """A small view of the model after a step."""

    now_ms: int
    parked: tuple[str, ...]
    booked: tuple[str, ...]
    blocked: tuple[int, ...]
    received_total: int
    rejected_due_time_passed_total: int


def project(state: SchedulerState) -> Projection:
    """The projection of a model snapshot."""
    return Projection(
        now_ms=state.now_ms,
        parked=tuple(parked_in_order(state)),
        booked=tuple(sorted(state.booked)),
        blocked=tuple(sorted(state.blocked_workers)),
        received_total=state.received_total,
        rejected_due_time_passed_total=state.rejected_due_time_passed_total,
    )


PROJECTIONS: Final[Codec] = dataclass_codec(Projection, {})
"""The projection as JSON and back."""


def show_op(op: Any) -> str:
    """An operation in a replay table cell, in the scheduler's own words."""
    match op:
        case Schedule():
            lane = "pinned to" if op.pinned else "allowed only"
            due = "" if op.due_ms is None else f", due at {op.due_ms} ms"
            tokens = f"{op.isl_tokens} tokens"
            return f"schedule {op.request_id} ({tokens}, {lane} w{op.worker}{due})"
        case Free(request_id):
            return f"free {request_id}"
        case SetCapacity(worker, tokens):
            return f"capacity of w{worker} := {tokens}"
        case Advance(delta_ms):
            return f"advance {delta_ms} ms"
        case Cancel(request_id):
            return f"the caller of {request_id} goes away"
        case SetAvailable(workers=None):
            return "no availability source"
        case SetAvailable(workers=workers) if workers is not None:
            names = ", ".join(f"w{worker}" for worker in sorted(workers)) or "none"
            return f"available: {names}"
    return type(op).__name__.lower()


class SchedulerKind(TraceKind):
    """Traces of `LocalScheduler` programs."""

    subject = SUBJECT
    noun = "scheduler"
    setup_keys = SUBJECT_KEYS
    ops = OPS
    outcomes = OUTCOMES
    projections = PROJECTIONS
    model = staticmethod(model_factory)
    crate = ("stateful.scheduler_subject", "crate_factory")
    show_op = staticmethod(show_op)

    def encode_setup(self, setup: SchedulerConfig) -> dict[str, Any]:
        """`workers`."""
        return {"workers": encode_workers(setup)}

    def decode_setup(self, document: dict[str, Any]) -> SchedulerConfig:
        """The workers' capacities."""
        return decode_workers(document["workers"])

    def check_program(self, setup: SchedulerConfig, ops: Sequence[Any]) -> None:
        """`check_program`: known workers, a clock within the binding's day."""
        check_program(setup, ops)

    def project(self, model: Any) -> Projection:
        """Clock, parked and booked ids, blocked lanes, counters."""
        return project(model.state)

    def harness(self, setup: SchedulerConfig, factory: Factory) -> SchedulerHarness:
        """A `SchedulerHarness` over the workers."""
        return SchedulerHarness(setup, factory)

    def describe(self, setup: SchedulerConfig) -> str:
        """The workers and their capacities."""
        workers = ", ".join(
            f"w{index}: {tokens} tokens"
            for index, tokens in enumerate(setup.capacities_tokens)
        )
        return f"workers {workers}; busy above capacity"


KIND: Final[SchedulerKind] = SchedulerKind()
