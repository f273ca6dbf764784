//! Private extension `impl._native`: a thin PyO3 binding over the pinned
//! `dynamo-kv-router` crate. It converts types and forwards calls; it holds no
//! logic of its own beyond handle bookkeeping (Python cannot own Rust values
//! that the crate consumes by move) and the paused Tokio clock that drives the
//! runtime-clock table deterministically.
//!
//! Only the `impl/adapter/` package imports this module.

use std::panic::{AssertUnwindSafe, catch_unwind};

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

mod affinity;
mod concurrent;
mod queue;
mod scheduler;

create_exception!(_native, AffinityError, PyException, "Base of the crate's AffinityError.");
create_exception!(_native, InvalidArgument, AffinityError, "AffinityError::InvalidArgument.");
create_exception!(_native, ResourceExhausted, AffinityError, "AffinityError::ResourceExhausted.");
create_exception!(_native, Dropped, AffinityError, "AffinityError::Dropped.");
create_exception!(_native, HandleError, PyException, "A handle was unknown or already consumed.");
create_exception!(_native, RustPanic, PyException, "The crate panicked; the table may be unusable.");
create_exception!(_native, PolicyConfigError, PyException, "RouterPolicyConfigError (parse or validation).");
create_exception!(_native, QueueUsageError, PyException, "A queue call the crate would panic on.");

/// Runs `body`, turning a Rust panic into a `RustPanic` Python exception so the
/// interpreter survives.
///
/// The body runs with the GIL released: a crate call that never returns (a
/// deadlock) then blocks only its own thread, and the adapter's watchdog
/// (`impl/adapter/lib.py`) can still run, name the call and end the process.
/// Bodies touch no Python object (they convert before and after).
pub(crate) fn guard<R>(body: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
    let body = Unlocked(body);
    Python::with_gil(|py| py.allow_threads(move || Unlocked(body.run()))).0
}

/// A body (or its result) that stays on the calling thread, run without the
/// GIL. `allow_threads` asks for `Send` to keep Python references out; the
/// bodies hold none, and the closure runs on this same thread, so no value
/// crosses a thread.
struct Unlocked<F>(F);

// SAFETY: the closure runs on the thread that made it (`allow_threads` does not
// move it), and guarded bodies hold no Python object (see `guard`).
unsafe impl<F> Send for Unlocked<F> {}

impl<F> Unlocked<F> {
    fn run<R>(self) -> PyResult<R>
    where
        F: FnOnce() -> PyResult<R>,
    {
        caught(self.0)
    }
}

/// `body`'s result, a panic turned into `RustPanic`.
fn caught<R>(body: impl FnOnce() -> PyResult<R>) -> PyResult<R> {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(result) => result,
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            Err(RustPanic::new_err(format!("crate panicked: {message}")))
        }
    }
}

/// What the binding reports for a crate enum value it has no arm for: a
/// variant the crate added after the binding was written. Every `match` on a
/// crate enum ends in an arm that returns this text (as an outcome, a kind or
/// an error message), so a new variant is a divergence the suite names, not a
/// build that stops compiling. Those arms are unreachable against the crates
/// the binding knows, hence `#[allow(unreachable_patterns)]` on each (the
/// crate marks only `KvSchedulerError` `#[non_exhaustive]`).
pub(crate) fn unknown_to_suite(what: &str, value: &dyn std::fmt::Debug) -> String {
    format!("crate returned {what} this suite does not know: {value:?}")
}

/// The text a panic carried (`panic!` with a literal or a formatted message).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

/// Version string of the `dynamo-kv-router` crate this extension was built
/// against (read from Cargo.lock by the build script).
const CRATE_VERSION: &str = env!("DYNAMO_KV_ROUTER_VERSION");

/// Source of the crate: "registry" for crates.io, "path" for a local tree.
const CRATE_SOURCE: &str = env!("DYNAMO_KV_ROUTER_SOURCE");

/// The cargo profile of impl/Cargo.toml this extension was built in (read
/// from the build folder's name by the build script).
const BUILD_PROFILE: &str = env!("BINDING_PROFILE");

/// The profile's optimization level as cargo gave it ("0", "3", ...).
const OPT_LEVEL: &str = env!("BINDING_OPT_LEVEL");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("AffinityError", py.get_type::<AffinityError>())?;
    m.add("InvalidArgument", py.get_type::<InvalidArgument>())?;
    m.add("ResourceExhausted", py.get_type::<ResourceExhausted>())?;
    m.add("Dropped", py.get_type::<Dropped>())?;
    m.add("HandleError", py.get_type::<HandleError>())?;
    m.add("RustPanic", py.get_type::<RustPanic>())?;
    m.add("PolicyConfigError", py.get_type::<PolicyConfigError>())?;
    m.add("QueueUsageError", py.get_type::<QueueUsageError>())?;
    m.add("CRATE_VERSION", CRATE_VERSION)?;
    m.add("CRATE_SOURCE", CRATE_SOURCE)?;
    m.add("BUILD_PROFILE", BUILD_PROFILE)?;
    m.add("OPT_LEVEL", OPT_LEVEL)?;
    m.add("DEBUG_ASSERTIONS", cfg!(debug_assertions))?;
    m.add("HAS_MANUAL_CLOCK", cfg!(feature = "manual-clock"))?;
    affinity::register(m)?;
    queue::register(m)?;
    concurrent::register(m)?;
    scheduler::register(m)?;
    Ok(())
}
