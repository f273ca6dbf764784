"""Queue traces as Rust tests of `PolicyQueue`.

The test does what the binding (`impl/src/queue.rs`) does, with the crate's
public API alone: the queue is `PolicyQueue::new` over the profile the trace
names -- `RouterPolicyConfig::from_yaml(...).resolve_profile(...)` for a YAML
profile, `PolicyProfile::synthetic` otherwise -- and its payload is the
trace's payload id, with the request's placement beside it when a dispatch
predicate reads it (`Ticket`). Each `pop_next` gets its predicate written as
data: the paused classes, the saturated workers and whether the shared Any
lane may take work at that step. `Rebuild` builds the queue afresh from the
same profile.

After each step come the assertions the model implies: the step's value (the
served entry as (class, payload, raw, cached, cost), a rejection, the class
stats), then what the harness observes -- `pending_count`, every class's
`class_stats` and `has_backlog`, and every queued entry -- except after the
read-only calls (`class_stats`, `has_backlog`, `class_config` take `&self`
and `PolicyQueue` has no interior mutability). A call the binding refuses
before the crate is called (a class index the crate would panic on, a value
outside the crate's integer types, any call after `drain` moved the queue)
is a comment. The queue needs no runtime: the tests are plain `#[test]`s.
"""

from __future__ import annotations

from typing import Final

from ci.replay.queue import KIND, show_op
from ci.replay.rust.emit import (
    CapabilitiesSource,
    ExportError,
    RustTest,
    header,
    one_line,
    rust_float,
    rust_format_string,
    rust_int,
    rust_string,
)
from ci.replay.trace import Trace
from model.queue.api import QueueObservation
from model.queue.ops import (
    Drain,
    Enqueue,
    PopNext,
    QueueOp,
    QueueOutcome,
    ReadBacklog,
    ReadConfig,
    ReadStats,
    Rebuild,
    Retain,
)
from model.queue.types import (
    U32_MAX,
    U64_MAX,
    ClassConfig,
    ClassStats,
    Dispatch,
    QueuedItem,
    Rejection,
    Worker,
)
from stateful.queue_subject import ProfileSpec

SCHEDULING: Final[str] = "dynamo_kv_router::scheduling"
READS: Final[tuple[type, ...]] = (ReadStats, ReadBacklog, ReadConfig)
"""Operations on `&self`: nothing to observe after them."""
POLICIES: Final[dict[str, str]] = {"fcfs": "Fcfs", "lcfs": "Lcfs", "wspt": "Wspt"}
LIMIT_KINDS: Final[dict[str, str]] = {
    "requests": "Requests",
    "raw_isl_tokens": "RawIslTokens",
    "cached_tokens": "CachedTokens",
}


def write(trace: Trace, name: str, capabilities: CapabilitiesSource) -> RustTest:
    """The queue trace as one Rust test."""
    del capabilities  # the queue's public API is the same on every build
    return QueueWriter(trace, name).write()


class QueueWriter:
    """Writes one queue trace, step by step."""

    def __init__(self, trace: Trace, name: str) -> None:
        """Replay the trace on the model; nothing is written yet."""
        self.trace = trace
        self.spec: ProfileSpec = trace.setup
        self.test = RustTest(name, "#[test]")
        harness = KIND.harness(self.spec, KIND.model_factory())
        harness.check_states = False
        self.reports = [harness.step(step.op) for step in trace.steps]
        accepted = [
            step.op
            for step, report in zip(trace.steps, self.reports, strict=True)
            if report.expected.ok
        ]
        self.tickets = any(
            isinstance(op, PopNext)
            and (op.dispatch.saturated or not op.dispatch.any_dispatchable)
            for op in accepted
        )
        self.mutable = any(
            isinstance(op, Enqueue | PopNext | Retain | Rebuild) for op in accepted
        )
        self.rebuilds = any(isinstance(op, Rebuild) for op in accepted)
        self.workers: set[Worker] = set()
        self.rows = False  # the `row` closure is used
        self.listed = False  # the `entries` closure is used
        self.stats = False  # the `stats` closure is used
        self.drained = False
        self.step = 0
        self.what = ""

    def write(self) -> RustTest:
        """Header, declarations, then every step with its assertions."""
        for recorded, report in zip(self.trace.steps, self.reports, strict=True):
            op, outcome = recorded.op, report.expected
            self.step, self.what = recorded.index, show_op(op)
            self.test.step(recorded.index, self.what, recorded.comment)
            if not outcome.ok:
                self.test.line(
                    "// The binding refuses this before calling the crate "
                    f"({outcome.error}: {one_line(outcome.message)}): the crate would",
                    "// panic, cannot take the value, or `drain` has moved the queue.",
                )
                continue
            self._operation(op, outcome)
            if not isinstance(op, READS) and isinstance(
                report.model_view, QueueObservation
            ):
                self._observe(report.model_view)
        self._declare()
        self._header()
        return self.test

    # ---- one step ------------------------------------------------------------

    def _operation(self, op: QueueOp, outcome: QueueOutcome) -> None:
        match op:
            case Enqueue():
                self._enqueue(op, outcome)
            case PopNext(dispatch):
                self._pop(dispatch, outcome)
            case Retain(drop):
                dropped = ", ".join(rust_int(p) for p in sorted(drop))
                ticket = "&(id, _)" if self.tickets else "id"
                kept = f"![{dropped}].contains({'&' if self.tickets else ''}id)"
                if not drop:
                    ticket, kept = "_", "true"
                self.test.line(f"queue.retain(|{ticket}| {kept});")
            case Drain():
                assert isinstance(outcome.value, tuple)
                self.rows = True
                self.drained = True
                drained = self._rows(outcome.value)
                self.test.line(
                    (
                        "let mut drained: Vec<_> = queue.drain().map(|e| row(&e))"
                        ".collect();"
                    ),
                    "drained.sort();",
                    f"assert_eq!(drained, {drained}, {self._message()});",
                )
            case ReadStats(class_index):
                assert isinstance(outcome.value, ClassStats)
                self._assert_stats(class_index, outcome.value, self._message())
            case ReadBacklog(class_index):
                negation = "" if outcome.value else "!"
                self.test.line(
                    f"assert!({negation}queue.has_backlog({class_index}), "
                    f"{self._message()});"
                )
            case ReadConfig(class_index):
                assert isinstance(outcome.value, ClassConfig)
                self._assert_config(class_index, outcome.value, self._message())
            case Rebuild():
                self.drained = False
                self.test.line("queue = PolicyQueue::new(profile.clone());")

    def _enqueue(self, op: Enqueue, outcome: QueueOutcome) -> None:
        self.test.use(f"{SCHEDULING}::QueueSnapshot", f"{SCHEDULING}::WorkerPlacement")
        self._check(op.payload, U64_MAX, "payload")
        placement = (
            "WorkerPlacement::Any"
            if op.placement is None
            else f"WorkerPlacement::Exact({self._worker(op.placement)})"
        )
        payload = rust_int(op.payload)
        if self.tickets:
            where = (
                "None"
                if op.placement is None
                else f"Some({self._worker(op.placement)})"
            )
            payload = f"({payload}, {where})"
        call = (
            f"queue.enqueue({op.class_index}, {rust_int(op.worker_count)}, "
            f"QueueSnapshot::new({rust_int(op.raw_isl_tokens)}, "
            f"{rust_int(op.cached_tokens)}), {rust_float(op.arrival_offset_secs)}, "
            f"{rust_float(op.priority_jump)}, {rust_int(op.strict_priority)}, "
            f"{placement}, {payload})"
        )
        rejection = outcome.value
        if rejection is None:
            self.test.line(f"{call}.expect({self._message(plain=True)});")
            return
        assert isinstance(rejection, Rejection)
        self.test.use(f"{SCHEDULING}::QueueLimitKind", f"{SCHEDULING}::QueueRejection")
        self.test.line(
            f"let (rejection, _) = {call}.expect_err({self._message('rejected')});",
            "assert_eq!(rejection, QueueRejection { "
            f"policy_class: {rust_string(rejection.policy_class)}.to_string(), "
            f"limit_kind: QueueLimitKind::{LIMIT_KINDS[rejection.limit_kind]}, "
            f"current: {rust_int(rejection.current)}, "
            f"limit: {rust_int(rejection.limit)} }}, {self._message()});",
        )

    def _pop(self, dispatch: Dispatch, outcome: QueueOutcome) -> None:
        call = f"queue.pop_next({self._predicate(dispatch)})"
        item = outcome.value
        if item is None:
            self.test.line(
                f"assert!({call}.is_none(), {self._message('nothing served')});"
            )
            return
        assert isinstance(item, QueuedItem)
        self.rows = True
        served = f"p{item.payload}"
        popped = self._message(f"{served} served", plain=True)
        self.test.line(
            f"let popped = {call}.expect({popped});",
            f"assert_eq!(row(&popped), {self._row(item)}, {self._message(served)});",
        )

    def _predicate(self, dispatch: Dispatch) -> str:
        """`|class, _, ticket| ...`: who can take work, written as data."""
        conditions = []
        paused = sorted(dispatch.paused_classes)
        for index in paused:
            self._check(index, U64_MAX, "paused class index")
        if len(paused) == 1:
            conditions.append(f"class != {paused[0]}")
        elif paused:
            conditions.append(f"![{', '.join(map(str, paused))}].contains(&class)")
        saturated = (
            "[" + ", ".join(self._worker(w) for w in sorted(dispatch.saturated)) + "]"
        )
        refuses_placed = bool(dispatch.saturated)
        free = f"|worker| !{saturated}.contains(&worker)"
        if refuses_placed and dispatch.any_dispatchable:
            conditions.append(f"placement.is_none_or({free})")
        elif refuses_placed:
            conditions.append(f"placement.is_some_and({free})")
        elif not dispatch.any_dispatchable:
            conditions.append("placement.is_some()")
        reads_ticket = refuses_placed or not dispatch.any_dispatchable
        parameters = (
            "class" if paused else "_",
            "_",
            "&(_, placement)" if reads_ticket else "_",
        )
        body = " && ".join(conditions) or "true"
        return f"|{', '.join(parameters)}| {body}"

    # ---- what the harness observes after a step ------------------------------

    def _observe(self, view: QueueObservation) -> None:
        self.listed = True
        self.test.line(
            f"assert_eq!(queue.pending_count(), {view.pending_count}, "
            f"{self._message('pending_count()', own=True)});"
        )
        for index, (stats, backlog) in enumerate(
            zip(view.class_stats, view.backlog, strict=True)
        ):
            self._assert_stats(
                index, stats, self._message(f"class_stats({index})", own=True)
            )
            negation = "" if backlog else "!"
            self.test.line(
                f"assert!({negation}queue.has_backlog({index}), "
                f"{self._message(f'has_backlog({index})', own=True)});"
            )
        self.test.line(
            f"assert_eq!(entries(&queue), {self._rows(view.entries)}, "
            f"{self._message('entries()', own=True)});"
        )

    def _assert_stats(self, index: int, stats: ClassStats, message: str) -> None:
        self.stats = True
        self.test.line(
            f"assert_eq!(queue.class_stats({index}), stats({rust_int(stats.requests)}, "
            f"{rust_int(stats.raw_isl_tokens)}, {rust_int(stats.cached_tokens)}), "
            f"{message});"
        )

    def _assert_config(self, index: int, config: ClassConfig, message: str) -> None:
        self.test.line(*self._config_lines(index, config, message))

    def _config_lines(self, index: int, config: ClassConfig, message: str) -> list[str]:
        """`class_config(index)` has the model's name, policy, quantum and limits."""
        self.test.use(f"{SCHEDULING}::config::RouterQueuePolicy")
        limits = ", ".join(
            "None" if limit is None else f"Some({rust_int(limit)})"
            for limit in (
                config.request_queue_limit_per_worker,
                config.raw_isl_token_queue_limit_per_worker,
                config.cached_token_queue_limit_per_worker,
            )
        )
        policy = f"RouterQueuePolicy::{POLICIES[config.queue_policy]}"
        named = f"({rust_string(config.name)}, {policy}, {rust_int(config.quantum)})"
        return [
            f"let config = queue.class_config({index});",
            "let named = (config.name.as_str(), config.queue_policy, config.quantum);",
            f"assert_eq!(named, {named}, {message});",
            (
                "let limits = (config.request_queue_limit_per_worker, "
                "config.raw_isl_token_queue_limit_per_worker, "
                "config.cached_token_queue_limit_per_worker);"
            ),
            f"assert_eq!(limits, ({limits}), {message});",
        ]

    # ---- pieces --------------------------------------------------------------

    def _rows(self, items: tuple[QueuedItem, ...]) -> str:
        rows = sorted(_row_values(item) for item in items)
        return "[" + ", ".join(_row_text(row) for row in rows) + "]"

    def _row(self, item: QueuedItem) -> str:
        return _row_text(_row_values(item))

    def _worker(self, worker: Worker) -> str:
        self._check(worker.worker_id, U64_MAX, "worker id")
        self._check(worker.dp_rank, U32_MAX, "DP rank")
        self.workers.add(worker)
        return f"w{worker.worker_id}_{worker.dp_rank}"

    def _check(self, value: int, maximum: int, what: str) -> None:
        if not 0 <= value <= maximum:
            raise ExportError(
                f"step {self.step}: {what} {value} is outside 0..={maximum}"
            )

    def _message(
        self, text: str = "", *, own: bool = False, plain: bool = False
    ) -> str:
        """A format string for the assertion macros; `plain` for `expect`."""
        literal = rust_string if plain else rust_format_string
        if own:
            return literal(f"step {self.step}: {text}")
        suffix = f": {text}" if text else ""
        return literal(f"step {self.step}: {self.what}{suffix}")

    # ---- declarations and header ---------------------------------------------

    def _declare(self) -> None:
        test = self.test
        payload = "u64"
        if self.tickets:
            payload = "(u64, Option<WorkerWithDpRank>)"
            test.use("dynamo_kv_router::protocols::WorkerWithDpRank")
            test.declare(
                "// The payload: the trace's payload id and the worker the request is",
                "// placed on (the dispatch predicates read it).",
            )
        if self.workers:
            test.use("dynamo_kv_router::protocols::WorkerWithDpRank")
        for worker in sorted(self.workers):
            test.declare(
                f"let w{worker.worker_id}_{worker.dp_rank} = "
                f"WorkerWithDpRank::new({worker.worker_id}, {worker.dp_rank});"
            )
        test.use(
            f"{SCHEDULING}::PolicyQueue", f"{SCHEDULING}::config::RouterQueuePolicy"
        )
        spec = self.spec
        fallback = f"RouterQueuePolicy::{POLICIES[spec.fallback_policy]}"
        if spec.yaml_text is None:
            test.use(f"{SCHEDULING}::PolicyProfile")
            test.declare(f"let profile = PolicyProfile::synthetic(None, {fallback});")
        else:
            test.use(f"{SCHEDULING}::RouterPolicyConfig")
            model = (
                "None"
                if spec.model_name is None
                else f"Some({rust_string(spec.model_name)})"
            )
            test.declare(
                f"let yaml = {_raw_string(spec.yaml_text)};",
                "let profile = RouterPolicyConfig::from_yaml(yaml)",
                '.expect("the profile parses")',
                f".resolve_profile({model}, None, {fallback});",
            )
        source = "profile.clone()" if self.rebuilds else "profile"
        binding = "let mut queue" if self.mutable else "let queue"
        test.declare(f"{binding}: PolicyQueue<{payload}> = PolicyQueue::new({source});")
        test.declare("// The profile resolves to the classes the model was given.")
        for index, config in enumerate(spec.configs):
            message = rust_string(f"the profile's class {index}")
            test.declare(*self._config_lines(index, config, message))
        if self.rows or self.listed:
            self._declare_rows(payload)
        if self.stats:
            test.use(f"{SCHEDULING}::policy_queue::PolicyQueueStats")
            test.declare(
                "// A class's counters: queued requests, raw and cached tokens.",
                "let stats = |requests, raw_isl_tokens, cached_tokens| {",
                "PolicyQueueStats {",
                "requests,",
                "raw_isl_tokens,",
                "cached_tokens,",
                "}",
                "};",
            )

    def _declare_rows(self, payload: str) -> None:
        self.test.use(f"{SCHEDULING}::PolicyQueueEntry")
        payload_id = "entry.payload().0" if self.tickets else "*entry.payload()"
        self.test.declare(
            "// An entry as (class, payload, raw, cached, scheduling cost).",
            f"let row = |entry: &PolicyQueueEntry<{payload}>| {{",
            "let snapshot = entry.snapshot();",
            f"(entry.class_index(), {payload_id}, snapshot.raw_isl_tokens, "
            "snapshot.cached_tokens, snapshot.scheduling_cost_tokens)",
            "};",
        )
        if self.listed:
            self.test.declare(
                "// Every queued entry, as rows, sorted.",
                f"let entries = |queue: &PolicyQueue<{payload}>| {{",
                "let mut rows: Vec<_> = queue.entries().map(row).collect();",
                "rows.sort();",
                "rows",
                "};",
            )

    def _header(self) -> None:
        facts = [
            "The queue calls no hook of the `testing` feature; it needs no runtime.",
            f"Setup: {KIND.describe(self.spec)}.",
        ]
        self.test.header = header(self.trace, facts)


def _row_values(item: QueuedItem) -> tuple[int, int, int, int, int]:
    return (
        item.class_index,
        item.payload,
        item.raw_isl_tokens,
        item.cached_tokens,
        item.scheduling_cost_tokens,
    )


def _row_text(row: tuple[int, ...]) -> str:
    return "(" + ", ".join(rust_int(value) for value in row) + ")"


def _raw_string(text: str) -> str:
    """`r#"..."#` with enough `#` that the text cannot close it."""
    hashes = "#"
    while f'"{hashes}' in text:
        hashes += "#"
    return f'r{hashes}"{text}"{hashes}'
