"""Policy-queue invariants and coverage goals, one module per concern.

State properties take a `QueueView` (`properties/queue/_terms.py`): the
model's state together with what a system under test showed at the same
point (for a model-only check, the model's own observation). Properties about
counters and listings are checked on both; properties about credit, carry and
blocked lanes speak about the model, whose outside behaviour the machine
compares with the crate's.

Step properties take a `Step` whose `before`/`after` are model `QueueState`s,
whose `op` is a `model.queue.ops` operation and whose `outcome` is the
model's return value; refusal properties take the `Step` of a refused call,
whose `outcome` is the error kind.

Bounds: the class counters are stated without saturation (the machine keeps
token sums far below `usize::MAX`); the DRR share is checked as its one-pop
core here, and as a whole-cycle ratio in `tests/test_queue_upstream.py`.

Modules: `counters` (counts and class counters), `limits` (per-worker
limits), `order` (serving order, work conservation), `credit` (DRR credit,
deficit bounds, the one-pop share), `blocking` (blocked lanes), `listing`
(backlog, snapshots, refused calls), `coverage` (goals).
"""

from properties.queue import (
    blocking,
    counters,
    coverage,
    credit,
    limits,
    listing,
    order,
)
from properties.queue._terms import QueueView

__all__ = [
    "QueueView",
    "blocking",
    "counters",
    "coverage",
    "credit",
    "limits",
    "listing",
    "order",
]
