"""The invariant catalogue: named predicates over model states and steps.

Importing this package registers every property. `python -m properties`
prints the catalogue; `--markdown` prints the auditors' Markdown.
"""

from properties import queue
from properties.affinity import conservation, coverage, lease, network, replica, ttl
from properties.registry import Property, Step, get, properties, reached, violated
from properties.scheduler import invariants as scheduler

__all__ = [
    "Property",
    "Step",
    "conservation",
    "coverage",
    "get",
    "lease",
    "network",
    "properties",
    "queue",
    "reached",
    "replica",
    "scheduler",
    "ttl",
    "violated",
]
