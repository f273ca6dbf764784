"""The breadth-first search every explored subject shares, over a `Space` description.

A `Space` says everything the search needs to know about one subject (the
affinity table, the policy queue) inside one bound: the initial state, the
successors of a state (each enabled operation applied), what the subject's
`state` properties read from a state, and which `sometimes` goals apply.
`explore_space` builds a `networkx.MultiDiGraph` breadth-first from the initial
state:

* nodes are integers in discovery order (0 is the initial state); each carries
  its BFS depth, and `Exploration.states[node]` is its state;
* an edge `u -> v` keyed by an operation says: applying that operation to state
  `u` returns `outcome` and leads to state `v` (plus any further labels the
  space attaches, such as what a replica sink received).

On every new state each `always` state property of the subject is checked, on
every edge each `always` step property; `sometimes` goals record the depth at
which they first held. Per `always` property the search also counts the states
(or edges) on which it was non-vacuous -- its antecedent held -- and those at
its boundary. A space may project states onto a canonical form (the
node), in which case step properties still read the state the operation really
left (`Transition.step`).

Limits: `depth_max` is the declared horizon (states at that depth are not
expanded and are counted as `horizon_states`, never hidden); `states_max` is a
safety cap whose reaching raises `ExplorationCapError`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, Protocol, TypeVar

import networkx as nx  # type: ignore[import-untyped]  # no stubs pinned in [lint]

from properties import Property, Step, properties
from properties.registry import Over, SubjectName


class BoundLike(Protocol):
    """What the search and the commands read from any subject's bound."""

    @property
    def name(self) -> str:
        """The bound's name (a key of `ci/explore/state_counts.json`)."""
        ...

    @property
    def depth_max(self) -> int:
        """Horizon: states this many steps out are not expanded."""
        ...

    @property
    def states_max(self) -> int:
        """Safety cap: more distinct states raises."""
        ...

    @property
    def goals_out_of_reach(self) -> Mapping[str, str]:
        """`sometimes` goals the bound cannot reach, each with the reason."""
        ...

    def describe(self) -> str:
        """One line naming the bound's vocabulary and limits."""
        ...


BoundT = TypeVar("BoundT", bound=BoundLike)
StateT = TypeVar("StateT", bound=Hashable)
OpT = TypeVar("OpT", bound=Hashable)


class ExplorationCapError(RuntimeError):
    """A named cap of the explorer was reached; the run is refused, not truncated."""


@dataclass(frozen=True)
class Transition(Generic[StateT, OpT]):
    """One successor: the operation, its outcome, the node it leads to."""

    op: OpT
    outcome: object
    after: StateT  # the successor node (the space's canonical form of the new state)
    step: Step | None
    """What step properties read (the state before, op, outcome, the state the op
    really left), or None when none applies."""
    labels: tuple[tuple[str, object], ...] = ()  # further edge attributes
    refused: bool = False
    """The call was refused: `step` (outcome: the error kind) is checked by the
    subject's `refusal` properties instead of its `step` properties."""


@dataclass(frozen=True)
class Space(Generic[BoundT, StateT, OpT]):
    """One subject inside one bound, as the search sees it."""

    bound: BoundT
    subject: SubjectName  # whose registered properties are checked
    root: StateT
    successors: Callable[[StateT], Iterator[Transition[StateT, OpT] | None]]
    """Each enabled operation applied, in a fixed order; None leaves the bound."""
    state_view: Callable[[StateT], object | None]
    """What the subject's state properties take; None: they have nothing to read."""
    goals: tuple[str, ...]  # the subject's `sometimes` goals for this bound, sorted


@dataclass(frozen=True)
class Violation(Generic[OpT]):
    """An `always` property that failed, with the shortest path that shows it."""

    prop: str
    path: tuple[OpT, ...]  # from the initial state; the last op is the failing step


@dataclass
class Exploration(Generic[BoundT, StateT, OpT]):
    """The result of one breadth-first enumeration."""

    bound: BoundT
    graph: nx.MultiDiGraph[int]
    states: list[StateT]  # by node id
    ids: dict[StateT, int]
    parent: list[tuple[int, OpT] | None]  # BFS tree: how each node was first reached
    violations: list[Violation[OpT]]  # the first (shortest) per property
    goals: tuple[str, ...]  # the `sometimes` goals that apply to the bound
    subject: SubjectName  # whose properties were checked
    reached: dict[str, int] = field(default_factory=dict)  # goal -> first depth
    excluded: int = 0  # transitions that would leave the bound
    horizon_states: int = 0  # nodes at `depth_max`, not expanded
    non_vacuous: dict[str, int] = field(default_factory=dict)
    """`always` property -> states (or edges) whose check was non-vacuous."""
    at_boundary: dict[str, int] = field(default_factory=dict)
    """`always` property -> states (or edges) whose check met its boundary."""
    misdeclared: list[str] = field(default_factory=list)
    """`always` properties violated where their antecedent was false."""

    @property
    def depth(self) -> int:
        """The greatest BFS depth of any node."""
        return max(int(self.graph.nodes[n]["depth"]) for n in self.graph.nodes)

    def counts(self) -> dict[str, int]:
        """What `ci/explore/state_counts.json` pins for this bound."""
        return {
            "states": self.graph.number_of_nodes(),
            "edges": self.graph.number_of_edges(),
            "depth": self.depth,
            "horizon_states": self.horizon_states,
            "excluded_transitions": self.excluded,
        }

    def path_to(self, node: int) -> list[tuple[int, int, OpT]]:
        """The BFS-tree (shortest) path from the root to `node`, as edges."""
        edges: list[tuple[int, int, OpT]] = []
        cursor = node
        for _ in range(self.graph.nodes[node]["depth"]):
            link = self.parent[cursor]
            assert link is not None, f"node {cursor} has no parent"
            previous, op = link
            edges.append((previous, cursor, op))
            cursor = previous
        assert cursor == 0, "a BFS-tree path ends at the root"
        return edges[::-1]

    def ops_to(self, node: int) -> tuple[OpT, ...]:
        """The operations of the BFS-tree path from the root to `node`."""
        return tuple(op for _, _, op in self.path_to(node))

    def exercise(self) -> dict[str, dict[str, int]]:
        """Per `always` property of the subject: non-vacuous and boundary counts."""
        return {
            prop.name: {
                "non_vacuous": self.non_vacuous.get(prop.name, 0),
                "boundary": self.at_boundary.get(prop.name, 0),
            }
            for prop in properties(self.subject, "always")
        }

    def unreached_goals(self) -> list[str]:
        """`sometimes` goals that apply to the bound and were never met."""
        return [goal for goal in self.goals if goal not in self.reached]

    def goal_mismatch(self) -> tuple[list[str], list[str]]:
        """(expected but unreached, declared out of reach but reached)."""
        out_of_reach = self.bound.goals_out_of_reach
        missing = [g for g in self.unreached_goals() if g not in out_of_reach]
        stale = [g for g in sorted(out_of_reach) if g in self.reached]
        return missing, stale


AnyExploration = Exploration[Any, Any, Any]


@dataclass(frozen=True)
class _Props:
    """The `sometimes` and `always` properties of one subject over one kind."""

    sometimes: list[Property]
    always: list[Property]

    @classmethod
    def of(cls, subject: SubjectName, over: Over) -> _Props:
        """Both lists for `subject` over states or steps."""
        return cls(
            sometimes=properties(subject, "sometimes", over),
            always=properties(subject, "always", over),
        )


@dataclass(frozen=True)
class _Checks:
    """The registry's properties of one subject, looked up once per exploration."""

    state: _Props
    step: _Props
    refusal: _Props

    @classmethod
    def of(cls, subject: SubjectName) -> _Checks:
        """State, step and refusal properties of `subject`."""
        return cls(
            state=_Props.of(subject, "state"),
            step=_Props.of(subject, "step"),
            refusal=_Props.of(subject, "refusal"),
        )


@dataclass
class _Search(Generic[BoundT, StateT, OpT]):
    """One exploration in progress: the space, the result so far, the frontier."""

    space: Space[BoundT, StateT, OpT]
    result: Exploration[BoundT, StateT, OpT]
    checks: _Checks
    stop: bool  # end at the first violated property
    frontier: deque[int] = field(default_factory=deque)

    def run(self) -> Exploration[BoundT, StateT, OpT]:
        """Expand nodes breadth-first until none is left (or a violation, if asked)."""
        bound, graph = self.space.bound, self.result.graph
        graph.add_node(0, depth=0)
        if self.check_state(self.space.root, 0, None) and self.stop:
            return self.result
        self.frontier.append(0)
        for _ in range(bound.states_max):  # each iteration expands one node
            if not self.frontier:
                return self.result
            node = self.frontier.popleft()
            depth = graph.nodes[node]["depth"]
            if depth == bound.depth_max:
                self.result.horizon_states += 1
                continue
            if self.expand(node, depth):
                return self.result
        if self.frontier:
            self.refuse()
        return self.result

    def refuse(self) -> NoReturn:
        """Raise: the bound holds more than `states_max` states."""
        bound = self.space.bound
        raise ExplorationCapError(
            f"bound {bound.name}: more than states_max={bound.states_max} states"
        )

    def expand(self, node: int, depth: int) -> bool:
        """Add `node`'s out-edges; True if the search should stop."""
        result = self.result
        for transition in self.space.successors(result.states[node]):
            if transition is None:
                result.excluded += 1
                continue
            target = result.ids.get(transition.after)
            new = target is None
            if target is None:
                target = self.add_node(transition.after, node, transition.op, depth)
            result.graph.add_edge(
                node,
                target,
                key=transition.op,
                outcome=transition.outcome,
                **dict(transition.labels),
            )
            via = (node, transition.op)
            props = self.checks.refusal if transition.refused else self.checks.step
            failed = transition.step is not None and self.check(
                props, transition.step, depth + 1, via
            )
            if new:
                failed = self.check_state(transition.after, depth + 1, via) or failed
            if failed and self.stop:
                return True
        return False

    def add_node(self, state: StateT, parent: int, op: OpT, depth: int) -> int:
        """Number a newly discovered state and queue it for expansion."""
        result = self.result
        if len(result.states) >= self.space.bound.states_max:
            self.refuse()
        node = len(result.states)
        result.states.append(state)
        result.ids[state] = node
        result.parent.append((parent, op))
        result.graph.add_node(node, depth=depth + 1)
        self.frontier.append(node)
        return node

    def check_state(
        self, state: StateT, depth: int, via: tuple[int, OpT] | None
    ) -> bool:
        """Check state properties on a new node; True if one is violated."""
        view = self.space.state_view(state)
        if view is None:
            return False
        return self.check(self.checks.state, view, depth, via)

    def check(
        self,
        props: _Props,
        value: object,
        depth: int,
        via: tuple[int, OpT] | None,
    ) -> bool:
        """Record goals `value` meets and violations it shows; True if violated.

        `via` is the last edge (source node, operation) of the path that led
        here; the path itself is spelled out only for a violation.
        """
        result = self.result
        for prop in props.sometimes:
            if prop.name not in result.reached and prop.predicate(value):
                result.reached[prop.name] = depth
        failed = False
        for prop in props.always:
            holds = prop.predicate(value)
            assert prop.antecedent is not None
            relevant = prop.antecedent.predicate(value)
            if not holds and not relevant and prop.name not in result.misdeclared:
                result.misdeclared.append(prop.name)
            if not holds or relevant:
                name = prop.name
                result.non_vacuous[name] = result.non_vacuous.get(name, 0) + 1
                if prop.boundary is not None and prop.boundary.predicate(value):
                    result.at_boundary[name] = result.at_boundary.get(name, 0) + 1
            if not holds:
                failed = True
                if all(v.prop != prop.name for v in result.violations):
                    result.violations.append(Violation(prop.name, self.path(via)))
        return failed

    def path(self, via: tuple[int, OpT] | None) -> tuple[OpT, ...]:
        """The operations from the root through the edge `via` (none for the root)."""
        if via is None:
            return ()
        node, op = via
        return (*self.result.ops_to(node), op)


def explore_space(
    space: Space[BoundT, StateT, OpT], stop_at_first_violation: bool = False
) -> Exploration[BoundT, StateT, OpT]:
    """Enumerate every state of `space` within its bound, checking properties.

    With `stop_at_first_violation`, the search ends at the first violated
    property; breadth-first order makes its path a shortest counterexample.
    """
    result: Exploration[BoundT, StateT, OpT] = Exploration(
        bound=space.bound,
        graph=nx.MultiDiGraph(name=space.bound.name),
        states=[space.root],
        ids={space.root: 0},
        parent=[None],
        violations=[],
        goals=space.goals,
        subject=space.subject,
    )
    search = _Search(space, result, _Checks.of(space.subject), stop_at_first_violation)
    return search.run()
