"""Scheduler traces as Rust tests of `LocalScheduler`.

The test does what the binding (`impl/src/scheduler.rs`) does, with the
crate's public API alone, in a paused current-thread Tokio runtime
(`#[tokio::test(start_paused = true)]`): `LocalScheduler::new` over a no-op
publisher, a tracker without expiry, workers whose config is their capacity
(sent through the watched worker-config channel), one FCFS class busy above
capacity, a picker that takes the lowest worker id and a classifier that sets
the due time a request was scheduled with. A request's caller is a spawned
task awaiting `schedule_request` (mode `TrackedWithLifecycle`, after
`begin_request_lifecycle`); it records what its future returned and when.
Cancelling aborts that task and drops the request's lifecycle. After every
call the test lets every task run (`settle`); a clock step sleeps to the
step's whole millisecond, so every timer on the way fires at its instant.

After each step come the assertions the model implies: every request's fate
(not yet returned; dispatched to a worker at a ms; rejected with an error at a
ms), which requests hold a booking, `pending_count`, `pending_isl_tokens` and
`class_queue_stats(0)`. A call the binding refuses before the crate is called
(a cancel of an id no caller scheduled) is a comment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from ci.replay.rust.emit import (
    CapabilitiesSource,
    ExportError,
    RustTest,
    header,
    one_line,
    rust_int,
    rust_string,
)
from ci.replay.scheduler import KIND, show_op
from model.scheduler.api import SchedulerObservation
from model.scheduler.ops import (
    Advance,
    Cancel,
    Free,
    Schedule,
    SchedulerOp,
    SchedulerOutcome,
    SetAvailable,
    SetCapacity,
    UpdateQueue,
)
from model.scheduler.types import Fate

if TYPE_CHECKING:
    from ci.replay.trace import Trace
    from model.scheduler.types import SchedulerConfig

CRATE: Final[str] = "dynamo_kv_router"
SCHEDULING: Final[str] = f"{CRATE}::scheduling"
RECHECK_INTERVAL_S: Final[int] = 172_800
"""The binding's periodic recheck interval (two days): beyond every trace."""
BLOCK_SIZE: Final[int] = 16
IMPORTS: Final[tuple[str, ...]] = (
    "std::collections::HashMap",
    "std::collections::HashSet",
    "std::sync::Arc",
    "std::sync::Mutex",
    "std::time::Duration",
    "tokio::sync::watch",
    "tokio::task::JoinHandle",
    "tokio::time::Instant",
    "tokio_util::sync::CancellationToken",
    f"{CRATE}::ActiveSequencesMultiWorker",
    f"{CRATE}::LocalScheduler",
    f"{CRATE}::NoopSequencePublisher",
    f"{CRATE}::WorkerInputView",
    f"{CRATE}::WorkerPicker",
    f"{CRATE}::WorkerSelectionContext",
    f"{CRATE}::WorkerSelectionPolicyError",
    f"{CRATE}::config::KvRouterConfig",
    f"{CRATE}::config::RouterQueuePolicy",
    f"{CRATE}::protocols::RoutingConstraints",
    f"{CRATE}::protocols::WorkerConfigLike",
    f"{CRATE}::protocols::WorkerWithDpRank",
    f"{CRATE}::selector::WorkerSelectionPolicy",
    f"{SCHEDULING}::ClassifyFuture",
    f"{SCHEDULING}::ClassifyRequest",
    f"{SCHEDULING}::KvSchedulerError",
    f"{SCHEDULING}::OverlapSignals",
    f"{SCHEDULING}::PolicyProfile",
    f"{SCHEDULING}::RequestClassifier",
    f"{SCHEDULING}::RequestLifecycle",
    f"{SCHEDULING}::ScheduleMode",
    f"{SCHEDULING}::ScheduleRequest",
    f"{SCHEDULING}::WorkerAvailabilityProvider",
)

_HELPERS_SOURCE: Final[str] = """
// A worker's configuration: its capacity (`max_num_batched_tokens`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Capacity(u64);
impl WorkerConfigLike for Capacity {
    fn data_parallel_start_rank(&self) -> u32 { 0 }
    fn data_parallel_size(&self) -> u32 { 1 }
    fn max_num_batched_tokens(&self) -> Option<u64> { Some(self.0) }
    fn total_kv_blocks(&self) -> Option<u64> { None }
}
// Takes the candidate with the lowest worker id (each request offers one).
struct LowestWorker;
impl WorkerPicker for LowestWorker {
    fn pick(
        &mut self,
        _context: &WorkerSelectionContext<'_>,
        input: WorkerInputView<'_>,
    ) -> Result<usize, WorkerSelectionPolicyError> {
        input.candidates().iter().enumerate()
            .min_by_key(|(_, candidate)| candidate.worker())
            .map(|(row, _)| row)
            .ok_or_else(|| {
                WorkerSelectionPolicyError::Failed("no candidate".to_string())
            })
    }
}
// Sets the due time a request was scheduled with.
type DueTimes = Arc<Mutex<HashMap<String, Instant>>>;
struct Due(DueTimes);
impl RequestClassifier for Due {
    fn classify(&mut self, mut request: ClassifyRequest) -> ClassifyFuture {
        let due_at = request
            .request_id()
            .and_then(|id| self.0.lock().unwrap().get(id).copied());
        if let Some(due_at) = due_at {
            request.set_due_at(due_at);
        }
        Box::pin(async move { Ok(request) })
    }
}
// The workers the availability provider answers with (None: no source).
type Available = Arc<Mutex<Option<Arc<HashSet<u64>>>>>;
type Scheduler =
    LocalScheduler<NoopSequencePublisher, Capacity, WorkerSelectionPolicy>;
// What each caller's future returned (worker id or error kind), at which ms.
type Outcome = (Result<u64, &'static str>, u64);
type Outcomes = Arc<Mutex<HashMap<String, Outcome>>>;
fn kind(error: &KvSchedulerError) -> &'static str {
    match error {
        KvSchedulerError::DeadlineExceeded => "deadline_exceeded",
        KvSchedulerError::NoEndpoints => "no_endpoints",
        _ => "other",
    }
}
// Lets every task that a call made ready run.
async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}
// A caller: opens the request's lifecycle, then awaits `schedule_request`.
#[allow(clippy::too_many_arguments)]
fn schedule(
    scheduler: &Arc<Scheduler>,
    due: &DueTimes,
    outcomes: &Outcomes,
    origin: Instant,
    id: &str,
    worker: u64,
    pinned: bool,
    isl_tokens: usize,
    due_ms: Option<u64>,
) -> (JoinHandle<()>, Option<RequestLifecycle>) {
    let lifecycle = scheduler.begin_request_lifecycle(id).unwrap();
    if let Some(due_ms) = due_ms {
        let due_at = origin + Duration::from_millis(due_ms);
        due.lock().unwrap().insert(id.to_string(), due_at);
    }
    let target = WorkerWithDpRank::new(worker, 0);
    let request = ScheduleRequest {
        mode: ScheduleMode::TrackedWithLifecycle { request_id: id.to_string() },
        token_seq: None,
        block_hashes: None,
        isl_tokens,
        lora_name: None,
        expected_output_tokens: None,
        affinity_target: None,
        pinned_worker: pinned.then_some(target),
        allowed_worker_ids: (!pinned).then(|| HashSet::from([worker])),
        routing_constraints: RoutingConstraints::default(),
        router_config_override: None,
        priority_jump: 0.0,
        strict_priority: 0,
        policy_class: None,
        session_context: None,
        overlap: OverlapSignals::default(),
        kv_transfer_candidates: None,
        retain_kv_transfer_chain: false,
        shared_cache_hits: None,
    };
    let scheduler = Arc::clone(scheduler);
    let outcomes = Arc::clone(outcomes);
    let id = id.to_string();
    let task = tokio::spawn(async move {
        let outcome = scheduler
            .schedule_request(request)
            .await
            .map(|response| response.best_worker.worker_id)
            .map_err(|error| kind(&error));
        let at_ms = Instant::now().duration_since(origin).as_millis() as u64;
        outcomes.lock().unwrap().insert(id, (outcome, at_ms));
    });
    (task, lifecycle)
}
fn fate(outcomes: &Outcomes, id: &str) -> Option<Outcome> {
    outcomes.lock().unwrap().get(id).copied()
}
"""
HELPERS: Final[tuple[str, ...]] = tuple(_HELPERS_SOURCE.strip().splitlines())
"""Items every scheduler export declares first (rustfmt indents them)."""


def exportable(trace: Trace) -> bool:
    """The export writes the synthetic profile's requests: no classes, no leavers.

    A trace with several policy classes, strict priorities or callers that
    leave at a given point replays on the crate through the binding
    (`python -m ci.replay`); its Rust export is not written yet.
    """
    config: SchedulerConfig = trace.setup
    return not config.classes and all(
        not isinstance(step.op, Schedule)
        or (
            step.op.class_index == 0
            and step.op.strict_priority == 0
            and step.op.leaves is None
        )
        for step in trace.steps
    )


def write(trace: Trace, name: str, capabilities: CapabilitiesSource) -> RustTest:
    """The scheduler trace as one Rust test."""
    del capabilities  # the scheduler's public API is the same on every build
    if not exportable(trace):
        raise ExportError(
            "scheduler traces with policy classes, strict priorities or callers "
            "that leave at a point have no Rust export yet"
        )
    return SchedulerWriter(trace, name).write()


def _available_set(workers: frozenset[int] | None) -> str:
    """The provider's answer as a Rust expression."""
    if workers is None:
        return "None"
    ids = ", ".join(str(worker) for worker in sorted(workers))
    return f"Some(Arc::new(HashSet::<u64>::from([{ids}])))"


class SchedulerWriter:
    """Writes one scheduler trace, step by step."""

    def __init__(self, trace: Trace, name: str) -> None:
        """Replay the trace on the model; nothing is written yet."""
        self.trace = trace
        self.config: SchedulerConfig = trace.setup
        self.test = RustTest(name, "#[tokio::test(start_paused = true)]")
        harness = KIND.harness(self.config, KIND.model_factory())
        harness.check_states = False
        self.reports = [harness.step(step.op) for step in trace.steps]
        self.now_ms = 0
        self.step = 0
        self.what = ""

    def write(self) -> RustTest:
        """Header, setup, then every step with its assertions."""
        self.test.use(*IMPORTS)
        self._declare()
        for recorded, report in zip(self.trace.steps, self.reports, strict=True):
            self.step, self.what = recorded.index, show_op(recorded.op)
            self.test.step(recorded.index, self.what, recorded.comment)
            self._operation(recorded.op, report.expected)
            assert isinstance(report.model_view, SchedulerObservation)
            self._observe(report.model_view)
        self.test.line(
            "",
            "// The end: the scheduler's tasks stop with the worker-config channel.",
            "shutdown.cancel();",
            "drop(configs);",
        )
        self._header()
        return self.test

    def _message(self) -> str:
        return rust_string(f"step {self.step}: {one_line(self.what)}")

    def _declare(self) -> None:
        capacities = self.config.capacities_tokens
        configs = ", ".join(
            f"({index}, Capacity({rust_int(tokens)}))"
            for index, tokens in enumerate(capacities)
        )
        ranges = ", ".join(f"({index}, (0, 1))" for index in range(len(capacities)))
        self.test.declare(
            *HELPERS,
            "let origin = Instant::now();",
            f"let (configs, configs_rx) = watch::channel(HashMap::from([{configs}]));",
            "let slots = Arc::new(ActiveSequencesMultiWorker::new_without_expiry(",
            f"NoopSequencePublisher, {BLOCK_SIZE}, HashMap::from([{ranges}]), "
            'false, 0, "decode"));',
            "let selector = WorkerSelectionPolicy::new(KvRouterConfig::default(), "
            '"decode", Vec::new(), Box::new(LowestWorker));',
            "let shutdown = CancellationToken::new();",
            "let available: Available = Arc::default();",
            "let provider_set = Arc::clone(&available);",
            "let provider: WorkerAvailabilityProvider = "
            "Arc::new(move |_| provider_set.lock().unwrap().clone());",
            "let scheduler: Arc<Scheduler> = Arc::new(LocalScheduler::new(",
            "slots, configs_rx, "
            "PolicyProfile::synthetic(Some(1.0), RouterQueuePolicy::Fcfs),",
            f"{BLOCK_SIZE}, selector, None, None, None, Some(provider),",
            f"Duration::from_secs({rust_int(RECHECK_INTERVAL_S)}), true, "
            'shutdown.clone(), "decode", true));',
            "let due: DueTimes = Arc::default();",
            "assert!(scheduler.install_request_classifier("
            "Box::new(Due(Arc::clone(&due))), shutdown.clone()));",
            "let outcomes: Outcomes = Arc::default();",
            "let mut callers: HashMap<String, "
            "(JoinHandle<()>, Option<RequestLifecycle>)> = HashMap::new();",
            "settle().await;",
        )

    def _operation(self, op: SchedulerOp, outcome: SchedulerOutcome) -> None:
        test = self.test
        match op:
            case Schedule():
                due = "None" if op.due_ms is None else f"Some({rust_int(op.due_ms)})"
                rid = rust_string(op.request_id)
                arguments = (
                    f"{rid}, {op.worker}, {str(op.pinned).lower()}, "
                    f"{rust_int(op.isl_tokens)}, {due}"
                )
                test.line(
                    "let caller = schedule(&scheduler, &due, &outcomes, origin, "
                    f"{arguments});",
                    f"callers.insert({rid}.to_string(), caller);",
                )
            case Free(request_id):
                freed = f"scheduler.free({rust_string(request_id)}).await"
                test.line(
                    f"{freed}.expect({self._message()});"
                    if outcome.error is None
                    else f"assert!({freed}.is_err(), {self._message()});"
                )
            case SetCapacity(worker, tokens):
                test.line(
                    "configs.send_modify(|configs| { "
                    f"configs.insert({worker}, Capacity({rust_int(tokens)})); }});"
                )
            case UpdateQueue():
                test.line("scheduler.update_queue().await;")
            case SetAvailable(workers=workers):
                test.line(f"*available.lock().unwrap() = {_available_set(workers)};")
            case Advance(delta_ms):
                self.now_ms += delta_ms
                test.line(
                    "tokio::time::sleep_until(origin + "
                    f"Duration::from_millis({rust_int(self.now_ms)})).await;"
                )
            case Cancel(request_id) if outcome.error is not None:
                test.line(
                    "// The binding refuses this before calling the crate "
                    f"({outcome.error}): no caller has this id."
                )
                return
            case Cancel(request_id) if outcome.value:
                caller = f"callers.get_mut({rust_string(request_id)})"
                test.line(
                    f"let (task, lifecycle) = {caller}.expect({self._message()});",
                    "task.abort();",
                    "drop(lifecycle.take());",
                )
            case Cancel():
                test.line("// Its future already returned: there is nothing to drop.")
                return
        test.line("settle().await;")

    def _observe(self, seen: SchedulerObservation) -> None:
        message = self._message()
        for request_id, fate in seen.fates:
            self.test.line(
                f"assert_eq!(fate(&outcomes, {rust_string(request_id)}), "
                f"{_fate(fate)}, {message});"
            )
        booked = set(seen.booked)
        for request_id, _ in seen.fates:
            negation = "" if request_id in booked else "!"
            self.test.line(
                f"assert!({negation}scheduler.has_request({rust_string(request_id)}), "
                f"{message});"
            )
        stats = seen.stats[0]
        self.test.line(
            "let stats = scheduler.class_queue_stats(0).unwrap();",
            "assert_eq!((scheduler.pending_count(), scheduler.pending_isl_tokens(), "
            "stats.pending_count, stats.pending_isl_tokens, "
            "stats.pending_cached_tokens, stats.received_total, "
            "stats.rejected_due_time_passed_total), "
            f"({seen.pending_count}, {rust_int(seen.pending_isl_tokens)}, "
            f"{stats.pending_count}, {rust_int(stats.pending_isl_tokens)}, "
            f"{stats.pending_cached_tokens}, {stats.received_total}, "
            f"{stats.rejected_due_time_passed_total}), {message});",
        )

    def _header(self) -> None:
        facts = [
            (
                "Needs tokio-util (`CancellationToken`) beside tokio; calls no "
                "hook of the `testing` feature."
            ),
            f"Setup: {KIND.describe(self.config)}.",
        ]
        self.test.header = header(self.trace, facts)


def _fate(fate: Fate) -> str:
    """A fate as `fate(...)` returns it: None while waiting or once cancelled."""
    if fate.kind in {"waiting", "cancelled"}:
        return "None"
    at_ms = rust_int(fate.at_ms or 0)
    if fate.kind == "dispatched":
        return f"Some((Ok({fate.detail}), {at_ms}))"
    return f"Some((Err({rust_string(fate.detail or '')}), {at_ms}))"
