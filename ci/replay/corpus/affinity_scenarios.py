"""Builders for the hand-written corpus traces (`python -m ci.replay.corpus build`).

Each scenario restates an upstream test or a past bug (SPEC E.1, E.2, B.14,
B.16, F.1-F.4) as a program of `model.affinity.ops` operations on the crate's runtime
clock table. Beside an operation stands what the upstream test asserts at that
point: the return value or error kind, lease and entry counts, publications.
`build` runs each program on the reference model and refuses to write a file
if the model disagrees with any stated expectation; the JSON it writes then
records the model's answer at every step. The files in `ci/replay/corpus/` are what
the tests replay; these builders are how the hand-written ones were made, and
`python -m ci.replay.corpus build --check` keeps the two in step.

Handles are numbered from 1 in creation order (initializations, holds, leases
and waiters alike), so `Commit(1, ...)` commits the first initialization.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ci.replay.affinity import record
from ci.replay.corpus import CORPUS_DIR, UNCHECKED, CorpusError, Unchecked
from ci.replay.trace import Trace
from model.affinity.ops import (
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    EnableReplication,
    Invalidate,
    Join,
    NextVersion,
    Op,
    Outcome,
    PollWaiter,
    Query,
    Release,
    Value,
    outcome_of,
)
from model.affinity.table import CLOCK_NS_MAX, ModelAffinity
from model.affinity.types import (
    SECOND_NS,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Published,
    ReplicaOutcome,
    Target,
    Version,
    Wait,
)

S: Final[int] = SECOND_NS
TTL_10_S: Final[AffinityConfig] = AffinityConfig(ttl_ns=10 * S)


@dataclass(frozen=True)
class Do:
    """One operation and what the scenario states about its result."""

    op: Op
    returns: Value | Unchecked = UNCHECKED
    raises: str | None = None
    leases: Mapping[str, int | None] = field(default_factory=dict)
    entries: int | None = None
    published: tuple[Published, ...] | None = None
    comment: str = ""


@dataclass(frozen=True)
class Scenario:
    """A corpus trace: where it comes from, its steps, its table and its ids."""

    name: str
    description: str
    steps: tuple[Do, ...]
    config: AffinityConfig = TTL_10_S
    session_pool: tuple[str, ...] = ("s",)


def _t(worker: int, rank: int | None = None) -> Target:
    return Target(worker, rank)


def _pub(worker: int, version: Version) -> tuple[Published]:
    """What the replica sink receives: session "s" bound to `worker` at `version`."""
    return (Published("s", _t(worker), version),)


def _expires_at(
    deadline_ns: int, session_id: str, target: Target, gone: str = ""
) -> tuple[Do, Do, Do, Do]:
    """The binding is served 1 ns before its idle deadline and gone at it."""
    return (
        Do(Advance(deadline_ns - 1), returns=None),
        Do(Query(session_id), returns=target),
        Do(Advance(deadline_ns), returns=None),
        Do(Query(session_id), returns=None, comment=gone),
    )


SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        name="e1_1_joined_lease_released_before_the_commit_is_not_counted",
        description=(
            "SPEC E.1 test 1 (ttl 10 s): a joiner's lease released before the "
            "initializer commits is uncounted at once; the initializer's reserved "
            "use keeps the binding past TTL + 1 s; the commit keeps the count at "
            "1; after the last release the binding is gone TTL + 1 s later."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1), entries=1),
            Do(
                Join("s", _t(1)),
                returns=2,
                leases={"s": 2},
                comment="the joiner's lease plus the initializer's reserved use",
            ),
            Do(Release(2), returns=None, leases={"s": 1}),
            Do(Advance(11 * S), returns=None, comment="TTL + 1 s"),
            Do(Query("s"), returns=_t(1), comment="the reserved use keeps it"),
            Do(
                Commit(1, _t(1)),
                returns=3,
                leases={"s": 1},
                comment="the reserved use becomes the commit's lease",
            ),
            Do(Release(3), returns=None, leases={"s": 0}),
            Do(Advance(22 * S), returns=None, comment="TTL + 1 s after the release"),
            Do(Query("s"), returns=None),
        ),
    ),
    Scenario(
        name="e1_2_joined_lease_counts_once_the_competing_initialization_commits",
        description=(
            "SPEC E.1 test 2 (ttl 10 s): a waiter registered before the join is "
            "woken by it; joining a missing id gives nothing; the commit keeps "
            "the count at 2; the joiner's release at TTL - 1 s restarts the TTL; "
            "the binding is alive 2 s later, gone after another TTL, and the next "
            "acquisition initializes again."
        ),
        session_pool=("missing", "s"),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Acquire("s"), returns=Wait(2), comment="a second request waits"),
            Do(PollWaiter(2), returns=False),
            Do(Join("s", _t(1)), returns=3, leases={"s": 2}),
            Do(PollWaiter(2), returns=True, comment="the join woke the waiter"),
            Do(Join("missing", _t(1)), returns=None, entries=1),
            Do(Commit(1, _t(1)), returns=4, leases={"s": 2}),
            Do(Query("s"), returns=_t(1)),
            Do(Release(4), returns=None, leases={"s": 1}),
            Do(Advance(9 * S), returns=None, comment="TTL - 1 s"),
            Do(
                Release(3),
                returns=None,
                leases={"s": 0},
                comment="the joiner's release restarts the TTL: deadline 19 s",
            ),
            Do(Advance(11 * S), returns=None),
            Do(Query("s"), returns=_t(1), comment="alive 2 s after the release"),
            Do(Advance(21 * S), returns=None),
            Do(Query("s"), returns=None, comment="gone after another TTL"),
            Do(Acquire("s"), returns=Initialize(5)),
        ),
    ),
    Scenario(
        name="e1_3_joined_binding_survives_the_initializer_dropping",
        description=(
            "SPEC E.1 test 3 (ttl 10 s): dropping the initializer of a joined "
            "session releases only its reserved use; the joiner's binding stays "
            "until its release plus TTL; a new initialization can then bind "
            "another worker."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Join("s", _t(1)), returns=2, leases={"s": 2}),
            Do(Abort(1), returns=None, entries=1, leases={"s": 1}),
            Do(Query("s"), returns=_t(1)),
            Do(Release(2), returns=None, leases={"s": 0}),
            Do(Advance(11 * S), returns=None),
            Do(Query("s"), returns=None),
            Do(Acquire("s"), returns=Initialize(3)),
            Do(Commit(3, _t(2)), returns=4),
            Do(Query("s"), returns=_t(2), comment="bound to another worker"),
        ),
    ),
    Scenario(
        name="e1_4_initializer_cannot_change_the_joined_rank_in_hard_mode",
        description=(
            "SPEC E.1 test 4 (hard mode): after a join to (2, rank 0) the "
            "initializer's commit to (2, rank 1) fails; the binding is unchanged "
            "and the reserved use is released."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Join("s", _t(2, 0)), returns=2),
            Do(Commit(1, _t(2, 1)), raises="InvalidArgument", leases={"s": 1}),
            Do(Query("s"), returns=_t(2, 0)),
        ),
    ),
    Scenario(
        name="e1_5_soft_initializer_follows_dispatch_and_keeps_worker_only_affinity",
        description=(
            "SPEC E.1 test 5 (soft mode): a join to worker 2 (worker-only), then "
            "the initializer commits to (3, rank 0): the binding moves to worker "
            "3 and stays worker-only; the count is 2, then 0."
        ),
        config=AffinityConfig(ttl_ns=10 * S, mode=Mode.SOFT),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Join("s", _t(2)), returns=2),
            Do(Commit(1, _t(3, 0)), returns=3, leases={"s": 2}),
            Do(Query("s"), returns=_t(3), comment="worker 3, still worker-only"),
            Do(Release(2), returns=None, leases={"s": 1}),
            Do(Release(3), returns=None, leases={"s": 0}),
        ),
    ),
    Scenario(
        name="e1_6_active_lease_survives_and_expiry_counts_from_virtual_release",
        description=(
            "SPEC E.1, AFF-manual's extra test, on the paused runtime clock (ttl "
            "10 s): a second acquisition while initializing waits; an active "
            "lease survives 2 x TTL; released at 2 x TTL the binding is present "
            "at 3 x TTL - 1 ns and gone at 3 x TTL; moving the clock back fails."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Acquire("s"), returns=Wait(2)),
            Do(Commit(1, _t(1)), returns=3),
            Do(Advance(20 * S), returns=None, comment="2 x TTL with a lease"),
            Do(Query("s"), returns=_t(1)),
            Do(Release(3), returns=None, comment="deadline 30 s"),
            *_expires_at(30 * S, "s", _t(1)),
            Do(Advance(29 * S), raises="InvalidArgument", comment="backwards"),
        ),
    ),
    Scenario(
        name="e2_07_abort_and_commit_wake_waiters_and_release_starts_idle_ttl",
        description=(
            "SPEC E.2 test 7 (ttl 10 s): aborting an initialization wakes its "
            "waiter and frees the slot; committing one wakes its waiter; the "
            "lease's release at 5 s starts the idle TTL in virtual time: present "
            "at 15 s - 1 ns, gone at 15 s."
        ),
        session_pool=("a", "b"),
        steps=(
            Do(Acquire("a"), returns=Initialize(1)),
            Do(Acquire("a"), returns=Wait(2)),
            Do(Abort(1), returns=None, entries=0),
            Do(PollWaiter(2), returns=True, comment="the abort woke the waiter"),
            Do(Query("a"), returns=None),
            Do(Acquire("b"), returns=Initialize(3)),
            Do(Acquire("b"), returns=Wait(4)),
            Do(Commit(3, _t(1)), returns=5),
            Do(PollWaiter(4), returns=True, comment="the commit woke the waiter"),
            Do(Query("b"), returns=_t(1)),
            Do(Advance(5 * S), returns=None),
            Do(Release(5), returns=None, comment="deadline 15 s"),
            *_expires_at(15 * S, "b", _t(1)),
        ),
    ),
    Scenario(
        name="e2_08_removed_worker_invalidation_allows_reselection_fences_old_leases",
        description=(
            "SPEC E.2 test 8 (ttl 10 s): invalidating a hold removes the binding "
            "although two leases are active; the session is selected afresh; "
            "releasing or invalidating the old leases leaves the new binding "
            "alone."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2),
            Do(Acquire("s"), returns=Bound(3, _t(1))),
            Do(Commit(3, _t(1)), returns=4, leases={"s": 2}),
            Do(Acquire("s"), returns=Bound(5, _t(1)), leases={"s": 3}),
            Do(Invalidate(5), returns=None, entries=0, comment="the worker is gone"),
            Do(Query("s"), returns=None),
            Do(Acquire("s"), returns=Initialize(6), comment="reselection"),
            Do(Commit(6, _t(2)), returns=7),
            Do(Release(2), returns=None, leases={"s": 1}, comment="fenced"),
            Do(Invalidate(4), returns=None, leases={"s": 1}, comment="fenced"),
            Do(Query("s"), returns=_t(2)),
        ),
    ),
    Scenario(
        name="e2_11_soft_affinity_rebinds_worker_only_7_to_8",
        description=(
            "SPEC E.2 test 11 (soft mode): a worker-only binding to 7 whose "
            "request was dispatched to (8, rank 0) moves to worker 8 and stays "
            "worker-only; pinning it to a rank is refused."
        ),
        config=AffinityConfig(ttl_ns=10 * S, mode=Mode.SOFT),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(7)), returns=2),
            Do(Release(2), returns=None),
            Do(Acquire("s"), returns=Bound(3, _t(7))),
            Do(Commit(3, _t(8, 0)), returns=4),
            Do(Query("s"), returns=_t(8), comment="worker 8, still worker-only"),
            Do(Query("s", _t(8, 0)), raises="InvalidArgument"),
            Do(Release(4), returns=None, leases={"s": 0}),
        ),
    ),
    Scenario(
        name="b16_abort_wakes_waiters",
        description=(
            "SPEC B.16 walkthrough: A initializes, B waits; dropping A's hold "
            "wakes B, the session is unbound and the entry count is back to 0."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1), entries=1),
            Do(Acquire("s"), returns=Wait(2)),
            Do(Abort(1), returns=None, entries=0),
            Do(PollWaiter(2), returns=True),
            Do(Query("s"), returns=None),
        ),
    ),
    Scenario(
        name="b16_virtual_ttl",
        description=(
            "SPEC B.16 walkthrough (ttl 10 s): commit at t0 and take a second "
            "lease; drop the first at t0 + 20 s; still present at t0 + 40 s; "
            "drop the second at t0 + 40 s: present at t0 + 50 s - 1 ns, gone at "
            "t0 + 50 s; moving back to t0 fails; the next acquisition "
            "initializes again."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2),
            Do(Acquire("s"), returns=Bound(3, _t(1))),
            Do(Commit(3, _t(1)), returns=4, leases={"s": 2}),
            Do(Advance(20 * S), returns=None),
            Do(Release(2), returns=None, leases={"s": 1}),
            Do(Advance(40 * S), returns=None),
            Do(Query("s"), returns=_t(1), comment="the second lease holds it"),
            Do(Release(4), returns=None, leases={"s": 0}),
            *_expires_at(50 * S, "s", _t(1)),
            Do(Advance(0), raises="InvalidArgument", comment="back to t0"),
            Do(Acquire("s"), returns=Initialize(5)),
        ),
    ),
    Scenario(
        name="b16_removed_worker",
        description=(
            "SPEC B.16 walkthrough: invalidating a hold removes the binding; a "
            "later release of an older lease does not disturb the binding made "
            "afterwards."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2, comment="the older lease"),
            Do(Acquire("s"), returns=Bound(3, _t(1))),
            Do(Invalidate(3), returns=None, entries=0),
            Do(Query("s"), returns=None),
            Do(Acquire("s"), returns=Initialize(4)),
            Do(Commit(4, _t(2)), returns=5),
            Do(Release(2), returns=None, leases={"s": 1}),
            Do(Query("s"), returns=_t(2)),
        ),
    ),
    Scenario(
        name="b14_runtime_reaper_probe",
        description=(
            "SPEC B.14 probe on the runtime reaper (ttl 60 s, reaper every 30 s, "
            "one entry): 'a' is released at t0 + 29 s, so its deadline is "
            "t0 + 89 s; at t0 + 89 s it is expired but still counted, so a new id "
            "is refused; the t0 + 90 s tick collects it and the new id is "
            "accepted."
        ),
        config=AffinityConfig(ttl_ns=60 * S, max_entries=1),
        session_pool=("a", "b"),
        steps=(
            Do(Advance(29 * S), returns=None),
            Do(Acquire("a"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2),
            Do(Release(2), returns=None, comment="deadline t0 + 89 s"),
            Do(Advance(60 * S), returns=None, entries=1, comment="a reaper tick"),
            Do(Advance(89 * S), returns=None, entries=1, comment="expired, counted"),
            Do(Query("a"), returns=None, comment="lookups use the exact deadline"),
            Do(Acquire("b"), raises="ResourceExhausted"),
            Do(Advance(90 * S - 1), returns=None, entries=1),
            Do(Acquire("b"), raises="ResourceExhausted"),
            Do(Advance(90 * S), returns=None, entries=0, comment="the 90 s tick"),
            Do(Acquire("b"), returns=Initialize(3)),
        ),
    ),
    Scenario(
        name="f1_joiner_leaves_before_the_initializer_commits",
        description=(
            "SPEC F.1 regression, in our words: a joiner leaves before the "
            "initializer commits. Its release must count at once (AFF-pending-"
            "join decremented nothing here, so the binding never expired): after "
            "the commit's lease is released at 3 s the binding is present until "
            "13 s - 1 ns, gone at 13 s, collected by the 20 s reaper tick, and "
            "the session initializes afresh."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Join("s", _t(1, 0)), returns=2, leases={"s": 2}),
            Do(Release(2), returns=None, leases={"s": 1}, comment="the joiner left"),
            Do(Advance(3 * S), returns=None),
            Do(Commit(1, _t(1, 0)), returns=3, leases={"s": 1}),
            Do(Release(3), returns=None, leases={"s": 0}, comment="deadline 13 s"),
            *_expires_at(13 * S, "s", _t(1, 0), "nothing leaked"),
            Do(Advance(20 * S), returns=None, entries=0),
            Do(Acquire("s"), returns=Initialize(4)),
        ),
    ),
    Scenario(
        name="f2_stale_release_after_a_replica_refresh",
        description=(
            "SPEC F.2 regression, in our words: a lease is taken at version "
            "(1, 1); at 5 s a replica refreshes the binding to version (10, 2), "
            "deadline 15 s; releasing the old lease at 8 s drops the count but "
            "neither refreshes the deadline (it stays 15 s, not 18 s) nor "
            "publishes."
        ),
        steps=(
            Do(EnableReplication(1), returns=True),
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2, published=_pub(1, Version(1, 1))),
            Do(Advance(5 * S), returns=None),
            Do(
                ApplyReplica("s", _t(1), Version(10, 2)),
                returns=ReplicaOutcome.REFRESHED,
                leases={"s": 1},
            ),
            Do(Advance(8 * S), returns=None),
            Do(
                Release(2),
                returns=None,
                leases={"s": 0},
                published=(),
                comment="an older version's lease: count only",
            ),
            *_expires_at(15 * S, "s", _t(1), "not refreshed to 18 s"),
        ),
    ),
    Scenario(
        name="f2_stale_release_after_a_newer_replica_moves_the_binding",
        description=(
            "SPEC F.2 regression, in our words: a lease is taken on worker 1 at "
            "version (1, 1); at 5 s a newer replica version (10, 2) moves the "
            "binding to worker 2, deadline 15 s; releasing the old lease at 8 s "
            "drops the count, keeps worker 2 and the 15 s deadline, and "
            "publishes nothing."
        ),
        steps=(
            Do(EnableReplication(1), returns=True),
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2),
            Do(Advance(5 * S), returns=None),
            Do(
                ApplyReplica("s", _t(2), Version(10, 2)),
                returns=ReplicaOutcome.REPLACED_NEWER,
                leases={"s": 1},
            ),
            Do(Advance(8 * S), returns=None),
            Do(Release(2), returns=None, leases={"s": 0}, published=()),
            Do(Query("s"), returns=_t(2)),
            *_expires_at(15 * S, "s", _t(2)),
        ),
    ),
    Scenario(
        name="f3_soft_commit_keeps_worker_only_scope_and_stored_version",
        description=(
            "SPEC F.3 regression, in our words (soft mode): a worker-only binding "
            "to 7 whose request runs on (7, rank 0) is not narrowed to the rank: "
            "no rebind, no new version, the same version republished. After a "
            "replica refresh to version (20, 2) a commit republishes (20, 2), "
            "not a version of the local writer."
        ),
        config=AffinityConfig(ttl_ns=10 * S, mode=Mode.SOFT),
        steps=(
            Do(EnableReplication(1), returns=True),
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(7)), returns=2, published=_pub(7, Version(1, 1))),
            Do(Acquire("s"), returns=Bound(3, _t(7))),
            Do(
                Commit(3, _t(7, 0)),
                returns=4,
                published=_pub(7, Version(1, 1)),
                comment="same worker with a rank: scope and version kept",
            ),
            Do(Query("s"), returns=_t(7)),
            Do(
                ApplyReplica("s", _t(7), Version(20, 2)),
                returns=ReplicaOutcome.REFRESHED,
            ),
            Do(Acquire("s"), returns=Bound(5, _t(7))),
            Do(
                Commit(5, _t(7, 0)),
                returns=6,
                published=_pub(7, Version(20, 2)),
                comment="the stored replica version is republished",
            ),
            Do(Release(2), returns=None, leases={"s": 2}, published=()),
            Do(Release(4), returns=None, leases={"s": 1}, published=()),
            Do(
                Release(6),
                returns=None,
                leases={"s": 0},
                published=_pub(7, Version(20, 2)),
            ),
        ),
    ),
    Scenario(
        name="f4_clock_moves_beyond_the_supported_range_change_nothing",
        description=(
            "SPEC F.4 regression, in our words, for the runtime clock (ttl "
            "10 s): clock moves beyond the binding's range (two maximal TTLs) or "
            "beyond u64 are refused before anything changes; the binding released "
            "at t0 then expires exactly at t0 + TTL."
        ),
        steps=(
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2),
            Do(Release(2), returns=None, comment="deadline 10 s"),
            Do(Advance(CLOCK_NS_MAX + 1), raises="InvalidArgument"),
            Do(Query("s"), returns=_t(1), comment="the clock did not move"),
            Do(Advance(2**64), raises="InvalidArgument"),
            *_expires_at(10 * S, "s", _t(1)),
        ),
    ),
    Scenario(
        name="finding_a_bound_hold_publishes_a_version_its_table_no_longer_holds",
        description=(
            "A finding (docs/findings.md, F2), on one table: a second request "
            "holds the binding s -> worker 1 at version (1, 1); a replica "
            "update at the newer version (1, 2) moves the binding to worker 2 "
            "while the hold is out; committing the hold then publishes "
            "(worker 1, (1, 1)), a version the table no longer holds "
            "(affinity.rs:477-493 via AffinityLease::publish, 842-846), where "
            "a release of such a lease publishes nothing (914-916). A replica "
            "that missed the newer update installs the superseded binding."
        ),
        steps=(
            Do(EnableReplication(1), returns=True),
            Do(Acquire("s"), returns=Initialize(1)),
            Do(Commit(1, _t(1)), returns=2, published=_pub(1, Version(1, 1))),
            Do(Acquire("s"), returns=Bound(3, _t(1)), leases={"s": 2}),
            Do(
                ApplyReplica("s", _t(2), Version(1, 2)),
                returns=ReplicaOutcome.REPLACED_NEWER,
                leases={"s": 2},
                comment="the binding moves to worker 2 while the hold is out",
            ),
            Do(
                Commit(3, _t(1)),
                published=_pub(1, Version(1, 1)),
                comment="publishes the superseded binding",
            ),
            Do(Query("s"), returns=_t(2), comment="the table itself routes to 2"),
        ),
    ),
    Scenario(
        name="replica_updates_meet_an_initialization_and_a_repeated_binding",
        description=(
            "A replica update for a session that is still initializing is "
            "ignored (its sequence is observed all the same); the binding's own "
            "target and version sent back refresh it; the next local version "
            "carries the writer id; an id over the byte limit is refused by "
            "acquisition and query alike, and rejected as a replica update."
        ),
        config=AffinityConfig(ttl_ns=10 * S, max_session_id_bytes=4),
        session_pool=("s", "sssss"),
        steps=(
            Do(EnableReplication(2), returns=True),
            Do(Acquire("s"), returns=Initialize(1)),
            Do(
                ApplyReplica("s", _t(2), Version(5, 1)),
                returns=ReplicaOutcome.IGNORED_INITIALIZING,
                entries=1,
                comment="the initialization is left alone",
            ),
            Do(
                Commit(1, _t(1)),
                returns=2,
                published=_pub(1, Version(6, 2)),
                comment="local versions moved past the observed sequence 5",
            ),
            Do(Release(2), returns=None, leases={"s": 0}),
            Do(
                ApplyReplica("s", _t(1), Version(6, 2)),
                returns=ReplicaOutcome.REFRESHED,
                comment="the binding's own target and version",
            ),
            Do(NextVersion(), returns=Version(7, 2)),
            Do(Acquire("sssss"), raises="InvalidArgument", entries=1),
            Do(Query("sssss"), raises="InvalidArgument"),
            Do(
                ApplyReplica("sssss", _t(1), Version(1, 1)),
                returns=ReplicaOutcome.REJECTED_SESSION_ID,
                entries=1,
            ),
        ),
    ),
)
"""Every hand-written corpus scenario, by file name."""


def _check_step(scenario: Scenario, index: int, step: Do, model: ModelAffinity) -> None:
    """Raise unless the model's state after `step` matches what it states."""
    where = f"{scenario.name} step {index} ({step.op!r})"
    outcome = outcome_of(model, step.op)
    published = tuple(model.drain_published())
    if step.raises is not None and outcome.error != step.raises:
        raise CorpusError(f"{where}: expected {step.raises}, model gave {outcome}")
    if step.raises is None and not outcome.ok:
        raise CorpusError(f"{where}: model raised {outcome.error}: {outcome.message}")
    returns = step.returns
    if not isinstance(returns, Unchecked) and outcome != Outcome(value=returns):
        raise CorpusError(f"{where}: expected {returns!r}, model gave {outcome}")
    for session_id, leases in sorted(step.leases.items()):
        if model.lease_count(session_id) != leases:
            raise CorpusError(
                f"{where}: expected {leases} leases on {session_id!r}, "
                f"model has {model.lease_count(session_id)}"
            )
    if step.entries is not None and model.entry_count() != step.entries:
        raise CorpusError(
            f"{where}: expected {step.entries} entries, model has {model.entry_count()}"
        )
    if step.published is not None and published != step.published:
        raise CorpusError(f"{where}: expected {step.published}, published {published}")


def build_scenario(scenario: Scenario) -> Trace:
    """Check a scenario against the model and record it as a trace."""
    model = ModelAffinity(scenario.config)
    for index, step in enumerate(scenario.steps, start=1):
        _check_step(scenario, index, step, model)
    return record(
        scenario.config,
        scenario.session_pool,
        [step.op for step in scenario.steps],
        scenario.description,
        [step.comment for step in scenario.steps],
    )


def build(directory: Path = CORPUS_DIR) -> dict[Path, str]:
    """Every affinity scenario's file path and JSON text."""
    return {
        directory / f"{scenario.name}.json": build_scenario(scenario).dumps()
        for scenario in SCENARIOS
    }
