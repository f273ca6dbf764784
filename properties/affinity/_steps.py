"""What a step did: helpers the affinity property modules share."""

from __future__ import annotations

from collections.abc import Callable

from model.affinity.table import AffinityState, Binding
from properties.registry import Step


def bindings(state: AffinityState) -> dict[str, Binding]:
    """Session id -> binding, for every bound session of `state`."""
    return {
        session_id: entry
        for session_id, entry in state.entries
        if isinstance(entry, Binding)
    }


def kept_bindings(step: Step) -> list[tuple[Binding, Binding]]:
    """(before, after) for every session bound both before and after the step."""
    after = bindings(step.after)
    return [
        (entry, after[session_id])
        for session_id, entry in bindings(step.before).items()
        if session_id in after
    ]


def bindings_survive(step: Step, selected: Callable[[Binding], bool]) -> bool:
    """Every selected binding from before the step is the same instance after it."""
    after = bindings(step.after)
    return all(
        session_id in after and after[session_id].revision == entry.revision
        for session_id, entry in bindings(step.before).items()
        if selected(entry)
    )


def a_refusal_changes_nothing(step: Step, kinds: tuple[type, ...]) -> bool:
    """A refused operation of one of these kinds leaves the state exactly as it was."""
    if not isinstance(step.op, kinds) or step.outcome.ok:
        return True
    return bool(step.before == step.after)
