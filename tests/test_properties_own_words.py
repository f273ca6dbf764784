"""Properties state their expectations in their own words, so they fail on a model.

A property that computed its expectation with the model's own function (its
best-entry choice, its limit check, its expiry predicate) could not fail on
the model: a broken model function would break the expectation with it. Here
each of those model functions is broken in place -- its code is swapped, so
every reference to it, a property's import included, runs the broken code --
the model runs a short program through the harness (model against model), and
the property that guards the function must report the break.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pytest
from queue_support import cls

from model.affinity import table as affinity_table
from model.affinity.ops import Acquire, Advance, Commit, Release
from model.affinity.table import Binding
from model.affinity.types import SECOND_NS, AffinityConfig, Target
from model.queue import table as queue_table
from model.queue.ops import PopNext
from model.queue.table import Entry, saturating_mul
from model.queue.types import (
    LIMIT_KINDS,
    ClassConfig,
    ClassStats,
    Dispatch,
    Rejection,
)
from stateful.affinity_subject import AffinityHarness
from stateful.queue_subject import (
    ProfileSpec,
    QueueHarness,
    model_factory,
    profile_yaml,
    request,
)


def _queue(*classes: ClassConfig) -> QueueHarness:
    spec = ProfileSpec(
        classes, profile_yaml(classes, tuple(False for _ in classes)), "m", "fcfs"
    )
    return QueueHarness(spec, model_factory)


def test_a_model_that_serves_the_worst_entry_first_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the model's `best` reversed, the lane-order property fails."""

    def worst(entries: Iterable[Entry]) -> Entry | None:
        return min(entries, key=Entry.order_key, default=None)

    monkeypatch.setattr(queue_table.best, "__code__", worst.__code__)
    harness = _queue(cls("a", 1))
    harness.step(request(1, strict=0))
    harness.step(request(2, strict=1))

    report = harness.step(PopNext(Dispatch()))

    assert 1 == report.expected.value.payload  # the broken model served the worst
    assert "a_pop_takes_the_best_entry_of_its_lane" in report.violations


def test_a_model_whose_limit_is_one_late_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the model's limit check refusing only past the cap, the rule fails."""

    def one_late(
        config: ClassConfig, stats: ClassStats, worker_count: int
    ) -> Rejection | None:
        for kind in LIMIT_KINDS:
            per_worker = config.limit_per_worker(kind)
            if per_worker is None:
                continue
            limit = saturating_mul(per_worker, worker_count)
            current = getattr(stats, kind)
            if current > limit:  # the crate refuses at `>=`
                return Rejection(
                    policy_class=config.name,
                    limit_kind=kind,
                    current=current,
                    limit=limit,
                )
        return None

    monkeypatch.setattr(queue_table.limit_reached, "__code__", one_late.__code__)
    harness = _queue(cls("a", 1, requests=1))
    harness.step(request(1))

    report = harness.step(request(2))

    assert report.expected.value is None  # the broken model accepted a second one
    assert "enqueue_is_rejected_by_the_first_limit_already_reached" in (
        report.violations
    )


def test_a_model_that_reaps_one_nanosecond_late_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the model's expiry predicate 1 ns late, the reap property fails."""

    def late(entry: object, now_ns: int) -> bool:
        return (
            isinstance(entry, Binding)
            and entry.leases == 0
            and entry.deadline_ns < now_ns
        )

    monkeypatch.setattr(affinity_table.is_expired_at, "__code__", late.__code__)
    harness = AffinityHarness(
        AffinityConfig(ttl_ns=SECOND_NS), ("s",), affinity_table.ModelAffinity
    )
    harness.step(Acquire("s"))
    lease = harness.step(Commit(1, Target(1))).expected.value
    harness.step(Release(lease))

    report = harness.step(Advance(SECOND_NS))

    assert "a_reap_collects_every_expired_binding" in report.violations


def test_the_own_words_order_ranks_nan_above_every_score() -> None:
    """`first_served` puts a NaN score first, then the higher score, then seq."""
    from properties.queue._terms import first_served  # noqa: PLC0415 - under test

    def entry(seq: int, score: float) -> queue_table.Entry:
        return queue_table.Entry(seq, seq, None, 1, 0, 0, score)

    chosen = first_served([entry(1, 5.0), entry(2, math.nan), entry(3, math.inf)])
    tied = first_served([entry(4, 1.0), entry(3, 1.0)])

    assert chosen is not None
    assert 2 == chosen.seq
    assert tied is not None
    assert 3 == tied.seq
