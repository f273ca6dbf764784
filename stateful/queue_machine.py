"""The differential policy-queue machine: Hypothesis drives the model and a SUT.

Every rule builds one operation from `model.queue.types`, applies it to the
model and to the system under test through `_apply`, and asserts: the same
outcome (value or error kind), the same observable state, no violated
property. Preconditions and drawn keys depend on the model (and on the
machine's own record of which workers are saturated) only.

`states_agree` obligations, checked after every step:

1. Positive space: every entry the model holds is listed by the system under
   test with the same class, placement and snapshot, and `pending_count`,
   `class_stats(i)` and `has_backlog(i)` agree for every class.
2. Negative space: the system under test lists no entry the model lacks
   (listings are compared whole, in one sorted order).

The system under test is built by `factory` from a `ProfileSpec`: the native
adapter parses the spec's YAML (or builds the synthetic profile) while the
model takes the spec's class configs directly, so YAML parsing and profile
resolution are under test too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from hypothesis import event, note
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
)

from model.errors import PolicyConfigError, QueueUsageError, RustPanicError
from model.queue.api import PolicyQueueApi, observe
from model.queue.table import ModelPolicyQueue, QueueState
from model.queue.types import (
    U32_MAX,
    ClassConfig,
    Dispatch,
    Drain,
    Enqueue,
    PopNext,
    QueueOp,
    QueuePolicy,
    Retain,
    Worker,
    synthetic_profile,
)
from properties.queue.invariants import QueueView
from properties.registry import Step, reached, violated

if TYPE_CHECKING:
    from collections.abc import Callable

WORKERS = (Worker(1, 0), Worker(1, 1), Worker(2, 0))
QUANTA = (1, 2, 3, 5, 8, 40)
ARRIVALS_S = (0.0, 1.0, 2.0, 3.5, -1.0, math.inf, math.nan)
JUMPS = (0.0, 0.0, 1.0, 10.0, -5.0, math.inf, math.nan)
STRICT = (0, 0, 0, 1, 2, U32_MAX)
WORKER_COUNTS = (1, 1, 2, 3, 0)
STEPS_BEFORE_DRAIN_MIN = 25
TEARDOWN_POPS_MAX = 500
"""Cap on the teardown drain loop; reaching it fails the run."""


# ---- profiles --------------------------------------------------------------------


@dataclass(frozen=True)
class ProfileSpec:
    """How to build one queue on both sides.

    `yaml_text` is None for `PolicyProfile::synthetic`; otherwise the native
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


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line + "\n" for line in text.splitlines())


@st.composite
def class_lists(draw: st.DrawFn) -> tuple[tuple[ClassConfig, ...], tuple[bool, ...]]:
    """One to four YAML-expressible classes and which are explicit (no family)."""
    count = draw(st.integers(1, 4))
    configs = [
        ClassConfig(
            name=f"c{index}",
            queue_policy=draw(st.sampled_from(("fcfs", "wspt"))),
            quantum=draw(st.sampled_from(QUANTA)),
            request_queue_limit_per_worker=draw(
                st.none() | st.none() | st.integers(0, 4)
            ),
            raw_isl_token_queue_limit_per_worker=draw(
                st.none() | st.none() | st.integers(0, 40)
            ),
            cached_token_queue_limit_per_worker=draw(
                st.none() | st.none() | st.integers(0, 20)
            ),
        )
        for index in range(count)
    ]
    explicit = tuple(draw(st.booleans()) for _ in range(count))
    return tuple(configs), explicit


@st.composite
def profile_specs(draw: st.DrawFn) -> ProfileSpec:
    """A synthetic profile, a root profile, a model profile, or a fallback."""
    kind = draw(st.sampled_from(("synthetic", "root", "root", "model", "fallback")))
    policy: QueuePolicy = draw(st.sampled_from(("fcfs", "wspt", "lcfs")))
    if kind == "synthetic":
        return ProfileSpec(synthetic_profile(policy), None, None, policy)
    configs, explicit = draw(class_lists())
    body = profile_yaml(configs, explicit)
    if kind == "root":
        return ProfileSpec(configs, body, draw(st.sampled_from((None, "m"))), policy)
    if kind == "model":
        root_configs, root_explicit = draw(class_lists())
        text = profile_yaml(root_configs, root_explicit) + "models:\n  m:\n"
        return ProfileSpec(configs, text + _indent(body, 4), "m", policy)
    text = "models:\n  m:\n" + _indent(body, 4)
    return ProfileSpec(synthetic_profile(policy), text, "other", policy)


def model_factory(spec: ProfileSpec) -> PolicyQueueApi:
    """A second reference model: model-vs-model checks the harness itself."""
    return ModelPolicyQueue(spec.configs)


def native_factory(spec: ProfileSpec) -> PolicyQueueApi:
    """The crate, built from the spec's YAML or as the synthetic profile."""
    from impl.adapter import NativePolicyQueue  # noqa: PLC0415 - only when selected

    if spec.yaml_text is None:
        return NativePolicyQueue.synthetic(None, spec.fallback_policy)
    return NativePolicyQueue.from_yaml(
        spec.yaml_text, spec.model_name, None, spec.fallback_policy
    )


# ---- outcomes --------------------------------------------------------------------


@dataclass(frozen=True)
class Raised:
    """A call raised one of the errors both sides may raise; compared by kind."""

    kind: str


_EXPECTED_ERRORS = (QueueUsageError, PolicyConfigError, RustPanicError)


def attempt(call: Callable[[], object]) -> object:
    """Run `call`; its value, or `Raised(kind)` for an expected error."""
    try:
        return call()
    except _EXPECTED_ERRORS as error:
        return Raised(error.kind)


def apply(queue: PolicyQueueApi, op: QueueOp) -> object:
    """Apply one operation through the Protocol (both sides get identical calls)."""
    match op:
        case Enqueue():
            return queue.enqueue(
                op.class_index,
                worker_count=op.worker_count,
                raw_isl_tokens=op.raw_isl_tokens,
                cached_tokens=op.cached_tokens,
                arrival_offset_secs=op.arrival_offset_secs,
                priority_jump=op.priority_jump,
                strict_priority=op.strict_priority,
                placement=op.placement,
                payload=op.payload,
            )
        case PopNext(dispatch=dispatch):
            return queue.pop_next(dispatch)
        case Retain(drop=drop):
            queue.retain(drop)
            return None
        case Drain():
            return queue.drain()


# ---- the machine -----------------------------------------------------------------


class QueueMachine(RuleBasedStateMachine):
    """Model and system under test side by side, over one profile per run."""

    factory: ClassVar[Callable[[ProfileSpec], PolicyQueueApi]] = staticmethod(
        native_factory
    )
    goals_reached: ClassVar[set[str]] = set()
    rules_run: ClassVar[set[str]] = set()
    steps_run: ClassVar[int] = 0

    def __init__(self) -> None:
        """Start with no queue; `build` makes one."""
        super().__init__()
        self.spec: ProfileSpec | None = None
        self.model = ModelPolicyQueue(synthetic_profile("fcfs"))
        self.sut: PolicyQueueApi = self.model
        self.saturated: set[Worker] = set()
        self.any_dispatchable = True
        self.paused: set[int] = set()
        self.next_payload = 1
        self.steps_since_build = 0

    # -- plumbing --

    def _build(self, spec: ProfileSpec) -> None:
        self.spec = spec
        self.model = ModelPolicyQueue(spec.configs)
        self.sut = type(self).factory(spec)
        self.steps_since_build = 0
        expected = [self.model.class_config(i) for i in range(len(spec.configs))]
        actual = [self.sut.class_config(i) for i in range(self.sut.class_count())]
        assert expected == actual

    def _ran(self, rule_name: str) -> None:
        type(self).rules_run.add(rule_name)
        type(self).steps_run += 1
        self.steps_since_build += 1

    def _dispatch(self) -> Dispatch:
        return Dispatch(
            saturated=frozenset(self.saturated),
            any_dispatchable=self.any_dispatchable,
            paused_classes=frozenset(self.paused),
        )

    def _apply(self, op: QueueOp) -> object:
        """Apply `op` to both sides; compare outcomes, states and properties."""
        before: QueueState = self.model.state
        expected = attempt(lambda: apply(self.model, op))
        actual = attempt(lambda: apply(self.sut, op))
        note(f"{op} -> {expected}")
        assert expected == actual, f"outcome: model {expected} != sut {actual}"
        after: QueueState = self.model.state
        if isinstance(expected, Raised):
            assert before == after, f"refused {op} changed the model"
            return expected
        transition = Step(before=before, op=op, outcome=expected, after=after)
        broken = violated("queue", "step", transition)
        assert broken == [], f"violated: {broken}"
        self._tally(reached("queue", "step", transition))
        if not after.drained:
            self._check_states()
        return expected

    def _check_states(self) -> None:
        expected = observe(self.model)
        actual = observe(self.sut)
        assert expected == actual, f"states: model {expected} != sut {actual}"
        view = QueueView(state=self.model.state, seen=actual)
        broken = violated("queue", "state", view)
        assert broken == [], f"violated: {broken}"
        self._tally(reached("queue", "state", view))

    def _tally(self, goals: list[str]) -> None:
        for goal in goals:
            type(self).goals_reached.add(goal)
            event(f"reached {goal}")

    def _class_count(self) -> int:
        return len(self.model.state.configs)

    def _payloads(self) -> list[int]:
        return sorted(item.payload for item in self.model.entries())

    # -- preconditions (model and machine records only) --

    def has_entries(self) -> bool:
        """The model holds at least one entry."""
        return self.model.state.pending_count > 0

    def may_drain(self) -> bool:
        """Enough steps ran on this queue that draining it is worth a restart."""
        return self.steps_since_build >= STEPS_BEFORE_DRAIN_MIN

    # -- rules --

    @initialize(spec=profile_specs())
    def build(self, spec: ProfileSpec) -> None:
        """Build the queue on both sides from one profile spec."""
        note(f"profile: {spec}")
        self._build(spec)

    @rule(
        data=st.data(),
        worker_count=st.sampled_from(WORKER_COUNTS),
        raw=st.integers(0, 40) | st.sampled_from((0, 1, 100, 1000)),
        cached=st.integers(0, 30),
        arrival=st.sampled_from(ARRIVALS_S),
        jump=st.sampled_from(JUMPS),
        strict=st.sampled_from(STRICT),
        placement=st.none() | st.sampled_from(WORKERS),
    )
    def enqueue(  # noqa: PLR0917 - Hypothesis passes rule arguments by keyword
        self,
        data: st.DataObject,
        worker_count: int,
        raw: int,
        cached: int,
        arrival: float,
        jump: float,
        strict: int,
        placement: Worker | None,
    ) -> None:
        """Enqueueing gives the same rejection (or none) on both sides."""
        self._ran("enqueue")
        class_index = data.draw(st.integers(0, self._class_count() - 1), label="class")
        op = Enqueue(
            class_index=class_index,
            worker_count=worker_count,
            raw_isl_tokens=raw,
            cached_tokens=cached,
            arrival_offset_secs=arrival,
            priority_jump=jump,
            strict_priority=strict,
            placement=placement,
            payload=self.next_payload,
        )
        self.next_payload += 1
        self._apply(op)

    @rule(
        data=st.data(),
        raw=st.sampled_from(((10, 10), (40, 5), (5, 40))),
        arrivals=st.sampled_from(((0.0, 1.0), (1.0, 0.0))),
    )
    def two_requests_then_a_pop(
        self, data: st.DataObject, raw: tuple[int, int], arrivals: tuple[float, float]
    ) -> None:
        """Two requests of one class and tier, then a pop with all free, agree.

        The class's policy alone decides which one is served: the scenario that
        makes FCFS, WSPT and LCFS differ, in every program.
        """
        self._ran("two_requests_then_a_pop")
        class_index = data.draw(st.integers(0, self._class_count() - 1), label="class")
        for tokens, arrival in zip(raw, arrivals, strict=True):
            self._apply(
                Enqueue(
                    class_index=class_index,
                    worker_count=1,
                    raw_isl_tokens=tokens,
                    cached_tokens=0,
                    arrival_offset_secs=arrival,
                    priority_jump=0.0,
                    strict_priority=0,
                    placement=None,
                    payload=self.next_payload,
                )
            )
            self.next_payload += 1
        self._apply(PopNext(dispatch=Dispatch()))

    @rule()
    def pop(self) -> None:
        """Popping under the current saturation gives the same entry (or none)."""
        self._ran("pop")
        self._apply(PopNext(dispatch=self._dispatch()))

    @rule()
    def pop_with_every_worker_free(self) -> None:
        """Popping with everything dispatchable gives the same entry (or none)."""
        self._ran("pop_with_every_worker_free")
        self._apply(PopNext(dispatch=Dispatch()))

    @rule(worker=st.sampled_from(WORKERS))
    def toggle_worker(self, worker: Worker) -> None:
        """A worker becomes saturated, or frees up (no queue call)."""
        self._ran("toggle_worker")
        self.saturated ^= {worker}

    @rule()
    def toggle_any_work(self) -> None:
        """Shared (Any-lane) work becomes undispatchable, or dispatchable again."""
        self._ran("toggle_any_work")
        self.any_dispatchable = not self.any_dispatchable

    @rule(data=st.data())
    def toggle_class_pause(self, data: st.DataObject) -> None:
        """A class is paused (its predicate refuses all), or resumed."""
        self._ran("toggle_class_pause")
        class_index = data.draw(st.integers(0, self._class_count() - 1), label="class")
        self.paused ^= {class_index}

    @precondition(has_entries)
    @rule(data=st.data(), unknown=st.booleans())
    def retain(self, data: st.DataObject, unknown: bool) -> None:
        """Dropping some payloads leaves the same entries on both sides."""
        self._ran("retain")
        payloads = self._payloads()
        drop = set(data.draw(st.sets(st.sampled_from(payloads)), label="drop"))
        if unknown:
            drop.add(self.next_payload + 1_000)
        self._apply(Retain(drop=frozenset(drop)))

    @precondition(may_drain)
    @rule()
    def drain_and_rebuild(self) -> None:
        """Draining yields the same entries; then both sides restart the profile."""
        self._ran("drain_and_rebuild")
        self._apply(Drain())
        after_drain = attempt(self.sut.pending_count)
        assert Raised("QueueUsageError") == after_drain
        assert self.spec is not None
        self._build(self.spec)

    @rule(
        call=st.sampled_from(
            ("class_stats", "has_backlog", "class_config", "enqueue", "strict")
        )
    )
    def misuse(self, call: str) -> None:
        """A call the crate would panic on is refused alike, changing nothing."""
        self._ran("misuse")
        bad = self._class_count()
        if call == "class_stats":
            expected = attempt(lambda: self.model.class_stats(bad))
            actual = attempt(lambda: self.sut.class_stats(bad))
        elif call == "has_backlog":
            expected = attempt(lambda: self.model.has_backlog(bad))
            actual = attempt(lambda: self.sut.has_backlog(bad))
        elif call == "class_config":
            expected = attempt(lambda: self.model.class_config(bad))
            actual = attempt(lambda: self.sut.class_config(bad))
        else:
            op = Enqueue(
                class_index=bad if call == "enqueue" else 0,
                worker_count=1,
                raw_isl_tokens=1,
                cached_tokens=0,
                arrival_offset_secs=0.0,
                priority_jump=0.0,
                strict_priority=0 if call == "enqueue" else U32_MAX + 1,
                placement=None,
                payload=self.next_payload,
            )
            # `_apply` runs both sides and asserts their outcomes agree.
            expected = self._apply(op)
            assert Raised("QueueUsageError") == expected, f"misuse allowed: {expected}"
            self._check_states()
            return
        assert Raised("QueueUsageError") == expected, f"misuse allowed: {expected}"
        assert expected == actual, f"misuse: model {expected} != sut {actual}"
        self._check_states()

    def teardown(self) -> None:
        """Everything not in a blocked lane leaves within a capped drain."""
        if self.spec is None:
            return
        for _ in range(TEARDOWN_POPS_MAX):
            if self._apply(PopNext(dispatch=Dispatch())) is None:
                break
        else:
            raise AssertionError(f"queue not drained in {TEARDOWN_POPS_MAX} pops")
        stranded = {
            (index, entry.placement)
            for index, cls in enumerate(self.model.state.classes)
            for entry in cls.entries
        }
        blocked = {
            (index, worker)
            for index, cls in enumerate(self.model.state.classes)
            for worker in cls.blocked
        }
        assert set() == stranded - blocked, "entries stranded outside blocked lanes"
        self._apply(Drain())
