"""The crate's serving clock against the manual-clock reaping variants.

The published crate has only the runtime clock, whose reaper collects idle
bindings every `min(ttl, 30 s)`. SPEC B.14 describes two manual-clock variants:
collecting on every advance (E) and on the reaper's cadence (C). Where the
crate's manual cleanup is not available, the suite states exactly where the
variants may differ and checks that they differ nowhere else:

1. Lookups (`query_target`) and acquisitions of known sessions agree in every
   variant: the exact idle deadline is enforced whether or not a binding has
   been collected.
2. `entry_count` differs only by expired, uncollected bindings; `lease_count`
   differs only as `Some(0)` (expired, uncollected) against `None`.
3. A replica update of an expired binding answers `ReplacedExpired` where the
   binding was not collected yet and `Inserted` where it was; the bindings
   that result are the same.
4. A time past the runtime binding's range (`CLOCK_NS_MAX`, the limit of its
   paused Tokio clock) is refused there and accepted by a manual table whose
   `Instant` range is unbounded; from then on the clocks differ. Likewise
   a dropped manual table has no clock left to advance (the runtime's still
   moves).
5. Otherwise, the first differing outcome is a capacity refusal (`ResourceExhausted`, or
   `RejectedCapacity` for a replica insert) of a new id, in a variant whose
   table was full only because of expired, uncollected bindings.

The crate itself is compared with the `runtime_reaper` model at every step by
the inherited machine.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from hypothesis import event, note
from hypothesis.stateful import initialize, run_state_machine_as_test

from model.affinity.ops import Acquire, Advance, ApplyReplica, Op, Outcome, outcome_of
from model.affinity.table import CLOCK_NS_MAX, AffinityState, Binding, ModelAffinity
from model.affinity.types import AffinityConfig, Reaping, ReplicaOutcome
from stateful.affinity_machine import SESSION_POOL, AffinityMachine, configs
from stateful.harness import StepReport

VARIANTS: tuple[Reaping, ...] = ("cadence", "every_advance")


def _expired_count(state: AffinityState) -> int:
    return sum(1 for _, entry in state.entries if state.is_expired(entry))


def _capacity_refusal_explained(
    op: Op, refused: AffinityState, accepted: AffinityState
) -> bool:
    """A new id was refused where only uncollected expired bindings filled the table."""
    if not isinstance(op, Acquire | ApplyReplica):
        return False
    if refused.entry(op.session_id) is not None:
        return False
    full = len(refused.entries) >= refused.config.max_entries
    has_room = len(accepted.entries) < accepted.config.max_entries
    live_alike = len(refused.entries) - _expired_count(refused) == len(
        accepted.entries
    ) - _expired_count(accepted)
    return full and has_room and live_alike and _expired_count(refused) > 0


def _replica_difference_explained(
    op: Op, outcomes: set[object], states: tuple[AffinityState, AffinityState]
) -> bool:
    """ReplacedExpired (uncollected) against Inserted (collected), nothing else."""
    if not isinstance(op, ApplyReplica):
        return False
    if outcomes != {ReplicaOutcome.REPLACED_EXPIRED, ReplicaOutcome.INSERTED}:
        return False
    entries = [state.entry(op.session_id) for state in states]
    return any(
        entry is not None and state.is_expired(entry)
        for entry, state in zip(entries, states, strict=True)
    ) and any(entry is None for entry in entries)


def _refusal(op: Op, value: object, error: str | None) -> bool:
    if isinstance(op, Acquire):
        return error == "ResourceExhausted"
    return value == ReplicaOutcome.REJECTED_CAPACITY


def _clock_range_difference(op: Op, manual: Outcome, runtime: Outcome) -> bool:
    """The runtime binding refused a time past its range; the manual table took it."""
    return (
        isinstance(op, Advance)
        and op.now_ns > CLOCK_NS_MAX
        and manual.ok
        and runtime.refusal == "binding_range"
    )


class ClockVariantMachine(AffinityMachine):
    """Runtime-reaper model and crate in lockstep, manual-clock variants beside."""

    divergences: ClassVar[set[str]] = set()
    count_differences: ClassVar[int] = 0
    replica_differences: ClassVar[int] = 0

    @initialize(config=configs())
    def build(self, config: AffinityConfig) -> None:
        """Build the crate, its model, and one model per manual-clock variant."""
        super().build(config)
        self.variants = {
            reaping: ModelAffinity(replace(config, reaping=reaping))
            for reaping in VARIANTS
        }
        self.diverged: set[str] = set()

    def _run(self, rule_name: str, op: Op) -> StepReport[Op]:
        before = self._harness().model.state()
        report = super()._run(rule_name, op)
        reference = self._harness().model
        for reaping, variant in sorted(self.variants.items()):
            if reaping in self.diverged:
                continue
            variant_before = variant.state()
            outcome = outcome_of(variant, op)
            if outcome != report.expected and _replica_difference_explained(
                op, {outcome.value, report.expected.value}, (variant_before, before)
            ):
                type(self).replica_differences += 1
                event(f"{reaping}: replica outcome differs (collected or not)")
            elif _clock_range_difference(op, outcome, report.expected) or (
                isinstance(op, Advance) and variant_before.dropped
            ):
                self.diverged.add(reaping)
                event(f"{reaping} diverged on the clock's range")
                continue
            elif outcome != report.expected:
                refused, accepted = (
                    (variant_before, before)
                    if _refusal(op, outcome.value, outcome.error)
                    else (before, variant_before)
                )
                assert _capacity_refusal_explained(op, refused, accepted), (
                    f"{reaping} differs from the runtime reaper on {op}: "
                    f"{outcome} != {report.expected}"
                )
                self.diverged.add(reaping)
                type(self).divergences.add(reaping)
                event(f"{reaping} diverged on capacity")
                continue
            self._check_variant(reaping, variant, reference)
        return report

    def _check_variant(
        self, reaping: str, variant: ModelAffinity, reference: ModelAffinity
    ) -> None:
        ours, theirs = variant.state(), reference.state()
        if ours.dropped:
            return
        note(f"{reaping}: entries {len(ours.entries)} vs {len(theirs.entries)}")
        for session_id in sorted(SESSION_POOL):
            if len(session_id.encode()) > ours.config.max_session_id_bytes:
                continue
            assert variant.query_target(session_id, None) == reference.query_target(
                session_id, None
            ), f"{reaping} serves {session_id!r} differently"
            mine, other = ours.entry(session_id), theirs.entry(session_id)
            if mine != other:
                uncollected = mine if mine is not None else other
                assert isinstance(uncollected, Binding)
                assert ours.is_expired(uncollected), (
                    f"{reaping} keeps {session_id!r} differently while it is live"
                )
        live = len(ours.entries) - _expired_count(ours)
        assert live == len(theirs.entries) - _expired_count(theirs)
        if len(ours.entries) != len(theirs.entries):
            type(self).count_differences += 1


def test_manual_clock_variants_differ_from_the_serving_clock_only_where_stated() -> (
    None
):
    """Variants agree on every lookup; they differ only in counts and capacity."""
    ClockVariantMachine.divergences.clear()
    ClockVariantMachine.count_differences = 0
    ClockVariantMachine.replica_differences = 0

    run_state_machine_as_test(ClockVariantMachine)

    assert set(VARIANTS) == ClockVariantMachine.divergences
    assert ClockVariantMachine.count_differences > 0
    assert ClockVariantMachine.replica_differences > 0
