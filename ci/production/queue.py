"""The policy queue's rows of the "Production under test" table (`ci.production`)."""

from __future__ import annotations

from ci.production import Row

ROWS: tuple[Row, ...] = (
    Row(
        "queue_recheck",
        "G.5, A.4",
        "`recheck_worker` / `recheck_all_workers` are `pub(crate)`",
        "`pub(crate)`: a blocked Exact lane stays blocked through `PolicyQueue`'s "
        "public API; `LocalScheduler` calls them (row `scheduler_recheck`); the "
        "binding's `queue-recheck` feature exposes them for trees where they "
        "are public",
        "policy_queue.rs:559, 565",
    ),
    Row(
        "queue_unblock",
        "C.5, Q10",
        "a blocked lane stays blocked until a recheck",
        "with the public API a blocked lane is tested again only after `retain` "
        "empties it (the blocked set forgets workers without a lane)",
        "policy_queue.rs:462-474, 758",
    ),
    Row(
        "queue_retain_stats",
        "C.7",
        "PQ-intent/PQ-eager recomputed stats on `retain`",
        "subtracts (saturating) per removed entry",
        "policy_queue.rs:761-764, 992",
    ),
    Row(
        "queue_carry",
        "Q8",
        "a set carry names a non-empty class with deficit > 0",
        "not always: `retain` never clears the carry, so a refilled class can be "
        "carried with deficit 0 (harmless: costs are >= 1); our Q8 is restated "
        "as step properties",
        "policy_queue.rs:710-768, 786-799",
    ),
    Row(
        "queue_config",
        "A.5",
        "class keys per CFG-admission / CFG-selection",
        "neither: no `queue_admission`, no `busy_worker_ratio` (parse errors); "
        "the root also accepts `router`, `worker_selection`, `request_classifier`",
        "policy_config.rs:212-252, 326-338, 425-438",
    ),
    Row(
        "queue_variant",
        "G.6, C.9",
        "PQ-deadline most likely (its 24 tests match PR #15631's description)",
        "PQ-deadline: lazy recheck flag, due-time keys, 24 unit tests, no "
        "deferred storage; `enqueue_with_due_at`/`take_expired` are `pub(crate)`, "
        "reached through `LocalScheduler` (row `scheduler_due_time`)",
        "policy_queue.rs",
    ),
)
