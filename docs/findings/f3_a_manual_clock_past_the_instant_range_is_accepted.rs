// Finding F3 (docs/findings.md): on revision 2256f671 (a snapshot of the branch of Dynamo
// PR #15631, host-controlled affinity time; not the published crate) of
// lib/kv-router/src/services/selection/affinity.rs ("AFF-manual"), `advance_clock` accepts
// a time whose `now + ttl` leaves the platform's `Instant` range; the next commit,
// release or replica apply computes `now + ttl` and panics. This test states the
// guarded behaviour (the clock is refused and nothing changes) and fails on 2256f671.
//
// It compiles only against a tree that has `SessionAffinity::with_manual_clock` and
// `advance_clock` (not dynamo-kv-router 1.6.1 from crates.io). Written from the corpus
// trace ci/replay/corpus/aff_manual_accepts_a_clock_whose_deadline_leaves_the_instant_range.json.

use dynamo_kv_router::services::selection::affinity::{
    AcquireStep, AffinityTarget, Hold, SessionAffinity, SessionAffinityConfig,
};
use std::time::{Duration, Instant};

/// The last `Instant` reachable from `from` (binary search over whole nanoseconds).
fn latest_instant(from: Instant) -> Instant {
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

#[test]
fn f3_a_clock_whose_deadline_leaves_the_instant_range_is_refused() {
    let ttl = Duration::from_secs(10);
    // The Instant range ends two TTLs after the origin.
    let origin = latest_instant(Instant::now()) - 2 * ttl;
    let table = SessionAffinity::with_manual_clock(SessionAffinityConfig::new(ttl), origin)
        .expect("a manual table");
    let AcquireStep::Held(Hold::Initialize(init)) = table.try_acquire("s", None).unwrap() else {
        panic!("a new session initializes");
    };
    let lease = init.commit(AffinityTarget::new(1, None)).unwrap();

    // The last time whose `now + ttl` fits is origin + ttl; 1 ns past it must be refused.
    let past = origin + ttl + Duration::from_nanos(1);
    assert!(
        table.advance_clock(past).is_err(),
        "F3: advance_clock accepted a time whose now + ttl leaves the Instant range"
    );
    // Guarded: the table is unchanged and a release still works.
    drop(lease);
    assert_eq!(
        table.query_target("s", None).unwrap(),
        Some(AffinityTarget::new(1, None))
    );
}
