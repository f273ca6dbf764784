"""Is a concurrent history linearizable? A small Wing-Gong search, memoized.

A history is a set of *actions*, each done by one thread between its
invocation and its response (instants on one shared counter). It is
linearizable when the actions can be put in one sequential order that

* keeps each thread's own order,
* keeps real-time order: an action that responded before another was invoked
  comes first, and
* the sequential specification accepts, action by action, with the results
  the threads actually saw (and, at the end, with the final state observed).

A history cut at some instant may hold *pending* calls (invoked, not yet
returned): each may have taken effect, with any result, or not at all. With
that reading every prefix of a linearizable history is linearizable, so the
shortest non-linearizable prefix is well defined.

The search (Wing and Gong, 1993, with Lowe's memoization, 2017) extends a
prefix by any thread's next action that no other pending action precedes in
real time, and remembers each (prefix, specification state) it has already
tried, so a state reached by two orders is searched once. The specification
is a `Spec`; its states must be hashable.

No existing library fitted: the well-kept checkers (Knossos, Porcupine) are
Clojure and Go programs; this one is small enough to read at once.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

SEARCH_STATES_MAX: Final[int] = 1_000_000
"""A search that would visit more states than this stops, undecided."""


class Timed(Protocol):
    """What the search needs of an action: who did it, and when."""

    @property
    def thread(self) -> int:
        """The thread that did it."""
        ...

    @property
    def invoked(self) -> int:
        """The instant it was invoked."""
        ...

    @property
    def returned(self) -> int:
        """The instant it responded (later than any instant, for a pending call)."""
        ...

    @property
    def step(self) -> int:
        """Its place among the actions of one call invoked at the same instant."""
        ...


A = TypeVar("A", bound=Timed)
A_contra = TypeVar("A_contra", bound=Timed, contravariant=True)
S = TypeVar("S", bound=Hashable)


class Spec(Protocol[A_contra, S]):
    """A sequential specification: which action results it accepts, from where."""

    def initial(self) -> S:
        """The state before any action."""
        ...

    def successors(self, state: S, action: A_contra) -> Sequence[S]:
        """The states `action` may lead to with the result seen (none: refused).

        A call still pending when the history was cut may have taken effect
        or not, with any result: two successors.
        """
        ...

    def accepts_final(self, state: S) -> bool:
        """Whether the state after every action matches what was observed."""
        ...


@dataclass(frozen=True)
class Verdict(Generic[A]):
    """What the search found."""

    linearizable: bool
    order: tuple[A, ...]  # a witness order when linearizable
    explored: int  # (prefix, state) pairs searched
    undecided: bool = False  # the search hit SEARCH_STATES_MAX

    @property
    def decided(self) -> bool:
        """The search finished within its bound."""
        return not self.undecided


def lanes_of(actions: Sequence[A]) -> tuple[tuple[A, ...], ...]:
    """Each thread's actions in its own order, threads sorted.

    The order is by invocation, then by `step` for the parts of one call (an
    advance's clock before its reap): the key says so, no stable sort is relied on.
    """
    threads = sorted({action.thread for action in actions})
    return tuple(
        tuple(
            sorted(
                (action for action in actions if action.thread == thread),
                key=lambda action: (action.invoked, action.step),
            )
        )
        for thread in threads
    )


def _candidates(lanes: tuple[tuple[A, ...], ...], done: tuple[int, ...]) -> list[int]:
    """Lanes whose next action no pending action precedes in real time."""
    heads = [
        (lane_index, lane[position])
        for lane_index, (lane, position) in enumerate(zip(lanes, done, strict=True))
        if position < len(lane)
    ]
    if not heads:
        return []
    # Within a thread responses grow, so the earliest pending response is a head.
    horizon = min(head.returned for _, head in heads)
    return [lane_index for lane_index, head in heads if head.invoked <= horizon]


def check(
    actions: Sequence[A],
    spec: Spec[A, S],
    states_max: int = SEARCH_STATES_MAX,
) -> Verdict[A]:
    """Search for a linearization of `actions` that `spec` accepts."""
    lanes = lanes_of(actions)
    start: tuple[int, ...] = tuple(0 for _ in lanes)
    # Depth first; each frame: (positions per lane, state, order so far).
    stack: list[tuple[tuple[int, ...], S, tuple[A, ...]]] = [
        (start, spec.initial(), ())
    ]
    seen: set[tuple[tuple[int, ...], S]] = set()
    while stack:
        done, state, order = stack.pop()
        if (done, state) in seen:
            continue
        seen.add((done, state))
        if len(seen) > states_max:
            return Verdict(
                linearizable=False, order=(), explored=len(seen), undecided=True
            )
        candidates = _candidates(lanes, done)
        if not candidates:
            if spec.accepts_final(state):
                return Verdict(linearizable=True, order=order, explored=len(seen))
            continue
        # Push in reverse so the earliest-invoked candidate is tried first.
        for lane_index in sorted(
            candidates,
            key=lambda index: lanes[index][done[index]].invoked,
            reverse=True,
        ):
            action = lanes[lane_index][done[lane_index]]
            advanced = tuple(
                position + (index == lane_index) for index, position in enumerate(done)
            )
            stack.extend(
                (advanced, after, (*order, action))
                for after in spec.successors(state, action)
            )
    return Verdict(linearizable=False, order=(), explored=len(seen))
