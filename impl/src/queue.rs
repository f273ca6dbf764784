//! Binding for `scheduling::policy_queue::PolicyQueue`.
//!
//! The queue is generic over its payload; the binding stores a `Ticket`: the
//! integer id Python chose plus the placement Python gave at enqueue. Keeping
//! the placement inside the payload lets `pop_next` decide dispatchability in
//! Rust from plain data (saturated workers, an "Any work dispatchable" flag and
//! paused classes) without calling back into Python from inside the crate: the
//! crate's predicate only sees `(class_index, &PolicyClassConfig, &payload)`
//! (SPEC G.10).
//!
//! Every call that the crate would panic on (a class index out of range, a
//! queue already consumed by `drain`) is refused with `QueueUsageError` before
//! the crate is called, and every call runs under `crate::guard`.

use std::collections::HashSet;

use dynamo_kv_router::protocols::WorkerWithDpRank;
use dynamo_kv_router::scheduling::config::RouterQueuePolicy;
use dynamo_kv_router::scheduling::policy_queue::PolicyQueueEntry;
use dynamo_kv_router::scheduling::{
    PolicyClassConfig, PolicyProfile, PolicyQueue, QueueSnapshot,
    RouterPolicyConfig, RouterPolicyConfigError, WorkerPlacement,
};
use pyo3::prelude::*;

use crate::{PolicyConfigError, QueueUsageError, guard, unknown_to_suite};

/// A worker and data-parallel rank, as Python passes them.
type PyWorker = (u64, u32);
/// (class_index, payload, placement, raw, cached, uncached, scheduling cost).
type PyItem = (usize, u64, Option<PyWorker>, usize, usize, usize, usize);
/// (policy class name, limit kind, current, limit).
type PyRejection = (String, String, usize, usize);
/// (name, queue policy, quantum, request / raw / cached limits per worker).
type PyClassConfig = (String, String, usize, Option<usize>, Option<usize>, Option<usize>);

/// The queue's payload: Python's id and the placement it was enqueued with.
struct Ticket {
    id: u64,
    placement: Option<WorkerWithDpRank>,
}

fn parse_policy(policy: &str) -> PyResult<RouterQueuePolicy> {
    match policy {
        "fcfs" => Ok(RouterQueuePolicy::Fcfs),
        "wspt" => Ok(RouterQueuePolicy::Wspt),
        "lcfs" => Ok(RouterQueuePolicy::Lcfs),
        other => Err(QueueUsageError::new_err(format!("unknown queue policy {other:?}"))),
    }
}

fn policy_name(policy: RouterQueuePolicy) -> String {
    match policy {
        RouterQueuePolicy::Fcfs => "fcfs",
        RouterQueuePolicy::Wspt => "wspt",
        RouterQueuePolicy::Lcfs => "lcfs",
        #[allow(unreachable_patterns)]
        other => return unknown_to_suite("a queue policy", &other),
    }
    .to_string()
}

/// `RouterPolicyConfigError` → `PolicyConfigError(stage, message)`.
fn config_error(error: RouterPolicyConfigError) -> PyErr {
    let stage = match &error {
        RouterPolicyConfigError::Read { .. } => "read".to_string(),
        RouterPolicyConfigError::Parse { .. } => "parse".to_string(),
        RouterPolicyConfigError::Validation(_) => "validation".to_string(),
        #[allow(unreachable_patterns)]
        other => unknown_to_suite("a configuration error", other),
    };
    PolicyConfigError::new_err((stage, error.to_string()))
}

fn item(entry: &PolicyQueueEntry<Ticket>) -> PyItem {
    let snapshot = entry.snapshot();
    let ticket = entry.payload();
    (
        entry.class_index(),
        ticket.id,
        ticket.placement.map(|worker| (worker.worker_id, worker.dp_rank)),
        snapshot.raw_isl_tokens,
        snapshot.cached_tokens,
        snapshot.uncached_tokens,
        snapshot.scheduling_cost_tokens,
    )
}

fn sorted_items<'a>(entries: impl Iterator<Item = &'a PolicyQueueEntry<Ticket>>) -> Vec<PyItem> {
    let mut items: Vec<PyItem> = entries.map(item).collect();
    items.sort_unstable();
    items
}

fn class_config(config: &PolicyClassConfig) -> PyClassConfig {
    (
        config.name.clone(),
        policy_name(config.queue_policy),
        config.quantum,
        config.request_queue_limit_per_worker,
        config.raw_isl_token_queue_limit_per_worker,
        config.cached_token_queue_limit_per_worker,
    )
}

/// A `PolicyQueue<Ticket>` owned by Python. `drain` consumes the crate's
/// queue (it takes `self`), after which every call raises `QueueUsageError`.
#[pyclass(unsendable)]
pub(crate) struct PolicyQueueTable {
    queue: Option<PolicyQueue<Ticket>>,
}

impl PolicyQueueTable {
    fn queue(&self) -> PyResult<&PolicyQueue<Ticket>> {
        self.queue
            .as_ref()
            .ok_or_else(|| QueueUsageError::new_err("queue was drained"))
    }

    fn queue_mut(&mut self) -> PyResult<&mut PolicyQueue<Ticket>> {
        self.queue
            .as_mut()
            .ok_or_else(|| QueueUsageError::new_err("queue was drained"))
    }

    fn checked_class(&self, class_index: usize) -> PyResult<usize> {
        let class_count = self.queue()?.class_count();
        if class_index < class_count {
            Ok(class_index)
        } else {
            Err(QueueUsageError::new_err(format!(
                "class index {class_index} out of range for {class_count} classes"
            )))
        }
    }

    fn with_profile(profile: PolicyProfile) -> Self {
        Self {
            queue: Some(PolicyQueue::new(profile)),
        }
    }

    /// Parses `fallback_policy`, loads the config, then
    /// `resolve_profile(model_name, fallback_threshold, policy)` and
    /// `PolicyQueue::new(profile)`.
    fn resolved(
        load: impl FnOnce() -> Result<RouterPolicyConfig, RouterPolicyConfigError>,
        model_name: Option<&str>,
        fallback_threshold: Option<f64>,
        fallback_policy: &str,
    ) -> PyResult<Self> {
        guard(|| {
            let policy = parse_policy(fallback_policy)?;
            let config = load().map_err(config_error)?;
            let profile = config.resolve_profile(model_name, fallback_threshold, policy);
            Ok(Self::with_profile(profile))
        })
    }
}

#[pymethods]
impl PolicyQueueTable {
    /// `RouterPolicyConfig::from_yaml(yaml)` then
    /// `resolve_profile(model_name, fallback_threshold, fallback_policy)`, then
    /// `PolicyQueue::new(profile)`.
    #[staticmethod]
    #[pyo3(signature = (yaml, model_name, fallback_threshold, fallback_policy))]
    fn from_yaml(
        yaml: &str,
        model_name: Option<&str>,
        fallback_threshold: Option<f64>,
        fallback_policy: &str,
    ) -> PyResult<Self> {
        let load = || RouterPolicyConfig::from_yaml(yaml);
        Self::resolved(load, model_name, fallback_threshold, fallback_policy)
    }

    /// `RouterPolicyConfig::from_path(path)` then `resolve_profile(...)`, then
    /// `PolicyQueue::new(profile)`.
    #[staticmethod]
    #[pyo3(signature = (path, model_name, fallback_threshold, fallback_policy))]
    fn from_path(
        path: &str,
        model_name: Option<&str>,
        fallback_threshold: Option<f64>,
        fallback_policy: &str,
    ) -> PyResult<Self> {
        let load = || RouterPolicyConfig::from_path(path);
        Self::resolved(load, model_name, fallback_threshold, fallback_policy)
    }

    /// `QueueSnapshot::new(raw, cached)`, as (raw, cached, uncached, cost).
    #[staticmethod]
    fn snapshot(raw_isl_tokens: usize, cached_tokens: usize) -> PyResult<(usize, usize, usize, usize)> {
        guard(|| {
            let snapshot = QueueSnapshot::new(raw_isl_tokens, cached_tokens);
            Ok((
                snapshot.raw_isl_tokens,
                snapshot.cached_tokens,
                snapshot.uncached_tokens,
                snapshot.scheduling_cost_tokens,
            ))
        })
    }

    /// `PolicyProfile::synthetic(threshold, policy)`, then `PolicyQueue::new`.
    #[staticmethod]
    #[pyo3(signature = (threshold, policy))]
    fn synthetic(threshold: Option<f64>, policy: &str) -> PyResult<Self> {
        guard(|| {
            let policy = parse_policy(policy)?;
            Ok(Self::with_profile(PolicyProfile::synthetic(threshold, policy)))
        })
    }

    /// `PolicyQueue::class_count`.
    fn class_count(&self) -> PyResult<usize> {
        guard(|| Ok(self.queue()?.class_count()))
    }

    /// `PolicyQueue::class_config(i)`, bounds-checked, as plain values.
    fn class_config(&self, class_index: usize) -> PyResult<PyClassConfig> {
        guard(|| {
            let class_index = self.checked_class(class_index)?;
            Ok(class_config(self.queue()?.class_config(class_index)))
        })
    }

    /// `PolicyQueue::enqueue` with `QueueSnapshot::new(raw, cached)`; `None`
    /// on success, the `QueueRejection` fields on rejection.
    #[pyo3(signature = (
        class_index, worker_count, raw_isl_tokens, cached_tokens,
        arrival_offset_secs, priority_jump, strict_priority, placement, payload
    ))]
    fn enqueue(
        &mut self,
        class_index: usize,
        worker_count: usize,
        raw_isl_tokens: usize,
        cached_tokens: usize,
        arrival_offset_secs: f64,
        priority_jump: f64,
        strict_priority: u32,
        placement: Option<PyWorker>,
        payload: u64,
    ) -> PyResult<Option<PyRejection>> {
        guard(|| {
            let class_index = self.checked_class(class_index)?;
            let worker = placement.map(|(worker_id, dp_rank)| WorkerWithDpRank::new(worker_id, dp_rank));
            let crate_placement = worker.map_or(WorkerPlacement::Any, WorkerPlacement::Exact);
            let ticket = Ticket {
                id: payload,
                placement: worker,
            };
            let result = self.queue_mut()?.enqueue(
                class_index,
                worker_count,
                QueueSnapshot::new(raw_isl_tokens, cached_tokens),
                arrival_offset_secs,
                priority_jump,
                strict_priority,
                crate_placement,
                ticket,
            );
            Ok(result.err().map(|(rejection, _payload)| {
                (
                    rejection.policy_class,
                    rejection.limit_kind.to_string(),
                    rejection.current,
                    rejection.limit,
                )
            }))
        })
    }

    /// `PolicyQueue::pop_next(is_dispatchable)`, where an entry is dispatchable
    /// unless its class is paused, and then: an `Any` entry iff
    /// `any_dispatchable`; an `Exact(worker)` entry iff the worker is not
    /// saturated.
    #[pyo3(signature = (saturated, any_dispatchable, paused_classes))]
    fn pop_next(
        &mut self,
        saturated: Vec<PyWorker>,
        any_dispatchable: bool,
        paused_classes: Vec<usize>,
    ) -> PyResult<Option<PyItem>> {
        guard(|| {
            let saturated: HashSet<WorkerWithDpRank> = saturated
                .into_iter()
                .map(|(worker_id, dp_rank)| WorkerWithDpRank::new(worker_id, dp_rank))
                .collect();
            let paused: HashSet<usize> = paused_classes.into_iter().collect();
            let popped = self.queue_mut()?.pop_next(|class_index, _config, ticket: &Ticket| {
                !paused.contains(&class_index)
                    && ticket
                        .placement
                        .map_or(any_dispatchable, |worker| !saturated.contains(&worker))
            });
            Ok(popped.as_ref().map(item))
        })
    }

    /// `PolicyQueue::retain(|payload| !drop.contains(payload))`.
    fn retain(&mut self, drop: Vec<u64>) -> PyResult<()> {
        guard(|| {
            let drop: HashSet<u64> = drop.into_iter().collect();
            self.queue_mut()?.retain(|ticket| !drop.contains(&ticket.id));
            Ok(())
        })
    }

    /// `PolicyQueue::pending_count`.
    fn pending_count(&self) -> PyResult<usize> {
        guard(|| Ok(self.queue()?.pending_count()))
    }

    /// `PolicyQueue::class_stats(i)`, bounds-checked: (requests, raw, cached).
    fn class_stats(&self, class_index: usize) -> PyResult<(usize, usize, usize)> {
        guard(|| {
            let class_index = self.checked_class(class_index)?;
            let stats = self.queue()?.class_stats(class_index);
            Ok((stats.requests, stats.raw_isl_tokens, stats.cached_tokens))
        })
    }

    /// `PolicyQueue::has_backlog(i)`, bounds-checked.
    fn has_backlog(&self, class_index: usize) -> PyResult<bool> {
        guard(|| {
            let class_index = self.checked_class(class_index)?;
            Ok(self.queue()?.has_backlog(class_index))
        })
    }

    /// `PolicyQueue::entries()`, sorted (the crate's order is unspecified).
    fn entries(&self) -> PyResult<Vec<PyItem>> {
        guard(|| Ok(sorted_items(self.queue()?.entries())))
    }

    /// `PartialEq for PolicyQueueEntry` over every pair of `entries()`, both
    /// taken in the order `entries` reports them: `[i][j]` is `e_i == e_j`.
    /// Entries are public and reach callers (a scheduler keeps them in its own
    /// collections), so their equality is part of what a caller can observe.
    fn entries_equal(&self) -> PyResult<Vec<Vec<bool>>> {
        guard(|| {
            let mut entries: Vec<&PolicyQueueEntry<Ticket>> = self.queue()?.entries().collect();
            entries.sort_unstable_by_key(|entry| item(entry));
            Ok(entries
                .iter()
                .map(|left| entries.iter().map(|right| *left == *right).collect())
                .collect())
        })
    }

    /// `PolicyQueue::drain(self)`, sorted; the table is consumed afterwards.
    fn drain(&mut self) -> PyResult<Vec<PyItem>> {
        guard(|| {
            let queue = self
                .queue
                .take()
                .ok_or_else(|| QueueUsageError::new_err("queue was drained"))?;
            let drained: Vec<PolicyQueueEntry<Ticket>> = queue.drain().collect();
            Ok(sorted_items(drained.iter()))
        })
    }

    /// `PolicyQueue::recheck_worker(worker)`; only where the crate makes it public.
    #[cfg(feature = "queue-recheck")]
    fn recheck_worker(&mut self, worker: PyWorker) -> PyResult<()> {
        guard(|| {
            let worker = WorkerWithDpRank::new(worker.0, worker.1);
            self.queue_mut()?.recheck_worker(worker);
            Ok(())
        })
    }

    /// `PolicyQueue::recheck_all_workers()`; only where the crate makes it public.
    #[cfg(feature = "queue-recheck")]
    fn recheck_all_workers(&mut self) -> PyResult<()> {
        guard(|| {
            self.queue_mut()?.recheck_all_workers();
            Ok(())
        })
    }
}

pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PolicyQueueTable>()?;
    module.add("HAS_QUEUE_RECHECK", cfg!(feature = "queue-recheck"))?;
    Ok(())
}
