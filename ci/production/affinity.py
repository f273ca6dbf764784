"""The affinity table's rows of the "Production under test" table (`ci.production`)."""

from __future__ import annotations

from ci.production import Row

ROWS: tuple[Row, ...] = (
    Row(
        "manual_clock",
        "G.3, A.3",
        "`with_manual_clock` / `advance_clock` in AFF-manual/guarded",
        "absent: only `with_config` (runtime clock + spawned reaper); the suite "
        "drives it under a paused Tokio clock; the binding's `manual-clock` "
        "feature is built by `ci.gate --source` for trees that have it (see "
        "Probed capabilities), and the manual-clock machine runs model against "
        "model here",
        "affinity.rs:220 (`with_config`), no `advance_clock`",
    ),
    Row(
        "reaping",
        "B.14, G.2",
        "Variant E (every advance) or C (cadence)",
        "cadence: the reaper collects idle bindings every `min(ttl, 30 s)` from "
        "construction; between ticks expired bindings stay counted (probe: a new "
        "id is refused at t0+89 s, accepted after the t0+90 s tick); lookups "
        "still enforce the exact deadline",
        "affinity.rs:254-281 (`spawn_reaper`)",
    ),
    Row(
        "reaper_grid",
        "B.3",
        "reaper period `min(ttl, 30 s)`",
        "Tokio timers round up to 1 ms, so ticks fall at multiples of "
        "`ceil_ms(min(ttl, 30 s))` (ttl 1 s + 1 ns: collected at 1.001 s)",
        "affinity.rs:257; tokio time driver",
    ),
    Row(
        "reaper_lifetime",
        "B.14, E.4",
        "the reaper stops when the table is dropped",
        "one task per serving table from construction on; dropping the last "
        "clone cancels it at once, before its next tick (the task also holds "
        "only a weak reference); handles outliving the table keep no reaper",
        "affinity.rs:149-153 (`Drop for Inner`), 254-268",
    ),
    Row(
        "join",
        "G.1, B.8",
        "AFF-reserved-join vs AFF-pending-join",
        "AFF-reserved-join: `join_initializing(id, target)` binds at once with "
        "2 active leases (joiner + reserved initializer use)",
        "affinity.rs:434-466",
    ),
    Row(
        "testing_feature",
        "G.4",
        "`testing` feature unknown on crates.io",
        "declared (`testing = []`): `entry_count`, `lease_count`, `next_version`, "
        "`expire_for_test` are bound",
        "Cargo.toml `[features]`; affinity.rs:560",
    ),
    Row(
        "sequence_seed",
        "B.1, D9",
        "`next_sequence` starts at 1 (manual) or UNIX ns (runtime)",
        "runtime table seeds from the wall clock; the adapter pins it by "
        "observing 2^62 and reports sequences relative to that (1, 2, 3, ...)",
        "affinity.rs:230-235",
    ),
    Row(
        "group_id",
        "B.15",
        "`subagent_group_affinity_id` in AFF-manual/guarded (1.7.0)",
        "absent; the model keeps it (checked against the crate on source "
        "trees that have it: `tests/test_group_key.py`)",
        "no such function in 1.6.1",
    ),
    Row(
        "defaults",
        "A.2, B.1",
        "`SessionAffinityConfig::new(ttl)`: hard mode, 65,536 entries, 256-byte ids",
        "as the spec says: hard mode, `MAX_SESSION_AFFINITY_ENTRIES` = 65,536, "
        "`MAX_SESSION_AFFINITY_ID_BYTES` = 256 (the machines pass every field, "
        "so these are read only by the defaults checks)",
        "affinity.rs:29-30, 116-123",
    ),
    Row(
        "overflow_guard",
        "B.2, F.4",
        "AFF-guarded rejects `now + ttl` overflow",
        "not applicable (no manual clock). Binding limits: a runtime table's "
        "clock stops at `CLOCK_NS_MAX` (2 maximal TTLs) and cannot move back; a "
        "manual table's clock is a `u64` of ns from its origin, which may sit "
        "`instant_range_ns` before the end of the `Instant` range (times past it "
        "are refused by the binding); direction and deadline overflow are left "
        "to the crate",
        "impl/src/affinity.rs (`CLOCK_NS_MAX`, `manual`, `latest_instant`)",
    ),
    Row(
        "replica_apply",
        "B.13, D10",
        "`apply_replica_update` merges a replica's binding in one step",
        "two steps under concurrency: it observes the update's sequence "
        "(`fetch_max`) before it takes the session's entry, so a local commit or "
        "join in between takes a version above the update's and the update "
        "reports `IgnoredConflict` where no atomic order allows it (the table "
        "ends up as if the update came first; only the reported outcome is "
        "off). Found by the linearizability check; the 3-call history is "
        "`ci/replay/corpus/histories/replica_update_races_a_commit.json`. The "
        "concurrent specification reads an update as two linearization points; "
        "the atomic reading is a strict xfail",
        "affinity.rs:641-653 (`Inner::apply_replica_update`)",
    ),
)
