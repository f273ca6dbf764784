"""The replica-network machine: two or three tables exchanging updates.

Each replica is a real table (or whatever `factory` builds) with its own
reference model in lockstep; each enables replication with its own writer id.
Hypothesis drives local traffic on any replica, one shared clock, and a
network that delivers, drops, duplicates, reorders, delays (leaves in flight)
and partitions. `heal_and_flush` heals everything, delivers everything, runs
one anti-entropy round, and the catalogue's `replicas_agree_after_a_heal_and_flush`
checks agreement. Preconditions and drawn values depend on the models and the
network only.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import initialize

from model.affinity.ops import (
    Abort,
    Acquire,
    Commit,
    EnableReplication,
    Invalidate,
    Join,
    Release,
)
from model.affinity.table import (
    AffinityState,
    Binding,
    InitHandle,
    LeaseHandle,
    reaper_period_ns,
)
from model.affinity.types import (
    MILLISECOND_NS,
    AffinityConfig,
    Bound,
    Initialize,
    Mode,
    Target,
)
from model.replica.network import COUNTS, NetworkState
from model.replica.ops import (
    AdvanceAll,
    Deliver,
    Drop,
    Duplicate,
    Heal,
    HealAndFlush,
    Local,
    NetworkOp,
    Partition,
)
from stateful import stats
from stateful.affinity_machine import TTL_NS_CHOICES, pins, targets
from stateful.affinity_subject import CrateFactory
from stateful.machine import (
    DRAW,
    DifferentialMachine,
    Draw,
    precondition,
    rule,
    run_and_check,
)
from stateful.replica_subject import (
    ReplicaNetworkHarness,
    ReplicaSetup,
    ReplicaSubject,
)

NETWORK_SESSION_POOL = ("a", "b", "c")
"""Few ids, so that replicas bind the same session independently."""
NETWORK_ENTRIES_CHOICES = (1, 2, 3)
"""Below the pool's size a replica can be full; at it, never."""
REPLICA_COUNTS = (2, 3)
STEPS_BETWEEN_FLUSHES_MIN = 6
"""A flush waits for this many network steps since the last one (or the start),
so that programs build up disorder (delays, losses, expiries) between checks."""
WRITER_IDS = (1, 2, 3)
"""Distinct per replica; drawn in any order, so the tie-break varies."""

sessions = st.sampled_from(NETWORK_SESSION_POOL)
network_configs = st.builds(
    AffinityConfig,
    ttl_ns=st.sampled_from(TTL_NS_CHOICES),
    mode=st.sampled_from(Mode),
    max_entries=st.sampled_from(NETWORK_ENTRIES_CHOICES),
    max_session_id_bytes=st.just(256),
)

Link = tuple[int, int]


def _zero_counts() -> dict[str, int]:
    """The network's counts, and programs by replica count, all zero."""
    programs = [f"programs_of_{replicas}_replicas" for replicas in REPLICA_COUNTS]
    return dict.fromkeys([*COUNTS, *programs], 0)


class ReplicaNetworkMachine(DifferentialMachine):
    """Replicas in lockstep with their models, over a network Hypothesis controls."""

    subject = ReplicaSubject
    factory: ClassVar[CrateFactory | None] = None
    network_counts: ClassVar[dict[str, int]] = _zero_counts()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every machine class counts its messages on its own."""
        super().__init_subclass__(**kwargs)
        cls.network_counts = _zero_counts()

    def __init__(self) -> None:
        """No network until `build`; no flush yet."""
        super().__init__()
        self.last_flush_step = 0

    def _harness(self) -> ReplicaNetworkHarness:
        assert self.harness is not None
        harness: ReplicaNetworkHarness = self.harness
        return harness

    def _state(self) -> NetworkState:
        state: NetworkState = self._harness().model.state()
        return state

    def _tables(self) -> list[AffinityState]:
        return [table.state() for table in self._harness().model.tables]

    def _local(self, rule_name: str, replica: int, call: Any) -> Any:
        """Run `call` on one replica; the model's outcome."""
        return self._run(rule_name, Local(replica, call)).expected.calls[-1].outcome

    def teardown(self) -> None:
        """Add this program's network counts to the machine's."""
        if self.harness is not None:
            counts = type(self).network_counts
            for name, count in self._harness().network.counts.items():
                counts[name] = counts.get(name, 0) + count
            replicas = self._harness().setup.replicas
            counts[f"programs_of_{replicas}_replicas"] += 1

    # ---- guards (models and network only) ---------------------------------

    def _handles(self, *kinds: type) -> list[tuple[int, int]]:
        """(replica, handle) of every live handle of these kinds."""
        return [
            (replica, number)
            for replica, state in enumerate(self._tables())
            for number, handle in state.handles
            if isinstance(handle, kinds)
        ]

    def _holds(self) -> list[tuple[int, int]]:
        return [
            (replica, number)
            for replica, state in enumerate(self._tables())
            for number, handle in state.handles
            if isinstance(handle, InitHandle)
            or (isinstance(handle, LeaseHandle) and handle.hold_target is not None)
        ]

    def has_holds(self) -> bool:
        """Some replica has a live initialization or bound hold."""
        return bool(self._holds())

    def has_initializations(self) -> bool:
        """Some replica has a live initialization."""
        return bool(self._handles(InitHandle))

    def has_leases(self) -> bool:
        """Some replica has a live bound hold or lease."""
        return bool(self._handles(LeaseHandle))

    def _messages(self, *, oldest: bool | None, up: bool) -> list[tuple[Link, int]]:
        """(link, position) of messages in flight: oldest only, newer only, or any."""
        return [
            ((link.source, link.dest), position)
            for link in self._state().links
            if not (up and link.cut)
            for position in range(len(link.in_flight))
            if oldest is None or oldest == (position == 0)
        ]

    def has_deliverable(self) -> bool:
        """A message waits at the head of a link that is up."""
        return bool(self._messages(oldest=True, up=True))

    def has_reorderable(self) -> bool:
        """A message waits behind another on a link that is up."""
        return bool(self._messages(oldest=False, up=True))

    def has_messages(self) -> bool:
        """Some message is in flight."""
        return bool(self._messages(oldest=None, up=False))

    def _pairs(self, *, cut: bool) -> list[Link]:
        return [
            (link.source, link.dest)
            for link in self._state().links
            if link.source < link.dest and link.cut == cut
        ]

    def has_up_pair(self) -> bool:
        """Two replicas are connected."""
        return bool(self._pairs(cut=False))

    def has_cut_pair(self) -> bool:
        """Two replicas are partitioned."""
        return bool(self._pairs(cut=True))

    def _replica(self, data: Draw) -> int:
        return data.draw(
            st.sampled_from(range(self._harness().setup.replicas)), label="replica"
        )

    # ---- setup --------------------------------------------------------------

    @initialize(
        config=network_configs,
        replicas=st.sampled_from(REPLICA_COUNTS),
        writers=st.permutations(WRITER_IDS),
    )
    def build(self, config: AffinityConfig, replicas: int, writers: list[int]) -> None:
        """Build every replica's model and table; each replicates as its own writer."""
        setup = ReplicaSetup(config, replicas, NETWORK_SESSION_POOL)
        self._start(ReplicaNetworkHarness(setup, type(self).factory))
        note(f"config: {config}, {replicas} replicas, writers {writers[:replicas]}")
        for replica in range(replicas):
            self._run("build", Local(replica, EnableReplication(writers[replica])))

    # ---- local traffic ------------------------------------------------------

    @rule(data=DRAW, session_id=sessions, requested=pins)
    def acquire(self, data: Draw, session_id: str, requested: Any) -> None:
        """Acquiring on a replica gives the same step on its model and table."""
        self._local("acquire", self._replica(data), Acquire(session_id, requested))

    @rule(
        data=DRAW,
        session_id=sessions,
        dispatched=targets,
        then=st.sampled_from(("keep", "release")),
    )
    def request_turn(
        self, data: Draw, session_id: str, dispatched: Target, then: str
    ) -> None:
        """A whole turn on a replica (acquire, commit, maybe release) agrees."""
        self._turn("request_turn", self._replica(data), session_id, dispatched, then)

    @rule(
        data=DRAW,
        session_id=sessions,
        first_to=targets,
        second_to=targets,
        then=st.sampled_from(("keep", "release")),
    )
    def racing_replicas(
        self,
        data: Draw,
        session_id: str,
        first_to: Target,
        second_to: Target,
        then: str,
    ) -> None:
        """Two replicas each take a turn on one session before either hears of it.

        The first request of a session can reach two routers at once; each
        binds it locally, often at the same sequence, and only the writer id
        orders the two versions.
        """
        replicas = range(self._harness().setup.replicas)
        first, second = data.draw(
            st.permutations(replicas).map(lambda order: order[:2]), label="replicas"
        )
        for replica, dispatched in ((first, first_to), (second, second_to)):
            self._turn("racing_replicas", replica, session_id, dispatched, then)

    def _turn(
        self,
        rule_name: str,
        replica: int,
        session_id: str,
        dispatched: Target,
        then: str,
    ) -> None:
        """Acquire, commit where dispatched, release if asked (as far as allowed)."""
        step = self._local(rule_name, replica, Acquire(session_id, None)).value
        if isinstance(step, Initialize | Bound):
            lease = self._local(rule_name, replica, Commit(step.handle, dispatched))
            if then == "release" and isinstance(lease.value, int):
                self._local(rule_name, replica, Release(lease.value))

    @rule(data=DRAW, session_id=sessions, bind_to=targets)
    def join(self, data: Draw, session_id: str, bind_to: Target) -> None:
        """Joining an initialization on a replica agrees."""
        self._local("join", self._replica(data), Join(session_id, bind_to))

    @precondition(has_holds)
    @rule(data=DRAW, dispatched=targets)
    def commit(self, data: Draw, dispatched: Target) -> None:
        """Committing a hold on its replica agrees."""
        replica, handle = data.draw(st.sampled_from(self._holds()), label="hold")
        self._local("commit", replica, Commit(handle, dispatched))

    @precondition(has_initializations)
    @rule(data=DRAW)
    def abort(self, data: Draw) -> None:
        """Dropping an initialization on its replica agrees."""
        replica, handle = data.draw(
            st.sampled_from(self._handles(InitHandle)), label="init"
        )
        self._local("abort", replica, Abort(handle))

    @precondition(has_leases)
    @rule(data=DRAW)
    def release(self, data: Draw) -> None:
        """Releasing a lease restarts the TTL and publishes, alike."""
        replica, handle = data.draw(
            st.sampled_from(self._handles(LeaseHandle)), label="lease"
        )
        self._local("release", replica, Release(handle))

    @precondition(has_leases)
    @rule(data=DRAW)
    def invalidate(self, data: Draw) -> None:
        """Invalidating removes the binding on that replica only, alike."""
        replica, handle = data.draw(
            st.sampled_from(self._handles(LeaseHandle)), label="lease"
        )
        self._local("invalidate", replica, Invalidate(handle))

    # ---- the shared clock ---------------------------------------------------

    @rule(data=DRAW)
    def advance(self, data: Draw) -> None:
        """Every replica's clock moves to one time (deadlines, ticks, in flight)."""
        now_ns = data.draw(st.sampled_from(self._clock_targets()), label="now_ns")
        self._run("advance", AdvanceAll(now_ns))

    def _clock_targets(self) -> list[int]:
        state = self._state()
        first = state.replicas[0]
        now_ns, ttl_ns = first.now_ns, first.config.ttl_ns
        period_ns = reaper_period_ns(ttl_ns)
        next_tick_ns = (now_ns // period_ns + 1) * period_ns
        candidates = {
            now_ns + 1,
            now_ns + MILLISECOND_NS,
            now_ns + ttl_ns,
            now_ns + 3 * ttl_ns,
            next_tick_ns - 1,
            next_tick_ns,
            next_tick_ns + 1,
        }
        for table in state.replicas:
            for _, entry in table.entries:
                if isinstance(entry, Binding):
                    candidates |= {entry.deadline_ns, entry.deadline_ns + 1}
        for message in state.in_flight():
            candidates.add(message.sent_ns + ttl_ns)  # expires while in flight
        return sorted(c for c in candidates if c > now_ns)

    # ---- the network --------------------------------------------------------

    def _network(self, rule_name: str, op: NetworkOp) -> None:
        self._run(rule_name, op)

    @precondition(has_deliverable)
    @rule(data=DRAW)
    def deliver(self, data: Draw) -> None:
        """The oldest message on a link arrives; the receiver applies it, alike."""
        (source, dest), position = data.draw(
            st.sampled_from(self._messages(oldest=True, up=True)), label="message"
        )
        self._network("deliver", Deliver(source, dest, position))

    @precondition(has_reorderable)
    @rule(data=DRAW)
    def deliver_out_of_order(self, data: Draw) -> None:
        """A message overtakes an older one on its link, alike."""
        (source, dest), position = data.draw(
            st.sampled_from(self._messages(oldest=False, up=True)), label="message"
        )
        self._network("deliver_out_of_order", Deliver(source, dest, position))

    @precondition(has_deliverable)
    @rule(data=DRAW)
    def duplicate(self, data: Draw) -> None:
        """A copy of a message arrives and the message stays in flight, alike."""
        (source, dest), position = data.draw(
            st.sampled_from(self._messages(oldest=None, up=True)), label="message"
        )
        self._network("duplicate", Duplicate(source, dest, position))

    @precondition(has_messages)
    @rule(data=DRAW)
    def drop(self, data: Draw) -> None:
        """A message is lost."""
        (source, dest), position = data.draw(
            st.sampled_from(self._messages(oldest=None, up=False)), label="message"
        )
        self._network("drop", Drop(source, dest, position))

    @precondition(has_up_pair)
    @rule(data=DRAW)
    def partition(self, data: Draw) -> None:
        """Two replicas are cut apart: what they send each other is lost."""
        first, second = data.draw(st.sampled_from(self._pairs(cut=False)), label="pair")
        self._network("partition", Partition(first, second))

    @precondition(has_cut_pair)
    @rule(data=DRAW)
    def heal(self, data: Draw) -> None:
        """A partition heals; held messages can be delivered again."""
        first, second = data.draw(st.sampled_from(self._pairs(cut=True)), label="pair")
        self._network("heal", Heal(first, second))

    def may_flush(self) -> bool:
        """Enough network steps ran since the last flush for it to find disorder."""
        harness = self._harness()
        return harness.steps - self.last_flush_step >= STEPS_BETWEEN_FLUSHES_MIN

    @precondition(may_flush)
    @rule()
    def heal_and_flush(self) -> None:
        """Heal, deliver everything, re-publish live bindings: the replicas agree."""
        self._network("heal_and_flush", HealAndFlush())
        self.last_flush_step = self._harness().steps


def run_network_and_check(machine: type[ReplicaNetworkMachine], name: str) -> None:
    """`run_and_check`, then record and print what the network did."""
    machine.network_counts = _zero_counts()
    try:
        run_and_check(machine, name, ("runtime", "runtime_reaper"))
    finally:
        stats.record_network(name, machine.network_counts)
    for count, value in sorted(machine.network_counts.items()):
        print(f"network {count}: {value}")
