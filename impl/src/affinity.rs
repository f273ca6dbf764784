//! Binding for `services::selection::affinity::SessionAffinity`.
//!
//! The published crate (1.6.1) has only the runtime clock: `with_config`
//! spawns a reaper with `tokio::spawn` and every deadline reads
//! `tokio::time::Instant::now()`. Each table therefore owns a current-thread
//! Tokio runtime started with paused time, and every crate call runs inside
//! that runtime's context so `Instant::now()` reads the paused clock. Time moves
//! only through `advance_clock(now_ns)`, which lets every timer that falls due
//! fire at its own instant (the reaper included) before returning.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use dynamo_kv_router::services::selection::affinity::{
    AcquireStep, AffinityError as CrateError, AffinityInitialization, AffinityLease,
    AffinityReplicaSink, AffinityTarget, AffinityVersion, Hold, ReplicaApplyOutcome,
    SessionAffinity, SessionAffinityConfig, SessionAffinityMode, WeakSessionAffinity,
};
use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio::sync::futures::OwnedNotified;
use tokio::time::Instant;

use crate::{AffinityError, Dropped, HandleError, InvalidArgument, ResourceExhausted, guard, unknown_to_suite};

/// The furthest the binding moves a table's clock from its origin: two maximal
/// TTLs. Further advances are rejected (clock overflow) before anything runs.
pub(crate) const CLOCK_NS_MAX: u64 = 2 * 31_536_000 * 1_000_000_000;

pub(crate) type PyTarget = (u64, Option<u32>);
pub(crate) type PyVersion = (u64, u64);
type Published = (String, PyTarget, PyVersion);

/// The `ReplicaApplyOutcome` variant's name (`unknown_to_suite` for one the
/// binding does not know).
pub(crate) fn outcome_name(outcome: ReplicaApplyOutcome) -> String {
    match outcome {
        ReplicaApplyOutcome::Inserted => "Inserted",
        ReplicaApplyOutcome::Refreshed => "Refreshed",
        ReplicaApplyOutcome::ReplacedExpired => "ReplacedExpired",
        ReplicaApplyOutcome::ReplacedNewer => "ReplacedNewer",
        ReplicaApplyOutcome::IgnoredInitializing => "IgnoredInitializing",
        ReplicaApplyOutcome::IgnoredConflict => "IgnoredConflict",
        ReplicaApplyOutcome::RejectedSessionId => "RejectedSessionId",
        ReplicaApplyOutcome::RejectedCapacity => "RejectedCapacity",
        #[allow(unreachable_patterns)]
        other => return unknown_to_suite("an outcome", &other),
    }
    .to_string()
}

pub(crate) fn to_target(target: PyTarget) -> AffinityTarget {
    AffinityTarget::new(target.0, target.1)
}

pub(crate) fn from_target(target: AffinityTarget) -> PyTarget {
    (target.worker_id, target.dp_rank)
}

fn to_py_error(error: CrateError) -> PyErr {
    match error {
        CrateError::InvalidArgument(message) => InvalidArgument::new_err(message),
        CrateError::ResourceExhausted(message) => ResourceExhausted::new_err(message),
        CrateError::Dropped => Dropped::new_err("session affinity table dropped"),
        #[allow(unreachable_patterns)]
        other => AffinityError::new_err(unknown_to_suite("an error", &other)),
    }
}

/// What a reading sink saw of the table from inside `publish`: the session,
/// its `query_target` and its `lease_count` at that moment.
type SinkRead = (String, Option<PyTarget>, Option<usize>);

/// Records every publication so Python can drain them in order.
///
/// With a reader set (`enable_replication_reading`), the sink is a user's sink
/// that calls back into the table: on the publishing thread, inside `publish`,
/// it reads the session's target and lease count. A crate that publishes while
/// it still holds the session's entry deadlocks here; the suite's time limit
/// per test (and per mutant) turns that into a failure.
#[derive(Default)]
struct RecordingSink {
    published: Mutex<Vec<Published>>,
    reader: Mutex<Option<WeakSessionAffinity>>,
    reads: Mutex<Vec<SinkRead>>,
}

impl AffinityReplicaSink for RecordingSink {
    fn publish(&self, session_id: &str, target: AffinityTarget, version: AffinityVersion) {
        self.published.lock().expect("sink poisoned").push((
            session_id.to_string(),
            from_target(target),
            (version.sequence, version.writer_id),
        ));
        let reader = self.reader.lock().expect("sink poisoned").clone();
        if let Some(table) = reader.and_then(|weak| weak.upgrade()) {
            let seen = table
                .query_target(session_id, None)
                .ok()
                .flatten()
                .map(from_target);
            let leases = table.lease_count(session_id);
            self.reads
                .lock()
                .expect("sink poisoned")
                .push((session_id.to_string(), seen, leases));
        }
    }
}

/// A Rust value that Python refers to by number.
enum Handle {
    /// `Hold::Initialize`: commit or abort (drop).
    Init(AffinityInitialization),
    /// `Hold::Bound`: commit, release (drop) or invalidate.
    Bound {
        target: AffinityTarget,
        lease: AffinityLease,
    },
    /// An `AffinityLease` from a commit or a join: release or invalidate.
    Lease(AffinityLease),
    /// `AcquireStep::Wait`: completion is polled without blocking.
    Waiter(Pin<Box<OwnedNotified>>),
    /// A waiter whose notification already arrived.
    WaiterDone,
}

/// `SessionAffinity::with_config` in a paused current-thread Tokio runtime.
#[pyclass(unsendable, module = "impl._native")]
pub struct RuntimeAffinityTable {
    // Field order is drop order: handles release into the table before the
    // table and the runtime go away.
    handles: BTreeMap<u64, Handle>,
    /// `SessionAffinity::downgrade()` results, by number (`upgrade`).
    weak: Vec<WeakSessionAffinity>,
    table: Option<SessionAffinity>,
    sink: Arc<RecordingSink>,
    runtime: Runtime,
    origin: Instant,
    now_ns: u64,
    next_handle: u64,
    /// Built by `with_manual_clock`: time moves through the crate's
    /// `advance_clock`, not through the runtime's paused clock.
    #[cfg_attr(not(feature = "manual-clock"), allow(dead_code))]
    manual: bool,
}

/// Handles and the table are dropped inside the table's runtime and with
/// panics caught: Python may collect a table at any moment (after a failed
/// test, in the garbage collector), and a crate that panics in a handle's
/// `Drop` (AFF-manual computes `now + ttl` on release) would otherwise abort
/// the interpreter. A caught panic is reported on stderr; nothing else can see
/// it at that point.
impl Drop for RuntimeAffinityTable {
    fn drop(&mut self) {
        let _context = self.runtime.enter();
        let handles = std::mem::take(&mut self.handles);
        for (id, handle) in handles {
            if let Err(error) = guard(|| {
                drop(handle);
                Ok(())
            }) {
                eprintln!("impl._native: dropping handle {id} with its table: {error}");
            }
        }
        let table = self.table.take();
        if let Err(error) = guard(|| {
            drop(table);
            Ok(())
        }) {
            eprintln!("impl._native: dropping the table: {error}");
        }
    }
}

/// Yields after a clock move on an affinity table: the reaper needs one poll
/// per tick.
const AFFINITY_SETTLE_YIELDS: usize = 16;

/// Lets every task that a clock move made ready run before Python regains
/// control, in at most `yields` rounds of the current-thread runtime.
pub(crate) async fn settle_for(yields: usize) {
    for _ in 0..yields {
        tokio::task::yield_now().await;
    }
}

/// `settle_for` with an affinity table's bound.
pub(crate) async fn settle() {
    settle_for(AFFINITY_SETTLE_YIELDS).await;
}

/// Moves a paused runtime's clock to `origin + now_ns`, letting every timer due
/// on the way fire at its own instant, with `yields` rounds after each move.
///
/// Tokio timers fire on a 1 ms grid anchored at the runtime's start (the
/// origin), and auto-advance from a point off that grid overshoots by the
/// offset. So: step (no auto-advance) to the next grid point, sleep to the last
/// grid point before the target (auto-advance visits every timer on the way,
/// each at its own instant), then step the sub-millisecond rest, where no
/// timer can fire.
pub(crate) fn advance_paused(runtime: &Runtime, origin: Instant, now_ns: u64, yields: usize) -> PyResult<()> {
    let target = origin + Duration::from_nanos(now_ns);
    let grid = origin + Duration::from_millis(now_ns / 1_000_000);
    let reached = runtime.block_on(async move {
        let since = Instant::now().duration_since(origin);
        let off_grid = since.subsec_nanos() % 1_000_000;
        if off_grid != 0 {
            let next_grid = Instant::now() + Duration::from_nanos(u64::from(1_000_000 - off_grid));
            let step_to = next_grid.min(target);
            tokio::time::advance(step_to.duration_since(Instant::now())).await;
            settle_for(yields).await;
        }
        if grid > Instant::now() {
            tokio::time::sleep_until(grid).await;
            settle_for(yields).await;
        }
        let rest = target.saturating_duration_since(Instant::now());
        if !rest.is_zero() {
            tokio::time::advance(rest).await;
            settle_for(yields).await;
        }
        Instant::now()
    });
    if reached != target {
        return Err(crate::RustPanic::new_err(format!(
            "paused clock drifted: at {:?} after moving to {now_ns} ns",
            reached.duration_since(origin)
        )));
    }
    Ok(())
}

/// A current-thread Tokio runtime whose clock moves only when told.
pub(crate) fn paused_runtime() -> PyResult<Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|error| HandleError::new_err(format!("tokio runtime: {error}")))
}

/// The latest `Instant` reachable from `from` (the end of the platform's range).
#[cfg(feature = "manual-clock")]
fn latest_instant(from: Instant) -> Instant {
    // Binary search over whole nanoseconds: at most 64 + 30 probes.
    let (mut low, mut high) = (Duration::ZERO, Duration::MAX);
    while high - low > Duration::from_nanos(1) {
        let middle = low + (high - low) / 2;
        if from.checked_add(middle).is_some() {
            low = middle;
        } else {
            high = middle;
        }
    }
    from + low
}

/// `SessionAffinityConfig` from the binding's arguments, built the way the
/// crate's callers build it: `SessionAffinityConfig::new(ttl).with_mode(mode)`,
/// then the two limits (public fields, no builder). The mode arrives as text and
/// is parsed by the crate (`SessionAffinityMode: FromStr`, as a configuration
/// file's value would be); its refusal is `InvalidArgument`.
pub(crate) fn affinity_config(
    ttl_ns: u64,
    mode: &str,
    max_entries: usize,
    max_session_id_bytes: usize,
) -> PyResult<SessionAffinityConfig> {
    let mode = mode.parse::<SessionAffinityMode>().map_err(InvalidArgument::new_err)?;
    let mut config = SessionAffinityConfig::new(Duration::from_nanos(ttl_ns)).with_mode(mode);
    config.max_entries = max_entries;
    config.max_session_id_bytes = max_session_id_bytes;
    Ok(config)
}

/// The text `SessionAffinityMode::from_str` reads for `mode`.
fn mode_name(mode: SessionAffinityMode) -> String {
    match mode {
        SessionAffinityMode::Hard => "hard",
        SessionAffinityMode::Soft => "soft",
        #[allow(unreachable_patterns)]
        other => return unknown_to_suite("a mode", &other),
    }
    .to_string()
}

impl RuntimeAffinityTable {
    /// A table at clock time 0 with no handles and an empty sink.
    fn fresh(table: SessionAffinity, runtime: Runtime, origin: Instant, manual: bool) -> Self {
        Self {
            handles: BTreeMap::new(),
            weak: Vec::new(),
            table: Some(table),
            sink: Arc::new(RecordingSink::default()),
            runtime,
            origin,
            now_ns: 0,
            next_handle: 1,
            manual,
        }
    }

    fn table(&self) -> PyResult<&SessionAffinity> {
        self.table
            .as_ref()
            .ok_or_else(|| HandleError::new_err("the affinity table was dropped"))
    }

    fn add_handle(&mut self, handle: Handle) -> u64 {
        let id = self.next_handle;
        self.next_handle += 1;
        self.handles.insert(id, handle);
        id
    }

    fn take_handle(&mut self, id: u64) -> PyResult<Handle> {
        self.handles
            .remove(&id)
            .ok_or_else(|| HandleError::new_err(format!("handle {id} is unknown or consumed")))
    }

    fn handle_kind(&self, id: u64) -> PyResult<&'static str> {
        Ok(match self.handles.get(&id) {
            None => {
                return Err(HandleError::new_err(format!(
                    "handle {id} is unknown or consumed"
                )));
            }
            Some(Handle::Init(_)) => "init",
            Some(Handle::Bound { .. }) => "bound",
            Some(Handle::Lease(_)) => "lease",
            Some(Handle::Waiter(_) | Handle::WaiterDone) => "waiter",
        })
    }

    /// The handle's kind if it is one of `allowed`; otherwise a `HandleError`
    /// saying it is not `wanted`.
    fn kind_among(&self, id: u64, allowed: &[&str], wanted: &str) -> PyResult<&'static str> {
        let kind = self.handle_kind(id)?;
        if allowed.contains(&kind) {
            Ok(kind)
        } else {
            Err(HandleError::new_err(format!("handle {id} is a {kind} handle, not {wanted}")))
        }
    }

    /// Drops a handle of one of the `allowed` kinds inside the runtime, so that
    /// the crate's Drop (abort or release) runs there.
    fn drop_handle(&mut self, id: u64, allowed: &[&str], wanted: &str) -> PyResult<()> {
        self.kind_among(id, allowed, wanted)?;
        guard(|| {
            let _context = self.runtime.enter();
            drop(self.take_handle(id)?);
            Ok(())
        })
    }
}

#[pymethods]
impl RuntimeAffinityTable {
    /// `SessionAffinity::with_config(SessionAffinityConfig { ttl, mode, max_entries,
    /// max_session_id_bytes })`, constructed at clock time 0.
    #[new]
    fn new(ttl_ns: u64, mode: &str, max_entries: usize, max_session_id_bytes: usize) -> PyResult<Self> {
        guard(|| {
            let config = affinity_config(ttl_ns, mode, max_entries, max_session_id_bytes)?;
            let runtime = paused_runtime()?;
            let (table, origin) = runtime.block_on(async {
                let origin = Instant::now();
                let table = SessionAffinity::with_config(config);
                // Let the reaper task start so its first sleep is anchored here.
                settle().await;
                (table, origin)
            });
            let table = table.map_err(to_py_error)?;
            Ok(Self::fresh(table, runtime, origin, false))
        })
    }

    /// `SessionAffinityConfig::new(ttl)`: the crate's defaults, as
    /// `(mode, max_entries, max_session_id_bytes)`.
    #[staticmethod]
    fn crate_defaults(ttl_ns: u64) -> PyResult<(String, usize, usize)> {
        guard(|| {
            let config = SessionAffinityConfig::new(Duration::from_nanos(ttl_ns));
            Ok((mode_name(config.mode), config.max_entries, config.max_session_id_bytes))
        })
    }

    /// `text.parse::<SessionAffinityMode>()`, as the mode's name; the crate's
    /// refusal is `InvalidArgument` with its message.
    #[staticmethod]
    fn parse_mode(text: &str) -> PyResult<String> {
        guard(|| Ok(mode_name(text.parse::<SessionAffinityMode>().map_err(InvalidArgument::new_err)?)))
    }

    /// `SessionAffinity::with_manual_clock(config, origin)` (feature
    /// `manual-clock`, for source trees that have it; 1.6.1 does not).
    ///
    /// `instant_range_ns` places the origin so that the platform's `Instant`
    /// range ends exactly that many nanoseconds after it (the crate's overflow
    /// guard is otherwise out of reach of a `u64` nanosecond clock).
    #[cfg(feature = "manual-clock")]
    #[staticmethod]
    #[pyo3(signature = (ttl_ns, mode, max_entries, max_session_id_bytes, instant_range_ns=None))]
    fn manual(
        ttl_ns: u64,
        mode: &str,
        max_entries: usize,
        max_session_id_bytes: usize,
        instant_range_ns: Option<u64>,
    ) -> PyResult<Self> {
        guard(|| {
            let config = affinity_config(ttl_ns, mode, max_entries, max_session_id_bytes)?;
            let runtime = paused_runtime()?;
            let now = runtime.block_on(async { Instant::now() });
            let origin = match instant_range_ns {
                None => now,
                Some(range_ns) => latest_instant(now)
                    .checked_sub(Duration::from_nanos(range_ns))
                    .ok_or_else(|| InvalidArgument::new_err("instant_range_ns exceeds the platform's Instant range"))?,
            };
            let table = SessionAffinity::with_manual_clock(config, origin).map_err(to_py_error)?;
            Ok(Self::fresh(table, runtime, origin, true))
        })
    }

    /// `SessionAffinity::advance_clock(origin + now_ns)` called directly, on
    /// either kind of table (feature `manual-clock`): a runtime table must
    /// refuse it the way the crate does.
    #[cfg(feature = "manual-clock")]
    fn crate_advance_clock(&mut self, now_ns: u64) -> PyResult<()> {
        guard(|| {
            let _context = self.runtime.enter();
            let target = self
                .origin
                .checked_add(Duration::from_nanos(now_ns))
                .ok_or_else(|| InvalidArgument::new_err("affinity clock beyond the binding's Instant range"))?;
            self.table()?.advance_clock(target).map_err(to_py_error)?;
            if self.manual {
                self.now_ns = now_ns;
            }
            Ok(())
        })
    }

    /// The paused clock, in nanoseconds since construction.
    #[getter]
    fn now_ns(&self) -> u64 {
        self.now_ns
    }

    /// Moves the paused Tokio clock to `now_ns`; timers due on the way (the
    /// reaper's `sleep(min(ttl, 30 s))`) fire at their own instants.
    fn advance_clock(&mut self, now_ns: u64) -> PyResult<()> {
        // A manual table's clock is the crate's: its own checks decide.
        #[cfg(feature = "manual-clock")]
        if self.manual {
            return self.crate_advance_clock(now_ns);
        }
        if now_ns < self.now_ns {
            return Err(InvalidArgument::new_err("affinity clock cannot move backwards"));
        }
        if now_ns > CLOCK_NS_MAX {
            return Err(InvalidArgument::new_err(
                "affinity clock beyond the binding's supported range",
            ));
        }
        guard(|| {
            advance_paused(&self.runtime, self.origin, now_ns, AFFINITY_SETTLE_YIELDS)?;
            self.now_ns = now_ns;
            Ok(())
        })
    }

    /// `SessionAffinity::try_acquire(session_id, requested_target)`. Returns
    /// ("init", handle, target) or ("bound", handle, target), the target read by
    /// `Hold::target` (None for an initialization), or ("wait", handle, None).
    #[pyo3(signature = (session_id, requested=None))]
    fn try_acquire(
        &mut self,
        session_id: &str,
        requested: Option<PyTarget>,
    ) -> PyResult<(&'static str, u64, Option<PyTarget>)> {
        guard(|| {
            let _context = self.runtime.enter();
            let step = self
                .table()?
                .try_acquire(session_id, requested.map(to_target))
                .map_err(to_py_error)?;
            Ok(match step {
                AcquireStep::Held(hold) => {
                    // The target is read as the crate's router reads it.
                    let reported = hold.target().map(from_target);
                    match hold {
                        Hold::Initialize(init) => ("init", self.add_handle(Handle::Init(init)), reported),
                        Hold::Bound { target, lease } => {
                            ("bound", self.add_handle(Handle::Bound { target, lease }), reported)
                        }
                        #[allow(unreachable_patterns)]
                        _ => return Err(AffinityError::new_err(unknown_to_suite("a hold", &"(no Debug)"))),
                    }
                }
                AcquireStep::Wait(notified) => ("wait", self.add_handle(Handle::Waiter(notified)), None),
                #[allow(unreachable_patterns)]
                _ => return Err(AffinityError::new_err(unknown_to_suite("an acquire step", &"(no Debug)"))),
            })
        })
    }

    /// `SessionAffinity::join_initializing(session_id, target)`.
    fn join_initializing(&mut self, session_id: &str, target: PyTarget) -> PyResult<Option<u64>> {
        guard(|| {
            let _context = self.runtime.enter();
            let lease = self.table()?.join_initializing(session_id, to_target(target));
            Ok(lease.map(|lease| self.add_handle(Handle::Lease(lease))))
        })
    }

    /// `SessionAffinity::commit(hold, dispatched)` for an "init" or "bound"
    /// handle. The handle is consumed whatever the outcome.
    fn commit(&mut self, handle: u64, dispatched: PyTarget) -> PyResult<u64> {
        let kind = self.kind_among(handle, &["init", "bound"], "a hold")?;
        if kind == "bound" {
            // `SessionAffinity::commit` needs the table; without it, refuse
            // before consuming anything.
            self.table()?;
        }
        guard(|| {
            let _context = self.runtime.enter();
            let table = self.table.clone();
            let lease = match (self.take_handle(handle)?, table) {
                // With the table dropped only the initialization's own
                // `AffinityInitialization::commit` can run (and reports Dropped).
                (Handle::Init(init), None) => init.commit(to_target(dispatched)),
                (Handle::Init(init), Some(table)) => {
                    table.commit(Hold::Initialize(init), to_target(dispatched))
                }
                (Handle::Bound { target, lease }, Some(table)) => {
                    table.commit(Hold::Bound { target, lease }, to_target(dispatched))
                }
                _ => unreachable!("kind and table checked above"),
            }
            .map_err(to_py_error)?;
            Ok(self.add_handle(Handle::Lease(lease)))
        })
    }

    /// Drops an "init" handle: `AffinityInitialization`'s Drop aborts it.
    fn abort(&mut self, handle: u64) -> PyResult<()> {
        self.drop_handle(handle, &["init"], "an initialization")
    }

    /// Drops a "bound" or "lease" handle: `AffinityLease`'s Drop releases it.
    fn release(&mut self, handle: u64) -> PyResult<()> {
        self.drop_handle(handle, &["bound", "lease"], "a lease")
    }

    /// `Hold::invalidate` ("bound") or `AffinityLease::invalidate` ("lease"),
    /// then drops the handle.
    fn invalidate(&mut self, handle: u64) -> PyResult<()> {
        self.kind_among(handle, &["bound", "lease"], "a lease")?;
        guard(|| {
            let _context = self.runtime.enter();
            match self.take_handle(handle)? {
                Handle::Bound { target, lease } => Hold::Bound { target, lease }.invalidate(),
                Handle::Lease(mut lease) => lease.invalidate(),
                _ => unreachable!("kind checked above"),
            }
            Ok(())
        })
    }

    /// Polls a waiter once without blocking: has its notification arrived?
    fn waiter_done(&mut self, handle: u64) -> PyResult<bool> {
        self.kind_among(handle, &["waiter"], "a waiter")?;
        guard(|| {
            let _context = self.runtime.enter();
            let entry = self.handles.get_mut(&handle).expect("kind checked above");
            if let Handle::Waiter(notified) = entry {
                let mut context = Context::from_waker(Waker::noop());
                if let Poll::Ready(()) = notified.as_mut().poll(&mut context) {
                    *entry = Handle::WaiterDone;
                }
            }
            Ok(matches!(entry, Handle::WaiterDone))
        })
    }

    /// `SessionAffinity::query_target(session_id, requested_target)`.
    #[pyo3(signature = (session_id, requested=None))]
    fn query_target(&self, session_id: &str, requested: Option<PyTarget>) -> PyResult<Option<PyTarget>> {
        guard(|| {
            let _context = self.runtime.enter();
            let target = self
                .table()?
                .query_target(session_id, requested.map(to_target))
                .map_err(to_py_error)?;
            Ok(target.map(from_target))
        })
    }

    /// `SessionAffinity::apply_replica_update(session_id, target, version)`;
    /// returns the `ReplicaApplyOutcome` variant's name.
    fn apply_replica_update(
        &self,
        session_id: String,
        target: PyTarget,
        version: PyVersion,
    ) -> PyResult<String> {
        guard(|| {
            let _context = self.runtime.enter();
            let version = AffinityVersion { sequence: version.0, writer_id: version.1 };
            let outcome = self.table()?.apply_replica_update(session_id, to_target(target), version);
            Ok(outcome_name(outcome))
        })
    }

    /// `SessionAffinity::observe_replica_sequence(sequence)`.
    fn observe_replica_sequence(&self, sequence: u64) -> PyResult<()> {
        guard(|| {
            self.table()?.observe_replica_sequence(sequence);
            Ok(())
        })
    }

    /// `SessionAffinity::enable_replication(writer_id, recording sink)`.
    fn enable_replication(&self, writer_id: u64) -> PyResult<bool> {
        guard(|| {
            let sink: Arc<dyn AffinityReplicaSink> = self.sink.clone();
            Ok(self.table()?.enable_replication(writer_id, sink))
        })
    }

    /// Everything the sink received since the last drain, in order.
    fn drain_published(&self) -> Vec<Published> {
        std::mem::take(&mut *self.sink.published.lock().expect("sink poisoned"))
    }

    /// `enable_replication(writer_id, sink)` with a sink that, inside every
    /// `publish`, reads the session back from the table (through a weak
    /// reference, so the sink keeps no table alive).
    fn enable_replication_reading(&self, writer_id: u64) -> PyResult<bool> {
        guard(|| {
            let table = self.table()?;
            *self.sink.reader.lock().expect("sink poisoned") = Some(table.downgrade());
            let sink: Arc<dyn AffinityReplicaSink> = self.sink.clone();
            Ok(table.enable_replication(writer_id, sink))
        })
    }

    /// What the reading sink saw since the last drain, one per publication.
    fn drain_sink_reads(&self) -> Vec<SinkRead> {
        std::mem::take(&mut *self.sink.reads.lock().expect("sink poisoned"))
    }

    /// `SessionAffinity::entry_count()` (feature `testing`).
    fn entry_count(&self) -> PyResult<usize> {
        Ok(self.table()?.entry_count())
    }

    /// `SessionAffinity::lease_count(session_id)` (feature `testing`).
    fn lease_count(&self, session_id: &str) -> PyResult<Option<usize>> {
        Ok(self.table()?.lease_count(session_id))
    }

    /// `SessionAffinity::next_version()` (feature `testing`; consumes a sequence).
    fn next_version(&self) -> PyResult<PyVersion> {
        let version = self.table()?.next_version();
        Ok((version.sequence, version.writer_id))
    }

    /// `SessionAffinity::expire_for_test(session_id)` (feature `testing`); the
    /// crate panics unless the entry is bound with no active lease.
    fn expire_for_test(&self, session_id: &str) -> PyResult<()> {
        guard(|| {
            let _context = self.runtime.enter();
            self.table()?.expire_for_test(session_id);
            Ok(())
        })
    }

    /// Drops the binding's last `SessionAffinity` clone: outstanding handles keep
    /// only weak references, so later commits see `AffinityError::Dropped`.
    fn drop_table(&mut self) -> PyResult<()> {
        guard(|| {
            let _context = self.runtime.enter();
            self.table = None;
            Ok(())
        })
    }

    /// `SessionAffinity::ttl()`, in nanoseconds.
    fn ttl_ns(&self) -> PyResult<u64> {
        guard(|| {
            u64::try_from(self.table()?.ttl().as_nanos())
                .map_err(|_| InvalidArgument::new_err("the crate's TTL exceeds u64 nanoseconds"))
        })
    }

    /// `SessionAffinity::mode()`: "hard" or "soft".
    fn mode(&self) -> PyResult<String> {
        guard(|| Ok(mode_name(self.table()?.mode())))
    }

    /// `SessionAffinity::downgrade()`: a weak reference the binding keeps;
    /// returns its number for `upgrade`.
    fn downgrade(&mut self) -> PyResult<usize> {
        guard(|| {
            let weak = self.table()?.downgrade();
            self.weak.push(weak);
            Ok(self.weak.len() - 1)
        })
    }

    /// `WeakSessionAffinity::upgrade()` of weak reference `index`: whether it
    /// yields the table (that strong clone is dropped at once).
    fn upgrade(&self, index: usize) -> PyResult<bool> {
        let weak = self
            .weak
            .get(index)
            .ok_or_else(|| HandleError::new_err(format!("weak reference {index} is unknown")))?;
        guard(|| {
            let _context = self.runtime.enter();
            Ok(weak.upgrade().is_some())
        })
    }

    /// Tasks alive in the table's runtime once every ready task has run. The
    /// crate's reaper (`spawn_reaper`, started by the constructor) is the only
    /// task there: the binding spawns none.
    fn runtime_tasks(&self) -> PyResult<usize> {
        guard(|| {
            self.runtime.block_on(settle());
            Ok(self.runtime.metrics().num_alive_tasks())
        })
    }

    /// Handle numbers still live, with their kinds (for state comparison).
    fn live_handles(&self) -> Vec<(u64, &'static str)> {
        self.handles
            .iter()
            .map(|(id, handle)| {
                let kind = match handle {
                    Handle::Init(_) => "init",
                    Handle::Bound { .. } => "bound",
                    Handle::Lease(_) => "lease",
                    Handle::Waiter(_) | Handle::WaiterDone => "waiter",
                };
                (*id, kind)
            })
            .collect()
    }
}

/// `subagent_group_affinity_id(parent)` (feature `manual-clock`: the function
/// arrived with the manual clock; 1.6.1 does not have it).
#[cfg(feature = "manual-clock")]
#[pyfunction]
fn subagent_group_affinity_id(parent_session_id: &str) -> String {
    dynamo_kv_router::services::selection::affinity::subagent_group_affinity_id(parent_session_id)
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<RuntimeAffinityTable>()?;
    #[cfg(feature = "manual-clock")]
    module.add_function(wrap_pyfunction!(subagent_group_affinity_id, module)?)?;
    module.add("CLOCK_NS_MAX", CLOCK_NS_MAX)?;
    Ok(())
}
