# Hand-written stub for the compiled extension `impl._native` so that the
# adapter type-checks. Keep in step with impl/src/*.rs.
# Affinity part; the policy-queue part follows the marker below.

from typing import Final, TypeAlias

CRATE_VERSION: Final[str]
CRATE_SOURCE: Final[str]
HAS_MANUAL_CLOCK: Final[bool]
CLOCK_NS_MAX: Final[int]

class AffinityError(Exception): ...
class InvalidArgument(AffinityError): ...
class ResourceExhausted(AffinityError): ...
class Dropped(AffinityError): ...
class HandleError(Exception): ...
class RustPanic(Exception): ...
class PolicyConfigError(Exception): ...
class QueueUsageError(Exception): ...

_Target: TypeAlias = tuple[int, int | None]
_Version: TypeAlias = tuple[int, int]

class RuntimeAffinityTable:
    def __init__(
        self,
        ttl_ns: int,
        mode: str,
        max_entries: int,
        max_session_id_bytes: int,
    ) -> None: ...
    @staticmethod
    def crate_defaults(ttl_ns: int) -> tuple[str, int, int]: ...
    @staticmethod
    def parse_mode(text: str) -> str: ...
    @staticmethod
    def manual(
        ttl_ns: int,
        mode: str,
        max_entries: int,
        max_session_id_bytes: int,
        instant_range_ns: int | None = None,
    ) -> RuntimeAffinityTable: ...
    def crate_advance_clock(self, now_ns: int) -> None: ...
    @property
    def now_ns(self) -> int: ...
    def advance_clock(self, now_ns: int) -> None: ...
    def try_acquire(
        self, session_id: str, requested: _Target | None = None
    ) -> tuple[str, int, _Target | None]: ...
    def join_initializing(self, session_id: str, target: _Target) -> int | None: ...
    def commit(self, handle: int, dispatched: _Target) -> int: ...
    def abort(self, handle: int) -> None: ...
    def release(self, handle: int) -> None: ...
    def invalidate(self, handle: int) -> None: ...
    def waiter_done(self, handle: int) -> bool: ...
    def query_target(
        self, session_id: str, requested: _Target | None = None
    ) -> _Target | None: ...
    def apply_replica_update(
        self, session_id: str, target: _Target, version: _Version
    ) -> str: ...
    def observe_replica_sequence(self, sequence: int) -> None: ...
    def enable_replication(self, writer_id: int) -> bool: ...
    def drain_published(self) -> list[tuple[str, _Target, _Version]]: ...
    def entry_count(self) -> int: ...
    def lease_count(self, session_id: str) -> int | None: ...
    def next_version(self) -> _Version: ...
    def expire_for_test(self, session_id: str) -> None: ...
    def drop_table(self) -> None: ...
    def live_handles(self) -> list[tuple[int, str]]: ...
    def runtime_tasks(self) -> int: ...
    def ttl_ns(self) -> int: ...
    def mode(self) -> str: ...
    def downgrade(self) -> int: ...
    def upgrade(self, index: int) -> bool: ...

# ---- policy queue (below this line) ----

HAS_QUEUE_RECHECK: Final[bool]

_Worker: TypeAlias = tuple[int, int]
_Item: TypeAlias = tuple[int, int, _Worker | None, int, int, int, int]

class PolicyQueueTable:
    @staticmethod
    def from_yaml(
        yaml: str,
        model_name: str | None,
        fallback_threshold: float | None,
        fallback_policy: str,
    ) -> PolicyQueueTable: ...
    @staticmethod
    def from_path(
        path: str,
        model_name: str | None,
        fallback_threshold: float | None,
        fallback_policy: str,
    ) -> PolicyQueueTable: ...
    @staticmethod
    def synthetic(threshold: float | None, policy: str) -> PolicyQueueTable: ...
    @staticmethod
    def snapshot(
        raw_isl_tokens: int, cached_tokens: int
    ) -> tuple[int, int, int, int]: ...
    def class_count(self) -> int: ...
    def class_config(
        self, class_index: int
    ) -> tuple[str, str, int, int | None, int | None, int | None]: ...
    def enqueue(
        self,
        class_index: int,
        worker_count: int,
        raw_isl_tokens: int,
        cached_tokens: int,
        arrival_offset_secs: float,
        priority_jump: float,
        strict_priority: int,
        placement: _Worker | None,
        payload: int,
    ) -> tuple[str, str, int, int] | None: ...
    def pop_next(
        self,
        saturated: list[_Worker],
        any_dispatchable: bool,
        paused_classes: list[int],
    ) -> _Item | None: ...
    def retain(self, drop: list[int]) -> None: ...
    def pending_count(self) -> int: ...
    def class_stats(self, class_index: int) -> tuple[int, int, int]: ...
    def has_backlog(self, class_index: int) -> bool: ...
    def entries(self) -> list[_Item]: ...
    def drain(self) -> list[_Item]: ...
    # Only in builds with feature `queue-recheck` (see HAS_QUEUE_RECHECK).
    def recheck_worker(self, worker: _Worker) -> None: ...
    def recheck_all_workers(self) -> None: ...

CONCURRENT_THREADS_MAX: int
CONCURRENT_OPS_MAX: int

def run_concurrent_affinity(
    ttl_ns: int,
    mode: str,
    max_entries: int,
    max_session_id_bytes: int,
    sequence_offset: int,
    programs: list[
        list[
            tuple[
                str,
                str,
                tuple[int, int | None] | None,
                int,
                tuple[int, int] | None,
                int,
            ]
        ]
    ],
    schedule_seed: int,
    sessions: list[str],
    canary: str | None = None,
    manual: bool = False,
) -> tuple[
    list[
        tuple[
            int,
            int,
            int,
            int,
            tuple[
                str,
                str,
                tuple[int, int | None] | None,
                int | None,
                tuple[int, int] | None,
                int,
            ],
            tuple[str, tuple[int, int | None] | None, int | None],
        ]
    ],
    int,
    int,
    list[tuple[str, int | None]],
]: ...
