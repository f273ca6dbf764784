"""A differential machine's rules: drawn one per step, printed as they ran, guarded.

`stateful.machine` draws each rule as one Hypothesis stateful step; these
tests use a toy machine (no harness) whose rules only count, so that what
Hypothesis prints and shrinks to can be stated exactly.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import Phase, settings
from hypothesis import stateful as hypothesis_stateful
from hypothesis import strategies as st
from hypothesis.errors import InvalidDefinition
from hypothesis.stateful import run_state_machine_as_test

from stateful.affinity_machine import AffinityMachine
from stateful.machine import DRAW, DifferentialMachine, Draw, drawn, precondition, rule

SHRINKING = settings(
    max_examples=200,
    stateful_step_count=30,
    derandomize=True,
    database=None,
    deadline=None,
    phases=(Phase.generate, Phase.shrink),
)


class Toy(DifferentialMachine):
    """Fails once `close` runs on a count of at least two opened."""

    def __init__(self) -> None:
        """A fresh count."""
        super().__init__()
        self.count = 0

    @rule()
    def noop(self) -> None:
        """Nothing."""

    @rule(step=st.integers(1, 3))
    def open_some(self, step: int) -> None:
        """Open `step` more."""
        self.count += step

    @precondition(lambda machine: machine.count > 0)
    @rule(data=DRAW)
    def close(self, data: Draw) -> None:
        """Close a drawn number of them; fail on a count of two or more."""
        shut = data.draw(st.integers(0, self.count), label="shut")
        assert self.count < 2, f"closing {shut} of {self.count}"


def _printed(machine: type[DifferentialMachine]) -> list[str]:
    with pytest.raises(AssertionError) as raised:
        run_state_machine_as_test(machine, settings=SHRINKING)
    notes = getattr(raised.value, "__notes__", [])
    return [note for note in notes if note.startswith("state")]


def test_the_failing_program_shrinks_to_one_line_per_rule() -> None:
    """The shortest failing program, with the rule's own draw shown in the call."""
    assert [
        "state = Toy()",
        "state.swarm(off=())",
        "state.open_some(step=2)",
        "state.close(data=drawn(0))",
        "state.teardown()",
    ] == _printed(Toy)


def test_drawn_replays_its_values_in_order() -> None:
    """`drawn(...)` in a printed program hands back what the rule drew."""
    data = drawn(3, "a")

    assert 3 == data.draw(st.integers())
    assert "a" == data.draw(st.text(), label="x")
    assert "drawn(3, 'a')" == repr(data)
    with pytest.raises(IndexError):
        data.draw(st.integers())


def _define(name: str, attributes: dict[str, Any]) -> type:
    return type(name, (AffinityMachine,), attributes)


def test_a_hypothesis_rule_on_a_machine_is_refused_at_class_creation() -> None:
    """One line: which rule, and the decorator to use instead."""

    def reaper_tick(self: Any) -> None:
        del self

    with pytest.raises(InvalidDefinition) as refused:
        _define("Wrong", {"reaper_tick": hypothesis_stateful.rule()(reaper_tick)})

    assert (
        "Wrong.reaper_tick uses hypothesis.stateful.rule; a differential "
        "machine's rules use stateful.machine.rule"
    ) == str(refused.value)


def test_a_hypothesis_precondition_on_a_machine_is_refused_at_class_creation() -> None:
    """On the machine's own rule too: Hypothesis would never check it."""

    def tick(self: Any) -> None:
        del self

    guarded = hypothesis_stateful.precondition(lambda _: True)(rule()(tick))

    with pytest.raises(InvalidDefinition) as refused:
        _define("Guarded", {"tick": guarded})

    assert (
        "Guarded.tick uses hypothesis.stateful.precondition; a differential "
        "machine's rules use stateful.machine.precondition"
    ) == str(refused.value)
