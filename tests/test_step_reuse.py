"""What a step reuses instead of rebuilding is exactly what it would rebuild.

The harness carries the model's snapshot from one step to the next, the
registry evaluates a selection built once per subject and kind, rules draw
from `sampled_from` strategies built once per value list, and the adapter
translates the binding's errors with a plain context manager. Each is checked
against the thing it replaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from impl.adapter import CrateAffinity
from model.affinity.ops import Acquire, Advance, Commit, EnableReplication, Op, Release
from model.affinity.table import ModelAffinity
from model.affinity.types import SECOND_NS, AffinityConfig, Mode, Target
from model.errors import InvalidArgumentError
from properties import registry
from properties.registry import Kind, evaluate, properties, register
from stateful.affinity_machine import SESSION_POOL, AffinityMachine
from stateful.affinity_subject import AffinityHarness
from stateful.harness import StepReport
from stateful.machine import sampled_from

EXAMPLES = 30
"""Programs of the snapshot-checking machine (model against model, so quick)."""


def test_the_carried_state_is_the_models_state_after_every_step() -> None:
    """The snapshot a step carries over is the one the model gives afresh."""
    harness = AffinityHarness(_config(), SESSION_POOL, ModelAffinity)
    published_steps = 0
    for op in _replicating_program():
        report = harness.step(op)
        published_steps += bool(report.model_view.published)
        fresh = harness.model.state()

        assert fresh == harness.state
    assert published_steps > 0


def test_the_machine_carries_the_models_state_between_its_steps() -> None:
    """Across generated programs, guards read exactly the model's state."""
    checked = 0

    class Checked(AffinityMachine):
        """The affinity machine with a snapshot check before every operation."""

        def _run(self, rule_name: str, op: Op) -> StepReport[Op]:
            """Before each step, the harness' state equals a fresh snapshot."""
            nonlocal checked
            assert self.harness.model.state() == self.harness.state
            checked += 1
            return super()._run(rule_name, op)

    machine: type[AffinityMachine] = Checked
    machine.factory = ModelAffinity
    run_state_machine_as_test(
        Checked,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=24,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=(HealthCheck.too_slow,),
        ),
    )

    assert checked == Checked.steps_run > EXAMPLES


def test_the_selection_holds_every_property_of_its_subject_and_kind() -> None:
    """Each (subject, kind) evaluates exactly the registry's properties of it."""
    for prop in properties():
        selected = registry._selection(prop.subject, prop.over)
        names = {name for name, *_ in selected.always} | {
            name for name, _ in selected.sometimes
        }
        wanted = {p.name for p in properties(prop.subject, over=prop.over)}

        assert wanted == names


def test_evaluate_reports_each_verdict_of_a_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Violated, misdeclared, exercised, at the boundary and reached, as declared."""
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_SELECTIONS", {})
    before = evaluate("affinity", "state", 1)
    _register("always", _never, antecedent=_is_two)
    _register("always", _always, antecedent=_is_one, boundary=_is_one)
    _register("sometimes", _is_one)

    verdict = evaluate("affinity", "state", 1)

    assert () == before.violated
    assert ("_never",) == verdict.violated
    assert ("_never",) == verdict.misdeclared
    assert ("_always", "_never") == verdict.exercised
    assert ("_always",) == verdict.at_boundary
    assert ("_is_one",) == verdict.reached


def test_sampled_from_builds_each_strategy_once() -> None:
    """The same value list gives the same strategy object."""
    first = sampled_from([3, 5, 8])
    second = sampled_from((3, 5, 8))

    assert first is second


def test_sampled_from_keeps_equal_values_of_other_types_apart() -> None:
    """1 and True are equal, but a list of them is no list of the other."""
    ints = sampled_from([1, 0])
    bools = sampled_from([True, False])

    assert ints is not bools
    assert (True, False) == bools.elements  # type: ignore[attr-defined]


@pytest.mark.crate
def test_a_crate_refusal_is_translated_and_changes_nothing() -> None:
    """The plain translation context still turns crate errors into model errors."""
    table = CrateAffinity(_config())
    before = table.live_handles()

    with pytest.raises(InvalidArgumentError):
        table.query_target("x" * 300, None)

    assert before == table.live_handles()


@pytest.mark.crate
def test_an_out_of_range_value_is_an_invalid_argument() -> None:
    """An integer the binding cannot hold is refused as an invalid argument."""
    table = CrateAffinity(_config())

    with pytest.raises(InvalidArgumentError, match="out of the crate's range"):
        table.commit(2**70, Target(1, None))


def _register(kind: Kind, predicate: Callable[[Any], bool], **conditions: Any) -> None:
    """Register `predicate` for the affinity state, with citations that parse."""
    register(
        "affinity",
        kind,
        "state",
        reads=("model.affinity.table.ModelAffinity.state",),
        guards=("services::selection::affinity::SessionAffinity::new",),
        **conditions,
    )(predicate)


def _never(value: object) -> bool:
    """Fails on every value."""
    del value
    return False


def _always(value: object) -> bool:
    """Holds on every value."""
    del value
    return True


def _is_one(value: object) -> bool:
    """The value is one."""
    return value == 1


def _is_two(value: object) -> bool:
    """The value is two."""
    return value == 2


def _config() -> AffinityConfig:
    return AffinityConfig(
        ttl_ns=SECOND_NS,
        mode=Mode.SOFT,
        max_entries=3,
        max_session_id_bytes=4,
        reaping="runtime_reaper",
    )


def _replicating_program() -> list[Op]:
    return [
        EnableReplication(1),
        Acquire("a", None),
        Commit(1, Target(1, None)),
        Release(2),
        Acquire("b", None),
        Commit(3, Target(2, 0)),
        Advance(SECOND_NS),
        Acquire("a", None),
    ]
