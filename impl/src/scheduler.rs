//! Binding for `LocalScheduler`, the public scheduler that owns the router's
//! admission queue (`SchedulerQueue` over `PolicyQueue`).
//!
//! The scheduler runs a background actor and three helper tasks; each
//! `Scheduler` therefore owns a current-thread Tokio runtime started with paused
//! time (as the affinity binding does), and every call runs inside it and then
//! lets every task it made ready run before returning. Time moves only through
//! `advance_clock(now_ns)`.
//!
//! What the binding chooses (each a row of the README's "Production under test"
//! table, `scheduler_binding`):
//!
//! * the workers are fixed at construction (ids `0..n`, one data-parallel rank
//!   each); a worker's configuration is its capacity alone
//!   (`max_num_batched_tokens`), changed through the scheduler's worker-config
//!   watch, which the scheduler monitors (`monitor_worker_configs = true`);
//! * the policy profile: one class (`PolicyProfile::synthetic(Some(busy_threshold_frac),
//!   Fcfs)`), or the root profile of a router policy document the caller gives
//!   (`RouterPolicyConfig::from_yaml`, then `resolve_profile(None,
//!   Some(busy_threshold_frac), Fcfs)`), as Dynamo's `policy-class-queues.yaml`
//!   configures several classes; a no-op sequence publisher, a tracker without the active-request
//!   expiry guard (`ActiveSequencesMultiWorker::new_without_expiry`), no
//!   prefill-load estimator, no overlap refresh, no overload provider;
//! * an availability provider of the binding's own
//!   (`WorkerAvailabilityProvider`): it answers every request with the set the
//!   caller last gave `set_available` (`None`, the default: no availability
//!   source, as when none is installed). Changing the set tells the scheduler
//!   nothing (no capacity hint), as a health source that changes its mind
//!   between calls does;
//! * the periodic recheck interval is `RECHECK_INTERVAL`, beyond the clock's
//!   reach (`CLOCK_NS_MAX`), so every recheck the suite sees comes from a call;
//! * selection: `WorkerSelectionPolicy` with no scorers and a picker of the
//!   binding's own that takes the lowest worker id among the candidates the
//!   crate offers; every request names one worker (pinned, or as its only
//!   allowed worker), so the crate offers one candidate and the picker has no
//!   choice to make;
//! * due times: a classifier of the binding's own (installed with
//!   `install_request_classifier`) sets `ClassifyRequest::set_due_at(origin +
//!   due_ns)` for a request that was scheduled with a due time, and
//!   `ClassifyRequest::set_policy_class(name)` for a request scheduled with a
//!   class name (the crate resolves it strictly, `resolve_class_index_strict`);
//!   every request opens a lifecycle with `begin_request_lifecycle` so the
//!   classifier sees it. A request's strict priority is the caller's
//!   (`ScheduleRequest::strict_priority`);
//!   `due_ns` is a `u128`: a due time may lie centuries past the clock's reach
//!   (as far as `Instant` goes), where the queue caps its due keys;
//! * the clock moves by explicit steps (`tokio::time::advance`), first to each
//!   due time the binding handed the crate on the way, then to the target, in
//!   pieces of at most `STEP_MAX`: the actor's timer sleeps until exactly such
//!   a due time, so it fires at its own instant, and a step never waits for
//!   the runtime to go idle. The clock reaches 600 years (`CLOCK_NS_MAX`).
//!
//! A request's caller is a spawned task awaiting
//! `LocalScheduler::schedule_request`; cancelling a request aborts that task,
//! which drops the caller's future (and with it the admission lease and the
//! response receiver) exactly as a client that goes away does. A caller may
//! also be scheduled to go away at a point of the request's life that a
//! caller cannot reach between two calls (`LeaveAt`): while its classifier
//! runs (the binding's classifier keeps that request's classification
//! pending), once its enqueue command is sent but before the actor
//! acknowledged it (its future is dropped at the first `Pending` after the
//! classifier saw it), or once its request holds a booking but before the
//! caller took the response (its future is dropped at the first poll after
//! `has_request` turns true).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

// Every crate item from the module that defines it (or `plugins`, where the
// crate points its users): 1.6.1 marks the root and `scheduling` re-exports of
// the plugin traits "TODO(v1.7): Remove".
use dynamo_kv_router::plugins::request_classifier::{
    ClassifyFuture, ClassifyRequest, RequestClassifier,
};
use dynamo_kv_router::plugins::worker_selection::{
    WorkerInputView, WorkerPicker, WorkerSelectionContext, WorkerSelectionPolicy,
};
use dynamo_kv_router::protocols::{RoutingConstraints, WorkerConfigLike, WorkerId, WorkerWithDpRank};
use dynamo_kv_router::scheduling::config::{KvRouterConfig, RouterQueuePolicy};
use dynamo_kv_router::scheduling::{
    KvSchedulerError, LocalScheduler, OverlapSignals, PolicyProfile, RequestLifecycle, ScheduleMode,
    ScheduleRequest, WorkerAvailabilityProvider, WorkerSelectionPolicyError,
};
use dynamo_kv_router::scheduling::policy_config::RouterPolicyConfig;
use dynamo_kv_router::sequences::multi_worker::{ActiveSequencesMultiWorker, NoopSequencePublisher};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::affinity::{paused_runtime, settle_for};
use crate::{HandleError, guard, unknown_to_suite};

create_exception!(_native, SchedulerError, PyException, "An error the scheduler returned (SequenceError).");
create_exception!(_native, SchedulerUsageError, PyException, "A scheduler call the binding cannot make.");

/// Seconds in a (Julian) year.
const YEAR_S: u64 = 31_557_600;

/// The furthest the binding moves a scheduler's clock from its origin: 600
/// years, past the 584.5 years (2^64 ns) at which the queue caps its due keys.
/// Beyond it the periodic recheck (`RECHECK_INTERVAL`) could fire.
const CLOCK_NS_MAX: u128 = 600 * YEAR_S as u128 * 1_000_000_000;

/// The scheduler's periodic recheck interval: 1,200 years, past `CLOCK_NS_MAX`.
const RECHECK_INTERVAL: Duration = Duration::from_secs(1_200 * YEAR_S);

/// The longest single move of the paused clock: 2^29 ms (about six days),
/// within one slot of the Tokio timer wheel's top level (2^30 ms).
const STEP_MAX: Duration = Duration::from_millis(1 << 29);

/// Yields that let the tasks a call made ready run before Python regains
/// control. A schedule crosses four tasks (caller, classifier, actor, caller);
/// each yield of the current-thread runtime runs every ready task once.
const SETTLE_YIELDS: usize = 64;

/// Block size of the sequence tracker (tokens per KV block). Requests carry no
/// token sequence, so it affects no decision the suite observes.
const BLOCK_SIZE: u32 = 16;

/// A worker's configuration: its capacity, nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
struct WorkerCapacity {
    max_num_batched_tokens: u64,
}

impl WorkerConfigLike for WorkerCapacity {
    fn data_parallel_start_rank(&self) -> u32 {
        0
    }

    fn data_parallel_size(&self) -> u32 {
        1
    }

    fn max_num_batched_tokens(&self) -> Option<u64> {
        Some(self.max_num_batched_tokens)
    }

    fn total_kv_blocks(&self) -> Option<u64> {
        None
    }
}

/// Takes the candidate with the lowest worker id (the crate gives no row order).
struct LowestWorkerPicker;

impl WorkerPicker for LowestWorkerPicker {
    fn pick(
        &mut self,
        _context: &WorkerSelectionContext<'_>,
        input: WorkerInputView<'_>,
    ) -> Result<usize, WorkerSelectionPolicyError> {
        input
            .candidates()
            .iter()
            .enumerate()
            .min_by_key(|(_, candidate)| candidate.worker())
            .map(|(row, _)| row)
            .ok_or_else(|| WorkerSelectionPolicyError::Failed("no candidate".to_string()))
    }
}

/// What the classifier sets per request id besides the due time, and which
/// requests it has seen.
#[derive(Default)]
struct ClassifierInputs {
    /// The policy class name the caller gave at `schedule`.
    policy_class: HashMap<String, String>,
    /// Requests whose classification stays pending (their caller goes away
    /// while the classifier runs).
    hold: HashSet<String>,
    /// Requests the classifier was called for.
    classified: HashSet<String>,
}

type Inputs = Arc<Mutex<ClassifierInputs>>;

/// Sets the due time and the policy class the caller gave at `schedule`, keyed
/// by request id; keeps a held request's classification pending.
struct DueTimeClassifier {
    due: Arc<Mutex<HashMap<String, Instant>>>,
    inputs: Inputs,
}

impl RequestClassifier for DueTimeClassifier {
    fn classify(&mut self, mut request: ClassifyRequest) -> ClassifyFuture {
        let Some(id) = request.request_id().map(str::to_owned) else {
            return Box::pin(async move { Ok(request) });
        };
        if let Some(due_at) = self.due.lock().ok().and_then(|due| due.get(&id).copied()) {
            request.set_due_at(due_at);
        }
        let mut hold = false;
        if let Ok(mut inputs) = self.inputs.lock() {
            if let Some(class) = inputs.policy_class.get(&id) {
                request.set_policy_class(class.clone());
            }
            hold = inputs.hold.contains(&id);
            inputs.classified.insert(id);
        }
        if hold {
            return Box::pin(std::future::pending());
        }
        Box::pin(async move { Ok(request) })
    }
}

/// A point of a request's life at which its caller goes away on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaveAt {
    /// While the classifier runs: the request never reaches the queue.
    Classifying,
    /// Once the enqueue command is sent, before the actor acknowledged it.
    Admission,
    /// Once the request holds a booking, before the caller took the response.
    Booking,
}

fn leave_at(word: &str) -> PyResult<LeaveAt> {
    match word {
        "classifying" => Ok(LeaveAt::Classifying),
        "admission" => Ok(LeaveAt::Admission),
        "booking" => Ok(LeaveAt::Booking),
        other => Err(SchedulerUsageError::new_err(format!("unknown leave point {other:?}"))),
    }
}

/// When each caller that went away on its own did, in ns since construction.
type Left = Arc<Mutex<BTreeMap<String, u128>>>;

/// The workers the availability provider answers with (`None`: no source).
type Available = Arc<Mutex<Option<Arc<HashSet<WorkerId>>>>>;

type Scheduler = LocalScheduler<NoopSequencePublisher, WorkerCapacity, WorkerSelectionPolicy>;

/// What the caller's future returned (the worker id, or the error's kind), and
/// when: nanoseconds since construction on the paused clock.
type Outcome = (Result<WorkerId, String>, u128);

/// One request's caller: its task, its lifecycle, and its outcome once known.
struct Caller {
    task: JoinHandle<()>,
    lifecycle: Option<RequestLifecycle>,
    /// When the binding dropped the caller's future, in ns since construction.
    cancelled_at_ns: Option<u128>,
}

/// The kind of a `KvSchedulerError`, as one stable word.
fn error_kind(error: &KvSchedulerError) -> String {
    match error {
        KvSchedulerError::NoEndpoints => "no_endpoints".to_string(),
        KvSchedulerError::QueueRejected(_) => "queue_rejected".to_string(),
        KvSchedulerError::DeadlineExceeded => "deadline_exceeded".to_string(),
        KvSchedulerError::SubscriberShutdown => "subscriber_shutdown".to_string(),
        KvSchedulerError::BookingFailed(_) => "booking_failed".to_string(),
        KvSchedulerError::PinnedWorkerNotAllowed { .. } => "pinned_worker_not_allowed".to_string(),
        other => unknown_to_suite("an error", other),
    }
}

/// `LocalScheduler` over a no-op publisher and a fixed set of workers, in a
/// paused current-thread Tokio runtime.
#[pyclass(unsendable, module = "impl._native")]
pub struct SchedulerTable {
    // Dropped before the runtime (field order), inside its context (Drop).
    scheduler: Option<Arc<Scheduler>>,
    configs: watch::Sender<HashMap<WorkerId, WorkerCapacity>>,
    shutdown: CancellationToken,
    due: Arc<Mutex<HashMap<String, Instant>>>,
    inputs: Inputs,
    left: Left,
    available: Available,
    outcomes: Arc<Mutex<BTreeMap<String, Outcome>>>,
    callers: BTreeMap<String, Caller>,
    origin: Instant,
    now_ns: u128,
    runtime: Runtime,
}

impl Drop for SchedulerTable {
    fn drop(&mut self) {
        let _context = self.runtime.enter();
        self.shutdown.cancel();
        let callers = std::mem::take(&mut self.callers);
        let scheduler = self.scheduler.take();
        if let Err(error) = guard(|| {
            for caller in callers.into_values() {
                caller.task.abort();
                drop(caller.lifecycle);
            }
            drop(scheduler);
            Ok(())
        }) {
            eprintln!("impl._native: dropping the scheduler: {error}");
        }
    }
}

/// Lets every task that a call made ready run.
async fn settle() {
    settle_for(SETTLE_YIELDS).await;
}

impl SchedulerTable {
    fn scheduler(&self) -> PyResult<Arc<Scheduler>> {
        self.scheduler
            .clone()
            .ok_or_else(|| HandleError::new_err("scheduler already closed"))
    }

    fn settle(&self) {
        self.runtime.block_on(settle());
    }
}

#[pymethods]
impl SchedulerTable {
    /// `LocalScheduler::new` over workers `0..len(capacities)`, worker `i` with
    /// `max_num_batched_tokens = capacities[i]`; one class busy above
    /// `busy_threshold_frac` of a worker's capacity, or the root profile of the
    /// router policy document `profile_yaml` (the fraction is its fallback
    /// threshold); installs the binding's classifier
    /// (`install_request_classifier`).
    #[new]
    #[pyo3(signature = (capacities, busy_threshold_frac, profile_yaml=None))]
    fn new(capacities: Vec<u64>, busy_threshold_frac: f64, profile_yaml: Option<&str>) -> PyResult<Self> {
        guard(|| {
            let profile = match profile_yaml {
                None => PolicyProfile::synthetic(Some(busy_threshold_frac), RouterQueuePolicy::Fcfs),
                Some(yaml) => RouterPolicyConfig::from_yaml(yaml)
                    .map_err(|error| SchedulerUsageError::new_err(error.to_string()))?
                    .resolve_profile(None, Some(busy_threshold_frac), RouterQueuePolicy::Fcfs),
            };
            let runtime = paused_runtime()?;
            let configs: HashMap<WorkerId, WorkerCapacity> = capacities
                .iter()
                .enumerate()
                .map(|(id, &tokens)| {
                    (id as WorkerId, WorkerCapacity { max_num_batched_tokens: tokens })
                })
                .collect();
            let dp_range = configs.keys().map(|&id| (id, (0, 1))).collect();
            let due = Arc::new(Mutex::new(HashMap::new()));
            let inputs: Inputs = Arc::new(Mutex::new(ClassifierInputs::default()));
            let available: Available = Arc::new(Mutex::new(None));
            let provider_set = Arc::clone(&available);
            let provider: WorkerAvailabilityProvider = Arc::new(move |_request| {
                provider_set.lock().ok().and_then(|set| set.clone())
            });
            let shutdown = CancellationToken::new();
            let (configs_tx, configs_rx) = watch::channel(configs);
            let (scheduler, origin) = runtime.block_on(async {
                let origin = Instant::now();
                let slots = Arc::new(ActiveSequencesMultiWorker::new_without_expiry(
                    NoopSequencePublisher,
                    BLOCK_SIZE as usize,
                    dp_range,
                    false,
                    0,
                    "decode",
                ));
                let selector = WorkerSelectionPolicy::new(
                    KvRouterConfig::default(),
                    "decode",
                    Vec::new(),
                    Box::new(LowestWorkerPicker),
                );
                let scheduler = LocalScheduler::new(
                    slots,
                    configs_rx,
                    profile,
                    BLOCK_SIZE,
                    selector,
                    None,
                    None,
                    None,
                    Some(provider),
                    RECHECK_INTERVAL,
                    true,
                    shutdown.clone(),
                    "decode",
                    true,
                );
                let installed = scheduler.install_request_classifier(
                    Box::new(DueTimeClassifier { due: Arc::clone(&due), inputs: Arc::clone(&inputs) }),
                    shutdown.clone(),
                );
                settle().await;
                (Arc::new(scheduler), (origin, installed))
            });
            let (origin, installed) = origin;
            if !installed {
                return Err(SchedulerUsageError::new_err("classifier already installed"));
            }
            Ok(Self {
                scheduler: Some(scheduler),
                configs: configs_tx,
                shutdown,
                due,
                inputs,
                left: Arc::new(Mutex::new(BTreeMap::new())),
                available,
                outcomes: Arc::new(Mutex::new(BTreeMap::new())),
                callers: BTreeMap::new(),
                origin,
                now_ns: 0,
                runtime,
            })
        })
    }

    /// The paused clock, in nanoseconds since construction.
    #[getter]
    fn now_ns(&self) -> u128 {
        self.now_ns
    }

    /// A caller schedules `request_id` with `LocalScheduler::schedule_request`
    /// (mode `TrackedWithLifecycle`, after `begin_request_lifecycle`), on
    /// `worker` as its pinned worker (`pinned`) or as its only allowed worker.
    /// `due_ns` (since construction) becomes the request's due time through the
    /// classifier, and so does `policy_class` (a class name of the profile);
    /// `strict_priority` is the request's. `leave_at` ("classifying",
    /// "admission" or "booking") makes the caller go away at that point of the
    /// request's life. Returns once every task has run; `fate` tells the outcome.
    #[pyo3(signature = (
        request_id, worker, pinned, isl_tokens, due_ns=None, policy_class=None,
        strict_priority=0, leave_at=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn schedule(
        &mut self,
        request_id: String,
        worker: WorkerId,
        pinned: bool,
        isl_tokens: usize,
        due_ns: Option<u128>,
        policy_class: Option<String>,
        strict_priority: u32,
        leave_at: Option<&str>,
    ) -> PyResult<()> {
        let leave = leave_at.map(self::leave_at).transpose()?;
        let held = request_id.clone();
        if self.callers.contains_key(&request_id) {
            return Err(SchedulerUsageError::new_err(format!(
                "request id {request_id:?} already has a caller"
            )));
        }
        let due_at = match due_ns {
            None => None,
            Some(due_ns) => Some(instant_after(self.origin, due_ns).ok_or_else(|| {
                SchedulerUsageError::new_err(format!(
                    "due time {due_ns} ns after the origin is beyond the platform's Instant"
                ))
            })?),
        };
        let scheduler = self.scheduler()?;
        guard(|| {
            let _context = self.runtime.enter();
            let lifecycle = scheduler
                .begin_request_lifecycle(&request_id)
                .map_err(|error| SchedulerError::new_err(error_kind(&error)))?;
            if let Some(due_at) = due_at {
                self.due
                    .lock()
                    .map_err(|_| HandleError::new_err("due-time map poisoned"))?
                    .insert(request_id.clone(), due_at);
            }
            {
                let mut inputs = self
                    .inputs
                    .lock()
                    .map_err(|_| HandleError::new_err("classifier inputs poisoned"))?;
                if let Some(class) = policy_class {
                    inputs.policy_class.insert(request_id.clone(), class);
                }
                if leave == Some(LeaveAt::Classifying) {
                    inputs.hold.insert(request_id.clone());
                }
            }
            let target = WorkerWithDpRank::new(worker, 0);
            // A literal of all 19 fields: 1.6.1 gives `ScheduleRequest` no
            // `Default` and no builder, so a field the crate adds stops this
            // compiling (the gate's refusal names it) until it is set here.
            let request = ScheduleRequest {
                mode: ScheduleMode::TrackedWithLifecycle { request_id: request_id.clone() },
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
                strict_priority,
                policy_class: None,
                session_context: None,
                overlap: OverlapSignals::default(),
                kv_transfer_candidates: None,
                retain_kv_transfer_chain: false,
                shared_cache_hits: None,
            };
            let outcomes = Arc::clone(&self.outcomes);
            let left = Arc::clone(&self.left);
            let inputs = Arc::clone(&self.inputs);
            let id = request_id.clone();
            let origin = self.origin;
            let task = self.runtime.spawn(async move {
                let watcher = Arc::clone(&scheduler);
                let mut call = Box::pin(scheduler.schedule_request(request));
                let finished = std::future::poll_fn(|cx| {
                    if leave == Some(LeaveAt::Booking) && watcher.has_request(&id) {
                        return Poll::Ready(None);
                    }
                    match call.as_mut().poll(cx) {
                        Poll::Ready(outcome) => Poll::Ready(Some(outcome)),
                        Poll::Pending
                            if leave == Some(LeaveAt::Admission)
                                && inputs.lock().is_ok_and(|inputs| inputs.classified.contains(&id)) =>
                        {
                            Poll::Ready(None)
                        }
                        Poll::Pending => Poll::Pending,
                    }
                })
                .await;
                drop(call);
                let at_ns = Instant::now().duration_since(origin).as_nanos();
                match finished {
                    Some(outcome) => {
                        let outcome = outcome
                            .map(|response| response.best_worker.worker_id)
                            .map_err(|error| error_kind(&error));
                        if let Ok(mut outcomes) = outcomes.lock() {
                            outcomes.insert(id, (outcome, at_ns));
                        }
                    }
                    None => {
                        if let Ok(mut left) = left.lock() {
                            left.insert(id, at_ns);
                        }
                    }
                }
            });
            self.callers.insert(request_id, Caller { task, lifecycle, cancelled_at_ns: None });
            self.settle();
            Ok(())
        })?;
        if leave == Some(LeaveAt::Classifying) {
            self.cancel(&held)?;
        }
        Ok(())
    }

    /// A request's fate and when it was sealed (ns since construction):
    /// ("waiting", None, None), ("dispatched", worker id, t), ("rejected",
    /// error kind, t) or ("cancelled", None, t).
    fn fate(&self, request_id: &str) -> PyResult<(&'static str, Option<String>, Option<u128>)> {
        let caller = self
            .callers
            .get(request_id)
            .ok_or_else(|| SchedulerUsageError::new_err(format!("unknown request id {request_id:?}")))?;
        let outcomes = self
            .outcomes
            .lock()
            .map_err(|_| HandleError::new_err("outcome map poisoned"))?;
        let left = self
            .left
            .lock()
            .map_err(|_| HandleError::new_err("left-caller map poisoned"))?
            .get(request_id)
            .copied();
        Ok(match (outcomes.get(request_id), caller.cancelled_at_ns.or(left)) {
            (Some((Ok(worker), at_ns)), _) => ("dispatched", Some(worker.to_string()), Some(*at_ns)),
            (Some((Err(kind), at_ns)), _) => ("rejected", Some(kind.clone()), Some(*at_ns)),
            (None, Some(at_ns)) => ("cancelled", None, Some(at_ns)),
            (None, None) => ("waiting", None, None),
        })
    }

    /// The caller of `request_id` goes away: its task is aborted (dropping its
    /// future, the admission lease and the response receiver) and its request
    /// lifecycle is dropped. Returns whether the caller was still waiting.
    fn cancel(&mut self, request_id: &str) -> PyResult<bool> {
        let outcomes = Arc::clone(&self.outcomes);
        let caller = self
            .callers
            .get_mut(request_id)
            .ok_or_else(|| SchedulerUsageError::new_err(format!("unknown request id {request_id:?}")))?;
        let finished = outcomes
            .lock()
            .map_err(|_| HandleError::new_err("outcome map poisoned"))?
            .contains_key(request_id)
            || self
                .left
                .lock()
                .map_err(|_| HandleError::new_err("left-caller map poisoned"))?
                .contains_key(request_id);
        if finished || caller.cancelled_at_ns.is_some() {
            return Ok(false);
        }
        caller.cancelled_at_ns = Some(self.now_ns);
        let lifecycle = caller.lifecycle.take();
        caller.task.abort();
        guard(|| {
            let _context = self.runtime.enter();
            drop(lifecycle);
            self.settle();
            Ok(())
        })?;
        // The abort raced nothing: the runtime only runs inside `settle`.
        Ok(true)
    }

    /// `LocalScheduler::free(request_id)`; the crate's `SequenceError` is
    /// raised as `SchedulerError`.
    fn free(&mut self, request_id: &str) -> PyResult<()> {
        let scheduler = self.scheduler()?;
        guard(|| {
            let result = self.runtime.block_on(async {
                let result = scheduler.free(request_id).await;
                settle().await;
                result
            });
            result.map_err(|error| SchedulerError::new_err(error.to_string()))
        })
    }

    /// Sends worker `worker`'s new capacity through the worker-config watch the
    /// scheduler monitors (which reconciles and rechecks its queue). The worker
    /// set is fixed at construction (a limit of the binding): another id is
    /// refused before anything is sent.
    fn set_capacity(&mut self, worker: WorkerId, max_num_batched_tokens: u64) -> PyResult<()> {
        if !self.configs.borrow().contains_key(&worker) {
            return Err(SchedulerUsageError::new_err(format!(
                "unknown worker {worker}: the binding's workers are fixed at construction"
            )));
        }
        guard(|| {
            let _context = self.runtime.enter();
            self.configs.send_modify(|configs| {
                configs.insert(worker, WorkerCapacity { max_num_batched_tokens });
            });
            self.settle();
            Ok(())
        })
    }

    /// `LocalScheduler::update_queue()`, awaited.
    fn update_queue(&mut self) -> PyResult<()> {
        let scheduler = self.scheduler()?;
        guard(|| {
            self.runtime.block_on(async {
                scheduler.update_queue().await;
                settle().await;
            });
            Ok(())
        })
    }

    /// `LocalScheduler::pending_count()`.
    fn pending_count(&self) -> PyResult<usize> {
        let scheduler = self.scheduler()?;
        guard(|| Ok(scheduler.pending_count()))
    }

    /// `LocalScheduler::pending_isl_tokens()`.
    fn pending_isl_tokens(&self) -> PyResult<usize> {
        let scheduler = self.scheduler()?;
        guard(|| Ok(scheduler.pending_isl_tokens()))
    }

    /// `LocalScheduler::has_request(request_id)`: whether it holds a booking.
    fn has_request(&self, request_id: &str) -> PyResult<bool> {
        let scheduler = self.scheduler()?;
        guard(|| Ok(scheduler.has_request(request_id)))
    }

    /// `LocalScheduler::class_queue_stats(class_index)` as (pending_count,
    /// pending_isl_tokens, pending_cached_tokens, received_total,
    /// rejected_due_time_passed_total), or None for an unknown class.
    fn class_queue_stats(
        &self,
        class_index: usize,
    ) -> PyResult<Option<(usize, usize, usize, u64, u64)>> {
        let scheduler = self.scheduler()?;
        guard(|| {
            Ok(scheduler.class_queue_stats(class_index).map(|stats| {
                (
                    stats.pending_count,
                    stats.pending_isl_tokens,
                    stats.pending_cached_tokens,
                    stats.received_total,
                    stats.rejected_due_time_passed_total,
                )
            }))
        })
    }

    /// `LocalScheduler::get_potential_loads` read for the active requests per
    /// worker, as (worker id, active requests), sorted by worker id.
    fn active_requests(&self) -> PyResult<Vec<(WorkerId, usize)>> {
        let scheduler = self.scheduler()?;
        guard(|| {
            let _context = self.runtime.enter();
            let mut loads: Vec<(WorkerId, usize)> = scheduler
                .get_potential_loads(None, 0, Default::default(), false)
                .into_iter()
                .map(|load| (load.worker_id, load.active_requests))
                .collect();
            loads.sort_unstable();
            Ok(loads)
        })
    }

    /// The set the availability provider answers with from now on: the ids
    /// given (sorted, duplicates dropped), or `None` for no availability source.
    /// Nothing runs and the scheduler is not told: it reads the set the next
    /// time it asks its provider.
    #[pyo3(signature = (workers=None))]
    fn set_available(&mut self, workers: Option<Vec<WorkerId>>) -> PyResult<()> {
        let set = workers.map(|workers| Arc::new(workers.into_iter().collect::<HashSet<_>>()));
        *self
            .available
            .lock()
            .map_err(|_| HandleError::new_err("availability set poisoned"))? = set;
        Ok(())
    }

    /// The set the availability provider answers with, sorted (`None`: no source).
    fn available(&self) -> PyResult<Option<Vec<WorkerId>>> {
        let set = self
            .available
            .lock()
            .map_err(|_| HandleError::new_err("availability set poisoned"))?;
        Ok(set.as_ref().map(|set| set.iter().copied().collect::<BTreeSet<_>>().into_iter().collect()))
    }

    /// Moves the paused Tokio clock to `now_ns` by explicit steps: to each due
    /// time the binding handed the crate that lies on the way (the actor's
    /// timer sleeps until exactly one of them), letting every task run after
    /// each step, then to `now_ns`. No step waits for the runtime to go idle, so
    /// an actor that never sleeps cannot stall the clock.
    ///
    /// A timer at an instant the binding did not hand the crate (a capped due
    /// key's, `u64::MAX - 1` ns after the queue's deadline origin) fires at the
    /// end of the step that passes it: move the clock onto that instant to see
    /// it fire there.
    fn advance_clock(&mut self, now_ns: u128) -> PyResult<()> {
        if now_ns < self.now_ns {
            return Err(SchedulerUsageError::new_err("scheduler clock cannot move backwards"));
        }
        if now_ns > CLOCK_NS_MAX {
            return Err(SchedulerUsageError::new_err(
                "scheduler clock beyond the binding's supported range",
            ));
        }
        let out_of_range = || SchedulerUsageError::new_err("scheduler clock beyond the binding's supported range");
        let target = instant_after(self.origin, now_ns).ok_or_else(out_of_range)?;
        let current = instant_after(self.origin, self.now_ns).ok_or_else(out_of_range)?;
        let stops: BTreeSet<Instant> = self
            .due
            .lock()
            .map_err(|_| HandleError::new_err("due-time map poisoned"))?
            .values()
            .map(|&due_at| timer_tick(self.origin, due_at))
            .filter(|&tick| current < tick && tick <= target)
            .collect();
        guard(|| {
            let reached = self.runtime.block_on(async move {
                for stop in stops.into_iter().chain(std::iter::once(target)) {
                    // Long moves go in pieces within the timer wheel's slot span,
                    // so its far levels are processed on the way.
                    loop {
                        let now = Instant::now();
                        let step = stop.saturating_duration_since(now).min(STEP_MAX);
                        if step.is_zero() {
                            break;
                        }
                        tokio::time::advance(step).await;
                        settle().await;
                    }
                    settle().await;
                }
                Instant::now()
            });
            if reached != target {
                return Err(crate::RustPanic::new_err(format!(
                    "paused clock drifted: at {:?} after moving to {now_ns} ns",
                    reached.duration_since(self.origin)
                )));
            }
            self.now_ns = now_ns;
            Ok(())
        })
    }
}

/// `origin + due_ns`, or `None` past the platform's `Instant` range.
fn instant_after(origin: Instant, due_ns: u128) -> Option<Instant> {
    let secs = u64::try_from(due_ns / 1_000_000_000).ok()?;
    let nanos = (due_ns % 1_000_000_000) as u32;
    origin.checked_add(Duration::new(secs, nanos))
}

/// The instant a Tokio timer set for `due_at` fires: the first whole
/// millisecond after the runtime's start (the origin) at or after `due_at`.
fn timer_tick(origin: Instant, due_at: Instant) -> Instant {
    let since = due_at.saturating_duration_since(origin);
    let whole_ms = since.as_millis() + u128::from(since.subsec_nanos() % 1_000_000 != 0);
    let secs = (whole_ms / 1_000) as u64;
    let millis = (whole_ms % 1_000) as u32;
    origin.checked_add(Duration::new(secs, millis * 1_000_000)).unwrap_or(due_at)
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add("SchedulerError", py.get_type::<SchedulerError>())?;
    module.add("SchedulerUsageError", py.get_type::<SchedulerUsageError>())?;
    module.add_class::<SchedulerTable>()?;
    Ok(())
}
