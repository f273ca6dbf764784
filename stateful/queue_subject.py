"""The policy queue as a subject of the harness.

The system under test is built from a `ProfileSpec`: the crate's adapter parses
the spec's YAML (or builds the synthetic profile) while the model takes the
spec's class configs directly, so YAML parsing and profile resolution are under
test too -- the observation lists every class's configuration.

Obligations of `states_agree` (after every step):

1. Positive space: every entry the model holds is listed by the system under
   test with the same class, placement and snapshot, and `pending_count`,
   `class_stats(i)`, `has_backlog(i)` and `class_config(i)` agree for every
   class.
2. Negative space: the system under test lists no entry the model lacks
   (listings are compared whole, in one sorted order).
3. A drained queue refuses every read alike.

Properties: `state` properties read the model's state beside what the system
under test showed (`QueueView`); `step` properties read accepted calls, whose
outcome is the returned value; `refusal` properties read refused calls.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from model.errors import QueueUsageError
from model.queue.api import PolicyQueueApi, QueueObservation, observe, outcome_of
from model.queue.ops import Enqueue, QueueOp, QueueOutcome, Rebuild
from model.queue.table import ModelPolicyQueue, QueueState
from model.queue.types import ClassConfig, QueuePolicy, Worker
from properties.queue import QueueView
from properties.registry import Over, Step, SubjectName
from stateful.harness import Harness, Subject

QueueFactory = Callable[["ProfileSpec"], PolicyQueueApi]


@dataclass(frozen=True)
class ProfileSpec:
    """How to build one queue on both sides.

    `yaml_text` is None for `PolicyProfile::synthetic`; otherwise the crate
    side parses it and resolves `model_name` with the fallback policy.
    `configs` is the profile the model is given: what resolution must yield.
    """

    configs: tuple[ClassConfig, ...]
    yaml_text: str | None
    model_name: str | None
    fallback_policy: QueuePolicy


def _limit_yaml(config: ClassConfig) -> str:
    pairs = (
        ("request_queue_limit_per_worker", config.request_queue_limit_per_worker),
        (
            "raw_isl_token_queue_limit_per_worker",
            config.raw_isl_token_queue_limit_per_worker,
        ),
        (
            "cached_token_queue_limit_per_worker",
            config.cached_token_queue_limit_per_worker,
        ),
    )
    return "".join(f", {key}: {value}" for key, value in pairs if value is not None)


def profile_yaml(configs: tuple[ClassConfig, ...], explicit: tuple[bool, ...]) -> str:
    """Render classes as a profile body; class 0 always heads family `f0`."""
    lines = [
        "default_policy_family: f0",
        "uncached_isl_buckets: [{min_tokens: 0, bucket: all}]",
        "policy_classes:",
    ]
    for index, (config, is_explicit) in enumerate(zip(configs, explicit, strict=True)):
        family = f", policy_family: f{index}, cache_bucket: all"
        binding = "" if is_explicit and index > 0 else family
        lines.append(
            f"  - {{name: {config.name}, quantum: {config.quantum}, "
            f"queue_policy: {config.queue_policy}{binding}{_limit_yaml(config)}}}"
        )
    return "\n".join(lines) + "\n"


def indented(text: str, spaces: int) -> str:
    """`text` with every line indented by `spaces` (a YAML block under a key)."""
    pad = " " * spaces
    return "".join(pad + line + "\n" for line in text.splitlines())


def model_factory(spec: ProfileSpec) -> PolicyQueueApi:
    """A second reference model: model-vs-model checks the harness itself."""
    return ModelPolicyQueue(spec.configs)


def crate_factory(spec: ProfileSpec) -> PolicyQueueApi:
    """The crate, built from the spec's YAML or as the synthetic profile."""
    from impl.adapter import CratePolicyQueue  # noqa: PLC0415 - only when selected

    if spec.yaml_text is None:
        return CratePolicyQueue.synthetic(None, spec.fallback_policy)
    return CratePolicyQueue.from_yaml(
        spec.yaml_text, spec.model_name, None, spec.fallback_policy
    )


def request(
    payload: int,
    class_index: int = 0,
    *,
    raw: int = 1,
    cached: int = 0,
    arrival: float = 0.0,
    jump: float = 0.0,
    strict: int = 0,
    workers: int = 1,
    placement: Worker | None = None,
) -> Enqueue:
    """An enqueue in short words: upstream's usual defaults, one worker, Any lane."""
    return Enqueue(
        class_index=class_index,
        worker_count=workers,
        raw_isl_tokens=raw,
        cached_tokens=cached,
        arrival_offset_secs=arrival,
        priority_jump=jump,
        strict_priority=strict,
        placement=placement,
        payload=payload,
    )


def queue_difference(model: object, crate: object) -> str:
    """The first field in which two queue observations differ, in one line."""
    if not isinstance(model, QueueObservation) or not isinstance(
        crate, QueueObservation
    ):
        return f"state: model {model} != crate {crate}"
    for name in ("pending_count", "configs", "class_stats", "backlog"):
        if getattr(model, name) != getattr(crate, name):
            return (
                f"{name}: model {getattr(model, name)} != crate {getattr(crate, name)}"
            )
    missing = [item for item in model.entries if item not in crate.entries]
    extra = [item for item in crate.entries if item not in model.entries]
    return f"entries: missing on the crate {missing}, only on the crate {extra}"


class QueueSubject(Subject[ProfileSpec, QueueOp]):
    """`PolicyQueue<T>` with integer payloads."""

    name: ClassVar[SubjectName] = "queue"

    def new_model(self, config: ProfileSpec) -> ModelPolicyQueue:
        """The reference queue over the spec's classes."""
        return ModelPolicyQueue(config.configs)

    def crate_factory(self) -> QueueFactory:
        """The crate's queue, parsed from the spec's YAML."""
        return crate_factory

    def outcome(self, api: Any, op: QueueOp) -> QueueOutcome:
        """`model.queue.ops.outcome_of`."""
        return outcome_of(api, op)

    def snapshot(self, model: Any) -> QueueState:
        """The model's frozen state."""
        state: QueueState = model.state
        return state

    def observe(self, api: Any, snapshot: Any) -> QueueObservation | str:
        """Every reader of the queue, or the error kind once it is drained."""
        del snapshot
        try:
            return observe(api)
        except QueueUsageError as error:
            return error.kind

    def difference(self, model_view: Any, crate_view: Any) -> str:
        """`queue_difference`."""
        return queue_difference(model_view, crate_view)

    def rebuilds(self, op: QueueOp) -> bool:
        """`Rebuild` builds both queues afresh from the run's profile."""
        return isinstance(op, Rebuild)

    def rebuilt(self) -> QueueOutcome:
        """A rebuild returns nothing."""
        return QueueOutcome()

    def evaluations(
        self,
        before: Any,
        op: QueueOp,
        outcome: Any,
        after: Any,
        crate_view: Any,
    ) -> list[tuple[Over, Any]]:
        """State properties while the queue is live; step or refusal by outcome."""
        checks: list[tuple[Over, Any]] = []
        if isinstance(crate_view, QueueObservation):
            checks.append(("state", QueueView(state=after, seen=crate_view)))
        if isinstance(op, Rebuild):
            return checks
        if outcome.ok:
            checks.append(("step", Step(before, op, outcome.value, after)))
        else:
            checks.append(("refusal", Step(before, op, outcome.error, after)))
        return checks


class QueueHarness(Harness[ProfileSpec, QueueOp]):
    """The harness over the queue subject."""

    def __init__(
        self,
        config: ProfileSpec,
        factory: QueueFactory | None = None,
        check_states: bool = True,
    ) -> None:
        """Build both queues from the profile spec."""
        super().__init__(QueueSubject(), config, factory, check_states)
