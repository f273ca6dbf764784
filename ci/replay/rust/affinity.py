"""Affinity traces as Rust tests of `SessionAffinity`.

The test does what the binding (`impl/src/affinity.rs`) does, with the crate's
public API alone:

* The table is `SessionAffinity::with_config` inside a paused Tokio test
  (`start_paused`); the binding's table owns such a runtime too. After
  construction the test yields so the reaper task starts and anchors its first
  tick, as the binding's constructor does.
* Time moves as the binding's `advance_clock` moves it: a step (no timer can
  fire) to the next 1 ms grid point when the clock is off the grid, a
  `sleep_until` to the last grid point before the new time (every timer on the
  way fires at its own instant, the reaper's ticks included), then the
  sub-millisecond rest; each part followed by the same 16 yields.
* Handles are named locals, numbered as the trace numbers them: `init_1`
  (`AffinityInitialization`), `hold_3` (a bound `Hold`), `lease_2`
  (`AffinityLease`), `waiter_4` (the `Wait` future). An abort is
  `drop(init_1)`, a release `drop(lease_2)`; a waiter is polled once with a
  no-op waker, never awaited, so the test stays deterministic.
* Version sequences are pinned as the adapter pins them: the runtime table
  seeds its sequence from the wall clock, so the test observes `2^62` first
  and writes every sequence relative to it.

After each step come the assertions the model implies: the step's value or
error kind, then what the harness observes -- `entry_count`, and
`lease_count` and `query_target` of every session the steps name (the hooks
`entry_count`, `lease_count` and `next_version` need the crate's `testing`
feature: those lines end in `// testing`), the publications the replica
sink received, and each live waiter's completion. A step the binding refuses
before the crate is called (a consumed handle, a table already dropped, a
clock moved backwards) is a comment: Rust's ownership or Tokio's clock rules
it out.

Manual-clock tables (`with_manual_clock` / `advance_clock`) are written only
for a build the capability probe found them in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ci.replay.affinity import KIND, AffinitySetup, created_handle, used_handle
from ci.replay.rust.clock import clock_moves
from ci.replay.rust.emit import (
    CRATE,
    Capabilities,
    CapabilitiesSource,
    ExportError,
    RustTest,
    duration,
    header,
    one_line,
    rust_format_string,
    rust_int,
    rust_string,
    seconds,
    shown_str,
    str_expr,
    string_expr,
)
from ci.replay.trace import Trace
from model.affinity.ops import (
    Abort,
    Acquire,
    Advance,
    ApplyReplica,
    Commit,
    CrateAdvance,
    DropTable,
    EnableReplication,
    Invalidate,
    Join,
    NextVersion,
    ObserveSequence,
    Op,
    Outcome,
    PollWaiter,
    Query,
    Release,
)
from model.affinity.types import (
    ENTRIES_MAX_DEFAULT,
    REAPER_PERIOD_NS_MAX,
    SESSION_ID_BYTES_MAX_DEFAULT,
    U32_MAX,
    U64_MAX,
    Bound,
    Initialize,
    Mode,
    Published,
    Target,
    Version,
    Wait,
)
from stateful.affinity_subject import Observation, SessionView

AFFINITY: Final[str] = "dynamo_kv_router::services::selection::affinity"
SEQUENCE_OFFSET: Final[int] = 2**62
"""As the adapter's: crate sequence = trace sequence + 2^62."""
SETTLE_YIELDS: Final[int] = 16
"""The binding's `settle()`: yields after every clock move."""
BINDING_REFUSALS: Final[frozenset[str]] = frozenset({"HandleError", "Unsupported"})
"""Error kinds raised by the binding before the crate is called."""


@dataclass
class Local:
    """A handle as a named local of the test."""

    number: int
    kind: str  # init, hold, lease, waiter
    used: bool = False  # consumed or polled by a later step
    mutable: bool = False
    done_at: int = 0  # the step at which a waiter was found woken (0: not yet)
    polled_at: int = 0  # the step whose operation polled it last
    session_id: str = ""

    @property
    def name(self) -> str:
        """`init_1`, `hold_3`, `lease_2`, `waiter_4` (`_` first when never used)."""
        unused = "" if self.used or self.kind == "waiter" else "_"
        return f"{unused}{self.kind}_{self.number}"


def write(trace: Trace, name: str, capabilities: CapabilitiesSource) -> RustTest:
    """The affinity trace as one Rust test."""
    return AffinityWriter(trace, name, capabilities).write()


class AffinityWriter:
    """Writes one affinity trace, step by step, tracking the test's locals."""

    def __init__(
        self, trace: Trace, name: str, capabilities: CapabilitiesSource
    ) -> None:
        """Replay the trace on the model; nothing is written yet."""
        self.trace = trace
        self.setup: AffinitySetup = trace.setup
        self.config = self.setup.config
        self.manual = self.config.clock == "manual"
        self.capabilities = capabilities
        self.target_crate: Capabilities | None = None
        self.test = RustTest(
            name,
            "#[test]" if self.manual else "#[tokio::test(start_paused = true)]",
        )
        harness = KIND.harness(self.setup, KIND.model_factory())
        harness.check_states = False
        self.reports = [harness.step(step.op) for step in trace.steps]
        self.locals: dict[int, Local] = {}
        self.targets: dict[Target, str] = {}
        self.now_ns = 0
        self.dropped = False
        self.sink = False
        self.sequences = False
        self.origin = False
        self.waiters = False
        self.step = 0
        self.what = ""
        named = {
            op.session_id
            for op in trace.ops
            if isinstance(op, Acquire | Join | Query | ApplyReplica)
        }
        self.observed = tuple(s for s in sorted(self.setup.session_pool) if s in named)

    # ---- the whole test ------------------------------------------------------

    def write(self) -> RustTest:
        """Header, declarations, then every step with its assertions."""
        self._check_capabilities()
        self._plan_locals()
        for recorded, report in zip(self.trace.steps, self.reports, strict=True):
            op, outcome = recorded.op, report.expected
            self.test.step(recorded.index, KIND.show_op(op), recorded.comment)
            if outcome.error in BINDING_REFUSALS or self._refused_clock(op, outcome):
                self._binding_refused(outcome)
                continue
            self.step = recorded.index
            self.what = self._describe(op)
            self._operation(op, outcome)
            self._observe(report.model_view, op)
        self._declare()
        self._header()
        return self.test

    def _check_capabilities(self) -> None:
        """Refuse, naming the step, what the built crate cannot do."""
        crate_advances = [
            step.index for step in self.trace.steps if isinstance(step.op, CrateAdvance)
        ]
        if not self.manual and not crate_advances:
            return
        self.target_crate = self.capabilities()
        if self.target_crate.manual_clock:
            return
        lacking = (
            f"dynamo-kv-router {self.target_crate.crate_version} has no "
            "with_manual_clock / advance_clock (capability probe: clock kinds "
            "runtime)"
        )
        if self.manual:
            raise ExportError(
                f"the table runs on the manual clock (reaping "
                f"{self.config.reaping!r}), but {lacking}"
            )
        raise ExportError(
            f"step {crate_advances[0]}: CrateAdvance calls the crate's "
            f"advance_clock, but {lacking}"
        )

    def _plan_locals(self) -> None:
        """Each handle's kind and session; which a later step uses; which are `mut`."""
        for step, report in zip(self.trace.steps, self.reports, strict=True):
            op, outcome = step.op, report.expected
            if outcome.error in BINDING_REFUSALS:
                continue
            used = used_handle(op)
            if used is not None and used in self.locals:
                local = self.locals[used]
                local.used = True
                local.mutable |= isinstance(op, Invalidate) and local.kind == "lease"
            created = created_handle(op, outcome)
            if created is not None:
                session_id = (
                    self.locals[op.handle].session_id
                    if isinstance(op, Commit)
                    else self._named_session(op)
                )
                self.locals[created] = Local(
                    created, _created_kind(outcome), session_id=session_id
                )

    # ---- one step ------------------------------------------------------------

    def _refused_clock(self, op: Op, outcome: Outcome) -> bool:
        """A clock move the binding refuses before the crate sees it."""
        if outcome.ok or not isinstance(op, Advance | CrateAdvance):
            return False
        if isinstance(op, Advance) and not self.manual:
            return True  # a runtime table's clock is the binding's
        return outcome.refusal == "binding_range" or op.now_ns < 0

    def _binding_refused(self, outcome: Outcome) -> None:
        self.test.line(
            f"// The binding refuses this before calling the crate ({outcome.error}: "
            f"{one_line(outcome.message)});",
            "// in Rust the moved value, the dropped table or Tokio's clock rule it"
            " out.",
        )

    def _operation(self, op: Op, outcome: Outcome) -> None:  # noqa: C901 - one case per operation
        match op:
            case Acquire(session_id, requested):
                self._acquire(session_id, requested, outcome)
            case Join(session_id, target):
                self._join(session_id, target, outcome)
            case Commit(handle, dispatched):
                self._commit(handle, dispatched, outcome)
            case Abort(handle) | Release(handle):
                self.test.line(f"drop({self._local(handle).name});")
            case Invalidate(handle):
                self._invalidate(handle)
            case PollWaiter(waiter):
                self._poll_waiter(waiter, outcome)
            case Query(session_id, requested):
                self._query(session_id, requested, outcome)
            case Advance(now_ns):
                if self.manual:
                    self._crate_advance(now_ns, outcome)
                else:
                    self._advance(now_ns)
            case CrateAdvance(now_ns):
                self._crate_advance(now_ns, outcome)
            case ApplyReplica(session_id, target, version):
                self._apply_replica(session_id, target, version, outcome)
            case ObserveSequence(sequence):
                self.test.line(
                    f"table.observe_replica_sequence({self._sequence(sequence)});"
                )
            case EnableReplication(writer_id):
                self._enable_replication(writer_id, outcome)
            case NextVersion():
                assert isinstance(outcome.value, Version)
                self.test.use(f"{AFFINITY}::AffinityVersion")
                self.test.testing(
                    f"assert_eq!(table.next_version(), "
                    f"{self._version(outcome.value)}, {self._message()});"
                )
            case DropTable():
                if self.dropped:
                    self.test.line("// The table is already gone: nothing to drop.")
                else:
                    self.test.line("drop(table);")
                self.dropped = True

    def _acquire(
        self, session_id: str, requested: Target | None, outcome: Outcome
    ) -> None:
        call = f"table.try_acquire({str_expr(session_id)}, {self._pin(requested)})"
        self.test.use(f"{AFFINITY}::AcquireStep")
        match outcome.value:
            case Initialize(handle):
                self.test.use(f"{AFFINITY}::Hold")
                pattern = (
                    f"AcquireStep::Held(Hold::Initialize({self._local(handle).name}))"
                )
                self._let_else(
                    pattern, f"{call}.expect({self._message(plain=True)})", "initialize"
                )
            case Bound(handle, target):
                hold = self._local(handle).name
                self._let_else(
                    f"AcquireStep::Held({hold})",
                    f"{call}.expect({self._message(plain=True)})",
                    "hold a bound session",
                )
                self.test.line(
                    f"assert_eq!({hold}.target(), Some({self._target(target)}), "
                    f"{self._message()});"
                )
            case Wait(waiter):
                self.waiters = True
                self._let_else(
                    f"AcquireStep::Wait(mut {self._local(waiter).name})",
                    f"{call}.expect({self._message(plain=True)})",
                    "wait for the initialization",
                )
            case _:
                self._expect_error(call, outcome)

    def _join(self, session_id: str, target: Target, outcome: Outcome) -> None:
        call = (
            f"table.join_initializing({str_expr(session_id)}, {self._target(target)})"
        )
        if isinstance(outcome.value, int):
            lease = self._local(outcome.value)
            binding = f"let {'mut ' if lease.mutable else ''}{lease.name}"
            self.test.line(f"{binding} = {call}.expect({self._message(plain=True)});")
        else:
            self.test.line(f"assert!({call}.is_none(), {self._message()});")

    def _commit(self, handle: int, dispatched: Target, outcome: Outcome) -> None:
        hold = self._local(handle)
        target = self._target(dispatched)
        call = (
            f"{hold.name}.commit({target})"
            if hold.kind == "init"
            else f"table.commit({hold.name}, {target})"
        )
        if isinstance(outcome.value, int):
            lease = self._local(outcome.value)
            binding = f"let {'mut ' if lease.mutable else ''}{lease.name}"
            self.test.line(f"{binding} = {call}.expect({self._message(plain=True)});")
        else:
            self._expect_error(call, outcome)

    def _invalidate(self, handle: int) -> None:
        local = self._local(handle)
        self.test.line(f"{local.name}.invalidate();")
        if local.kind == "lease":  # the binding drops the handle afterwards
            self.test.line(f"drop({local.name});")

    def _poll_waiter(self, waiter: int, outcome: Outcome) -> None:
        local = self._local(waiter)
        if local.done_at:
            self.test.line(
                f"// {local.name} was woken at step {local.done_at}: the binding "
                "remembers that, and polls it no more."
            )
            return
        local.polled_at = self.step
        self._poll(local, bool(outcome.value), self._message())

    def _poll(self, local: Local, ready: bool, message: str) -> None:
        state = "is_ready" if ready else "is_pending"
        self.test.line(
            f"assert!({local.name}.as_mut().poll(&mut cx).{state}(), {message});"
        )
        if ready:
            local.done_at = self.step

    def _query(
        self, session_id: str, requested: Target | None, outcome: Outcome
    ) -> None:
        call = f"table.query_target({str_expr(session_id)}, {self._pin(requested)})"
        if outcome.ok:
            assert outcome.value is None or isinstance(outcome.value, Target)
            self._assert_served(call, outcome.value, self._message())
        else:
            self._assert_error(call, str(outcome.error), self._message())

    def _advance(self, now_ns: int) -> None:
        """The binding's schedule, with the moves this step needs."""
        self.origin = True
        self.test.use("std::time::Duration")
        for kind, ns in clock_moves(self.now_ns, now_ns):
            if kind == "sleep_until":
                self.test.line(
                    f"tokio::time::sleep_until(origin + {duration(ns)}).await;"
                )
            else:
                self.test.line(
                    f"// {kind}: no timer falls due on the way.",
                    f"tokio::time::advance({duration(ns)}).await;",
                )
            self._settle()
        self.now_ns = now_ns
        clock = self._message("clock")
        self.test.line(f"assert_eq!(origin.elapsed(), {duration(now_ns)}, {clock});")

    def _settle(self) -> None:
        self.test.line(
            f"for _ in 0..{SETTLE_YIELDS} {{",
            "tokio::task::yield_now().await;",
            "}",
        )

    def _crate_advance(self, now_ns: int, outcome: Outcome) -> None:
        """The crate's own `advance_clock` (a build with the manual clock)."""
        self.origin = True
        self.test.use("std::time::Duration")
        call = f"table.advance_clock(origin + {duration(now_ns)})"
        if outcome.ok:
            self.test.line(f"{call}.expect({self._message(plain=True)});")
            self.now_ns = now_ns
        else:
            self._expect_error(call, outcome)

    def _apply_replica(
        self, session_id: str, target: Target, version: Version, outcome: Outcome
    ) -> None:
        self.test.use(
            f"{AFFINITY}::ReplicaApplyOutcome", f"{AFFINITY}::AffinityVersion"
        )
        call = (
            f"table.apply_replica_update({string_expr(session_id)}, "
            f"{self._target(target)}, {self._version(version)})"
        )
        self.test.line(
            f"assert_eq!({call}, ReplicaApplyOutcome::{outcome.value}, "
            f"{self._message()});"
        )

    def _enable_replication(self, writer_id: int, outcome: Outcome) -> None:
        self.sink = True
        self._check_u64(writer_id, "writer id")
        call = f"table.enable_replication({rust_int(writer_id)}, published.clone())"
        negation = "" if outcome.value else "!"
        self.test.line(f"assert!({negation}{call}, {self._message()});")

    # ---- what the harness observes after a step ------------------------------

    def _touched(self, op: Op) -> tuple[str, ...]:
        """The observed sessions a step can change.

        All of them on a clock move, else the one it names (none for a read,
        or for a call that names no session).
        """
        if isinstance(op, Advance | CrateAdvance):
            return self.observed
        named = self._named_session(op)
        return (named,) if named in self.observed else ()

    def _observe(self, view: Observation, op: Op) -> None:
        touched = self._touched(op)
        moves_clock = isinstance(op, Advance | CrateAdvance)
        names_session = not moves_clock and bool(self._named_session(op))
        if not self.dropped and (touched or names_session or moves_clock):
            self.test.testing(
                f"assert_eq!(table.entry_count(), {view.entry_count}, "
                f"{self._message('entry_count')});"
            )
        if not self.dropped:
            for session in view.sessions:
                if session.session_id in touched:
                    self._observe_session(session)
        if self.sink and names_session:
            self._observe_published(view.published)
        for number, done in view.waiters:
            local = self.locals.get(number)
            if (
                local is None
                or local.done_at
                or local.polled_at == self.step
                or local.session_id not in touched
                or not isinstance(done, bool)
            ):
                continue
            verb = "woken" if done else "still waiting"
            self._poll(local, done, self._message(f"{local.name} {verb}"))

    def _named_session(self, op: Op) -> str:
        match op:
            case Acquire(session_id) | Join(session_id) | ApplyReplica(session_id):
                return session_id
            case Commit(handle) | Abort(handle) | Release(handle) | Invalidate(handle):
                return self._local(handle).session_id
        return ""

    def _observe_session(self, session: SessionView) -> None:
        shown = shown_str(session.session_id)
        leases = session.lease_count
        expected = "None" if leases is None else f"Some({leases})"
        self.test.testing(
            f"assert_eq!(table.lease_count({str_expr(session.session_id)}), "
            f"{expected}, {self._message(f'lease_count({shown})')});"
        )
        call = f"table.query_target({str_expr(session.session_id)}, None)"
        message = self._message(f"query_target({shown})")
        if isinstance(session.served, str):
            self._assert_error(call, session.served, message)
        else:
            self._assert_served(call, session.served, message)

    def _observe_published(self, published: tuple[Published, ...]) -> None:
        message = self._message("publications")
        if not published:
            self.test.line(f"assert!(published.take().is_empty(), {message});")
            return
        self.test.use(f"{AFFINITY}::AffinityVersion")
        items = ", ".join(
            f"({string_expr(p.session_id)}, {self._target(p.target)}, "
            f"{self._version(p.version)})"
            for p in published
        )
        self.test.line(f"assert_eq!(published.take(), [{items}], {message});")

    # ---- pieces --------------------------------------------------------------

    def _assert_served(self, call: str, served: Target | None, message: str) -> None:
        expected = "None" if served is None else f"Some({self._target(served)})"
        self.test.line(
            f"assert_eq!({call}.expect({rust_string(f'step {self.step}')}), "
            f"{expected}, {message});"
        )

    def _assert_error(self, call: str, kind: str, message: str) -> None:
        self.test.use(f"{AFFINITY}::AffinityError")
        self.test.line(
            f"assert!(matches!({call}, Err({_error_pattern(kind)})), {message});"
        )

    def _expect_error(self, call: str, outcome: Outcome) -> None:
        self.test.use(f"{AFFINITY}::AffinityError")
        self._let_else(
            f"Err({_error_pattern(str(outcome.error))})",
            call,
            f"fail with {outcome.error}",
        )

    def _let_else(self, pattern: str, value: str, should: str) -> None:
        text = f"step {self.step}: {self.what} should {should}"
        self.test.line(
            f"let {pattern} = {value} else {{",
            f"panic!({rust_format_string(text)});",
            "};",
        )

    def _message(self, read: str = "", *, plain: bool = False) -> str:
        """A message naming the step and what it reads (else the step's call).

        A format string for the assertion macros; `plain` for `expect`.
        """
        literal = rust_string if plain else rust_format_string
        return literal(f"step {self.step}: {read or self.what}")

    def _local(self, number: int) -> Local:
        return self.locals[number]

    def _pin(self, requested: Target | None) -> str:
        return "None" if requested is None else f"Some({self._target(requested)})"

    def _target(self, target: Target) -> str:
        """The local naming `target` (declared at the top of the test)."""
        if target not in self.targets:
            self._check_u64(target.worker, "worker id")
            if target.rank is not None and not 0 <= target.rank <= U32_MAX:
                raise ExportError(
                    f"step {self.step}: DP rank {target.rank} does not fit a u32"
                )
            rank = "" if target.rank is None else f"_rank_{target.rank}"
            self.targets[target] = f"worker_{target.worker}{rank}"
        return self.targets[target]

    def _sequence(self, sequence: int) -> str:
        self.sequences = True
        self._check_u64(sequence + SEQUENCE_OFFSET, "sequence + 2^62")
        return f"SEQUENCE_OFFSET + {rust_int(sequence)}"

    def _version(self, version: Version) -> str:
        self._check_u64(version.writer, "writer id")
        sequence = self._sequence(version.sequence)
        return (
            f"AffinityVersion {{ sequence: {sequence}, writer_id: {version.writer} }}"
        )

    def _check_u64(self, value: int, what: str) -> None:
        if not 0 <= value <= U64_MAX:
            raise ExportError(f"step {self.step}: {what} {value} does not fit a u64")

    def _describe(self, op: Op) -> str:  # noqa: C901 - one case per operation
        """The operation in a few words, for assertion messages."""
        match op:
            case Acquire(session_id, requested):
                pin = "" if requested is None else f", {requested}"
                return f"try_acquire({shown_str(session_id)}{pin})"
            case Join(session_id, target):
                return f"join_initializing({shown_str(session_id)}, {target})"
            case Commit(handle, dispatched):
                return f"commit({self._local(handle).name}, {dispatched})"
            case Abort(handle) | Release(handle):
                return f"drop({self._local(handle).name})"
            case Invalidate(handle):
                return f"invalidate({self._local(handle).name})"
            case PollWaiter(waiter):
                return f"poll({self._local(waiter).name})"
            case Query(session_id, requested):
                pin = "" if requested is None else f", {requested}"
                return f"query_target({shown_str(session_id)}{pin})"
            case Advance(now_ns):
                return f"advance to {seconds(now_ns)}"
            case CrateAdvance(now_ns):
                return f"advance_clock(origin + {seconds(now_ns)})"
            case ApplyReplica(session_id, target, version):
                return (
                    f"apply_replica_update({shown_str(session_id)}, {target}, "
                    f"v{version.sequence}/{version.writer})"
                )
            case ObserveSequence(sequence):
                return f"observe_replica_sequence({sequence})"
            case EnableReplication(writer_id):
                return f"enable_replication({writer_id})"
            case NextVersion():
                return "next_version()"
        return "drop(table)"

    # ---- declarations and header ---------------------------------------------

    def _declare(self) -> None:
        test = self.test
        if self.sink:
            self._declare_sink()
        test.use(f"{AFFINITY}::AffinityTarget")
        for target, name in sorted(self.targets.items(), key=lambda t: t[0].sort_key()):
            rank = "None" if target.rank is None else f"Some({target.rank})"
            test.declare(f"let {name} = AffinityTarget::new({target.worker}, {rank});")
        if not self.targets:
            test.imports.discard(f"{AFFINITY}::AffinityTarget")
        if self.waiters:
            test.use("std::task::Context", "std::task::Waker")
            test.declare("let mut cx = Context::from_waker(Waker::noop());")
        if self.origin:
            test.use("tokio::time::Instant")
            test.declare("let origin = Instant::now();")
        self._declare_table()
        if self.sequences:
            test.declare(
                "// Sequences are written relative to 2^62, as the suite's adapter",
                "// pins them (a runtime table seeds them from the wall clock).",
                "const SEQUENCE_OFFSET: u64 = 1 << 62;",
                "table.observe_replica_sequence(SEQUENCE_OFFSET);",
            )
        if self.sink:
            test.use("std::sync::Arc")
            test.declare("let published = Arc::new(Published::default());")

    def _declare_sink(self) -> None:
        self.test.use(
            "std::sync::Mutex",
            f"{AFFINITY}::AffinityReplicaSink",
            f"{AFFINITY}::AffinityTarget",
            f"{AFFINITY}::AffinityVersion",
        )
        self.test.declare(
            "/// Records every publication; each step takes what arrived.",
            "#[derive(Default)]",
            "struct Published(Mutex<Vec<(String, AffinityTarget, AffinityVersion)>>);",
            "impl Published {",
            "fn take(&self) -> Vec<(String, AffinityTarget, AffinityVersion)> {",
            "std::mem::take(&mut *self.0.lock().unwrap())",
            "}",
            "}",
            "impl AffinityReplicaSink for Published {",
            "fn publish(&self, session_id: &str, target: AffinityTarget, "
            "version: AffinityVersion) {",
            "self.0.lock().unwrap().push((session_id.to_string(), target, version));",
            "}",
            "}",
        )

    def _declare_table(self) -> None:
        config = self.config
        self.test.use(
            "std::time::Duration",
            f"{AFFINITY}::SessionAffinity",
            f"{AFFINITY}::SessionAffinityConfig",
        )
        ttl = duration(config.ttl_ns)
        defaults = (
            config.max_entries == ENTRIES_MAX_DEFAULT
            and config.max_session_id_bytes == SESSION_ID_BYTES_MAX_DEFAULT
        )
        mode = "Soft" if config.mode is Mode.SOFT else "Hard"
        if defaults:
            built = f"SessionAffinityConfig::new({ttl})"
            if config.mode is Mode.SOFT:
                self.test.use(f"{AFFINITY}::SessionAffinityMode")
                built += ".with_mode(SessionAffinityMode::Soft)"
        else:
            self.test.use(f"{AFFINITY}::SessionAffinityMode")
            built = (
                f"SessionAffinityConfig {{ ttl: {ttl}, "
                f"mode: SessionAffinityMode::{mode}, "
                f"max_entries: {rust_int(config.max_entries)}, "
                f"max_session_id_bytes: {rust_int(config.max_session_id_bytes)} }}"
            )
        if self.manual:
            self._declare_manual_table(built)
            return
        period_ns = min(config.ttl_ns, REAPER_PERIOD_NS_MAX)
        self.test.declare(
            f'let table = SessionAffinity::with_config({built}).expect("a table");',
            (
                "// Let the reaper task start: its ticks fall every "
                f"{seconds(period_ns)} from here."
            ),
            f"for _ in 0..{SETTLE_YIELDS} {{",
            "tokio::task::yield_now().await;",
            "}",
        )

    def _declare_manual_table(self, built: str) -> None:
        if self.config.instant_range_ns is not None:
            raise ExportError(
                "the table's origin sits instant_range_ns = "
                f"{self.config.instant_range_ns} ns before the end of the platform's "
                "Instant range; the export cannot place an origin there"
            )
        self.origin = True
        self.test.use("tokio::time::Instant")
        table = f"SessionAffinity::with_manual_clock({built}, origin)"
        self.test.declare(f'let table = {table}.expect("a table");')

    def _header(self) -> None:
        config = self.config
        facts = [
            "Lines ending in `// testing` call hooks of the crate's `testing` feature.",
            (
                f"The table: ttl {seconds(config.ttl_ns)}, {config.mode.value} mode, "
                f"{config.max_entries} entries, ids up to "
                f"{config.max_session_id_bytes} bytes, {config.clock} clock."
            ),
        ]
        if self.target_crate is not None:
            facts.append(
                "It calls `with_manual_clock` / `advance_clock`, which the capability "
                f"probe found in {CRATE} {self.target_crate.crate_version} (not in "
                "the crates.io releases up to 1.6.1)."
            )
        drifted = [
            str(step.index)
            for step, report in zip(self.trace.steps, self.reports, strict=True)
            if step.expected != report.expected
        ]
        if drifted:
            facts.append(
                "Today's model answers differently from the recording at steps "
                + ", ".join(drifted)
                + "; the test asserts today's answers."
            )
        self.test.header = header(self.trace, facts)


def _created_kind(outcome: Outcome) -> str:
    match outcome.value:
        case Initialize():
            return "init"
        case Bound():
            return "hold"
        case Wait():
            return "waiter"
    return "lease"


def _error_pattern(kind: str) -> str:
    """`AffinityError::InvalidArgument(_)` for an error kind."""
    if kind == "Dropped":
        return "AffinityError::Dropped"
    return f"AffinityError::{kind}(_)"
