"""Versions across concurrent calls: what the crate guarantees its callers.

A version is (sequence, writer). The table takes a *local* version (its own
writer id) from one counter, under the session's entry, for every commit of an
initialization, every join and every soft commit that moves a binding
(`Inner::next_version`, a `fetch_add`); a replica update first moves the
counter past its own sequence (`observe_replica_sequence`, a `fetch_max`).
Versions reach a caller only through what the table publishes, the outcome of
a replica update and `next_version` (a lease's version is private in 1.6.1).

The linearizability check already compares every publication with the
model's; these properties say the same thing about versions directly, from the
history alone, so that a failure names the broken guarantee:

* `one_binding_per_local_version` -- no two publications of different
  bindings (session, target) carry one local version;
* `takers_follow_real_time` -- of two calls that took a version, the one that
  returned before the other was invoked took the smaller one (unique, too);
* `takers_follow_replica_updates` -- a call that took a version after a
  replica update returned took a sequence above the update's;
* `local_versions_below_the_counter` -- every published local version is
  below the version counter the census read.

What the crate does *not* guarantee: a session's publications in sink order
need not grow in version, not even when their calls are ordered in real time.
A bound hold committed after a replica update replaced its binding republishes
the older version (finding F2, `docs/findings.md`), and a lease's release
republishes the current version, which may be older than another session's.
The sink's order between calls is not the order in which they took effect
either: the crate publishes after it lets go of the entry.

Which calls *took* a version is read from the history alone, erring towards
fewer: a join that returned a lease; a commit of an initialization that no
successful join of its session overlapped (from the acquisition's invocation
to the commit's response: a joined initialization publishes the binding's
current version, the joiner's or a later rebind's); a soft commit of a bound
hold whose publication moved the binding to another target.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from model.affinity.history import Event, History
from model.affinity.ops import Acquire, ApplyReplica, Commit, Join
from model.affinity.types import Bound, Initialize, Published, ReplicaOutcome, Version


@dataclass(frozen=True)
class Violation:
    """A property a history breaks, and the calls that show it."""

    name: str
    detail: str


def _local(history: History) -> list[tuple[int, Event, Published]]:
    """Publications of the table's own writer, in the sink's order."""
    return [
        found
        for found in history.publications()
        if found[2].version.writer == history.writer_id
    ]


def _acquired(history: History) -> dict[int, tuple[Event, Initialize | Bound]]:
    """Handle number -> the acquisition that handed it out, and what it was."""
    handed: dict[int, tuple[Event, Initialize | Bound]] = {}
    for event in history.events:
        value = event.outcome.value
        if isinstance(event.call, Acquire) and isinstance(value, Initialize | Bound):
            handed[value.handle] = (event, value)
    return handed


def _joined(history: History, acquired: Event, commit: Event) -> bool:
    """A successful join of the session overlaps the initialization's life."""
    assert isinstance(acquired.call, Acquire)
    return any(
        isinstance(event.call, Join)
        and event.call.session_id == acquired.call.session_id
        and event.outcome.value is not None
        and event.invoked < commit.returned
        and acquired.invoked < event.returned
        for event in history.events
    )


def takers(history: History) -> list[tuple[Event, Version]]:
    """The calls that took a version, with the version each took."""
    handed = _acquired(history)
    found: list[tuple[Event, Version]] = []
    for event in history.events:
        if event.pending or len(event.published) != 1:
            continue
        (published,) = event.published
        if published.version.writer != history.writer_id:
            continue
        call = event.call
        if isinstance(call, Join):
            found.append((event, published.version))
        elif isinstance(call, Commit) and call.handle in handed:
            acquired, value = handed[call.handle]
            fresh = isinstance(value, Initialize) and not _joined(
                history, acquired, event
            )
            moved = isinstance(value, Bound) and value.target != published.target
            if fresh or moved:
                found.append((event, published.version))
    return found


def one_binding_per_local_version(history: History) -> list[Violation]:
    """No two publications of different bindings carry one local version."""
    named: dict[Version, tuple[str, object]] = {}
    broken = []
    for at, _event, published in _local(history):
        binding = (published.session_id, published.target)
        first = named.setdefault(published.version, binding)
        if first != binding:
            broken.append(
                Violation(
                    "one_binding_per_local_version",
                    f"version {published.version} names {first} and, at {at}, "
                    f"{binding}",
                )
            )
    return broken


def takers_follow_real_time(history: History) -> list[Violation]:
    """A call that took a version before another was invoked took a smaller one."""
    broken = []
    for (first, mine), (second, theirs) in itertools.permutations(takers(history), 2):
        if first.precedes(second) and not mine < theirs:
            broken.append(
                Violation(
                    "takers_follow_real_time",
                    f"call [{first.invoked},{first.returned}] took {mine}, a later "
                    f"call [{second.invoked},{second.returned}] took {theirs}",
                )
            )
    return broken


def takers_follow_replica_updates(history: History) -> list[Violation]:
    """A version taken after a replica update returned is above its sequence."""
    updates = [
        event
        for event in history.events
        if isinstance(event.call, ApplyReplica)
        and not event.pending
        and event.outcome.value != ReplicaOutcome.REJECTED_SESSION_ID
        and event.outcome.error is None
    ]
    broken = []
    for update in updates:
        assert isinstance(update.call, ApplyReplica)
        for taker, version in takers(history):
            if (
                update.precedes(taker)
                and version.sequence <= update.call.version.sequence
            ):
                broken.append(
                    Violation(
                        "takers_follow_replica_updates",
                        f"replica update of sequence {update.call.version.sequence} "
                        f"returned at {update.returned}; a call invoked at "
                        f"{taker.invoked} took {version}",
                    )
                )
    return broken


def local_versions_below_the_counter(history: History) -> list[Violation]:
    """Every published local version is below the counter the census read."""
    census = history.census
    if census is None or census.next_version is None:
        return []
    counter = census.next_version
    return [
        Violation(
            "local_versions_below_the_counter",
            f"published {published.version} at {at}; the census read {counter}",
        )
        for at, _event, published in _local(history)
        if not published.version.sequence < counter.sequence
    ]


PROPERTIES: Final[tuple[Callable[[History], list[Violation]], ...]] = (
    one_binding_per_local_version,
    takers_follow_real_time,
    takers_follow_replica_updates,
    local_versions_below_the_counter,
)
"""Every version property, each a named predicate over one history."""


def violations(history: History) -> list[Violation]:
    """What `history` breaks; nothing for a run without a sink."""
    if history.writer_id is None:
        return []
    return [found for check in PROPERTIES for found in check(history)]
