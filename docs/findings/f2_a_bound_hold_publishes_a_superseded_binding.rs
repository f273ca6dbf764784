// Finding F2 (docs/findings.md): committing a bound hold publishes the hold's own
// version even after a replica update replaced the binding. This test states what a
// replica receiver needs -- the sink never receives a (target, version) the table no
// longer holds -- and fails on dynamo-kv-router 1.6.1 at its last assertion.
//
// Written from the suite's Rust export of the corpus trace
// ci/replay/corpus/finding_a_bound_hold_publishes_a_version_its_table_no_longer_holds.json
// (`python -m ci.replay TRACE --emit rust`), with the trace's own assertions cut to
// the ones this finding is about. Needs dynamo-kv-router's `testing` feature and
// tokio with "macros", "rt", "test-util", "time".

use dynamo_kv_router::services::selection::affinity::{
    AcquireStep, AffinityReplicaSink, AffinityTarget, AffinityVersion, Hold,
    ReplicaApplyOutcome, SessionAffinity, SessionAffinityConfig,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records every publication; each step takes what arrived.
#[derive(Default)]
struct Published(Mutex<Vec<(String, AffinityTarget, AffinityVersion)>>);

impl Published {
    fn take(&self) -> Vec<(String, AffinityTarget, AffinityVersion)> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

impl AffinityReplicaSink for Published {
    fn publish(&self, session_id: &str, target: AffinityTarget, version: AffinityVersion) {
        self.0
            .lock()
            .unwrap()
            .push((session_id.to_string(), target, version));
    }
}

#[tokio::test(start_paused = true)]
async fn f2_a_bound_hold_never_publishes_a_superseded_binding() {
    let worker_1 = AffinityTarget::new(1, None);
    let worker_2 = AffinityTarget::new(2, None);
    let table = SessionAffinity::with_config(SessionAffinityConfig::new(Duration::from_secs(10)))
        .expect("a table");
    // Versions relative to 2^62 (a runtime table seeds its sequence from the wall clock).
    const OFFSET: u64 = 1 << 62;
    table.observe_replica_sequence(OFFSET);
    let published = Arc::new(Published::default());
    assert!(table.enable_replication(1, published.clone()));

    // s -> worker 1 at version (1, 1), published.
    let AcquireStep::Held(Hold::Initialize(init)) = table.try_acquire("s", None).unwrap() else {
        panic!("a new session initializes");
    };
    let _lease = init.commit(worker_1).unwrap();
    published.take();

    // A second request holds the binding to worker 1.
    let AcquireStep::Held(hold) = table.try_acquire("s", None).unwrap() else {
        panic!("a bound session is held");
    };
    assert_eq!(hold.target(), Some(worker_1));

    // Another replica's newer version (1, 2) moves the binding to worker 2.
    let newer = AffinityVersion {
        sequence: OFFSET + 1,
        writer_id: 2,
    };
    assert_eq!(
        table.apply_replica_update("s".to_string(), worker_2, newer),
        ReplicaApplyOutcome::ReplacedNewer
    );
    assert_eq!(table.query_target("s", None).unwrap(), Some(worker_2));

    // The hold commits where it was bound.
    let _held = table.commit(hold, worker_1).unwrap();
    assert_eq!(table.query_target("s", None).unwrap(), Some(worker_2));

    // What receivers need: nothing older than what the table holds. 1.6.1 publishes
    // (s, worker 1, (1, 1)) here, and a replica that missed (1, 2) installs it.
    let superseded: Vec<_> = published
        .take()
        .into_iter()
        .filter(|(_, target, version)| *target != worker_2 || *version != newer)
        .collect();
    assert!(
        superseded.is_empty(),
        "F2: the hold's commit published a binding the table no longer holds: {superseded:?}"
    );
}
