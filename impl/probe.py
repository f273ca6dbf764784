"""What the built table really does: a behavioural capability probe.

The suite may run against the pinned crates.io crate or against any local
`dynamo-kv-router` tree. Version strings and feature flags say little about
behaviour, so before a run the probe drives small, fixed scenarios through the
adapter and records what it saw (`ProbeAnswers`, plain data that can be stored
and replayed). `decide` turns answers into `Capabilities`: the facts the
machines are configured from and the gate prints.

The cleanup probe (SPEC B.14, extended to tell three schedules apart): a manual
table with `ttl = 60 s` (period 30 s) and room for one entry; at 29 s a session
is bound and released, so its idle deadline is 89 s; the clock then moves to
each of `CLEANUP_PROBE_NS` and `entry_count()` is read after each move.

* every advance: collected at 89 s exactly -> 1, 0, 0, 0, 0, 0;
* cadence from the last cleanup (first at 30 s after construction, then one
  period after the advance that collected): the advance to 89 s - 1 ns
  collects (nothing expired), the next is due at 119 s - 1 ns -> 1, 1, 1, 1, 0, 0;
* cadence on a fixed grid (30 s, 60 s, 90 s, ...) -> 1, 1, 1, 0, 0, 0;
* anything else is reported as it is (`other`).
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass
from typing import Final, Literal

from impl import adapter
from model.affinity.table import ModelAffinity
from model.affinity.types import SECOND_NS, AffinityConfig, Initialize, Reaping, Target
from model.errors import (
    AffinityError,
    HandleError,
    RustPanicError,
    UnsupportedError,
    clock_refusal,
)

CLEANUP_TTL_NS: Final[int] = 60 * SECOND_NS
CLEANUP_BIND_AT_NS: Final[int] = 29 * SECOND_NS
CLEANUP_PROBE_NS: Final[tuple[int, ...]] = (
    89 * SECOND_NS - 1,
    89 * SECOND_NS,
    90 * SECOND_NS - 1,
    90 * SECOND_NS,
    119 * SECOND_NS - 1,
    119 * SECOND_NS,
)
CLEANUP_SCHEDULES: Final[dict[tuple[int, ...], str]] = {
    (1, 0, 0, 0, 0, 0): "every_advance",
    (1, 1, 1, 1, 0, 0): "cadence",
    (1, 1, 1, 0, 0, 0): "cadence_grid",
}
"""Entry counts after each probe move, per schedule (see the module docstring)."""
GROUP_PARENTS: Final[tuple[str, ...]] = ("", "parent", "ß-parent-Ω", "p" * 300)
PROBE_TTL_NS: Final[int] = 10 * SECOND_NS
TARGET: Final[Target] = Target(1, None)
SEQUENCE_WALL_CLOCK_MIN: Final[int] = 10**18
"""A first sequence at least this large was seeded from the wall clock (2001+)."""

Verdict = Literal["yes", "no", "n/a"]


@dataclass(frozen=True)
class ProbeAnswers:
    """What the probe saw, as plain data (JSON-serialisable, replayable)."""

    crate_version: str
    crate_source: str
    manual_clock: bool
    cleanup_counts: tuple[int, ...] | None
    backwards: str | None  # the refusal class, or "accepted"
    overflow: str | None  # the refusal class, "accepted", or a later failure
    runtime_advance: str | None  # the crate's advance_clock on a runtime table
    join_lease_count: int | None
    first_sequence_manual: str | None  # "wall_clock" or the number
    first_sequence_runtime: str
    group_ids_match: bool | None  # None: the function is absent
    queue_recheck: bool
    testing_hooks: bool

    def to_json(self) -> str:
        """The answers as one JSON document (sorted keys)."""
        return json.dumps(asdict(self), sort_keys=True, indent=2) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ProbeAnswers:
        """Answers recorded by `to_json`."""
        raw = json.loads(text)
        counts = raw.get("cleanup_counts")
        raw["cleanup_counts"] = None if counts is None else tuple(counts)
        return cls(**raw)


@dataclass(frozen=True)
class Capabilities:
    """What the build can do, decided from `ProbeAnswers`."""

    clocks: tuple[str, ...]
    reaping: str  # manual cleanup schedule: every_advance, cadence, cadence_grid, ...
    overflow_guard: Verdict
    backwards_check: Verdict
    runtime_refusal: Verdict
    join: str
    sequence_seed: str
    group_key: str
    queue_recheck: Verdict
    testing_hooks: Verdict

    @property
    def has_manual_clock(self) -> bool:
        """The build can make `with_manual_clock` tables."""
        return "manual" in self.clocks

    @property
    def model_reaping(self) -> Reaping:
        """The model variant to check manual tables against.

        An unrecognised schedule is checked against `cadence`, the behaviour
        the change describes, so that its departures show as divergences.
        """
        return "every_advance" if self.reaping == "every_advance" else "cadence"

    def rows(self) -> list[tuple[str, str]]:
        """(fact, value) pairs in the order the gate prints them."""
        return [
            ("clock kinds", ", ".join(self.clocks)),
            ("cleanup on a manual advance", self.reaping),
            ("overflow guard (now + ttl)", self.overflow_guard),
            ("backwards check", self.backwards_check),
            ("advance_clock refused on a runtime table", self.runtime_refusal),
            ("join variant", self.join),
            ("next_sequence seed", self.sequence_seed),
            ("group key subagent_group_affinity_id", self.group_key),
            ("queue recheck public", self.queue_recheck),
            ("testing hooks", self.testing_hooks),
        ]


def _refusal_or_accepted(table: adapter.CrateAffinity, now_ns: int) -> str:
    try:
        table.advance_clock(now_ns)
    except AffinityError as error:
        return clock_refusal(str(error)) or f"refused: {error}"
    return "accepted"


def _bind_and_release(table: adapter.CrateAffinity, session_id: str) -> None:
    step = table.try_acquire(session_id, None)
    assert isinstance(step, Initialize)
    table.release(table.commit(step.handle, TARGET))


def _manual(
    ttl_ns: int, max_entries: int = 8, instant_range_ns: int | None = None
) -> adapter.CrateAffinity:
    return adapter.CrateAffinity(
        AffinityConfig(
            ttl_ns=ttl_ns,
            max_entries=max_entries,
            reaping="every_advance",
            instant_range_ns=instant_range_ns,
        )
    )


def _cleanup_counts() -> tuple[int, ...]:
    table = _manual(CLEANUP_TTL_NS, max_entries=1)
    table.advance_clock(CLEANUP_BIND_AT_NS)
    _bind_and_release(table, "a")
    counts = []
    for now_ns in CLEANUP_PROBE_NS:
        table.advance_clock(now_ns)
        counts.append(table.entry_count())
    return tuple(counts)


def _overflow() -> str:
    """Move to 1 ns past the last time whose deadline fits; then bind."""
    table = _manual(PROBE_TTL_NS, instant_range_ns=3 * PROBE_TTL_NS)
    answer = _refusal_or_accepted(table, 2 * PROBE_TTL_NS + 1)
    if answer != "accepted":
        return answer
    try:
        _bind_and_release(table, "a")
    except (AffinityError, HandleError, RustPanicError) as error:
        return f"accepted; a later commit failed: {type(error).__name__}"
    return "accepted"


def _backwards() -> str:
    table = _manual(PROBE_TTL_NS)
    table.advance_clock(2 * SECOND_NS)
    return _refusal_or_accepted(table, SECOND_NS)


def _runtime_advance() -> str | None:
    table = adapter.CrateAffinity(AffinityConfig(ttl_ns=PROBE_TTL_NS))
    try:
        table.crate_advance_clock(SECOND_NS)
    except UnsupportedError:
        return None
    except AffinityError as error:
        return clock_refusal(str(error)) or f"refused: {error}"
    return "accepted"


def _join_lease_count() -> int | None:
    table = adapter.CrateAffinity(AffinityConfig(ttl_ns=PROBE_TTL_NS))
    step = table.try_acquire("a", None)
    assert isinstance(step, Initialize)
    if table.join_initializing("a", TARGET) is None:
        return None
    return table.lease_count("a")


def _group_ids_match() -> bool | None:
    model = ModelAffinity(AffinityConfig(ttl_ns=PROBE_TTL_NS))
    try:
        return all(
            adapter.subagent_group_affinity_id(parent)
            == model.subagent_group_affinity_id(parent)
            for parent in GROUP_PARENTS
        )
    except UnsupportedError:
        return None


def _testing_hooks() -> bool:
    """The `testing` hooks answer for a fresh table (the binding needs them)."""
    table = adapter.CrateAffinity(AffinityConfig(ttl_ns=PROBE_TTL_NS))
    return table.entry_count() == 0 and table.lease_count("a") is None


def observe() -> ProbeAnswers:
    """Run every probe scenario against the built binding."""
    manual = adapter.HAS_MANUAL_CLOCK
    runtime = AffinityConfig(ttl_ns=PROBE_TTL_NS)
    return ProbeAnswers(
        crate_version=adapter.CRATE_VERSION,
        crate_source=adapter.CRATE_SOURCE,
        manual_clock=manual,
        cleanup_counts=_cleanup_counts() if manual else None,
        backwards=_backwards() if manual else None,
        overflow=_overflow() if manual else None,
        runtime_advance=_runtime_advance(),
        join_lease_count=_join_lease_count(),
        first_sequence_manual=_seed(
            adapter.raw_next_sequence_probe(
                AffinityConfig(ttl_ns=PROBE_TTL_NS, reaping="every_advance")
            )
        )
        if manual
        else None,
        first_sequence_runtime=_seed(adapter.raw_next_sequence_probe(runtime)),
        group_ids_match=_group_ids_match(),
        queue_recheck=adapter.HAS_QUEUE_RECHECK,
        testing_hooks=_testing_hooks(),
    )


def _verdict(answer: str | None, refused_by: str) -> Verdict:
    if answer is None:
        return "n/a"
    return "yes" if answer == refused_by else "no"


def decide(answers: ProbeAnswers) -> Capabilities:
    """The capabilities these answers show (pure: tested on recorded answers)."""
    counts = answers.cleanup_counts
    if counts is None:
        reaping = "n/a"
    else:
        shown = ", ".join(str(count) for count in counts)
        reaping = CLEANUP_SCHEDULES.get(counts, f"other (counts {shown})")
    if answers.join_lease_count == 2:
        join = "reserved-join (binds at once, 2 leases)"
    elif answers.join_lease_count is None:
        join = "none (join refused on an initializing session)"
    else:
        join = f"other ({answers.join_lease_count} leases after a join)"
    seeds = [f"runtime: {_seed_shown(answers.first_sequence_runtime)}"]
    if answers.first_sequence_manual is not None:
        seeds.append(f"manual: {_seed_shown(answers.first_sequence_manual)}")
    group_key = {None: "absent", True: "present, matches the model"}.get(
        answers.group_ids_match, "present, DIFFERS from the model"
    )
    return Capabilities(
        clocks=("runtime", "manual") if answers.manual_clock else ("runtime",),
        reaping=reaping,
        overflow_guard=_verdict(answers.overflow, "deadline_overflow"),
        backwards_check=_verdict(answers.backwards, "backwards"),
        runtime_refusal=_verdict(answers.runtime_advance, "runtime_table"),
        join=join,
        sequence_seed="; ".join(seeds),
        group_key=group_key,
        queue_recheck="yes" if answers.queue_recheck else "no",
        testing_hooks="yes" if answers.testing_hooks else "no",
    )


def _seed(first: int) -> str:
    """A first sequence as recorded: `wall_clock` (not replayable) or the number."""
    return "wall_clock" if first >= SEQUENCE_WALL_CLOCK_MIN else str(first)


def _seed_shown(seed: str) -> str:
    return "wall clock (UNIX ns)" if seed == "wall_clock" else seed


@functools.cache
def capabilities() -> Capabilities:
    """The build's capabilities (probed once per process)."""
    return decide(observe())
