"""Shared helpers for the queue unit tests: build a queue on either side.

`make(configs)` builds the model from class configs, or the crate from the
same classes rendered as policy YAML, so each scenario is written once and
runs against both systems.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from model.queue.api import PolicyQueueApi
from model.queue.table import ModelPolicyQueue
from model.queue.types import ClassConfig, Dispatch, QueuedItem
from stateful.queue_subject import profile_yaml, request

QueueMaker = Callable[[tuple[ClassConfig, ...]], PolicyQueueApi]

SIDES = [
    pytest.param("model", id="model"),
    pytest.param("crate", id="crate", marks=pytest.mark.crate),
]


def maker(side: str) -> QueueMaker:
    """A constructor for `side`: the model, or the crate through YAML."""
    if side == "model":
        return ModelPolicyQueue

    from impl.adapter import CratePolicyQueue  # noqa: PLC0415 - crate side only

    def crate(configs: tuple[ClassConfig, ...]) -> PolicyQueueApi:
        return CratePolicyQueue.from_yaml(
            profile_yaml(configs, tuple(False for _ in configs))
        )

    return crate


def cls(name: str, quantum: int, policy: str = "fcfs", **limits: int) -> ClassConfig:
    """A class config with optional per-worker limits."""
    return ClassConfig(
        name=name,
        queue_policy="wspt" if policy == "wspt" else "fcfs",
        quantum=quantum,
        request_queue_limit_per_worker=limits.get("requests"),
        raw_isl_token_queue_limit_per_worker=limits.get("raw"),
        cached_token_queue_limit_per_worker=limits.get("cached"),
    )


def put(
    queue: PolicyQueueApi,
    class_index: int,
    payload: int,
    *,
    worker_count: int = 1,
    **fields: Any,
) -> object:
    """Enqueue with upstream's usual defaults; return the rejection or None."""
    return queue.enqueue(request(payload, class_index, workers=worker_count, **fields))


def pop_payload(queue: PolicyQueueApi, dispatch: Dispatch | None = None) -> int | None:
    """Pop once; the payload, or None."""
    popped: QueuedItem | None = queue.pop_next(dispatch or Dispatch())
    return None if popped is None else popped.payload
