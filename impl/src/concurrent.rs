//! Many callers of one real `SessionAffinity` at once, for the linearizability
//! check (`stateful/linearizability.py`).
//!
//! `run_concurrent_affinity` builds a runtime-clock table under a paused Tokio
//! clock (as `RuntimeAffinityTable` does), then runs one OS thread per program,
//! with the GIL released. Every thread enters the table's runtime (so the
//! crate's `Instant::now()` reads the paused clock), waits at a barrier, and
//! executes its program; before each call it may yield or spin, as its
//! schedule seed says, so that runs interleave differently. For every call it
//! records the invocation and response instants (one shared `SeqCst` counter)
//! and the result. After every thread has finished it reads `entry_count()`,
//! `lease_count(id)` and `query_target(id, None)` of the listed sessions, then
//! `next_version()` once (feature `testing`; it consumes a sequence), and only
//! then drops the handles the threads still hold.
//!
//! Publications: before the threads start, the table gets a recording replica
//! sink (`enable_replication` with the caller's writer id). The crate calls the
//! sink on the publishing thread; the sink records that thread, a tick of the
//! shared counter taken under its lock (so ticks follow the sink's order), and
//! what was published. A publication's tick lies inside the interval of the
//! call that made it, on its thread; the adapter attaches it there. Publications
//! made while the handles still held are dropped after the census are not
//! returned. Versions of leases are private in the crate (`AffinityLease` has
//! no accessor in 1.6.1): versions reach a caller only through publications,
//! replica-apply outcomes and `next_version`.
//!
//! A program refers to handles by *slot*: the n-th acquisition or join of the
//! same thread. Which kind of handle a slot holds depends on the interleaving,
//! so `commit`, `drop`, `invalidate` and `poll` do whatever that kind allows
//! and are skipped (not recorded) when the slot holds nothing they apply to.
//!
//! Time: only thread 0 may `advance`. On a runtime table it moves the paused
//! clock with one `tokio::time::advance` and then lets the runtime's tasks run,
//! so the crate's reaper (a task of this runtime) collects concurrently with
//! the other threads' calls; the recorded result is the clock reached. On a
//! manual-clock table (feature `manual-clock`, source trees that have it) it
//! calls the crate's `advance_clock(origin + now)`, which collects itself.
//!
//! Limits of the binding's own (not the crate's): 1 to `THREADS_MAX` threads,
//! at most `OPS_MAX` operations per thread, `advance` only on thread 0.
//!
//! Canaries (deliberately broken drivers that the check must catch, each
//! harmless while no two calls overlap): `split_commit` (a commit split into
//! an abort and a fresh acquisition), `torn_version` (the sink passes each
//! version through one shared register, so overlapping publications may swap
//! versions), `lost_publication` (the sink drops a publication when another
//! thread holds its lock) and `stray_version` (a query made while another
//! thread is inside a call also takes a version, which only the versions taken
//! later and the census's `next_version` show).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use dynamo_kv_router::services::selection::affinity::{
    AcquireStep, AffinityError as CrateError, AffinityInitialization, AffinityLease,
    AffinityReplicaSink, AffinityTarget, AffinityVersion, Hold, SessionAffinity,
    SessionAffinityConfig,
};
use pyo3::prelude::*;
use tokio::runtime::Runtime;
use tokio::sync::futures::OwnedNotified;
use tokio::time::Instant;

use crate::affinity::{
    PyTarget, PyVersion, affinity_config, from_target, outcome_name, paused_runtime, settle, to_target,
};
use crate::{InvalidArgument, guard, panic_message, unknown_to_suite};

/// Most threads one history may have.
const THREADS_MAX: usize = 64;
/// Most operations one thread's program may have.
const OPS_MAX: usize = 10_000;

/// One operation of a program: (kind, session, target, slot, version, delta_ns).
type OpIn = (String, String, Option<PyTarget>, usize, Option<PyVersion>, u64);
/// The call as made: (kind, session, target, handle, version, now_ns).
type CallOut = (&'static str, String, Option<PyTarget>, Option<u64>, Option<PyVersion>, u64);
/// The result: (name, target, new handle).
type ResultOut = (String, Option<PyTarget>, Option<u64>);
/// (thread, index in the thread, invoked, returned, call, result).
type EventOut = (usize, usize, u64, u64, CallOut, ResultOut);
/// A publication as the sink saw it: (thread, tick, session, target, version).
type PublishedOut = (usize, u64, String, PyTarget, PyVersion);
/// What the census read: (entry_count, [(session, lease_count)],
/// [(session, query_target)], next_version).
type CensusOut = (usize, Vec<(String, Option<usize>)>, Vec<(String, Option<PyTarget>)>, PyVersion);
/// (events, clock reached in ns, census, publications in the sink's order).
type RunOut = (Vec<EventOut>, u64, CensusOut, Vec<PublishedOut>);

thread_local! {
    /// The program thread running on this OS thread (`usize::MAX`: none).
    static PROGRAM_THREAD: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// The deliberately broken drivers (see the module documentation).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Canary {
    None,
    SplitCommit,
    TornVersion,
    LostPublication,
    StrayVersion,
}

impl Canary {
    fn parse(name: Option<&str>) -> PyResult<Self> {
        Ok(match name {
            None => Self::None,
            Some("split_commit") => Self::SplitCommit,
            Some("torn_version") => Self::TornVersion,
            Some("lost_publication") => Self::LostPublication,
            Some("stray_version") => Self::StrayVersion,
            Some(other) => return Err(InvalidArgument::new_err(format!("unknown canary {other:?}"))),
        })
    }
}

/// Yields this many times to widen a canary's window.
const CANARY_YIELDS: usize = 16;

/// The replica sink of a concurrent run: every publication, in its order.
struct HistorySink {
    ticks: Arc<AtomicU64>,
    log: Mutex<Vec<PublishedOut>>,
    canary: Canary,
    /// The `torn_version` canary's shared register.
    register: AtomicU64,
}

impl AffinityReplicaSink for HistorySink {
    fn publish(&self, session_id: &str, target: AffinityTarget, version: AffinityVersion) {
        let mut sequence = version.sequence;
        if self.canary == Canary::TornVersion {
            self.register.store(sequence, Ordering::SeqCst);
            (0..CANARY_YIELDS).for_each(|_| std::thread::yield_now());
            sequence = self.register.load(Ordering::SeqCst);
        }
        let mut log = if self.canary == Canary::LostPublication {
            match self.log.try_lock() {
                Ok(log) => log,
                Err(_) => return,
            }
        } else {
            self.log.lock().unwrap_or_else(PoisonError::into_inner)
        };
        let tick = self.ticks.fetch_add(1, Ordering::SeqCst);
        log.push((
            PROGRAM_THREAD.get(),
            tick,
            session_id.to_string(),
            from_target(target),
            (sequence, version.writer_id),
        ));
        if self.canary == Canary::LostPublication {
            (0..CANARY_YIELDS).for_each(|_| std::thread::yield_now());
        }
    }
}

const KINDS: [&str; 9] = [
    "acquire", "join", "commit", "drop", "invalidate", "poll", "query", "replica", "advance",
];

/// A Rust value a thread holds in one of its slots.
enum Held {
    Init(AffinityInitialization),
    Bound { target: AffinityTarget, lease: AffinityLease },
    Lease(AffinityLease),
    Waiter(Pin<Box<OwnedNotified>>),
    WaiterDone,
}

/// A thread's deterministic jitter source (SplitMix64).
struct Schedule(u64);

impl Schedule {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Nothing, a few yields, or a short spin, chosen by the seed.
    fn jitter(&mut self) {
        let roll = self.next();
        match roll % 8 {
            0..=3 => {}
            4 | 5 => (0..=(roll >> 8) % 4).for_each(|_| std::thread::yield_now()),
            6 => (0..(roll >> 8) % 2_000).for_each(|_| std::hint::spin_loop()),
            _ => (0..16).for_each(|_| std::thread::yield_now()),
        }
    }
}

fn error_name(error: &CrateError) -> String {
    match error {
        CrateError::InvalidArgument(_) => "InvalidArgument",
        CrateError::ResourceExhausted(_) => "ResourceExhausted",
        CrateError::Dropped => "Dropped",
        #[allow(unreachable_patterns)]
        other => return unknown_to_suite("an error", other),
    }
    .to_string()
}

/// Everything one thread shares with the others.
struct Shared<'a> {
    table: &'a SessionAffinity,
    manual: bool,
    runtime: &'a Runtime,
    origin: Instant,
    ticks: &'a AtomicU64,
    handles: &'a AtomicU64,
    barrier: &'a Barrier,
    /// Calls under way, for the `stray_version` canary.
    busy: &'a AtomicUsize,
    canary: Canary,
}

impl Shared<'_> {
    fn tick(&self) -> u64 {
        self.ticks.fetch_add(1, Ordering::SeqCst)
    }

    fn new_handle(&self) -> u64 {
        self.handles.fetch_add(1, Ordering::SeqCst)
    }

    /// The `split_commit` canary: a commit split into an abort and a fresh
    /// acquisition, with the door open between them.
    fn split_commit(
        &self,
        init: AffinityInitialization,
        target: AffinityTarget,
        session: &str,
    ) -> Result<AffinityLease, CrateError> {
        drop(init);
        (0..64).for_each(|_| std::thread::yield_now());
        match self.table.try_acquire(session, None)? {
            AcquireStep::Held(Hold::Initialize(again)) => again.commit(target),
            _ => Err(CrateError::InvalidArgument("split commit lost the session".into())),
        }
    }

    /// Runs one program; returns its events, the handles still held, and the
    /// manual clock as this thread left it.
    fn run(&self, thread: usize, program: &[OpIn], seed: u64) -> (Vec<EventOut>, Vec<Held>, u64) {
        let _context = self.runtime.handle().enter();
        PROGRAM_THREAD.set(thread);
        let mut schedule = Schedule(seed ^ (thread as u64).wrapping_mul(0x2545_F491_4F6C_DD1D));
        let mut slots: Vec<Option<(u64, Held)>> = Vec::new();
        let mut events = Vec::new();
        let mut clock_ns = 0_u64; // a manual table's clock, as thread 0 moved it
        self.barrier.wait();
        for (index, op) in program.iter().enumerate() {
            schedule.jitter();
            // A panicking call is recorded from here, so that what it
            // published still falls inside its interval.
            let before = self.ticks.load(Ordering::SeqCst);
            self.busy.fetch_add(1, Ordering::SeqCst);
            let outcome = catch_unwind(AssertUnwindSafe(|| self.step(op, &mut slots, &mut clock_ns)));
            self.busy.fetch_sub(1, Ordering::SeqCst);
            match outcome {
                Ok(Some((invoked, returned, call, result))) => {
                    events.push((thread, index, invoked, returned, call, result));
                }
                Ok(None) => {}
                Err(payload) => {
                    let message = panic_message(payload.as_ref());
                    let returned = self.tick();
                    let call = (
                        KINDS.iter().find(|k| **k == op.0).copied().unwrap_or("?"),
                        op.1.clone(),
                        op.2,
                        None,
                        op.4,
                        op.5,
                    );
                    let result = (format!("RustPanic: {message}"), None, None);
                    events.push((thread, index, before, returned, call, result));
                    break;
                }
            }
        }
        let held = slots.into_iter().flatten().map(|(_, held)| held).collect();
        (events, held, clock_ns)
    }

    /// One operation: `None` when the slot holds nothing it applies to.
    fn step(
        &self,
        op: &OpIn,
        slots: &mut Vec<Option<(u64, Held)>>,
        clock_ns: &mut u64,
    ) -> Option<(u64, u64, CallOut, ResultOut)> {
        let (kind, session, target, slot, version, delta_ns) = op;
        let session = session.as_str();
        let plain = |kind: &'static str| (kind, session.to_string(), *target, None, *version, 0);
        match kind.as_str() {
            "acquire" => {
                let invoked = self.tick();
                let step = self.table.try_acquire(session, target.map(to_target));
                let (result, held) = match step {
                    Ok(AcquireStep::Held(Hold::Initialize(init))) => {
                        (("init".to_string(), None), Some(Held::Init(init)))
                    }
                    Ok(AcquireStep::Held(Hold::Bound { target, lease })) => (
                        ("bound".to_string(), Some(from_target(target))),
                        Some(Held::Bound { target, lease }),
                    ),
                    Ok(AcquireStep::Wait(notified)) => (("wait".to_string(), None), Some(Held::Waiter(notified))),
                    Err(error) => ((error_name(&error), None), None),
                    #[allow(unreachable_patterns)]
                    Ok(_) => ((unknown_to_suite("an acquire step", &"(no Debug)"), None), None),
                };
                let handle = held.map(|held| (self.new_handle(), held));
                let new = handle.as_ref().map(|(id, _)| *id);
                let returned = self.tick();
                slots.push(handle);
                Some((invoked, returned, plain("acquire"), (result.0, result.1, new)))
            }
            "join" => {
                let dispatched = to_target((*target)?);
                let invoked = self.tick();
                let lease = self.table.join_initializing(session, dispatched);
                let handle = lease.map(|lease| (self.new_handle(), Held::Lease(lease)));
                let new = handle.as_ref().map(|(id, _)| *id);
                let returned = self.tick();
                slots.push(handle);
                let name = if new.is_some() { "lease" } else { "none" };
                Some((invoked, returned, plain("join"), (name.to_string(), None, new)))
            }
            "commit" => {
                let dispatched = to_target((*target)?);
                let (id, held) = slots.get_mut(*slot)?.take_if(|(_, held)| {
                    matches!(held, Held::Init(_) | Held::Bound { .. })
                })?;
                let invoked = self.tick();
                let committed = match held {
                    Held::Init(init) if self.canary == Canary::SplitCommit => {
                        self.split_commit(init, dispatched, session)
                    }
                    Held::Init(init) => self.table.commit(Hold::Initialize(init), dispatched),
                    Held::Bound { target, lease } => self.table.commit(Hold::Bound { target, lease }, dispatched),
                    _ => unreachable!("kind checked above"),
                };
                let (name, new) = match committed {
                    Ok(lease) => {
                        let new = self.new_handle();
                        slots[*slot] = Some((new, Held::Lease(lease)));
                        ("lease".to_string(), Some(new))
                    }
                    Err(error) => (error_name(&error), None),
                };
                let returned = self.tick();
                let call = ("commit", session.to_string(), *target, Some(id), None, 0);
                Some((invoked, returned, call, (name, None, new)))
            }
            "drop" | "invalidate" => {
                let invalidate = kind == "invalidate";
                let (id, held) = slots.get_mut(*slot)?.take_if(|(_, held)| match held {
                    Held::Init(_) => !invalidate,
                    Held::Bound { .. } | Held::Lease(_) => true,
                    Held::Waiter(_) | Held::WaiterDone => false,
                })?;
                let invoked = self.tick();
                let name = match held {
                    Held::Init(init) => {
                        drop(init);
                        "abort"
                    }
                    Held::Bound { target, lease } if invalidate => {
                        Hold::Bound { target, lease }.invalidate();
                        "invalidate"
                    }
                    Held::Lease(mut lease) if invalidate => {
                        lease.invalidate();
                        "invalidate"
                    }
                    other => {
                        drop(other);
                        "release"
                    }
                };
                let returned = self.tick();
                let call = (name, session.to_string(), None, Some(id), None, 0);
                Some((invoked, returned, call, ("ok".to_string(), None, None)))
            }
            "poll" => {
                let (id, held) = slots.get_mut(*slot)?.as_mut()?;
                if !matches!(held, Held::Waiter(_) | Held::WaiterDone) {
                    return None;
                }
                let id = *id;
                let invoked = self.tick();
                if let Held::Waiter(notified) = held {
                    let mut context = Context::from_waker(Waker::noop());
                    if let Poll::Ready(()) = notified.as_mut().poll(&mut context) {
                        *held = Held::WaiterDone;
                    }
                }
                let done = matches!(held, Held::WaiterDone);
                let returned = self.tick();
                let call = ("poll", session.to_string(), None, Some(id), None, 0);
                Some((invoked, returned, call, (done.to_string(), None, None)))
            }
            "query" => {
                let invoked = self.tick();
                let found = self.table.query_target(session, target.map(to_target));
                if self.canary == Canary::StrayVersion && self.busy.load(Ordering::SeqCst) > 1 {
                    let _ = self.table.next_version();
                }
                let returned = self.tick();
                let result = match found {
                    Ok(Some(found)) => ("target".to_string(), Some(from_target(found)), None),
                    Ok(None) => ("none".to_string(), None, None),
                    Err(error) => (error_name(&error), None, None),
                };
                Some((invoked, returned, plain("query"), result))
            }
            "replica" => {
                let (sequence, writer_id) = (*version)?;
                let replica_target = to_target((*target)?);
                let invoked = self.tick();
                let outcome = self.table.apply_replica_update(
                    session.to_string(),
                    replica_target,
                    AffinityVersion { sequence, writer_id },
                );
                let returned = self.tick();
                Some((invoked, returned, plain("replica"), (outcome_name(outcome).to_string(), None, None)))
            }
            "advance" if self.manual => self.manual_advance(*delta_ns, clock_ns),
            "advance" => {
                let invoked = self.tick();
                let reached = self.runtime.block_on(async {
                    tokio::time::advance(Duration::from_nanos(*delta_ns)).await;
                    settle().await;
                    Instant::now()
                });
                let returned = self.tick();
                let now_ns = u64::try_from(reached.duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX);
                let call = ("advance", String::new(), None, None, None, now_ns);
                Some((invoked, returned, call, ("ok".to_string(), None, None)))
            }
            _ => unreachable!("kinds validated before the threads start"),
        }
    }
}

impl Shared<'_> {
    /// The crate's own `advance_clock` on a manual table; the clock moves
    /// only if the crate accepts.
    #[cfg(feature = "manual-clock")]
    fn manual_advance(&self, delta_ns: u64, clock_ns: &mut u64) -> Option<(u64, u64, CallOut, ResultOut)> {
        let target_ns = clock_ns.saturating_add(delta_ns);
        let invoked = self.tick();
        let moved = match self.origin.checked_add(Duration::from_nanos(target_ns)) {
            Some(target) => self.table.advance_clock(target).map_err(|error| error_name(&error)),
            None => Err("InvalidArgument".to_string()),
        };
        let returned = self.tick();
        let name = match moved {
            Ok(()) => {
                *clock_ns = target_ns;
                "ok".to_string()
            }
            Err(name) => name,
        };
        let call = ("advance", String::new(), None, None, None, target_ns);
        Some((invoked, returned, call, (name, None, None)))
    }

    #[cfg(not(feature = "manual-clock"))]
    fn manual_advance(&self, _delta_ns: u64, _clock_ns: &mut u64) -> Option<(u64, u64, CallOut, ResultOut)> {
        unreachable!("manual tables are refused without the manual-clock feature")
    }
}

/// Refuses a run the binding cannot make, before anything runs.
fn validate(programs: &[Vec<OpIn>]) -> PyResult<()> {
    if programs.is_empty() || programs.len() > THREADS_MAX {
        return Err(InvalidArgument::new_err(format!("between 1 and {THREADS_MAX} programs")));
    }
    for (thread, program) in programs.iter().enumerate() {
        if program.len() > OPS_MAX {
            return Err(InvalidArgument::new_err(format!("at most {OPS_MAX} operations per program")));
        }
        for op in program {
            if !KINDS.contains(&op.0.as_str()) {
                return Err(InvalidArgument::new_err(format!("unknown operation {:?}", op.0)));
            }
            if op.0 == "advance" && thread != 0 {
                return Err(InvalidArgument::new_err("only thread 0 may advance the clock"));
            }
        }
    }
    Ok(())
}

/// A runtime-clock table, or a manual-clock one at `origin`.
fn new_table(config: SessionAffinityConfig, origin: Instant, manual: bool) -> Result<SessionAffinity, CrateError> {
    #[cfg(feature = "manual-clock")]
    if manual {
        return SessionAffinity::with_manual_clock(config, origin);
    }
    let _ = (origin, manual);
    SessionAffinity::with_config(config)
}

/// Runs `programs` concurrently against one fresh table (runtime clock, or
/// the crate's manual clock when `manual`); see the
/// module documentation. `sequence_offset` is observed right after
/// construction (the adapter's sequence pinning); `writer_id` is the
/// replication writer id the recording sink is installed with. `canary` may
/// name one of the deliberately broken drivers of the module documentation.
#[pyfunction]
#[pyo3(signature = (ttl_ns, mode, max_entries, max_session_id_bytes, sequence_offset, writer_id, programs, schedule_seed, sessions, canary=None, manual=false))]
#[allow(clippy::too_many_arguments)]
fn run_concurrent_affinity(
    _py: Python<'_>,
    ttl_ns: u64,
    mode: &str,
    max_entries: usize,
    max_session_id_bytes: usize,
    sequence_offset: u64,
    writer_id: u64,
    programs: Vec<Vec<OpIn>>,
    schedule_seed: u64,
    sessions: Vec<String>,
    canary: Option<String>,
    manual: bool,
) -> PyResult<RunOut> {
    validate(&programs)?;
    if manual && !cfg!(feature = "manual-clock") {
        return Err(InvalidArgument::new_err("this crate has no manual clock"));
    }
    let canary = Canary::parse(canary.as_deref())?;
    guard(|| {
        let config = affinity_config(ttl_ns, mode, max_entries, max_session_id_bytes)?;
        let runtime = paused_runtime()?;
        let (table, origin) = runtime.block_on(async {
            let origin = Instant::now();
            let table = new_table(config, origin, manual);
            settle().await;
            (table, origin)
        });
        let table = table.map_err(|error| InvalidArgument::new_err(error.to_string()))?;
        table.observe_replica_sequence(sequence_offset);
        let ticks = Arc::new(AtomicU64::new(0));
        let sink = Arc::new(HistorySink {
            ticks: Arc::clone(&ticks),
            log: Mutex::new(Vec::new()),
            canary,
            register: AtomicU64::new(0),
        });
        if !table.enable_replication(writer_id, Arc::clone(&sink) as Arc<dyn AffinityReplicaSink>) {
            return Err(crate::RustPanic::new_err("a fresh table already had a replica sink"));
        }
        let handles = AtomicU64::new(1);
        let busy = AtomicUsize::new(0);
        let barrier = Barrier::new(programs.len());
        let shared = Shared {
            table: &table,
            manual,
            runtime: &runtime,
            origin,
            ticks: &ticks,
            handles: &handles,
            barrier: &barrier,
            busy: &busy,
            canary,
        };
        let runs = {
            // `guard` released the GIL already.
            std::thread::scope(|scope| {
                let workers: Vec<_> = programs
                    .iter()
                    .enumerate()
                    .map(|(thread, program)| {
                        let shared = &shared;
                        scope.spawn(move || shared.run(thread, program, schedule_seed))
                    })
                    .collect();
                workers.into_iter().map(|worker| worker.join()).collect::<Vec<_>>()
            })
        };
        let _context = runtime.enter();
        let mut events = Vec::new();
        let mut still_held = Vec::new();
        let mut manual_ns = 0;
        for (thread, run) in runs.into_iter().enumerate() {
            let (thread_events, held, clock_ns) =
                run.map_err(|_| crate::RustPanic::new_err("a program thread panicked"))?;
            events.extend(thread_events);
            still_held.extend(held);
            if thread == 0 {
                manual_ns = clock_ns;
            }
        }
        let now_ns = if manual {
            manual_ns
        } else {
            u64::try_from(runtime.block_on(async { Instant::now() }).duration_since(origin).as_nanos())
                .unwrap_or(u64::MAX)
        };
        let published = std::mem::take(&mut *sink.log.lock().unwrap_or_else(PoisonError::into_inner));
        let entry_count = table.entry_count();
        let lease_counts = sessions
            .iter()
            .map(|session| (session.clone(), table.lease_count(session)))
            .collect();
        let targets = sessions
            .iter()
            .map(|session| match table.query_target(session, None) {
                Ok(found) => Ok((session.clone(), found.map(from_target))),
                Err(error) => Err(InvalidArgument::new_err(format!("census of {session:?}: {error}"))),
            })
            .collect::<PyResult<Vec<_>>>()?;
        let counter = table.next_version();
        drop(still_held);
        drop(table);
        events.sort_by_key(|event| event.2);
        let census = (entry_count, lease_counts, targets, (counter.sequence, counter.writer_id));
        Ok((events, now_ns, census, published))
    })
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(run_concurrent_affinity, module)?)?;
    module.add("CONCURRENT_THREADS_MAX", THREADS_MAX)?;
    module.add("CONCURRENT_OPS_MAX", OPS_MAX)?;
    Ok(())
}
