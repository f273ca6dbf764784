"""The "Production under test" rows (docs/production.md) for the queue still hold.

Fails when the pinned crate's queue departs from what the suite was built
against (see ci/queue_findings.md): dynamo-kv-router 1.6.1 from crates.io,
the PQ-deadline variant, with `recheck_worker`/`recheck_all_workers`
crate-private so that a blocked worker lane stays blocked.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from queue_support import cls, maker, pop_payload, put

from model.errors import UnsupportedError
from model.queue.types import ClassStats, Dispatch, Worker

pytestmark = pytest.mark.crate

REPO = Path(__file__).resolve().parent.parent
W1 = Worker(1, 0)


def _crate_source() -> str:
    """The pinned crate's `policy_queue.rs`, located through cargo metadata."""
    metadata = subprocess.run(  # noqa: S603 - fixed argv, no user input
        [  # noqa: S607 - cargo from PATH, as the build itself uses it
            "cargo",
            "metadata",
            "--offline",
            "--format-version",
            "1",
            "--manifest-path",
            str(REPO / "impl" / "Cargo.toml"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    packages = json.loads(metadata.stdout)["packages"]
    (manifest,) = [
        p["manifest_path"] for p in packages if p["name"] == "dynamo-kv-router"
    ]
    source = Path(manifest).parent / "src" / "scheduling" / "policy_queue.rs"
    return source.read_text()


@pytest.mark.pinned
def test_the_binding_binds_dynamo_kv_router_1_6_1_from_crates_io() -> None:
    """The binding was built against the pinned release, not a source tree."""
    from impl import adapter  # noqa: PLC0415 - crate tests only

    assert ("1.6.1", "registry") == (adapter.CRATE_VERSION, adapter.CRATE_SOURCE)


@pytest.mark.pinned
def test_recheck_is_not_bound_because_the_crate_keeps_it_private() -> None:
    """Without feature `queue-recheck` the adapter refuses recheck calls."""
    from impl.adapter import HAS_QUEUE_RECHECK, CratePolicyQueue  # noqa: PLC0415

    queue = CratePolicyQueue.synthetic(None, "fcfs")

    with pytest.raises(UnsupportedError):
        queue.recheck_worker(W1)

    assert HAS_QUEUE_RECHECK is False


def test_a_lane_blocked_once_stays_blocked_when_its_predicate_passes() -> None:
    """G.5: after one failed test the crate never re-tests the lane publicly."""
    queue = maker("crate")((cls("agents", 10),))
    put(queue, 0, 1, placement=W1)

    first = pop_payload(queue, Dispatch(saturated=frozenset({W1})))
    later = [pop_payload(queue) for _ in range(3)]

    assert [None, None, None, None] == [first, *later]
    assert 1 == queue.pending_count()


def test_retain_subtracts_counters_rather_than_recomputing_them() -> None:
    """PQ-deferred-lazy and later subtract on retain; PQ-intent/PQ-eager recomputed."""
    queue = maker("crate")((cls("big", 1),))
    put(queue, 0, 1, raw=2**64 - 1)
    put(queue, 0, 2, raw=2**64 - 1, arrival=1.0)

    queue.retain(frozenset({2}))

    assert ClassStats(1, 0, 0) == queue.class_stats(0)


def test_the_crate_source_is_the_pq_deadline_variant() -> None:
    """Due-time keys, a lazy recheck flag, no deferred storage, 24 unit tests."""
    source = _crate_source()

    assert "due_entries: BTreeSet<(u64, u64)>" in source
    assert "needs_blocked_worker_recheck: bool" in source
    assert re.search(r"\bdeferred\b", source) is None
    assert 24 == source.count("#[test]")


def test_the_crate_source_keeps_recheck_and_deadlines_crate_private() -> None:
    """`recheck_*`, `enqueue_with_due_at` and `take_expired` are `pub(crate)`."""
    source = _crate_source()

    assert "pub(crate) fn recheck_worker(&mut self, worker: WorkerWithDpRank)" in source
    assert "pub(crate) fn recheck_all_workers(&mut self)" in source
    assert "pub(crate) fn enqueue_with_due_at(" in source
    assert "pub(crate) fn take_expired(" in source
