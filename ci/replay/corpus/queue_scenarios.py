"""Builders for the hand-written queue corpus traces (`... corpus build`).

Each scenario shows one documented behaviour of `PolicyQueue` (SPEC C.3-C.7,
G.5) as a program of `model.queue.ops` operations on a profile the crate
parses from YAML (or its synthetic profile). Beside an operation stands what
the scenario states: the payload a pop serves (or None), a rejection's limit,
a refusal, the pending count after the step. `build` records each program on
the reference model and refuses to write a file if the model disagrees.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Final

from ci.replay.corpus import CORPUS_DIR, UNCHECKED, CorpusError, Unchecked
from ci.replay.queue import KIND
from ci.replay.trace import Trace
from model.queue.ops import (
    Drain,
    PopNext,
    QueueOp,
    QueueOutcome,
    ReadBacklog,
    ReadStats,
    Rebuild,
    Retain,
)
from model.queue.types import (
    ClassConfig,
    ClassStats,
    Dispatch,
    LimitKind,
    QueuedItem,
    QueuePolicy,
    Rejection,
    Worker,
    synthetic_profile,
)
from stateful.queue_subject import ProfileSpec, profile_yaml, request

W1: Final[Worker] = Worker(1, 0)
W2: Final[Worker] = Worker(2, 0)
ALL_FREE: Final[Dispatch] = Dispatch()


@dataclass(frozen=True)
class QDo:
    """One queue operation and what the scenario states about its result.

    `serves` is the payload a pop returns (None: nothing); `rejected` the limit
    kind that refuses an enqueue; `value` any other stated return value.
    """

    op: QueueOp
    serves: int | Unchecked | None = UNCHECKED
    rejected: LimitKind | Unchecked | None = UNCHECKED
    value: object = UNCHECKED
    raises: str | None = None
    pending: int | None = None
    comment: str = ""


@dataclass(frozen=True)
class QueueScenario:
    """A queue corpus trace: what it shows, its profile and its steps."""

    name: str
    description: str
    spec: ProfileSpec
    steps: tuple[QDo, ...]


def stated_mismatch(step: QDo, outcome: QueueOutcome, pending: int) -> str:
    """How the model's answer departs from what the step states ('' if not)."""
    if step.raises is not None or not outcome.ok:
        return "" if outcome.error == step.raises else f"raised {outcome.error}"
    value = outcome.value
    if not isinstance(step.serves, Unchecked):
        served = value.payload if isinstance(value, QueuedItem) else value
        if served != step.serves:
            return f"served {served!r}"
    if not isinstance(step.rejected, Unchecked):
        kind = value.limit_kind if isinstance(value, Rejection) else None
        if kind != step.rejected:
            return f"rejected by {kind!r}"
    if not isinstance(step.value, Unchecked) and value != step.value:
        return f"returned {value!r}"
    if step.pending is not None and pending != step.pending:
        return f"left {pending} pending"
    return ""


put = partial(request, raw=10)
"""An enqueue with the scenarios' usual 10 raw tokens (`request` otherwise)."""


def pop(dispatch: Dispatch = ALL_FREE) -> PopNext:
    """A pop under `dispatch` (everything free unless told)."""
    return PopNext(dispatch)


def synthetic(policy: QueuePolicy) -> ProfileSpec:
    """`PolicyProfile::synthetic(policy)`: one class, quantum 1."""
    return ProfileSpec(synthetic_profile(policy), None, None, policy)


def from_yaml(*configs: ClassConfig) -> ProfileSpec:
    """A root profile with these classes, each in a family of its own."""
    return ProfileSpec(
        configs, profile_yaml(configs, tuple(False for _ in configs)), None, "fcfs"
    )


def _served(*payloads: int | None) -> tuple[QDo, ...]:
    return tuple(QDo(pop(), serves=payload) for payload in payloads)


QUEUE_SCENARIOS: Final[tuple[QueueScenario, ...]] = (
    QueueScenario(
        name="queue_c4_fcfs_serves_the_earliest_arrival",
        description=(
            "SPEC C.4, synthetic FCFS profile: the score is jump - arrival, so "
            "the earliest arrival is served first whatever the enqueue order."
        ),
        spec=synthetic("fcfs"),
        steps=(
            QDo(put(1, arrival=2.0)),
            QDo(put(2, arrival=1.0)),
            QDo(put(3, arrival=3.0), pending=3),
            *_served(2, 1, 3, None),
        ),
    ),
    QueueScenario(
        name="queue_c4_lcfs_serves_the_latest_arrival",
        description=(
            "SPEC C.4, synthetic LCFS profile: the score is jump + arrival, so "
            "the latest arrival is served first."
        ),
        spec=synthetic("lcfs"),
        steps=(
            QDo(put(1, arrival=2.0)),
            QDo(put(2, arrival=1.0)),
            QDo(put(3, arrival=3.0)),
            *_served(3, 1, 2, None),
        ),
    ),
    QueueScenario(
        name="queue_c4_wspt_serves_the_shortest_job",
        description=(
            "SPEC C.4, WSPT class parsed from YAML: the score is (1 + jump) / "
            "cost with cost the uncached tokens, so the cheapest job goes first; "
            "a cached prefix makes a long prompt cheap."
        ),
        spec=from_yaml(ClassConfig("w", "wspt", 1)),
        steps=(
            QDo(put(1, raw=40)),
            QDo(put(2, raw=5)),
            QDo(put(3, raw=30, cached=28), comment="2 uncached tokens"),
            *_served(3, 2, 1, None),
        ),
    ),
    QueueScenario(
        name="queue_c4_equal_scores_are_served_in_enqueue_order",
        description=(
            "SPEC C.4: entries of equal priority and score are served first in, "
            "first out (the smaller enqueue sequence wins the tie)."
        ),
        spec=from_yaml(ClassConfig("f", "fcfs", 1)),
        steps=(
            QDo(put(1)),
            QDo(put(2)),
            QDo(put(3)),
            *_served(1, 2, 3),
        ),
    ),
    QueueScenario(
        name="queue_c4_strict_priority_outranks_the_score",
        description=(
            "SPEC C.4: a higher strict priority is served before any score; among "
            "equal strict priorities the score decides."
        ),
        spec=synthetic("fcfs"),
        steps=(
            QDo(put(1, arrival=0.0)),
            QDo(put(2, arrival=5.0, strict=1)),
            QDo(put(3, arrival=1.0, strict=1)),
            *_served(3, 2, 1),
        ),
    ),
    QueueScenario(
        name="queue_c5_drr_shares_follow_the_quanta",
        description=(
            "SPEC C.5: two backlogged classes of equal costs share pops in the "
            "ratio of their quanta (3 : 1) under deficit round robin."
        ),
        spec=from_yaml(ClassConfig("big", "fcfs", 3), ClassConfig("small", "fcfs", 1)),
        steps=(
            *(QDo(put(payload, 0, raw=1)) for payload in (1, 2, 3, 4, 5, 6)),
            *(QDo(put(payload, 1, raw=1)) for payload in (11, 12)),
            *_served(1, 2, 3, 11, 4, 5, 6, 12, None),
        ),
    ),
    QueueScenario(
        name="queue_c5_an_emptied_class_forgets_its_credit",
        description=(
            "SPEC C.5: a class that runs empty with credit left loses it; "
            "refilled, it serves its quantum's worth (3 pops) before the other "
            "class's turn, not its old credit on top."
        ),
        spec=from_yaml(ClassConfig("a", "fcfs", 3), ClassConfig("b", "fcfs", 1)),
        steps=(
            QDo(put(1, 0, raw=1)),
            QDo(put(2, 0, raw=1)),
            QDo(put(11, 1, raw=1)),
            *_served(1, 2, 11),
            *(QDo(put(payload, 0, raw=1)) for payload in (3, 4, 5, 6)),
            QDo(put(12, 1, raw=1)),
            QDo(put(13, 1, raw=1)),
            *_served(3, 4, 5, 12, 6, 13, None),
        ),
    ),
    QueueScenario(
        name="queue_c5_a_paused_class_is_skipped",
        description=(
            "SPEC C.5: a class whose entries the predicate refuses is passed "
            "over; the other class is served; resumed, the first is served."
        ),
        spec=from_yaml(ClassConfig("a", "fcfs", 1), ClassConfig("b", "fcfs", 1)),
        steps=(
            QDo(put(1, 0)),
            QDo(put(2, 1)),
            QDo(pop(Dispatch(paused_classes=frozenset({0}))), serves=2),
            QDo(pop(Dispatch(paused_classes=frozenset({0}))), serves=None),
            QDo(pop(), serves=1),
        ),
    ),
    QueueScenario(
        name="queue_c7_a_blocked_worker_lane_stays_blocked_until_emptied",
        description=(
            "SPEC C.7 and G.5 (crates.io 1.6.1, recheck not public): a worker "
            "lane whose head failed the dispatch test stays blocked even when "
            "the worker frees up; other lanes are served; `retain` emptying the "
            "lane forgets the block, so a new entry there is served."
        ),
        spec=synthetic("fcfs"),
        steps=(
            QDo(put(1, placement=W1)),
            QDo(put(2, placement=W2)),
            QDo(pop(Dispatch(saturated=frozenset({W1}))), serves=2),
            QDo(pop(), serves=None, comment="W1 is free now, but its lane is blocked"),
            QDo(Retain(frozenset({1})), pending=0),
            QDo(put(3, placement=W1)),
            QDo(pop(), serves=3),
        ),
    ),
    QueueScenario(
        name="queue_c5_the_any_lane_waits_while_shared_work_is_refused",
        description=(
            "SPEC C.5: an entry placed on no worker waits while the predicate "
            "refuses shared work, and is served once it accepts it; the Any "
            "lane is never blocked."
        ),
        spec=synthetic("fcfs"),
        steps=(
            QDo(put(1)),
            QDo(pop(Dispatch(any_dispatchable=False)), serves=None),
            QDo(pop(), serves=1),
        ),
    ),
    QueueScenario(
        name="queue_c3_the_request_limit_scales_with_the_workers",
        description=(
            "SPEC C.3: a class limited to 2 queued requests per worker rejects "
            "the third on one worker, and accepts up to 4 when the enqueue "
            "counts two workers."
        ),
        spec=from_yaml(
            ClassConfig("r", "fcfs", 1, request_queue_limit_per_worker=2),
        ),
        steps=(
            QDo(put(1), rejected=None),
            QDo(put(2), rejected=None),
            QDo(
                put(3),
                value=Rejection("r", "requests", current=2, limit=2),
                pending=2,
            ),
            QDo(put(4, workers=2), rejected=None),
            QDo(put(5, workers=2), rejected=None, pending=4),
            QDo(put(6, workers=2), rejected="requests", pending=4),
        ),
    ),
    QueueScenario(
        name="queue_c3_token_limits_reject_in_the_stated_order",
        description=(
            "SPEC C.3: raw and cached token limits compare the class's queued "
            "tokens before the add with the limit; the first limit already "
            "reached, in the crate's order (requests, raw, cached), names the "
            "rejection."
        ),
        spec=from_yaml(
            ClassConfig(
                "t",
                "fcfs",
                1,
                raw_isl_token_queue_limit_per_worker=20,
                cached_token_queue_limit_per_worker=5,
            ),
        ),
        steps=(
            QDo(put(1, raw=12, cached=5), rejected=None),
            QDo(put(2, raw=3), rejected="cached_tokens", comment="raw 12 < 20"),
            QDo(Retain(frozenset({1})), pending=0),
            QDo(put(3, raw=20, cached=5), rejected=None),
            QDo(put(4, raw=1), rejected="raw_isl_tokens", comment="both reached"),
            QDo(ReadStats(0), value=ClassStats(1, 20, 5)),
        ),
    ),
    QueueScenario(
        name="queue_c6_retain_drops_payloads_and_their_counters",
        description=(
            "SPEC C.6: `retain` removes exactly the dropped payloads, with their "
            "counters; unknown payloads are ignored; the rest keep their order."
        ),
        spec=synthetic("fcfs"),
        steps=(
            QDo(put(1, raw=4)),
            QDo(put(2, raw=5)),
            QDo(put(3, raw=6)),
            QDo(Retain(frozenset({2, 99})), pending=2),
            QDo(ReadStats(0), value=ClassStats(2, 10, 0)),
            *_served(1, 3, None),
            QDo(ReadBacklog(0), value=False),
        ),
    ),
    QueueScenario(
        name="queue_drain_consumes_the_queue_and_refuses_later_calls",
        description=(
            "`drain` hands out every entry once and consumes the queue: a later "
            "read is refused (the crate would panic) and changes nothing; a "
            "fresh queue from the same profile starts empty."
        ),
        spec=from_yaml(ClassConfig("a", "fcfs", 2), ClassConfig("b", "wspt", 1)),
        steps=(
            QDo(put(1, 0)),
            QDo(put(2, 1)),
            QDo(Drain(), comment="hands out payloads 1 and 2"),
            QDo(ReadStats(0), raises="QueueUsageError"),
            QDo(pop(), raises="QueueUsageError"),
            QDo(Rebuild()),
            QDo(ReadBacklog(1), value=False),
        ),
    ),
    QueueScenario(
        name="queue_calls_out_of_range_are_refused",
        description=(
            "A class index past the profile, or a strict priority past u32, is "
            "refused before anything changes (the crate would panic)."
        ),
        spec=synthetic("wspt"),
        steps=(
            QDo(ReadStats(1), raises="QueueUsageError"),
            QDo(put(1, 1), raises="QueueUsageError"),
            QDo(put(2, strict=2**32), raises="QueueUsageError"),
            QDo(put(3), rejected=None, pending=1),
        ),
    ),
    QueueScenario(
        name="queue_a_pop_serves_beside_a_blocked_lane",
        description=(
            "A pop that finds worker 1 saturated blocks its lane and serves "
            "worker 2's; the next pop, with every worker free, still passes the "
            "blocked lane by and serves worker 2's other entry; `retain` "
            "emptying the blocked lane leaves the queue empty."
        ),
        spec=synthetic("fcfs"),
        steps=(
            QDo(put(1, placement=W1)),
            QDo(put(2, placement=W2)),
            QDo(put(3, placement=W2)),
            QDo(pop(Dispatch(saturated=frozenset({W1}))), serves=2),
            QDo(pop(), serves=3, comment="worker 1 is free, its lane still blocked"),
            QDo(Retain(frozenset({1})), pending=0),
        ),
    ),
)
"""Every hand-written queue scenario."""


def build_queue_scenario(scenario: QueueScenario) -> Trace:
    """Record a queue scenario on the model; refuse it where the model disagrees."""
    trace = KIND.record(
        scenario.spec,
        [step.op for step in scenario.steps],
        scenario.description,
        [step.comment for step in scenario.steps],
    )
    for stated, recorded in zip(scenario.steps, trace.steps, strict=True):
        mismatch = stated_mismatch(
            stated, recorded.expected, recorded.model.pending_count
        )
        if mismatch:
            raise CorpusError(
                f"{scenario.name} step {recorded.index} ({stated.op!r}): "
                f"the scenario states otherwise, but the model {mismatch}"
            )
    return trace


def build(directory: Path = CORPUS_DIR) -> dict[Path, str]:
    """Every queue scenario's file path and JSON text."""
    return {
        directory / f"{scenario.name}.json": build_queue_scenario(scenario).dumps()
        for scenario in QUEUE_SCENARIOS
    }
