"""The public scheduler's rows of the "Production under test" table (`ci.production`).

`LocalScheduler`; tests/test_scheduler_production.py checks them.
"""

from __future__ import annotations

from ci.production import Row

ROWS: tuple[Row, ...] = (
    Row(
        "scheduler_recheck",
        "C.5, G.5",
        "`recheck_worker` / `recheck_all_workers` are `pub(crate)`; a blocked lane "
        "stays blocked until the operations the crate offers change that",
        "reached through public calls: `LocalScheduler::free` rechecks the freed "
        "worker's lane, `update_queue`, a changed worker config (watched) and the "
        "due-time timer recheck every lane; a new request rechecks none; an "
        "unchanged config does nothing",
        "local.rs:141-156, 190-231, 645-656, 758; queue.rs:1424-1477",
    ),
    Row(
        "scheduler_due_time",
        "C.9",
        "`take_expired(now)` removes every entry due at or before `now` "
        "(crate-private)",
        "reached through a classifier (`install_request_classifier`, "
        "`begin_request_lifecycle`, `ClassifyRequest::set_due_at`): due at or "
        "before now at enqueue is `DeadlineExceeded` at once; a parked request is "
        "rejected by the actor's timer exactly at its due time; each counted "
        "once in `rejected_due_time_passed_total`",
        "queue.rs:1079-1104, 1192-1202, 1275-1289; policy_queue.rs:682-708",
    ),
    Row(
        "scheduler_timer_grid",
        "C.9",
        "`due_at` becomes a key in ns after `deadline_origin`",
        "Tokio timers round up to 1 ms: a due time off the ms grid is enforced "
        "at the next ms (due 4.5 ms: rejected at 5 ms); the suite's due times and "
        "clock steps are whole ms, where the boundary is exact",
        "queue.rs:1099 (`sleep_until`); tokio time driver",
    ),
    Row(
        "scheduler_cancel",
        "C.9",
        "`take_if_in_class` is crate-private; SPEC does not say who calls it",
        "dropping the caller's future while its request is parked removes it "
        "(the lifecycle lease's drop, then `drain_cleanup`) and its counters; a "
        "removed lane head (blocked lanes included) rechecks every lane and "
        "drains only if some lane's head then passes the dispatch test; after "
        "dispatch the booking is committed and dropping changes nothing",
        "queue.rs:451-466, 1291-1414; local.rs:312-360",
    ),
    Row(
        "scheduler_availability",
        "C.9",
        "`WorkerAvailabilityProvider` is an inclusion set; `None` means no source",
        "the provider is asked whenever a head is tested or a worker selected; "
        "a head whose worker is not available passes the dispatch test and its "
        "selection fails with `NoEndpoints`; a changed answer rechecks nothing, "
        "so a blocked lane's worker that goes away is noticed at the next recheck",
        "queue.rs:1390-1414, 1479-1520, 1614-1634, 1907-1936; filter.rs:179-195",
    ),
    Row(
        "scheduler_due_key_cap",
        "C.9",
        "`due_at` becomes a key in ns after `deadline_origin`",
        "the key is capped at `u64::MAX - 1` ns (584 years) after the origin, "
        "which moves to now when a due time is parked into an empty due set: "
        "every due time past the cap sorts alike (arrival decides), before the "
        "requests without one, and is rejected when the clock reaches the cap "
        "(`now`'s key is capped alike), not at its own due time",
        "policy_queue.rs:170, 543-545, 631-639, 686-689",
    ),
    Row(
        "scheduler_binding",
        "—",
        "not covered by SPEC (the binding's own choices)",
        "binding limits: workers `0..n` fixed at construction (one rank each), "
        "a worker's config is its capacity (`max_num_batched_tokens`); the "
        "profile is one class (`PolicyProfile::synthetic(Some(1.0), Fcfs)`) or "
        "the root profile of a router policy document of two to four classes, "
        "class `i` alone in family `f{i}` (drawn quanta, FCFS or WSPT, "
        "per-worker limits), every class busy above capacity "
        "(`prefill_busy_threshold_frac: 1.0`); no priority jump; no "
        "active-request expiry (`new_without_expiry`); periodic recheck every "
        "1,200 years, the clock capped at 600 years and moved in explicit steps "
        "(each due time it handed the crate on the way, then the instant asked for, in "
        "pieces of at most 2^29 ms); due times as "
        "far as the platform's `Instant` reaches; a picker of its own (lowest "
        "worker id) with one eligible worker per request (pinned, or the only "
        "allowed); a classifier of its own that sets due times and the class "
        '(`set_policy_class("f{i}")`) and can keep a classification pending; '
        "callers that go away at a chosen point (while classified, once the "
        "enqueue is sent, once booked); an "
        "availability provider of its own answering the set last given (none by "
        "default); one caller per id",
        "impl/src/scheduler.rs",
    ),
)
