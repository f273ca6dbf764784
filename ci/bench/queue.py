"""The policy queue's own benchmark rows, and `python -m ci.bench.queue`.

`python -m ci.bench.queue` is `python -m ci.bench queue`: the queue machine
and corpus (see there), plus the queue's entry's rows (`fixed_program`): the
machine's own cost without Hypothesis, one fixed operation program replayed
on model plus crate and on the model alone.
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from ci.bench.command import subject_main
from ci.bench.figures import Figures, timed
from model.queue.api import call as apply_op
from model.queue.api import observe
from model.queue.ops import Enqueue, PopNext, Retain
from model.queue.table import ModelPolicyQueue
from model.queue.types import ClassConfig, Dispatch, Worker
from stateful.queue_subject import profile_yaml

if TYPE_CHECKING:
    from model.queue.api import PolicyQueueApi
    from model.queue.ops import QueueOp

PROGRAM_STEPS = 5_000
WORKERS = (Worker(1, 0), Worker(1, 1), Worker(2, 0))
CLASSES = (
    ClassConfig("c0", "fcfs", 2),
    ClassConfig("c1", "wspt", 5),
    ClassConfig("c2", "fcfs", 1),
    ClassConfig("c3", "fcfs", 13),
)


def _program(seed: int) -> list[QueueOp]:
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, not secrets
    ops: list[QueueOp] = []
    payload = 0
    for _ in range(PROGRAM_STEPS):
        roll = rng.random()
        if roll < 0.45:
            payload += 1
            ops.append(
                Enqueue(
                    class_index=rng.randrange(len(CLASSES)),
                    worker_count=rng.randrange(1, 4),
                    raw_isl_tokens=rng.randrange(60),
                    cached_tokens=rng.randrange(10),
                    arrival_offset_secs=rng.choice((0.0, 1.0, 2.0, math.inf)),
                    priority_jump=rng.choice((0.0, 3.0)),
                    strict_priority=rng.randrange(2),
                    placement=rng.choice((None, None, *WORKERS)),
                    payload=payload,
                )
            )
        elif roll < 0.97:
            saturated = frozenset(w for w in WORKERS if rng.random() < 0.2)
            ops.append(PopNext(Dispatch(saturated=saturated)))
        else:
            ops.append(Retain(frozenset(rng.randrange(payload + 1) for _ in range(3))))
    return ops


def _replay_figures(workload: str, ops: list[QueueOp], *, on_crate: bool) -> Figures:
    model = ModelPolicyQueue(CLASSES)
    crate: PolicyQueueApi | None = None
    if on_crate:
        from impl.adapter import CratePolicyQueue  # noqa: PLC0415 - crate run only

        crate = CratePolicyQueue.from_yaml(profile_yaml(CLASSES, (False,) * 4))

    def run() -> int:
        for op in ops:
            expected = apply_op(model, op)
            if crate is not None:
                actual = apply_op(crate, op)
                if expected != actual:
                    raise AssertionError(f"{op}: model {expected} != crate {actual}")
                if observe(model) != observe(crate):
                    raise AssertionError(f"{op}: states differ")
            else:
                observe(model)
        return len(ops)

    return timed(workload, run)


def fixed_program() -> tuple[Figures, Figures]:
    """The queue's own rows: one fixed program on model plus crate, then alone."""
    ops = _program(seed=0)
    return (
        _replay_figures("fixed program, model vs crate", ops, on_crate=True),
        _replay_figures("fixed program, model only", ops, on_crate=False),
    )


main = subject_main("queue")

if __name__ == "__main__":
    from ci.cli import run_command

    run_command("ci.bench.queue", main)
