"""Affinity replicas over a faulty network, as a subject of the harness.

A network of N replicas is N affinity tables, each with its own reference
model in lockstep: every replica is an `AffinityHarness` (model and system
under test, compared after every call exactly as the single-table machine
compares them), and the network between them (`model.replica.network`) is
shared by both sides -- it is the environment, not under test. What a
replica's *model* publishes is what the network carries; the system under
test's publications are compared with the model's by `states_agree` at the
same call.

A network step (`model.replica.ops`) makes zero or more table calls, chosen
from the reference models and the network only, so a call that fails a check
does not change which calls follow (the models and the network evolve as in
the recording, whatever the system under test does). The step's report holds
them all in order: the outcome is the sequence of calls with each side's
answer, the views are each called replica's observations.
After a complete `HealAndFlush` every replica is observed once more on both
sides, so the agreement the catalogue checks on the models is also the
crate's. The network's own properties (subject `replica`) are evaluated on
`NetworkState` snapshots before and after the step; the affinity properties
are evaluated by each replica's harness on every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from model.affinity.api import AffinityApi
from model.affinity.ops import (
    Acquire,
    Advance,
    ApplyReplica,
    Op,
    Outcome,
    Release,
    outcome_of,
)
from model.affinity.table import Binding, ModelAffinity, WaiterHandle
from model.affinity.types import AffinityConfig, Bound
from model.replica.network import IN_FLIGHT_MAX, REPLICAS_MAX, Network, NetworkState
from model.replica.ops import (
    AdvanceAll,
    Call,
    Deliver,
    Drop,
    Duplicate,
    Heal,
    HealAndFlush,
    Local,
    NetworkOp,
    NetworkOutcome,
    Partition,
)
from properties.affinity.network import replicated_sessions
from properties.registry import Step, SubjectName
from stateful.affinity_subject import (
    AffinityHarness,
    CrateFactory,
    Observation,
    observe,
    view_difference,
)
from stateful.harness import Harness, StepReport, Subject, evaluate_all

FLUSH_DELIVERIES_MAX: Final[int] = IN_FLIGHT_MAX * REPLICAS_MAX
"""A flush delivers at most this many messages; more raises, never truncates."""

Views = tuple[tuple[int, Observation], ...]


@dataclass(frozen=True)
class ReplicaSetup:
    """What a network program runs on: one configuration for every table."""

    config: AffinityConfig
    replicas: int
    session_pool: tuple[str, ...]


class NetworkModel:
    """The reference side of a network: each replica's model, and the links."""

    def __init__(self, tables: Sequence[ModelAffinity], network: Network) -> None:
        """Replica `i` is `tables[i]`."""
        self.tables = tuple(tables)
        self.network = network

    def state(self) -> NetworkState:
        """Every replica's frozen state and every link."""
        return self.network.state([table.state() for table in self.tables])


def _first_difference(model_view: Views, crate_view: Views) -> str:
    """The first replica whose observations differ, and how, in one line."""
    for (replica, expected), (_, actual) in zip(model_view, crate_view, strict=True):
        if expected != actual:
            return f"replica {replica}: {view_difference(expected, actual)}"
    return "the observations differ in length"


class ReplicaSubject(Subject[AffinityConfig, NetworkOp]):
    """`replicas` `SessionAffinity` tables of one configuration, and their network."""

    name: ClassVar[SubjectName] = "replica"

    def __init__(self, replicas: int, session_pool: Sequence[str]) -> None:
        """Build `replicas` tables; observe these sessions on every one."""
        self.replicas = replicas
        self.session_pool = tuple(session_pool)

    def new_model(self, config: AffinityConfig) -> NetworkModel:
        """Fresh reference tables, one per replica, and empty links."""
        tables = [ModelAffinity(config) for _ in range(self.replicas)]
        return NetworkModel(tables, Network(self.replicas))

    def crate_factory(self) -> CrateFactory:
        """Each replica's table: `impl.adapter.CrateAffinity`."""
        from impl.adapter import CrateAffinity  # noqa: PLC0415 - only when selected

        return CrateAffinity

    def model_factory(self) -> CrateFactory:
        """Each replica's table: a second `ModelAffinity`."""
        return ModelAffinity

    def outcome(self, api: Any, op: Any) -> Outcome:
        """One table call's outcome: what every network step is made of."""
        return outcome_of(api, op)

    def snapshot(self, model: Any) -> NetworkState:
        """Every replica's reference state and every link."""
        state: NetworkState = model.state()
        return state

    def observe(self, api: Any, snapshot: Any) -> Views:
        """Every replica's observation; `api` holds one table per replica."""
        tables: Sequence[AffinityApi] = api
        views = []
        for replica, (table, state) in enumerate(
            zip(tables, snapshot.replicas, strict=True)
        ):
            waiters = sorted(
                number
                for number, handle in state.handles
                if isinstance(handle, WaiterHandle)
            )
            views.append((replica, observe(table, self.session_pool, waiters)))
        return tuple(views)

    def difference(self, model_view: Any, crate_view: Any) -> str:
        """The first replica whose observations differ."""
        return _first_difference(model_view, crate_view)


def _outcomes(
    done: Sequence[tuple[int, StepReport[Op]]], refused: str
) -> tuple[NetworkOutcome, NetworkOutcome]:
    """The model's and the system's outcome of a step's calls.

    Where they differ, each names the first call that differs (and its place)
    when printed, so a long flush reads as the one call that went wrong.
    """
    expected = tuple(Call(r, report.op, report.expected) for r, report in done)
    actual = tuple(Call(r, report.op, report.actual) for r, report in done)
    for place, (wanted, got) in enumerate(zip(expected, actual, strict=True), 1):
        if wanted != got:
            where = f"call {place} of {len(done)}: "
            return (
                NetworkOutcome(expected, refused, shown=where + str(wanted)),
                NetworkOutcome(actual, refused, shown=where + str(got)),
            )
    return NetworkOutcome(expected, refused), NetworkOutcome(actual, refused)


class ReplicaNetworkHarness(Harness[AffinityConfig, NetworkOp]):
    """N replica harnesses in lockstep, and the one network between them.

    `factory` builds each replica's system under test from the shared
    configuration, as it builds the single table of an `AffinityHarness`.
    """

    def __init__(
        self,
        setup: ReplicaSetup,
        factory: CrateFactory | None = None,
        check_states: bool = True,
    ) -> None:
        """Build every replica's model and table at clock time 0."""
        self.setup = setup
        subject = ReplicaSubject(setup.replicas, setup.session_pool)
        super().__init__(subject, setup.config, factory, check_states)

    def _build(self) -> None:
        assert self.factory is not None
        setup = self.setup
        self.model = self.subject.new_model(setup.config)
        self.replicas = tuple(
            AffinityHarness(
                setup.config, setup.session_pool, self.factory, self.check_states
            )
            for _ in range(setup.replicas)
        )
        for replica, table in zip(self.replicas, self.model.tables, strict=True):
            replica.model = table  # the network model's reference table
        self.crate = tuple(replica.crate for replica in self.replicas)
        self._done: list[tuple[int, StepReport[Op]]] = []

    @property
    def network(self) -> Network:
        """The links between the replicas."""
        network: Network = self.model.network
        return network

    # ---- one network step --------------------------------------------------

    def step(self, op: NetworkOp) -> StepReport[NetworkOp]:
        """Carry out `op`: each table call in lockstep, then the network's checks."""
        self.ops.append(op)
        before = self.subject.snapshot(self.model)
        self._done = []
        refused = self._carry_out(op)
        after = self.subject.snapshot(self.model)
        done = self._done
        model_view: Views = tuple(
            (replica, report.model_view) for replica, report in done
        )
        crate_view: Views = tuple(
            (replica, report.crate_view) for replica, report in done
        )
        if isinstance(op, HealAndFlush) and self.check_states:
            model_view += self.subject.observe(self.model.tables, after)
            crate_view += self.subject.observe(self.crate, after)
        expected, actual = _outcomes(done, refused)
        violations = [name for _, report in done for name in report.violations]
        goals = [name for _, report in done for name in report.reached]
        network_step = Step(before, op, expected, after)
        checked = evaluate_all("replica", [("state", after), ("step", network_step)])
        self.steps += 1
        return StepReport(
            index=self.steps,
            op=op,
            expected=expected,
            actual=actual,
            model_view=model_view,
            crate_view=crate_view,
            violations=(*violations, *checked.violated),
            reached=(*goals, *checked.reached),
            difference_of=self.subject.difference,
            evaluated=checked.evaluated,
            exercised=checked.exercised,
            at_boundary=checked.at_boundary,
            misdeclared=checked.misdeclared,
        )

    def _call(self, replica: int, call: Op) -> StepReport[Op]:
        """One table call through the replica's harness; its publications go out."""
        harness = self.replicas[replica]
        harness.check_states = self.check_states
        report: StepReport[Op] = harness.step(call)
        self.network.counts["calls"] += 1
        self._done.append((replica, report))
        published = report.model_view.published
        table = self.model.tables[replica]
        if published:
            state = table.state()
            for update in published:
                entry = state.entry(update.session_id)
                if not isinstance(entry, Binding) or entry.version != update.version:
                    self.network.counts["superseded"] += 1
        self.network.send(replica, published, table.now_ns)
        return report

    def _carry_out(self, op: NetworkOp) -> str:  # noqa: C901 - one case per operation
        """Make the step's table calls; the network's refusal, or ''."""
        network = self.network
        match op:
            case Local(replica, call):
                if not 0 <= replica < network.replicas:
                    return f"no replica {replica}"
                self._call(replica, call)
            case AdvanceAll(now_ns):
                for replica in range(network.replicas):
                    self._call(replica, Advance(now_ns))
            case Deliver(source, dest, position) | Duplicate(source, dest, position):
                if network.message(source, dest, position) is None:
                    return f"no message at position {position} on {source}->{dest}"
                if network.is_cut(source, dest):
                    return f"the link {source}->{dest} is cut"
                if isinstance(op, Deliver):
                    message = network.take(source, dest, position)
                else:
                    message = network.copy_delivered(source, dest, position)
                network.counts["delivered"] += 1
                self._call(
                    dest,
                    ApplyReplica(message.session_id, message.target, message.version),
                )
            case Drop(source, dest, position):
                if network.message(source, dest, position) is None:
                    return f"no message at position {position} on {source}->{dest}"
                network.take(source, dest, position)
                network.counts["dropped"] += 1
            case Partition(first, second) | Heal(first, second):
                if not network.has_link(first, second):
                    return f"no link between {first} and {second}"
                if isinstance(op, Partition):
                    network.cut(first, second)
                else:
                    network.heal(first, second)
            case HealAndFlush():
                self._heal_and_flush()
        return ""

    def _heal_and_flush(self) -> None:
        """Heal, deliver everything, re-publish every live binding, deliver again."""
        network = self.network
        network.counts["flushes"] += 1
        network.heal_all()
        self._deliver_everything()
        for replica, table in enumerate(self.model.tables):
            state = table.state()
            for session_id, entry in state.entries:
                if not isinstance(entry, Binding) or state.is_expired(entry):
                    continue
                taken = self._call(replica, Acquire(session_id, None)).expected
                if isinstance(taken.value, Bound):
                    self._call(replica, Release(taken.value.handle))
        self._deliver_everything()
        network.counts["convergence_checks"] += 1
        if replicated_sessions(self.model.state()):
            network.counts["convergence_checks_non_vacuous"] += 1

    def _deliver_everything(self) -> None:
        """Deliver every message in flight, link by link, oldest first."""
        network = self.network
        for _ in range(FLUSH_DELIVERIES_MAX):
            link = network.oldest()
            if link is None:
                return
            message = network.take(*link, 0)
            network.counts["flush_deliveries"] += 1
            self._call(
                message.dest,
                ApplyReplica(message.session_id, message.target, message.version),
            )
        raise RuntimeError(f"a flush delivered more than {FLUSH_DELIVERIES_MAX}")
