"""The replica trace kind: programs of affinity replicas over a faulty network.

Subject keys (beside the envelope of `ci/replay/envelope.py`):

    config        one table configuration for every replica, as in an affinity
                  trace (`ci/replay/affinity.py`)
    replicas      how many replicas (2 to `model.replica.network.REPLICAS_MAX`);
                  replica i is numbered i from 0
    session_pool  the session ids observed on every replica after every call

Each step:

    op        {"op": <model.replica.ops class name>, <field>: <value>, ...}; a
              `Local` step carries its table call as an affinity operation:
              {"op": "Local", "replica": 0, "call": {"op": "Acquire", ...}}
    expected  {"calls": [{"replica": r, "op": <affinity operation>,
              "outcome": <affinity outcome>}, ...], "refused": text}: every
              table call the step made, in order, with the reference model's
              answer; `refused` is the network's refusal ("" when none)
    model     {"replicas": [<affinity projection>, ...], "links": [{"source",
              "dest", "cut", "in_flight": [{"number", "session_id", "target",
              "version", "sent_ns", "deliveries"}, ...]}, ...]}

Replay runs the program through `stateful.replica_subject.ReplicaNetworkHarness`,
so `--against`, `--canary` (a replica canary, or any affinity canary, as every
replica's table) and minimization work as for the other kinds. There is no Rust
export of a network trace yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

from ci.inputs import expect_bool, expect_int, expect_list, expect_object, expect_str
from ci.replay.affinity import KIND as AFFINITY_KIND
from ci.replay.affinity import OPS as AFFINITY_OPS
from ci.replay.affinity import OUTCOMES as AFFINITY_OUTCOMES
from ci.replay.affinity import (
    TYPE_CODECS,
    AffinitySetup,
    Projection,
    decode_config,
    decode_projection,
    decode_session_pool,
    encode_config,
    encode_projection,
    project,
)
from ci.replay.affinity import created_handle as table_created_handle
from ci.replay.affinity import used_handle as table_used_handle
from ci.replay.codec import Codec, OpCodec, dataclass_codec
from ci.replay.envelope import TraceError
from ci.replay.trace import Factory, Trace, TraceKind
from model.affinity.ops import Abort, Commit, Invalidate, Outcome, PollWaiter, Release
from model.affinity.table import ModelAffinity
from model.replica.network import REPLICAS_MAX, LinkState, Message
from model.replica.ops import NETWORK_OP_TYPES, Call, Local, NetworkOp, NetworkOutcome
from stateful.replica_subject import NetworkModel, ReplicaNetworkHarness, ReplicaSetup

SUBJECT: Final[str] = "replica"
SUBJECT_KEYS: Final[frozenset[str]] = frozenset({"config", "replicas", "session_pool"})


# ---- operations ----------------------------------------------------------------


_LOCAL_KEYS: Final[frozenset[str]] = frozenset({"op", "replica", "call"})


class NetworkOpCodec(OpCodec):
    """Network operations by class name; a `Local` step's call as an affinity op."""

    def __init__(self) -> None:
        """Field codecs of every network operation but `Local`, which is nested."""
        super().__init__([op for op in NETWORK_OP_TYPES if op is not Local], {})
        self.by_name[Local.__name__] = Local

    def encode(self, op: Any) -> dict[str, Any]:
        """`{"op": "Local", "replica": r, "call": {...}}`, or the plain encoding."""
        if isinstance(op, Local):
            return {
                "op": "Local",
                "replica": op.replica,
                "call": AFFINITY_OPS.encode(op.call),
            }
        return super().encode(op)

    def decode(self, value: object, where: str) -> Any:
        """A network operation, its fields (and a nested call) checked by type."""
        if not (isinstance(value, dict) and value.get("op") == "Local"):
            return super().decode(value, where)
        raw = expect_object(value, f"{where}: Local", _LOCAL_KEYS)
        return Local(
            replica=expect_int(raw["replica"], f"{where}: Local.replica"),
            call=AFFINITY_OPS.decode(raw["call"], f"{where}: Local.call"),
        )


OPS: Final[NetworkOpCodec] = NetworkOpCodec()


# ---- outcomes ------------------------------------------------------------------

_CALL_KEYS: Final[frozenset[str]] = frozenset({"replica", "op", "outcome"})


def encode_outcome(outcome: NetworkOutcome) -> dict[str, Any]:
    """`{"calls": [...], "refused": text}`."""
    encode_table_outcome, _ = AFFINITY_OUTCOMES
    return {
        "calls": [
            {
                "replica": call.replica,
                "op": AFFINITY_OPS.encode(call.op),
                "outcome": encode_table_outcome(call.outcome),
            }
            for call in outcome.calls
        ],
        "refused": outcome.refused,
    }


def decode_outcome(value: object, where: str) -> NetworkOutcome:
    """The inverse of `encode_outcome`, strictly."""
    _, decode_table_outcome = AFFINITY_OUTCOMES
    raw = expect_object(value, where, frozenset({"calls", "refused"}))
    calls = []
    for position, item in enumerate(expect_list(raw["calls"], f"{where}.calls")):
        place = f"{where}.calls[{position}]"
        call = expect_object(item, place, _CALL_KEYS)
        outcome: Outcome = decode_table_outcome(call["outcome"], f"{place}.outcome")
        calls.append(
            Call(
                replica=expect_int(call["replica"], f"{place}.replica"),
                op=AFFINITY_OPS.decode(call["op"], f"{place}.op"),
                outcome=outcome,
            )
        )
    refused = expect_str(raw["refused"], f"{where}.refused")
    return NetworkOutcome(tuple(calls), refused)


OUTCOMES: Final[Codec] = (encode_outcome, decode_outcome)


# ---- projection ----------------------------------------------------------------


@dataclass(frozen=True)
class NetworkProjection:
    """Every replica's projection and every link, after a step."""

    replicas: tuple[Projection, ...]
    links: tuple[LinkState, ...]


_LINK_KEYS: Final[frozenset[str]] = frozenset({"source", "dest", "cut", "in_flight"})
_MESSAGE_KEYS: Final[frozenset[str]] = frozenset(
    {"number", "session_id", "target", "version", "sent_ns", "deliveries"}
)


def encode_message(message: Message) -> dict[str, Any]:
    """A message in flight (its link says where from and to)."""
    encoded = asdict(message)
    del encoded["source"], encoded["dest"]
    return encoded


def encode_network_projection(projection: NetworkProjection) -> dict[str, Any]:
    """`{"replicas": [...], "links": [...]}`."""
    return {
        "replicas": [encode_projection(replica) for replica in projection.replicas],
        "links": [
            {
                "source": link.source,
                "dest": link.dest,
                "cut": link.cut,
                "in_flight": [encode_message(m) for m in link.in_flight],
            }
            for link in projection.links
        ],
    }


_MESSAGE: Final[Codec] = dataclass_codec(Message, TYPE_CODECS)


def _decode_message(value: object, where: str, source: int, dest: int) -> Message:
    """A message in flight, given the link it is on."""
    raw = expect_object(value, where, _MESSAGE_KEYS)
    message: Message = _MESSAGE[1](raw | {"source": source, "dest": dest}, where)
    return message


def decode_network_projection(value: object, where: str) -> NetworkProjection:
    """The inverse of `encode_network_projection`, strictly."""
    raw = expect_object(value, where, frozenset({"replicas", "links"}))
    replicas = tuple(
        decode_projection(item, f"{where}.replicas[{index}]")
        for index, item in enumerate(expect_list(raw["replicas"], f"{where}.replicas"))
    )
    links = []
    for index, item in enumerate(expect_list(raw["links"], f"{where}.links")):
        place = f"{where}.links[{index}]"
        link = expect_object(item, place, _LINK_KEYS)
        source = expect_int(link["source"], f"{place}.source")
        dest = expect_int(link["dest"], f"{place}.dest")
        messages = expect_list(link["in_flight"], f"{place}.in_flight")
        links.append(
            LinkState(
                source=source,
                dest=dest,
                cut=expect_bool(link["cut"], f"{place}.cut"),
                in_flight=tuple(
                    _decode_message(m, f"{place}.in_flight[{i}]", source, dest)
                    for i, m in enumerate(messages)
                ),
            )
        )
    return NetworkProjection(replicas, tuple(links))


# ---- the kind --------------------------------------------------------------------


def _used(op: NetworkOp) -> tuple[int, int] | None:
    """(replica, handle) a `Local` step consumes or reads, if any."""
    if not isinstance(op, Local):
        return None
    used = table_used_handle(op.call)
    return None if used is None else (op.replica, used)


def _created(op: NetworkOp, outcome: NetworkOutcome) -> tuple[int, int] | None:
    """(replica, handle) a `Local` step handed out, if any."""
    if not isinstance(op, Local) or len(outcome.calls) != 1:
        return None
    created = table_created_handle(op.call, outcome.calls[0].outcome)
    return None if created is None else (op.replica, created)


def _renumbered(op: Local, handle: int) -> Local:
    """`op` with its call's handle replaced."""
    if isinstance(op.call, PollWaiter):
        return Local(op.replica, replace(op.call, waiter=handle))
    assert isinstance(op.call, Commit | Abort | Release | Invalidate)
    return Local(op.replica, replace(op.call, handle=handle))


class ReplicaKind(TraceKind):
    """Traces of replica networks."""

    subject = SUBJECT
    noun = "network"
    setup_keys = SUBJECT_KEYS
    ops = OPS
    outcomes = OUTCOMES
    projections = (encode_network_projection, decode_network_projection)
    model = ModelAffinity
    crate = ("impl.adapter", "CrateAffinity")

    def encode_setup(self, setup: ReplicaSetup) -> dict[str, Any]:
        """`config`, `replicas` and `session_pool`."""
        return {
            "config": encode_config(setup.config),
            "replicas": setup.replicas,
            "session_pool": list(setup.session_pool),
        }

    def decode_setup(self, document: dict[str, Any]) -> ReplicaSetup:
        """A valid configuration, 2 to `REPLICAS_MAX` replicas, distinct ids."""
        replicas = expect_int(document["replicas"], "replicas")
        if not 2 <= replicas <= REPLICAS_MAX:
            raise TraceError(
                "replicas", f"expected 2 to {REPLICAS_MAX} replicas, got {replicas}"
            )
        return ReplicaSetup(
            decode_config(document["config"]),
            replicas,
            decode_session_pool(document["session_pool"]),
        )

    def project(self, model: Any) -> NetworkProjection:
        """Every replica's clock and entries, and every link."""
        network_model: NetworkModel = model
        state = network_model.state()
        return NetworkProjection(
            tuple(project(table) for table in state.replicas), state.links
        )

    def harness(self, setup: ReplicaSetup, factory: Factory) -> ReplicaNetworkHarness:
        """A `ReplicaNetworkHarness`; `factory` builds every replica's table."""
        return ReplicaNetworkHarness(setup, factory)

    def setup_from(self, subject: Any, config: Any) -> ReplicaSetup:
        """Not from a subject and a config: a network's setup is its harness's."""
        raise TypeError(
            f"a replica setup comes from its network harness, not {subject!r} "
            f"and {config!r}"
        )

    def setup_of(self, harness: Any) -> ReplicaSetup:
        """The setup a `ReplicaNetworkHarness` was built with."""
        setup: ReplicaSetup = harness.setup
        return setup

    def describe(self, setup: ReplicaSetup) -> str:
        """The replica count, the configuration and the observed ids."""
        table = AFFINITY_KIND.describe(AffinitySetup(setup.config, setup.session_pool))
        return f"{setup.replicas} replicas, each {table}"

    def canaries(self) -> Mapping[str, Factory]:
        """The replica canaries and the affinity ones (each builds every replica)."""
        from ci.canaries.affinity import CANARIES  # noqa: PLC0415 - needs the binding
        from ci.canaries.replica import CANARIES as REPLICA  # noqa: PLC0415 - idem

        return dict(sorted((CANARIES | REPLICA).items()))

    def show_op(self, op: Any) -> str:
        """A `Local` step as `r<replica> <call>`; the others as they are."""
        if isinstance(op, Local):
            return f"r{op.replica} {op.call!r}"
        return repr(op)

    def show_value(self, value: Any) -> str:
        """The calls a step made, each with its answer."""
        calls: tuple[Call, ...] = value
        return "; ".join(str(call) for call in calls) or "-"

    def rebuild(self, trace: Trace, keep: Sequence[int]) -> list[tuple[int, Any]]:
        """The kept steps as a program, each replica's handles renumbered.

        As for an affinity trace (`ci.replay.affinity.AffinityKind.rebuild`),
        per replica: a kept `Local` step using a handle whose creator was
        deleted goes too. Handles taken inside a flush are created and
        consumed there; the reference network, run over the kept program,
        says how they shift later numbers.
        """
        creators = {
            created
            for step in trace.steps
            if (created := _created(step.op, step.expected)) is not None
        }
        harness = ReplicaNetworkHarness(trace.setup, ModelAffinity, check_states=False)
        renumbered: dict[tuple[int, int], int] = {}
        program: list[tuple[int, Any]] = []
        for position in keep:
            step = trace.steps[position]
            op = step.op
            used = _used(op)
            if used is not None and used in creators:
                if used not in renumbered:
                    continue  # its creator was deleted: this step goes too
                op = _renumbered(op, renumbered[used])
            now = _created(op, harness.step(op).expected)
            original = _created(step.op, step.expected)
            if original is not None and now is not None:
                renumbered[original] = now[1]
            program.append((position, op))
        return program


KIND: Final[ReplicaKind] = ReplicaKind()
