"""The affinity table's declared exploration bounds, smallest first.

Each `Bound` (`ci/explore/affinity_graph.py`) fixes a configuration, the session ids
and targets, the operation types, the number of live handles, a depth and a
state cap, and names the coverage goals it cannot reach, with a reason.
`python -m ci.explore` enumerates them; their counts are pinned in
`ci/explore/state_counts.json`.
"""

from __future__ import annotations

from typing import Any

from ci.explore.affinity_graph import Bound
from model.affinity.ops import (
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    DropTable,
    EnableReplication,
    Invalidate,
    Join,
    NextVersion,
    ObserveSequence,
    Op,
    PollWaiter,
    Query,
    Release,
)
from model.affinity.types import SECOND_NS, AffinityConfig, Mode, Target

LEASE_OPS: frozenset[type[Op]] = frozenset(
    {Acquire, Join, Commit, Abort, Release, Invalidate, PollWaiter, Query, Advance}
)
"""Acquisition, joining, committing, letting go, waiting, reading and the clock."""

REPLICA_OPS: frozenset[type[Op]] = frozenset(
    {
        Acquire,
        Commit,
        Release,
        Query,
        Advance,
        ApplyReplica,
        ObserveSequence,
        EnableReplication,
        NextVersion,
        DropTable,
    }
)
"""The request path plus replication, sequences and dropping the table."""

PICTURE_OPS: frozenset[type[Op]] = frozenset({Acquire, Commit, Release, Query, Advance})
"""One request's life: acquire, commit, release, read, let time pass."""

_REPLICA_GOALS = (
    "a_replica_update_met_an_initialization",
    "a_replica_update_refreshed_a_binding",
    "a_replica_update_replaced_a_live_binding",
    "a_replica_update_replaced_an_expired_binding",
    "a_replica_update_was_ignored_as_a_conflict",
    "a_replica_update_was_refused_for_capacity",
)
_JOIN_GOALS = (
    "a_join_bound_an_initialization",
    "a_joined_initializer_committed",
    "a_request_had_to_wait",
    "a_waiter_was_woken",
)


def _because(reason: str, *goals: str) -> dict[str, str]:
    return dict.fromkeys(goals, reason)


def _ttl_1s(**fields: Any) -> AffinityConfig:
    """A one-second TTL: the reaper ticks every second, on Tokio's 1 ms grid."""
    return AffinityConfig(ttl_ns=SECOND_NS, **fields)


BOUNDS: tuple[Bound, ...] = (
    Bound(
        name="picture",
        config=_ttl_1s(max_entries=1),
        session_ids=("a",),
        targets=(Target(1),),
        op_types=PICTURE_OPS,
        handles_max=1,
        depth_max=3,
        states_max=1_000,
        goals_out_of_reach={
            **_because("no ApplyReplica in this bound", *_REPLICA_GOALS),
            **_because("no Join or second handle in this bound", *_JOIN_GOALS),
            **_because(
                "one session and one target",
                "the_table_was_full",
                "an_uncollected_expired_binding_blocked_a_new_session",
                "a_hard_commit_elsewhere_was_refused",
                "a_soft_commit_moved_a_binding",
                "a_stale_lease_was_released",
                "an_oversized_id_was_refused",
            ),
            **_because(
                "an unleased binding needs acquire, commit, release: 3 steps",
                "a_lookup_met_an_uncollected_binding_at_its_exact_deadline",
                "an_expired_binding_awaited_collection",
                "the_reaper_collected_a_binding",
                "the_clock_landed_exactly_on_a_deadline",
            ),
        },
    ),
    Bound(
        name="core",
        config=_ttl_1s(max_entries=1, max_session_id_bytes=4),
        session_ids=("a", "ßßß"),  # 1 and 6 UTF-8 bytes: the second is oversized
        targets=(Target(1), Target(2)),
        op_types=LEASE_OPS,
        handles_max=2,
        depth_max=5,
        states_max=10_000,
        goals_out_of_reach={
            **_because("no ApplyReplica in this bound", *_REPLICA_GOALS),
            **_because(
                "one valid session id: a second session can never be refused",
                "the_table_was_full",
                "an_uncollected_expired_binding_blocked_a_new_session",
            ),
            **_because(
                "hard mode: bindings never change version under a lease",
                "a_soft_commit_moved_a_binding",
                "a_stale_lease_was_released",
            ),
            **_because(
                "a deadline off the reaper's grid needs an advance before the "
                "binding: 6 steps",
                "a_lookup_met_an_uncollected_binding_at_its_exact_deadline",
            ),
        },
    ),
    Bound(
        name="replica",
        config=_ttl_1s(max_entries=1),
        session_ids=("a", "b"),
        targets=(Target(1), Target(2)),
        op_types=REPLICA_OPS,
        handles_max=1,
        depth_max=5,
        states_max=50_000,
        goals_out_of_reach={
            **_because("no Join and one handle at a time", *_JOIN_GOALS),
            **_because("hard mode", "a_soft_commit_moved_a_binding"),
            **_because("every id fits", "an_oversized_id_was_refused"),
        },
    ),
    Bound(
        name="soft",
        config=_ttl_1s(max_entries=1, mode=Mode.SOFT),
        session_ids=("a", "b"),
        targets=(Target(1, 0), Target(2, 0)),
        op_types=LEASE_OPS,
        handles_max=2,
        depth_max=6,
        states_max=50_000,
        goals_out_of_reach={
            **_because("no ApplyReplica in this bound", *_REPLICA_GOALS),
            **_because("soft mode", "a_hard_commit_elsewhere_was_refused"),
            **_because("every id fits", "an_oversized_id_was_refused"),
        },
    ),
)
"""The declared bounds, smallest first (the order ties are broken in)."""

CI_BOUNDS = ("picture", "core")
"""Bounds small enough for every push; the others run nightly (`slow`)."""

PICTURE_BOUND = "picture"


def bound_named(name: str) -> Bound:
    """The declared bound called `name`; KeyError if there is none."""
    for bound in BOUNDS:
        if bound.name == name:
            return bound
    raise KeyError(f"no bound named {name!r}; known: {[b.name for b in BOUNDS]}")
