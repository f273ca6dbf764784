"""The affinity machine along the clock axis: manual clocks and clock refusals.

`ManualClockMachine` drives `with_manual_clock` tables (one class per reaping
variant, made by `manual_clock_machine`) and adds invalid clock updates;
`RuntimeClockRefusalMachine` calls the crate's `advance_clock` on a runtime
table, which must be refused alike. Both extend `AffinityMachine`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import initialize

from model.affinity.ops import (
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    CrateAdvance,
    Query,
    Release,
)
from model.affinity.table import (
    Binding,
)
from model.affinity.types import (
    AffinityConfig,
    Bound,
    Initialize,
    Reaping,
    Target,
    Version,
)
from stateful.affinity_machine import AffinityMachine, configs, targets
from stateful.machine import DRAW, Draw, rule, sampled_from

INSTANT_RANGE_TTLS = (None, 2, 5)
"""Where the `Instant` range ends after a manual table's origin, in TTLs."""


def _with_instant_range(config: AffinityConfig, ttls: int | None) -> AffinityConfig:
    instant_range_ns = None if ttls is None else ttls * config.ttl_ns
    return replace(config, instant_range_ns=instant_range_ns)


def manual_configs(reaping: Reaping) -> st.SearchStrategy[AffinityConfig]:
    """Manual-clock tables, some with the `Instant` range ending near the origin."""
    return st.builds(
        _with_instant_range, configs(reaping), st.sampled_from(INSTANT_RANGE_TTLS)
    )


class ManualClockMachine(AffinityMachine):
    """The machine over `with_manual_clock` tables, plus invalid clock updates.

    The reaping variant is the build's (decided by the capability probe);
    `manual_clock_machine` makes the class for one variant.
    """

    reaping: ClassVar[Reaping] = "every_advance"

    @rule(
        refusal=st.sampled_from(
            ("backwards", "deadline_overflow", "binding_range", "no_move")
        )
    )
    def clock_update_at_a_limit(self, refusal: str) -> None:
        """A clock update at one of the manual clock's limits agrees, refusal too.

        Backwards (1 ns), a deadline 1 ns past the `Instant` range, a time past
        the range itself, and an update to the current time (accepted).
        """
        state = self._state()
        instant_range_ns = state.config.instant_range_ns
        now_ns = {
            "backwards": state.now_ns - 1,
            "no_move": state.now_ns,
            "deadline_overflow": None
            if instant_range_ns is None
            else max(state.now_ns, instant_range_ns - state.config.ttl_ns + 1),
            "binding_range": 2**64
            if instant_range_ns is None
            else instant_range_ns + 1,
        }[refusal]
        if now_ns is not None:
            self._run("clock_update_at_a_limit", CrateAdvance(now_ns))

    @rule(
        data=DRAW,
        dispatched=targets,
        then=st.sampled_from(("acquire", "query", "new_id")),
    )
    def stale_releases_leave_an_expired_binding(
        self, data: Draw, dispatched: Target, then: str
    ) -> None:
        """An expired binding left between cleanups by stale releases is met alike.

        Two leases outlive a replica refresh and their binding's deadline; both
        releases are stale (the version moved), so they only decrement and the
        binding sits expired at exactly its deadline until the next cleanup,
        whatever the schedule. Then the same id is acquired or looked up, or a
        new id competes with it for capacity.
        """
        rule_name = "stale_releases_leave_an_expired_binding"
        vacant = self._vacant_ids()
        if not vacant:
            return
        session_id = data.draw(sampled_from(vacant), label="id")
        first = self._run(rule_name, Acquire(session_id, None)).expected.value
        if not isinstance(first, Initialize):
            return
        lease = self._run(rule_name, Commit(first.handle, dispatched)).expected.value
        second = self._run(rule_name, Acquire(session_id, None)).expected.value
        entry = self._state().entry(session_id)
        if not isinstance(lease, int) or not isinstance(second, Bound):
            return
        assert isinstance(entry, Binding)
        newer = Version(entry.version.sequence + 1, entry.version.writer)
        self._run(rule_name, ApplyReplica(session_id, entry.target, newer))
        refreshed = self._state().entry(session_id)
        assert isinstance(refreshed, Binding)
        self._run(rule_name, Advance(refreshed.deadline_ns))
        self._run(rule_name, Release(lease))
        self._run(rule_name, Release(second.handle))
        if then == "acquire":
            self._run(rule_name, Acquire(session_id, None))
        elif then == "query":
            self._run(rule_name, Query(session_id, None))
        elif others := self._vacant_ids():
            other = data.draw(sampled_from(others), label="new id")
            self._run(rule_name, Acquire(other, None))


def manual_clock_machine(reaping: Reaping) -> type[ManualClockMachine]:
    """A `ManualClockMachine` whose tables collect idle bindings per `reaping`."""

    class Machine(ManualClockMachine):
        @initialize(config=manual_configs(reaping))
        def build(self, config: AffinityConfig) -> None:
            """Build the model and the manual-clock table alike."""
            AffinityMachine.build(self, config)

    Machine.reaping = reaping
    Machine.__name__ = Machine.__qualname__ = f"ManualClockMachine_{reaping}"
    return Machine


class RuntimeClockRefusalMachine(AffinityMachine):
    """The runtime machine, on a build whose crate has `advance_clock`."""

    @rule(data=DRAW)
    def crate_advance_on_a_runtime_table(self, data: Draw) -> None:
        """The crate's `advance_clock` on a runtime table is refused, alike."""
        now_ns = data.draw(sampled_from(self._clock_targets()), label="now_ns")
        self._run("crate_advance_on_a_runtime_table", CrateAdvance(now_ns))
